//! The figures of `cost`: B0's time, the Lua variants against GET (B2.1-B2.3),
//! every variant's CPU per decision, and the ratios of B2.4-B2.6 and B6.1,
//! each against its published value from the claims table.

use super::labels::{b21_reference, machine_lines, percent_in, words};
use super::paired::Est;
use super::{
    STUDY_B, Variants, abusive_ratios, b21_split, eval_vs_evalsha, fcall_vs_evalsha, multi_vs_lua,
    per_run, swl,
};
use limitbench_analysis::AnalysisCtx;
use limitbench_analysis::figure::{
    Anchor, Axis, Figure, Panel, Pt, RefKind, Reference, Series, num,
};
use limitbench_analysis::figure::{ClaimReference, SummaryPoint, WriteFigure};
use limitbench_analysis::stats::Summary;
use limitbench_base::error::Result;

/// B0: minutes per study-B experiment and their sum.
pub(super) fn b0(ctx: &AnalysisCtx) -> Result<String> {
    let Some(exps) = ctx.manifest["experiments"].as_object() else {
        return Ok(String::new());
    };
    let mut cats = Vec::new();
    let mut pts = Vec::new();
    let mut sum = 0.0;
    for n in STUDY_B {
        if let Some(s) = exps
            .get(*n)
            .filter(|e| e["seconds"].is_number())
            .map(|e| super::own_seconds(ctx, n, e))
        {
            pts.push(Pt::new(cats.len() as f64, s / 60.0));
            cats.push(n.to_string());
            sum += s / 60.0;
        }
    }
    if cats.is_empty() {
        return Ok(String::new());
    }
    pts.push(Pt::new(cats.len() as f64, sum));
    cats.push("all of study B".into());
    let k = cats.len() as f64 - 1.0;
    let mut p = Panel::new(
        "",
        Axis::new("experiment of study B"),
        Axis::new("run time (minutes)"),
    )
    .categories(cats)
    .series(Series::points("this run", pts));
    if let Some(c) = ctx.claim("B0") {
        p = p.reference(Reference::published(c, 0).over(k - 0.45, k + 0.45));
    }
    Figure::new(
        "b0-study-b-time",
        &["B0"],
        "run time of study B's experiments in this run",
        "Minutes per experiment from manifest.json and their sum; one value each, no spread; informational (this machine's time).",
    )
    .panel(p)
    .write(ctx)
}

/// Every variant's Redis CPU per decision and command time, GET dashed.
pub(super) fn overview(ctx: &AnalysisCtx, v: &Variants) -> Result<String> {
    // B2.5's fill-level cell has its own figure (b2_4-b6_1-cost-ratios).
    let shown = |c: &str| !(c.ends_with("|normal") || c.ends_with("|steady"));
    let ids: Vec<&String> = v.in_order().map(|(c, _)| c).filter(|c| shown(c)).collect();
    if ids.is_empty() {
        return Ok(String::new());
    }
    let cpu = v
        .in_order()
        .filter(|(c, _)| shown(c))
        .enumerate()
        .map(|(i, (_, x))| Pt::summary(i as f64, &x.cpu()))
        .collect();
    let cmd = v
        .in_order()
        .filter(|(c, _)| shown(c))
        .enumerate()
        .map(|(i, (_, x))| Pt::summary(i as f64, &x.s(|r| r.cmd_usec_per_decision)))
        .collect();
    let mut p = Panel::new("", Axis::new("variant"), Axis::new("µs per decision"))
        .categories(ids.iter().map(|c| words(c)).collect())
        .series(Series::points("Redis CPU per decision (INFO cpu)", cpu))
        .series(Series::points(
            "top-level command time per decision (commandstats)",
            cmd,
        ));
    if let Some(g) = v.scale() {
        p = p.reference(Reference::limit("GET's CPU per decision", g.cpu().mean));
    }
    Figure::new(
        "cost_cpu_per_decision",
        &["B2.1", "B2.3", "B2.6", "B6.1"],
        "every variant's Redis CPU per decision: the numbers behind the ratios",
        "Means over interleaved runs ({n} per point) with min-max whiskers over runs; uniform keys unless one abusive key; command time is the script for Lua, MULTI+EXEC for the transaction. The claims are judged on ratios of these (B2.1 x GET, B2.6 abusive / normal, B6.1 EVAL - EVALSHA) and on the script's share of the CPU (B2.3), not on a point drawn here (so nothing is ringed here): their judged values are ringed against their published values in the B2.1-B2.3 and B2.4-B6.1 figures.",
    )
    .panel(p)
    .write(ctx)
}

/// B2.4, B2.5, B2.6 and B6.1: each ratio against its published value.
// Longer than 120 lines: one figure with a panel per ratio claim (B2.4, B2.5, B2.6, B6.1 CPU, throughput and FCALL); each panel is one marked block over the same run-paired values.
pub(super) fn ratios(ctx: &AnalysisCtx, v: &Variants) -> Result<String> {
    let mut fig = Figure::new(
        "b2_4-b6_1-cost-ratios",
        &["B2.4", "B2.5", "B2.6", "B6.1"],
        "throughput and CPU ratios between variants of the same runs",
        "Each point is the ratio (or difference) of the two variants' means over runs; whiskers: the same ratio per run (paired by run), min to max, {n}; B2.5: per fill level, the difference of the two limits' CPU per decision with the 95% interval of the per-run difference, against that level's noise bound; judged only where the smaller limit binds (steady, full).",
    )
    .columns(3);
    let pub_ref = |id: &str, i: usize| ctx.claim(id).map(|c| Reference::published(c, i));
    // Each judged value ringed where the figure draws it (panel, category).
    let mut anchors = Vec::new();
    if let Some((pct, paired)) = multi_vs_lua(v) {
        let s = Summary::of(&paired);
        let mut p = Panel::new(
            "B2.4: MULTI over Lua",
            Axis::new(""),
            Axis::new("% more decisions/s"),
        )
        .categories(vec!["fixed window: MULTI vs Lua".into()])
        .series(Series::points(
            "ours",
            vec![Pt::spread(0.0, pct, s.min, s.max, s.n)],
        ));
        if let Some(r) = pub_ref("B2.4", 0) {
            p = p.reference(r);
        }
        anchors.push(Anchor::new("B2.4", fig.panels.len(), 0.0).on("ours"));
        fig = fig.panel(p);
    }
    let levels = swl::fill_levels(v);
    if !levels.is_empty() {
        // One category per fill level; only levels where the smaller limit
        // binds are judged (B2.5's scope), and a level whose runs failed
        // the saturation check is no finding: the labels say both.
        let label = |f: &str, binds: bool, bad: usize| {
            let state = if !binds {
                "L never binds: not judged".to_string()
            } else if bad > 0 {
                format!("invalid: {bad} runs < 0.9 busy")
            } else {
                "judged".to_string()
            };
            format!("{f} logs ({state})")
        };
        let mut p = Panel::new(
            "B2.5: sliding log, |L=10,000 - L=100| / L=100",
            Axis::new("how full the logs are"),
            Axis::new("% difference of CPU per decision"),
        )
        .categories(levels.iter().map(|l| label(l.0, l.4, l.5)).collect())
        .series(Series::points(
            "ours (95% interval, paired by run)",
            levels
                .iter()
                .enumerate()
                .map(|(i, l)| Pt::spread(i as f64, l.1, l.2.0, l.2.1, 0))
                .collect(),
        ));
        // Each level's own noise bound, over its category only.
        for (i, l) in levels.iter().enumerate() {
            p = p.reference(
                Reference::expected(
                    "noise bound of each level: 2 x its larger run-to-run sd",
                    l.3,
                )
                .over(i as f64 - 0.4, i as f64 + 0.4),
            );
        }
        if let Some(r) = pub_ref("B2.5", 0) {
            p = p.reference(r);
        }
        // B2.5's values: the levels where the smaller limit binds, in order.
        let at = fig.panels.len();
        anchors.extend(
            levels
                .iter()
                .enumerate()
                .filter(|(_, l)| l.4)
                .enumerate()
                .map(|(k, (i, _))| {
                    Anchor::new("B2.5", at, i as f64)
                        .value(k)
                        .on("ours (95% interval, paired by run)")
                }),
        );
        fig = fig.panel(p);
    }
    let ab = abusive_ratios(v);
    if !ab.is_empty() {
        let mut p = Panel::new(
            "B2.6: one abusive key vs normal",
            Axis::new("strategy"),
            Axis::new("x normal traffic's CPU per decision"),
        )
        .categories(ab.iter().map(|a| a.strategy.clone()).collect())
        .series(Series::points(
            "ours",
            ab.iter()
                .enumerate()
                .map(|(i, a)| {
                    let (x, n) = (
                        &v.by[&format!("{}|abusive", a.strategy)],
                        &v.by[&format!("{}|evalsha", a.strategy)],
                    );
                    let runs = per_run(x, n, |p, q| {
                        p.redis_cpu_us_per_decision / q.redis_cpu_us_per_decision
                    });
                    with_runs(i as f64, a.ratio, &runs)
                })
                .collect(),
        ));
        if let Some(r) = pub_ref("B2.6", 0) {
            p = p.reference(r);
        }
        let at = fig.panels.len();
        anchors
            .extend((0..ab.len()).map(|i| Anchor::new("B2.6", at, i as f64).value(i).on("ours")));
        fig = fig.panel(p);
    }
    if let (Some((extra, lost)), Some(ev), Some(sha)) = (
        eval_vs_evalsha(v),
        v.get("token-bucket|eval"),
        v.get("token-bucket|evalsha"),
    ) {
        let mut p = token_bucket_panel(
            "B6.1: EVAL vs EVALSHA, CPU",
            "extra Redis CPU per decision (µs)",
            extra,
            &per_run(ev, sha, |a, b| {
                a.redis_cpu_us_per_decision - b.redis_cpu_us_per_decision
            }),
        );
        if let Some(c) = ctx.claim("B6.1") {
            p = p.reference(b61_ref(c, 0, "µs"));
        }
        fig = fig.panel(p);
        let mut q = token_bucket_panel(
            "B6.1: EVAL vs EVALSHA, throughput",
            "% of EVALSHA's decisions/s lost",
            lost,
            &per_run(ev, sha, |a, b| {
                (1.0 - a.decisions_per_s / b.decisions_per_s) * 100.0
            }),
        );
        // The published loss, read from the claim's published text (the
        // number before its "%"), drawn as a line: the authors' machine's.
        if let Some(c) = ctx.claim("B6.1")
            && let Some(pct) = percent_in(&c.published_text)
        {
            q = q.reference(machine_lines(
                &format!(
                    "B6.1 published: about {}% (the authors' machine; judged: loss = extra / (base + extra) of the same runs)",
                    num(pct)
                ),
                vec![pct],
            ));
        }
        // What our own CPU predicts for the loss at saturation, extra /
        // (base + extra): the cause when the µs agree and the % does not.
        let predicted = (1.0 - sha.cpu().mean / ev.cpu().mean) * 100.0;
        q = q.reference(Reference {
            kind: RefKind::Expected,
            label: format!(
                "predicted from our CPU per decision: extra / (base + extra) = {predicted:.1}%"
            ),
            value: Some(predicted),
            band: None,
            x: None,
            lines: vec![],
        });
        fig = fig.panel(q);
        // What decides B6.1 (ringed): the loss measured less the loss
        // predicted, against the precision the study states its loss to.
        if let Some((gap, runs)) = super::b61::loss_gap(v) {
            let t = super::b61::B61_LOSS_TOLERANCE_POINTS;
            let g = token_bucket_panel(
                "B6.1 (judged): loss, measured - predicted",
                "loss gap (points of %)",
                gap,
                &runs,
            )
            .reference(Reference {
                kind: RefKind::Published,
                label: format!(
                    "B6.1 decided by: the loss is extra / (base + extra) of the same runs; shaded: passes (measured - predicted within ±{} points: the study's loss to a whole percent)",
                    num(t)
                ),
                value: Some(0.0),
                band: Some((-t, t)),
                x: None,
                lines: vec![],
            });
            anchors.push(
                Anchor::new("B6.1", fig.panels.len(), 0.0)
                    .band_value(0)
                    .on("ours"),
            );
            fig = fig.panel(g);
        }
    }
    if let (Some(fc), Some(sha), Some((_, noise))) = (
        v.get("token-bucket|fcall"),
        v.get("token-bucket|evalsha"),
        fcall_vs_evalsha(v),
    ) {
        // B6.1's other half: FCALL costs what EVALSHA does (within noise).
        let d = (fc.cpu().mean / sha.cpu().mean - 1.0) * 100.0;
        let runs = per_run(fc, sha, |a, b| {
            (a.redis_cpu_us_per_decision / b.redis_cpu_us_per_decision - 1.0) * 100.0
        });
        let mut p = token_bucket_panel(
            "B6.1: FCALL vs EVALSHA, CPU",
            "FCALL / EVALSHA - 1, CPU per decision (%)",
            d,
            &runs,
        );
        if ctx.claim("B6.1").is_some() {
            p = p.reference(Reference {
                kind: RefKind::Published,
                label: format!(
                    "B6.1 published: FCALL performs as EVALSHA (0%); shaded: passes (within ±{}%: 2 x the larger run-to-run sd, at least 3%)",
                    num(noise * 100.0)
                ),
                value: Some(0.0),
                band: Some((-noise * 100.0, noise * 100.0)),
                x: None,
                lines: vec![],
            });
        }
        fig = fig.panel(p);
    }
    fig.write_anchored_if_any(ctx, anchors)
}

/// A panel of one token-bucket value with its per-run whisker (the B6.1
/// comparisons).
fn token_bucket_panel(title: &str, y: &str, value: f64, runs: &[f64]) -> Panel {
    Panel::new(title, Axis::new(""), Axis::new(y))
        .categories(vec!["token bucket".into()])
        .series(Series::points("ours", vec![with_runs(0.0, value, runs)]))
}

/// B2.1's split: each decision's Redis CPU as the command's own time
/// (commandstats) and the rest (read, parse, reply, syscalls), both in
/// multiples of GET's whole CPU per decision in the same run.
pub(super) fn split(ctx: &AnalysisCtx, v: &Variants) -> Result<String> {
    let Some((get, lua)) = b21_split(v) else {
        return Ok(String::new());
    };
    let all: Vec<_> = std::iter::once(&get).chain(&lua).collect();
    let cats: Vec<String> = all
        .iter()
        .map(|s| words(s.cell.trim_end_matches("|evalsha")))
        .collect();
    let pts = |f: &dyn Fn(&super::paired::Split) -> Est| {
        all.iter()
            .enumerate()
            .map(|(i, s)| {
                let e = f(s);
                Pt::spread(i as f64, e.0, e.1.0, e.1.1, e.2)
            })
            .collect()
    };
    let mut p = Panel::new(
        "",
        Axis::new("variant (EVALSHA, uniform keys)"),
        Axis::new("x GET's Redis CPU per decision"),
    )
    .categories(cats)
    .dodge()
    .series(Series::points(
        "whole decision (INFO cpu)",
        pts(&|s| s.total),
    ))
    .series(Series::points(
        "command time (commandstats: the script, or GET)",
        pts(&|s| s.cmd),
    ))
    .series(Series::points(
        "rest: read, parse, reply, syscalls",
        pts(&|s| s.rest),
    ))
    .reference(Reference::limit("GET (1x)", 1.0));
    if let Some(c) = ctx.claim("B2.1") {
        p = p.reference(b21_reference(c));
    }
    Figure::new(
        "b2_1-cpu-split",
        &["B2.1"],
        "a decision's Redis CPU: the command's own time and the network work all commands pay",
        "Per-run ratios to GET's CPU per decision in the same run, mean and the judged 95% interval (a confidence sequence) ({n}); the rest is the INFO cpu delta minus commandstats time. GET's rest is the per-command floor a script pays too.",
    )
    .panel(p)
    // B2.1's judged values are the whole decision's ratios (GET is x = 0).
    .write_anchored(
        ctx,
        (0..lua.len())
            .map(|i| {
                Anchor::new("B2.1", 0, (i + 1) as f64)
                    .value(i)
                    .on("whole decision (INFO cpu)")
            })
            .collect(),
    )
}

/// B6.1's published value `i` with its pass band in words.
fn b61_ref(c: &limitbench_analysis::claims::ClaimSpec, i: usize, unit: &str) -> Reference {
    let (_, band, rule) = limitbench_analysis::figure::pass_region(c, i);
    let r = Reference::published(c, i);
    // "2.5 µs" but "11%".
    let u = |v: f64| {
        if unit == "%" {
            format!("{}%", num(v))
        } else {
            format!("{} {unit}", num(v))
        }
    };
    let text = match band {
        Some((lo, hi)) => format!("{}-{}", num(lo), u(hi)),
        None => rule,
    };
    r.labelled(format!(
        "B6.1 published: {}; shaded: passes ({text})",
        u(c.published.at(i))
    ))
}

/// A point at the ratio of means with the min-max of the per-run values.
fn with_runs(x: f64, y: f64, runs: &[f64]) -> Pt {
    if runs.is_empty() {
        return Pt::new(x, y);
    }
    let s = Summary::of(runs);
    Pt::spread(x, y, s.min, s.max, s.n)
}
