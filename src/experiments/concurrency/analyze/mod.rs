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

pub mod scorecard;

use std::collections::{BTreeMap, BTreeSet};

mod a1_2;

pub use a1_2::{
    Overshoot, cta_overshoot, cta_overshoot_at, deviation_ci, formula_deviation, jitter_holds,
    jitters_at, lockstep_overshoot, worst_deviation,
};

use super::rows::Row;
use limitbench_analysis::claims::Alternative;
use limitbench_analysis::experiments::rows::HistoryRow;
use limitbench_analysis::figure::{
    Anchor, Axis, Figure, Panel, Pt, Reference, Series, num, pass_region,
};
use limitbench_analysis::figure::{ClaimReference, SummaryPoint, WriteFigure};
use limitbench_analysis::stats::{Summary, mean_cs, mean_cs_method};
use limitbench_analysis::table::{f, md_table};
use limitbench_analysis::{AnalysisCtx, Measured, Section};
use limitbench_base::error::Result;

pub(crate) const CTA: &str = "check-then-act";

/// The experiments whose trials A0 counts.
const STUDY_A: [&str; 4] = ["concurrency", "retries", "bursts", "skew"];

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

/// Rows of table `name`, in whichever form the run stores it (0 if absent),
/// read with the crate's one reader (a torn last line is no trial).
fn count_rows(ctx: &AnalysisCtx, name: &str) -> Result<usize> {
    Ok(ctx
        .read_csv::<limitbench_analysis::rows::AnyRow>(name)?
        .map(|rows| rows.len())
        .unwrap_or(0))
}

/// A0: trials and times of study A's four experiments.
fn a0(ctx: &AnalysisCtx, md: &mut String, out: &mut Vec<Measured>) -> Result<()> {
    let counts: Vec<(String, usize, f64)> = STUDY_A
        .iter()
        .map(|e| {
            Ok((
                e.to_string(),
                count_rows(ctx, &format!("{e}.csv"))?,
                ctx.manifest["experiments"][e]["seconds"]
                    .as_f64()
                    .unwrap_or(f64::NAN),
            ))
        })
        .collect::<Result<_>>()?;
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
        .no_cells()
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
    // The study states no round trip for A1.1: ours is loopback (0 added);
    // the other round trips check-then-act ran at with 64 workers (no
    // jitter) are the sweep.
    let mut m = Measured::new(
        "A1.1",
        vec![s64.mean],
        format!(
            "mean {:.1}, worst {:.0} (min {:.0}, n={})",
            s64.mean, s64.max, s64.min, s64.n
        ),
        "concurrency.csv strategy=check-then-act workers=64 target_rtt_ms=0",
    )
    .intervals(vec![mean_cs(&c64)], mean_cs_method(s64.n))
    .setting(&[("rtt_ms", "0")])
    .rests_on(
        rows.iter()
            .filter(|r| r.strategy == CTA && r.workers == 64 && r.target_rtt_ms == 0.0)
            .map(|r| r.cell.as_str()),
    )
    .note(format!(
        "mean over-admission {:.1}% (scheduling-dependent)",
        (s64.mean / limit as f64 - 1.0) * 100.0
    ));
    let mut at: BTreeMap<i64, Vec<f64>> = BTreeMap::new();
    let mut cells: BTreeMap<i64, Vec<&str>> = BTreeMap::new();
    for r in rows.iter().filter(|r| {
        r.strategy == CTA && r.workers == 64 && r.target_rtt_ms > 0.0 && r.rtt_jitter_ms == 0.0
    }) {
        let k = (r.target_rtt_ms * 1000.0).round() as i64;
        at.entry(k).or_default().push(r.admitted as f64);
        cells.entry(k).or_default().push(&r.cell);
    }
    for (rtt, v) in &at {
        let s = Summary::of(v);
        m = m.alternative(
            Alternative::new(
                &[("rtt_ms", a1_2::jitter_text(*rtt as f64 / 1000.0).as_str())],
                vec![s.mean],
                format!("mean {:.1}, worst {:.0} (n={})", s.mean, s.max, s.n),
            )
            .intervals(vec![mean_cs(v)])
            .rests_on(cells[rtt].iter()),
        );
    }
    if !at.is_empty() {
        m = m.sweep_figure("a1_2-overshoot-vs-formula");
    }
    out.push(m);
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
        let (_, _, rule) = pass_region(c, 0);
        panel = panel.reference(
            Reference::published(c, 0)
                .over(64.0 / 1.35, 64.0 * 1.35)
                .labelled(format!(
                    "A1.1 published mean: {}; shaded: passes ({rule})",
                    num(c.published.at(0))
                )),
        );
        // The published worst trial, read from the published text (only the
        // mean is judged): a line of its own, without a band.
        if let Some(w) = worst_in(&c.published_text) {
            let mut r = Reference::published(c, 0).over(64.0 / 1.35, 64.0 * 1.35);
            r.value = Some(w);
            r.band = None;
            r.lines = vec![];
            panel = panel.reference(r.labelled(format!(
                "A1.1 published worst trial: {} (not judged)",
                num(w)
            )));
        }
    }
    // Our worst trial at 64 workers, marked on its own.
    panel = panel.series(Series::points(
        format!("our worst trial at 64 workers: {}", num(s64.max)),
        vec![Pt::new(64.0, s64.max)],
    ));
    // The axis zoomed to what is drawn (every whisker, line and band): the
    // decision is between about 120 and 140 of a count that never falls
    // below L, which a zero-based axis squeezes into a sliver. No point is
    // cut: the range holds every value drawn.
    let drawn = panel
        .series
        .iter()
        .flat_map(|s| s.points.iter().flat_map(|q| [Some(q.y), q.lo, q.hi]))
        .chain(
            panel
                .refs
                .iter()
                .flat_map(|r| [r.value, r.band.map(|b| b.0), r.band.map(|b| b.1)]),
        )
        .flatten()
        .filter(|v| v.is_finite());
    let (lo, hi) = drawn.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
        (a.min(v), b.max(v))
    });
    if lo < hi {
        let pad = (hi - lo) * 0.08;
        panel.y = panel
            .y
            .clone()
            .range((lo - pad).floor(), (hi + 3.0 * pad).ceil());
    }
    let n = by.values().map(|v| v.len()).max().unwrap_or(0);
    *md += &Figure::new(
        "a1_1-check-then-act-admitted",
        &["A1.1"],
        format!("check-then-act admits more than L={limit} as workers race (no added delay)"),
        format!("Admitted per trial, mean with min-max whiskers over n = {n} trials per worker count; the published mean (judged) and worst trial (read from the published text, not judged) at 64 workers are drawn over that point, beside our worst trial; the axis starts near L, not at 0 (every value drawn is inside it)."),
    )
    .panel(panel)
    .write_anchored(
        ctx,
        vec![
            Anchor::new("A1.1", 0, 64.0)
                .at("rtt_ms", "0")
                .on("check-then-act, no added delay"),
        ],
    )?;
    Ok(())
}

/// The number after "worst" in a published text ("mean 10.5, worst 12").
fn worst_in(text: &str) -> Option<f64> {
    let rest = text.split("worst").nth(1)?.trim_start();
    let end = rest
        .find(|ch: char| !(ch.is_ascii_digit() || ch == '.'))
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

/// A3.0: every atomic strategy admits exactly the limit.
fn a3_0(ctx: &AnalysisCtx, rows: &[Row], md: &mut String, out: &mut Vec<Measured>) -> Result<()> {
    let per = per_strategy(rows);
    let names: Vec<&String> = per.keys().collect();
    let mut panel = Panel::new(
        "",
        Axis::new("strategy"),
        Axis::new("trials not admitting exactly L"),
    )
    .categories(names.iter().map(|s| s.to_string()).collect());
    // A series per strategy, named by it, so each is drawn in its own
    // colour as in every other figure; the kind is in the name.
    for (i, (name, t)) in per.iter().enumerate() {
        let kind = if t.atomic {
            "atomic design (A3.0 counts it)"
        } else {
            "not atomic (for contrast)"
        };
        panel = panel.series(Series::points(
            format!("{name}, {kind}"),
            vec![Pt::new(i as f64, t.not_exact as f64)],
        ));
    }
    // A3.0's judged value pools every atomic design's trials: a category
    // of its own, ringed.
    let (pooled, atomic) = atomic_not_exact(rows);
    let mut anchors = Vec::new();
    if atomic > 0 {
        let x = panel.categories.len() as f64;
        let name = "atomic designs pooled (A3.0 judged)";
        panel
            .categories
            .push("atomic designs pooled (judged)".into());
        panel = panel.series(Series::points(name, vec![Pt::new(x, pooled as f64)]));
        anchors.push(Anchor::new("A3.0", 0, x).on(name));
    }
    if let Some(c) = ctx.claim("A3.0") {
        panel = panel.reference(Reference::published(c, 0));
    }
    let n = per.values().map(|t| t.trials).min().unwrap_or(0);
    *md += &Figure::new(
        "a3_0-atomic-exactness",
        &["A3.0"],
        "trials per strategy that did not admit exactly the limit (all worker counts and round trips)",
        format!("Count of trials (at least {n} per strategy; {} trials of the atomic designs in all) whose admitted count differs from L or that had errors; one count per strategy, so no whiskers; each strategy in its own colour, its kind (atomic or not) in the legend; the last category pools the atomic designs (A3.0's judged count, ringed).", atomic_not_exact(rows).1),
    )
    .panel(panel)
    .write_anchored(ctx, anchors)?;
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
        out.push(
            Measured::new(
                "A3.0",
                vec![not_exact as f64],
                format!("{not_exact} of {atomic} trials not exact"),
                "concurrency.csv atomic_design=true kind!=external: admitted != limit or errors > 0",
            )
            .intervals(
                vec![(not_exact as f64, not_exact as f64)],
                "none: a count over every trial (the claim is about every trial)",
            )
            .rests_on(
                rows.iter()
                    .filter(|r| r.atomic_design && !is_external(r))
                    .map(|r| r.cell.as_str()),
            ),
        );
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
    a1_1_history(ctx, &rows, limit, &mut md)?;
    a1_2::a1_2(ctx, &rows, limit, &mut md, &mut appendix, &mut out)?;
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

/// A1.1 as it happened: one trial of check-then-act at 64 workers without
/// added delay, every request at its reply time on its worker's lane
/// (admitted within L, admitted beyond L, refused) and the admissions so far
/// against the limit. From `concurrency-history.csv`, which the run writes
/// for the first trial of each cell; a run from before it has none, and the
/// section says so instead of drawing.
fn a1_1_history(ctx: &AnalysisCtx, rows: &[Row], limit: u64, md: &mut String) -> Result<()> {
    let Some(row) = rows.iter().find(|r| {
        r.strategy == "check-then-act"
            && r.workers == 64
            && r.target_rtt_ms == 0.0
            && r.rtt_jitter_ms == 0.0
            && r.trial == 0
    }) else {
        return Ok(());
    };
    let Some(history) = ctx.read_csv::<HistoryRow>("concurrency-history.csv")? else {
        *md += "No per-request history in this run (`concurrency-history.csv` is absent: runs before the history was kept store none), so A1.1's race is not drawn as a timeline; a new run draws it.\n\n";
        return Ok(());
    };
    let mut h: Vec<&HistoryRow> = history
        .iter()
        .filter(|x| x.cell == row.cell && x.trial == row.trial)
        .collect();
    if h.is_empty() {
        *md += &format!(
            "`concurrency-history.csv` has no rows for `{}` trial {}: A1.1's timeline is not drawn.\n\n",
            row.cell, row.trial
        );
        return Ok(());
    }
    h.sort_by_key(|x| (x.replied_us, x.worker));
    let ms = |us: i64| us as f64 / 1000.0;
    let (mut within, mut beyond, mut refused, mut so_far) = (vec![], vec![], vec![], vec![]);
    let mut admitted = 0u64;
    for x in &h {
        let pt = Pt::new(ms(x.replied_us), x.worker as f64);
        if x.admitted {
            admitted += 1;
            so_far.push(Pt::new(ms(x.replied_us), admitted as f64));
            if admitted > limit {
                beyond.push(pt)
            } else {
                within.push(pt)
            }
        } else {
            refused.push(pt);
        }
    }
    let lanes = Panel::new(
        "every request at its reply, on its worker's lane",
        Axis::new("time since the trial started (ms)"),
        Axis::new("worker"),
    )
    .series(Series::points(
        format!("admitted, among the first L={limit}"),
        within,
    ))
    .series(Series::points("admitted beyond L (over the limit)", beyond))
    .series(Series::points("refused", refused));
    let mut count = Panel::new(
        "admitted so far",
        Axis::new("time since the trial started (ms)"),
        Axis::new("admitted so far (requests)"),
    )
    .series(Series::plain("check-then-act, admitted so far", so_far))
    .reference(Reference::limit(format!("limit L = {limit}"), limit as f64));
    if let Some(c) = ctx.claim("A1.1") {
        count = count.reference(Reference::published(c, 0));
    }
    let fig = Figure::new(
        "a1_1-race-history",
        &["A1.1"],
        format!("check-then-act at 64 workers, one trial as it happened ({} admitted of L={limit})", admitted),
        format!(
            "Cell `{}`, trial {}: each of the {} requests at the time its reply arrived (trial clock), on the lane of the worker that sent it; admissions are ranked by reply time, so \"beyond L\" marks the replies after the L-th admission (which requests were the extra ones is not observable: the race is between the workers' reads and writes). Right: admissions so far.",
            row.cell, row.trial, h.len()
        ),
    )
    .columns(2)
    .panel(lanes)
    .panel(count);
    *md += &fig.write(ctx)?;
    Ok(())
}
