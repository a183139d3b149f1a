//! Analysis of `memory` (claims B3.1-B3.4, B4.3) from `memory.csv` only.
//!
//! Claims are judged at the run's default member length (rows flagged
//! `default_member`: a 26-character id, a ULID's length; older runs without
//! the flag: the smallest `member_len` measured) and
//! `zset-max-listpack-entries` 128, each value the mean over independent
//! fills (trials) with its 95% interval; the other member lengths are the
//! sensitivity sweep handed to the judge (`verdicts.rs`), drawn in the
//! member-length figure and tabled, since the study does not say what its
//! members were.
//!
//! Layout: [`LogCells`] indexes the directly filled sliding logs and holds
//! the per-claim metrics on them; `verify_differences` and B3.4's CPU
//! comparisons (`cpu.rs`) are the other metrics (all tested in the folder's
//! `tests.rs` on hand-written rows); `verdicts.rs` builds the claim values,
//! `tables.rs` and `figures.rs` the presentation.

pub mod scorecard;

use std::collections::BTreeMap;

mod cpu;
mod figures;
mod tables;
mod verdicts;

pub use cpu::{
    Comparison, CpuCell, cpu_cells, listpack_growth, listpack_vs_skiplist, ratio, unfit_windows,
    window_problems,
};

use super::rows::MemoryRow;
use limitbench_analysis::claims::{Check, Verdict, verdict};
use limitbench_analysis::stats::mean_cs;
use limitbench_analysis::{AnalysisCtx, Measured, Section};
use limitbench_base::error::Result;

/// Would `v` alone pass claim `id`'s check (`claims::verdict`: published
/// value and tolerance)? `None` if the claim is unknown or not judged on a
/// value (the sensitivity table shows `-`).
fn passes(ctx: &AnalysisCtx, id: &str, v: f64) -> Option<bool> {
    let spec = ctx.claim(id)?;
    matches!(
        spec.check,
        Check::WithinAbs | Check::WithinRel | Check::InRange
    )
    .then(|| verdict(spec, &Measured::new(id, vec![v], "", "")) == Verdict::Reproduced)
}

fn yes(b: Option<bool>) -> &'static str {
    match b {
        Some(true) => "yes",
        Some(false) => "no",
        None => "-",
    }
}

fn sorted_distinct<T: Ord>(mut v: Vec<T>) -> Vec<T> {
    v.sort();
    v.dedup();
    v
}

// ---- metrics: rows -> numbers ----

/// The smallest limit B3.3's "past that it costs 126 to 137 bytes per entry"
/// covers. L=129 is the conversion itself (the study's own size at 129
/// entries, divided by 129, lies above the range: the jump, which B3.2
/// judges), so "past that" starts at
/// the first size the experiment measures after the conversion:
/// `log_limits` in experiments/memory.toml runs 127, 128, 129, 256, ...
/// (fixed with the experiment's sizes, not from the bytes they measured).
pub const PAST_CLIFF_FROM: u64 = 256;

/// A bytes row of a sliding log filled directly (ZADD pipelines).
fn is_direct_log(r: &MemoryRow) -> bool {
    r.kind == "bytes" && r.strategy == "sliding-window-log" && r.fill == "direct"
}

/// A claim's value over trials: the mean and its 95% interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Est {
    pub v: f64,
    pub lo: f64,
    pub hi: f64,
    pub n: usize,
}

impl Est {
    pub fn of(xs: &[f64]) -> Option<Est> {
        let xs: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
        if xs.is_empty() {
            return None;
        }
        let (lo, hi) = mean_cs(&xs);
        Some(Est {
            v: xs.iter().sum::<f64>() / xs.len() as f64,
            lo,
            hi,
            n: xs.len(),
        })
    }
}

/// The directly filled sliding logs, one cell per (member_len, Z, limit).
pub struct LogCells<'a> {
    /// (member_len, z, limit) -> every trial of the cell with the most
    /// clients (the main cell), in trial order.
    runs: BTreeMap<(usize, u64, u64), Vec<&'a MemoryRow>>,
    /// (member_len, z, limit) -> the first trial of the main cell.
    main: BTreeMap<(usize, u64, u64), &'a MemoryRow>,
    /// Member lengths measured, ascending.
    pub member_lens: Vec<usize>,
    /// Limits measured past the cliff at Z=128 (L >= [`PAST_CLIFF_FROM`]), ascending.
    pub past: Vec<u64>,
    /// The member length the run flagged as its default (older runs: none).
    flagged: Option<usize>,
}

impl<'a> LogCells<'a> {
    pub fn of(rows: &'a [MemoryRow]) -> Self {
        let mut best: BTreeMap<(usize, u64, u64), (u64, &str)> = BTreeMap::new();
        for r in rows.iter().filter(|r| is_direct_log(r)) {
            let k = (r.member_len, r.zset_max_listpack_entries, r.limit);
            if best.get(&k).map(|o| o.0 < r.clients).unwrap_or(true) {
                best.insert(k, (r.clients, r.cell.as_str()));
            }
        }
        let mut runs: BTreeMap<(usize, u64, u64), Vec<&MemoryRow>> = BTreeMap::new();
        for r in rows.iter().filter(|r| is_direct_log(r)) {
            let k = (r.member_len, r.zset_max_listpack_entries, r.limit);
            if best[&k].1 == r.cell {
                runs.entry(k).or_default().push(r);
            }
        }
        for v in runs.values_mut() {
            v.sort_by_key(|r| r.trial);
        }
        let main = runs.iter().map(|(k, v)| (*k, v[0])).collect();
        let member_lens = sorted_distinct(runs.keys().map(|k| k.0).collect());
        let past = sorted_distinct(
            runs.keys()
                .filter(|k| k.1 == 128 && k.2 >= PAST_CLIFF_FROM)
                .map(|k| k.2)
                .collect(),
        );
        let flagged = rows
            .iter()
            .find(|r| is_direct_log(r) && r.default_member)
            .map(|r| r.member_len);
        LogCells {
            runs,
            main,
            member_lens,
            past,
            flagged,
        }
    }

    pub fn get(&self, m: usize, z: u64, l: u64) -> Option<&'a MemoryRow> {
        self.main.get(&(m, z, l)).copied()
    }

    /// Every trial of the main cell.
    pub(super) fn trials(&self, m: usize, z: u64, l: u64) -> &[&'a MemoryRow] {
        self.runs.get(&(m, z, l)).map(|v| &v[..]).unwrap_or(&[])
    }

    /// The main cells measured at member length `m` (every Z and limit):
    /// what a claim judged at `m` rests on (coarser than the one cell a
    /// claim reads, so a disturbance is never missed).
    pub fn cells_at(&self, m: usize) -> Vec<&'a str> {
        self.main
            .iter()
            .filter(|(k, _)| k.0 == m)
            .map(|(_, r)| r.cell.as_str())
            .collect()
    }

    /// The member lengths other than the default (the sensitivity sweep).
    pub fn others(&self) -> Vec<usize> {
        let d = self.default_member_len();
        self.member_lens
            .iter()
            .copied()
            .filter(|m| *m != d)
            .collect()
    }

    /// The member length claims are judged at: the one the run flagged as
    /// its default, else (older runs) the smallest measured.
    pub fn default_member_len(&self) -> usize {
        self.flagged
            .or_else(|| self.member_lens.first().copied())
            .unwrap_or(0)
    }

    /// B3.1: bytes per entry of a log of 128 (a listpack), over trials.
    /// Bytes per entry of a main cell: the mean (and 95% interval) over
    /// its trials. The one computation behind B3.1, B3.3 and the figure
    /// that rings them.
    pub(super) fn bytes_per_entry(&self, m: usize, z: u64, l: u64) -> Option<Est> {
        let v: Vec<f64> = self
            .trials(m, z, l)
            .iter()
            .filter_map(|r| r.bytes_per_entry)
            .collect();
        Est::of(&v)
    }

    pub fn b31(&self, m: usize) -> Option<Est> {
        self.bytes_per_entry(m, 128, 128)
    }

    pub fn b31_bytes_per_entry(&self, m: usize) -> Option<f64> {
        self.b31(m).map(|e| e.v)
    }

    /// B3.2: bytes per client at L=129 over L=128 (the jump past the cliff),
    /// per trial (trial i of 129 over trial i of 128).
    pub fn b32(&self, m: usize) -> Option<Est> {
        let (a, b) = (self.trials(m, 128, 129), self.trials(m, 128, 128));
        let v: Vec<f64> = a
            .iter()
            .zip(b)
            .map(|(a, b)| a.bytes_per_client / b.bytes_per_client)
            .collect();
        Est::of(&v)
    }

    pub fn b32_jump(&self, m: usize) -> Option<f64> {
        self.b32(m).map(|e| e.v)
    }

    /// B3.3: (limit, bytes per entry over trials) of every log past the cliff.
    pub(super) fn b33(&self, m: usize) -> Vec<(u64, Est)> {
        self.past
            .iter()
            .filter_map(|l| self.bytes_per_entry(m, 128, *l).map(|e| (*l, e)))
            .collect()
    }

    pub fn b33_bytes_per_entry(&self, m: usize) -> Vec<(u64, f64)> {
        self.b33(m).into_iter().map(|(l, e)| (l, e.v)).collect()
    }

    /// B4.3: MB per client at L=100,000, over trials.
    pub(super) fn b43(&self, m: usize) -> Option<Est> {
        let v: Vec<f64> = self
            .trials(m, 128, 100_000)
            .iter()
            .map(|r| r.bytes_per_client / 1e6)
            .collect();
        Est::of(&v)
    }

    pub fn b43_mb_per_client(&self, m: usize) -> Option<f64> {
        self.b43(m).map(|e| e.v)
    }

    /// B3.4's cliff at each Z: (Z, row at L=Z, row at L=Z+1, jump), where both were measured.
    pub fn cliffs(&self, m: usize, zs: &[u64]) -> Vec<(u64, &'a MemoryRow, &'a MemoryRow, f64)> {
        zs.iter()
            .filter_map(|&z| {
                let (a, b) = (self.get(m, z, z)?, self.get(m, z, z + 1)?);
                Some((z, a, b, b.bytes_per_client / a.bytes_per_client))
            })
            .collect()
    }
}

/// A cliff as B3.4 expects it: listpack at L=Z, skiplist at Z+1, jump > 2x.
fn cliff_ok(a: &MemoryRow, b: &MemoryRow, jump: f64) -> bool {
    a.encoding == "listpack" && b.encoding == "skiplist" && jump > 2.0
}

/// Strategy-filled cells against the direct fill at the same limit, member
/// length, clients and Z: (strategy row, direct row, difference in %).
pub fn verify_differences(rows: &[MemoryRow]) -> Vec<(&MemoryRow, &MemoryRow, f64)> {
    let direct: Vec<&MemoryRow> = rows.iter().filter(|r| is_direct_log(r)).collect();
    rows.iter()
        .filter(|r| r.fill == "strategy")
        .filter_map(|s| {
            let d = direct.iter().find(|d| {
                d.limit == s.limit
                    && d.member_len == s.member_len
                    && d.clients == s.clients
                    && d.zset_max_listpack_entries == s.zset_max_listpack_entries
            })?;
            Some((
                s,
                *d,
                (d.bytes_per_client / s.bytes_per_client - 1.0) * 100.0,
            ))
        })
        .collect()
}

// ---- presentation: tables, claim values, figures ----

pub fn analyze(ctx: &AnalysisCtx) -> Result<(Vec<Measured>, Section)> {
    let Some(rows) = ctx.read_csv::<MemoryRow>("memory.csv")? else {
        return Ok((vec![], Section::new("memory", "Not run.\n")));
    };
    let cells = LogCells::of(&rows);
    let other: Vec<&MemoryRow> = rows
        .iter()
        .filter(|r| r.kind == "bytes" && r.fill == "strategy-pipelined")
        .collect();
    let cpu: Vec<&MemoryRow> = rows.iter().filter(|r| r.kind == "cpu").collect();
    let zs = sorted_distinct(rows.iter().map(|r| r.zset_max_listpack_entries).collect());
    let cliffs = cells.cliffs(cells.default_member_len(), &zs);
    let first_direct = rows.iter().find(|r| is_direct_log(r));
    let mut md = format!(
        "What ran: {} measurements, seed {}. Bytes per client = used_memory growth / clients after filling each client to its limit (FLUSHALL before, the filling connection closed; latency-tracking off so per-command histograms are not counted). Claims are judged at member_len {} ({}; ids from {}); the other member lengths are the sensitivity sweep (the study does not state its members). KB = 1,000 bytes, MB = 1,000,000 bytes.\n\n",
        rows.len(),
        rows.first().map(|r| r.seed).unwrap_or(0),
        cells.default_member_len(),
        figures::member(cells.default_member_len()),
        first_direct.map(|r| r.id_base).unwrap_or(1)
    );
    let mut appendix = tables::main_table(&cells);
    appendix += &tables::verify_table(&rows);
    md += &figures::bytes_per_entry(ctx, &cells, &other)?;
    md += &figures::per_client(ctx, &cells, &zs)?;
    md += &figures::member_sweep(ctx, &cells)?;
    md += &tables::sensitivity_table(ctx, &cells);
    md += &tables::other_table(&other);
    let measured = verdicts::all(ctx, &cells, &other, &cliffs, &cpu);
    md += &figures::cpu(ctx, &cliffs, &zs, &cpu)?;
    md += &tables::cliff_table(&cliffs);
    if !cpu.is_empty() {
        md += &tables::cpu_table(&cpu);
    }
    let m = cells.default_member_len();
    let finding = format!(
        "with {} a 128-entry log took {} B per entry and jumped {}x at 129 entries; past the cliff {} B per entry; member lengths that reproduce B3.1, B3.2 and B4.3 together: {}.",
        figures::member(m),
        cells
            .b31_bytes_per_entry(m)
            .map(|v| format!("{v:.1}"))
            .unwrap_or_else(|| "n/a".into()),
        cells
            .b32_jump(m)
            .map(|v| format!("{v:.2}"))
            .unwrap_or_else(|| "n/a".into()),
        {
            let v: Vec<f64> = cells.b33_bytes_per_entry(m).iter().map(|x| x.1).collect();
            if v.is_empty() {
                "n/a".to_string()
            } else {
                format!(
                    "{:.0} to {:.0}",
                    v.iter().copied().fold(f64::MAX, f64::min),
                    v.iter().copied().fold(f64::MIN, f64::max)
                )
            }
        },
        {
            let ok: Vec<String> = cells
                .member_lens
                .iter()
                .filter(|m| {
                    [
                        ("B3.1", cells.b31_bytes_per_entry(**m)),
                        ("B3.2", cells.b32_jump(**m)),
                        ("B4.3", cells.b43_mb_per_client(**m)),
                    ]
                    .iter()
                    .all(|(id, v)| v.and_then(|v| passes(ctx, id, v)).unwrap_or(false))
                })
                .map(|m| figures::member(*m))
                .collect();
            if ok.is_empty() {
                "none".to_string()
            } else {
                ok.join(", ")
            }
        },
    );
    Ok((
        measured,
        Section::new("memory", md)
            .finding(finding)
            .appendix(appendix),
    ))
}
