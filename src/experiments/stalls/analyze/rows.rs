//! The rows of `stalls.csv`: one per (cell, trial), a trim or an expiry;
//! and of `stalls-pings.csv` ([`PingRow`]): every PING the probe sent
//! during that measurement, so the clients a stall held up can be drawn
//! by percentile (runs before it have `stalls.csv` alone).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct StallRow {
    pub cell: String,
    pub trial: u64,
    /// `trim` or `expire`.
    pub kind: String,
    pub entries: u64,
    pub lazyfree_lazy_expire: String,
    /// Background threads' CPUs: `same` (as the main thread) or `cpuN`, N
    /// the CPU they ran on (the cell id names its position among the CPUs
    /// the harness was allowed, the parameter; the two agree where every CPU
    /// is allowed).
    pub bio_cpus: String,
    pub member_len: usize,
    pub seed: u64,
    pub redis_cpu: Option<usize>,
    pub build_s: f64,
    pub encoding: String,
    /// SLOWLOG duration of the trimming call (trim), us.
    pub slowlog_us: Option<f64>,
    /// LATENCY LATEST max of `command` (trim), ms; 0 = no event >= 1 ms.
    pub latency_command_ms: Option<f64>,
    /// LATENCY LATEST max of `expire-del` / `expire-cycle` (expire), ms; 0 = none.
    pub latency_expire_del_ms: Option<f64>,
    pub latency_expire_cycle_ms: Option<f64>,
    /// The probe's worst PING round trip during the event, and before it.
    pub probe_worst_ms: f64,
    pub probe_baseline_worst_ms: f64,
    pub probe_pings: u64,
    /// PINGs in flight during the event (absent in older runs).
    #[serde(default)]
    pub probe_pings_during: Option<u64>,
    /// The CPU the probe's thread was pinned to (now the background
    /// threads' CPU, not Redis's main thread's; the session before issue 30's
    /// design put it on Redis's CPU); absent in older runs, whose probe ran
    /// unpinned on the harness's runtime.
    #[serde(default)]
    pub probe_cpu: Option<usize>,
    /// The probe thread's scheduling policy (`fifo:50`; `other (...)` with
    /// why SCHED_FIFO was not set); absent in older runs (not real-time) and
    /// in trims measured without the probe.
    #[serde(default)]
    pub probe_policy: Option<String>,
    /// Where each of Redis's threads could run while the event ran,
    /// `name:cpus` joined by `;`, the main thread first
    /// (`redis-server:0;bio_close_file:1;...`); absent in older runs.
    #[serde(default)]
    pub redis_threads: Option<String>,
    /// The CPU the rest of the harness was pinned to while the event ran
    /// (absent in older runs: not pinned).
    #[serde(default)]
    pub harness_cpu: Option<usize>,
    /// Client-side duration of the trimming call (trim) or time from PEXPIRE
    /// to the key being gone (expire), ms.
    pub event_ms: f64,
    /// ZCARD after the call (trim: 1, the new entry) or EXISTS (expire: 0).
    pub after_size: i64,
    pub admitted: Option<bool>,
    /// Background frees still pending right after the key went (expire).
    pub lazyfree_pending_after: Option<f64>,
}

limitbench_analysis::keyed!(StallRow);

impl StallRow {
    /// The schedule cell the row was measured in (the sweep's cell:
    /// `trims`, or `expiries|bio-<placement>` as its row cell ends).
    pub fn schedule_cell(&self) -> String {
        if self.kind == "trim" {
            "trims".into()
        } else {
            let bio = self.cell.rsplit('|').next().unwrap_or("");
            format!("expiries|{bio}")
        }
    }
}

/// When a probe PING ran relative to the measured event (`[from, to]` on
/// the probe's clock: the trimming call, or PEXPIRE until the key was gone
/// plus the tail): `before` (replied before it started), `during` (in
/// flight at some moment of it: the PINGs `probe_worst_ms` and
/// `probe_pings_during` count), `after` (sent after it ended).
pub const PING_PHASES: [&str; 3] = ["before", "during", "after"];

/// The phase of a PING sent at `sent_ms` that took `rtt_ms`, for an event
/// `[from_ms, to_ms]` (see [`PING_PHASES`]).
pub fn ping_phase(sent_ms: f64, rtt_ms: f64, from_ms: f64, to_ms: f64) -> &'static str {
    if sent_ms + rtt_ms < from_ms {
        "before"
    } else if sent_ms <= to_ms {
        "during"
    } else {
        "after"
    }
}

/// One PING of the probe (`stalls-pings.csv`): the measurement's cell and
/// trial (the `stalls.csv` row it belongs to), when it was sent (ms from
/// the probe's start), its round trip (ms) and its phase ([`PING_PHASES`]).
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct PingRow {
    pub cell: String,
    pub trial: u64,
    pub sent_ms: f64,
    pub rtt_ms: f64,
    pub phase: String,
}

limitbench_analysis::keyed!(PingRow);

/// The rows of a measurement's PINGs (sent ms, round trip ms), each with
/// its phase for the event `[from_ms, to_ms]`; times kept to the µs.
pub fn ping_rows(
    cell: &str,
    trial: u64,
    pings: &[(f64, f64)],
    from_ms: f64,
    to_ms: f64,
) -> Vec<PingRow> {
    let us = |x: f64| (x * 1000.0).round() / 1000.0;
    pings
        .iter()
        .map(|&(s, r)| PingRow {
            cell: cell.to_string(),
            trial,
            sent_ms: us(s),
            rtt_ms: us(r),
            phase: ping_phase(s, r, from_ms, to_ms).into(),
        })
        .collect()
}
