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
use crate::analysis::figure::{Axis, Figure, Panel, Pt, Reference, Series, num};
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

/// A setting in words: backoff and what the budget counts.
fn setting(bo: u64, first: bool) -> String {
    format!(
        "{}, budget counts {}",
        if bo == 0 {
            "no backoff".to_string()
        } else {
            format!("backoff {} µs", bo)
        },
        if first {
            "the first try too"
        } else {
            "retries only"
        }
    )
}

fn ms(rtt: i64) -> String {
    format!("{} ms", num(rtt as f64 / 1000.0))
}

/// The full table (appendix) and the baseline line.
fn table(g: &Groups, appendix: &mut String) {
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
    *appendix += "WATCH/MULTI per round trip, backoff, budget counting and retry budget (admitted: mean (min, max, n); wall per trial; slowdown = wall / Lua fixed window's wall at the same round trip):\n\n";
    *appendix += &md_table(
        &[
            "added round trip ms",
            "measured round trip ms",
            "backoff µs",
            "budget counts",
            "retry budget",
            "admitted",
            "refused (retries exhausted)",
            "aborts",
            "wall ms",
            "x Lua",
        ],
        &table,
    );
    *appendix += "\nLua fixed window on the same trials: ";
    *appendix += &g
        .baseline
        .iter()
        .map(|(rtt, v)| {
            format!(
                "{}: admitted {}, wall {} ms",
                ms(*rtt),
                summary(v, |r| r.admitted as f64).show(1),
                f(summary(v, |r| r.wall_ms).mean, 1)
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    *appendix += "\n\n";
}

/// The settings (backoff, first counted) in key order.
fn settings(g: &Groups) -> Vec<(u64, bool)> {
    let mut s: Vec<(u64, bool)> = g.watch.keys().map(|k| (k.0, k.1)).collect();
    s.sort();
    s.dedup();
    s
}

/// A2.1: admitted vs budget, a panel per round trip, a series per setting.
fn figure_a2_1(
    ctx: &AnalysisCtx,
    g: &Groups,
    limit: u64,
    workers: u64,
    md: &mut String,
) -> Result<()> {
    let rtts: Vec<i64> = g
        .baseline
        .keys()
        .chain(g.watch.keys().map(|k| &k.2))
        .copied()
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let budgets: Vec<f64> = g
        .watch
        .keys()
        .map(|k| k.3)
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .map(|b| b as f64)
        .collect::<Vec<_>>();
    let longest = g.watch.keys().map(|k| k.2).max().unwrap_or(0);
    let mut fig = Figure::new(
        "a2_1-watch-admitted-vs-budget",
        &["A2.1"],
        format!("WATCH/MULTI: admitted of L={limit} vs retry budget, {workers} workers, per added round trip and retry setting"),
        format!(
            "Admitted per trial, mean with min-max whiskers over n = {} trials per point; the study does not state its backoff or what its budget counts, so every setting is drawn; the claim is read at budget {A2_1_BUDGET}, {} round trip, no backoff, budget counting retries only.",
            g.watch.values().map(|v| v.len()).max().unwrap_or(0),
            ms(longest)
        ),
    )
    .columns(3);
    for rtt in rtts.iter().filter(|r| g.watch.keys().any(|k| k.2 == **r)) {
        let mut p = Panel::new(
            format!("{} added round trip", ms(*rtt)),
            Axis::log("retry budget").ticks(budgets.clone()),
            Axis::new("admitted (requests)"),
        )
        .reference(Reference::limit(format!("limit L = {limit}"), limit as f64));
        for (bo, fi) in settings(g) {
            let pts: Vec<Pt> = g
                .watch
                .iter()
                .filter(|(k, _)| k.0 == bo && k.1 == fi && k.2 == *rtt)
                .map(|(k, v)| Pt::summary(k.3 as f64, &summary(v, |r| r.admitted as f64)))
                .collect();
            p = p.series(Series::line(setting(bo, fi), pts));
        }
        if *rtt == longest
            && let Some(c) = ctx.claim("A2.1")
        {
            let b = A2_1_BUDGET as f64;
            p = p.reference(Reference::published(c, 0).over(b / 1.5, b * 1.5));
        }
        fig = fig.panel(p);
    }
    if fig.points() > 0 {
        *md += &fig.write(ctx)?;
    }
    Ok(())
}

/// A2.2: the slowdown against the Lua fixed window per round trip, a
/// series per setting at budget 1000.
fn figure_a2_2(ctx: &AnalysisCtx, g: &Groups, md: &mut String) -> Result<()> {
    let rtts: Vec<f64> = g.baseline.keys().map(|r| *r as f64 / 1000.0).collect();
    let mut p = Panel::new(
        "",
        Axis::new("added round trip (ms)").ticks(rtts),
        Axis::log("WATCH/MULTI wall time per trial / Lua's (x)"),
    );
    for (bo, fi) in settings(g) {
        let pts: Vec<Pt> = g
            .watch
            .iter()
            .filter(|(k, _)| k.0 == bo && k.1 == fi && k.3 == A2_2_BUDGET)
            .filter_map(|(k, v)| {
                let lua = summary(g.baseline.get(&k.2)?, |r| r.wall_ms).mean;
                let w = summary(v, |r| r.wall_ms);
                Some(Pt::spread(
                    k.2 as f64 / 1000.0,
                    w.mean / lua,
                    w.min / lua,
                    w.max / lua,
                    w.n,
                ))
            })
            .collect();
        p = p.series(Series::line(setting(bo, fi), pts));
    }
    if let Some(c) = ctx.claim("A2.2") {
        p = p.reference(Reference::published(c, 0));
    }
    let fig = Figure::new(
        "a2_2-watch-slowdown-vs-lua",
        &["A2.2"],
        format!("WATCH/MULTI with a budget of {A2_2_BUDGET} retries: how much slower than the Lua fixed window"),
        "Mean wall time per trial of WATCH/MULTI divided by the mean of the Lua fixed window at the same round trip; whiskers: the WATCH/MULTI trials' min and max over the same Lua mean; {n} trials per point; the claim is read on the no-backoff, retries-only setting.",
    )
    .panel(p);
    if fig.points() > 0 {
        *md += &fig.write(ctx)?;
    }
    Ok(())
}

/// A2.3: the largest over-admission of WATCH/MULTI per budget (retries) and
/// per worker count (concurrency).
fn figure_a2_3(
    ctx: &AnalysisCtx,
    g: &Groups,
    concurrency: &[ConcurrencyRow],
    md: &mut String,
) -> Result<()> {
    let mut p = Panel::new(
        "retries experiment",
        Axis::log("retry budget"),
        Axis::new("admitted - L, per trial (requests)"),
    );
    let mut budgets: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
    for (k, v) in &g.watch {
        budgets
            .entry(k.3)
            .or_default()
            .extend(v.iter().map(|r| r.admitted as f64 - r.limit as f64));
    }
    p.x = p.x.ticks(budgets.keys().map(|b| *b as f64).collect());
    p = p.series(Series::line(
        "WATCH/MULTI (mean, whiskers min-max)",
        budgets
            .iter()
            .map(|(b, v)| Pt::summary(*b as f64, &Summary::of(v)))
            .collect(),
    ));
    let mut by_w: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
    for r in concurrency.iter().filter(|r| r.strategy == WATCH) {
        by_w.entry(r.workers)
            .or_default()
            .push(r.over_admitted as f64);
    }
    let mut q = Panel::new(
        "concurrency experiment",
        Axis::log("concurrent workers").ticks(by_w.keys().map(|w| *w as f64).collect()),
        Axis::new("admitted - L, per trial (requests)"),
    )
    .series(Series::line(
        "WATCH/MULTI (mean, whiskers min-max)",
        by_w.iter()
            .map(|(w, v)| Pt::summary(*w as f64, &Summary::of(v)))
            .collect(),
    ));
    if let Some(c) = ctx.claim("A2.3") {
        p = p.reference(Reference::published(c, 0));
        q = q.reference(Reference::published(c, 0));
    }
    let fig = Figure::new(
        "a2_3-watch-never-over",
        &["A2.3"],
        "WATCH/MULTI never admits more than the limit",
        "Admitted - L per trial, mean with min-max whiskers, over every round trip and retry setting (left) and every round trip (right); negative values are requests refused because the retry budget ran out.",
    )
    .panel(p)
    .panel(q)
    .columns(2);
    *md += &fig.write(ctx)?;
    Ok(())
}

/// The compact tables: admitted at budget 10 and the slowdown at budget
/// 1000, per round trip (rows) and setting (columns).
fn pivots(g: &Groups, md: &mut String) {
    let sets = settings(g);
    let rtts: Vec<i64> = g
        .watch
        .keys()
        .map(|k| k.2)
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut header = vec!["added round trip".to_string()];
    header.extend(sets.iter().map(|(bo, fi)| setting(*bo, *fi)));
    let h: Vec<&str> = header.iter().map(|s| s.as_str()).collect();
    let rows = |budget: u32, val: &dyn Fn(&[&Row], i64) -> String| -> Vec<Vec<String>> {
        rtts.iter()
            .map(|rtt| {
                let mut row = vec![ms(*rtt)];
                row.extend(sets.iter().map(|(bo, fi)| {
                    g.watch
                        .get(&(*bo, *fi, *rtt, budget))
                        .map(|v| val(v, *rtt))
                        .unwrap_or_default()
                }));
                row
            })
            .collect()
    };
    *md += &format!("Mean admitted at a retry budget of {A2_1_BUDGET} (A2.1):\n\n");
    *md += &md_table(
        &h,
        &rows(A2_1_BUDGET, &|v, _| {
            f(summary(v, |r| r.admitted as f64).mean, 1)
        }),
    );
    *md += &format!(
        "\nSlowdown against the Lua fixed window at a retry budget of {A2_2_BUDGET} (A2.2), x:\n\n"
    );
    *md += &md_table(
        &h,
        &rows(A2_2_BUDGET, &|v, rtt| {
            g.baseline
                .get(&rtt)
                .map(|l| {
                    f(
                        summary(v, |r| r.wall_ms).mean / summary(l, |r| r.wall_ms).mean,
                        1,
                    )
                })
                .unwrap_or_default()
        }),
    );
    *md += "\n";
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
        .map(|(k, _)| setting(k.0, k.1))
        .collect();
    Some(
        Measured::new(
            "A2.1",
            vec![value.mean],
            format!(
                "{} (no backoff, budget counts retries only); other settings: {}",
                value.show(1),
                at.iter()
                    .filter(|(k, _)| !is_default(k))
                    .map(|(k, s)| format!("{}: {:.1}", setting(k.0, k.1), s.mean))
                    .collect::<Vec<_>>()
                    .join("; ")
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
    let mut appendix = String::new();
    let g = groups(&rows);
    let concurrency = ctx
        .read_csv::<ConcurrencyRow>("concurrency.csv")?
        .unwrap_or_default();
    figure_a2_1(ctx, &g, limit, workers, &mut md)?;
    figure_a2_2(ctx, &g, &mut md)?;
    pivots(&g, &mut md);
    figure_a2_3(ctx, &g, &concurrency, &mut md)?;
    table(&g, &mut appendix);
    let m1 = measured_a2_1(ctx, &g);
    let m2 = measured_a2_2(&g);
    let over = a2_3(&rows, &concurrency);
    let finding = format!(
        "{}{}{}",
        m1.as_ref().map(|m| format!("at a budget of 10 retries WATCH/MULTI admitted {} of {limit} with no backoff; ", f(m.values[0], 1))).unwrap_or_default(),
        m2.as_ref()
            .map(|m| format!(
                "with 1,000 retries it was {} and {} times slower than the Lua script at the round trips {}; ",
                if m.conditions.iter().all(|c| c.1) { "exact in every trial" } else { "not exact in every trial" },
                m.values.iter().map(|v| f(*v, 0)).collect::<Vec<_>>().join(", "),
                g.baseline.keys().filter(|k| g.watch.keys().any(|w| w.2 == **k)).map(|k| ms(*k)).collect::<Vec<_>>().join(", ")
            ))
            .unwrap_or_default(),
        over.iter().max().map(|m| format!("its largest over-admission in {} trials was {m}.", over.len())).unwrap_or_default(),
    );
    out.extend(m1);
    out.extend(m2);
    if let Some(m) = over.iter().max() {
        out.push(Measured::new(
            "A2.3",
            vec![*m as f64],
            format!("max over-admission {m} in {} trials", over.len()),
            "retries.csv + concurrency.csv strategy=watch-multi: max(admitted - limit)",
        ));
    }
    Ok((
        out,
        Section::new("retries", md)
            .finding(finding)
            .appendix(appendix),
    ))
}
