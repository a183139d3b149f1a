//! Analysis of `replication` (B1): buckets compared field by field and by
//! absolute expiry between primary and replica, per strategy.
//!
//! Metrics (rows -> numbers): `compared` (buckets compared and differing)
//! and `b1` (the claim over the token-bucket rows); presentation:
//! `strategy_table`, `first_mismatches` and `analyze`.
//!
//! Unit tests of the metrics: `tests.rs` in this folder.

pub mod scorecard;

use super::rows::{MismatchRow, Row};
use limitbench_analysis::figure::{Axis, Figure, Panel, Pt, Reference, Series};
use limitbench_analysis::figure::{ClaimReference, WriteFigure};
use limitbench_analysis::stats::Summary;
use limitbench_analysis::table::{distinct, f, md_table};
use limitbench_analysis::{AnalysisCtx, Measured, Section};
use limitbench_base::error::Result;

/// (buckets compared, buckets that differed) over some trials.
pub fn compared(rows: &[&Row]) -> (u64, u64) {
    let compared = rows.iter().map(|r| r.matches + r.mismatches).sum();
    let mismatched = rows.iter().map(|r| r.mismatches).sum();
    (compared, mismatched)
}

/// B1: token-bucket buckets that differed between primary and replica.
pub fn b1(rows: &[Row]) -> Option<Measured> {
    let tb: Vec<&Row> = rows
        .iter()
        .filter(|r| r.strategy == "token-bucket")
        .collect();
    let first = tb.first()?;
    let (compared, mism) = compared(&tb);
    let per_trial_decisions =
        Summary::of(&tb.iter().map(|r| r.decisions as f64).collect::<Vec<_>>());
    Some(
        Measured::new(
            "B1",
            vec![mism as f64],
            format!("{mism} of {compared} buckets differ ({} trials)", tb.len()),
            "replication.csv strategy=token-bucket: sum of mismatches; replication-mismatches.csv",
        )
        // The buckets are compared per trial: the trials, not the buckets,
        // are the independent repeats behind the count.
        .trials(tb.len())
        .intervals(
            vec![(mism as f64, mism as f64)],
            if mism == 0 {
                format!(
                    "an exact count over every bucket compared, no sampling interval; with none of {compared} differing, \
                     the 95% upper bound on the rate of differing buckets is 3/{compared} (rule of three)"
                )
            } else {
                "an exact count over every bucket compared, no sampling interval".to_string()
            },
        )
        .condition(
            "the replica caught up (offset) in every trial",
            tb.iter().all(|r| r.caught_up),
        )
        .condition(
            "same number of keys on both sides in every trial",
            tb.iter().all(|r| r.keys_primary == r.keys_replica),
        )
        .condition("no decision errored", tb.iter().all(|r| r.errors == 0))
        .rests_on(tb.iter().map(|r| r.cell.as_str()))
        .note(format!(
            "{} decisions per trial on average over {} buckets",
            f(per_trial_decisions.mean, 0),
            first.buckets
        )),
    )
}

/// One line per strategy: trials, buckets compared and differing, the
/// fields that differed, admitted fraction, catch-up time.
fn strategy_table(rows: &[Row]) -> String {
    let mut table = Vec::new();
    for s in distinct(rows.iter().map(|r| r.strategy.clone())) {
        let rs: Vec<&Row> = rows.iter().filter(|r| r.strategy == s).collect();
        let (compared, mism) = compared(&rs);
        let cu = Summary::of(&rs.iter().map(|r| r.catch_up_ms).collect::<Vec<_>>());
        let adm = Summary::of(
            &rs.iter()
                .map(|r| r.admitted as f64 / r.decisions.max(1) as f64)
                .collect::<Vec<_>>(),
        );
        let decisions = Summary::of(&rs.iter().map(|r| r.decisions as f64).collect::<Vec<_>>());
        table.push(vec![
            s.clone(),
            rs.len().to_string(),
            f(decisions.mean, 0),
            rs.first()
                .map(|r| r.buckets.to_string())
                .unwrap_or_default(),
            compared.to_string(),
            mism.to_string(),
            distinct(
                rs.iter()
                    .map(|r| r.mismatched_fields.clone())
                    .filter(|x| !x.is_empty()),
            )
            .join("; "),
            adm.show(3),
            cu.show(2),
            rs.iter()
                .all(|r| r.caught_up && r.keys_primary == r.keys_replica)
                .to_string(),
        ]);
    }
    md_table(
        &[
            "strategy",
            "trials",
            "decisions/trial",
            "buckets",
            "buckets compared",
            "mismatched buckets",
            "fields that differed",
            "admitted fraction",
            "catch-up ms",
            "caught up, same key count",
        ],
        &table,
    )
}

/// The first 20 rows of the side table.
fn first_mismatches(side: &[MismatchRow]) -> String {
    let t: Vec<Vec<String>> = side
        .iter()
        .take(20)
        .map(|m| {
            vec![
                m.cell.clone(),
                m.trial.to_string(),
                m.key.clone(),
                m.field.clone(),
                m.primary.clone(),
                m.replica.clone(),
            ]
        })
        .collect();
    md_table(&["cell", "trial", "key", "field", "primary", "replica"], &t)
}

/// B1: mismatched buckets per trial and strategy.
fn figure(ctx: &AnalysisCtx, rows: &[Row]) -> Result<String> {
    let strategies = distinct(rows.iter().map(|r| r.strategy.clone()));
    let trials = distinct(rows.iter().map(|r| r.trial));
    // An integer count: integer ticks, from 0 to at least 2.
    let top = rows.iter().map(|r| r.mismatches).max().unwrap_or(0).max(2);
    // Trials as categories, so the strategies stand side by side (and off
    // the published line at 0) instead of on one another.
    let mut p = Panel::new(
        "",
        Axis::new("trial"),
        Axis::new("buckets that differ, replica vs primary")
            .range(-0.3, top as f64 + 0.3)
            .ticks((0..=top).map(|v| v as f64).collect()),
    )
    .categories(trials.iter().map(|t| t.to_string()).collect());
    for s in &strategies {
        p = p.series(Series::points(
            format!(
                "{s} ({} buckets per trial)",
                rows.iter()
                    .find(|r| &r.strategy == s)
                    .map(|r| r.buckets)
                    .unwrap_or(0)
            ),
            rows.iter()
                .filter(|r| &r.strategy == s)
                .map(|r| {
                    let i = trials.iter().position(|t| *t == r.trial).unwrap_or(0);
                    Pt::new(i as f64, r.mismatches as f64)
                })
                .collect(),
        ));
    }
    if let Some(c) = ctx.claim("B1") {
        p = p.reference(Reference::published(c, 0));
    }
    Figure::new(
        "b1-replica-matches-primary",
        &["B1"],
        "TIME inside a script on Redis 7: buckets on the replica against the primary's",
        format!(
            "Per trial, buckets whose tokens, timestamp or PEXPIRETIME differ after the replica caught up ({} decisions per trial on average); one count per trial, no spread. B1 is judged on the count pooled over every trial of the judged strategy (the sum of these points, claims table), not on one point drawn here, so none is ringed.",
            f(Summary::of(&rows.iter().map(|r| r.decisions as f64).collect::<Vec<_>>()).mean, 0)
        ),
    )
    .panel(p)
    .write(ctx)
}

pub fn analyze(ctx: &AnalysisCtx) -> Result<(Vec<Measured>, Section)> {
    let Some(rows) = ctx.read_csv::<Row>("replication.csv")? else {
        return Ok((vec![], Section::new("replication", "Not run.\n")));
    };
    let side = ctx
        .read_csv::<MismatchRow>("replication-mismatches.csv")?
        .unwrap_or_default();
    let seeds = distinct(rows.iter().map(|r| r.seed));
    let mut md = format!(
        "Primary + replica; per trial the decisions below over the buckets below (Poisson arrivals), then every bucket \
         read on both sides after the replica's offset reached the primary's (HGETALL + PEXPIRETIME). Seed(s): {}.\n\n",
        seeds
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    md = figure(ctx, &rows)? + &md;
    md.push_str(&strategy_table(&rows));
    if !side.is_empty() {
        md.push_str("\nFirst mismatches (side table `replication-mismatches.csv`):\n\n");
        md.push_str(&first_mismatches(&side));
    }
    let mut out = Vec::new();
    if let Some(m) = b1(&rows) {
        let tb: Vec<&Row> = rows
            .iter()
            .filter(|r| r.strategy == "token-bucket")
            .collect();
        let (compared, mism) = compared(&tb);
        let finding = format!(
            "{mism} of {compared} token-bucket buckets differed between primary and replica (tokens, ts or PEXPIRETIME)."
        );
        out.push(m);
        return Ok((out, Section::new("replication", &md).finding(finding)));
    }
    Ok((out, Section::new("replication", &md)))
}
