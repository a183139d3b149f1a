//! The rows of `concurrency.csv`: one per trial.

use serde::{Deserialize, Serialize};

#[derive(Debug, Serialize, Deserialize, Clone)]
pub struct Row {
    pub cell: String,
    pub trial: u64,
    pub seed: u64,
    pub strategy: String,
    pub kind: String,
    pub atomic_design: bool,
    pub workers: u64,
    pub target_rtt_ms: f64,
    pub rtt_median_us: f64,
    pub rtt_p99_us: f64,
    /// Standard deviation of the PING round trips measured before the cell.
    #[serde(default)]
    pub rtt_sd_us: f64,
    /// Width of the proxy's uniform per-packet extra delay, per direction
    /// (0 in rows written before the jitter sweep).
    #[serde(default)]
    pub rtt_jitter_ms: f64,
    pub one_way_delay_us: f64,
    pub limit: u64,
    pub window_ms: u64,
    pub offered: u64,
    pub admitted: u64,
    pub over_admitted: i64,
    pub errors: u64,
    pub aborts: u64,
    pub retries_exhausted: u64,
    pub round_trips: u64,
    pub wall_ms: f64,
    pub first_error: String,
}

limitbench_analysis::keyed!(Row);
