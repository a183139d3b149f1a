//! B3.4's CPU half: CPU per decision of sliding logs of n entries at each
//! zset-max-listpack-entries Z, `cpu_trials` measured windows per (n, Z)
//! cell (each after its own FLUSHALL and prefill), judged by intervals:
//! a listpack dearer than a skiplist of the same size, and a listpack's
//! cost growing with its size, each as a ratio whose 95% interval must lie
//! at or above 1 + the claim's tolerance.

use std::collections::BTreeMap;

use super::super::rows::MemoryRow;
use super::Est;

/// One CPU cell: its log size, Z, encoding and windows (trial, µs per decision).
#[derive(Debug, Clone, PartialEq)]
pub struct CpuCell {
    pub n: u64,
    pub z: u64,
    pub encoding: String,
    /// (trial, Redis CPU µs per decision) of the windows whose log kept its
    /// encoding through the window, in trial order.
    pub windows: Vec<(u64, f64)>,
}

impl CpuCell {
    pub fn est(&self) -> Option<Est> {
        Est::of(&self.windows.iter().map(|w| w.1).collect::<Vec<_>>())
    }
}

/// The CPU cells of a run, by (n, Z); windows whose log changed encoding
/// during the window are left out (their cell keeps the others).
pub fn cpu_cells(cpu: &[&MemoryRow]) -> Vec<CpuCell> {
    let mut by: BTreeMap<(u64, u64), CpuCell> = BTreeMap::new();
    for r in cpu.iter().filter(|r| r.encoding == r.encoding_after) {
        let Some(us) = r.redis_cpu_us_per_decision.filter(|v| v.is_finite()) else {
            continue;
        };
        let c = by
            .entry((r.fill_per_client, r.zset_max_listpack_entries))
            .or_insert_with(|| CpuCell {
                n: r.fill_per_client,
                z: r.zset_max_listpack_entries,
                encoding: r.encoding.clone(),
                windows: Vec::new(),
            });
        if c.encoding == r.encoding {
            c.windows.push((r.trial, us));
        }
    }
    let mut out: Vec<CpuCell> = by.into_values().collect();
    for c in &mut out {
        c.windows.sort_by_key(|w| w.0);
    }
    out
}

/// `a` over `b`, window by window (trial t of `a` over trial t of `b`; the
/// windows of two cells are independent, the pairing only forms the
/// ratios): the mean ratio and its 95% interval.
pub fn ratio(a: &CpuCell, b: &CpuCell) -> Option<Est> {
    let v: Vec<f64> = a
        .windows
        .iter()
        .filter_map(|(t, x)| b.windows.iter().find(|w| w.0 == *t).map(|w| x / w.1))
        .collect();
    Est::of(&v)
}

/// A ratio of two cells' CPU per decision.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison<'a> {
    pub a: &'a CpuCell,
    pub b: &'a CpuCell,
    pub est: Est,
}

/// Every listpack against every skiplist of the same size, the largest size first.
pub fn listpack_vs_skiplist(cells: &[CpuCell]) -> Vec<Comparison<'_>> {
    let mut out = Vec::new();
    for lp in cells.iter().filter(|c| c.encoding == "listpack") {
        for sl in cells
            .iter()
            .filter(|c| c.encoding == "skiplist" && c.n == lp.n)
        {
            if let Some(est) = ratio(lp, sl) {
                out.push(Comparison { a: lp, b: sl, est });
            }
        }
    }
    out.sort_by_key(|c| (std::cmp::Reverse(c.a.n), c.a.z, c.b.z));
    out
}

/// The largest listpack over the smallest, at the largest Z that holds
/// listpacks of two sizes or more (the same Z: only the size differs).
pub fn listpack_growth(cells: &[CpuCell]) -> Option<Comparison<'_>> {
    let mut zs: Vec<u64> = cells.iter().map(|c| c.z).collect();
    zs.sort();
    zs.dedup();
    zs.iter().rev().find_map(|&z| {
        let lp = || {
            cells
                .iter()
                .filter(move |c| c.z == z && c.encoding == "listpack")
        };
        let small = lp().min_by_key(|c| c.n)?;
        let big = lp().max_by_key(|c| c.n)?;
        (big.n > small.n).then(|| {
            ratio(big, small).map(|est| Comparison {
                a: big,
                b: small,
                est,
            })
        })?
    })
}

/// `n=400 Z=512 listpack 26.94 µs (95% 26.5-27.3, n=10)`.
pub fn show_cell(c: &CpuCell) -> String {
    match c.est() {
        Some(e) => format!(
            "n={} Z={} {} {:.2} µs (95% {:.2}-{:.2}, n={})",
            c.n, c.z, c.encoding, e.v, e.lo, e.hi, e.n
        ),
        None => format!("n={} Z={} {}: no window", c.n, c.z, c.encoding),
    }
}

/// Redis's thread busy for at least this fraction of a window: the cost
/// experiment's saturation bound (`cost::analyze::validity::MIN_BUSY`, the
/// study's "at least 91% busy" rounded down). Below it Redis waits for
/// requests between decisions and pays its event loop's wake-up (epoll,
/// read, write) for fewer requests each, so CPU per decision grows as the
/// load thins (a dev run: the same EVALSHA at 30, 58 and 103 µs per call
/// with Redis 65%, 42% and 32% busy) and measures the machine, not the log.
pub const MIN_BUSY: f64 = 0.9;

/// The cross-check's factor, fixed before any window carried commandstats:
/// CPU per decision over EVALSHA's usec_per_call over the same window must
/// lie within [1/3, 3]. A decision's CPU is its command's time plus the
/// event loop's per-request work; on the reference machine that ratio is
/// 1.9-2.5 for every Lua strategy of the cost experiment (whose scripts are
/// cheaper than a log of 64+ entries, so ours should sit lower). A ratio
/// above 3 means the delta holds CPU no decision's command accounts for
/// (setup, another client, a background thread); below 1/3, commands took
/// far longer than Redis ran (Redis descheduled mid-command).
pub const CROSS_CHECK_FACTOR: f64 = 3.0;

/// How far Redis's EVALSHA calls and the client's decisions over a window
/// may disagree, as a fraction of the decisions.
pub const COUNTS_AGREE: f64 = 0.025;

/// The largest growth of a log over its warm-up and window, as a fraction of
/// n: every decision adds an entry, and the claim compares logs "of the
/// same size", so a window whose logs grew by more than a tenth of n does
/// not hold n fixed.
pub const MAX_GROWTH: f64 = 0.1;

/// What makes a CPU window unfit to measure CPU per decision of a log of n
/// entries, in words (empty: fit).
pub fn window_problems(r: &MemoryRow) -> Vec<String> {
    let mut out = Vec::new();
    let busy = r
        .redis_main_thread_busy_fraction
        .filter(|b| b.is_finite() && *b > 0.0)
        .or(r.redis_busy_fraction)
        .unwrap_or(f64::NAN);
    if !(busy >= MIN_BUSY) {
        out.push(format!("Redis {busy:.2} busy (< {MIN_BUSY})"));
    }
    let per = r.redis_cpu_us_per_decision.unwrap_or(f64::NAN);
    match (r.cmd_calls, r.cmd_usec_per_call) {
        (Some(calls), Some(usec)) if usec > 0.0 => {
            let q = per / usec;
            if !(q >= 1.0 / CROSS_CHECK_FACTOR && q <= CROSS_CHECK_FACTOR) {
                out.push(format!(
                    "CPU per decision {per:.1} µs vs EVALSHA {usec:.1} µs per call: {q:.2}x, outside 1/{CROSS_CHECK_FACTOR}-{CROSS_CHECK_FACTOR}x"
                ));
            }
            // Redis and the client counted the same decisions, give or take
            // the ones in flight at the window's edges: a disagreement moves
            // CPU per decision by its fraction, so it must stay under half
            // the claim's 5% (2.5%), too little to make an ordering.
            let d = r.decisions.unwrap_or(0);
            if calls.abs_diff(d) as f64 > COUNTS_AGREE * d as f64 {
                out.push(format!(
                    "Redis counted {calls} calls, the client {d} decisions"
                ));
            }
        }
        _ => out.push("no commandstats cross-check (a run before it was recorded)".into()),
    }
    if let (Some(a), Some(b)) = (r.sample_size_mean, r.sample_size_after) {
        let n = r.fill_per_client as f64;
        if b - a > MAX_GROWTH * n {
            out.push(format!(
                "logs grew from {a:.0} to {b:.0} entries (more than {:.0}% of n={n:.0})",
                MAX_GROWTH * 100.0
            ));
        }
    }
    out
}

/// The validity check of B3.4's CPU half over `cpu` windows: None when
/// every window is fit, else the reason (how many failed, the first few).
pub fn unfit_windows(cpu: &[&MemoryRow]) -> Option<String> {
    let bad: Vec<String> = cpu
        .iter()
        .filter(|r| r.encoding == r.encoding_after)
        .filter_map(|r| {
            let p = window_problems(r);
            (!p.is_empty()).then(|| {
                format!(
                    "n={} Z={} window {}: {}",
                    r.fill_per_client,
                    r.zset_max_listpack_entries,
                    r.trial,
                    p.join(", ")
                )
            })
        })
        .collect();
    (!bad.is_empty()).then(|| {
        let shown: Vec<&str> = bad.iter().take(3).map(|s| s.as_str()).collect();
        format!(
            "{} of {} CPU windows do not measure CPU per decision of a log of fixed size on a saturated Redis (instrument checks: Redis >= {MIN_BUSY} busy, CPU per decision within {CROSS_CHECK_FACTOR}x of EVALSHA's commandstats time, Redis's and the client's counts within 2.5%, logs grow < {:.0}% of n): {}{}",
            bad.len(),
            cpu.iter().filter(|r| r.encoding == r.encoding_after).count(),
            MAX_GROWTH * 100.0,
            shown.join("; "),
            if bad.len() > 3 {
                format!(" (and {} more)", bad.len() - 3)
            } else {
                String::new()
            }
        )
    })
}
