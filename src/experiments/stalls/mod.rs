//! `stalls`: one big key stops Redis (claims B4.1, B4.2).
//!
//! Trim: a sliding log of n entries whose window has passed (all scores
//! older than the window; the key has no TTL, so it outlived its window, as
//! a key with a TTL longer than the window does). The strategy's next call
//! trims it all with ZREMRANGEBYSCORE inside the script. The stall is
//! measured three ways: the SLOWLOG entry of that call, LATENCY LATEST's
//! `command` event (threshold 1 ms), and the worst round trip of a probe
//! client sending PING back to back on its own connection during the call.
//!
//! Expiry: a log of n entries gets PEXPIRE 1 ms and is left to the active
//! expire cycle, with `lazyfree-lazy-expire` no (7.0's default: freed inline)
//! or yes (freed on a background thread). The stall is LATENCY's
//! `expire-del`/`expire-cycle` events and the probe's worst round trip.
//!
//! The sets are built before any measurement starts, with pipelined ZADD
//! batches (not counted).
//!
//! On the sweep engine: one server per `bio_cpulist` (where Redis's
//! background threads run), kept across cells. Trials are interleaved across
//! sizes (trial 1 of every size, then trial 2, ...), so a cell is a
//! [`Cell::Trims`] or [`Cell::Expiries`] round whose trial measures every
//! size (and lazyfree mode) once, each under its own id. Trims do not
//! involve background threads: they run once, on the first server.
//! `measure.rs` holds what one trim or expiry does.
//!
//! Tables: `stalls.csv`, one row per measurement (the stall three ways,
//! the probe's worst round trips), and the side table `stalls-pings.csv`,
//! every PING of the probe with its phase (before, during, after the
//! event), from which the stalled clients are drawn by percentile.

mod measure;
mod probe;
// The analysis half (analyze/) is compiled into limitbench-analysis
// (crates/analysis/src/experiments/mod.rs); it is this experiment's all the same.
pub use limitbench_analysis::experiments::stalls::{analyze, rows};
#[cfg(test)]
mod tests;

use std::net::SocketAddr;
use std::sync::Arc;

use serde::Deserialize;

pub use rows::{PingRow, StallRow};

use super::{RunContext, Spec};
use crate::run::sweep::{self, Sweep, TrialRows};
use limitbench_base::error::{Error, Result};
use limitbench_core::fleet::{Fleet, ServerConfig};
use limitbench_core::pin::PinGuard;
use limitbench_core::resp::Connection;
use limitbench_core::strategy::{Options, Strategy};

/// Its registration (the registry adds its `run` and its analysis half's `analyze`).
// it times the server's stalls on a pinned server: alone.
pub const SPEC: Spec = Spec::new("stalls", "B").others_at_most(0.1);

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    /// Redis's CPU. This and every CPU parameter below (`probe_cpu`,
    /// `harness_cpu`, a `bio_cpulists` entry) is a position in the CPUs the
    /// harness was allowed when it started (`RunContext::resolve_cpus`),
    /// replaced by the CPU it names when the run starts (a `bio_cpulists`
    /// entry stays the position in cell ids, the same on every machine).
    redis_cpu: usize,
    trim_sizes: Vec<u64>,
    trim_trials: u64,
    expiry_sizes: Vec<u64>,
    expiry_trials: u64,
    lazyfree_modes: Vec<String>,
    window_ms: u64,
    /// Members per ZADD while building.
    build_chunk: usize,
    /// Probe time before the call / after it.
    probe_lead_ms: u64,
    probe_tail_ms: u64,
    slowlog_threshold_us: u64,
    /// The CPU the PING probe's thread is pinned to: not Redis's main
    /// thread's (a probe there takes CPU from the very thread it times), the
    /// background threads' (B4.2's design, `probe.rs`).
    probe_cpu: usize,
    /// SCHED_FIFO priority of the probe's thread (1-99), so that the
    /// freeing thread and the harness on its CPU cannot delay its sending
    /// and receiving; 0 = an ordinary thread (its rows then make B4.2
    /// inconclusive: "probe not real-time").
    probe_rt_priority: i32,
    /// Run the probe during the trims too (false: only to compare trim
    /// times with and without it; B4.1's trims are separate cells).
    trim_probe: bool,
    /// The CPU the rest of the harness is pinned to while a cell runs: off
    /// Redis's main thread's (absent: not pinned).
    harness_cpu: Option<usize>,
    /// Member length of the log (as `memory`: 26, a ULID; 0 = the strategy's decimal id).
    member_len: usize,
    /// Where Redis's background (lazy-free) threads run: "" = with the main
    /// thread (inherited pinning), or one CPU position (Redis's
    /// `bio_cpulist` gets the CPU it names). Unstated by the study; it
    /// decides whether a background free still stalls the main thread.
    bio_cpulists: Vec<String>,
}

/// The CPU of each `bio_cpulists` entry (`None`: ""), in order; an entry
/// that is not "" or one position is an error naming it.
fn bio_positions(p: &Params) -> Result<Vec<(String, Option<usize>)>> {
    p.bio_cpulists
        .iter()
        .map(|b| match b.trim() {
            "" => Ok((b.clone(), None)),
            t => t.parse::<usize>().map(|n| (b.clone(), Some(n))).map_err(|_| {
                Error::Other(format!(
                    "stalls: bio_cpulists entry {b:?} is neither \"\" nor one CPU position (a number)"
                ))
            }),
        })
        .collect()
}

/// A round of measurements; its trial `t` is trial `t` of every size.
enum Cell {
    /// Trims of logs of every trim size, on the first server.
    Trims { bio: String },
    /// Expiries of logs of every expiry size under every lazyfree mode, on
    /// the server whose background threads run at `bio`.
    Expiries { bio: String },
}

impl Cell {
    fn bio(&self) -> &str {
        match self {
            Cell::Trims { bio } | Cell::Expiries { bio } => bio,
        }
    }
}

/// `same` (background threads inherit the main thread's pinning) or `cpuN`.
fn bio_label(bio: &str) -> String {
    if bio.is_empty() {
        "same".into()
    } else {
        format!("cpu{bio}")
    }
}

fn trim_id(n: u64) -> String {
    format!("trim|n{n}")
}

fn expire_id(n: u64, mode: &str, bio: &str) -> String {
    format!("expire|n{n}|lazyfree-{mode}|bio-{}", bio_label(bio))
}

fn cells(p: &Params) -> Vec<Cell> {
    let mut out = Vec::new();
    for (i, bio) in p.bio_cpulists.iter().enumerate() {
        if i == 0 {
            out.push(Cell::Trims { bio: bio.clone() });
        }
        out.push(Cell::Expiries { bio: bio.clone() });
    }
    out
}

/// A server with background threads at `bio`, and the strategy loaded on it.
struct StallServer {
    /// The `bio_cpulists` entry (a position, or "").
    bio: String,
    /// The CPU it names (None: "", with the main thread).
    bio_cpu: Option<usize>,
    /// redis-server's process id (its main thread's id): where its threads run.
    pid: Option<u32>,
    _fleet: Fleet,
    addr: SocketAddr,
    admin: Connection,
    strategy: Arc<dyn Strategy>,
}

async fn start_server(
    ctx: &RunContext,
    p: &Params,
    bio: &str,
    bio_cpu: Option<usize>,
) -> Result<StallServer> {
    let mut cfg = ServerConfig::default()
        .pinned(p.redis_cpu)
        .with(
            "slowlog-log-slower-than",
            &p.slowlog_threshold_us.to_string(),
        )
        .with("slowlog-max-len", "1024")
        .with("latency-monitor-threshold", "1");
    if let Some(c) = bio_cpu {
        cfg = cfg.with("bio_cpulist", &c.to_string());
    }
    let fleet = ctx.standalone(cfg).await?;
    let addr = fleet.primary_addr();
    let pid = fleet.primary().pid();
    ctx.note_fleet(&format!("server_bio_{}", bio_label(bio)), &fleet)
        .await?;
    let strategy = ctx.build_strategy(
        "sliding-window-log",
        &Options::default()
            .with("invocation", "evalsha")
            .with("member_len", p.member_len),
    )?;
    let mut admin = Connection::connect(addr).await?;
    strategy.prepare(&mut admin).await?;
    Ok(StallServer {
        bio: bio.to_string(),
        bio_cpu,
        pid,
        _fleet: fleet,
        addr,
        admin,
        strategy,
    })
}

/// Cross-cell state: the current server (replaced when the bio placement changes).
struct Stalls {
    /// With its CPU parameters resolved to CPUs.
    p: Params,
    /// Each `bio_cpulists` entry and the CPU it names.
    bio_cpus: Vec<(String, Option<usize>)>,
    server: Option<StallServer>,
}

impl Sweep for Stalls {
    type Cell = Cell;
    /// The harness's pinning (off the probe's CPU) while a cell runs.
    type Setup = Option<PinGuard>;
    type Row = StallRow;
    type Side = PingRow;
    const SIDE: Option<&'static str> = Some("pings");

    fn cell_id(&self, cell: &Cell) -> String {
        match cell {
            Cell::Trims { .. } => "trims".into(),
            Cell::Expiries { bio } => format!("expiries|bio-{}", bio_label(bio)),
        }
    }

    fn trials(&self, cell: &Cell) -> u64 {
        match cell {
            Cell::Trims { .. } => self.p.trim_trials,
            Cell::Expiries { .. } => self.p.expiry_trials,
        }
    }

    fn keys(&self, cell: &Cell) -> Vec<String> {
        let p = &self.p;
        match cell {
            Cell::Trims { .. } => p.trim_sizes.iter().map(|&n| trim_id(n)).collect(),
            Cell::Expiries { bio } => p
                .lazyfree_modes
                .iter()
                .flat_map(|m| p.expiry_sizes.iter().map(move |&n| expire_id(n, m, bio)))
                .collect(),
        }
    }

    async fn setup(&mut self, ctx: &RunContext, cell: &Cell) -> Result<Option<PinGuard>> {
        if self.server.as_ref().map(|s| s.bio.as_str()) != Some(cell.bio()) {
            // The previous server stops before the next starts (one Redis at a time).
            self.server = None;
            let bio_cpu = self
                .bio_cpus
                .iter()
                .find(|(b, _)| b == cell.bio())
                .and_then(|(_, c)| *c);
            self.server = Some(start_server(ctx, &self.p, cell.bio(), bio_cpu).await?);
        }
        // The harness off the probe's CPU (the server is already started,
        // pinned by its own settings): the probe's thread pins itself.
        self.p.harness_cpu.map(PinGuard::pin).transpose()
    }

    async fn trial(
        &mut self,
        ctx: &RunContext,
        cell: &Cell,
        pin: &mut Option<PinGuard>,
        trial: u64,
    ) -> Result<TrialRows<StallRow, PingRow>> {
        let p = &self.p;
        let s = self.server.as_mut().expect("set up");
        let harness_cpu = pin.as_ref().and_then(|g| g.cpu);
        // Redis's background threads on their CPU (bio_cpulist placed the
        // bio threads at start; this also moves jemalloc's and any later
        // one), and, after each measurement, where every thread could run.
        let bio_cpu = s.bio_cpu;
        let bio_ran = bio_label(&bio_cpu.map(|c| c.to_string()).unwrap_or_default());
        let place = |pid: Option<u32>| -> Result<()> {
            pid.map_or(Ok(()), |pid| probe::place_redis_threads(pid, bio_cpu))
        };
        let threads = |pid: Option<u32>| pid.map(probe::redis_threads);
        let (mut rows, mut pings) = (Vec::new(), Vec::new());
        match cell {
            Cell::Trims { .. } => {
                for &n in &p.trim_sizes {
                    place(s.pid)?;
                    let strategy = s.strategy.as_ref();
                    let (mut row, ping_rows) =
                        measure::trim_once(ctx, p, &mut s.admin, s.addr, strategy, n, trial)
                            .await?;
                    row.redis_threads = threads(s.pid);
                    rows.push(row);
                    pings.extend(ping_rows);
                }
            }
            Cell::Expiries { bio } => {
                for mode in &p.lazyfree_modes {
                    for &n in &p.expiry_sizes {
                        place(s.pid)?;
                        let (mut row, mut ping_rows) =
                            measure::expire_once(ctx, p, &mut s.admin, s.addr, n, mode, trial)
                                .await?;
                        row.cell = expire_id(n, mode, bio);
                        for r in &mut ping_rows {
                            r.cell = row.cell.clone();
                        }
                        pings.extend(ping_rows);
                        // Where they ran (the cell id keeps the position).
                        row.bio_cpus = bio_ran.clone();
                        row.redis_threads = threads(s.pid);
                        rows.push(row);
                    }
                }
            }
        }
        for r in &mut rows {
            r.harness_cpu = harness_cpu;
        }
        Ok(TrialRows::with_side(rows, pings))
    }
}

pub async fn run(ctx: &RunContext) -> Result<()> {
    let mut p: Params = ctx.params()?;
    let bio = bio_positions(&p)?;
    let names: Vec<String> = (0..bio.len()).map(|i| format!("bio_cpulists[{i}]")).collect();
    let mut wanted = vec![("redis_cpu", p.redis_cpu), ("probe_cpu", p.probe_cpu)];
    if let Some(h) = p.harness_cpu {
        wanted.push(("harness_cpu", h));
    }
    for ((_, pos), name) in bio.iter().zip(&names) {
        if let Some(pos) = pos {
            wanted.push((name, *pos));
        }
    }
    let mut cpus = ctx.resolve_cpus(&wanted)?.into_iter();
    let mut next = || cpus.next().expect("one CPU per position");
    (p.redis_cpu, p.probe_cpu) = (next(), next());
    p.harness_cpu = p.harness_cpu.map(|_| next());
    let bio_cpus: Vec<(String, Option<usize>)> = bio
        .into_iter()
        .map(|(b, pos)| (b, pos.map(|_| next())))
        .collect();
    ctx.note(
        "method",
        serde_json::json!({
            "build": "pipelined ZADD batches of the strategy's member format; trim: scores older than the window, no TTL; expire: PEXPIRE 1 ms after the build, active expiry",
            "probe": "PING back to back on its own connection, on its own thread pinned to probe_cpu (not Redis's main thread's CPU: the background threads') and real-time (SCHED_FIFO at probe_rt_priority), so neither the freeing thread nor the harness delays its own sending and receiving and it takes no CPU from Redis's main thread; with a bio_cpulist, every Redis thread but the main one (bio_*, jemalloc_bg_thd) is pinned to that CPU before each measurement, so the main thread is alone on redis_cpu; the rest of the harness pinned to harness_cpu while a cell runs; rows record probe_cpu, probe_policy, harness_cpu and redis_threads (name:cpus of every Redis thread)",
            "redis_cpu": p.redis_cpu,
            "probe_cpu": p.probe_cpu,
            "probe_rt_priority": p.probe_rt_priority,
            "trim_probe": p.trim_probe,
            "harness_cpu": p.harness_cpu,
            "bio_cpulists": p.bio_cpulists,
            "bio_note": "'' = background (lazy-free) threads inherit the server's pinning (same CPU as the main thread); otherwise a CPU position: Redis's bio_cpulist is the CPU it names (`cpus`), rows' bio_cpus that CPU, cell ids the position",
        }),
    )?;
    let cells = cells(&p);
    let mut stalls = Stalls {
        p,
        bio_cpus,
        server: None,
    };
    sweep::run(ctx, &mut stalls, &cells).await
}
