//! `memory`'s scorecard columns: its probe's rows, read back from a
//! strategy's probe folder, -> each column's value, verdict and detail
//! (the judge's threshold beside each). Shared pieces: `limitbench_analysis::scorecard`.

use limitbench_plot::figure::num;

use super::super::rows;
use limitbench_analysis::scorecard::{
    CellOutcome, ColumnOutcome, ProbeRows, one, under_verdict, worse,
};

/// The scorecard columns this experiment's probe fills, in the table's order.
pub const COLUMNS: &[&str] = &["memory"];

/// `memory`: bytes per busy client (`memory`'s used_memory growth over
/// clients taken to their limit), at most 1 KiB to pass, 16 KiB to warn;
/// a strategy that refused requests below its limit while filling
/// under-admits: warn or fail by the fraction it admitted, as the other
/// columns judge under-admission.
pub fn judge(r: &ProbeRows) -> Vec<ColumnOutcome> {
    let out = r.read::<rows::MemoryRow>("memory.csv").and_then(|rows| {
        let w = one(&rows, &format!("for `{}`", r.strategy), |x| {
            x.strategy == r.strategy && x.kind == "bytes"
        })?;
        let mut cell = CellOutcome::at_most(
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
        );
        let refused = w.fill_refused.unwrap_or(0);
        if let (CellOutcome::Measured { verdict, detail, .. }, true) = (&mut cell, refused > 0) {
            let total = (w.clients * w.fill_per_client).max(1);
            let admitted = total.saturating_sub(refused) as f64 / total as f64;
            *verdict = worse(*verdict, under_verdict(admitted));
            *detail = format!(
                "under-admits: refused {refused} of {total} requests below its limit while filling (admitted {}; the bytes are of that state, not a busy client's): {detail}",
                num(admitted)
            );
        }
        Ok(cell)
    });
    vec![(COLUMNS[0], out)]
}
