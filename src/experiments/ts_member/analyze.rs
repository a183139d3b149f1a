//! Analysis of `ts-member` (B5.1-B5.4): over-admission of the timestamp-member
//! sliding log per rate and member, the pacing/connection sensitivity, and the
//! closed-loop run.
//!
//! Metrics (rows -> numbers): `main_setting`, `OpenRows` (the open-loop
//! rows by member, rate and setting), `b51`, `b51_band`, `b52`,
//! `b53`, `b54`. Presentation: `main_table`, `sensitivity_table`,
//! `closed_table`, `figure`, and `analyze`, which puts them in order.
//!
//! Unit tests of the metrics: `tests.rs` in this folder.

use std::collections::BTreeSet;

use super::rows::Row;
use crate::analysis::figure::{Axis, Figure, Panel, Pt, Reference, Series, num};
use crate::analysis::stats::Summary;
use crate::analysis::table::{distinct, f, md_table};
use crate::analysis::{AnalysisCtx, ClaimSpec, Measured, Section};
use crate::error::Result;

/// The rates B5.1 reports, in its order.
const B51_RATES: [f64; 3] = [100.0, 1000.0, 10000.0];

/// admitted / limit over some trials.
fn ratios(rows: &[&Row]) -> Summary {
    Summary::of(
        &rows
            .iter()
            .map(|r| r.admitted_per_limit)
            .collect::<Vec<_>>(),
    )
}

/// The mean of one column over some trials.
fn mean_of(rows: &[&Row], col: impl Fn(&Row) -> f64) -> f64 {
    Summary::of(&rows.iter().map(|r| col(r)).collect::<Vec<_>>()).mean
}

/// Inter-arrival spread of a trial (sd / mean of the gaps; Poisson: 1).
fn gap_cv(r: &Row) -> f64 {
    r.gap_sd_us / r.gap_mean_us
}

/// The main setting: the (pacing, drivers) every open-loop member ran at,
/// preferring Poisson pacing when several qualify.
pub fn main_setting(open: &[&Row]) -> Option<(String, u64)> {
    let mut common: Option<BTreeSet<(String, u64)>> = None;
    for m in distinct(open.iter().map(|r| r.member.clone())) {
        let s: BTreeSet<(String, u64)> = open
            .iter()
            .filter(|r| r.member == m)
            .map(|r| (r.pacing.clone(), r.drivers))
            .collect();
        common = Some(match common {
            None => s,
            Some(c) => c.intersection(&s).cloned().collect(),
        });
    }
    common
        .unwrap_or_default()
        .into_iter()
        .max_by_key(|(p, _)| (p == "poisson") as u8)
}

/// The open-loop rows, with the main setting and the offered rates.
pub struct OpenRows<'a> {
    pub rows: Vec<&'a Row>,
    pub main: Option<(String, u64)>,
    /// Offered rates, ascending.
    pub rates: Vec<f64>,
}

impl<'a> OpenRows<'a> {
    pub fn of(rows: &'a [Row]) -> Self {
        let open: Vec<&Row> = rows.iter().filter(|r| r.mode == "open").collect();
        let main = main_setting(&open);
        let mut rates = distinct(open.iter().map(|r| r.rate_per_s));
        rates.sort_by(|a, b| a.partial_cmp(b).unwrap());
        OpenRows {
            rows: open,
            main,
            rates,
        }
    }

    /// Members in first-seen order.
    fn members(&self) -> Vec<String> {
        distinct(self.rows.iter().map(|r| r.member.clone()))
    }

    /// One member at one rate, in the main setting.
    pub fn main(&self, member: &str, rate: f64) -> Vec<&'a Row> {
        match &self.main {
            Some((p, d)) => self.at(member, rate, p, *d),
            None => Vec::new(),
        }
    }

    /// One member at one rate, pacing and driver count.
    pub fn at(&self, member: &str, rate: f64, pacing: &str, drivers: u64) -> Vec<&'a Row> {
        self.rows
            .iter()
            .copied()
            .filter(|r| {
                r.member == member
                    && r.rate_per_s == rate
                    && r.pacing == pacing
                    && r.drivers == drivers
            })
            .collect()
    }

    /// The (pacing, drivers) settings the timestamp member (redis-ms) ran at.
    fn redis_ms_settings(&self) -> Vec<(String, u64)> {
        distinct(
            self.rows
                .iter()
                .filter(|r| r.member == "redis-ms")
                .map(|r| (r.pacing.clone(), r.drivers)),
        )
    }
}

/// B5.1: admitted / limit of the timestamp member (redis-ms) at each of
/// `B51_RATES` in the main setting (NaN where a rate did not run).
pub fn b51(o: &OpenRows) -> Option<Measured> {
    if o.rows.is_empty() {
        return None;
    }
    let mut values = Vec::new();
    let mut disp = Vec::new();
    for &rate in &B51_RATES {
        let s = ratios(&o.main("redis-ms", rate));
        values.push(s.mean);
        disp.push(format!("{}/s: {}", rate, s.show(2)));
    }
    let spread = B51_RATES
        .iter()
        .map(|&r| f(mean_of(&o.main("redis-ms", r), gap_cv), 2))
        .collect::<Vec<_>>()
        .join(", ");
    Some(
        Measured::new(
            "B5.1",
            values,
            disp.join("; "),
            "ts-member.csv mode=open member=redis-ms, main pacing/drivers",
        )
        .note(format!(
            "rates missing at this size show as n/a; measured inter-arrival sd/mean (Poisson: 1) per rate: {spread}"
        )),
    )
}

/// Whether `mean` at `rate` lies within B5.1's tolerance of the published
/// value there (`None`: not a B5.1 rate).
pub fn b51_band(spec: &ClaimSpec, rate: f64, mean: f64) -> Option<&'static str> {
    let i = B51_RATES.iter().position(|x| *x == rate)?;
    let (p, tol) = (spec.published.at(i), spec.tolerance.at(i));
    Some(if (mean - p).abs() <= tol * p {
        "within"
    } else {
        "outside"
    })
}

/// B5.2: admissions of the timestamp member in the closed-loop run closest
/// to the study's 2 s.
pub fn b52(closed: &[&Row]) -> Option<Measured> {
    let rs: Vec<&Row> = closed
        .iter()
        .copied()
        .filter(|r| r.member == "redis-ms")
        .collect();
    let best = rs
        .iter()
        .map(|r| r.duration_s)
        .min_by(|a, b| (a - 2.0).abs().partial_cmp(&(b - 2.0).abs()).unwrap())?;
    let rs: Vec<&Row> = rs.into_iter().filter(|r| r.duration_s == best).collect();
    let s = Summary::of(&rs.iter().map(|r| r.admitted as f64).collect::<Vec<_>>());
    let lim = rs[0].limit as f64;
    Some(
        Measured::new(
            "B5.2",
            vec![s.mean],
            format!(
                "{} admitted, {:.1}x the limit, {} s runs at {} decisions/s",
                s.show(0),
                s.mean / lim,
                best,
                f(mean_of(&rs, |r| r.achieved_rate_per_s), 0)
            ),
            "ts-member.csv mode=closed member=redis-ms",
        )
        .condition(
            "over 10x the limit in every trial",
            rs.iter().all(|r| r.admitted as f64 > 10.0 * lim),
        )
        .note("machine claim: the count scales with the decision rate Redis sustains here"),
    )
}

/// B5.3: the largest relative difference in mean over-admission between
/// the Redis-clock and the caller-clock millisecond member, over the rates.
pub fn b53(o: &OpenRows) -> Option<Measured> {
    let mut diffs = Vec::new();
    let mut shown = Vec::new();
    let mut caller_less = 0;
    for &rate in &o.rates {
        let over = |m: &str| {
            Summary::of(
                &o.main(m, rate)
                    .iter()
                    .map(|r| r.over_limit as f64)
                    .collect::<Vec<_>>(),
            )
        };
        let (a, b) = (over("redis-ms"), over("caller-ms"));
        if a.n > 0 && b.n > 0 && a.mean > 0.0 {
            let d = (a.mean - b.mean).abs() / a.mean * 100.0;
            diffs.push(d);
            caller_less += (b.mean < a.mean) as usize;
            shown.push(format!(
                "{rate}/s: {} vs {} over ({}%)",
                f(a.mean, 1),
                f(b.mean, 1),
                f(d, 1)
            ));
        }
    }
    if diffs.is_empty() {
        return None;
    }
    let worst = diffs.iter().copied().fold(f64::MIN, f64::max);
    Some(Measured::new(
        "B5.3",
        vec![worst],
        format!("largest {}%: {}", f(worst, 1), shown.join("; ")),
        "ts-member.csv mode=open, main setting: mean over_limit, member=redis-ms vs caller-ms",
    ).note(format!(
        "caller-ms over-admitted less than redis-ms at {} of {} rates; a likely cause: requests that queue at Redis run back to back inside one Redis millisecond, while the caller stamps them when it sends",
        caller_less, diffs.len()
    )))
}

/// B5.4: the worst over-admission of the exact members (microsecond
/// timestamp, request id), every mode and cell.
pub fn b54(rows: &[Row]) -> Option<Measured> {
    let exact: Vec<&Row> = rows
        .iter()
        .filter(|r| r.member == "redis-us" || r.member == "request-id")
        .collect();
    let worst = exact.iter().map(|r| r.over_limit).max()?;
    let worst_of = |m: &str| {
        exact
            .iter()
            .filter(|r| r.member == m)
            .map(|r| r.over_limit)
            .max()
    };
    Some(
        Measured::new(
            "B5.4",
            vec![worst.max(0) as f64],
            format!(
                "max over limit: redis-us {}, request-id {} ({} trials)",
                worst_of("redis-us")
                    .map(|v| v.to_string())
                    .unwrap_or_else(|| "n/a".into()),
                worst_of("request-id")
                    .map(|v| v.to_string())
                    .unwrap_or_else(|| "n/a".into()),
                exact.len()
            ),
            "ts-member.csv member in {redis-us, request-id}, every mode and cell",
        )
        .condition(
            "no errors in those trials",
            exact.iter().all(|r| r.errors == 0),
        ),
    )
}

/// Every member at every rate in the main setting.
fn main_table(o: &OpenRows) -> String {
    let mut t = Vec::new();
    for m in &o.members() {
        for &rate in &o.rates {
            let rs = o.main(m, rate);
            if rs.is_empty() {
                continue;
            }
            let max_over =
                Summary::of(&rs.iter().map(|r| r.over_limit as f64).collect::<Vec<_>>()).max;
            t.push(vec![
                m.clone(),
                f(rate, 0),
                ratios(&rs).show(2),
                f(max_over, 0),
                f(mean_of(&rs, |r| r.achieved_rate_per_s), 0),
                f(mean_of(&rs, gap_cv), 2),
                f(mean_of(&rs, |r| r.lateness_p99_us), 0),
                f(mean_of(&rs, |r| r.admitted_distinct_redis_ms as f64), 0),
                f(mean_of(&rs, |r| r.zcard_end as f64), 0),
            ]);
        }
    }
    md_table(
        &[
            "member",
            "offered /s",
            "admitted / limit (mean, min, max, n)",
            "max over limit",
            "achieved /s",
            "gap sd/mean",
            "lateness p99 µs",
            "distinct Redis ms among admitted",
            "ZCARD at end",
        ],
        &t,
    )
}

/// The timestamp member at every (pacing, drivers) it ran at, with B5.1's band.
fn sensitivity_table(o: &OpenRows, spec: Option<&ClaimSpec>) -> String {
    let mut t = Vec::new();
    for (pacing, drivers) in &o.redis_ms_settings() {
        for &rate in &o.rates {
            let rs = o.at("redis-ms", rate, pacing, *drivers);
            if rs.is_empty() {
                continue;
            }
            let s = ratios(&rs);
            let band = spec.and_then(|c| b51_band(c, rate, s.mean));
            t.push(vec![
                pacing.clone(),
                drivers.to_string(),
                f(rate, 0),
                s.show(2),
                f(mean_of(&rs, |r| r.achieved_rate_per_s), 0),
                f(mean_of(&rs, gap_cv), 2),
                band.unwrap_or("-").into(),
            ]);
        }
    }
    md_table(
        &[
            "pacing",
            "drivers",
            "offered /s",
            "admitted / limit",
            "achieved /s",
            "gap sd/mean",
            "B5.1 band",
        ],
        &t,
    )
}

/// Every closed-loop member and duration.
fn closed_table(closed: &[&Row]) -> String {
    let mut t = Vec::new();
    for m in distinct(closed.iter().map(|r| r.member.clone())) {
        let of_m: Vec<&Row> = closed.iter().copied().filter(|r| r.member == m).collect();
        for d in distinct(of_m.iter().map(|r| r.duration_s.to_bits())) {
            let rs: Vec<&Row> = of_m
                .iter()
                .copied()
                .filter(|r| r.duration_s.to_bits() == d)
                .collect();
            t.push(vec![
                m.clone(),
                rs[0].drivers.to_string(),
                rs[0].limit.to_string(),
                f(rs[0].duration_s, 1),
                Summary::of(&rs.iter().map(|r| r.admitted as f64).collect::<Vec<_>>()).show(0),
                f(mean_of(&rs, |r| r.achieved_rate_per_s), 0),
            ]);
        }
    }
    md_table(
        &[
            "member",
            "workers",
            "limit",
            "duration s",
            "admitted",
            "decisions /s",
        ],
        &t,
    )
}

/// B5.1, B5.3, B5.4: admitted / limit against the offered rate per member,
/// the timestamp member per pacing, the clocks' difference and the exact
/// members' over-admission.
fn figure(ctx: &AnalysisCtx, o: &OpenRows) -> Result<String> {
    let rates = o.rates.clone();
    let mut a = Panel::new(
        "every member, main setting",
        Axis::log("offered rate (requests/s)").ticks(rates.clone()),
        Axis::log("admitted / limit"),
    );
    for m in &o.members() {
        let pts = rates
            .iter()
            .map(|r| Pt::summary(*r, &ratios(&o.main(m, *r))))
            .filter(|p| p.n.unwrap_or(0) > 0)
            .collect();
        a = a.series(Series::line(m.clone(), pts));
    }
    let mut d = Panel::new(
        "redis-ms, per pacing and connection count",
        Axis::log("offered rate (requests/s)").ticks(rates.clone()),
        Axis::log("admitted / limit"),
    );
    for (pacing, drivers) in &o.redis_ms_settings() {
        let pts = rates
            .iter()
            .filter_map(|r| {
                let rs = o.at("redis-ms", *r, pacing, *drivers);
                (!rs.is_empty()).then(|| Pt::summary(*r, &ratios(&rs)))
            })
            .collect();
        d = d.series(Series::line(
            format!("redis-ms, {pacing} arrivals, {drivers} connections"),
            pts,
        ));
    }
    if let Some(c) = ctx.claim("B5.1") {
        for (i, r) in B51_RATES.iter().enumerate() {
            let label = format!(
                "B5.1 published: {}; shaded: passes (within ±{}% at 100/s, ±{}% at 1,000/s, ±{}% at 10,000/s)",
                c.published_text,
                num(c.tolerance.at(0) * 100.0),
                num(c.tolerance.at(1) * 100.0),
                num(c.tolerance.at(2) * 100.0)
            );
            a = a.reference(
                Reference::published(c, i)
                    .over(r / 1.5, r * 1.5)
                    .labelled(label.clone()),
            );
            d = d.reference(
                Reference::published(c, i)
                    .over(r / 1.5, r * 1.5)
                    .labelled(label),
            );
        }
    }
    let mut b = Panel::new(
        "B5.3: Redis's clock or the caller's",
        Axis::log("offered rate (requests/s)").ticks(rates.clone()),
        Axis::new("difference in over-admission (%)"),
    );
    let diff: Vec<Pt> = rates
        .iter()
        .filter_map(|r| {
            let over = |m: &str| {
                Summary::of(
                    &o.main(m, *r)
                        .iter()
                        .map(|x| x.over_limit as f64)
                        .collect::<Vec<_>>(),
                )
                .mean
            };
            let (x, y) = (over("redis-ms"), over("caller-ms"));
            (x > 0.0 && y.is_finite()).then(|| Pt::new(*r, (x - y).abs() / x * 100.0))
        })
        .collect();
    b = b.series(Series::line(
        "|over(redis-ms) - over(caller-ms)| / over(redis-ms)",
        diff,
    ));
    if let Some(c) = ctx.claim("B5.3") {
        b = b.reference(Reference::published(c, 0));
    }
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
                    Pt::new(
                        *r,
                        rs.iter()
                            .map(|x| x.over_limit.max(0) as f64)
                            .fold(0.0, f64::max),
                    )
                })
            })
            .collect();
        e = e.series(Series::line(format!("{m} (max over the limit)"), pts));
    }
    if let Some(c) = ctx.claim("B5.4") {
        e = e.reference(Reference::published(c, 0));
    }
    let fig = Figure::new(
        "ts-member-overadmission",
        &["B5.1", "B5.3", "B5.4"],
        "a sliding log whose member is a millisecond timestamp over-admits; microseconds or a request id do not",
        format!("Admitted / limit per trial (limit {} per {} s, {} s of open-loop arrivals), mean with min-max whiskers over {{n}} trials per point; B5.1 is judged on redis-ms in the main setting (top left); the study does not state its pacing or connection count (top right).",
            o.rows.first().map(|r| r.limit).unwrap_or(0),
            num(o.rows.first().map(|r| r.window_ms as f64 / 1000.0).unwrap_or(0.0)),
            num(o.rows.first().map(|r| r.duration_s).unwrap_or(0.0))
        ),
    )
    .columns(2)
    .panel(a)
    .panel(d)
    .panel(b)
    .panel(e);
    fig.write(ctx)
}

/// B5.2: the closed loop, every member.
fn figure_closed(ctx: &AnalysisCtx, closed: &[&Row]) -> Result<String> {
    let members = distinct(closed.iter().map(|r| r.member.clone()));
    let pts: Vec<Pt> = members
        .iter()
        .enumerate()
        .map(|(i, m)| {
            Pt::summary(
                i as f64,
                &Summary::of(
                    &closed
                        .iter()
                        .filter(|r| &r.member == m)
                        .map(|r| r.admitted as f64)
                        .collect::<Vec<_>>(),
                ),
            )
        })
        .collect();
    let limit = closed.first().map(|r| r.limit).unwrap_or(0);
    let workers = closed.first().map(|r| r.drivers).unwrap_or(0);
    let mut p = Panel::new("", Axis::new("member"), Axis::log("admitted in the run"))
        .categories(members)
        .series(Series::points(format!("{workers} workers flat out"), pts))
        .reference(Reference::limit(format!("limit {limit}"), limit as f64));
    if let Some(c) = ctx.claim("B5.2") {
        p = p.reference(Reference::published(c, 0).over(-0.45, 0.45));
    }
    Figure::new(
        "b5_2-closed-loop",
        &["B5.2"],
        format!("the timestamp member with {workers} workers flat out, limit {limit}"),
        format!(
            "Admitted per run of {} s, mean with min-max whiskers over n = {} runs; the published count is the authors' machine's (it scales with the decision rate), judged on being over 10x the limit.",
            num(closed.first().map(|r| r.duration_s).unwrap_or(0.0)),
            closed.iter().filter(|r| r.member == "redis-ms").count()
        ),
    )
    .panel(p)
    .write(ctx)
}

pub fn analyze(ctx: &AnalysisCtx) -> Result<(Vec<Measured>, Section)> {
    let Some(rows) = ctx.read_csv::<Row>("ts-member.csv")? else {
        return Ok((vec![], Section::new("ts-member", "Not run.\n")));
    };
    let o = OpenRows::of(&rows);
    let closed: Vec<&Row> = rows.iter().filter(|r| r.mode == "closed").collect();
    let first = o.rows.first();
    let mut md = format!(
        "Open loop: limit {} per {} ms, arrivals for {} s at each rate (one client), a pool of driver connections; \
         main setting: {}; seed(s) {}. Every row records the achieved rate and spread measured from send times.\n\n",
        first.map(|r| r.limit).unwrap_or(0),
        first.map(|r| r.window_ms).unwrap_or(0),
        first.map(|r| r.duration_s).unwrap_or(0.0),
        o.main
            .as_ref()
            .map(|(p, d)| format!("{p} arrivals over {d} connections"))
            .unwrap_or_else(|| "none".into()),
        distinct(rows.iter().map(|r| r.seed.to_string())).join(", "),
    );
    md.push_str(&main_table(&o));
    if o.redis_ms_settings().len() > 1 {
        md.push_str("\nSensitivity of the timestamp member (redis-ms) to the unstated pacing and connection count; \
                     `B5.1 band` says whether the mean lies within the claim's tolerance of the published value at that rate:\n\n");
        md.push_str(&sensitivity_table(&o, ctx.claim("B5.1")));
    }
    if !closed.is_empty() {
        md.push_str("\nClosed loop (workers flat out):\n\n");
        md.push_str(&closed_table(&closed));
    }
    let out: Vec<Measured> = [b51(&o), b52(&closed), b53(&o), b54(&rows)]
        .into_iter()
        .flatten()
        .collect();
    let mut figs = String::new();
    if !o.rows.is_empty() {
        figs += &figure(ctx, &o)?;
    }
    if !closed.is_empty() {
        figs += &figure_closed(ctx, &closed)?;
    }
    let get = |id: &str| {
        out.iter()
            .find(|m| m.id == id)
            .map(|m| m.values.clone())
            .unwrap_or_default()
    };
    let finding = format!(
        "with a millisecond timestamp as member the log admitted {} times the limit at 100, 1,000 and 10,000 requests/s; the caller's millisecond differed from Redis's by up to {}% in over-admission; microseconds and request ids went over the limit by at most {} requests.",
        get("B5.1")
            .iter()
            .map(|v| f(*v, 2))
            .collect::<Vec<_>>()
            .join(", "),
        get("B5.3")
            .first()
            .map(|v| f(*v, 1))
            .unwrap_or_else(|| "n/a".into()),
        get("B5.4")
            .first()
            .map(|v| f(*v, 0))
            .unwrap_or_else(|| "n/a".into()),
    );
    Ok((out, Section::new("ts-member", figs + &md).finding(finding)))
}
