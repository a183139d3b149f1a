//! The figures and tables of `retries`: admitted vs budget per round trip,
//! A2.1's sweep of the unstated details (by setting and by round-trip
//! jitter) with the lockstep bound, A2.3's over-admission, and the full
//! table (appendix); A2.2's slowdown figures are in `slowdown.rs`.

use std::collections::{BTreeMap, BTreeSet};

use super::{A2_1_BUDGET, Details, Groups, WORKERS, a2_1, lockstep_admitted, longest, summary};
use limitbench_analysis::AnalysisCtx;
use limitbench_analysis::experiments::concurrency::rows::Row as ConcurrencyRow;
use limitbench_analysis::figure::{Anchor, Axis, Figure, Panel, Pt, Reference, Series, num};
use limitbench_analysis::figure::{ClaimReference, SummaryPoint, WriteFigure};
use limitbench_analysis::stats::{Summary, mean_cs};
use limitbench_analysis::table::{f, md_table};
use limitbench_base::error::Result;

pub const SETTINGS_FIGURE: &str = "a2_1-watch-admitted-vs-setting";
pub const JITTER_FIGURE: &str = "a2_1-watch-admitted-vs-rtt-jitter";
pub const WORKERS_FIGURE: &str = "a2_2-watch-slowdown-vs-workers";
pub const ARRIVAL_FIGURE: &str = "a2_2-watch-slowdown-vs-arrival";

pub(super) fn ms(rtt: i64) -> String {
    format!("{} ms", num(rtt as f64 / 1000.0))
}

/// Mean with its judged 95% interval (a confidence sequence) as whiskers.
pub fn ci_pt(x: f64, v: &[f64]) -> Pt {
    let s = Summary::of(v);
    let (lo, hi) = mean_cs(v);
    Pt::spread(x, s.mean, lo, hi, s.n)
}

/// A sort key that orders `fixed-1ms` before `fixed-10ms`: the label
/// without its digits, then its first number.
fn natural(label: &str) -> (String, f64) {
    let text: String = label
        .chars()
        .filter(|c| !c.is_ascii_digit() && *c != '.')
        .collect();
    let num: String = label
        .chars()
        .skip_while(|c| !c.is_ascii_digit())
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    (text, num.parse().unwrap_or(0.0))
}

/// An unstated detail's name in words, for a panel title.
fn detail_words(detail: &str) -> String {
    match detail {
        "backoff" => "backoff before a retry".into(),
        "budget_counts" => "what the retry budget counts".into(),
        "arrival" => "how the L requests arrive: all at once or spread over".into(),
        "attempt" => "the commands of one attempt".into(),
        "rtt_jitter_ms" => "per-packet round-trip jitter (ms)".into(),
        d => d.replace('_', " "),
    }
}

/// The spread of an arrival setting (`spread-100ms` -> 100), None for
/// all at once.
pub(super) fn spread_ms(arrival: &str) -> Option<f64> {
    arrival
        .strip_prefix("spread-")?
        .strip_suffix("ms")?
        .parse()
        .ok()
}

/// A setting's value in words for a tick label: `full-jitter-10ms` ->
/// `full jitter 10 ms`, `watch-get-multi` -> `WATCH GET MULTI`.
fn value_words(v: &str) -> String {
    if let Some(head) = v.strip_suffix(" (default)") {
        return format!("{} (default)", value_words(head));
    }
    // The arrival panel's title says "spread over": a tick is its time
    // alone, so nine ticks fit side by side.
    let v = v.strip_prefix("spread-").unwrap_or(v);
    let mut out = String::new();
    for w in v.split('-') {
        if !out.is_empty() {
            out.push(' ');
        }
        match w {
            "watch" | "get" | "multi" | "unwatch" => out += &w.to_uppercase(),
            w if w.ends_with("ms") && w[..w.len() - 2].parse::<f64>().is_ok() => {
                out += &format!("{} ms", &w[..w.len() - 2])
            }
            w => out += w,
        }
    }
    out
}

/// The lockstep bound at A2.1's budget (retries only: budget + 1 attempts).
pub fn a2_1_bound(limit: u64) -> u64 {
    lockstep_admitted(WORKERS, limit, A2_1_BUDGET + 1)
}

/// Admitted vs budget, a panel per round trip, a series per backoff (the
/// other details at their defaults, 64 workers).
pub fn budgets(ctx: &AnalysisCtx, g: &Groups, limit: u64, md: &mut String) -> Result<()> {
    let d = Details::default_setting();
    let only_backoff = |k: &Details| {
        let mut k = k.clone();
        k.backoff = d.backoff.clone();
        k == d
    };
    let rtts: BTreeSet<i64> = g.watch.keys().map(|k| k.1).collect();
    let budgets: BTreeSet<u32> = g.watch.keys().map(|k| k.2).collect();
    let backoffs = backoffs(g);
    let mut fig = Figure::new(
        "a2_1-watch-admitted-vs-budget",
        &["A2.1"],
        format!("WATCH/MULTI: admitted of L={limit} vs retry budget, {WORKERS} workers, per added round trip and backoff"),
        "Admitted per trial, mean with min-max whiskers over {n} per point; markers only, not joined: nothing was measured between the budgets drawn; the backoffs other than fixed-0 ran at budget 10 only, where two that admit the same share a place (distinct markers; the numbers drawn list each); the backoffs on one blue ramp, light to dark (a parameter, not a strategy: every series is WATCH/MULTI); the other unstated details at their defaults (retries only, all at once, no UNWATCH, no jitter); grey dashes: the lockstep model, computed at every budget: one admission per wave of attempts.",
    )
    .columns(1);
    // The model at every budget up to the largest measured (each integer
    // to 20, then steps of about 5%), so its line crosses no gap.
    let top = budgets.iter().copied().max().unwrap_or(0);
    let mut model_at: BTreeSet<u32> = (1..=top.min(20)).collect();
    let mut b = 20.0f64;
    while (b as u32) < top {
        b *= 1.05;
        model_at.insert((b.round() as u32).min(top));
    }
    model_at.extend(budgets.iter().copied());
    let mut anchors = Vec::new();
    for (pi, rtt) in rtts.iter().enumerate() {
        let mut p = Panel::new(
            format!("{} added round trip", ms(*rtt)),
            Axis::log("retry budget").ticks(budgets.iter().map(|b| *b as f64).collect()),
            Axis::new("admitted of L (requests)"),
        )
        .reference(Reference::limit(format!("limit L = {limit}"), limit as f64));
        for bo in &backoffs {
            let pts: Vec<Pt> = g
                .watch
                .iter()
                .filter(|(k, _)| k.1 == *rtt && &k.0.backoff == bo && only_backoff(&k.0))
                .map(|(k, v)| Pt::summary(k.2 as f64, &summary(v, |r| r.admitted as f64)))
                .collect();
            // Markers only: a line would claim values between budgets
            // that were not measured (10 to 100 is one decade).
            if !pts.is_empty() {
                p = p.series(backoff_look(
                    Series::points(backoff_series(bo, &d.backoff), pts),
                    &backoffs,
                    bo,
                ));
            }
        }
        p = p.series(
            Series::plain(
                "lockstep model",
                model_at
                    .iter()
                    .map(|b| Pt::new(*b as f64, lockstep_admitted(WORKERS, limit, b + 1) as f64))
                    .collect(),
            )
            .model(),
        );
        if Some(*rtt) == longest(g)
            && let Some(c) = ctx.claim("A2.1")
        {
            let b = A2_1_BUDGET as f64;
            p = p.reference(Reference::published(c, 0).over(b / 1.5, b * 1.5));
            // A2.1 is judged at budget 10 and the longest round trip, every
            // other detail at its default.
            anchors.push(default_anchor(
                Anchor::new("A2.1", pi, b).on(backoff_series(&d.backoff, &d.backoff)),
                &d,
            ));
        }
        fig = fig.panel(p);
    }
    *md += &fig.write_anchored_if_any(ctx, anchors)?;
    Ok(())
}

/// A2.1's sweep: admitted at budget 10 and the longest round trip, a panel
/// per unstated detail (its values as categories, the others at their
/// defaults), with the published value and the lockstep bound. Settings
/// that change two details are drawn in the jitter figure.
pub fn a2_1_settings(ctx: &AnalysisCtx, g: &Groups, limit: u64, md: &mut String) -> Result<()> {
    let Some((rtt, at)) = a2_1(g) else {
        return Ok(());
    };
    let d = Details::default_setting();
    let dp = d.pairs();
    let mut panels = Vec::new();
    let mut anchors = Vec::new();
    for (i, (detail, default)) in dp.iter().enumerate() {
        // The default first, then each setting that changes only this detail.
        let mut cats: Vec<(String, &Vec<f64>)> = Vec::new();
        for (k, v) in &at {
            let kp = k.pairs();
            let differs: Vec<usize> = (0..kp.len()).filter(|j| kp[*j].1 != dp[*j].1).collect();
            if differs.is_empty() {
                cats.insert(0, (format!("{default} (default)"), v));
            } else if differs == [i] {
                cats.push((kp[i].1.clone(), v));
            }
        }
        if cats.len() < 2 {
            continue;
        }
        cats[1..].sort_by(|a, b| natural(&a.0).partial_cmp(&natural(&b.0)).unwrap());
        let n = cats.len() as f64;
        let mut p = Panel::new(
            detail_words(detail),
            Axis::new(""),
            Axis::new("admitted of L (requests)")
                .range(0.0, limit as f64)
                .ticks((0..=5).map(|i| (i as u64 * limit) as f64 / 5.0).collect()),
        )
        .categories(cats.iter().map(|c| value_words(&c.0)).collect())
        .series(Series::points(
            "WATCH/MULTI, mean and 95% interval",
            cats.iter()
                .enumerate()
                .map(|(x, (_, v))| ci_pt(x as f64, v))
                .collect(),
        ))
        .reference(
            Reference::expected(
                format!(
                    "lockstep bound: one admission per wave = {}",
                    a2_1_bound(limit)
                ),
                a2_1_bound(limit) as f64,
            )
            .over(-0.5, n - 0.5),
        );
        if let Some(c) = ctx.claim("A2.1") {
            p = p.reference(Reference::published(c, 0).over(-0.5, n - 0.5));
        }
        // The default (first category) is A2.1's judged setting.
        if cats[0].0.ends_with("(default)") {
            anchors.push(default_anchor(
                Anchor::new("A2.1", panels.len(), 0.0).on("WATCH/MULTI, mean and 95% interval"),
                &d,
            ));
        }
        panels.push(p);
    }
    // Arrival and backoff changed together (the joint settings), a series
    // per backoff over the arrivals measured with it.
    let mut joint: BTreeMap<String, Vec<(f64, &Vec<f64>)>> = BTreeMap::new();
    for (k, v) in &at {
        let mut rest = k.clone();
        rest.arrival = d.arrival.clone();
        rest.backoff = d.backoff.clone();
        if rest != d || k.backoff == d.backoff || k.arrival == d.arrival {
            continue;
        }
        if let Some(x) = spread_ms(&k.arrival) {
            joint.entry(k.backoff.clone()).or_default().push((x, v));
        }
    }
    if !joint.is_empty() {
        let xs: BTreeSet<i64> = joint.values().flatten().map(|(x, _)| *x as i64).collect();
        // The arrival grid's step: a line joins only spreads that close.
        let spreads: Vec<f64> = at
            .iter()
            .filter_map(|(k, _)| spread_ms(&k.arrival))
            .collect();
        let step = grid_step(&spreads);
        let all_backoffs = backoffs(g);
        let mut p = Panel::new(
            "arrival and backoff changed together",
            Axis::new("L requests spread uniformly over (ms)")
                .ticks(xs.iter().map(|x| *x as f64).collect()),
            Axis::new("admitted of L (requests)")
                .range(0.0, limit as f64)
                .ticks((0..=5).map(|i| (i as u64 * limit) as f64 / 5.0).collect()),
        )
        .dodge()
        .reference(Reference::expected(
            format!(
                "lockstep bound: one admission per wave = {}",
                a2_1_bound(limit)
            ),
            a2_1_bound(limit) as f64,
        ));
        for (bo, mut pts) in joint {
            pts.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap());
            let mut s = Series::line(
                backoff_series(&bo, &d.backoff),
                pts.iter().map(|(x, v)| ci_pt(*x, v)).collect(),
            );
            if let Some(step) = step {
                s = s.join_within(step);
            }
            p = p.series(backoff_look(s, &all_backoffs, &bo));
        }
        if let Some(c) = ctx.claim("A2.1") {
            p = p.reference(Reference::published(c, 0));
        }
        panels.push(p);
    }
    if panels.is_empty() {
        return Ok(());
    }
    let trials = at.iter().map(|a| a.1.len()).max().unwrap_or(0);
    let fewest = at.iter().map(|a| a.1.len()).min().unwrap_or(0);
    let mut fig = Figure::new(
        SETTINGS_FIGURE,
        &["A2.1"],
        format!("WATCH/MULTI at budget {A2_1_BUDGET}, {} round trip, {WORKERS} workers: admitted per value of each unstated detail", ms(rtt)),
        format!("Admitted per trial, mean with the judged 95% interval of the mean (a confidence sequence) over {} trials per point; each panel changes one detail from the default (fixed-0 backoff, retries only, all at once, WATCH+GET+MULTI/EXEC, no jitter), the last arrival and backoff together (backoffs on one blue ramp, set slightly apart; a line joins only neighbouring spreads of the arrival grid: nothing was measured between 100 and 750 ms); full jitter: uniform in [0, min(100 ms, base x 2^(retry-1))]; spread: L arrivals uniform over that time; UNWATCH: after each abort.", if fewest == trials { format!("n = {trials}") } else { format!("n = {fewest} to {trials}") }),
    )
    .columns(2);
    fig.panels = panels;
    *md += &fig.write_anchored(ctx, anchors)?;
    Ok(())
}

/// `a` where A2.1 was judged with every unstated detail at its default
/// (`d`): a claim judged at an assumed setting is ringed there instead.
fn default_anchor(a: Anchor, d: &Details) -> Anchor {
    d.pairs().iter().fold(a, |a, (k, v)| a.at(k, v))
}

/// A backoff's series (every series of these figures is WATCH/MULTI: the
/// backoff is a parameter, drawn on a ramp by [`backoff_look`]).
fn backoff_series(backoff: &str, default: &str) -> String {
    if backoff == default {
        format!("backoff {backoff} (default)")
    } else {
        format!("backoff {backoff}")
    }
}

/// Every backoff measured, in the order of their ramp: fixed before full
/// jitter, then by base (`fixed-0`, `fixed-1ms`, `fixed-10ms`,
/// `full-jitter-1ms`, `full-jitter-10ms`).
pub(super) fn backoffs(g: &Groups) -> Vec<String> {
    let mut out: Vec<String> = g
        .watch
        .keys()
        .map(|k| k.0.backoff.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    out.sort_by(|a, b| natural(a).partial_cmp(&natural(b)).unwrap());
    out
}

/// `s` drawn as backoff `bo`'s step of the ramp over `all` backoffs: the
/// same look in every A2.1 figure.
fn backoff_look(s: Series, all: &[String], bo: &str) -> Series {
    let step = all.iter().position(|b| b == bo).unwrap_or(0);
    s.ramp(step, all.len())
}

/// The smallest step between the distinct values of `xs` (a measured
/// grid), None with fewer than two.
pub(super) fn grid_step(xs: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v.dedup();
    v.windows(2)
        .map(|w| w[1] - w[0])
        .fold(None, |m: Option<f64>, d| Some(m.map_or(d, |m| m.min(d))))
}

/// A2.1 against the proxy's per-packet jitter, a series per backoff.
pub fn a2_1_jitter(ctx: &AnalysisCtx, g: &Groups, limit: u64, md: &mut String) -> Result<()> {
    let Some((rtt, at)) = a2_1(g) else {
        return Ok(());
    };
    let d = Details::default_setting();
    let mut by: BTreeMap<String, Vec<Pt>> = BTreeMap::new();
    let mut xs = BTreeSet::new();
    for (k, v) in &at {
        let mut other = k.clone();
        other.backoff = d.backoff.clone();
        other.rtt_jitter_ms = d.rtt_jitter_ms.clone();
        if other != d {
            continue;
        }
        let x: f64 = k.rtt_jitter_ms.parse().unwrap_or(f64::NAN);
        xs.insert((x * 1000.0) as i64);
        by.entry(k.backoff.clone()).or_default().push(ci_pt(x, v));
    }
    if xs.len() < 2 {
        return Ok(());
    }
    let mut p = Panel::new(
        format!(
            "{} round trip, budget {A2_1_BUDGET}, {WORKERS} workers",
            ms(rtt)
        ),
        Axis::new("per-packet jitter per direction (ms, uniform extra delay)")
            .ticks(xs.iter().map(|x| *x as f64 / 1000.0).collect()),
        Axis::new("admitted of L (requests)"),
    )
    .dodge()
    .reference(Reference::expected(
        format!("lockstep bound = {}", a2_1_bound(limit)),
        a2_1_bound(limit) as f64,
    ));
    // Only the backoffs swept over jitter (the others are in the settings figure).
    let all_backoffs = backoffs(g);
    let mut anchors = Vec::new();
    for (bo, mut pts) in by.into_iter().filter(|(_, p)| p.len() > 1) {
        pts.sort_by(|a, b| a.x.partial_cmp(&b.x).unwrap());
        // The default backoff without jitter is A2.1's judged setting.
        let jitter0: f64 = d.rtt_jitter_ms.parse().unwrap_or(f64::NAN);
        if bo == d.backoff && pts.iter().any(|q| q.x == jitter0) {
            anchors.push(default_anchor(
                Anchor::new("A2.1", 0, jitter0).on(backoff_series(&bo, &d.backoff)),
                &d,
            ));
        }
        p = p.series(backoff_look(
            Series::line(backoff_series(&bo, &d.backoff), pts),
            &all_backoffs,
            &bo,
        ));
    }
    if let Some(c) = ctx.claim("A2.1") {
        p = p.reference(Reference::published(c, 0));
    }
    *md += &Figure::new(
        JITTER_FIGURE,
        &["A2.1"],
        "WATCH/MULTI admitted vs round-trip jitter: does the lockstep break?",
        "Admitted per trial, mean with the judged 95% interval of the mean (a confidence sequence) over {n} per point; the proxy adds a uniform extra delay in [0, jitter] per packet and direction and is recalibrated so the median round trip stays at the target; the achieved round trip's standard deviation per cell is in the appendix table.",
    )
    .panel(p)
    .write_anchored(ctx, anchors)?;
    Ok(())
}

/// A2.3: over-admission of WATCH/MULTI per budget (retries) and per worker
/// count (concurrency).
pub fn a2_3(
    ctx: &AnalysisCtx,
    g: &Groups,
    concurrency: &[ConcurrencyRow],
    md: &mut String,
) -> Result<()> {
    let mut budgets: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
    for (k, v) in &g.watch {
        budgets
            .entry(k.2)
            .or_default()
            .extend(v.iter().map(|r| r.admitted as f64 - r.limit as f64));
    }
    let mut p = Panel::new(
        "retries experiment",
        Axis::log("retry budget").ticks(budgets.keys().map(|b| *b as f64).collect()),
        Axis::new("admitted - L, per trial (requests)"),
    )
    .series(Series::line(
        "WATCH/MULTI (mean, whiskers min-max)",
        budgets
            .iter()
            .map(|(b, v)| Pt::summary(*b as f64, &Summary::of(v)))
            .collect(),
    ));
    let mut by_w: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
    for r in concurrency.iter().filter(|r| r.strategy == "watch-multi") {
        by_w.entry(r.workers)
            .or_default()
            .push(r.over_admitted as f64);
    }
    let mut q = Panel::new(
        "concurrency experiment",
        Axis::log("concurrent workers").ticks(by_w.keys().map(|w| *w as f64).collect()),
        Axis::new("admitted - L, per trial (requests)"),
    )
    .series(Series::points(
        "WATCH/MULTI (mean, whiskers min-max)",
        by_w.iter()
            .map(|(w, v)| Pt::summary(*w as f64, &Summary::of(v)))
            .collect(),
    ));
    // Integer ticks on the integer count (the data may all sit at 0).
    let (lo, hi) = by_w
        .values()
        .flatten()
        .fold((0.0f64, 0.0f64), |(a, b), v| (a.min(*v), b.max(*v)));
    let step = ((hi - lo) / 4.0).ceil().max(1.0);
    q.y =
        q.y.range(lo - step, hi + step)
            .ticks((-1..=5).map(|i| lo + i as f64 * step).collect());
    if let Some(c) = ctx.claim("A2.3") {
        let r = Reference::published(c, 0).labelled(format!(
            "A2.3 published: {}; passes when no trial is above {} (every top whisker at or below the line)",
            c.published_text,
            num(c.published.at(0))
        ));
        p = p.reference(r.clone());
        // Right panel: the line between the markers (they sit on it).
        let ws: Vec<f64> = by_w.keys().map(|w| *w as f64).collect();
        if let (Some(first), Some(last)) = (ws.first(), ws.last()) {
            q = q
                .reference(r.clone().over(first / 2.0, first / 1.2))
                .reference(r.clone().over(last * 1.2, last * 2.0));
            for w in ws.windows(2) {
                q = q.reference(r.clone().over(w[0] * 1.2, w[1] / 1.2));
            }
        }
    }
    *md += &Figure::new(
        "a2_3-watch-never-over",
        &["A2.3"],
        "WATCH/MULTI never admits more than the limit",
        "Admitted - L per trial, mean with min-max whiskers over {n} per point, over every round trip and setting (left) and every round trip (right); negative values are requests refused because the retry budget ran out; a trial passes at or below 0. A2.3's judged value is the largest over every trial of both panels (the highest whisker top), not one drawn point, so it is not ringed: it is in the claims table.",
    )
    .panel(p)
    .panel(q)
    .columns(2)
    .write(ctx)?;
    Ok(())
}

/// The full table (appendix) and the baseline line.
pub fn table(g: &Groups, appendix: &mut String) {
    let mut table = Vec::new();
    for ((d, rtt, b), v) in &g.watch {
        let w = summary(v, |r| r.wall_ms);
        let lua = g
            .baseline
            .get(&super::base_key(d, *rtt))
            .map(|l| summary(l, |r| r.wall_ms).mean)
            .unwrap_or(f64::NAN);
        table.push(vec![
            f(*rtt as f64 / 1000.0, 1),
            f(summary(v, |r| r.rtt_median_us).mean / 1000.0, 2),
            f(summary(v, |r| r.rtt_sd_us).mean / 1000.0, 2),
            d.label(),
            b.to_string(),
            summary(v, |r| r.admitted as f64).show(1),
            f(summary(v, |r| r.refused_by_retries as f64).mean, 1),
            f(summary(v, |r| r.aborts as f64).mean, 0),
            f(w.mean, 1),
            f(w.mean / lua, 1),
        ]);
    }
    *appendix += "WATCH/MULTI per round trip, setting and retry budget (admitted: mean (min, max, n); round trip: median and sd of the PINGs before the cell; slowdown = wall / Lua fixed window's wall at the same round trip and workers):\n\n";
    *appendix += &md_table(
        &[
            "added round trip ms",
            "measured round trip ms",
            "its sd ms",
            "setting",
            "retry budget",
            "admitted",
            "refused (retries exhausted)",
            "aborts",
            "wall ms",
            "x Lua",
        ],
        &table,
    );
    *appendix += "\nLua fixed window: ";
    *appendix += &g
        .baseline
        .iter()
        .map(|((rtt, w, arrival), v)| {
            format!(
                "{}, {w} workers, {arrival}: admitted {}, wall {} ms",
                ms(*rtt),
                summary(v, |r| r.admitted as f64).show(1),
                f(summary(v, |r| r.wall_ms).mean, 1)
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    *appendix += "\n\n";
}
