//! `skew`'s scorecard columns: its probe's rows, read back from a
//! strategy's probe folder, -> each column's value, verdict and detail
//! (the judge's threshold beside each). Shared pieces: `limitbench_analysis::scorecard`.

use limitbench_plot::figure::num;

use super::super::rows;
use limitbench_analysis::scorecard::{
    CellOutcome, CellVerdict, ColumnOutcome, ProbeRows, UNDER_WARN, failed, first_line, one, worse,
};
use limitbench_base::error::{Error, Result};

/// The scorecard columns this experiment's probe fills, in the table's order.
pub const COLUMNS: &[&str] = &["clock-10ms", "clock-100ms", "clock-1s"];

/// The clock columns: admitted % of the ideal bucket (`skew`'s own ideal,
/// from the send times) at +/-S minus the same at no skew, in points: at
/// most 2 to pass, 5 to warn. A skew the probe did not run at this size is
/// `not-run`.
pub fn judge(r: &ProbeRows) -> Vec<ColumnOutcome> {
    let columns = [
        ("clock-10ms", 10.0),
        ("clock-100ms", 100.0),
        ("clock-1s", 1000.0),
    ];
    let read = || -> Result<(Vec<rows::Row>, Vec<rows::HistoryRow>)> {
        Ok((r.read("skew.csv")?, r.read("skew-history.csv")?))
    };
    let (rows, history) = match read() {
        Ok(v) => v,
        Err(e) => return failed(&columns.map(|c| c.0), e),
    };
    let hist = limitbench_analysis::window::by_trial(history);
    // NaN (and so a fail) without a history to compute the ideal from.
    let pct = |w: &rows::Row| {
        let h = hist.get(&(w.cell.clone(), w.trial));
        let ideal = super::ideal(w, h.map(Vec::as_slice).unwrap_or(&[]));
        let pct = if ideal.is_nan() {
            f64::NAN
        } else {
            100.0 * w.admitted as f64 / ideal.max(1.0)
        };
        (pct, ideal)
    };
    let base = one(&rows, "without skew", |w| w.skew_ms == 0.0);
    columns
        .iter()
        .map(|&(column, skew_ms)| {
            let Some(w) = rows.iter().find(|w| w.skew_ms == skew_ms) else {
                let why = "not run at this size (not in the skew probe table)";
                return (column, Ok(CellOutcome::NotRun(why.into())));
            };
            let out = base.as_ref().map_err(|e| Error::Other(e.to_string())).map(|b| {
                let ((p, i), (p0, i0)) = (pct(w), pct(b));
                let drift = p - p0;
                let errors = w.errors + b.errors;
                // An under-admitter drifts no more than a good limiter: its
                // unskewed share of the ideal bucket says it (windows admit
                // about two thirds of a bucket's ideal on this traffic).
                let mut judged = CellOutcome::at_most(
                    drift.abs(),
                    "points",
                    2.0,
                    5.0,
                    format!(
                        "clock {} (Info.clock); bucket {} refilling {}/s, {} callers at +/-{} ms ({} clocks), {}x the rate for {} ms: admitted {} of ideal {} ({} %), unskewed {} of {} ({} %): {} points",
                        r.declared.clock.as_str(),
                        w.capacity,
                        num(w.rate_per_s),
                        w.servers,
                        num(skew_ms),
                        w.clocks,
                        num(w.load_x),
                        num(w.duration_ms),
                        w.admitted,
                        num(i),
                        num(p),
                        b.admitted,
                        num(i0),
                        num(p0),
                        num(drift)
                    ),
                );
                if let CellOutcome::Measured { verdict, detail, threshold, .. } = &mut judged {
                    *threshold += &format!(
                        "; unskewed >= {} % of the ideal bucket; no errors",
                        num(100.0 * UNDER_WARN)
                    );
                    if errors > 0 {
                        *verdict = CellVerdict::Error;
                        *detail = format!(
                            "{errors} decisions errored (first: {}); {detail}",
                            first_line(if w.errors > 0 { &w.first_error } else { &b.first_error })
                        );
                    } else if p0 < 100.0 * UNDER_WARN {
                        *verdict = worse(*verdict, CellVerdict::Fail);
                        *detail = format!("under-admits: {} % of the ideal unskewed; {detail}", num(p0));
                    }
                }
                judged
            });
            (column, out)
        })
        .collect()
}
