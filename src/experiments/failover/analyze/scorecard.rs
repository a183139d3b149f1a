//! `failover`'s scorecard columns: its probe's rows, read back from a
//! strategy's probe folder, -> each column's value, verdict and detail
//! (the judge's threshold beside each). Shared pieces: `limitbench_analysis::scorecard`.

use limitbench_plot::figure::num;

use super::super::rows;
use limitbench_analysis::scorecard::{
    CellOutcome, CellVerdict, ColumnOutcome, ProbeRows, one, under_verdict, worse,
};

/// The scorecard columns this experiment's probe fills, in the table's order.
pub const COLUMNS: &[&str] = &["failover"];

/// `failover`: admitted above the limit across the failover / limit, 0 to
/// pass, 0.05 to warn.
pub fn judge(r: &ProbeRows) -> Vec<ColumnOutcome> {
    let out = r.read::<rows::Row>("failover.csv").and_then(|rows| {
        let w = one(&rows, &format!("for `{}`", r.strategy), |x| {
            x.strategy == r.strategy
        })?;
        let over = w.admitted_total.saturating_sub(w.limit) as f64 / w.limit as f64;
        let offered = w.replies_pre + w.post_sent;
        let mut judged = CellOutcome::at_most(
            over,
            "x limit over",
            0.0,
            0.05,
            format!(
                "limit {} per hour, {} workers, replication link {} ms each way (PING {} ms), cut at the kill: {} admitted on the primary ({} replies, {} calls lost at the kill), killed and the replica promoted in {} ms, {} of {} admitted on it ({} errors): {} in all",
                w.limit,
                w.workers,
                num(w.repl_delay_ms),
                num(w.repl_rtt_ms),
                w.admitted_pre,
                w.replies_pre,
                w.lost_calls,
                num(w.failover_ms),
                w.admitted_post,
                w.post_sent,
                w.errors_post,
                w.admitted_total
            ),
        );
        if let CellOutcome::Measured { verdict, detail, threshold, .. } = &mut judged {
            *threshold += "; admits the limit (offered more than it); no errors on the promoted replica";
            let admitted = w.admitted_total as f64 / w.limit as f64;
            // (The probe cuts the delayed link at the kill, so however long
            // the promotion takes, the replica holds only what had arrived.)
            if w.errors_post > 0 {
                *verdict = CellVerdict::Error;
                *detail = format!("{} of {} decisions on the promoted replica errored; {detail}", w.errors_post, w.post_sent);
            } else if offered > w.limit && admitted < 1.0 {
                *verdict = worse(*verdict, under_verdict(admitted));
                *detail = format!(
                    "under-admits: {} admitted in all of {offered} offered, below the limit {}; {detail}",
                    w.admitted_total, w.limit
                );
            }
        }
        Ok(judged)
    });
    vec![(COLUMNS[0], out)]
}
