//! The rows of `skew.csv` (one per strategy and trial) and of its side
//! table `skew-history.csv` (every decision, the shared [`HistoryRow`]).

use serde::{Deserialize, Serialize};

pub use limitbench_analysis::experiments::rows::HistoryRow;

#[derive(Debug, Serialize, Deserialize, Clone)]
pub struct Row {
    pub cell: String,
    pub trial: u64,
    pub seed: u64,
    pub strategy: String,
    pub skew_ms: f64,
    pub servers: u64,
    pub clocks: String,
    /// The servers' clock offsets, us, `;`-separated.
    pub offsets_us: String,
    pub load_x: f64,
    pub arrivals: String,
    /// `random` or `round-robin`: which server sends each arrival.
    pub assign: String,
    pub capacity: u64,
    pub rate_per_s: f64,
    pub duration_ms: f64,
    pub offered: u64,
    pub admitted: u64,
    pub errors: u64,
    pub achieved_rate_per_s: f64,
    pub lateness_p99_us: f64,
    pub first_error: String,
    /// The trial clock's start on the system clock (Unix us): Redis's TIME
    /// in the history is relative to it, and the script truncates the
    /// absolute time to ms, so A4.3's replay needs its sub-ms phase. Empty
    /// in runs from before it was recorded.
    #[serde(default)]
    pub start_unix_us: Option<i64>,
}

limitbench_analysis::keyed!(Row);
