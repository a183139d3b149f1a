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
