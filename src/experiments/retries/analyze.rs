//! Analysis of `retries` (A2.1-A2.3): WATCH/MULTI admitted vs retry budget
//! per round trip and per setting of the two unstated details (backoff,
//! whether the budget counts the first try); the slowdown against the Lua
//! fixed window on the same trials; and over-admission (never, over the
//! retries and concurrency trials).
//!
//! Layout: metric functions (rows -> numbers, unit-tested in `tests.rs`
//! beside this file), then the presentation (table, figure, markdown and
//! one `Measured` per claim), then [`analyze`].

use std::collections::BTreeMap;

use super::rows::Row;
use crate::analysis::chart::{Axes, Series, Style, xy_chart};
use crate::analysis::stats::Summary;
use crate::analysis::table::{f, md_table};
use crate::analysis::{AnalysisCtx, Measured, Section};
use crate::error::Result;
use crate::experiments::concurrency::rows::Row as ConcurrencyRow;

const WATCH: &str = "watch-multi";

/// The retry budget A2.1 reads (at the longest round trip).
const A2_1_BUDGET: u32 = 10;
/// The retry budget A2.2 expects to be exact and measures the slowdown of.
const A2_2_BUDGET: u32 = 1000;

/// A round trip in ms as whole us (a map key).
fn rtt_key(ms: f64) -> i64 {
    (ms * 1000.0).round() as i64
}

/// One WATCH/MULTI setting: (backoff us, budget counts the first try,
/// round trip us, retry budget).
pub type Key = (u64, bool, i64, u32);

/// Whether a setting is the default one (no backoff, the budget counts
/// retries only), the one the claims' values are read at.
fn is_default(k: &Key) -> bool {
    k.0 == 0 && !k.1
}

// ---- Metrics ----

/// The trials by setting: WATCH/MULTI per [`Key`], the baseline per round trip.
#[derive(Debug, Default)]
pub struct Groups<'a> {
    pub watch: BTreeMap<Key, Vec<&'a Row>>,
    pub baseline: BTreeMap<i64, Vec<&'a Row>>,
}

pub fn groups(rows: &[Row]) -> Groups<'_> {
    let mut g = Groups::default();
    for r in rows {
        match (r.retry_budget, r.backoff_us, r.budget_includes_first) {
            (Some(b), Some(bo), Some(fi)) => g
                .watch
                .entry((bo, fi, rtt_key(r.target_rtt_ms), b))
                .or_default()
                .push(r),
            _ => g
                .baseline
                .entry(rtt_key(r.target_rtt_ms))
                .or_default()
                .push(r),
        }
    }
    g
}

/// A summary of one field over a group of trials.
pub fn summary(v: &[&Row], field: fn(&Row) -> f64) -> Summary {
    Summary::of(&v.iter().map(|r| field(r)).collect::<Vec<_>>())
}

/// A2.1: admitted at budget 10 and the longest round trip, per setting
/// (key order), and the value: the default setting, else the first.
pub fn a2_1(g: &Groups) -> Option<(Summary, Vec<(Key, Summary)>)> {
    let longest = g.watch.keys().map(|k| k.2).max()?;
    let at: Vec<(Key, Summary)> = g
        .watch
        .iter()
        .filter(|(k, _)| k.2 == longest && k.3 == A2_1_BUDGET)
        .map(|(k, v)| (*k, summary(v, |r| r.admitted as f64)))
        .collect();
    let value = at.iter().find(|(k, _)| is_default(k)).or(at.first())?.1;
    Some((value, at))
}

/// A2.2's numbers: the slowdown (mean wall of WATCH/MULTI at budget 1000,
/// default setting / mean wall of the baseline) per round trip that has
/// both, and how many of the budget-1000 trials (any setting) admitted
/// exactly the limit, of how many.
#[derive(Debug, PartialEq)]
pub struct Slowdown {
    pub ratios: Vec<(i64, f64)>,
    pub exact: usize,
    pub trials: usize,
}

pub fn a2_2(g: &Groups) -> Slowdown {
    let mut s = Slowdown {
        ratios: Vec::new(),
        exact: 0,
        trials: 0,
    };
    for (k, v) in g.watch.iter().filter(|(k, _)| k.3 == A2_2_BUDGET) {
        s.exact += v.iter().filter(|r| r.admitted == r.limit).count();
        s.trials += v.len();
        if let (true, Some(l)) = (is_default(k), g.baseline.get(&k.2)) {
            s.ratios.push((
                k.2,
                summary(v, |r| r.wall_ms).mean / summary(l, |r| r.wall_ms).mean,
            ));
        }
    }
    s
}

/// A2.3: WATCH/MULTI's over-admission per trial, retries then concurrency.
pub fn a2_3(rows: &[Row], concurrency: &[ConcurrencyRow]) -> Vec<i64> {
    let mut over: Vec<i64> = rows
        .iter()
        .filter(|r| r.strategy == WATCH)
        .map(|r| r.admitted as i64 - r.limit as i64)
        .collect();
    over.extend(
        concurrency
            .iter()
            .filter(|r| r.strategy == WATCH)
            .map(|r| r.over_admitted),
    );
    over
}

// ---- Presentation ----

fn budget_counting(first_counted: bool) -> &'static str {
    if first_counted {
        "first try counted"
    } else {
        "retries only"
    }
}

/// The table of every setting and the baseline line.
fn table(g: &Groups, md: &mut String) {
    let mut table = Vec::new();
    for ((bo, fi, rtt, b), v) in &g.watch {
        let w = summary(v, |r| r.wall_ms);
        let lua = g
            .baseline
            .get(rtt)
            .map(|l| summary(l, |r| r.wall_ms).mean)
            .unwrap_or(f64::NAN);
        table.push(vec![
            f(*rtt as f64 / 1000.0, 1),
            f(summary(v, |r| r.rtt_median_us).mean / 1000.0, 2),
            bo.to_string(),
            budget_counting(*fi).into(),
            b.to_string(),
            summary(v, |r| r.admitted as f64).show(1),
            f(summary(v, |r| r.refused_by_retries as f64).mean, 1),
            f(summary(v, |r| r.aborts as f64).mean, 0),
            f(w.mean, 1),
            f(w.mean / lua, 1),
        ]);
    }
    *md += "WATCH/MULTI per round trip, backoff, budget counting and retry budget (admitted: mean (min, max, n); wall per trial; slowdown = wall / Lua fixed window's wall at the same round trip):\n\n";
    *md += &md_table(
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
    *md += "\nLua fixed window on the same trials: ";
    *md += &g
        .baseline
        .iter()
        .map(|(rtt, v)| {
            format!(
                "{} ms: admitted {}, wall {} ms",
                *rtt as f64 / 1000.0,
                summary(v, |r| r.admitted as f64).show(1),
                f(summary(v, |r| r.wall_ms).mean, 1)
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    *md += "\n\n";
}

/// Admitted vs budget, a series per round trip and setting.
fn figure(ctx: &AnalysisCtx, g: &Groups, limit: u64, workers: u64, md: &mut String) -> Result<()> {
    let mut series: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    let mut ranges: BTreeMap<String, Vec<(f64, f64, f64)>> = BTreeMap::new();
    for ((bo, fi, rtt, b), v) in &g.watch {
        let name = format!(
            "{} ms, backoff {bo} us{}",
            *rtt as f64 / 1000.0,
            if *fi { ", first counted" } else { "" }
        );
        let a = summary(v, |r| r.admitted as f64);
        series
            .entry(name.clone())
            .or_default()
            .push((*b as f64, a.mean));
        ranges
            .entry(name)
            .or_default()
            .push((*b as f64, a.min, a.max));
    }
    if series.is_empty() {
        return Ok(());
    }
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
                Series::new(n.clone(), p.clone(), Style::LinePoints).with_ranges(ranges[n].clone())
            })
            .collect::<Vec<_>>(),
    )?;
    *md += &format!("![A2 admitted vs budget]({link})\n\n");
    Ok(())
}

/// A2.1: the default setting is the value, the others are the sensitivity.
fn measured_a2_1(ctx: &AnalysisCtx, g: &Groups) -> Option<Measured> {
    let (value, at) = a2_1(g)?;
    let longest = at.first()?.0.2;
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
    Some(
        Measured::new(
            "A2.1",
            vec![value.mean],
            format!(
                "{} (backoff 0, budget = retries); all settings: {}",
                value.show(1),
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
                longest as f64 / 1000.0
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
    )
}

/// A2.2: budget 1000 exact, and its slowdown per round trip.
fn measured_a2_2(g: &Groups) -> Option<Measured> {
    let s = a2_2(g);
    if s.ratios.is_empty() {
        return None;
    }
    Some(
        Measured::new(
            "A2.2",
            s.ratios.iter().map(|r| r.1).collect(),
            format!(
                "{}; budget 1000 exact in {} of {} trials",
                s.ratios
                    .iter()
                    .map(|r| format!("{} ms: {:.1}x", r.0 as f64 / 1000.0, r.1))
                    .collect::<Vec<_>>()
                    .join(", "),
                s.exact,
                s.trials
            ),
            "retries.csv mean wall_ms watch-multi (budget 1000, backoff 0) / fixed-window-lua, same target_rtt_ms",
        )
        .condition("budget 1000 admitted exactly L in every trial", s.exact == s.trials)
        .note(
            "the slowdown grows with the round trip: every WATCH attempt costs three round trips \
             (WATCH, GET, MULTI..EXEC) and on a hot key most attempts abort and are retried, \
             while the script decides in one; how the study's retry loop was built (what is \
             retried, any pause between attempts) is not stated, and the backoff sweep of A2.1 \
             shows how much it matters",
        ),
    )
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
    let g = groups(&rows);
    table(&g, &mut md);
    figure(ctx, &g, limit, workers, &mut md)?;
    out.extend(measured_a2_1(ctx, &g));
    out.extend(measured_a2_2(&g));
    let concurrency = ctx
        .read_csv::<ConcurrencyRow>("concurrency.csv")?
        .unwrap_or_default();
    let over = a2_3(&rows, &concurrency);
    if let Some(m) = over.iter().max() {
        out.push(Measured::new(
            "A2.3",
            vec![*m as f64],
            format!("max over-admission {m} in {} trials", over.len()),
            "retries.csv + concurrency.csv strategy=watch-multi: max(admitted - limit)",
        ));
    }
    Ok((out, Section::new("retries", md)))
}
