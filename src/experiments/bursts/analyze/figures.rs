//! The figures of `bursts` other than A3.3's sweep: A3.1 (straddle, with
//! cumulative admissions around the boundary), A3.2/A3.3 per phase, A3.4
//! (every strategy per pattern).

use std::collections::{BTreeMap, BTreeSet};

use super::super::rows::Row;
use super::{Hist, Trial};
use limitbench_analysis::AnalysisCtx;
use limitbench_analysis::figure::{
    Anchor, Axis, Draw, Figure, Panel, Pt, Reference, Series, Shade, num, pass_region,
};
use limitbench_analysis::figure::{ClaimReference, SummaryPoint, WriteFigure};
use limitbench_analysis::stats::Summary;
use limitbench_analysis::table::distinct;
use limitbench_analysis::window::{admission_times, min_span};
use limitbench_base::error::Result;

/// A3.1: the ratio per lead (left) and, per lead, one trial's cumulative
/// admissions of the Lua fixed window around the window boundary.
pub fn figure_a3_1(
    ctx: &AnalysisCtx,
    rows: &[Row],
    trials: &[Trial],
    hist: &Hist,
    md: &mut String,
) -> Result<()> {
    let st: Vec<&Trial> = trials
        .iter()
        .filter(|t| t.row.pattern == "straddle" && t.ratio.is_finite())
        .collect();
    if st.is_empty() {
        return Ok(());
    }
    let leads: Vec<f64> = st.iter().filter_map(|t| t.row.phase_ms).collect::<Vec<_>>();
    let mut leads_sorted = leads.clone();
    leads_sorted.sort_by(f64::total_cmp);
    leads_sorted.dedup();
    // Leads as categories: the strategies stand side by side at each lead
    // (equal ratios do not hide one another, none is clipped at the edge)
    // and the published line shows between them.
    let mut left = Panel::new(
        "max in any window / L, per lead",
        Axis::new("lead of the first burst before the boundary (ms)"),
        Axis::new("max admitted in any 1 window / L"),
    )
    .categories(leads_sorted.iter().map(|l| num(*l)).collect());
    for s in distinct(st.iter().map(|t| t.row.strategy.clone())) {
        let pts = leads_sorted
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let v: Vec<f64> = st
                    .iter()
                    .filter(|t| t.row.strategy == s && t.row.phase_ms == Some(*l))
                    .map(|t| t.ratio)
                    .collect();
                Pt::summary(i as f64, &Summary::of(&v))
            })
            .filter(|p| p.y.is_finite())
            .collect();
        left = left.series(Series::points(s, pts));
    }
    // A3.1's judged value pools every lead and both fixed windows (the
    // trials that straddled the edge): a category of its own, ringed.
    let (judged, _) = super::a3_1_split(trials);
    let pooled = Summary::of(&judged.iter().map(|t| t.ratio).collect::<Vec<_>>());
    let mut anchors = Vec::new();
    if pooled.n > 0 {
        let x = leads_sorted.len() as f64;
        left.categories.push("pooled (judged)".into());
        left = left.series(Series::points(
            "fixed windows, straddled trials pooled (A3.1 judged)",
            vec![Pt::summary(x, &pooled)],
        ));
        anchors.push(
            Anchor::new("A3.1", 0, x).on("fixed windows, straddled trials pooled (A3.1 judged)"),
        );
    }
    if let Some(c) = ctx.claim("A3.1") {
        left = left.reference(Reference::published(c, 0));
    }
    let mut fig = Figure::new(
        "a3_1-straddle-boundary",
        &["A3.1"],
        "two bursts straddling a fixed window's boundary: 2L admitted within a few ms",
        "Left: max admitted in any window / L per trial, mean with min-max whiskers over the trials of each strategy and lead ({n} per point), the strategies side by side at each lead; A3.1 judges the mean over every lead and trial of both fixed windows whose two bursts fell on the two sides of the window's edge (from the bursts' times; the others are drawn here but not judged), drawn as its own category (pooled, judged) and ringed with its 95% confidence sequence, not the largest. Other panels: cumulative admissions of the first trial of the Lua fixed window, against time from the window boundary (reply clock); shaded: the shortest span holding 2L admissions.",
    )
    .columns(2)
    .panel(left);
    let limit = rows.first().map(|r| r.limit).unwrap_or(100);
    for l in &leads_sorted {
        let Some(t) = st
            .iter()
            .find(|t| t.row.strategy == "fixed-window-lua" && t.row.phase_ms == Some(*l))
        else {
            continue;
        };
        let (Some(h), Some(b)) = (
            hist.get(&(t.row.cell.clone(), t.row.trial)),
            t.row.boundary_us,
        ) else {
            continue;
        };
        let (mut times, _) = admission_times(h, true);
        times.sort();
        let pts: Vec<Pt> = times
            .iter()
            .enumerate()
            .map(|(i, t)| Pt::new((*t - b) as f64 / 1000.0, (i + 1) as f64))
            .collect();
        let mut p = Panel::new(
            format!("lead {} ms, trial {}", num(*l), t.row.trial),
            Axis::new("time from the window boundary (ms)"),
            Axis::new("admitted so far (requests)"),
        )
        .series(Series::plain(
            "fixed-window-lua, cumulative admissions",
            pts,
        ))
        .reference(Reference::limit(format!("limit L = {limit}"), limit as f64))
        .reference(Reference::expected("2L", 2.0 * limit as f64));
        if let Some(span) = min_span(&times, 2 * limit as usize) {
            // The span: the first window of 2L consecutive admissions that short.
            let k = 2 * limit as usize;
            if let Some(i) =
                (0..=times.len().saturating_sub(k)).find(|i| times[i + k - 1] - times[*i] == span)
            {
                p.shades.push(Shade {
                    x0: (times[i] - b) as f64 / 1000.0,
                    x1: (times[i + k - 1] - b) as f64 / 1000.0,
                    label: format!("2L in {} ms", num(span as f64 / 1000.0)),
                });
            }
        }
        fig = fig.panel(p);
    }
    *md += &fig.write_anchored(ctx, anchors)?;
    Ok(())
}

/// A3.2 and A3.3: the ratio against the burst's phase in the window; A3.3's
/// mean and worst trial on panels of their own, each with its published line.
pub fn figure_a3_2_a3_3(ctx: &AnalysisCtx, trials: &[Trial], md: &mut String) -> Result<()> {
    let panel = |title: &str, y: &str, pattern: &str, s: &str, worst: bool| {
        let mut p = Panel::new(
            title,
            Axis::new("phase of the burst in the window (ms)"),
            Axis::new(y),
        );
        let mut by: BTreeMap<(i64, i64), Vec<f64>> = BTreeMap::new();
        for t in trials.iter().filter(|t| {
            t.row.pattern == pattern
                && t.row.strategy == s
                && t.ratio.is_finite()
                && t.row.phase_draw != "uniform"
        }) {
            let key = (
                (t.row.rate_x.unwrap_or(0.0) * 100.0) as i64,
                t.row.phase_ms.unwrap_or(0.0) as i64,
            );
            by.entry(key).or_default().push(t.ratio);
        }
        // The phases drawn here (not those drawn uniformly per trial) as
        // categories, so the series at one phase stand side by side.
        let phases: Vec<i64> = by
            .keys()
            .map(|k| k.1)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let at = |ph: i64| phases.iter().position(|x| *x == ph).unwrap_or(0) as f64;
        let rates: BTreeSet<i64> = by.keys().map(|k| k.0).collect();
        for r in rates {
            let pts = by
                .iter()
                .filter(|(k, _)| k.0 == r)
                .map(|(k, v)| {
                    let sm = Summary::of(v);
                    if worst {
                        Pt::new(at(k.1), sm.max)
                    } else {
                        Pt::summary(at(k.1), &sm)
                    }
                })
                .collect();
            p = p.series(Series::line(
                format!("{s}, then {}x L per window", num(r as f64 / 100.0)),
                pts,
            ));
        }
        p.categories(phases.iter().map(|x| x.to_string()).collect())
    };
    let y = "max admitted in any 1 window / L";
    let mut a = panel(
        "quiet, then a burst: token bucket (A3.2)",
        y,
        "quiet-then-burst",
        "token-bucket",
        false,
    );
    let mut b = panel(
        "burst, then sustained: mean over trials (A3.3)",
        y,
        "burst-then-sustained",
        "sliding-window-counter",
        false,
    );
    let mut w = panel(
        "burst, then sustained: worst trial (A3.3)",
        "largest max in any 1 window / L over the trials",
        "burst-then-sustained",
        "sliding-window-counter",
        true,
    );
    // Markers only: the published line shows between them.
    for s in a.series.iter_mut() {
        s.draw = Draw::Points;
    }
    // A3.2's judged value pools every phase: a category of its own, ringed.
    let tb = super::a3_2_trials(trials);
    let mut anchors = Vec::new();
    if !tb.is_empty() && !a.categories.is_empty() {
        let x = a.categories.len() as f64;
        let name = "token-bucket, every phase pooled (A3.2 judged)";
        a.categories.push("pooled (judged)".into());
        a = a.series(Series::points(
            name,
            vec![Pt::summary(x, &super::ratios(&tb))],
        ));
        anchors.push(Anchor::new("A3.2", 0, x).on(name));
    }
    if let Some(c) = ctx.claim("A3.2") {
        a = a.reference(Reference::published(c, 0));
    }
    if let Some(c) = ctx.claim("A3.3") {
        let (_, _, rule) = pass_region(c, 0);
        b = b.reference(Reference::published(c, 0).labelled(format!(
            "A3.3 published mean {}x; shaded: passes ({rule})",
            num(c.published.at(0))
        )));
        // The published worst trial: a line without a band (not judged).
        if let Some(v) = super::a3_3::published_worst(&c.published_text) {
            let mut r = Reference::published(c, 0);
            r.value = Some(v);
            r.band = None;
            r.lines = vec![];
            w = w.reference(r.labelled(format!(
                "A3.3 published worst trial {}x (not judged)",
                num(v)
            )));
        }
    }
    let fig = Figure::new(
        "a3_2-a3_3-burst-phase",
        &["A3.2", "A3.3"],
        "max admitted in any window / L against where the burst falls in the window",
        "Max admitted in any window / L per trial: mean with min-max whiskers over {n} trials per point (A3.2 panel and A3.3 mean), and the largest over the trials (A3.3 worst trial, no whiskers); series at one phase side by side. A3.2 judges the token bucket's mean over all its trials, every phase pooled: drawn as its own category and ringed with its 95% confidence sequence. A3.3 judges the sliding-window counter's mean and shows its worst trial beside; it is judged on phases drawn uniformly per trial, which this figure does not draw, so it is ringed in its sweep figure (a3_3-sweep-phase-rate), not here.",
    )
    .columns(3)
    .panel(a)
    .panel(b)
    .panel(w);
    *md += &fig.write_anchored_if_any(ctx, anchors)?;
    Ok(())
}

/// A3.4 and the overview: every strategy per pattern (phases and rates pooled).
pub fn figure_a3_4(
    ctx: &AnalysisCtx,
    rows: &[Row],
    trials: &[Trial],
    strategies: &[String],
    md: &mut String,
) -> Result<()> {
    let patterns = distinct(rows.iter().map(|r| r.pattern.clone()));
    let mut p = Panel::new(
        "",
        Axis::new("traffic pattern"),
        Axis::new("max admitted in any 1 window / L"),
    )
    .categories(patterns.clone());
    for s in strategies {
        let pts = patterns
            .iter()
            .enumerate()
            .map(|(i, pat)| {
                let v: Vec<f64> = trials
                    .iter()
                    .filter(|t| &t.row.pattern == pat && &t.row.strategy == s)
                    .map(|t| t.ratio)
                    .collect();
                Pt::summary(i as f64, &Summary::of(&v))
            })
            .filter(|p| p.y.is_finite())
            .collect();
        p = p.series(Series::points(s.clone(), pts));
    }
    // A3.4's judged value is the sliding-window log's largest over every
    // trial of the study's patterns: a category of its own, ringed.
    let swl = super::a3_4_trials(trials);
    let mut anchors = Vec::new();
    if !swl.is_empty() {
        let x = p.categories.len() as f64;
        let name = "sliding-window-log, largest over every pattern (A3.4 judged)";
        p.categories.push("every pattern (judged)".into());
        p = p.series(Series::points(
            name,
            vec![Pt::new(x, super::ratios(&swl).max)],
        ));
        anchors.push(Anchor::new("A3.4", 0, x).on(name));
    }
    if let Some(c) = ctx.claim("A3.4") {
        p = p.reference(Reference::published(c, 0));
    }
    *md += &Figure::new(
        "a3_4-every-pattern",
        &["A3.4"],
        "the sliding-window log never exceeds the limit in any window; the others per pattern",
        "Max admitted in any window / L per trial, mean with min-max whiskers over every trial of the pattern (its phases, leads and rates pooled; {n} per point); A3.4 takes the sliding-window log's largest value over every trial of the study's patterns, drawn as its own category (every pattern, judged) and ringed.",
    )
    .panel(p)
    .write_anchored(ctx, anchors)?;
    Ok(())
}
