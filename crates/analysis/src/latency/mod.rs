//! The report's latency section: percentile plots on a nines axis (p50,
//! p90, p99, p99.9, ...), each comparing like with like (one cell a
//! panel, at most four lines), where latency is the point:
//!
//! - `focus`: WATCH/MULTI against a Lua script at the cells the WATCH
//!   claims are judged at (`retries`), and the fail-open policy's
//!   decisions against its deadline (`fail-open`);
//! - `open_loop`: open-loop senders' latency from their schedule
//!   (corrected for coordinated omission) beside latency from the send,
//!   from every per-decision history (`<experiment>-history.csv`), the
//!   cells where the correction is largest;
//! - `stalled`: the clients a stall holds up (`stalls`' PING probe,
//!   during the trim or expiry against outside it);
//! - `closed`: the closed-loop experiments per cell: every strategy at
//!   one setting of `concurrency`, and the saturated `cost` runs;
//! - `hist`: the histograms (`<experiment>-latency.csv`, one per cell and
//!   trial, merged before any percentile is read), their percentile
//!   lines and tables.
//!
//! No table pools cells: a strategy that ran in slower cells (longer
//! round trips, more workers) would look slower for where it ran, not for
//! what it is. Each figure's table lists the cells it draws.

pub mod closed;
pub mod focus;
pub mod hist;
pub mod open_loop;
pub mod stalled;

pub use hist::{MergedLatency, cdf, key_words, merge, percentiles, quantile_points};

use crate::experiments::fail_open::rows::SummaryRow;
use crate::experiments::rows::HistoryRow;
use crate::rows::LatencyRow;
use crate::{AnalysisCtx, Section};
use limitbench_base::error::{Error, Result};

/// The latency section (None when the run stored no latency).
pub fn section(ctx: &AnalysisCtx, experiments: &[&str]) -> Result<Option<Section>> {
    let read = |name: &str| -> Result<Option<Vec<LatencyRow>>> {
        if !experiments.contains(&name) {
            return Ok(None);
        }
        ctx.read_csv::<LatencyRow>(&format!("{name}-latency.csv"))
            .map_err(|e| Error::Other(format!("{name}-latency.csv: {e}")))
    };
    let mut parts: Vec<String> = Vec::new();
    let with = |file: &str, r: Result<String>| r.map_err(|e| Error::Other(format!("{file}: {e}")));
    if let Some(rows) = read("retries")? {
        let md = with("retries-latency.csv", focus::watch_vs_lua(ctx, &rows))?;
        if !md.is_empty() {
            parts.push(format!("### WATCH/MULTI against a Lua script\n\n{md}"));
        }
    }
    if let Some(rows) = read("fail-open")? {
        let summary: Vec<SummaryRow> = ctx
            .read_csv::<SummaryRow>("fail-open-summary.csv")?
            .unwrap_or_default();
        let history: Option<Vec<HistoryRow>> = ctx.read_csv("fail-open-history.csv")?;
        let md = with(
            "fail-open-latency.csv",
            focus::fail_open(ctx, &rows, &summary, history.as_deref()),
        )?;
        if !md.is_empty() {
            parts.push(format!("### Fail open or closed: the deadline\n\n{md}"));
        }
    }
    let md = with("the histories", open_loop::figure(ctx, experiments))?;
    if !md.is_empty() {
        parts.push(format!("### Open loop: latency from the schedule\n\n{md}"));
    }
    if experiments.contains(&"stalls") {
        let md = with("stalls-pings.csv", stalled::figure(ctx))?;
        if !md.is_empty() {
            parts.push(format!("### Clients held up by a stall\n\n{md}"));
        }
    }
    if let Some(rows) = read("concurrency")? {
        let md = with("concurrency-latency.csv", closed::concurrency(ctx, &rows))?;
        if !md.is_empty() {
            parts.push(format!("### Every strategy, one setting\n\n{md}"));
        }
    }
    if let Some(rows) = read("cost")? {
        let md = with("cost-latency.csv", closed::cost(ctx, &rows))?;
        if !md.is_empty() {
            parts.push(format!("### The saturated cost runs\n\n{md}"));
        }
    }
    if parts.is_empty() {
        return Ok(None);
    }
    let md = format!(
        "## Decision latency\n\nPer-decision latency by percentile, on a nines axis (p50, p90, p99, p99.9: each further nine one step right), where latency is the point; every panel draws one cell (the same workers, round trip and load for every line in it), as no comparison across cells is fair: a strategy that ran at longer round trips or more workers would look slower for where it ran. Histograms are per cell and trial (`<experiment>-latency.csv`, HdrHistogram V2), merged before reading percentiles.\n\n{}",
        parts.join("\n")
    );
    Ok(Some(Section::new("latency", md)))
}
