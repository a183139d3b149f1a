//! `baseline`'s scorecard column, `works`: the strategy's first decisions
//! (the probe's one trial of a few decisions on one connection) return.
//! A trial whose decisions failed is rejected by the experiment, so the
//! probe itself fails and the scorecard makes the cell `error` with the
//! cause; a row here is a strategy that decided.

use super::super::rows;
use limitbench_analysis::scorecard::{
    CellOutcome, CellVerdict, ColumnOutcome, ProbeRows, failed, one,
};

/// The scorecard columns this experiment's probe fills, in the table's order.
pub const COLUMNS: &[&str] = &["works"];

/// `works`: pass when the strategy's row has no failed decision (value 1).
pub fn judge(r: &ProbeRows) -> Vec<ColumnOutcome> {
    let rows: Vec<rows::Row> = match r.read("baseline.csv") {
        Ok(v) => v,
        Err(e) => return failed(COLUMNS, e),
    };
    let out = one(&rows, &format!("for `{}`", r.strategy), |x| {
        x.target == r.strategy
    })
    .map(|w| CellOutcome::Measured {
        value: if w.errors == 0 { 1.0 } else { 0.0 },
        unit: "",
        threshold: "a decision returns".into(),
        verdict: if w.errors == 0 {
            CellVerdict::Pass
        } else {
            CellVerdict::Error
        },
        detail: format!(
            "clock: {} (Info.clock); reports Redis time: {}",
            r.declared.clock, r.declared.reports_redis_time
        ),
    });
    vec![(COLUMNS[0], out)]
}
