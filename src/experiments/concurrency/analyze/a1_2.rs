//! A1.2: check-then-act's overshoot against the lockstep formula
//! c*ceil(L/c) - L per worker count and round trip, and (the sweep) per
//! width of the proxy's per-packet jitter at the longest round trip: where
//! the formula stops holding. Metrics first (unit-tested in `tests.rs`),
//! then the figures, table and `Measured`.

use std::collections::{BTreeMap, BTreeSet};

use super::super::rows::Row;
use super::CTA;
use limitbench_analysis::claims::Alternative;
use limitbench_analysis::figure::{
    Anchor, Axis, Figure, Panel, Pt, Reference, Series, num, pass_region,
};
use limitbench_analysis::figure::{ClaimReference, SummaryPoint, WriteFigure};
use limitbench_analysis::sessions::{BySession, checked, disagreements, session_of};
use limitbench_analysis::stats::{Summary, mean_cs, mean_cs_method};
use limitbench_analysis::table::{f, md_table};
use limitbench_analysis::{AnalysisCtx, Measured};
use limitbench_base::error::Result;

/// The worker counts A1.2 compares with the formula at the longest round trip.
const A1_2_WORKERS: [u64; 4] = [8, 16, 32, 64];

/// c*ceil(L/c) - L: what lockstep waves of c workers over-admit.
pub fn lockstep_overshoot(workers: u64, limit: u64) -> u64 {
    workers * limit.div_ceil(workers) - limit
}

/// A1.2's groups of check-then-act trials, keyed by target round trip in us.
#[derive(Debug, Default, PartialEq)]
pub struct Overshoot {
    /// Over-admission per (round trip, workers), one value per trial.
    pub by: BTreeMap<(i64, u64), Vec<f64>>,
    /// The measured median round trip (us) of every trial, per round trip.
    pub rtt_measured: BTreeMap<i64, Vec<f64>>,
}

/// Check-then-act without round-trip jitter (the formula's setting).
pub fn cta_overshoot(rows: &[Row]) -> Overshoot {
    cta_overshoot_at(rows, 0.0)
}

/// Check-then-act at one width of the proxy's per-packet jitter.
pub fn cta_overshoot_at(rows: &[Row], jitter_ms: f64) -> Overshoot {
    let mut o = Overshoot::default();
    for r in rows
        .iter()
        .filter(|r| r.strategy == CTA && r.rtt_jitter_ms == jitter_ms)
    {
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

/// A1.2's figure (a panel per round trip, the formula marked at each worker
/// count) and its compact table (workers x round trip).
// Longer than 120 lines: the A1.2 figure's panels and the table under it share the per-cell summaries; each panel is one marked block.
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
        format!("Admitted - L per trial, mean with min-max whiskers over n = {n} trials per point; grey dashes mark the formula at each worker count; the claim is judged in the longest-round-trip panel, on the distance from the formula (its judged value is ringed in {JITTER_FIGURE}, which draws that distance; here it is the gap between a mean and its grey dash, so no ring)."),
    )
    .columns(3);
    // One y scale for every panel, so the round trips compare at a glance.
    let ys: Vec<f64> = panels
        .iter()
        .flat_map(|p| {
            p.series
                .iter()
                .flat_map(|s| s.points.iter().flat_map(|q| [Some(q.y), q.lo, q.hi]))
                .chain(
                    p.refs
                        .iter()
                        .flat_map(|r| [r.value, r.band.map(|b| b.0), r.band.map(|b| b.1)]),
                )
                .flatten()
        })
        .filter(|v| v.is_finite())
        .collect();
    if let (Some(lo), Some(hi)) = (
        ys.iter().copied().reduce(f64::min),
        ys.iter().copied().reduce(f64::max),
    ) {
        let (lo, hi) = (lo.min(0.0), hi + 0.05 * (hi - lo.min(0.0)).max(1.0));
        for p in &mut panels {
            p.y = p.y.clone().range(lo, hi);
        }
    }
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

/// |mean - formula| for one worker count, with the 95% confidence-sequence interval
/// of the mean mapped through |x - formula| (0 when the interval holds it).
pub fn deviation_ci(v: &[f64], formula: f64) -> (f64, f64, f64) {
    let (lo, hi) = mean_cs(v);
    let dev = (Summary::of(v).mean - formula).abs();
    let far = (lo - formula).abs().max((hi - formula).abs());
    let near = if lo <= formula && formula <= hi {
        0.0
    } else {
        (lo - formula).abs().min((hi - formula).abs())
    };
    (dev, near, far)
}

/// The largest deviation, its interval, the deviation per worker count and
/// the fewest trials of a count.
pub type Worst = (f64, (f64, f64), Vec<(u64, f64)>, usize);

/// A1.2's quantity at round trip `rtt` (us): the largest deviation over the
/// worker counts that ran, with its interval (the largest of each end), the
/// per-count deviations and the fewest trials of a count.
pub fn worst_deviation(o: &Overshoot, rtt: i64, limit: u64) -> Option<Worst> {
    let per: Vec<(u64, (f64, f64, f64), usize)> = A1_2_WORKERS
        .iter()
        .filter_map(|c| {
            o.by.get(&(rtt, *c)).map(|v| {
                (
                    *c,
                    deviation_ci(v, lockstep_overshoot(*c, limit) as f64),
                    v.len(),
                )
            })
        })
        .collect();
    if per.is_empty() {
        return None;
    }
    let worst = per.iter().map(|p| p.1.0).fold(0.0, f64::max);
    let lo = per.iter().map(|p| p.1.1).fold(0.0, f64::max);
    let hi = per.iter().map(|p| p.1.2).fold(0.0, f64::max);
    let n = per.iter().map(|p| p.2).min().unwrap_or(0);
    Some((
        worst,
        (lo, hi),
        per.iter().map(|p| (p.0, p.1.0)).collect(),
        n,
    ))
}

/// The jitter widths check-then-act ran with at round trip `rtt` (us), 0 first.
pub fn jitters_at(rows: &[Row], rtt: i64) -> Vec<f64> {
    let mut j: Vec<f64> = rows
        .iter()
        .filter(|r| r.strategy == CTA && (r.target_rtt_ms * 1000.0).round() as i64 == rtt)
        .map(|r| r.rtt_jitter_ms)
        .collect();
    j.sort_by(|a, b| a.partial_cmp(b).unwrap());
    j.dedup();
    j
}

/// Where the formula holds per jitter at round trip `rtt` (us): per jitter,
/// the worker counts whose whole 95% interval of |mean - formula| lies at
/// or below `hi`, and those whose interval reaches across it or lies wholly
/// above it, with the value and interval, in words.
pub fn jitter_holds(rows: &[Row], rtt: i64, limit: u64, hi: f64) -> String {
    const EPS: f64 = 1e-9;
    jitters_at(rows, rtt)
        .into_iter()
        .map(|j| {
            let o = cta_overshoot_at(rows, j);
            let (mut held, mut across, mut above) = (vec![], vec![], vec![]);
            for c in A1_2_WORKERS {
                let Some(v) = o.by.get(&(rtt, c)) else {
                    continue;
                };
                let (d, near, far) = deviation_ci(v, lockstep_overshoot(c, limit) as f64);
                let shown = format!("c={c} {d:.2} (95% {near:.2}..{far:.2})");
                if far <= hi + EPS {
                    held.push(format!("{c}"));
                } else if near > hi + EPS {
                    above.push(shown);
                } else {
                    across.push(shown);
                }
            }
            let mut parts = vec![];
            if across.is_empty() && above.is_empty() {
                parts.push("holds at every worker count".to_string());
            } else {
                if !held.is_empty() {
                    parts.push(format!("holds at c={}", held.join(", ")));
                }
                if !across.is_empty() {
                    parts.push(format!("reaches across the line at {}", across.join(", ")));
                }
                if !above.is_empty() {
                    parts.push(format!("wholly above at {}", above.join(", ")));
                }
            }
            let default = if j == 0.0 { " (default)" } else { "" };
            format!(
                "jitter {} ms{default}: {}",
                jitter_text(j),
                parts.join("; ")
            )
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

/// The jitter spelling shared with `retries` (A2.1 sweeps the same detail).
pub fn jitter_text(ms: f64) -> String {
    format!("{}", (ms * 1000.0).round() / 1000.0)
}

pub const JITTER_FIGURE: &str = "a1_2-deviation-vs-rtt-jitter";

/// A1.2 vs jitter: |mean overshoot - formula| per worker count against the
/// proxy's jitter at the longest round trip, the pass region shaded.
fn jitter_figure(
    ctx: &AnalysisCtx,
    rows: &[Row],
    rtt: i64,
    limit: u64,
    md: &mut String,
) -> Result<bool> {
    let js = jitters_at(rows, rtt);
    if js.len() < 2 {
        return Ok(false);
    }
    let mut series: BTreeMap<u64, Vec<Pt>> = BTreeMap::new();
    let mut sd: Vec<String> = Vec::new();
    // A1.2's value at a jitter is the largest distance over the worker
    // counts: the ring goes on that count's point, at the judged jitter.
    let mut anchors = Vec::new();
    for j in &js {
        let o = cta_overshoot_at(rows, *j);
        let mut worst: Option<(u64, f64)> = None;
        for c in A1_2_WORKERS {
            if let Some(v) = o.by.get(&(rtt, c)) {
                let (d, lo, hi) = deviation_ci(v, lockstep_overshoot(c, limit) as f64);
                if worst.is_none_or(|w| d > w.1) {
                    worst = Some((c, d));
                }
                series
                    .entry(c)
                    .or_default()
                    .push(Pt::spread(*j, d, lo, hi, v.len()));
            }
        }
        if let Some((c, _)) = worst {
            anchors.push(
                Anchor::new("A1.2", 0, *j)
                    .at("rtt_jitter_ms", &jitter_text(*j))
                    .on(format!("c = {c}")),
            );
        }
        let s: Vec<f64> = rows
            .iter()
            .filter(|r| {
                r.strategy == CTA
                    && r.rtt_jitter_ms == *j
                    && (r.target_rtt_ms * 1000.0).round() as i64 == rtt
            })
            .map(|r| r.rtt_sd_us / 1000.0)
            .collect();
        sd.push(format!(
            "{} ms: {:.2} ms",
            jitter_text(*j),
            Summary::of(&s).mean
        ));
    }
    let mut p = Panel::new(
        format!("{} ms added round trip", num(rtt as f64 / 1000.0)),
        Axis::new("per-packet jitter per direction (ms, uniform extra delay)").ticks(js.clone()),
        Axis::new("|mean overshoot - (c*ceil(L/c) - L)| (requests)"),
    )
    .dodge();
    // Worker counts are ordered: one hue, light to dark.
    let cs = series.len();
    for (i, (c, pts)) in series.into_iter().enumerate() {
        p = p.series(Series::line(format!("c = {c}"), pts).ramp(i, cs));
    }
    if let Some(spec) = ctx.claim("A1.2") {
        p = p.reference(Reference::published(spec, 0));
    }
    *md += &Figure::new(
        JITTER_FIGURE,
        &["A1.2"],
        "check-then-act: distance from the lockstep formula vs round-trip jitter",
        format!("|mean overshoot - (c*ceil(L/c) - L)| per worker count c, whiskers: the 95% confidence sequence of the mean mapped through the distance, {{n}} per point; series set slightly apart in x so equal values stay visible; the proxy adds a uniform extra delay in [0, jitter] per packet and direction, recalibrated to the same median; achieved PING sd: {}; A1.2's judged value, the largest distance over the worker counts, is ringed at the jitter it is judged at.", sd.join(", ")),
    )
    .panel(p)
    .write_anchored(ctx, anchors)?;
    Ok(true)
}

/// A1.2: overshoot against the formula per workers and round trip; the
/// jitter sweep as alternatives.
pub fn a1_2(
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
    let Some((worst, ci, _, n)) = worst_deviation(&o, longest, limit) else {
        return Ok(());
    };
    let swept = jitter_figure(ctx, rows, longest, limit, md)?;
    // A worker count whose trials all read one count gets the one-value
    // rule (its count +-1%); mapped through |mean - formula| at 0 the judge
    // cannot see it, so it is named here.
    let one: Vec<String> = A1_2_WORKERS
        .iter()
        .filter(|c| {
            o.by.get(&(longest, **c))
                .is_some_and(|v| limitbench_analysis::confseq::one_value(v))
        })
        .map(|c| format!("c={c}"))
        .collect();
    let assumption = (!one.is_empty()).then(|| {
        format!(
            "every trial read one count at {} (each taken as known to +-1% of itself: no sequence has a spread to use)",
            one.join(", ")
        )
    });
    let mut m = Measured::new(
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
            "concurrency.csv strategy=check-then-act target_rtt_ms={} workers in 8,16,32,64, per rtt_jitter_ms",
            longest as f64 / 1000.0
        ),
    )
    .intervals(
        vec![ci],
        format!("{} per worker count, mapped through |mean - formula|, largest of each end over the worker counts", mean_cs_method(n)),
    )
    .interval_assumption(assumption)
    .setting(&[("rtt_jitter_ms", "0")])
    .rests_on(a1_2_cells(rows, longest, 0.0))
    .condition(
        "all four worker counts ran at the longest round trip",
        devs.len() == A1_2_WORKERS.len(),
    );
    if swept {
        m = m.sweep_figure(JITTER_FIGURE);
    }
    let band = ctx.claim("A1.2").and_then(|s| pass_region(s, 0).1);
    let mut breaks: Option<f64> = None;
    for j in jitters_at(rows, longest).into_iter().filter(|j| *j > 0.0) {
        let oj = cta_overshoot_at(rows, j);
        let Some((w, ci, per, _)) = worst_deviation(&oj, longest, limit) else {
            continue;
        };
        if breaks.is_none() && band.is_some_and(|b| ci.0 > b.1) {
            breaks = Some(j);
        }
        m = m.alternative(
            Alternative::new(
                &[("rtt_jitter_ms", jitter_text(j).as_str())],
                vec![w],
                format!(
                    "max {w:.2} ({})",
                    per.iter()
                        .map(|d| format!("c={}: {:.2}", d.0, d.1))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
            .intervals(vec![ci])
            .rests_on(a1_2_cells(rows, longest, j))
            .condition(
                "all four worker counts ran",
                per.len() == A1_2_WORKERS.len(),
            ),
        );
    }
    if swept && let Some((_, hi)) = band {
        let stops = match breaks {
            Some(j) => format!(
                "; the formula stops holding (the whole interval above the line) from a per-packet jitter of {} ms per direction",
                jitter_text(j)
            ),
            None => "; at no swept jitter is the whole interval above the line".into(),
        };
        m = m.note(format!(
            "per jitter against the pass line (|mean - formula| at most {}, the whole 95% interval below it) at {} ms: {}{stops}",
            num(hi),
            longest as f64 / 1000.0,
            jitter_holds(rows, longest, limit, hi)
        ));
    }
    out.push(sessions_checked(ctx, m, rows, longest, limit));
    Ok(())
}

/// The cells A1.2's value rests on at one jitter: check-then-act at the
/// longest round trip, 8 to 64 workers.
fn a1_2_cells(rows: &[Row], longest: i64, jitter_ms: f64) -> Vec<String> {
    rows.iter()
        .filter(|r| {
            r.strategy == CTA
                && r.rtt_jitter_ms == jitter_ms
                && A1_2_WORKERS.contains(&r.workers)
                && (r.target_rtt_ms * 1000.0).round() as i64 == longest
        })
        .map(|r| r.cell.clone())
        .collect()
}

/// A1.2 is no finding when the measuring sessions of a judged worker count
/// disagree on its overshoot (a run resumed later, `sessions.rs`).
fn sessions_checked(
    ctx: &AnalysisCtx,
    m: Measured,
    rows: &[Row],
    longest: i64,
    limit: u64,
) -> Measured {
    let groups: Vec<(String, BySession)> = A1_2_WORKERS
        .iter()
        .map(|&c| {
            let mut g = BySession::new();
            for r in rows.iter().filter(|r| {
                r.strategy == CTA
                    && r.rtt_jitter_ms == 0.0
                    && r.workers == c
                    && (r.target_rtt_ms * 1000.0).round() as i64 == longest
            }) {
                g.entry(session_of(&ctx.manifest, "concurrency", r.trial))
                    .or_default()
                    .push(r.over_admitted as f64 - lockstep_overshoot(c, limit) as f64);
            }
            (format!("c={c}, overshoot minus the formula"), g)
        })
        .collect();
    checked(
        m,
        disagreements(groups.iter().map(|(w, g)| (w.clone(), g)), 2),
    )
}
