//! `concurrency`'s scorecard columns: its probe's rows, read back from a
//! strategy's probe folder, -> each column's value, verdict and detail
//! (the judge's threshold beside each). Shared pieces: `limitbench_analysis::scorecard`.

use limitbench_plot::figure::num;

use super::super::rows;
use limitbench_analysis::scorecard::{
    CellOutcome, CellVerdict, ColumnOutcome, ProbeRows, UNDER_WARN, failed, one, under_verdict,
};
use limitbench_base::error::Result;

/// The scorecard columns this experiment's probe fills, in the table's order.
pub const COLUMNS: &[&str] = &["exact-0ms", "exact-6.7ms"];

/// `exact-0ms`, `exact-6.7ms`: admitted / limit of the 64 workers' trial:
/// pass at exactly the limit, warn below it, fail above it. (A trial with
/// failed decisions is not a measurement: the experiment rejects it, and
/// the cell is an error.)
pub fn judge(r: &ProbeRows) -> Vec<ColumnOutcome> {
    let columns = COLUMNS;
    let rows: Vec<rows::Row> = match r.read("concurrency.csv") {
        Ok(v) => v,
        Err(e) => return failed(columns, e),
    };
    let exact = |rtt_ms: f64| -> Result<CellOutcome> {
        let w = one(&rows, &format!("at a {rtt_ms} ms round trip"), |x| {
            (x.target_rtt_ms - rtt_ms).abs() < 1e-9 && x.rtt_jitter_ms == 0.0
        })?;
        let fraction = w.admitted as f64 / w.limit as f64;
        let verdict = if w.errors > 0 {
            CellVerdict::Error
        } else if w.admitted > w.limit {
            CellVerdict::Fail
        } else if w.admitted == w.limit {
            CellVerdict::Pass
        } else {
            // Under-admission: every worker offered more than the limit.
            under_verdict(fraction)
        };
        Ok(CellOutcome::Measured {
            value: fraction,
            unit: "x limit",
            threshold: format!(
                "pass = 1 (exactly the limit); under-admits: warn >= {}, fail below; fail > 1; no errors",
                num(UNDER_WARN)
            ),
            verdict,
            detail: format!(
                "{}limit {}, {} workers, {} offered, round trip {} ms (median PING): {} admitted, {} errors, {} WATCH aborts, {} refused for retries exhausted",
                if w.admitted < w.limit && w.offered > w.limit {
                    format!("under-admits: {} of the limit {}; ", w.admitted, w.limit)
                } else {
                    String::new()
                },
                w.limit,
                w.workers,
                w.offered,
                num(w.rtt_median_us / 1000.0),
                w.admitted,
                w.errors,
                w.aborts,
                w.retries_exhausted
            ),
        })
    };
    vec![(columns[0], exact(0.0)), (columns[1], exact(6.7))]
}
