//! `memory`'s scorecard columns: its probe's rows, read back from a
//! strategy's probe folder, -> each column's value, verdict and detail
//! (the judge's threshold beside each). Shared pieces: `limitbench_analysis::scorecard`.

use limitbench_plot::figure::num;

use super::super::rows;
use limitbench_analysis::scorecard::{CellOutcome, ColumnOutcome, ProbeRows, one};

/// The scorecard columns this experiment's probe fills, in the table's order.
pub const COLUMNS: &[&str] = &["memory"];

/// `memory`: bytes per busy client (`memory`'s used_memory growth over
/// clients taken to their limit), at most 1 KiB to pass, 16 KiB to warn.
pub fn judge(r: &ProbeRows) -> Vec<ColumnOutcome> {
    let out = r.read::<rows::MemoryRow>("memory.csv").and_then(|rows| {
        let w = one(&rows, &format!("for `{}`", r.strategy), |x| {
            x.strategy == r.strategy && x.kind == "bytes"
        })?;
        Ok(CellOutcome::at_most(
            w.bytes_per_client,
            "B",
            1024.0,
            16384.0,
            format!(
                "{} clients at their limit of {} ({} decisions each, filled by {}): {} B per client (used_memory growth); sample keys: {} B each (MEMORY USAGE), encoding {}",
                w.clients,
                w.limit,
                w.fill_per_client,
                if w.fill == "strategy" {
                    "its decisions, one at a time"
                } else {
                    "its own requests, pipelined"
                },
                num(w.bytes_per_client.round()),
                w.memory_usage_mean
                    .map(|m| num(m.round()))
                    .unwrap_or("-".into()),
                w.encoding
            ),
        ))
    });
    vec![(COLUMNS[0], out)]
}
