//! Rows that more than one experiment writes, as plain serde types: the run
//! side writes them and the analysis reads them with the same type, so the
//! columns cannot drift apart. Like every `rows.rs` this imports nothing
//! but serde; it is compiled into `limitbench-analysis` (`experiments/mod.rs`).
//!
//! - [`HistoryRow`]: one decision of an admission history
//!   (`<experiment>-history.csv`), written by `bursts` and `skew`, from
//!   which the analysis recomputes window metrics and the ideal bucket.

use serde::{Deserialize, Serialize};

/// One decision of the admission history (`<experiment>-history.csv`).
/// Times are us on the trial's clock (since the trial start).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HistoryRow {
    pub cell: String,
    pub trial: u64,
    pub worker: u32,
    pub intended_us: i64,
    pub sent_us: i64,
    pub replied_us: i64,
    /// Redis's TIME at the decision, on the trial's time axis (us since the
    /// trial start), where the strategy's script reads and returns it.
    pub redis_time_us: Option<i64>,
    pub admitted: bool,
    pub error: bool,
}

crate::keyed!(HistoryRow);
