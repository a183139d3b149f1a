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
use crate::analysis::figure::{Axis, Figure, Panel, Pt, Reference, Series, num, pass_region};
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
fn a0(ctx: &AnalysisCtx, md: &mut String, out: &mut Vec<Measured>) -> Result<()> {
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
        return Ok(());
    }
    let mut cats: Vec<String> = counts.iter().map(|c| c.0.clone()).collect();
    cats.push("all four".into());
    let mut pts: Vec<Pt> = counts
        .iter()
        .enumerate()
        .map(|(i, c)| Pt::new(i as f64, c.1 as f64))
        .collect();
    pts.push(Pt::new(counts.len() as f64, total as f64));
    let mut panel = Panel::new(
        "",
        Axis::new("experiment of study A"),
        Axis::new("trials (rows of its CSV)"),
    )
    .categories(cats)
    .series(Series::points("trials in this run", pts));
    if let Some(c) = ctx.claim("A0") {
        panel = panel.reference(
            Reference::published(c, 0).over(counts.len() as f64 - 0.45, counts.len() as f64 + 0.45),
        );
    }
    *md += &Figure::new(
        "a0-study-a-trials",
        &["A0"],
        "trials of study A's four experiments in this run",
        format!("Trials per experiment and in all four ({total}, {:.1} min of run time); one value each, no spread.", secs / 60.0),
    )
    .panel(panel)
    .write(ctx)?;
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
    Ok(())
}

/// A1.1: admitted per worker count without added delay, the published
/// value at 64 workers.
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
    let mut by: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
    for r in rows
        .iter()
        .filter(|r| r.strategy == CTA && r.target_rtt_ms == 0.0)
    {
        by.entry(r.workers).or_default().push(r.admitted as f64);
    }
    let pts: Vec<Pt> = by
        .iter()
        .map(|(c, v)| Pt::summary(*c as f64, &Summary::of(v)))
        .collect();
    let mut panel = Panel::new(
        "",
        Axis::log("concurrent workers c").ticks(by.keys().map(|c| *c as f64).collect()),
        Axis::new("admitted of one key's limit (requests)"),
    )
    .series(Series::line("check-then-act, no added delay", pts))
    .reference(Reference::limit(format!("limit L = {limit}"), limit as f64));
    if let Some(c) = ctx.claim("A1.1") {
        panel = panel.reference(Reference::published(c, 0).over(64.0 / 1.35, 64.0 * 1.35));
    }
    let n = by.values().map(|v| v.len()).max().unwrap_or(0);
    *md += &Figure::new(
        "a1_1-check-then-act-admitted",
        &["A1.1"],
        format!("check-then-act admits more than L={limit} as workers race (no added delay)"),
        format!("Admitted per trial, mean with min-max whiskers over n = {n} trials per worker count; the published mean at 64 workers is drawn over that point."),
    )
    .panel(panel)
    .write(ctx)?;
    Ok(())
}

/// A1.2's figure (a panel per round trip, the formula marked at each worker
/// count) and its compact table (workers x round trip).
fn a1_2_figure_and_table(
    ctx: &AnalysisCtx,
    o: &Overshoot,
    limit: u64,
    md: &mut String,
    appendix: &mut String,
) -> Result<()> {
    let mut table = Vec::new();
    let mut panels = Vec::new();
    let longest = o.rtt_measured.keys().last().copied().unwrap_or(0);
    let ws: BTreeSet<u64> = o.by.keys().map(|k| k.1).collect();
    for &rtt in o.rtt_measured.keys() {
        let mut pts = Vec::new();
        for ((_, c), v) in o.by.iter().filter(|((r2, _), _)| *r2 == rtt) {
            let s = Summary::of(v);
            let formula = lockstep_overshoot(*c, limit) as f64;
            pts.push(Pt::summary(*c as f64, &s));
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
        let mut p = Panel::new(
            format!("{} ms added round trip", num(rtt as f64 / 1000.0)),
            Axis::log("concurrent workers c").ticks(ws.iter().map(|c| *c as f64).collect()),
            Axis::new("admitted - L (requests)"),
        )
        .series(Series::line("check-then-act, measured", pts));
        for c in &ws {
            let formula = lockstep_overshoot(*c, limit) as f64;
            p = p.reference(
                Reference::expected("c*ceil(L/c) - L (lockstep formula)", formula)
                    .over(*c as f64 / 1.3, *c as f64 * 1.3),
            );
            if rtt == longest
                && A1_2_WORKERS.contains(c)
                && let Some(spec) = ctx.claim("A1.2")
            {
                let t = pass_region(spec, 0).1.map(|b| b.1).unwrap_or(f64::NAN);
                let mut r = Reference::published(spec, 0).over(*c as f64 / 1.3, *c as f64 * 1.3);
                r.value = None;
                r.band = Some((formula - t, formula + t));
                r.lines = vec![formula - t, formula + t];
                r.label = format!(
                    "A1.2 published: {}; shaded: passes (within {} of the formula)",
                    spec.published_text,
                    num(t)
                );
                p = p.reference(r);
            }
        }
        panels.push(p);
    }
    let n = o.by.values().map(|v| v.len()).max().unwrap_or(0);
    let mut fig = Figure::new(
        "a1_2-overshoot-vs-formula",
        &["A1.2"],
        "check-then-act overshoot against c*ceil(L/c) - L, per added round trip",
        format!("Admitted - L per trial, mean with min-max whiskers over n = {n} trials per point; grey dashes mark the formula at each worker count; the claim is judged in the longest-round-trip panel."),
    )
    .columns(3);
    fig.panels = panels;
    *md += &fig.write(ctx)?;
    // Compact: mean overshoot per workers (rows) and round trip (columns).
    let rtts: Vec<i64> = o.rtt_measured.keys().copied().collect();
    let mut header = vec!["workers c".to_string(), "formula".to_string()];
    header.extend(
        rtts.iter()
            .map(|r| format!("{} ms", num(*r as f64 / 1000.0))),
    );
    let pivot: Vec<Vec<String>> = ws
        .iter()
        .map(|c| {
            let mut row = vec![c.to_string(), lockstep_overshoot(*c, limit).to_string()];
            row.extend(rtts.iter().map(|r| {
                o.by.get(&(*r, *c))
                    .map(|v| f(Summary::of(v).mean, 1))
                    .unwrap_or_default()
            }));
            row
        })
        .collect();
    *md += "Mean admitted - L per worker count (rows) and added round trip (columns), with the formula:\n\n";
    *md += &md_table(
        &header.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
        &pivot,
    );
    *md += "\n";
    *appendix += "Check-then-act overshoot per round trip and worker count (A1.2):\n\n";
    *appendix += &md_table(
        &[
            "added round trip ms",
            "measured round trip ms (median)",
            "workers",
            "mean admitted - L",
            "min",
            "max",
            "n",
            "formula",
            "mean - formula",
        ],
        &table,
    );
    *appendix += "\n";
    Ok(())
}

/// A1.2: overshoot against the formula per workers and round trip.
fn a1_2(
    ctx: &AnalysisCtx,
    rows: &[Row],
    limit: u64,
    md: &mut String,
    appendix: &mut String,
    out: &mut Vec<Measured>,
) -> Result<()> {
    let o = cta_overshoot(rows);
    if o.by.is_empty() {
        return Ok(());
    }
    a1_2_figure_and_table(ctx, &o, limit, md, appendix)?;
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
fn a3_0(ctx: &AnalysisCtx, rows: &[Row], md: &mut String, out: &mut Vec<Measured>) -> Result<()> {
    let per = per_strategy(rows);
    let names: Vec<&String> = per.keys().collect();
    let series = |atomic: bool| {
        per.values()
            .enumerate()
            .filter(|(_, t)| t.atomic == atomic)
            .map(|(i, t)| Pt::new(i as f64, t.not_exact as f64))
            .collect::<Vec<_>>()
    };
    let mut panel = Panel::new(
        "",
        Axis::new("strategy"),
        Axis::new("trials not admitting exactly L"),
    )
    .categories(names.iter().map(|s| s.to_string()).collect())
    .series(Series::points(
        "atomic design (A3.0 counts these)",
        series(true),
    ))
    .series(Series::points("not atomic (for contrast)", series(false)));
    if let Some(c) = ctx.claim("A3.0") {
        panel = panel.reference(Reference::published(c, 0));
    }
    let n = per.values().map(|t| t.trials).min().unwrap_or(0);
    *md += &Figure::new(
        "a3_0-atomic-exactness",
        &["A3.0"],
        "trials per strategy that did not admit exactly the limit (all worker counts and round trips)",
        format!("Count of trials (at least {n} per strategy) whose admitted count differs from L or that had errors; one count per strategy, so no whiskers."),
    )
    .panel(panel)
    .write(ctx)?;
    *md += "Admitted per strategy over every worker count and round trip (`atomic`: the design promises exactness; strategies of kind `external` are listed but not counted in A3.0, which is about the built-in designs):\n\n";
    *md += &md_table(
        &[
            "strategy",
            "atomic",
            "trials",
            "trials not exactly L",
            "min admitted",
            "max admitted",
        ],
        &per.iter()
            .map(|(s, t)| {
                vec![
                    s.clone(),
                    if t.atomic { "yes" } else { "no" }.into(),
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
    Ok(())
}

pub fn analyze(ctx: &AnalysisCtx) -> Result<(Vec<Measured>, Section)> {
    let mut md = String::new();
    let mut appendix = String::new();
    let mut out = Vec::new();
    let Some(rows) = ctx.read_csv::<Row>("concurrency.csv")? else {
        a0(ctx, &mut md, &mut out)?;
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
    a1_2(ctx, &rows, limit, &mut md, &mut appendix, &mut out)?;
    a3_0(ctx, &rows, &mut md, &mut out)?;
    a0(ctx, &mut md, &mut out)?;
    let s64 = Summary::of(&cta_admitted_at_64(&rows));
    let dev = formula_deviation(&cta_overshoot(&rows), limit)
        .map(|(_, d)| d.iter().map(|x| x.1).fold(0.0, f64::max));
    let (not_exact, atomic) = atomic_not_exact(&rows);
    let finding = format!(
        "check-then-act admitted {} of L={limit} on average at 64 workers without added delay{}; {not_exact} of {atomic} trials of the atomic designs admitted other than exactly L.",
        f(s64.mean, 1),
        dev.map(|d| format!(", and with the longest added round trip its mean overshoot is within {} of c*ceil(L/c)-L", f(d, 2))).unwrap_or_default(),
    );
    Ok((
        out,
        Section::new("concurrency", md)
            .finding(finding)
            .appendix(appendix),
    ))
}
