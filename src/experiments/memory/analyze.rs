//! Analysis of `memory` (claims B3.1-B3.4, B4.3) from `memory.csv` only.
//!
//! Claims are judged at the strategy's default member length (the smallest
//! `member_len` measured, normally 0 = a plain decimal request id) and
//! `zset-max-listpack-entries` 128; the sensitivity table shows every member
//! length measured and whether it lands within the claim's tolerance, since
//! the study does not say what its members were.

use std::collections::BTreeMap;

use crate::analysis::chart::{Axes, Series, Style, xy_chart};
use crate::analysis::claims::Check;
use crate::analysis::{AnalysisCtx, ClaimSpec, Measured, Section};
use crate::error::Result;
use super::rows::MemoryRow;

fn within(spec: Option<&ClaimSpec>, v: f64, i: usize) -> Option<bool> {
    let s = spec?;
    let (p, t) = (s.published.at(i), s.tolerance.at(0));
    Some(match s.check {
        Check::WithinAbs => (v - p).abs() <= s.tolerance.at(i),
        Check::WithinRel => (v - p).abs() <= s.tolerance.at(i) * p.abs(),
        Check::InRange => v >= s.published.at(0) * (1.0 - t) && v <= s.published.at(1) * (1.0 + t),
        _ => return None,
    })
}

fn yes(b: Option<bool>) -> &'static str {
    match b {
        Some(true) => "yes",
        Some(false) => "no",
        None => "-",
    }
}

pub fn analyze(ctx: &AnalysisCtx) -> Result<(Vec<Measured>, Section)> {
    let Some(rows) = ctx.read_csv::<MemoryRow>("memory.csv")? else {
        return Ok((vec![], Section::new("memory", "Not run.\n")));
    };
    let mut measured = Vec::new();
    let mut md = String::new();
    let log: Vec<&MemoryRow> = rows
        .iter()
        .filter(|r| r.kind == "bytes" && r.strategy == "sliding-window-log" && r.fill == "direct")
        .collect();
    // (member_len, z, limit) -> the row with the most clients (the main cell).
    let mut main: BTreeMap<(usize, u64, u64), &MemoryRow> = BTreeMap::new();
    for r in &log {
        let k = (r.member_len, r.zset_max_listpack_entries, r.limit);
        if main.get(&k).map(|o| o.clients < r.clients).unwrap_or(true) {
            main.insert(k, r);
        }
    }
    let member_lens: Vec<usize> = {
        let mut v: Vec<usize> = main.keys().map(|k| k.0).collect();
        v.dedup();
        v.sort();
        v.dedup();
        v
    };
    let default_m = member_lens.first().copied().unwrap_or(0);
    let seed = rows.first().map(|r| r.seed).unwrap_or(0);
    md.push_str(&format!(
        "What ran: {} measurements, seed {seed}. Bytes per client = used_memory growth / clients after filling each client to its limit (FLUSHALL before, the filling connection closed; latency-tracking off so per-command histograms are not counted). Claims are judged at member_len {default_m} (the strategy's default: the request id in decimal, ids from {}).\n\n",
        rows.len(),
        log.first().map(|r| r.id_base).unwrap_or(1)
    ));
    md.push_str("| member_len | limit L | clients | bytes/client | bytes/entry | MEMORY USAGE (sample) | encoding |\n|---|---|---|---|---|---|---|\n");
    for ((m, z, l), r) in &main {
        if *z != 128 {
            continue;
        }
        md.push_str(&format!(
            "| {m} | {l} | {} | {:.0} | {:.1} | {:.0} | {} |\n",
            r.clients,
            r.bytes_per_client,
            r.bytes_per_entry.unwrap_or(f64::NAN),
            r.memory_usage_mean.unwrap_or(f64::NAN),
            r.encoding
        ));
    }
    let get = |m: usize, z: u64, l: u64| main.get(&(m, z, l)).copied();

    // Verification: strategy fill vs direct fill at the same clients.
    let ver: Vec<&MemoryRow> = rows.iter().filter(|r| r.fill == "strategy").collect();
    if !ver.is_empty() {
        md.push_str("\nDirect fill vs the strategy itself (EVALSHA, one decision at a time), same clients:\n\n| member_len | L | clients | strategy B/client | direct B/client | difference |\n|---|---|---|---|---|---|\n");
        let mut worst: f64 = 0.0;
        for s in &ver {
            if let Some(d) = log.iter().find(|d| {
                d.limit == s.limit
                    && d.member_len == s.member_len
                    && d.clients == s.clients
                    && d.zset_max_listpack_entries == s.zset_max_listpack_entries
            }) {
                let diff = (d.bytes_per_client / s.bytes_per_client - 1.0) * 100.0;
                worst = worst.max(diff.abs());
                md.push_str(&format!(
                    "| {} | {} | {} | {:.0} | {:.0} | {diff:+.2}% |\n",
                    s.member_len, s.limit, s.clients, s.bytes_per_client, d.bytes_per_client
                ));
            }
        }
        md.push_str(&format!(
            "\nLargest difference {worst:.2}%: the direct fill writes what the strategy writes.\n"
        ));
    }

    // Sensitivity to the member length.
    let past: Vec<u64> = {
        let mut v: Vec<u64> = main
            .keys()
            .filter(|k| k.1 == 128 && k.2 > 128)
            .map(|k| k.2)
            .collect();
        v.sort();
        v.dedup();
        v
    };
    md.push_str("\nSensitivity to the member length (the study does not state it); `ok` = within the claim's tolerance:\n\n| member_len | B3.1 B/entry at L=128 | ok | B3.2 x at 129/128 | ok | B3.3 B/entry past the cliff | ok | B4.3 MB at L=100,000 | ok |\n|---|---|---|---|---|---|---|---|---|\n");
    for &m in &member_lens {
        let b31 = get(m, 128, 128).and_then(|r| r.bytes_per_entry);
        let b32 = match (get(m, 128, 129), get(m, 128, 128)) {
            (Some(a), Some(b)) => Some(a.bytes_per_client / b.bytes_per_client),
            _ => None,
        };
        let b33: Vec<f64> = past
            .iter()
            .filter_map(|l| get(m, 128, *l).and_then(|r| r.bytes_per_entry))
            .collect();
        let b43 = get(m, 128, 100_000).map(|r| r.bytes_per_client / 1e6);
        let b33ok = (!b33.is_empty()).then(|| {
            b33.iter()
                .all(|v| within(ctx.claim("B3.3"), *v, 0).unwrap_or(false))
        });
        md.push_str(&format!(
            "| {m} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            b31.map(|v| format!("{v:.1}")).unwrap_or("-".into()),
            yes(b31.and_then(|v| within(ctx.claim("B3.1"), v, 0))),
            b32.map(|v| format!("{v:.2}")).unwrap_or("-".into()),
            yes(b32.and_then(|v| within(ctx.claim("B3.2"), v, 0))),
            if b33.is_empty() {
                "-".into()
            } else {
                format!(
                    "{:.1}-{:.1}",
                    b33.iter().cloned().fold(f64::INFINITY, f64::min),
                    b33.iter().cloned().fold(0.0, f64::max)
                )
            },
            yes(b33ok),
            b43.map(|v| format!("{v:.2}")).unwrap_or("-".into()),
            yes(b43.and_then(|v| within(ctx.claim("B4.3"), v, 0))),
        ));
    }

    let other: Vec<&MemoryRow> = rows
        .iter()
        .filter(|r| r.kind == "bytes" && r.fill == "strategy-pipelined")
        .collect();
    if !other.is_empty() {
        md.push_str("\nOther strategies, filled by their own scripts (pipelined):\n\n| strategy | clients | decisions per client | bytes/client | per 10,000 clients | MEMORY USAGE (sample) | encoding |\n|---|---|---|---|---|---|---|\n");
        for r in &other {
            md.push_str(&format!(
                "| {} | {} | {} | {:.0} | {:.2} MB | {:.0} | {} |\n",
                r.strategy,
                r.clients,
                r.fill_per_client,
                r.bytes_per_client,
                r.bytes_per_client * 1e4 / 1e6,
                r.memory_usage_mean.unwrap_or(f64::NAN),
                r.encoding
            ));
        }
    }

    let note_m = |id: &str, f: &dyn Fn(usize) -> Option<f64>| -> String {
        let ok: Vec<String> = member_lens
            .iter()
            .filter(|m| {
                f(**m)
                    .and_then(|v| within(ctx.claim(id), v, 0))
                    .unwrap_or(false)
            })
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
    };
    if let Some(r) = get(default_m, 128, 128) {
        let v = r.bytes_per_entry.unwrap_or(f64::NAN);
        measured.push(
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
            .note(note_m("B3.1", &|m| {
                get(m, 128, 128).and_then(|r| r.bytes_per_entry)
            })),
        );
    }
    if let (Some(a), Some(b)) = (get(default_m, 128, 129), get(default_m, 128, 128)) {
        let v = a.bytes_per_client / b.bytes_per_client;
        measured.push(
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
            .note(note_m(
                "B3.2",
                &|m| match (get(m, 128, 129), get(m, 128, 128)) {
                    (Some(a), Some(b)) => Some(a.bytes_per_client / b.bytes_per_client),
                    _ => None,
                },
            )),
        );
    }
    let b33: Vec<(u64, f64)> = past
        .iter()
        .filter_map(|l| get(default_m, 128, *l).and_then(|r| r.bytes_per_entry.map(|v| (*l, v))))
        .collect();
    if !b33.is_empty() {
        let l1000 = get(default_m, 128, 1000);
        let swc = other
            .iter()
            .find(|r| r.strategy == "sliding-window-counter");
        let mut disp = b33
            .iter()
            .map(|(l, v)| format!("L={l}: {v:.1}"))
            .collect::<Vec<_>>()
            .join(", ");
        if let Some(r) = l1000 {
            disp.push_str(&format!(
                "; L=1,000: {:.1} KB per client, x10,000 clients = {:.2} GB (extrapolated from {} clients)",
                r.bytes_per_client / 1000.0,
                r.bytes_per_client * 1e4 / 1e9,
                r.clients
            ));
        }
        if let Some(s) = swc {
            disp.push_str(&format!(
                "; sliding-window counter {:.2} MB per 10,000 clients (measured at {})",
                s.bytes_per_client * 1e4 / 1e6,
                s.clients
            ));
        }
        measured.push(
            Measured::new(
                "B3.3",
                b33.iter().map(|x| x.1).collect(),
                disp,
                "memory.csv: sliding-window-log direct fills, L > 128, z128",
            )
            .note(note_m("B3.3", &|m| {
                let v: Vec<f64> = past
                    .iter()
                    .filter_map(|l| get(m, 128, *l).and_then(|r| r.bytes_per_entry))
                    .collect();
                // Representative value for the note: all within -> the first.
                if v.iter()
                    .all(|x| within(ctx.claim("B3.3"), *x, 0).unwrap_or(false))
                {
                    v.first().copied()
                } else {
                    Some(f64::NAN)
                }
            })),
        );
    }
    if let Some(r) = get(default_m, 128, 100_000) {
        let v = r.bytes_per_client / 1e6;
        measured.push(
            Measured::new(
                "B4.3",
                vec![v],
                format!("{v:.2} MB per client at L=100,000 ({} clients)", r.clients),
                format!("memory.csv: {}", r.cell),
            )
            .note(note_m("B4.3", &|m| {
                get(m, 128, 100_000).map(|r| r.bytes_per_client / 1e6)
            })),
        );
    }

    // B3.4: the cliff moves, and CPU per decision of listpack vs skiplist.
    let zs: Vec<u64> = {
        let mut v: Vec<u64> = rows.iter().map(|r| r.zset_max_listpack_entries).collect();
        v.sort();
        v.dedup();
        v
    };
    let mut cliff_ok = true;
    let mut cliff_disp = Vec::new();
    md.push_str("\nThe cliff at other zset-max-listpack-entries (Z):\n\n| Z | B/client at L=Z | encoding | B/client at L=Z+1 | encoding | jump |\n|---|---|---|---|---|---|\n");
    for &z in &zs {
        let m = default_m;
        if let (Some(a), Some(b)) = (get(m, z, z), get(m, z, z + 1)) {
            let jump = b.bytes_per_client / a.bytes_per_client;
            let ok = a.encoding == "listpack" && b.encoding == "skiplist" && jump > 2.0;
            cliff_ok &= ok;
            cliff_disp.push(format!("Z={z}: {jump:.2}x at {}", z + 1));
            md.push_str(&format!(
                "| {z} | {:.0} | {} | {:.0} | {} | {jump:.2}x |\n",
                a.bytes_per_client, a.encoding, b.bytes_per_client, b.encoding
            ));
        }
    }
    let cpu: Vec<&MemoryRow> = rows.iter().filter(|r| r.kind == "cpu").collect();
    if !cpu.is_empty() {
        md.push_str("\nCPU per decision (every call admits: trim of nothing + ZADD) by log size n and Z:\n\n| n | Z | encoding before -> after | size before -> after | us/decision | decisions/s | busy |\n|---|---|---|---|---|---|---|\n");
        for r in &cpu {
            md.push_str(&format!(
                "| {} | {} | {} -> {} | {:.0} -> {:.0} | {:.2} | {:.0} | {:.2} |\n",
                r.fill_per_client,
                r.zset_max_listpack_entries,
                r.encoding,
                r.encoding_after,
                r.sample_size_mean.unwrap_or(f64::NAN),
                r.sample_size_after.unwrap_or(f64::NAN),
                r.redis_cpu_us_per_decision.unwrap_or(f64::NAN),
                r.decisions_per_s.unwrap_or(f64::NAN),
                r.redis_busy_fraction.unwrap_or(f64::NAN)
            ));
        }
        // At the largest n with both encodings (stable through the run): listpack vs skiplist.
        let stable = |r: &&&MemoryRow| r.encoding == r.encoding_after;
        let mut ns: Vec<u64> = cpu.iter().map(|r| r.fill_per_client).collect();
        ns.sort();
        ns.dedup();
        let mut cmp = None;
        for &n in ns.iter().rev() {
            let lp = cpu
                .iter()
                .filter(stable)
                .filter(|r| r.fill_per_client == n && r.encoding == "listpack")
                .map(|r| r.redis_cpu_us_per_decision.unwrap_or(f64::NAN))
                .fold(f64::NAN, f64::max);
            let sl = cpu
                .iter()
                .filter(stable)
                .filter(|r| r.fill_per_client == n && r.encoding == "skiplist")
                .map(|r| r.redis_cpu_us_per_decision.unwrap_or(f64::NAN))
                .fold(f64::NAN, f64::min);
            if lp.is_finite() && sl.is_finite() {
                cmp = Some((n, lp, sl));
                break;
            }
        }
        let lp_small = cpu
            .iter()
            .filter(stable)
            .filter(|r| r.encoding == "listpack")
            .min_by_key(|r| r.fill_per_client)
            .and_then(|r| r.redis_cpu_us_per_decision.map(|v| (r.fill_per_client, v)));
        let lp_big = cpu
            .iter()
            .filter(stable)
            .filter(|r| r.encoding == "listpack")
            .max_by_key(|r| r.fill_per_client)
            .and_then(|r| r.redis_cpu_us_per_decision.map(|v| (r.fill_per_client, v)));
        if let Some((n, lp, sl)) = cmp {
            let mut m = Measured::new(
                "B3.4",
                vec![lp / sl],
                format!(
                    "cliff moves ({}); at n={n} listpack {lp:.2} us vs skiplist {sl:.2} us per decision ({:.2}x)",
                    cliff_disp.join(", "),
                    lp / sl
                ),
                "memory.csv: kind=bytes at L=Z,Z+1 and kind=cpu rows",
            )
            .condition("the cliff moves with Z (listpack at L=Z, skiplist at Z+1, jump > 2x)", cliff_ok && !cliff_disp.is_empty())
            .condition(format!("a listpack of {n} entries costs more CPU per decision than a skiplist of {n}"), lp > sl);
            if let (Some((n0, c0)), Some((n1, c1))) = (lp_small, lp_big)
                && n1 > n0
            {
                m = m.condition(
                        format!("listpack CPU per decision grows with its size ({n0}: {c0:.2} us -> {n1}: {c1:.2} us)"),
                        c1 > c0,
                    );
            }
            measured.push(m);
        }
    }

    // Figures.
    let (path, link) = ctx.figure("memory_per_client_vs_limit.svg");
    let mut series: Vec<Series> = member_lens
        .iter()
        .map(|m| {
            Series::new(
                format!("member_len {m} (Z=128)"),
                main.iter()
                    .filter(|(k, _)| k.0 == *m && k.1 == 128)
                    .map(|(k, r)| (k.2 as f64, r.bytes_per_client))
                    .collect(),
                Style::LinePoints,
            )
        })
        .collect();
    for &z in zs.iter().filter(|z| **z != 128) {
        series.push(Series::new(
            format!("Z={z}, member_len {default_m}"),
            main.iter()
                .filter(|(k, _)| k.1 == z)
                .map(|(k, r)| (k.2 as f64, r.bytes_per_client))
                .collect(),
            Style::Points,
        ));
    }
    xy_chart(
        &path,
        &Axes {
            title:
                "B3.1-B3.3/B4.3: sliding-log memory per client vs limit (listpack cliff at 128/129)"
                    .into(),
            x_label: "limit L (entries per client)".into(),
            y_label: "bytes per client".into(),
            x_log: true,
            y_log: true,
        },
        &series,
    )?;
    md.push_str(&format!("\n![memory per client]({link})\n"));
    if !cpu.is_empty() {
        let (path, link) = ctx.figure("memory_cpu_listpack.svg");
        let series: Vec<Series> = zs
            .iter()
            .map(|z| {
                Series::new(
                    format!("zset-max-listpack-entries {z}"),
                    cpu.iter()
                        .filter(|r| r.zset_max_listpack_entries == *z)
                        .map(|r| {
                            (
                                r.fill_per_client as f64,
                                r.redis_cpu_us_per_decision.unwrap_or(f64::NAN),
                            )
                        })
                        .collect(),
                    Style::LinePoints,
                )
            })
            .collect();
        xy_chart(
            &path,
            &Axes {
                title: "B3.4: Redis CPU per admitted decision vs log size".into(),
                x_label: "entries in the log".into(),
                y_label: "us per decision".into(),
                ..Default::default()
            },
            &series,
        )?;
        md.push_str(&format!("\n![CPU vs log size]({link})\n"));
    }
    Ok((measured, Section::new("memory", md)))
}
