//! Analysis of `fail-open` (B8): per-phase totals and the per-bin timeline of
//! each policy, over-admission during the outage, and the time to recover.
//!
//! Metrics (rows -> numbers): `per_trial` (a phase's total per trial) and
//! `b8`. Presentation: `phase_table`, `outage_table`, `figure` and
//! `analyze`.
//!
//! Unit tests of the metrics: `tests.rs` in this folder.

use super::rows::{BinRow, SummaryRow};
use crate::analysis::chart::{Axes, Series, Style, xy_chart};
use crate::analysis::stats::Summary;
use crate::analysis::table::{distinct, f, md_table};
use crate::analysis::{AnalysisCtx, Measured, Section};
use crate::error::Result;

const PHASES: [&str; 4] = ["normal", "slow", "gone", "back"];

/// The sum of `col` over some bins, divided by the number of trials they
/// come from: a phase's total per trial.
pub fn per_trial(bins: &[&BinRow], col: &dyn Fn(&BinRow) -> f64) -> f64 {
    let trials = distinct(bins.iter().map(|b| b.trial)).len().max(1) as f64;
    bins.iter().map(|b| col(b)).sum::<f64>() / trials
}

/// B8: fail-open admits everything while Redis is gone and records the
/// misses, fail-closed admits nothing, both recover after the restart.
/// Needs both policies.
pub fn b8(bins: &[BinRow], sums: &[SummaryRow]) -> Option<Measured> {
    let has = |p: &str| bins.iter().any(|b| b.policy == p);
    if !has("fail-open") || !has("fail-closed") {
        return None;
    }
    let phase_sum = |pol: &str, ph: &str, g: &dyn Fn(&BinRow) -> u64| -> u64 {
        bins.iter()
            .filter(|b| b.policy == pol && b.phase == ph)
            .map(g)
            .sum()
    };
    let open_outage_admit = phase_sum("fail-open", "slow", &|b| b.admitted_open)
        + phase_sum("fail-open", "gone", &|b| b.admitted_open);
    let open_gone_offered = phase_sum("fail-open", "gone", &|b| b.offered);
    let open_gone_admitted = phase_sum("fail-open", "gone", &|b| b.admitted);
    let closed_gone_admitted = phase_sum("fail-closed", "gone", &|b| b.admitted);
    let closed_slow_admitted_open = phase_sum("fail-closed", "slow", &|b| b.admitted_open);
    let closed_outage_refused = phase_sum("fail-closed", "slow", &|b| b.refused_closed)
        + phase_sum("fail-closed", "gone", &|b| b.refused_closed);
    let slow_timeouts = phase_sum("fail-open", "slow", &|b| b.timeouts)
        + phase_sum("fail-closed", "slow", &|b| b.timeouts);
    let recovered = sums.iter().all(|s| s.recover_ms.is_finite());
    let misses_match = sums
        .iter()
        .filter(|s| s.policy == "fail-open")
        .all(|s| s.misses > 0);
    let rec = Summary::of(&sums.iter().map(|s| s.recover_ms).collect::<Vec<_>>());
    let open_over = Summary::of(
        &sums
            .iter()
            .filter(|s| s.policy == "fail-open")
            .map(|s| s.outage_over_limit)
            .collect::<Vec<_>>(),
    );
    Some(
        Measured::new(
            "B8",
            vec![1.0],
            format!(
                "fail-open admitted {open_gone_admitted}/{open_gone_offered} while Redis was gone (over the limit by {} per trial in the outage); \
                 fail-closed admitted {closed_gone_admitted} and refused {closed_outage_refused}; recovery {} ms after restart",
                open_over.show(0), rec.show(1)
            ),
            "fail-open.csv (per bin), fail-open-summary.csv",
        )
        .condition("slow phase: the policy times out (timeouts counted)", slow_timeouts > 0)
        .condition(
            "fail-open admits every request while Redis is gone",
            open_gone_offered > 0 && open_gone_admitted == open_gone_offered,
        )
        .condition("fail-open's misses are recorded", open_outage_admit > 0 && misses_match)
        .condition(
            "fail-closed admits nothing while Redis is gone and nothing open",
            closed_gone_admitted == 0 && closed_slow_admitted_open == 0,
        )
        .condition("both policies get decisions from Redis again after it returns", recovered),
    )
}

/// Per policy x phase, totals per trial averaged.
fn phase_table(bins: &[BinRow], policies: &[String]) -> String {
    let mut t = Vec::new();
    for pol in policies {
        for ph in PHASES {
            let rs: Vec<&BinRow> = bins
                .iter()
                .filter(|b| &b.policy == pol && b.phase == ph)
                .collect();
            if rs.is_empty() {
                continue;
            }
            let sum = |g: &dyn Fn(&BinRow) -> f64| f(per_trial(&rs, g), 1);
            t.push(vec![
                pol.clone(),
                ph.into(),
                sum(&|b| b.offered as f64),
                sum(&|b| b.by_redis as f64),
                sum(&|b| b.redis_admitted as f64),
                sum(&|b| b.admitted_open as f64),
                sum(&|b| b.refused_closed as f64),
                sum(&|b| b.timeouts as f64),
                sum(&|b| b.errors as f64),
                sum(&|b| b.admitted as f64),
                sum(&|b| b.limit_per_bin),
                sum(&|b| b.over_limit),
            ]);
        }
    }
    md_table(
        &[
            "policy",
            "phase",
            "offered",
            "decided by Redis",
            "admitted by Redis",
            "admitted open",
            "refused closed",
            "timeouts",
            "errors",
            "admitted",
            "limit",
            "over limit (sum of bins)",
        ],
        &t,
    )
}

/// Per policy: the outage totals and recovery times over trials.
fn outage_table(sums: &[SummaryRow], policies: &[String]) -> String {
    let mut t = Vec::new();
    for pol in policies {
        let ss: Vec<&SummaryRow> = sums.iter().filter(|s| &s.policy == pol).collect();
        if ss.is_empty() {
            continue;
        }
        let col = |g: &dyn Fn(&SummaryRow) -> f64| {
            Summary::of(&ss.iter().map(|s| g(s)).collect::<Vec<_>>())
        };
        t.push(vec![
            pol.clone(),
            col(&|s| s.outage_admitted as f64).show(0),
            col(&|s| s.outage_limit).show(0),
            col(&|s| s.outage_over_limit).show(0),
            col(&|s| s.misses as f64).show(0),
            col(&|s| s.server_ready_ms).show(1),
            col(&|s| s.recover_ms).show(1),
        ]);
    }
    md_table(
        &[
            "policy",
            "admitted in outage",
            "limit over the outage",
            "over limit",
            "misses recorded",
            "restart to server ready, ms",
            "restart to first Redis decision, ms",
        ],
        &t,
    )
}

/// The timeline of trial 0 of each policy, per second, with the limit.
fn figure(ctx: &AnalysisCtx, bins: &[BinRow], policies: &[String]) -> Result<String> {
    let (path, link) = ctx.figure("fail-open-timeline.svg");
    let mut series = Vec::new();
    for pol in policies {
        let rs: Vec<&BinRow> = bins
            .iter()
            .filter(|b| &b.policy == pol && b.trial == 0)
            .collect();
        let bin_s = rs
            .get(1)
            .map(|b| b.t_start_s - rs[0].t_start_s)
            .unwrap_or(1.0)
            .max(1e-9);
        let pts = |g: &dyn Fn(&BinRow) -> u64| -> Vec<(f64, f64)> {
            rs.iter()
                .map(|b| (b.t_start_s, g(b) as f64 / bin_s))
                .collect()
        };
        series.push(Series::new(
            format!("{pol}: admitted"),
            pts(&|b| b.admitted),
            Style::LinePoints,
        ));
        series.push(Series::new(
            format!("{pol}: decided by Redis"),
            pts(&|b| b.by_redis),
            Style::Line,
        ));
        if pol == "fail-closed" {
            series.push(Series::new(
                format!("{pol}: refused (closed)"),
                pts(&|b| b.refused_closed),
                Style::Dashed,
            ));
        }
        series.push(Series::new(
            format!("{pol}: timeouts"),
            pts(&|b| b.timeouts),
            Style::Points,
        ));
    }
    if let Some(b) = bins.first() {
        let lim = b.limit_per_bin;
        let bin_s = bins
            .iter()
            .find(|x| x.bin == 1)
            .map(|x| x.t_start_s)
            .unwrap_or(1.0)
            .max(1e-9);
        let end = bins.iter().map(|x| x.t_start_s).fold(0.0, f64::max) + bin_s;
        series.push(Series::new(
            "limit",
            vec![(0.0, lim / bin_s), (end, lim / bin_s)],
            Style::Dashed,
        ));
    }
    xy_chart(
        &path,
        &Axes {
            title: "B8: fail-open vs fail-closed; normal, slow, gone, back (trial 0)".into(),
            x_label: "time since trial start (s)".into(),
            y_label: "requests per second".into(),
            ..Default::default()
        },
        &series,
    )?;
    Ok(format!("\n![fail-open timeline]({link})\n"))
}

pub fn analyze(ctx: &AnalysisCtx) -> Result<(Vec<Measured>, Section)> {
    let Some(bins) = ctx.read_csv::<BinRow>("fail-open.csv")? else {
        return Ok((vec![], Section::new("fail-open", "Not run.\n")));
    };
    let sums = ctx
        .read_csv::<SummaryRow>("fail-open-summary.csv")?
        .unwrap_or_default();
    let policies = distinct(bins.iter().map(|b| b.policy.clone()));
    let mut md = String::new();
    if let Some(s) = sums.first() {
        md.push_str(&format!(
            "Steady {} req/s on one client's {} (limit {}/s); policy timeout {} ms; phases normal / slow (proxy delay, measured RTT {} ms) / \
             gone (SIGKILL) / back (restarted empty, same port); {} trials per policy; seed(s) {:?}.\n\n",
            s.offered_per_s, s.strategy, s.limit_per_s, s.timeout_ms,
            f(Summary::of(&sums.iter().map(|x| x.slow_rtt_ms).collect::<Vec<_>>()).mean, 1),
            sums.iter().filter(|x| x.policy == s.policy).count(),
            distinct(sums.iter().map(|x| x.seed))
        ));
    }
    md.push_str("Per phase, mean per trial:\n\n");
    md.push_str(&phase_table(&bins, &policies));
    md.push_str("\nOutage (slow + gone) and recovery:\n\n");
    md.push_str(&outage_table(&sums, &policies));
    let out = b8(&bins, &sums).into_iter().collect();
    if !bins.is_empty() {
        md.push_str(&figure(ctx, &bins, &policies)?);
    }
    Ok((out, Section::new("fail-open", md)))
}
