//! Analysis of `concurrency` (A0, A1.1, A1.2, A3.0): check-then-act's
//! overshoot against the lockstep formula c*ceil(L/c) - L per worker count and
//! round trip, its distribution at 64 workers without added delay, and the
//! exactness of every atomic strategy. A0 counts the trials of study A's four
//! CSVs and reads their times from the manifest.
//!
//! Layout: metric functions (rows -> numbers, unit-tested below), then one
//! presentation function per claim (its table, figure, markdown and
//! `Measured`), then [`analyze`], which reads the CSV and calls them in
//! report order. The metric tests are in `tests.rs` beside this file.

use std::collections::{BTreeMap, BTreeSet};

use super::rows::Row;
use crate::analysis::chart::{Axes, BarGroup, Series, Style, bar_chart, xy_chart};
use crate::analysis::stats::Summary;
use crate::analysis::table::{f, md_table};
use crate::analysis::{AnalysisCtx, Measured, Section};
use crate::error::Result;

const CTA: &str = "check-then-act";

/// The experiments whose trials A0 counts.
const STUDY_A: [&str; 4] = ["concurrency", "retries", "bursts", "skew"];

/// The worker counts A1.2 compares with the formula at the longest round trip.
const A1_2_WORKERS: [u64; 4] = [8, 16, 32, 64];

/// c*ceil(L/c) - L: what lockstep waves of c workers over-admit.
pub fn lockstep_overshoot(workers: u64, limit: u64) -> u64 {
    workers * limit.div_ceil(workers) - limit
}

// ---- Metrics ----

/// A0: total trials over `(experiment, trials, seconds)`, and the seconds
/// of the experiments whose time is known.
pub fn study_a_totals(counts: &[(String, usize, f64)]) -> (usize, f64) {
    let total = counts.iter().map(|c| c.1).sum();
    let secs = counts.iter().map(|c| c.2).filter(|s| s.is_finite()).sum();
    (total, secs)
}

/// A1.1: admitted per trial of check-then-act, 64 workers, no added delay.
pub fn cta_admitted_at_64(rows: &[Row]) -> Vec<f64> {
    rows.iter()
        .filter(|r| r.strategy == CTA && r.workers == 64 && r.target_rtt_ms == 0.0)
        .map(|r| r.admitted as f64)
        .collect()
}

/// How many trials admitted each (whole) count.
pub fn histogram(admitted: &[f64]) -> BTreeMap<i64, usize> {
    let mut hist = BTreeMap::new();
    for v in admitted {
        *hist.entry(*v as i64).or_default() += 1;
    }
    hist
}

/// A1.2's groups of check-then-act trials, keyed by target round trip in us.
#[derive(Debug, Default, PartialEq)]
pub struct Overshoot {
    /// Over-admission per (round trip, workers), one value per trial.
    pub by: BTreeMap<(i64, u64), Vec<f64>>,
    /// The measured median round trip (us) of every trial, per round trip.
    pub rtt_measured: BTreeMap<i64, Vec<f64>>,
}

pub fn cta_overshoot(rows: &[Row]) -> Overshoot {
    let mut o = Overshoot::default();
    for r in rows.iter().filter(|r| r.strategy == CTA) {
        let key = ((r.target_rtt_ms * 1000.0).round() as i64, r.workers);
        o.by.entry(key).or_default().push(r.over_admitted as f64);
        o.rtt_measured
            .entry(key.0)
            .or_default()
            .push(r.rtt_median_us);
    }
    o
}

/// A1.2's value: at the longest round trip (if it adds delay), how far the
/// mean overshoot is from the formula, |mean - formula|, for each of 8, 16,
/// 32 and 64 workers that ran there. `None` without such trials.
pub fn formula_deviation(o: &Overshoot, limit: u64) -> Option<(i64, Vec<(u64, f64)>)> {
    let longest = *o.rtt_measured.keys().last()?;
    let devs: Vec<(u64, f64)> = A1_2_WORKERS
        .iter()
        .filter_map(|c| {
            o.by.get(&(longest, *c)).map(|v| {
                (
                    *c,
                    (Summary::of(v).mean - lockstep_overshoot(*c, limit) as f64).abs(),
                )
            })
        })
        .collect();
    (longest > 0 && !devs.is_empty()).then_some((longest, devs))
}

/// Whether a trial admitted exactly the limit without errors.
fn exact(r: &Row) -> bool {
    r.admitted == r.limit && r.errors == 0
}

/// One strategy's trials over every worker count and round trip.
#[derive(Debug, PartialEq)]
pub struct Tally {
    pub atomic: bool,
    pub trials: usize,
    pub not_exact: usize,
    pub min_admitted: f64,
    pub max_admitted: f64,
}

pub fn per_strategy(rows: &[Row]) -> BTreeMap<String, Tally> {
    let mut per: BTreeMap<String, Tally> = BTreeMap::new();
    for r in rows {
        let t = per.entry(r.strategy.clone()).or_insert(Tally {
            atomic: false,
            trials: 0,
            not_exact: 0,
            min_admitted: f64::MAX,
            max_admitted: f64::MIN,
        });
        t.atomic |= r.atomic_design;
        t.trials += 1;
        t.not_exact += usize::from(!exact(r));
        t.min_admitted = t.min_admitted.min(r.admitted as f64);
        t.max_admitted = t.max_admitted.max(r.admitted as f64);
    }
    per
}

/// A3.0: trials of atomic designs that were not exact, and how many there were.
/// Rows of strategies loaded at run time (`kind = external`): never part of
/// a claim about the designs the studies measured.
pub fn is_external(r: &Row) -> bool {
    r.kind == "external"
}

/// A3.0 over the built-in atomic designs (external strategies excluded).
pub fn atomic_not_exact(rows: &[Row]) -> (usize, usize) {
    let atomic: Vec<&Row> = rows
        .iter()
        .filter(|r| r.atomic_design && !is_external(r))
        .collect();
    let not_exact = atomic.iter().filter(|r| !exact(r)).count();
    (not_exact, atomic.len())
}

// ---- Presentation ----

fn count_rows(ctx: &AnalysisCtx, name: &str) -> usize {
    csv::Reader::from_path(ctx.csv_path(name))
        .map(|mut r| r.records().count())
        .unwrap_or(0)
}

/// A0: trials and times of study A's four experiments.
fn a0(ctx: &AnalysisCtx, md: &mut String, out: &mut Vec<Measured>) {
    let counts: Vec<(String, usize, f64)> = STUDY_A
        .iter()
        .map(|e| {
            (
                e.to_string(),
                count_rows(ctx, &format!("{e}.csv")),
                ctx.manifest["experiments"][e]["seconds"]
                    .as_f64()
                    .unwrap_or(f64::NAN),
            )
        })
        .collect();
    let (total, secs) = study_a_totals(&counts);
    if total == 0 {
        return;
    }
    *md += "Study A trials and times (rows of each CSV; seconds from manifest.json):\n\n";
    *md += &md_table(
        &["experiment", "trials", "seconds"],
        &counts
            .iter()
            .map(|c| vec![c.0.clone(), c.1.to_string(), f(c.2, 1)])
            .collect::<Vec<_>>(),
    );
    *md += "\n";
    out.push(
        Measured::new(
            "A0",
            vec![total as f64],
            format!("{total} trials in {:.1} min", secs / 60.0),
            "rows of concurrency/retries/bursts/skew.csv; manifest.json experiments.*.seconds",
        )
        .note(format!(
            "size {}; time is this machine's, not comparable with the authors'",
            ctx.manifest["size"].as_str().unwrap_or("?")
        )),
    );
}

/// A1.1: the distribution at 64 workers without added delay.
fn a1_1(
    ctx: &AnalysisCtx,
    rows: &[Row],
    limit: u64,
    md: &mut String,
    out: &mut Vec<Measured>,
) -> Result<()> {
    let c64 = cta_admitted_at_64(rows);
    let s64 = Summary::of(&c64);
    if s64.n == 0 {
        return Ok(());
    }
    out.push(
        Measured::new(
            "A1.1",
            vec![s64.mean],
            format!(
                "mean {:.1}, worst {:.0} (min {:.0}, n={})",
                s64.mean, s64.max, s64.min, s64.n
            ),
            "concurrency.csv strategy=check-then-act workers=64 target_rtt_ms=0",
        )
        .note(format!(
            "mean over-admission {:.1}% (scheduling-dependent)",
            (s64.mean / limit as f64 - 1.0) * 100.0
        )),
    );
    let (path, link) = ctx.figure("a1_1_check_then_act_64_workers.svg");
    bar_chart(
        &path,
        &Axes {
            title: "A1.1 check-then-act, 64 workers, no added delay: admitted per trial".into(),
            x_label: "admitted in the trial (limit 100)".into(),
            y_label: "trials".into(),
            ..Default::default()
        },
        &["trials".to_string()],
        &histogram(&c64)
            .iter()
            .map(|(k, n)| BarGroup {
                category: k.to_string(),
                values: vec![*n as f64],
                ranges: vec![None],
            })
            .collect::<Vec<_>>(),
        None,
    )?;
    *md += &format!(
        "**A1.1** check-then-act, 64 workers, no added delay: admitted {} ![A1.1]({link})\n\n",
        s64.show(1)
    );
    Ok(())
}

/// A1.2's figure and table: overshoot per worker count, a series per round trip.
fn a1_2_figure_and_table(
    ctx: &AnalysisCtx,
    o: &Overshoot,
    limit: u64,
    md: &mut String,
) -> Result<()> {
    let mut table = Vec::new();
    let mut series = Vec::new();
    for &rtt in o.rtt_measured.keys() {
        let mut pts = Vec::new();
        let mut ranges = Vec::new();
        for ((_, c), v) in o.by.iter().filter(|((r2, _), _)| *r2 == rtt) {
            let s = Summary::of(v);
            let formula = lockstep_overshoot(*c, limit) as f64;
            pts.push((*c as f64, s.mean));
            ranges.push((*c as f64, s.min, s.max));
            table.push(vec![
                f(rtt as f64 / 1000.0, 1),
                f(Summary::of(&o.rtt_measured[&rtt]).median / 1000.0, 2),
                c.to_string(),
                f(s.mean, 2),
                f(s.min, 0),
                f(s.max, 0),
                s.n.to_string(),
                f(formula, 0),
                f(s.mean - formula, 2),
            ]);
        }
        series.push(
            Series::new(
                format!("measured, {} ms round trip", rtt as f64 / 1000.0),
                pts,
                Style::LinePoints,
            )
            .with_ranges(ranges),
        );
    }
    let ws: BTreeSet<u64> = o.by.keys().map(|k| k.1).collect();
    series.push(Series::new(
        "c*ceil(L/c) - L",
        ws.iter()
            .map(|c| (*c as f64, lockstep_overshoot(*c, limit) as f64))
            .collect(),
        Style::Dashed,
    ));
    let (path, link) = ctx.figure("a1_2_overshoot_vs_workers.svg");
    xy_chart(
        &path,
        &Axes {
            title: "A1.2 check-then-act overshoot vs workers (mean, min-max over trials)".into(),
            x_label: "concurrent workers c".into(),
            y_label: "admitted - L (requests)".into(),
            x_log: true,
            ..Default::default()
        },
        &series,
    )?;
    *md += &format!(
        "**A1.2** check-then-act overshoot per worker count and round trip, against c*ceil(L/c)-L:\n\n![A1.2]({link})\n\n"
    );
    *md += &md_table(
        &[
            "target rtt ms",
            "measured rtt ms (median)",
            "workers",
            "mean over",
            "min",
            "max",
            "n",
            "formula",
            "mean - formula",
        ],
        &table,
    );
    *md += "\n";
    Ok(())
}

/// A1.2: overshoot against the formula per workers and round trip.
fn a1_2(
    ctx: &AnalysisCtx,
    rows: &[Row],
    limit: u64,
    md: &mut String,
    out: &mut Vec<Measured>,
) -> Result<()> {
    let o = cta_overshoot(rows);
    if o.by.is_empty() {
        return Ok(());
    }
    a1_2_figure_and_table(ctx, &o, limit, md)?;
    let Some((longest, devs)) = formula_deviation(&o, limit) else {
        return Ok(());
    };
    let worst = devs.iter().map(|d| d.1).fold(0.0, f64::max);
    out.push(
        Measured::new(
            "A1.2",
            vec![worst],
            format!(
                "max |mean - formula| = {worst:.2} at {} ms ({})",
                longest as f64 / 1000.0,
                devs.iter()
                    .map(|d| format!("c={}: {:.2}", d.0, d.1))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            format!(
                "concurrency.csv strategy=check-then-act target_rtt_ms={} workers in 8,16,32,64",
                longest as f64 / 1000.0
            ),
        )
        .condition(
            "all four worker counts ran at the longest round trip",
            devs.len() == A1_2_WORKERS.len(),
        ),
    );
    Ok(())
}

/// A3.0: every atomic strategy admits exactly the limit.
fn a3_0(rows: &[Row], md: &mut String, out: &mut Vec<Measured>) {
    *md += "Admitted per strategy (all worker counts and round trips; `atomic` = design promises exactness; \
            strategies of kind `external` are listed but not counted in A3.0, which is about the built-in designs):\n\n";
    *md += &md_table(
        &[
            "strategy",
            "atomic",
            "trials",
            "trials not exactly L",
            "min admitted",
            "max admitted",
        ],
        &per_strategy(rows)
            .iter()
            .map(|(s, t)| {
                vec![
                    s.clone(),
                    t.atomic.to_string(),
                    t.trials.to_string(),
                    t.not_exact.to_string(),
                    f(t.min_admitted, 0),
                    f(t.max_admitted, 0),
                ]
            })
            .collect::<Vec<_>>(),
    );
    let (not_exact, atomic) = atomic_not_exact(rows);
    if atomic > 0 {
        out.push(Measured::new(
            "A3.0",
            vec![not_exact as f64],
            format!("{not_exact} of {atomic} trials not exact"),
            "concurrency.csv atomic_design=true kind!=external: admitted != limit or errors > 0",
        ));
    }
}

pub fn analyze(ctx: &AnalysisCtx) -> Result<(Vec<Measured>, Section)> {
    let mut md = String::new();
    let mut out = Vec::new();
    a0(ctx, &mut md, &mut out);
    let Some(rows) = ctx.read_csv::<Row>("concurrency.csv")? else {
        return Ok((out, Section::new("concurrency", md + "Not run.\n")));
    };
    let limit = rows.first().map(|r| r.limit).unwrap_or(100);
    md += &format!(
        "{} trials, {} cells, limit L={limit}, fresh key per trial; workers offer until L+2c are offered. seed {}.\n\n",
        rows.len(),
        rows.iter().map(|r| &r.cell).collect::<BTreeSet<_>>().len(),
        ctx.manifest["seed"]
    );
    let errors: u64 = rows.iter().map(|r| r.errors).sum();
    if errors > 0 {
        md += &format!("**{errors} decisions failed with errors** (counted as not admitted).\n\n");
    }
    a1_1(ctx, &rows, limit, &mut md, &mut out)?;
    a1_2(ctx, &rows, limit, &mut md, &mut out)?;
    a3_0(&rows, &mut md, &mut out);
    Ok((out, Section::new("concurrency", md)))
}
