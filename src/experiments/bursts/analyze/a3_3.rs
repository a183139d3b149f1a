//! A3.3 as a sensitivity sweep: the sliding-window counter's mean and worst
//! trial under a burst then sustained traffic depend on where in the window
//! the burst lands (`burst_phase`: one fixed phase, the fixed phases pooled,
//! or a phase drawn uniformly per trial) and on the rate after the burst
//! (`sustained_x`, x the limit per window), neither stated by the study.
//! Per setting: the mean over trials with its 95% interval (judged) and the
//! worst trial (shown, not judged: a max over trials grows with their
//! number, and its bootstrap interval always ends at the sample max, so no
//! trial count decides it; A1.1's worst is treated alike). The default is a
//! phase drawn uniformly per trial at 1x: "on average" over bursts that land
//! anywhere in the window, the natural reading of the sentence, which states
//! neither phase nor rate. Each fixed phase and the pooled quarters (a grid
//! that fixes the mean at 1.375 by construction) are alternatives.

use super::{Trial, a3_3_trials};
use limitbench_analysis::claims::Alternative;
use limitbench_analysis::figure::{
    Anchor, Axis, Figure, Panel, Pt, Reference, Series, num, pass_region,
};
use limitbench_analysis::figure::{ClaimReference, WriteFigure};
use limitbench_analysis::stats::{Summary, bootstrap_ci, mean_cs};
use limitbench_analysis::{AnalysisCtx, ClaimSpec, Measured};
use limitbench_base::error::Result;

/// The burst-phase value of the fixed phases pooled, e.g. `fixed:0+250+500+750`.
fn pooled_name(phases: &[i64]) -> String {
    format!(
        "fixed:{}",
        phases
            .iter()
            .map(|p| p.to_string())
            .collect::<Vec<_>>()
            .join("+")
    )
}

fn uniform(t: &Trial) -> bool {
    t.row.phase_draw == "uniform"
}

/// Ratios per (burst_phase, sustained_x): each fixed phase, the fixed phases
/// pooled, and the uniform draw; in the order to show them.
pub fn a3_3_sweep(trials: &[Trial]) -> Vec<((String, String), Vec<f64>)> {
    let swc = a3_3_trials(trials);
    let mut rates: Vec<f64> = swc.iter().filter_map(|t| t.row.rate_x).collect();
    rates.sort_by(f64::total_cmp);
    rates.dedup();
    let mut out = Vec::new();
    for r in rates {
        let at_rate: Vec<&&Trial> = swc.iter().filter(|t| t.row.rate_x == Some(r)).collect();
        // The fixed phases run at this rate (the same at every rate in a run).
        let mut phases: Vec<i64> = at_rate
            .iter()
            .filter(|t| !uniform(t))
            .filter_map(|t| t.row.phase_ms.map(|p| p.round() as i64))
            .collect();
        phases.sort();
        phases.dedup();
        let mut push = |phase: String, v: Vec<f64>| {
            if !v.is_empty() {
                out.push(((phase, num(r)), v));
            }
        };
        let fixed = |keep: &dyn Fn(i64) -> bool| -> Vec<f64> {
            at_rate
                .iter()
                .filter(|t| !uniform(t) && t.row.phase_ms.is_some_and(|p| keep(p.round() as i64)))
                .map(|t| t.ratio)
                .collect()
        };
        for p in &phases {
            push(p.to_string(), fixed(&|x| x == *p));
        }
        if phases.len() > 1 {
            push(pooled_name(&phases), fixed(&|_| true));
        }
        push(
            "uniform".into(),
            at_rate
                .iter()
                .filter(|t| uniform(t))
                .map(|t| t.ratio)
                .collect(),
        );
    }
    out
}

fn max_of(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::NAN, f64::max)
}

fn cis(v: &[f64]) -> Vec<(f64, f64)> {
    vec![mean_cs(v), bootstrap_ci(v, max_of)]
}

/// The published worst trial, read from the published text ("worst
/// 1.66x"): shown beside ours, not judged.
pub fn published_worst(text: &str) -> Option<f64> {
    let rest = text.split("worst").nth(1)?.trim_start();
    let end = rest
        .find(|ch: char| !(ch.is_ascii_digit() || ch == '.'))
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

/// The cells of a setting's trials (what its mean rests on).
fn cells_of(trials: &[Trial], setting: &(String, String)) -> Vec<String> {
    trials_at(trials, setting)
        .iter()
        .map(|t| t.row.cell.clone())
        .collect()
}

/// The interval A3.3's default (a uniform phase at rate `x`) is judged on:
/// pooled when its trials' measuring sessions agree, else the hull of the
/// sessions' intervals (`limitbench_analysis::sessions`), with the reason.
fn sessions_interval(
    trials: &[Trial],
    x: &str,
    manifest: &serde_json::Value,
    pooled: (f64, f64),
) -> ((f64, f64), Option<String>, bool) {
    use limitbench_analysis::sessions::{
        BySession, judged_mean_interval, means_disagree, session_of,
    };
    let mut by = BySession::new();
    for t in a3_3_trials(trials)
        .iter()
        .filter(|t| uniform(t) && t.row.rate_x.map(num).as_deref() == Some(x))
    {
        by.entry(session_of(manifest, "bursts", t.row.trial))
            .or_default()
            .push(t.ratio);
    }
    let (iv, why) = judged_mean_interval(
        &format!("uniform phase at {x}x, mean max-in-window / L"),
        &by,
        pooled,
        3,
    );
    (iv, why, means_disagree(&by))
}

/// Why A3.3's judged interval decides nothing, computed: the band's edge
/// it crosses, how far the mean lies from it, whether its measuring
/// sessions disagree or only were kept apart (then the interval is their
/// hull), and the interval pooled over every trial. `None` when the
/// interval crosses no edge of the claim's band.
fn explanation(
    claim: &ClaimSpec,
    mean: f64,
    iv: (f64, f64),
    pooled: (f64, f64),
    n: usize,
    apart: Option<&str>,
    disagree: bool,
) -> Option<(String, String)> {
    let (_, band, _) = pass_region(claim, 0);
    let (lo, hi) = band?;
    let crosses = |iv: (f64, f64), e: f64| iv.0 < e && e < iv.1;
    let edge = [lo, hi].into_iter().find(|e| crosses(iv, *e))?;
    let side = if mean > edge { "past" } else { "inside" };
    let cause = if disagree {
        "measuring sessions disagree".to_string()
    } else {
        format!(
            "mean {:.3} just {side} the band's edge {}{}",
            mean,
            num(edge),
            if crosses(pooled, edge) {
                format!(" (pooled over {n} trials too)")
            } else {
                String::new()
            }
        )
    };
    let sessions = match apart {
        Some(why) if disagree => {
            format!("; its measuring sessions disagree (disjoint 95% intervals: {why})")
        }
        Some(why) => format!(
            "; its measuring sessions agree (their 95% intervals overlap) and are kept apart, so it is their hull ({why})"
        ),
        None => String::new(),
    };
    let pooled_text = format!(
        "pooled over all {n} trials it would be {:.3}..{:.3}, which {} the edge",
        pooled.0,
        pooled.1,
        if crosses(pooled, edge) {
            "crosses"
        } else {
            "does not cross"
        }
    );
    let text = format!(
        "why inconclusive: the judged interval {:.3}..{:.3} crosses the band's edge {} (mean {:.3}, {:.3} {side} it){sessions}; {pooled_text}",
        iv.0,
        iv.1,
        num(edge),
        mean,
        (mean - edge).abs(),
    );
    Some((cause, text))
}

pub fn measured(
    trials: &[Trial],
    manifest: &serde_json::Value,
    claim: Option<&ClaimSpec>,
) -> Option<Measured> {
    let sweep = a3_3_sweep(trials);
    // Default: a phase drawn uniformly per trial at 1x; without it (runs
    // before the draw), the pooled fixed phases at 1x.
    let def = sweep
        .iter()
        .position(|((p, x), _)| p == "uniform" && x == "1")
        .or_else(|| {
            sweep
                .iter()
                .position(|((p, x), _)| p.starts_with("fixed:") && x == "1")
        })
        .or((!sweep.is_empty()).then_some(0))?;
    let ((phase, x), v) = &sweep[def];
    let s = Summary::of(v);
    let shown = |s: &Summary| {
        format!(
            "mean {:.2}x (worst trial {:.2}x, not judged, n={})",
            s.mean, s.max, s.n
        )
    };
    let (iv, apart, disagree) = if phase == "uniform" {
        sessions_interval(trials, x, manifest, mean_cs(v))
    } else {
        (mean_cs(v), None, false)
    };
    let mut m = Measured::new(
        "A3.3",
        vec![s.mean],
        format!("{} at burst phase {phase}, then {x}x the limit", shown(&s)),
        "bursts.csv+history pattern=burst-then-sustained strategy=sliding-window-counter, per (burst phase, sustained rate)",
    )
    .intervals(
        vec![iv],
        limitbench_analysis::stats::mean_cs_method(v.len()),
    )
    .sessions_apart(apart.is_some())
    .sessions_disagree(disagree)
    .setting(&[("burst_phase", phase.as_str()), ("sustained_x", x.as_str())])
    .sweep_figure("a3_3-sweep-phase-rate")
    .note(
        "a burst of L at phase p of a window fills it; in the next window the counter weighs the previous one by 1 - (time into the window), so it admits about L x (time into the window) more by the time the sliding window that starts at the burst ends: about 1 + p/window x L in that window when the traffic after the burst keeps up (>= 1x), less when it does not. So each fixed phase gives one value (mean = worst), a phase drawn uniformly per trial gives about 1.5x on average at >= 1x, and the worst over trials approaches 2x as trials are added (shown, not judged). Power: with a uniform phase the statistic's spread is set by the design (1 + U, U uniform on [0, 1): sd 0.289), wider than a handful of draws may show, so the planned trials come from that sd (experiments/bursts.toml, uniform_phase_reps: 200 at full), not from the power line above, which uses this run's own spread",
    );
    if let Some(spill) = spill_text(trials, &sweep[def].0) {
        m.note = format!("{spill}. {}", m.note);
    }
    if let Some((cause, text)) =
        claim.and_then(|c| explanation(c, s.mean, iv, mean_cs(v), s.n, apart.as_deref(), disagree))
    {
        m = m.explained(cause, text);
    } else if let Some(why) = &apart {
        m.note = format!(
            "{}{}",
            limitbench_analysis::sessions::kept_apart(std::slice::from_ref(why)),
            m.note
        );
    }
    m = m.rests_on(cells_of(trials, &sweep[def].0));
    for (i, (k, v)) in sweep.iter().enumerate() {
        if i == def {
            continue;
        }
        let s = Summary::of(v);
        let a = Alternative::new(
            &[("burst_phase", k.0.as_str()), ("sustained_x", k.1.as_str())],
            vec![s.mean],
            shown(&s),
        )
        .intervals(vec![mean_cs(v)])
        .trials(v.len())
        .rests_on(cells_of(trials, k));
        m = m.alternative(a);
    }
    Some(m)
}

/// The trials of one sweep setting (as [`cells_of`] picks them).
fn trials_at<'t, 'a>(trials: &'t [Trial<'a>], setting: &(String, String)) -> Vec<&'t Trial<'a>> {
    a3_3_trials(trials)
        .into_iter()
        .filter(|t| {
            let p = if uniform(t) {
                "uniform".to_string()
            } else {
                t.row
                    .phase_ms
                    .map(|p| (p.round() as i64).to_string())
                    .unwrap_or_default()
            };
            let rate = t.row.rate_x.map(num).unwrap_or_default();
            rate == setting.1
                && (p == setting.0 || (setting.0.starts_with("fixed:") && !uniform(t)))
        })
        .collect()
}

/// Whether a trial's burst, sent late, spilled past the end of the window
/// it was planned in: its phase plus the latest any of its sends left
/// (`lateness_max_us`) is past the window's length, so part of the burst
/// was admitted in the next window instead.
pub fn spilled(t: &Trial) -> bool {
    match t.row.phase_ms {
        Some(p) => p + t.row.lateness_max_us / 1000.0 > t.row.window_ms as f64,
        None => false,
    }
}

/// The judged setting's trials whose burst spilled into the next window
/// ([`spilled`]), with the mean with and without them: an explanation of
/// the mean, not a filter (the spilled trials stay in the judged value).
/// None when no trial spilled.
pub fn spill_text(trials: &[Trial], setting: &(String, String)) -> Option<String> {
    let at = trials_at(trials, setting);
    let (out, kept): (Vec<&&Trial>, Vec<&&Trial>) = at.iter().partition(|t| spilled(t));
    if out.is_empty() {
        return None;
    }
    let mean = |v: &[&&Trial]| v.iter().map(|t| t.ratio).sum::<f64>() / v.len() as f64;
    let all: Vec<&&Trial> = at.iter().collect();
    // Had the spilled bursts stayed in their window: 1 + phase / window
    // (the model in A3.3's note), the others as measured.
    let inside = at
        .iter()
        .map(|t| match (spilled(t), t.row.phase_ms) {
            (true, Some(p)) => 1.0 + p / t.row.window_ms as f64,
            _ => t.ratio,
        })
        .sum::<f64>()
        / at.len() as f64;
    // How close to the window's end the spilled bursts were planned, and
    // how late they were sent.
    let before_end = out
        .iter()
        .filter_map(|t| t.row.phase_ms.map(|p| t.row.window_ms as f64 - p))
        .fold(0.0f64, f64::max);
    let late = |f: fn(f64, f64) -> f64, init: f64| {
        out.iter()
            .map(|t| t.row.lateness_max_us / 1000.0)
            .fold(init, f)
    };
    Some(format!(
        "in {} of {} trials a burst planned within {} ms of the window's end was sent late ({}..{} ms, the trial's latest send) and spilled into the next window (phase + lateness past the window's {} ms); they stay in the judged value, a measurement, not a fault: the mean is {:.3} with them (judged), {:.3} without them, and {:.3} had their bursts stayed in the window (1 + phase / window each)",
        out.len(),
        at.len(),
        before_end.ceil(),
        num(late(f64::min, f64::INFINITY)),
        num(late(f64::max, 0.0)),
        out[0].row.window_ms,
        mean(&all),
        if kept.is_empty() {
            f64::NAN
        } else {
            mean(&kept)
        },
        inside,
    ))
}

/// Mean (left) and worst (right) against the burst phase, a series per sustained rate.
pub fn figure(ctx: &AnalysisCtx, trials: &[Trial]) -> Result<String> {
    let sweep = a3_3_sweep(trials);
    let mut cats: Vec<String> = Vec::new();
    for ((p, _), _) in &sweep {
        if !cats.contains(p) {
            cats.push(p.clone());
        }
    }
    // Fixed phases first (numerically), then the pooled and the uniform draw.
    cats.sort_by_key(|c| {
        (
            c.parse::<i64>().map(|x| (0, x)).unwrap_or((1, 0)),
            c.clone(),
        )
    });
    let mut rates: Vec<String> = sweep.iter().map(|((_, x), _)| x.clone()).collect();
    rates.dedup();
    let mut fig = Figure::new(
        "a3_3-sweep-phase-rate",
        &["A3.3"],
        "sliding-window counter, a burst then sustained traffic: mean and worst trial against where the burst lands and the rate after it",
        "Max admitted in any window / L; left: mean over trials with its 95% confidence sequence (judged; ringed at the setting A3.3 is judged at); right: the worst trial with the bootstrap 95% interval of the max ({n} trials per point; shown, not judged: it grows with the trial count). x: the burst's phase after a window boundary (ms), the fixed phases pooled, or drawn uniformly per trial (the default).",
    )
    .columns(2);
    // Every setting of the sweep may be the one A3.3 is judged at (the
    // default, or an alternative it reproduces only under): the ring goes
    // where the judged setting is drawn.
    let anchors: Vec<Anchor> = sweep
        .iter()
        .filter_map(|((ph, x), _)| {
            let c = cats.iter().position(|c| c == ph)? as f64;
            Some(
                Anchor::new("A3.3", 0, c)
                    .at("burst_phase", ph)
                    .at("sustained_x", x)
                    .on(format!("sliding-window-counter, then {x}x the limit")),
            )
        })
        .collect();
    for (i, title) in ["mean over trials", "worst trial"].iter().enumerate() {
        let mut p = Panel::new(
            *title,
            Axis::new("burst phase in the window (ms)"),
            Axis::new("max admitted in any 1 window / L").range(0.9, 2.1),
        )
        // Short labels: the pooled phases are named in the caption.
        .categories(
            cats.iter()
                .map(|c| {
                    if c.starts_with("fixed:") {
                        "pooled".into()
                    } else {
                        c.clone()
                    }
                })
                .collect(),
        )
        .dodge();
        for x in &rates {
            let pts = sweep
                .iter()
                .filter(|((_, r), _)| r == x)
                .filter_map(|((ph, _), v)| {
                    let c = cats.iter().position(|c| c == ph)? as f64;
                    let s = Summary::of(v);
                    let (lo, hi) = cis(v)[i];
                    Some(Pt::spread(
                        c,
                        if i == 0 { s.mean } else { s.max },
                        lo,
                        hi,
                        s.n,
                    ))
                })
                .collect();
            // Named by the strategy, so it keeps sliding-window-counter's
            // colour (a marker per rate) as in a3_2-a3_3-burst-phase.
            p = p.series(Series::points(
                format!("sliding-window-counter, then {x}x the limit"),
                pts,
            ));
        }
        if let Some(c) = ctx.claim("A3.3") {
            if i == 0 {
                let (_, _, rule) = pass_region(c, 0);
                p = p.reference(Reference::published(c, 0).labelled(format!(
                    "A3.3 published mean {}x; shaded: passes ({rule})",
                    num(c.published.at(0))
                )));
            } else if let Some(w) = published_worst(&c.published_text) {
                let mut r = Reference::published(c, 0);
                r.value = Some(w);
                r.band = None;
                r.lines = vec![];
                p = p.reference(r.labelled(format!(
                    "A3.3 published worst trial {}x (not judged)",
                    num(w)
                )));
            }
        }
        fig = fig.panel(p);
    }
    fig.write_anchored_if_any(ctx, anchors)
}
