//! `cluster`'s scorecard columns: its probe's rows, read back from a
//! strategy's probe folder, -> each column's value, verdict and detail
//! (the judge's threshold beside each). Shared pieces: `limitbench_analysis::scorecard`.

use super::super::rows;
use limitbench_analysis::scorecard::{CellOutcome, ColumnOutcome, ProbeRows, one};

/// The scorecard columns this experiment's probe fills, in the table's order.
pub const COLUMNS: &[&str] = &["cluster"];

/// `cluster`: the fraction of users whose decisions all returned on the
/// cluster; anything below 1 fails.
pub fn judge(r: &ProbeRows) -> Vec<ColumnOutcome> {
    let out = r.read::<rows::Row>("cluster.csv").and_then(|rows| {
        let w = one(&rows, &format!("for `{}`", r.strategy), |x| {
            x.kind == "strategy" && x.strategy == r.strategy
        })?;
        Ok(CellOutcome::at_least(
            w.fraction_ok,
            "fraction",
            1.0,
            1.0,
            format!(
                "{} of {} users work on {} masters; errors: {}",
                w.ok,
                w.users,
                w.nodes,
                if w.errors.is_empty() {
                    "none"
                } else {
                    &w.errors
                }
            ),
        ))
    });
    vec![(COLUMNS[0], out)]
}
