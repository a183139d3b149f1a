//! Analysis of `fail-open` (B8): per-phase totals and the per-bin timeline of
//! each policy, over-admission during the outage, and the time to recover.
//!
//! Metrics (rows -> numbers): `per_trial` (a phase's total per trial) and
//! `b8`. Presentation: `phase_table`, `outage_table`, `figure` and
//! `analyze`.
//!
//! Unit tests of the metrics: `tests.rs` in this folder.

pub mod scorecard;

use super::rows::{BinRow, SummaryRow};
use limitbench_analysis::figure::{Axis, Figure, Panel, Pt, Reference, Series, Shade, num};
use limitbench_analysis::figure::{SummaryPoint, WriteFigure};
use limitbench_analysis::stats::Summary;
use limitbench_analysis::table::{distinct, f, md_table};
use limitbench_analysis::{AnalysisCtx, Measured, Section};
use limitbench_base::error::Result;

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
        .condition("both policies get decisions from Redis again after it returns", recovered)
        .rests_on(sums.iter().map(|s| s.cell.as_str())),
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
    ) + "\n`limit` is the bucket's rate times the phase's length, without its burst: a token bucket starts full, so in \
         the normal phase (and again in `back`, on a server restarted empty) it rightly admits its capacity at once on top \
         of its rate. The normal phase's `over limit` (about one capacity) is that first burst, not a breach; the outage's \
         `over limit` under fail-open is the policy admitting every miss, which is what B8 measures.\n"
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

/// The timeline per policy: admitted, decided by Redis, refused or failed
/// per second, mean over trials per bin, with the phases shaded.
fn figure(
    ctx: &AnalysisCtx,
    bins: &[BinRow],
    sums: &[SummaryRow],
    policies: &[String],
) -> Result<String> {
    let trials = bins
        .iter()
        .map(|b| b.trial)
        .max()
        .map(|t| t + 1)
        .unwrap_or(0);
    let bin_s = bins
        .iter()
        .find(|x| x.bin == 1)
        .map(|x| {
            x.t_start_s
                - bins
                    .iter()
                    .find(|y| y.bin == 0 && y.policy == x.policy && y.trial == x.trial)
                    .map(|y| y.t_start_s)
                    .unwrap_or(0.0)
        })
        .unwrap_or(1.0)
        .max(1e-9);
    let mut fig = Figure::new(
        "fail-open-timeline",
        &["B8"],
        "when Redis is slow or gone: fail open admits everything, fail closed refuses; both recover when it is back",
        format!(
            "Requests per second in bins of {} s, mean with min-max whiskers over n = {trials} trials per policy, the series set slightly apart in x so equal values stay visible (fail open admits every miss, so its misses run on its admitted line; fail closed refuses every miss, so its refusals run on its misses); shaded: the phases (slow: replies delayed past the policy's timeout; gone: server killed; back: restarted empty). B8 is a behaviour claim (published: {}); it is judged on the conditions listed in the section, not on a value drawn here, so nothing is ringed.",
            num(bin_s),
            ctx.claim("B8").map(|c| c.published_text.clone()).unwrap_or_default()
        ),
    )
    .columns(1);
    for pol in policies {
        let mut per_bin: std::collections::BTreeMap<u64, Vec<&BinRow>> = Default::default();
        for b in bins.iter().filter(|b| &b.policy == pol) {
            per_bin.entry(b.bin).or_default().push(b);
        }
        let series = |g: &dyn Fn(&BinRow) -> f64| -> Vec<Pt> {
            per_bin
                .values()
                .map(|v| {
                    let t =
                        v.iter().map(|b| b.t_start_s).sum::<f64>() / v.len() as f64 + bin_s / 2.0;
                    Pt::summary(
                        t,
                        &Summary::of(&v.iter().map(|b| g(b) / bin_s).collect::<Vec<_>>()),
                    )
                })
                .collect()
        };
        let mut p = Panel::new(
            pol.clone(),
            Axis::new("time since the trial started (s)"),
            Axis::new("requests per second"),
        )
        .dodge()
        .series(Series::line("admitted", series(&|b| b.admitted as f64)))
        .series(Series::line(
            "decided by Redis",
            series(&|b| b.by_redis as f64),
        ))
        .series(Series::line(
            "timed out or failed (a miss)",
            series(&|b| (b.timeouts + b.errors) as f64),
        ));
        if pol == "fail-closed" {
            p = p.series(Series::line(
                "refused because Redis did not answer",
                series(&|b| b.refused_closed as f64),
            ));
        }
        if let Some(b) = bins.first() {
            p = p.reference(Reference::limit(
                format!("limit {}/s", num(b.limit_per_bin / bin_s)),
                b.limit_per_bin / bin_s,
            ));
        }
        // Head room above the data for the phase labels.
        p = p.y_from_zero(1.15);
        if let Some(s) = sums.iter().find(|s| &s.policy == pol) {
            for (x0, x1, l) in [
                (s.slow_start_s, s.gone_start_s, "slow"),
                (s.gone_start_s, s.back_start_s, "gone"),
                (s.back_start_s, s.end_s, "back"),
            ] {
                p.shades.push(Shade {
                    x0,
                    x1,
                    label: l.into(),
                });
            }
        }
        fig = fig.panel(p);
    }
    fig.write(ctx)
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
             gone (SIGKILL) / back (restarted empty, same port); {} trials per policy; seed(s) {}.\n\n",
            s.offered_per_s, s.strategy, s.limit_per_s, s.timeout_ms,
            f(Summary::of(&sums.iter().map(|x| x.slow_rtt_ms).collect::<Vec<_>>()).mean, 1),
            sums.iter().filter(|x| x.policy == s.policy).count(),
            distinct(sums.iter().map(|x| x.seed.to_string())).join(", ")
        ));
    }
    md.push_str("Per phase, mean per trial:\n\n");
    md.push_str(&phase_table(&bins, &policies));
    md.push_str("\nOutage (slow + gone) and recovery:\n\n");
    md.push_str(&outage_table(&sums, &policies));
    let out: Vec<Measured> = b8(&bins, &sums).into_iter().collect();
    if !bins.is_empty() {
        md = figure(ctx, &bins, &sums, &policies)? + &md;
    }
    let outage = |pol: &str| {
        Summary::of(
            &sums
                .iter()
                .filter(|s| s.policy == pol)
                .map(|s| s.outage_admitted as f64)
                .collect::<Vec<_>>(),
        )
    };
    let finding = format!(
        "while Redis was slow or gone, fail open admitted {} requests per trial (limit over the outage {}), fail closed {}; both were deciding through Redis again {} ms after the restart.",
        f(outage("fail-open").mean, 0),
        f(
            Summary::of(&sums.iter().map(|s| s.outage_limit).collect::<Vec<_>>()).mean,
            0
        ),
        f(outage("fail-closed").mean, 0),
        f(
            Summary::of(&sums.iter().map(|s| s.recover_ms).collect::<Vec<_>>()).mean,
            1
        ),
    );
    Ok((out, Section::new("fail-open", md).finding(finding)))
}
