//! Analysis of `replication` (B1): buckets compared field by field and by
//! absolute expiry between primary and replica, per strategy.

use crate::analysis::table::{distinct, f, md_table};
use crate::analysis::{AnalysisCtx, Measured, Section};
use crate::analysis::stats::Summary;
use crate::error::Result;
use super::{MismatchRow, Row};

pub fn analyze(ctx: &AnalysisCtx) -> Result<(Vec<Measured>, Section)> {
    let mut md = String::new();
    let Some(rows) = ctx.read_csv::<Row>("replication.csv")? else {
        return Ok((vec![], Section::new("replication", "Not run.\n")));
    };
    let side = ctx
        .read_csv::<MismatchRow>("replication-mismatches.csv")?
        .unwrap_or_default();
    let seeds = distinct(rows.iter().map(|r| r.seed));
    md.push_str(&format!(
        "Primary + replica; per trial the decisions below over the buckets below (Poisson arrivals), then every bucket \
         read on both sides after the replica's offset reached the primary's (HGETALL + PEXPIRETIME). Seed(s): {seeds:?}.\n\n"
    ));
    let mut table = Vec::new();
    for s in distinct(rows.iter().map(|r| r.strategy.clone())) {
        let rs: Vec<&Row> = rows.iter().filter(|r| r.strategy == s).collect();
        let compared: u64 = rs.iter().map(|r| r.matches + r.mismatches).sum();
        let mism: u64 = rs.iter().map(|r| r.mismatches).sum();
        let cu = Summary::of(&rs.iter().map(|r| r.catch_up_ms).collect::<Vec<_>>());
        let adm = Summary::of(
            &rs.iter()
                .map(|r| r.admitted as f64 / r.decisions.max(1) as f64)
                .collect::<Vec<_>>(),
        );
        table.push(vec![
            s.clone(),
            rs.len().to_string(),
            f(
                Summary::of(&rs.iter().map(|r| r.decisions as f64).collect::<Vec<_>>()).mean,
                0,
            ),
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
    md.push_str(&md_table(
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
    ));
    if !side.is_empty() {
        md.push_str("\nFirst mismatches (side table `replication-mismatches.csv`):\n\n");
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
        md.push_str(&md_table(
            &["cell", "trial", "key", "field", "primary", "replica"],
            &t,
        ));
    }
    let mut out = Vec::new();
    let tb: Vec<&Row> = rows
        .iter()
        .filter(|r| r.strategy == "token-bucket")
        .collect();
    if !tb.is_empty() {
        let mism: u64 = tb.iter().map(|r| r.mismatches).sum();
        let compared: u64 = tb.iter().map(|r| r.matches + r.mismatches).sum();
        let per_trial_decisions =
            Summary::of(&tb.iter().map(|r| r.decisions as f64).collect::<Vec<_>>());
        let m = Measured::new(
            "B1",
            vec![mism as f64],
            format!("{mism} of {compared} buckets differ ({} trials)", tb.len()),
            "replication.csv strategy=token-bucket: sum of mismatches; replication-mismatches.csv",
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
        .note(format!(
            "{} decisions per trial on average over {} buckets",
            f(per_trial_decisions.mean, 0),
            tb[0].buckets
        ));
        out.push(m);
        md.push_str(&format!(
            "\n**B1**: {mism} of {compared} token-bucket buckets differed between primary and replica (tokens, ts or PEXPIRETIME).\n"
        ));
    }
    Ok((out, Section::new("replication", &md)))
}
