//! Percentile plots of the closed-loop experiments, like with like: each
//! panel draws one cell (one worker count and round trip, or one cost
//! run) and at most four strategies ([`MAX_LINES`]), grouped by how they
//! decide ([`FAMILIES`]); every strategy in its own colour. `concurrency`:
//! every strategy at the setting they all ran at (the most workers, no
//! added round trip), then the strategies that also ran with the longest
//! round trip. `cost`: the saturated loopback runs, by how the script is
//! called.

use std::collections::BTreeMap;

use crate::AnalysisCtx;
use crate::figure::{Axis, Figure, Panel};
use crate::latency::hist::{MergedLatency, figure_with_table, key_words, merge_by, nines_series};
use crate::rows::LatencyRow;
use limitbench_base::error::Result;

/// At most this many lines in one latency panel.
pub const MAX_LINES: usize = 4;

/// The strategies' families, a panel each (a strategy of none, such as
/// one from a manifest, goes to a panel of the rest).
pub const FAMILIES: &[(&str, &[&str])] = &[
    (
        "buckets and GCRA",
        &[
            "token-bucket",
            "token-bucket-caller-clock",
            "leaky-bucket",
            "gcra",
        ],
    ),
    (
        "logs and counters",
        &[
            "sliding-window-log",
            "sliding-log-ts-member",
            "sliding-window-counter",
        ],
    ),
    (
        "fixed windows",
        &[
            "fixed-window-lua",
            "fixed-window-derived-key",
            "fixed-window-multi",
        ],
    ),
    (
        "WATCH/MULTI and check-then-act",
        &["watch-multi", "check-then-act"],
    ),
];

/// Strategies in panels of at most [`MAX_LINES`]: by family, in the
/// families' order, then the rest in chunks (title, strategies).
pub fn by_family(strategies: &[String]) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for (title, members) in FAMILIES {
        let have: Vec<String> = members
            .iter()
            .filter(|m| strategies.iter().any(|s| s == *m))
            .map(|m| m.to_string())
            .collect();
        for (i, chunk) in have.chunks(MAX_LINES).enumerate() {
            let t = if i == 0 {
                title.to_string()
            } else {
                format!("{title}, continued")
            };
            out.push((t, chunk.to_vec()));
        }
    }
    let rest: Vec<String> = strategies
        .iter()
        .filter(|s| !FAMILIES.iter().any(|(_, m)| m.contains(&s.as_str())))
        .cloned()
        .collect();
    for chunk in rest.chunks(MAX_LINES) {
        out.push(("other strategies".into(), chunk.to_vec()));
    }
    out
}

/// The setting of a concurrency cell (`c64/rtt0` of `gcra/c64/rtt0`).
pub fn setting<'a>(cell: &'a str, strategy: &str) -> &'a str {
    cell.strip_prefix(strategy)
        .and_then(|s| s.strip_prefix('/'))
        .unwrap_or(cell)
}

/// Workers and round trip (ms) of a concurrency setting (`c64/rtt6.7`);
/// None for another shape (a jitter sweep's `c64/rtt6.7/jitter1`).
pub fn workers_rtt(setting: &str) -> Option<(u64, f64)> {
    let parts: Vec<&str> = setting.split('/').collect();
    match parts.as_slice() {
        [c, r] => Some((
            c.strip_prefix('c')?.parse().ok()?,
            r.strip_prefix("rtt")?.parse().ok()?,
        )),
        _ => None,
    }
}

/// The two settings drawn: the one the most strategies ran at (the most
/// workers, then the shortest round trip, among those), and, with the
/// same workers, the longest round trip at least two strategies ran at.
pub fn chosen_settings(strategies_at: &BTreeMap<String, Vec<String>>) -> Vec<String> {
    let shaped: Vec<(&String, usize, (u64, f64))> = strategies_at
        .iter()
        .filter_map(|(s, v)| workers_rtt(s).map(|w| (s, v.len(), w)))
        .collect();
    let Some(first) = shaped.iter().max_by(|a, b| {
        (a.1, a.2.0)
            .cmp(&(b.1, b.2.0))
            .then(b.2.1.total_cmp(&a.2.1))
    }) else {
        return vec![];
    };
    let mut out = vec![first.0.clone()];
    if let Some(second) = shaped
        .iter()
        .filter(|x| x.2.0 == first.2.0 && x.2.1 > first.2.1 && x.1 >= 2)
        .max_by(|a, b| a.2.1.total_cmp(&b.2.1))
    {
        out.push(second.0.clone());
    }
    out
}

fn y_axis() -> Axis {
    Axis::log("decision latency (ms, log scale)")
}

fn x_axis() -> Axis {
    Axis::nines("percentile")
}

/// The concurrency experiment's percentile figure and its table.
pub fn concurrency(ctx: &AnalysisCtx, rows: &[LatencyRow]) -> Result<String> {
    let merged = merge_by(rows, |r| {
        Some(format!("{}#{}", setting(&r.cell, &r.strategy), r.strategy))
    })?;
    let mut strategies_at: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for k in merged.keys() {
        let (s, strategy) = k.split_once('#').unwrap_or((k, k));
        strategies_at
            .entry(s.to_string())
            .or_default()
            .push(strategy.to_string());
    }
    let chosen = chosen_settings(&strategies_at);
    if chosen.is_empty() {
        return Ok(String::new());
    }
    let words = |s: &str| match workers_rtt(s) {
        Some((c, r)) if r == 0.0 => format!("{c} workers, no added round trip"),
        Some((c, r)) => format!("{c} workers, {r} ms round trip"),
        None => s.to_string(),
    };
    // Panel titles name the round trip; the workers, where the settings
    // share them, are in the figure's title.
    let workers: Vec<u64> = chosen
        .iter()
        .filter_map(|s| workers_rtt(s))
        .map(|w| w.0)
        .collect();
    let one_workers = workers.len() == chosen.len() && workers.windows(2).all(|w| w[0] == w[1]);
    let short = |s: &str| match workers_rtt(s) {
        Some((_, r)) if one_workers && r == 0.0 => "no added round trip".to_string(),
        Some((_, r)) if one_workers => format!("{r} ms round trip"),
        _ => words(s),
    };
    let mut fig = Figure::new(
        "latency_percentiles",
        &[],
        if one_workers {
            format!(
                "Decision latency by percentile, {} workers, one round trip per panel (concurrency; beyond the studies)",
                workers[0]
            )
        } else {
            "Decision latency by percentile, one setting per panel (concurrency; beyond the studies)".to_string()
        },
        String::new(),
    )
    .columns(2);
    let mut rows_md: Vec<(String, &MergedLatency)> = Vec::new();
    let mut lines = 0;
    for (i, s) in chosen.iter().enumerate() {
        let strategies = &strategies_at[s];
        let groups = if i == 0 {
            by_family(strategies)
        } else {
            vec![("every strategy run there".to_string(), strategies.clone())]
        };
        for (title, members) in groups {
            for chunk in members.chunks(crate::latency::closed::MAX_LINES) {
                let mut p =
                    Panel::new(format!("{}: {title}", short(s)), x_axis(), y_axis()).label_ends();
                for m in chunk {
                    let h = &merged[&format!("{s}#{m}")];
                    p = p.series(nines_series(m.clone(), &h.hist));
                    rows_md.push((format!("{m} at {}", words(s)), h));
                    lines += 1;
                }
                fig = fig.panel(p);
            }
        }
    }
    let trials: Vec<usize> = rows_md.iter().map(|r| r.1.trials).collect();
    fig.caption = format!(
        "Per-decision latency (send to reply) against its percentile on a nines axis (p50, p90, p99, p99.9: each further nine one step right), one cell per panel so that strategies are compared where they ran alike: {}. Each line merges the HdrHistograms of its cell's trials ({} trials per line); its last point is the maximum, drawn at the quantile 1 - 1/decisions. Each panel has its own latency range. Closed loop: each worker sends its next request when the previous reply arrives, so a slow reply delays the requests behind it instead of being measured by them (coordinated omission): these tails are lower bounds of what an open-loop caller would see (see latency-open-loop). {lines} lines, at most {} a panel; no spread is drawn (each line pools its cell's decisions).",
        chosen
            .iter()
            .map(|s| words(s))
            .collect::<Vec<_>>()
            .join("; then "),
        span(&trials),
        MAX_LINES
    );
    figure_with_table(ctx, &fig, &rows_md)
}

/// `a` or `a to b`.
pub fn span(v: &[usize]) -> String {
    match (v.iter().min(), v.iter().max()) {
        (Some(a), Some(b)) if a == b => a.to_string(),
        (Some(a), Some(b)) => format!("{a} to {b}"),
        _ => "no".into(),
    }
}

/// The cost experiment's panels: (title, variant keys), at most
/// [`MAX_LINES`] each.
pub fn cost_groups(keys: &[String]) -> Vec<(String, Vec<String>)> {
    let mut groups: Vec<(String, Vec<String>)> = vec![
        ("plain commands and MULTI".into(), vec![]),
        ("Lua strategies by EVALSHA, uniform keys".into(), vec![]),
        ("the token bucket called otherwise".into(), vec![]),
        ("one abusive key".into(), vec![]),
        ("sliding-window-log, L=100".into(), vec![]),
        ("sliding-window-log, L=10000".into(), vec![]),
        ("other runs".into(), vec![]),
    ];
    for k in keys {
        let parts: Vec<&str> = k.split('|').collect();
        let g = match parts.as_slice() {
            ["sliding-window-log", "L100", ..] => 4,
            ["sliding-window-log", _, ..] => 5,
            [_, "abusive"] => 3,
            ["token-bucket", _] if parts[1] != "evalsha" => 2,
            [_, "evalsha"] => 1,
            [_] | ["get" | "incr", _] => 0,
            _ => 6,
        };
        groups[g].1.push(k.clone());
    }
    // The token bucket's EVALSHA is the common line of its other calls.
    if !groups[2].1.is_empty() && keys.iter().any(|k| k == "token-bucket|evalsha") {
        groups[2].1.insert(0, "token-bucket|evalsha".into());
    }
    groups
        .into_iter()
        .filter(|g| !g.1.is_empty())
        .flat_map(|(t, ks)| {
            ks.chunks(MAX_LINES)
                .enumerate()
                .map(|(i, c)| {
                    let title = if i == 0 {
                        t.clone()
                    } else {
                        format!("{t}, continued")
                    };
                    (title, c.to_vec())
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The cost experiment's percentile figure and its table.
pub fn cost(ctx: &AnalysisCtx, rows: &[LatencyRow]) -> Result<String> {
    let merged = merge_by(rows, |r| Some(r.cell.clone()))?;
    if merged.is_empty() {
        return Ok(String::new());
    }
    let keys: Vec<String> = merged.keys().cloned().collect();
    let mut fig = Figure::new(
        "latency_percentiles_cost",
        &[],
        "Decision latency by percentile in the saturated cost runs (beyond the studies)",
        String::new(),
    )
    .columns(2);
    let mut rows_md: Vec<(String, &MergedLatency)> = Vec::new();
    for (title, ks) in cost_groups(&keys) {
        let mut p = Panel::new(title, x_axis(), y_axis()).label_ends();
        for k in ks {
            let m = &merged[&k];
            p = p.series(nines_series(key_words(&k), &m.hist));
            if !rows_md.iter().any(|r| r.0 == key_words(&k)) {
                rows_md.push((key_words(&k), m));
            }
        }
        fig = fig.panel(p);
    }
    let trials: Vec<usize> = rows_md.iter().map(|r| r.1.trials).collect();
    fig.caption = format!(
        "Per-decision latency (send to reply) in the cost experiment's runs, each a cell of its own at the same saturating closed-loop load on loopback (the CPU measurement, where latency is a by-product), against its percentile on a nines axis; HdrHistograms merged over each run's {} trials; the last point of each line is the maximum. Closed loop, so tails are lower bounds (coordinated omission); the token bucket's EVALSHA line is repeated beside its other calls. At most {MAX_LINES} lines a panel.",
        span(&trials)
    );
    figure_with_table(ctx, &fig, &rows_md)
}

#[cfg(test)]
mod tests {
    use crate::latency::closed::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn panels_hold_at_most_four_strategies_of_one_family() {
        let mut all: Vec<String> = crate::figure::STRATEGY_LOOKS[..12]
            .iter()
            .map(|s| s.to_string())
            .collect();
        all.push("my-manifest-limiter".into());
        let g = by_family(&all);
        assert!(g.iter().all(|(_, m)| !m.is_empty() && m.len() <= MAX_LINES));
        let drawn: usize = g.iter().map(|(_, m)| m.len()).sum();
        assert_eq!(drawn, all.len(), "every strategy once: {g:?}");
        assert_eq!(g.last().unwrap().1, names(&["my-manifest-limiter"]));
        let keys = names(&[
            "get",
            "incr",
            "fixed-window-multi",
            "gcra|evalsha",
            "gcra|abusive",
            "token-bucket|evalsha",
            "token-bucket|eval",
            "token-bucket|fcall",
            "token-bucket|abusive",
            "fixed-window-lua|evalsha",
            "sliding-window-counter|evalsha",
            "sliding-window-log|L100|full",
            "sliding-window-log|L100|normal",
            "sliding-window-log|L100|steady",
            "sliding-window-log|L10000|full",
        ]);
        let c = cost_groups(&keys);
        assert!(c.iter().all(|(_, m)| m.len() <= MAX_LINES), "{c:?}");
        assert_eq!(c[0].1, names(&["get", "incr", "fixed-window-multi"]));
        assert_eq!(c[2].1[0], "token-bucket|evalsha", "the common line first");
    }

    #[test]
    fn the_settings_drawn_are_where_every_strategy_ran_then_the_longest_round_trip() {
        let mut at: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for s in ["c8/rtt0", "c64/rtt0"] {
            at.insert(s.into(), names(&["a", "b", "c"]));
        }
        at.insert("c64/rtt6.7".into(), names(&["a", "b"]));
        at.insert("c64/rtt1".into(), names(&["a", "b"]));
        at.insert("c64/rtt6.7/jitter1".into(), names(&["a", "b", "c", "d"]));
        at.insert("c8/rtt9".into(), names(&["a", "b"]));
        assert_eq!(chosen_settings(&at), names(&["c64/rtt0", "c64/rtt6.7"]));
        assert_eq!(setting("gcra/c64/rtt0", "gcra"), "c64/rtt0");
        assert_eq!(workers_rtt("c64/rtt6.7"), Some((64, 6.7)));
        assert_eq!(workers_rtt("c64/rtt6.7/jitter1"), None);
    }
}
