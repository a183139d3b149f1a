//! Analysis of `retries` (A2.1-A2.3): WATCH/MULTI admitted vs retry budget
//! per round trip and per setting of the two unstated details (backoff,
//! whether the budget counts the first try); the slowdown against the Lua
//! fixed window on the same trials; and over-admission (never, over the
//! retries and concurrency trials).

use std::collections::BTreeMap;

use crate::analysis::chart::{Axes, Series, Style, xy_chart};
use crate::analysis::stats::Summary;
use crate::analysis::table::{f, md_table};
use crate::analysis::{AnalysisCtx, Measured, Section};
use crate::error::Result;
use super::rows::Row;

const WATCH: &str = "watch-multi";

fn rtt_key(ms: f64) -> i64 {
    (ms * 1000.0).round() as i64
}

pub fn analyze(ctx: &AnalysisCtx) -> Result<(Vec<Measured>, Section)> {
    let mut out = Vec::new();
    let Some(rows) = ctx.read_csv::<Row>("retries.csv")? else {
        return Ok((out, Section::new("retries", "Not run.\n")));
    };
    let limit = rows.first().map(|r| r.limit).unwrap_or(100);
    let workers = rows.first().map(|r| r.workers).unwrap_or(0);
    let mut md = format!(
        "{} trials; {workers} workers share exactly L={limit} requests per trial; seed {}.\n\n",
        rows.len(),
        ctx.manifest["seed"]
    );
    // (backoff, counts first, rtt, budget) -> admitted, refused by retries, wall
    type Key = (u64, bool, i64, u32);
    let mut by: BTreeMap<Key, Vec<&Row>> = BTreeMap::new();
    let mut base: BTreeMap<i64, Vec<&Row>> = BTreeMap::new();
    for r in &rows {
        match (r.retry_budget, r.backoff_us, r.budget_includes_first) {
            (Some(b), Some(bo), Some(fi)) => by
                .entry((bo, fi, rtt_key(r.target_rtt_ms), b))
                .or_default()
                .push(r),
            _ => base.entry(rtt_key(r.target_rtt_ms)).or_default().push(r),
        }
    }
    let mean =
        |v: &[&Row], g: fn(&Row) -> f64| Summary::of(&v.iter().map(|r| g(r)).collect::<Vec<_>>());
    let mut table = Vec::new();
    for ((bo, fi, rtt, b), v) in &by {
        let a = mean(v, |r| r.admitted as f64);
        let w = mean(v, |r| r.wall_ms);
        let lua = base
            .get(rtt)
            .map(|l| mean(l, |r| r.wall_ms).mean)
            .unwrap_or(f64::NAN);
        table.push(vec![
            f(*rtt as f64 / 1000.0, 1),
            f(mean(v, |r| r.rtt_median_us).mean / 1000.0, 2),
            bo.to_string(),
            if *fi {
                "first try counted"
            } else {
                "retries only"
            }
            .into(),
            b.to_string(),
            a.show(1),
            f(mean(v, |r| r.refused_by_retries as f64).mean, 1),
            f(mean(v, |r| r.aborts as f64).mean, 0),
            f(w.mean, 1),
            f(w.mean / lua, 1),
        ]);
    }
    md += "WATCH/MULTI per round trip, backoff, budget counting and retry budget (admitted: mean (min, max, n); wall per trial; slowdown = wall / Lua fixed window's wall at the same round trip):\n\n";
    md += &md_table(
        &[
            "rtt ms",
            "measured rtt ms",
            "backoff us",
            "budget",
            "retry budget",
            "admitted",
            "refused (retries)",
            "aborts",
            "wall ms",
            "x Lua",
        ],
        &table,
    );
    md += "\nLua fixed window on the same trials: ";
    md += &base
        .iter()
        .map(|(rtt, v)| {
            format!(
                "{} ms: admitted {}, wall {} ms",
                *rtt as f64 / 1000.0,
                mean(v, |r| r.admitted as f64).show(1),
                f(mean(v, |r| r.wall_ms).mean, 1)
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    md += "\n\n";

    // Figure: admitted vs budget, per round trip and setting.
    let mut series: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    let mut ranges: BTreeMap<String, Vec<(f64, f64, f64)>> = BTreeMap::new();
    for ((bo, fi, rtt, b), v) in &by {
        let name = format!(
            "{} ms, backoff {bo} us{}",
            *rtt as f64 / 1000.0,
            if *fi { ", first counted" } else { "" }
        );
        let a = mean(v, |r| r.admitted as f64);
        series
            .entry(name.clone())
            .or_default()
            .push((*b as f64, a.mean));
        ranges
            .entry(name)
            .or_default()
            .push((*b as f64, a.min, a.max));
    }
    if !series.is_empty() {
        let (path, link) = ctx.figure("a2_watch_admitted_vs_budget.svg");
        xy_chart(
            &path,
            &Axes {
                title: format!(
                    "A2.1/A2.2 WATCH/MULTI admitted of {limit} vs retry budget, {workers} workers"
                ),
                x_label: "retry budget".into(),
                y_label: "admitted (mean, min-max)".into(),
                x_log: true,
                ..Default::default()
            },
            &series
                .iter()
                .map(|(n, p)| {
                    Series::new(n.clone(), p.clone(), Style::LinePoints)
                        .with_ranges(ranges[n].clone())
                })
                .collect::<Vec<_>>(),
        )?;
        md += &format!("![A2 admitted vs budget]({link})\n\n");
    }

    // A2.1: budget 10 at the longest round trip; the default setting is the value,
    // the others are the sensitivity.
    let longest = by.keys().map(|k| k.2).max();
    if let Some(lr) = longest {
        let at: Vec<(&Key, Summary)> = by
            .iter()
            .filter(|(k, _)| k.2 == lr && k.3 == 10)
            .map(|(k, v)| (k, mean(v, |r| r.admitted as f64)))
            .collect();
        if let Some((_, s)) = at.iter().find(|(k, _)| k.0 == 0 && !k.1).or(at.first()) {
            let c = ctx.claim("A2.1");
            let within: Vec<String> = at
                .iter()
                .filter(|(_, s)| {
                    c.map(|c| (s.mean - c.published.at(0)).abs() <= c.tolerance.at(0))
                        .unwrap_or(false)
                })
                .map(|(k, _)| {
                    format!(
                        "backoff {} us/{}",
                        k.0,
                        if k.1 { "first counted" } else { "retries only" }
                    )
                })
                .collect();
            out.push(
                Measured::new(
                    "A2.1",
                    vec![s.mean],
                    format!(
                        "{} (backoff 0, budget = retries); all settings: {}",
                        s.show(1),
                        at.iter()
                            .map(|(k, s)| format!(
                                "bo{}/{}: {:.1}",
                                k.0,
                                if k.1 { "first" } else { "retries" },
                                s.mean
                            ))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                    format!(
                        "retries.csv strategy=watch-multi retry_budget=10 target_rtt_ms={}",
                        lr as f64 / 1000.0
                    ),
                )
                .note(format!(
                    "settings within the claim's tolerance: {}",
                    if within.is_empty() {
                        "none".into()
                    } else {
                        within.join(", ")
                    }
                )),
            );
        }
    }
    // A2.2: budget 1000 exact, slowdown per round trip (default setting).
    let mut ratios = Vec::new();
    let mut exact = true;
    let mut n1000 = 0;
    for ((bo, fi, rtt, b), v) in &by {
        if *b != 1000 {
            continue;
        }
        exact &= v.iter().all(|r| r.admitted == r.limit);
        n1000 += v.len();
        if let (true, Some(l)) = (*bo == 0 && !*fi, base.get(rtt)) {
            ratios.push((
                *rtt,
                mean(v, |r| r.wall_ms).mean / mean(l, |r| r.wall_ms).mean,
            ));
        }
    }
    if !ratios.is_empty() {
        out.push(
            Measured::new(
                "A2.2",
                ratios.iter().map(|r| r.1).collect(),
                format!(
                    "{}; budget 1000 exact in {} of {n1000} trials",
                    ratios.iter().map(|r| format!("{} ms: {:.1}x", r.0 as f64 / 1000.0, r.1)).collect::<Vec<_>>().join(", "),
                    if exact { n1000 } else { by.iter().filter(|(k, _)| k.3 == 1000).flat_map(|(_, v)| v.iter()).filter(|r| r.admitted == r.limit).count() }
                ),
                "retries.csv mean wall_ms watch-multi (budget 1000, backoff 0) / fixed-window-lua, same target_rtt_ms",
            )
            .condition("budget 1000 admitted exactly L in every trial", exact)
            .note(
                "the slowdown grows with the round trip: every WATCH attempt costs three round trips \
                 (WATCH, GET, MULTI..EXEC) and on a hot key most attempts abort and are retried, \
                 while the script decides in one; how the study's retry loop was built (what is \
                 retried, any pause between attempts) is not stated, and the backoff sweep of A2.1 \
                 shows how much it matters",
            ),
        );
    }
    // A2.3: never over the limit (retries + concurrency trials).
    let mut over: Vec<i64> = rows
        .iter()
        .filter(|r| r.strategy == WATCH)
        .map(|r| r.admitted as i64 - r.limit as i64)
        .collect();
    if let Some(c) = ctx.read_csv::<crate::experiments::concurrency::rows::Row>("concurrency.csv")? {
        over.extend(
            c.iter()
                .filter(|r| r.strategy == WATCH)
                .map(|r| r.over_admitted),
        );
    }
    if !over.is_empty() {
        let m = *over.iter().max().unwrap();
        out.push(Measured::new(
            "A2.3",
            vec![m as f64],
            format!("max over-admission {m} in {} trials", over.len()),
            "retries.csv + concurrency.csv strategy=watch-multi: max(admitted - limit)",
        ));
    }
    Ok((out, Section::new("retries", md)))
}
