//! Analysis of `memory` (claims B3.1-B3.4, B4.3) from `memory.csv` only.
//!
//! Claims are judged at the strategy's default member length (the smallest
//! `member_len` measured, normally 0 = a plain decimal request id) and
//! `zset-max-listpack-entries` 128; the sensitivity table shows every member
//! length measured and whether it lands within the claim's tolerance, since
//! the study does not say what its members were.
//!
//! Layout: [`LogCells`] indexes the directly filled sliding logs and holds
//! the per-claim metrics on them; `verify_differences`, `listpack_vs_skiplist`
//! and `listpack_growth` are the other metrics (all tested in the folder's
//! `tests.rs` on hand-written rows); the presentation functions after them
//! write the tables, claim values and figures.
//!
//! Why one file of ~700 lines: the layering rule (`tests/layering.rs`) lets
//! an experiment's analysis import only `super::rows` and `crate::analysis`,
//! so its metrics (five claims) and presentation (six tables, two figures)
//! cannot move to a sibling module; each function stays short instead.

use std::collections::BTreeMap;

mod figures;
mod tables;

use super::rows::MemoryRow;
use crate::analysis::claims::{Check, Verdict, verdict};
use crate::analysis::{AnalysisCtx, Measured, Section};
use crate::error::Result;

/// Would `v` alone pass claim `id`'s check (`claims::verdict`: published
/// value and tolerance)? `None` if the claim is unknown or not judged on a
/// value (the sensitivity table shows `-`).
fn passes(ctx: &AnalysisCtx, id: &str, v: f64) -> Option<bool> {
    let spec = ctx.claim(id)?;
    matches!(
        spec.check,
        Check::WithinAbs | Check::WithinRel | Check::InRange
    )
    .then(|| verdict(spec, &Measured::new(id, vec![v], "", "")) == Verdict::Pass)
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

/// A bytes row of a sliding log filled directly (ZADD pipelines).
fn is_direct_log(r: &MemoryRow) -> bool {
    r.kind == "bytes" && r.strategy == "sliding-window-log" && r.fill == "direct"
}

/// The directly filled sliding logs, one per (member_len, Z, limit).
pub(super) struct LogCells<'a> {
    /// (member_len, z, limit) -> the row with the most clients (the main cell).
    main: BTreeMap<(usize, u64, u64), &'a MemoryRow>,
    /// Member lengths measured, ascending.
    pub(super) member_lens: Vec<usize>,
    /// Limits measured past the cliff at Z=128 (L > 128), ascending.
    pub(super) past: Vec<u64>,
}

impl<'a> LogCells<'a> {
    pub(super) fn of(rows: &'a [MemoryRow]) -> Self {
        let mut main: BTreeMap<(usize, u64, u64), &MemoryRow> = BTreeMap::new();
        for r in rows.iter().filter(|r| is_direct_log(r)) {
            let k = (r.member_len, r.zset_max_listpack_entries, r.limit);
            if main.get(&k).map(|o| o.clients < r.clients).unwrap_or(true) {
                main.insert(k, r);
            }
        }
        let member_lens = sorted_distinct(main.keys().map(|k| k.0).collect());
        let past = sorted_distinct(
            main.keys()
                .filter(|k| k.1 == 128 && k.2 > 128)
                .map(|k| k.2)
                .collect(),
        );
        LogCells {
            main,
            member_lens,
            past,
        }
    }

    pub(super) fn get(&self, m: usize, z: u64, l: u64) -> Option<&'a MemoryRow> {
        self.main.get(&(m, z, l)).copied()
    }

    /// The member length claims are judged at: the smallest measured.
    pub(super) fn default_member_len(&self) -> usize {
        self.member_lens.first().copied().unwrap_or(0)
    }

    /// B3.1: bytes per entry of a log of 128 (a listpack).
    pub(super) fn b31_bytes_per_entry(&self, m: usize) -> Option<f64> {
        self.get(m, 128, 128).and_then(|r| r.bytes_per_entry)
    }

    /// B3.2: bytes per client at L=129 over L=128 (the jump past the cliff).
    pub(super) fn b32_jump(&self, m: usize) -> Option<f64> {
        match (self.get(m, 128, 129), self.get(m, 128, 128)) {
            (Some(a), Some(b)) => Some(a.bytes_per_client / b.bytes_per_client),
            _ => None,
        }
    }

    /// B3.3: (limit, bytes per entry) of every log past the cliff.
    pub(super) fn b33_bytes_per_entry(&self, m: usize) -> Vec<(u64, f64)> {
        self.past
            .iter()
            .filter_map(|l| {
                self.get(m, 128, *l)
                    .and_then(|r| r.bytes_per_entry.map(|v| (*l, v)))
            })
            .collect()
    }

    /// B4.3: MB per client at L=100,000.
    pub(super) fn b43_mb_per_client(&self, m: usize) -> Option<f64> {
        self.get(m, 128, 100_000).map(|r| r.bytes_per_client / 1e6)
    }

    /// B3.4's cliff at each Z: (Z, row at L=Z, row at L=Z+1, jump), where both were measured.
    pub(super) fn cliffs(
        &self,
        m: usize,
        zs: &[u64],
    ) -> Vec<(u64, &'a MemoryRow, &'a MemoryRow, f64)> {
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
pub(super) fn verify_differences(rows: &[MemoryRow]) -> Vec<(&MemoryRow, &MemoryRow, f64)> {
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

/// A CPU row whose log kept its encoding through the window.
fn stable(r: &&&MemoryRow) -> bool {
    r.encoding == r.encoding_after
}

/// B3.4: at the largest log size with both encodings (stable through the
/// window): (n, the worst listpack's and the best skiplist's CPU per decision).
pub(super) fn listpack_vs_skiplist(cpu: &[&MemoryRow]) -> Option<(u64, f64, f64)> {
    let ns = sorted_distinct(cpu.iter().map(|r| r.fill_per_client).collect());
    let at = |n: u64, enc: &'static str| {
        cpu.iter()
            .filter(stable)
            .filter(move |r| r.fill_per_client == n && r.encoding == enc)
            .map(|r| r.redis_cpu_us_per_decision.unwrap_or(f64::NAN))
    };
    ns.iter().rev().find_map(|&n| {
        let lp = at(n, "listpack").fold(f64::NAN, f64::max);
        let sl = at(n, "skiplist").fold(f64::NAN, f64::min);
        (lp.is_finite() && sl.is_finite()).then_some((n, lp, sl))
    })
}

/// (log size, Redis CPU us per decision).
type SizeCpu = (u64, f64);

/// B3.4: (size, CPU per decision) of the smallest and the largest stable listpack.
pub(super) fn listpack_growth(cpu: &[&MemoryRow]) -> (Option<SizeCpu>, Option<SizeCpu>) {
    let lp = || {
        cpu.iter()
            .filter(stable)
            .filter(|r| r.encoding == "listpack")
    };
    let point = |r: &&MemoryRow| r.redis_cpu_us_per_decision.map(|v| (r.fill_per_client, v));
    (
        lp().min_by_key(|r| r.fill_per_client).and_then(point),
        lp().max_by_key(|r| r.fill_per_client).and_then(point),
    )
}

// ---- presentation: tables, claim values, figures ----

/// Which member lengths reproduce claim `id` (the `f(m)` of each within tolerance).
fn member_note(
    ctx: &AnalysisCtx,
    cells: &LogCells,
    id: &str,
    f: &dyn Fn(usize) -> Option<f64>,
) -> String {
    let ok: Vec<String> = cells
        .member_lens
        .iter()
        .filter(|m| f(**m).and_then(|v| passes(ctx, id, v)).unwrap_or(false))
        .map(|m| m.to_string())
        .collect();
    if ok.is_empty() {
        "no member length measured reproduces the published value".into()
    } else {
        format!(
            "member_len {} reproduces the published value",
            ok.join(", ")
        )
    }
}

/// B3.1, B3.2: the listpack at L=128 and the jump at 129, at the default member length.
fn log_claims(ctx: &AnalysisCtx, cells: &LogCells) -> Vec<Measured> {
    let m = cells.default_member_len();
    let mut out = Vec::new();
    if let Some(r) = cells.get(m, 128, 128) {
        let v = r.bytes_per_entry.unwrap_or(f64::NAN);
        out.push(
            Measured::new(
                "B3.1",
                vec![v],
                format!(
                    "{v:.1} B/entry ({:.0} B per client at L=128, {})",
                    r.bytes_per_client, r.encoding
                ),
                format!("memory.csv: {}", r.cell),
            )
            .condition("the log at L=128 is a listpack", r.encoding == "listpack")
            .note(member_note(ctx, cells, "B3.1", &|m| {
                cells.b31_bytes_per_entry(m)
            })),
        );
    }
    if let (Some(a), Some(b)) = (cells.get(m, 128, 129), cells.get(m, 128, 128)) {
        let v = a.bytes_per_client / b.bytes_per_client;
        out.push(
            Measured::new(
                "B3.2",
                vec![v],
                format!(
                    "{v:.2}x: {:.2} KB -> {:.2} KB",
                    b.bytes_per_client / 1000.0,
                    a.bytes_per_client / 1000.0
                ),
                format!("memory.csv: {} / {}", a.cell, b.cell),
            )
            .condition(
                "128 is a listpack and 129 a skiplist",
                b.encoding == "listpack" && a.encoding == "skiplist",
            )
            .note(member_note(ctx, cells, "B3.2", &|m| cells.b32_jump(m))),
        );
    }
    out
}

/// B4.3: a log of 100,000 entries per client, in MB.
fn b43(ctx: &AnalysisCtx, cells: &LogCells) -> Option<Measured> {
    let r = cells.get(cells.default_member_len(), 128, 100_000)?;
    let v = r.bytes_per_client / 1e6;
    Some(
        Measured::new(
            "B4.3",
            vec![v],
            format!("{v:.2} MB per client at L=100,000 ({} clients)", r.clients),
            format!("memory.csv: {}", r.cell),
        )
        .note(member_note(ctx, cells, "B4.3", &|m| {
            cells.b43_mb_per_client(m)
        })),
    )
}

/// B3.3: bytes per entry past the cliff, with L=1,000 extrapolated to
/// 10,000 clients and the sliding-window counter beside it.
fn b33(ctx: &AnalysisCtx, cells: &LogCells, other: &[&MemoryRow]) -> Option<Measured> {
    let m = cells.default_member_len();
    let b33 = cells.b33_bytes_per_entry(m);
    if b33.is_empty() {
        return None;
    }
    let mut disp = b33
        .iter()
        .map(|(l, v)| format!("L={l}: {v:.1}"))
        .collect::<Vec<_>>()
        .join(", ");
    if let Some(r) = cells.get(m, 128, 1000) {
        disp.push_str(&format!(
            "; L=1,000: {:.1} KB per client, x10,000 clients = {:.2} GB (extrapolated from {} clients)",
            r.bytes_per_client / 1000.0,
            r.bytes_per_client * 1e4 / 1e9,
            r.clients
        ));
    }
    if let Some(s) = other
        .iter()
        .find(|r| r.strategy == "sliding-window-counter")
    {
        disp.push_str(&format!(
            "; sliding-window counter {:.2} MB per 10,000 clients (measured at {})",
            s.bytes_per_client * 1e4 / 1e6,
            s.clients
        ));
    }
    let note = member_note(ctx, cells, "B3.3", &|m| {
        let v: Vec<f64> = cells
            .b33_bytes_per_entry(m)
            .into_iter()
            .map(|x| x.1)
            .collect();
        // Representative value for the note: all within -> the first.
        if v.iter().all(|x| passes(ctx, "B3.3", *x).unwrap_or(false)) {
            v.first().copied()
        } else {
            Some(f64::NAN)
        }
    });
    Some(
        Measured::new(
            "B3.3",
            b33.iter().map(|x| x.1).collect(),
            disp,
            "memory.csv: sliding-window-log direct fills, L > 128, z128",
        )
        .note(note),
    )
}

/// B3.4: the cliff moves with Z, and a big listpack costs more CPU than a skiplist.
fn b34(cliffs: &[(u64, &MemoryRow, &MemoryRow, f64)], cpu: &[&MemoryRow]) -> Option<Measured> {
    let (n, lp, sl) = listpack_vs_skiplist(cpu)?;
    let moves = !cliffs.is_empty() && cliffs.iter().all(|(_, a, b, j)| cliff_ok(a, b, *j));
    let disp: Vec<String> = cliffs
        .iter()
        .map(|(z, _, _, jump)| format!("Z={z}: {jump:.2}x at {}", z + 1))
        .collect();
    let mut m = Measured::new(
        "B3.4",
        vec![lp / sl],
        format!(
            "cliff moves ({}); at n={n} listpack {lp:.2} µs vs skiplist {sl:.2} µs per decision ({:.2}x)",
            disp.join(", "),
            lp / sl
        ),
        "memory.csv: kind=bytes at L=Z,Z+1 and kind=cpu rows",
    )
    .condition("the cliff moves with Z (listpack at L=Z, skiplist at Z+1, jump > 2x)", moves)
    .condition(format!("a listpack of {n} entries costs more CPU per decision than a skiplist of {n}"), lp > sl);
    if let (Some((n0, c0)), Some((n1, c1))) = listpack_growth(cpu)
        && n1 > n0
    {
        m = m.condition(
            format!("listpack CPU per decision grows with its size ({n0}: {c0:.2} µs -> {n1}: {c1:.2} µs)"),
            c1 > c0,
        );
    }
    Some(m)
}

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
        "What ran: {} measurements, seed {}. Bytes per client = used_memory growth / clients after filling each client to its limit (FLUSHALL before, the filling connection closed; latency-tracking off so per-command histograms are not counted). Claims are judged at member_len {} (the strategy's default: the request id in decimal, ids from {}).\n\n",
        rows.len(),
        rows.first().map(|r| r.seed).unwrap_or(0),
        cells.default_member_len(),
        first_direct.map(|r| r.id_base).unwrap_or(1)
    );
    let mut appendix = tables::main_table(&cells);
    appendix += &tables::verify_table(&rows);
    md += &figures::bytes_per_entry(ctx, &cells)?;
    md += &figures::per_client(ctx, &cells, &zs)?;
    md += &tables::sensitivity_table(ctx, &cells);
    md += &tables::other_table(&other);
    let mut measured = log_claims(ctx, &cells);
    measured.extend(b33(ctx, &cells, &other));
    measured.extend(b43(ctx, &cells));
    md += &figures::cpu(ctx, &cliffs, &zs, &cpu)?;
    md += &tables::cliff_table(&cliffs);
    if !cpu.is_empty() {
        md += &tables::cpu_table(&cpu);
        measured.extend(b34(&cliffs, &cpu));
    }
    let m = cells.default_member_len();
    let finding = format!(
        "with the strategy's default members (decimal request ids) a 128-entry log took {} B per entry and jumped {}x at 129 entries; past the cliff {} B per entry; member lengths that reproduce B3.1, B3.2 and B4.3 together: {}.",
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
