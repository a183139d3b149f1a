//! Analysis of `ts-member` (B5.1-B5.4): over-admission of the timestamp-member
//! sliding log per rate and member, its sensitivity to the sender (timer tick
//! and connections), the exact Poisson model beside it, and the closed loop.
//!
//! Metrics (rows -> numbers): `OpenRows` (the open-loop rows by member, rate
//! and sender) and `main_sender` here; `claims` (B5.1 with its per-rate
//! verdicts, B5.4); `clocks` (B5.3, per rate); `closed` (B5.2: the count
//! over the model's, the log's fill time at the run's own rate); `model`
//! (the exact Poisson over-admission). Presentation: the tables here,
//! `figures`, `history` (B5.1's collisions as they happened), and
//! `analyze`, which puts them in order.
//!
//! Unit tests of the metrics: `../tests.rs`.

pub mod claims;
pub mod clocks;
pub mod closed;
mod figures;
mod history;
pub mod model;

use std::collections::BTreeSet;

use super::rows::Row;
pub use claims::{b51, b51_band, b54};
pub use clocks::b53;
pub use closed::b52;
use limitbench_analysis::claims::{value_text, values_of};
use limitbench_analysis::stats::Summary;
use limitbench_analysis::table::{distinct, f, md_table};
use limitbench_analysis::{AnalysisCtx, ClaimSpec, Measured, Section};
use limitbench_base::error::Result;

/// The sender of an open-loop cell: its timer tick (us; 0: precise) and
/// the number of connections sending.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Sender {
    pub tick_us: i64,
    pub drivers: u64,
}

impl Sender {
    /// The sender releasing sends at a tick of `tick_ms` (0: precise).
    pub fn at(tick_ms: f64, drivers: u64) -> Self {
        Sender {
            tick_us: (tick_ms * 1000.0).round() as i64,
            drivers,
        }
    }
    pub fn of(r: &Row) -> Self {
        Sender::at(r.sender_tick_ms, r.drivers)
    }
    pub fn tick_ms(&self) -> f64 {
        self.tick_us as f64 / 1000.0
    }
    /// The setting as claims.csv names it: the same spelling in every claim.
    pub fn setting(&self) -> [(&'static str, String); 2] {
        [
            ("sender_tick_ms", format!("{}", self.tick_ms())),
            ("connections", self.drivers.to_string()),
        ]
    }
    /// "precise sender, 32 connections" / "1.2 ms tick, 4 connections".
    pub fn text(&self) -> String {
        if self.tick_us == 0 {
            format!("precise sender, {} connections", self.drivers)
        } else {
            format!("{} ms tick, {} connections", self.tick_ms(), self.drivers)
        }
    }
}

/// The main sender: one every open-loop member ran with; the precise one
/// first, then the most connections (the configured default).
pub fn main_sender(open: &[&Row]) -> Option<Sender> {
    let mut common: Option<BTreeSet<Sender>> = None;
    for m in distinct(open.iter().map(|r| r.member.clone())) {
        let s: BTreeSet<Sender> = open
            .iter()
            .filter(|r| r.member == m)
            .map(|r| Sender::of(r))
            .collect();
        common = Some(match common {
            None => s,
            Some(c) => c.intersection(&s).cloned().collect(),
        });
    }
    common
        .unwrap_or_default()
        .into_iter()
        .min_by_key(|s| (s.tick_us, std::cmp::Reverse(s.drivers)))
}

/// The open-loop Poisson rows, with the main sender and the offered rates.
/// (Runs before the tick sweep also swept evenly spaced arrivals; the study
/// says random arrivals, so those rows are left out and counted.)
pub struct OpenRows<'a> {
    pub rows: Vec<&'a Row>,
    pub main: Option<Sender>,
    /// Offered rates, ascending.
    pub rates: Vec<f64>,
    pub other_pacing: usize,
    /// The run's manifest, for the session each trial was measured in
    /// (`limitbench_analysis::sessions`); null: one session.
    pub manifest: serde_json::Value,
}

impl<'a> OpenRows<'a> {
    pub fn of(rows: &'a [Row]) -> Self {
        let all: Vec<&Row> = rows.iter().filter(|r| r.mode == "open").collect();
        let open: Vec<&Row> = all
            .iter()
            .copied()
            .filter(|r| r.pacing == "poisson")
            .collect();
        let main = main_sender(&open);
        let mut rates = distinct(open.iter().map(|r| r.rate_per_s));
        rates.sort_by(|a, b| a.partial_cmp(b).unwrap());
        OpenRows {
            other_pacing: all.len() - open.len(),
            rows: open,
            main,
            rates,
            manifest: serde_json::Value::Null,
        }
    }

    /// The same rows, their trials placed in the sessions `manifest` names.
    pub fn in_sessions(mut self, manifest: &serde_json::Value) -> Self {
        self.manifest = manifest.clone();
        self
    }

    /// The measuring session of a trial (0: the run's own).
    pub fn session(&self, r: &Row) -> usize {
        limitbench_analysis::sessions::session_of(&self.manifest, "ts-member", r.trial)
    }

    /// Members in first-seen order.
    pub fn members(&self) -> Vec<String> {
        distinct(self.rows.iter().map(|r| r.member.clone()))
    }

    /// One member at one rate, with the main sender.
    pub fn main(&self, member: &str, rate: f64) -> Vec<&'a Row> {
        match self.main {
            Some(s) => self.at(member, rate, s),
            None => Vec::new(),
        }
    }

    /// One member at one rate with one sender.
    pub fn at(&self, member: &str, rate: f64, s: Sender) -> Vec<&'a Row> {
        self.rows
            .iter()
            .copied()
            .filter(|r| r.member == member && r.rate_per_s == rate && Sender::of(r) == s)
            .collect()
    }

    /// The senders a member ran with, the main one first.
    pub fn senders(&self, member: &str) -> Vec<Sender> {
        let mut v: Vec<Sender> = self
            .rows
            .iter()
            .filter(|r| r.member == member)
            .map(|r| Sender::of(r))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        v.sort_by_key(|s| (Some(*s) != self.main, *s));
        v
    }
}

/// admitted / limit over some trials.
pub fn ratios(rows: &[&Row]) -> Vec<f64> {
    rows.iter().map(|r| r.admitted_per_limit).collect()
}

/// The mean of one column over some trials.
pub fn mean_of(rows: &[&Row], col: impl Fn(&Row) -> f64) -> f64 {
    Summary::of(&rows.iter().map(|r| col(r)).collect::<Vec<_>>()).mean
}

/// The mean of an optional column over the trials that have it (NaN: none).
pub fn mean_some(rows: &[&Row], col: impl Fn(&Row) -> Option<f64>) -> f64 {
    Summary::of(&rows.iter().filter_map(|r| col(r)).collect::<Vec<_>>()).mean
}

/// The same-millisecond share of sends (`redis`: of Redis runs) over the
/// fill period, or over the whole trial for rows from before it was recorded.
pub fn fill_share(r: &Row, redis: bool) -> Option<f64> {
    if redis {
        r.fill_redis_same_ms_share.or(r.redis_same_ms_share)
    } else {
        r.fill_send_same_ms_share.or(r.send_same_ms_share)
    }
}

/// A share as a percentage, "n/a" when not recorded.
pub fn pct(v: f64) -> String {
    if v.is_finite() {
        format!("{}%", f(v * 100.0, 1))
    } else {
        "n/a".into()
    }
}

/// Whether every trial's log filled to the limit (else the trial was too
/// short to settle its admissions).
pub fn filled(rows: &[&Row]) -> bool {
    rows.iter().all(|r| r.zcard_end >= r.limit as i64)
}

/// Every member at every rate with the main sender.
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
                Summary::of(&ratios(&rs)).show(2),
                f(max_over, 0),
                f(mean_of(&rs, |r| r.achieved_rate_per_s), 0),
                f(mean_of(&rs, |r| r.gap_sd_us / r.gap_mean_us), 2),
                f(mean_of(&rs, |r| r.lateness_p99_us), 0),
                pct(mean_some(&rs, |r| r.send_same_ms_share)),
                pct(mean_some(&rs, |r| fill_share(r, false))),
                pct(mean_some(&rs, |r| fill_share(r, true))),
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
            "same-ms sends (trial)",
            "same-ms sends (fill)",
            "same-ms Redis runs (fill)",
            "ZCARD at end",
        ],
        &t,
    )
}

/// The millisecond members with every sender they ran with, beside the
/// Poisson model and B5.1's band.
fn sensitivity_table(o: &OpenRows, spec: Option<&ClaimSpec>) -> String {
    let mut t = Vec::new();
    for m in ["redis-ms", "caller-ms"] {
        for s in o.senders(m) {
            for &rate in &o.rates {
                let rs = o.at(m, rate, s);
                if rs.is_empty() {
                    continue;
                }
                let mean = Summary::of(&ratios(&rs)).mean;
                let band = (m == "redis-ms")
                    .then(|| spec.and_then(|c| b51_band(c, rate, mean)))
                    .flatten();
                t.push(vec![
                    m.into(),
                    format!("{}", s.tick_ms()),
                    s.drivers.to_string(),
                    f(rate, 0),
                    Summary::of(&ratios(&rs)).show(2),
                    f(model::expected_ratio(rs[0].limit, rate, s.tick_ms()), 2),
                    f(mean_of(&rs, |r| r.achieved_rate_per_s), 0),
                    pct(mean_some(&rs, |r| r.send_same_ms_share)),
                    pct(mean_some(&rs, |r| fill_share(r, false))),
                    pct(mean_some(&rs, |r| fill_share(r, true))),
                    pct(model::expected_share(rate, s.tick_ms())),
                    f(mean_of(&rs, |r| r.duration_s), 1),
                    if filled(&rs) { "yes" } else { "no" }.into(),
                    band.unwrap_or("-").into(),
                ]);
            }
        }
    }
    md_table(
        &[
            "member",
            "sender tick ms",
            "connections",
            "offered /s",
            "admitted / limit",
            "Poisson model",
            "achieved /s",
            "same-ms sends (trial)",
            "same-ms sends (fill)",
            "same-ms Redis runs (fill)",
            "same-ms (model)",
            "duration s",
            "log filled",
            "B5.1 band",
        ],
        &t,
    )
}

/// Which sender gives the published figures: the span over which the exact
/// model says a Poisson sender must group its requests to reach each
/// published value, and the swept senders whose means lie in B5.1's band at
/// every rate.
fn which_sender(o: &OpenRows, c: &ClaimSpec) -> String {
    let limit = o.rows.first().map(|r| r.limit).unwrap_or(1);
    let spans: Vec<String> = claims::B51_RATES
        .iter()
        .enumerate()
        .map(|(i, r)| {
            format!(
                "{} ms at {}/s",
                f(model::implied_group_ms(limit, *r, c.published.at(i)), 2),
                f(*r, 0)
            )
        })
        .collect();
    let within: Vec<String> = o
        .senders("redis-ms")
        .into_iter()
        .filter(|s| {
            claims::B51_RATES.iter().all(|r| {
                let rs = o.at("redis-ms", *r, *s);
                !rs.is_empty() && b51_band(c, *r, Summary::of(&ratios(&rs)).mean) == Some("within")
            })
        })
        .map(|s| s.text())
        .collect();
    format!(
        "\nWhich sender gives the published figures: inverted, the exact model says a Poisson sender reaches them if its requests group into one millisecond stamp over {} (the precise sender groups over 1 ms). Swept senders whose mean lies within B5.1's band at every rate: {}.\n",
        spans.join(", "),
        if within.is_empty() {
            "none".to_string()
        } else {
            within.join("; ")
        }
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

pub fn analyze(ctx: &AnalysisCtx) -> Result<(Vec<Measured>, Section)> {
    let Some(rows) = ctx.read_csv::<Row>("ts-member.csv")? else {
        return Ok((vec![], Section::new("ts-member", "Not run.\n")));
    };
    let o = OpenRows::of(&rows).in_sessions(&ctx.manifest);
    let closed: Vec<&Row> = rows.iter().filter(|r| r.mode == "closed").collect();
    let first = o.rows.first();
    let mut md = format!(
        "Open loop: limit {} per {} ms, Poisson arrivals at each rate (one client), a pool of driver connections; \
         main sender: {}; seed(s) {}. Every row records the achieved rate, the spread and the share of sends \
         (and of Redis runs) in the millisecond of the one before, measured from the send times and Redis's TIME, \
         over the trial and over its fill period (up to the last admission, the part that decides what is admitted).\n\n",
        first.map(|r| r.limit).unwrap_or(0),
        first.map(|r| r.window_ms).unwrap_or(0),
        o.main.map(|s| s.text()).unwrap_or_else(|| "none".into()),
        distinct(rows.iter().map(|r| r.seed.to_string())).join(", "),
    );
    md.push_str(&main_table(&o));
    md.push_str(
        "\nThe millisecond members with every sender (tick 0: the precise sender; otherwise sends released at the \
         next multiple of the tick), beside the exact Poisson model of over-admission (see `analyze/model.rs`); \
         `B5.1 band` says whether the mean lies within the claim's tolerance of the published value at that rate:\n\n",
    );
    md.push_str(&sensitivity_table(&o, ctx.claim("B5.1")));
    if let Some(c) = ctx.claim("B5.1") {
        md.push_str(&which_sender(&o, c));
    }
    if o.other_pacing > 0 {
        md.push_str(&format!(
            "\n{} open-loop rows with evenly spaced arrivals (an older sweep) are left out: the study's arrivals were random.\n",
            o.other_pacing
        ));
    }
    if !closed.is_empty() {
        md.push_str("\nClosed loop (workers flat out):\n\n");
        md.push_str(&closed_table(&closed));
    }
    // The cells each claim reads (by mode and member; coarser than its
    // settings, so no disturbance of a cell it reads is missed).
    let cells = |rs: &mut dyn Iterator<Item = &Row>| -> Vec<String> {
        rs.map(|r| r.cell.clone()).collect()
    };
    let redis_ms = |r: &&Row| r.member == "redis-ms";
    let exact = |r: &&Row| r.member == "redis-us" || r.member == "request-id";
    let out: Vec<Measured> = [
        b51(&o, ctx.claim("B5.1"))
            .map(|m| m.rests_on(cells(&mut o.rows.iter().copied().filter(redis_ms)))),
        b52(&closed, ctx.claim("B5.2"))
            .map(|m| m.rests_on(cells(&mut closed.iter().copied().filter(redis_ms)))),
        b53(&o, ctx.claim("B5.3")).map(|m| m.rests_on(cells(&mut o.rows.iter().copied()))),
        b54(&rows).map(|m| m.rests_on(cells(&mut rows.iter().filter(exact)))),
    ]
    .into_iter()
    .flatten()
    .collect();
    let mut figs = String::new();
    if !o.rows.is_empty() {
        figs += &figures::overview(ctx, &o)?;
        figs += &figures::poisson_model(ctx, &o)?;
        figs += &figures::sender_sweep(ctx, &o)?;
        figs += &figures::clock_sweep(ctx, &o)?;
    }
    if !closed.is_empty() {
        figs += &figures::closed(ctx, &closed)?;
    }
    history::collision_history(ctx, &rows, &mut figs)?;
    let finding = format!(
        "with a millisecond timestamp as member the log admitted {} times the limit at 100, 1,000 and 10,000 requests/s (precise Poisson model: {}); the caller's millisecond differed from Redis's by {} in admitted / limit at 100, 1,000 and 10,000/s; with 16 workers flat out the log admitted {} of the count its fill time gives at the run's own decision rate; microseconds and request ids went over the limit by at most {} requests.",
        values_of(&out, "B5.1")
            .iter()
            .map(|v| f(*v, 2))
            .collect::<Vec<_>>()
            .join(", "),
        claims::B51_RATES
            .iter()
            .map(|r| f(
                model::expected_ratio(first.map(|x| x.limit).unwrap_or(100), *r, 0.0),
                2
            ))
            .collect::<Vec<_>>()
            .join(", "),
        values_of(&out, "B5.3")
            .iter()
            .map(|v| f(*v, 3))
            .collect::<Vec<_>>()
            .join(", "),
        value_text(&out, "B5.2", 0, 2),
        value_text(&out, "B5.4", 0, 0),
    );
    Ok((out, Section::new("ts-member", figs + &md).finding(finding)))
}
