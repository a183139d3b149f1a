//! `replication`'s scorecard columns: its probe's rows, read back from a
//! strategy's probe folder, -> each column's value, verdict and detail
//! (the judge's threshold beside each). Shared pieces: `limitbench_analysis::scorecard`.

use super::super::rows;
use limitbench_analysis::scorecard::{CellOutcome, ColumnOutcome, ProbeRows, one};
use limitbench_base::error::Error;

/// The scorecard columns this experiment's probe fills, in the table's order.
pub const COLUMNS: &[&str] = &["replication"];

/// `replication`: the fraction of the clients' keys whose replica state
/// equals the primary's; anything below 1 fails.
pub fn judge(r: &ProbeRows) -> Vec<ColumnOutcome> {
    let out = r.read::<rows::Row>("replication.csv").and_then(|rows| {
        let w = one(&rows, &format!("for `{}`", r.strategy), |x| {
            x.strategy == r.strategy
        })?;
        let keys = w.matches + w.mismatches;
        if keys == 0 {
            return Err(Error::Other(format!(
                "no key of the clients found on the primary after {} decisions ({} errors)",
                w.decisions, w.errors
            )));
        }
        if w.errors > 0 {
            return Err(Error::Other(format!(
                "{} of {} decisions errored before the replica was compared",
                w.errors, w.decisions
            )));
        }
        Ok(CellOutcome::at_least(
            w.matches as f64 / keys as f64,
            "fraction",
            1.0,
            1.0,
            format!(
                "{} decisions ({} errors) on {} clients; replica caught up: {} (offset {} of {}); {keys} keys, {} differ{}",
                w.decisions,
                w.errors,
                w.buckets,
                w.caught_up,
                w.replica_offset,
                w.master_offset,
                w.mismatches,
                if w.mismatched_fields.is_empty() {
                    String::new()
                } else {
                    format!(" (fields: {})", w.mismatched_fields)
                }
            ),
        ))
    });
    vec![(COLUMNS[0], out)]
}
