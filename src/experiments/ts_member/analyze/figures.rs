//! The figures of `ts-member`: every member with the main sender, the
//! measured over-admission beside the exact Poisson model (one panel per
//! rate, so each published band is visible) and the achieved
//! same-millisecond shares (B5.1), the sender sweep (B5.1), the clocks'
//! difference per sender (B5.3), and the closed loop (B5.2). Each judged
//! value is ringed where a figure draws it (anchors at the main sender).

use super::claims::{B51_RATES, b51_per_rate};
use super::clocks::clock_diff;
use super::closed::per_model;
use super::{OpenRows, Sender, fill_share, model, ratios};
use limitbench_analysis::AnalysisCtx;
use limitbench_analysis::experiments::ts_member::rows::Row;
use limitbench_analysis::figure::{
    Anchor, Axis, Figure, Panel, Pt, Reference, Series, num, pass_region,
};
use limitbench_analysis::figure::{ClaimReference, SummaryPoint, WriteFigure};
use limitbench_analysis::stats::{Summary, mean_cs};
use limitbench_analysis::table::distinct;
use limitbench_base::error::Result;

/// The mean of `v` with its 95% interval (the one judged: `stats::mean_cs`) as the whisker.
fn ci_pt(x: f64, v: &[f64]) -> Pt {
    let s = Summary::of(v);
    let (lo, hi) = mean_cs(v);
    Pt::spread(x, s.mean, lo, hi, s.n)
}

/// The published B5.1 value at each of its rates, drawn across the rate.
fn b51_references(ctx: &AnalysisCtx, mut p: Panel) -> Panel {
    if let Some(c) = ctx.claim("B5.1") {
        for (i, r) in B51_RATES.iter().enumerate() {
            p = p.reference(
                Reference::published(c, i)
                    .over(r / 1.6, r * 1.6)
                    .labelled(published_label(c)),
            );
        }
    }
    p
}

fn limit_of(o: &OpenRows) -> u64 {
    o.rows.first().map(|r| r.limit).unwrap_or(0)
}

/// Every member with the main sender, and the exact members' worst case.
pub fn overview(ctx: &AnalysisCtx, o: &OpenRows) -> Result<String> {
    let rates = o.rates.clone();
    let mut a = Panel::new(
        "every member, main sender",
        Axis::log("offered rate (requests/s)").ticks(rates.clone()),
        Axis::log("admitted / limit"),
    );
    for m in &o.members() {
        let pts = rates
            .iter()
            .map(|r| Pt::summary(*r, &Summary::of(&ratios(&o.main(m, *r)))))
            .filter(|p| p.n.unwrap_or(0) > 0)
            .collect();
        a = a.series(Series::line(m.clone(), pts));
    }
    a = b51_references(ctx, a);
    let mut e = Panel::new(
        "B5.4: the exact members",
        Axis::log("offered rate (requests/s)").ticks(rates.clone()),
        Axis::new("requests over the limit (max over trials)"),
    );
    for m in ["redis-us", "request-id"] {
        let pts: Vec<Pt> = rates
            .iter()
            .filter_map(|r| {
                let rs = o.main(m, *r);
                (!rs.is_empty()).then(|| {
                    let w = rs.iter().map(|x| x.over_limit.max(0) as f64);
                    Pt::new(*r, w.fold(0.0, f64::max))
                })
            })
            .collect();
        // The member's name alone, as in the left panel: one series, one look.
        e = e.series(Series::line(m, pts));
    }
    if let Some(c) = ctx.claim("B5.4") {
        e = e.reference(Reference::published(c, 0));
    }
    Figure::new(
        "ts-member-overadmission",
        &["B5.1", "B5.4"],
        "a sliding log whose member is a millisecond timestamp over-admits; microseconds or a request id do not",
        format!(
            "Admitted / limit per trial (limit {}, {}), mean with min-max whiskers over {{n}} trials per point (left); the exact members' largest excess over the limit (right). B5.1's bands are thin on this log axis; b5_1-poisson-model draws each rate on its own axis.",
            limit_of(o),
            o.main.map(|s| s.text()).unwrap_or_default()
        ),
    )
    .columns(2)
    .panel(a)
    .panel(e)
    .write_anchored(ctx, main_anchors(o, "redis-ms"))
}

/// B5.1's value at each rate, judged on `member` with the main sender,
/// drawn at x = the rate in panel 0.
fn main_anchors(o: &OpenRows, member: &str) -> Vec<Anchor> {
    let Some(main) = o.main else {
        return vec![];
    };
    B51_RATES
        .iter()
        .enumerate()
        .map(|(i, &rate)| {
            main.setting()
                .iter()
                .fold(Anchor::new("B5.1", 0, rate), |a, (k, v)| a.at(k, v))
                .value(i)
                .on(member)
        })
        .collect()
}

/// B5.1 with the main sender: measured, the exact Poisson model, and what
/// the measured same-millisecond shares imply; the shares themselves.
pub fn poisson_model(ctx: &AnalysisCtx, o: &OpenRows) -> Result<String> {
    let Some(main) = o.main else {
        return Ok(String::new());
    };
    let limit = limit_of(o);
    let rates: Vec<f64> = o.rates.clone();
    let rs = |r: f64| o.main("redis-ms", r);
    // One panel per rate, each around its own rate on a linear y: the
    // published bands (+-0.014 at 100/s) are then wider than a twentieth
    // of the axis (the chart library zooms a linear axis to the data when
    // a band would be thinner), which one log axis across 1x-12x is not.
    let mut per_rate = Vec::new();
    let mut anchors = Vec::new();
    for (i, &rate) in B51_RATES.iter().enumerate() {
        if rs(rate).is_empty() {
            continue;
        }
        let mut a = Panel::new(
            format!("admitted / limit at {}/s, redis-ms", num(rate)),
            Axis::log("offered rate (requests/s)").ticks(vec![rate]),
            Axis::new("admitted / limit"),
        )
        .dodge()
        .series(Series::points(
            MEASURED,
            vec![ci_pt(rate, &ratios(&rs(rate)))],
        ))
        .series(
            Series::plain(
                "exact Poisson model, precise sender",
                (0..=20)
                    .map(|k| rate * 1.6f64.powf(k as f64 / 10.0 - 1.0))
                    .map(|r| Pt::new(r, model::expected_ratio(limit, r, 0.0)))
                    .collect(),
            )
            .model(),
        );
        for (name, redis) in [
            ("implied by the fill period's same-ms share of sends", false),
            (
                "implied by the fill period's same-ms share of Redis runs",
                true,
            ),
        ] {
            let v: Vec<f64> = rs(rate)
                .iter()
                .filter_map(|x| fill_share(x, redis).map(|s| model::ratio_from_share(limit, s)))
                .collect();
            if !v.is_empty() {
                a = a.series(Series::points(name, vec![ci_pt(rate, &v)]));
            }
        }
        if let Some(c) = ctx.claim("B5.1") {
            a = a.reference(Reference::published(c, i).labelled(published_label(c)));
        }
        // B5.1's value at this rate, judged with the main sender.
        anchors.push(
            main.setting()
                .iter()
                .fold(Anchor::new("B5.1", per_rate.len(), rate), |a, (k, v)| {
                    a.at(k, v)
                })
                .value(i)
                .on(MEASURED),
        );
        per_rate.push(a);
    }
    let fine: Vec<f64> = (0..=40)
        .map(|i| rates[0] * (rates[rates.len() - 1] / rates[0]).powf(i as f64 / 40.0))
        .collect();
    let mut b = Panel::new(
        "same-millisecond share",
        Axis::log("offered rate (requests/s)").ticks(rates.clone()),
        Axis::new("share in the previous one's millisecond (%)").range(0.0, 100.0),
    )
    .dodge();
    // The same model as the ratio panels' line (one legend entry, the
    // model grey): its same-millisecond share.
    b = b.series(
        Series::plain(
            "exact Poisson model, precise sender",
            fine.iter()
                .map(|r| Pt::new(*r, model::expected_share(*r, 0.0) * 100.0))
                .collect(),
        )
        .model(),
    );
    let shares: [(&str, fn(&Row) -> Option<f64>); 3] = [
        ("sends, whole trial", |r| r.send_same_ms_share),
        ("sends, fill period", |r| fill_share(r, false)),
        ("Redis runs, fill period", |r| fill_share(r, true)),
    ];
    for (name, col) in shares {
        let pts: Vec<Pt> = rates
            .iter()
            .filter_map(|r| {
                let v: Vec<f64> = rs(*r)
                    .iter()
                    .filter_map(|x| col(x))
                    .map(|s| s * 100.0)
                    .collect();
                (!v.is_empty()).then(|| ci_pt(*r, &v))
            })
            .collect();
        b = b.series(Series::points(name, pts));
    }
    let fig = Figure::new(
        "b5_1-poisson-model",
        &["B5.1"],
        "the timestamp member against the exact Poisson model",
        format!(
            "redis-ms, {}, limit {}: measured admitted / limit, and the value each trial's achieved same-millisecond share over its fill period (up to the last admission) implies, ((limit - 1) / (1 - share) + 1) / limit, mean with whiskers at the judged 95% interval (a confidence sequence) over {{n}} trials, one panel per rate (the model's line drawn over rates within 1.6x of it); lines: the exact model for a precise Poisson sender.",
            main.text(),
            limit
        ),
    )
    .columns(2);
    per_rate
        .into_iter()
        .fold(fig, |f, p| f.panel(p))
        .panel(b)
        .write_anchored(ctx, anchors)
}

/// The measured series of the Poisson-model figure.
const MEASURED: &str = "measured (mean, 95% interval)";

/// A band edge to the tolerances' precision (three decimals, trailing zeros
/// dropped): 1.076, not 1.08.
fn edge(v: f64) -> String {
    let t = format!("{v:.3}");
    t.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// One legend entry for B5.1's three published values and their bands: the
/// band edges of each (the tolerances are absolute, in multiples of the
/// limit, so a percentage would misread them).
fn published_label(c: &limitbench_analysis::ClaimSpec) -> String {
    let bands: Vec<String> = (0..c.published.values().len())
        .map(|i| match limitbench_analysis::figure::pass_region(c, i) {
            (_, Some((lo, hi)), rule) => format!("{}..{} ({rule})", edge(lo), edge(hi)),
            (_, None, rule) => rule,
        })
        .collect();
    format!(
        "B5.1 published: {}; shaded: passes, admitted / limit in {} at 100, 1,000, 10,000/s",
        c.published_text,
        bands.join(", ")
    )
}

/// The tick categories: "0 (precise)", "1", "1.2", ...
fn tick_names(ticks: &[f64]) -> Vec<String> {
    ticks
        .iter()
        .map(|t| {
            if *t == 0.0 {
                "precise".to_string()
            } else {
                format!("{t} ms")
            }
        })
        .collect()
}

/// The sender ticks run, ascending, and the connection counts.
fn grid(o: &OpenRows, member: &str) -> (Vec<f64>, Vec<u64>) {
    let ss: Vec<Sender> = o.senders(member);
    let mut ticks = distinct(ss.iter().map(|s| s.tick_ms()));
    ticks.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let mut conns = distinct(ss.iter().map(|s| s.drivers));
    conns.sort_unstable_by(|a, b| b.cmp(a));
    (ticks, conns)
}

/// `p` with the senders as categories (one per tick) and a line per
/// connection count: `pt(k, sender)` is its point at the k-th tick, if any.
fn per_sender(
    mut p: Panel,
    ticks: &[f64],
    conns: &[u64],
    pt: impl Fn(usize, Sender) -> Option<Pt>,
) -> Panel {
    p = p.categories(tick_names(ticks));
    // Connection counts are ordered: one hue, light to dark.
    let rank = |d: u64| conns.iter().filter(|c| **c < d).count();
    for &d in conns {
        let pts: Vec<Pt> = ticks
            .iter()
            .enumerate()
            .filter_map(|(k, t)| pt(k, Sender::at(*t, d)))
            .collect();
        p = p.series(Series::line(format!("{d} connections"), pts).ramp(rank(d), conns.len()));
    }
    p
}

/// Claim `id`'s judged value at rate `i` (panel `i`), ringed at the sender
/// it was judged with: one anchor per sender the panels draw.
fn sender_anchors(id: &str, ticks: &[f64], conns: &[u64]) -> Vec<Anchor> {
    let mut out = Vec::new();
    for i in 0..B51_RATES.len() {
        for (k, t) in ticks.iter().enumerate() {
            for &d in conns {
                let a = Sender::at(*t, d)
                    .setting()
                    .iter()
                    .fold(Anchor::new(id, i, k as f64), |a, (key, v)| a.at(key, v));
                out.push(a.value(i).on(format!("{d} connections")));
            }
        }
    }
    out
}

/// B5.1's verdict per rate at the main sender, short: "not-reproduced",
/// "undecided (about 70 trials would decide)", "undecidable (on the edge)".
fn b51_verdicts(ctx: &AnalysisCtx, o: &OpenRows) -> Vec<String> {
    let (Some(c), Some(main)) = (ctx.claim("B5.1"), o.main) else {
        return Vec::new();
    };
    // The claim's own per-rate intervals (a hull where sessions are kept apart).
    let Some(p) = super::claims::b51_at(o, main) else {
        return Vec::new();
    };
    b51_per_rate(c, &p.values, &p.intervals, p.n_min, &p.apart)
        .0
        .iter()
        .map(|s| match (s.verdict, s.n_needed) {
            ("undecided", Some(k)) if k.is_nan() => "undecided (sessions' hull)".to_string(),
            ("undecided", Some(k)) if !k.is_finite() || k > 10_000.0 => {
                "undecidable (on the edge)".to_string()
            }
            ("undecided", Some(k)) => format!("undecided (n~{})", k.ceil()),
            (v, _) => v.to_string(),
        })
        .collect()
}

/// B5.1 per sender: admitted / limit against the tick, one panel per rate.
pub fn sender_sweep(ctx: &AnalysisCtx, o: &OpenRows) -> Result<String> {
    let (ticks, conns) = grid(o, "redis-ms");
    let limit = limit_of(o);
    let mut fig = Figure::new(
        "b5_1-sender-sweep",
        &["B5.1"],
        "over-admission against the sender's timer tick and connections",
        format!(
            "redis-ms, limit {limit}: admitted / limit, mean with whiskers at the judged 95% interval (a confidence sequence) over {{n}} trials (the main sender's, where the measuring sessions disagree: the hull of each session's 97.5% interval, the claim's own); precise: every send waited for to the microsecond; a tick: sends released at the next multiple of it. Each panel's title: B5.1's verdict at that rate with the main sender (n~k: about k trials would decide it at this spread)."
        ),
    )
    .columns(3);
    let verdicts = b51_verdicts(ctx, o);
    let judged = o
        .main
        .and_then(|m| super::claims::b51_at(o, m).map(|p| (m, p)));
    for (i, &rate) in B51_RATES.iter().enumerate() {
        let mut p = per_sender(
            Panel::new(
                match verdicts.get(i) {
                    Some(v) => format!("{}/s: {v}", num(rate)),
                    None => format!("{} requests/s", num(rate)),
                },
                Axis::new("sender"),
                Axis::new("admitted / limit"),
            ),
            &ticks,
            &conns,
            |k, s| {
                let rs = o.at("redis-ms", rate, s);
                // The main sender's whisker is the claim's own interval
                // (the sessions' hull where they disagree).
                match &judged {
                    Some((m, p)) if *m == s && p.apart.get(i) == Some(&true) => Some(Pt::spread(
                        k as f64,
                        p.values[i],
                        p.intervals[i].0,
                        p.intervals[i].1,
                        rs.len(),
                    )),
                    _ => (!rs.is_empty()).then(|| ci_pt(k as f64, &ratios(&rs))),
                }
            },
        );
        p = p.series(
            Series::points(
                "exact Poisson model",
                ticks
                    .iter()
                    .enumerate()
                    .map(|(k, t)| Pt::new(k as f64, model::expected_ratio(limit, rate, *t)))
                    .collect(),
            )
            .model(),
        );
        if let Some(c) = ctx.claim("B5.1") {
            p = p.reference(Reference::published(c, i).labelled(published_label(c)));
        }
        fig = fig.panel(p);
    }
    fig.write_anchored(ctx, sender_anchors("B5.1", &ticks, &conns))
}

/// B5.3 per sender: the clocks' difference in admitted / limit against
/// the tick, one panel per rate, each with its own band.
pub fn clock_sweep(ctx: &AnalysisCtx, o: &OpenRows) -> Result<String> {
    let (ticks, conns) = grid(o, "caller-ms");
    let main = o
        .main
        .map(|m| {
            let t = tick_names(&[m.tick_us as f64 / 1000.0]).remove(0);
            format!("{t}, {} connections", m.drivers)
        })
        .unwrap_or_else(|| "none".into());
    let mut fig = Figure::new(
        "b5_3-clock-sweep",
        &["B5.3"],
        "Redis's clock against the caller's, per rate and sender",
        format!("mean admitted / limit of redis-ms minus caller-ms, per rate, with its judged 95% interval (the two means' confidence sequences) over {{n}} trials per member (where the measuring sessions disagree, the hull of each session's 97.5% interval: the claim's own interval, which only one clean session narrows); precise: every send waited for to the microsecond; a tick: sends released at the next multiple of it. How the verdict reads it: at the main sender ({main}) every rate's whole 95% interval must lie inside that rate's shaded band (the precision of the study's figure at that rate, B5.1's tolerance) for reproduced; one wholly outside is not reproduced; a whisker across an edge is inconclusive (not a pass); the other senders are the sweep."),
    )
    .columns(3);
    for (i, &rate) in B51_RATES.iter().enumerate() {
        let mut p = per_sender(
            Panel::new(
                format!("{} requests/s", num(rate)),
                Axis::new("sender"),
                Axis::new("difference in admitted / limit"),
            ),
            &ticks,
            &conns,
            |k, s| {
                let c = clock_diff(o, s)?;
                let v = c.values[i];
                let n = o.at("caller-ms", rate, s).len();
                v.is_finite()
                    .then(|| Pt::spread(k as f64, v, c.intervals[i].0, c.intervals[i].1, n))
            },
        );
        if let Some(c) = ctx.claim("B5.3") {
            let (_, _, rule) = pass_region(c, i);
            p = p.reference(Reference::published(c, i).labelled(format!(
                "B5.3 published: {}; shaded: the tolerance ({rule}); reproduced when the whole 95% whisker lies inside the band",
                c.published_text
            )));
        }
        fig = fig.panel(p);
    }
    fig.write_anchored(ctx, sender_anchors("B5.3", &ticks, &conns))
}

/// B5.2: the closed loop, every member: the count, and the count over the
/// model's (the log's fill time at the run's own decision rate).
pub fn closed(ctx: &AnalysisCtx, closed: &[&Row]) -> Result<String> {
    let members = distinct(closed.iter().map(|r| r.member.clone()));
    let of = |m: &str| -> Vec<&Row> { closed.iter().copied().filter(|r| r.member == m).collect() };
    let pts: Vec<Pt> = members
        .iter()
        .enumerate()
        .map(|(i, m)| {
            Pt::summary(
                i as f64,
                &Summary::of(&of(m).iter().map(|r| r.admitted as f64).collect::<Vec<_>>()),
            )
        })
        .collect();
    let limit = closed.first().map(|r| r.limit).unwrap_or(0);
    let workers = closed.first().map(|r| r.drivers).unwrap_or(0);
    let a = Panel::new(
        "admitted",
        Axis::new("member"),
        Axis::log("admitted in the run"),
    )
    .categories(members.clone())
    .series(Series::points(format!("{workers} workers flat out"), pts))
    .reference(Reference::limit(format!("limit {limit}"), limit as f64));
    let ratio: Vec<Pt> = members
        .iter()
        .enumerate()
        .map(|(i, m)| {
            ci_pt(
                i as f64,
                &of(m).iter().map(|r| per_model(r)).collect::<Vec<_>>(),
            )
        })
        .collect();
    let mut b = Panel::new(
        "admitted / the model's count (B5.2's value: redis-ms)",
        Axis::new("member"),
        Axis::log("admitted / model count at the run's rate"),
    )
    .categories(members)
    .series(Series::points("mean, 95% interval", ratio));
    let mut published = String::new();
    if let Some(c) = ctx.claim("B5.2") {
        let (_, _, rule) = pass_region(c, 0);
        b = b.reference(Reference::published(c, 0).labelled(format!(
            "B5.2: the study's {} at its own decision rates; shaded: {rule}",
            c.published_text
        )));
        published = format!(" (published: {})", c.published_text);
    }
    Figure::new(
        "b5_2-closed-loop",
        &["B5.2"],
        format!("the timestamp member with {workers} workers flat out, limit {limit}"),
        format!(
            "Left: admitted per run of {} s, mean with min-max whiskers over n = {} runs; the count is this machine's{published}. Right: admitted over the model's count, what a log of millisecond members admits at the run's own decision rate ((L - 1) m / (1 - e^-m) + 1, m = decisions per ms: the rate times the time the log takes to fill), mean with whiskers at the judged 95% interval (a confidence sequence); B5.2 is judged on redis-ms there. The exact members sit near L over the model's count.",
            num(closed.first().map(|r| r.duration_s).unwrap_or(0.0)),
            closed.iter().filter(|r| r.member == "redis-ms").count()
        ),
    )
    .columns(2)
    .panel(a)
    .panel(b)
    .write_anchored(
        ctx,
        vec![Anchor::new("B5.2", 1, 0.0).on("mean, 95% interval")],
    )
}
