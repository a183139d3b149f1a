//! `fail_open`'s scorecard columns: its probe's rows, read back from a
//! strategy's probe folder, -> each column's value, verdict and detail
//! (the judge's threshold beside each). Shared pieces: `limitbench_analysis::scorecard`.

use limitbench_plot::figure::num;

use super::super::rows;
use limitbench_analysis::scorecard::{CellOutcome, ColumnOutcome, ProbeRows, failed};
use limitbench_base::error::{Error, Result};

/// The scorecard columns this experiment's probe fills, in the table's order.
pub const COLUMNS: &[&str] = &["slow-redis", "gone-redis"];

/// `slow-redis`: the fraction of the slow phase's decisions that Redis made
/// (a design of several round trips misses the deadline), at least 0.99 to
/// pass, 0.5 to warn; `gone-redis`: the fraction of the gone phase's
/// decisions that the policy made in time (fail-open admits, fail-closed
/// refuses), 1 to pass, 0.9 to warn.
pub fn judge(r: &ProbeRows) -> Vec<ColumnOutcome> {
    let columns = COLUMNS;
    let read = || -> Result<(Vec<rows::BinRow>, Vec<rows::SummaryRow>)> {
        Ok((r.read("fail-open.csv")?, r.read("fail-open-summary.csv")?))
    };
    let (bins, summary) = match read() {
        Ok(v) => v,
        Err(e) => return failed(columns, e),
    };
    let Some(s) = summary.first() else {
        return failed(
            &columns,
            Error::Other("the probe wrote no summary row".into()),
        );
    };
    let phase = |name: &'static str| bins.iter().filter(move |b| b.phase == name);
    let sum = |name: &'static str, f: fn(&rows::BinRow) -> u64| phase(name).map(f).sum::<u64>();
    let slow_n = sum("slow", |b| b.offered);
    let slow = (slow_n > 0)
        .then(|| {
            let by_redis = sum("slow", |b| b.by_redis);
            CellOutcome::at_least(
                by_redis as f64 / slow_n as f64,
                "fraction",
                0.99,
                0.5,
                format!(
                    "{slow_n} decisions (both policies) through a delay proxy (PING {} ms) with a {} ms deadline: {by_redis} decided by Redis, {} timed out",
                    num(s.slow_rtt_ms),
                    s.timeout_ms,
                    sum("slow", |b| b.timeouts)
                ),
            )
        })
        .ok_or_else(|| Error::Other("the probe's slow phase had no decision".into()));
    let gone_n = sum("gone", |b| b.offered);
    let gone = (gone_n > 0)
        .then(|| {
            let by_policy = sum("gone", |b| b.admitted_open + b.refused_closed);
            let late = sum("gone", |b| b.late_misses);
            let slowest = phase("gone").map(|b| b.latency_max_ms).fold(0.0, f64::max);
            CellOutcome::at_least(
                (by_policy - late.min(by_policy)) as f64 / gone_n as f64,
                "fraction",
                1.0,
                0.9,
                format!(
                    "server killed; {gone_n} decisions ({} fail-open, {} fail-closed, {} ms deadline): {by_policy} decided by the policy, {late} of them late (beyond the deadline + the margin); slowest {} ms",
                    phase("gone").filter(|b| b.policy == "fail-open").map(|b| b.offered).sum::<u64>(),
                    phase("gone").filter(|b| b.policy == "fail-closed").map(|b| b.offered).sum::<u64>(),
                    s.timeout_ms,
                    num(slowest)
                ),
            )
        })
        .ok_or_else(|| Error::Other("the probe's gone phase had no decision".into()));
    vec![(columns[0], slow), (columns[1], gone)]
}
