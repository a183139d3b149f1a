//! The tables of `memory`: every directly filled cell, the direct fill
//! against the strategy's own, the member-length sensitivity, the other
//! strategies, the cliff per zset-max-listpack-entries and CPU by log size.

use super::super::rows::MemoryRow;
use super::{LogCells, passes, verify_differences, yes};
use limitbench_analysis::AnalysisCtx;
use limitbench_analysis::table::md_table;

pub(super) fn main_table(cells: &LogCells) -> String {
    let rows: Vec<Vec<String>> = cells
        .main
        .iter()
        .filter(|((_, z, _), _)| *z == 128)
        .map(|((m, _, l), r)| {
            vec![
                m.to_string(),
                l.to_string(),
                r.clients.to_string(),
                format!("{:.0}", r.bytes_per_client),
                format!("{:.1}", r.bytes_per_entry.unwrap_or(f64::NAN)),
                format!("{:.0}", r.memory_usage_mean.unwrap_or(f64::NAN)),
                r.encoding.clone(),
            ]
        })
        .collect();
    md_table(
        &[
            "member_len",
            "limit L",
            "clients",
            "bytes/client",
            "bytes/entry",
            "MEMORY USAGE (sample)",
            "encoding",
        ],
        &rows,
    )
}

pub(super) fn verify_table(rows: &[MemoryRow]) -> String {
    if !rows.iter().any(|r| r.fill == "strategy") {
        return String::new();
    }
    let diffs = verify_differences(rows);
    let worst = diffs.iter().map(|d| d.2.abs()).fold(0.0, f64::max);
    let table: Vec<Vec<String>> = diffs
        .iter()
        .map(|(s, d, diff)| {
            vec![
                s.member_len.to_string(),
                s.limit.to_string(),
                s.clients.to_string(),
                format!("{:.0}", s.bytes_per_client),
                format!("{:.0}", d.bytes_per_client),
                format!("{diff:+.2}%"),
            ]
        })
        .collect();
    format!(
        "\nDirect fill vs the strategy itself (EVALSHA, one decision at a time), same clients:\n\n{}\nLargest difference {worst:.2}%: the direct fill writes what the strategy writes.\n",
        md_table(
            &[
                "member_len",
                "L",
                "clients",
                "strategy B/client",
                "direct B/client",
                "difference"
            ],
            &table
        )
    )
}

/// Per member length: each claim's value and whether it is within tolerance.
pub(super) fn sensitivity_table(ctx: &AnalysisCtx, cells: &LogCells) -> String {
    let ok = |id: &str, v: Option<f64>| yes(v.and_then(|v| passes(ctx, id, v))).to_string();
    let shown =
        |v: Option<f64>, d: usize| v.map(|v| format!("{v:.d$}")).unwrap_or_else(|| "-".into());
    let rows: Vec<Vec<String>> = cells
        .member_lens
        .iter()
        .map(|&m| {
            let b31 = cells.b31_bytes_per_entry(m);
            let b32 = cells.b32_jump(m);
            let b33: Vec<f64> = cells
                .b33_bytes_per_entry(m)
                .into_iter()
                .map(|x| x.1)
                .collect();
            let b43 = cells.b43_mb_per_client(m);
            let b33ok = (!b33.is_empty())
                .then(|| b33.iter().all(|v| passes(ctx, "B3.3", *v).unwrap_or(false)));
            let b33_range = if b33.is_empty() {
                "-".into()
            } else {
                format!(
                    "{:.1}-{:.1}",
                    b33.iter().cloned().fold(f64::INFINITY, f64::min),
                    b33.iter().cloned().fold(0.0, f64::max)
                )
            };
            vec![
                m.to_string(),
                shown(b31, 1),
                ok("B3.1", b31),
                shown(b32, 2),
                ok("B3.2", b32),
                b33_range,
                yes(b33ok).to_string(),
                shown(b43, 2),
                ok("B4.3", b43),
            ]
        })
        .collect();
    format!(
        "\nSensitivity to the member length (the study does not state it); `ok` = within the claim's tolerance:\n\n{}",
        md_table(
            &[
                "member_len",
                "B3.1 B/entry at L=128",
                "ok",
                "B3.2 x at 129/128",
                "ok",
                "B3.3 B/entry past the cliff",
                "ok",
                "B4.3 MB at L=100,000",
                "ok",
            ],
            &rows
        )
    )
}

pub(super) fn other_table(other: &[&MemoryRow]) -> String {
    if other.is_empty() {
        return String::new();
    }
    let rows: Vec<Vec<String>> = other
        .iter()
        .map(|r| {
            vec![
                r.strategy.clone(),
                r.clients.to_string(),
                r.fill_per_client.to_string(),
                format!("{:.0}", r.bytes_per_client),
                format!("{:.2} MB", r.bytes_per_client * 1e4 / 1e6),
                format!("{:.0}", r.memory_usage_mean.unwrap_or(f64::NAN)),
                r.encoding.clone(),
            ]
        })
        .collect();
    format!(
        "\nOther strategies, filled by their own scripts (pipelined):\n\n{}",
        md_table(
            &[
                "strategy",
                "clients",
                "decisions per client",
                "bytes/client",
                "per 10,000 clients",
                "MEMORY USAGE (sample)",
                "encoding",
            ],
            &rows
        )
    )
}

pub(super) fn cliff_table(cliffs: &[(u64, &MemoryRow, &MemoryRow, f64)]) -> String {
    let rows: Vec<Vec<String>> = cliffs
        .iter()
        .map(|(z, a, b, jump)| {
            vec![
                z.to_string(),
                format!("{:.0}", a.bytes_per_client),
                a.encoding.clone(),
                format!("{:.0}", b.bytes_per_client),
                b.encoding.clone(),
                format!("{jump:.2}x"),
            ]
        })
        .collect();
    format!(
        "\nThe cliff at other zset-max-listpack-entries (Z):\n\n{}",
        md_table(
            &[
                "Z",
                "B/client at L=Z",
                "encoding",
                "B/client at L=Z+1",
                "encoding",
                "jump"
            ],
            &rows
        )
    )
}

pub(super) fn cpu_table(cpu: &[&MemoryRow]) -> String {
    let cells = super::cpu_cells(cpu);
    let rows: Vec<Vec<String>> = cells
        .iter()
        .map(|c| {
            let of = |f: &dyn Fn(&MemoryRow) -> Option<f64>| {
                let v: Vec<f64> = cpu
                    .iter()
                    .filter(|r| r.fill_per_client == c.n && r.zset_max_listpack_entries == c.z)
                    .filter_map(|r| f(r))
                    .collect();
                v.iter().sum::<f64>() / v.len().max(1) as f64
            };
            let all = cpu
                .iter()
                .filter(|r| r.fill_per_client == c.n && r.zset_max_listpack_entries == c.z)
                .count();
            vec![
                c.n.to_string(),
                c.z.to_string(),
                c.encoding.clone(),
                format!("{} of {all}", c.windows.len()),
                c.est()
                    .map(|e| format!("{:.2} (95% {:.2}-{:.2})", e.v, e.lo, e.hi))
                    .unwrap_or_else(|| "-".into()),
                format!("{:.0}", of(&|r| r.decisions_per_s)),
                format!("{:.2}", of(&|r| r.redis_busy_fraction)),
            ]
        })
        .collect();
    format!(
        "\nCPU per decision (every call admits: trim of nothing + ZADD) by log size n and Z, over measured windows (windows whose log changed encoding during the window are left out):\n\n{}",
        md_table(
            &[
                "n",
                "Z",
                "encoding",
                "windows kept",
                "µs/decision",
                "decisions/s (mean)",
                "busy (mean)",
            ],
            &rows
        )
    )
}
