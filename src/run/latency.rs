//! Per-decision latency, recorded in HdrHistograms (1 µs to 60 s, three
//! significant digits) and stored per trial in `<experiment>-latency.csv` in
//! HdrHistogram's V2 compressed format, so percentiles can be computed over
//! any set of trials by merging, never by averaging per-trial percentiles.

use hdrhistogram::Histogram;

use limitbench_analysis::rows::LatencyRow;
use limitbench_base::error::Result;
use limitbench_base::hdr::{encode, new_histogram};
use limitbench_core::load::Event;

/// The name of the side table (`<experiment>-latency.csv`).
pub const SIDE: &str = "latency";

/// Latency (sent to reply) of every decision that got a reply.
pub fn from_events<'a>(events: impl IntoIterator<Item = &'a Event>) -> Histogram<u64> {
    let mut h = new_histogram();
    for e in events {
        let us = (e.replied_us - e.sent_us).max(1) as u64;
        h.saturating_record(us);
    }
    h
}

/// A row for `<experiment>-latency.csv`.
/// The latency row of one trial's `events` (see [`from_events`]).
pub fn events_row(cell: &str, trial: u64, strategy: &str, events: &[Event]) -> Result<LatencyRow> {
    row(cell, trial, strategy, &from_events(events))
}

pub fn row(cell: &str, trial: u64, strategy: &str, h: &Histogram<u64>) -> Result<LatencyRow> {
    Ok(LatencyRow {
        cell: cell.into(),
        trial,
        strategy: strategy.into(),
        decisions: h.len(),
        histogram_v2_deflate_base64: encode(h)?,
    })
}
