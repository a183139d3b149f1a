//! The rows of `retries.csv`: one per trial.

use serde::{Deserialize, Serialize};

#[derive(Debug, Serialize, Deserialize, Clone)]
pub struct Row {
    pub cell: String,
    pub trial: u64,
    pub seed: u64,
    pub strategy: String,
    /// Empty for the baseline.
    pub retry_budget: Option<u32>,
    pub backoff_us: Option<u64>,
    pub budget_includes_first: Option<bool>,
    /// Backoff label (`fixed-0`, `full-jitter-10ms`); empty in rows written
    /// before it: read `backoff_us` as a fixed backoff then.
    #[serde(default)]
    pub backoff: String,
    /// `watch-get-multi` or `watch-get-multi-unwatch`; empty: the first.
    #[serde(default)]
    pub attempt: String,
    /// 0: all L requests at once; T: L arrivals uniform over T ms.
    #[serde(default)]
    pub arrival_ms: f64,
    /// Width of the proxy's uniform per-packet extra delay, per direction.
    #[serde(default)]
    pub rtt_jitter_ms: f64,
    pub workers: u64,
    pub target_rtt_ms: f64,
    pub rtt_median_us: f64,
    pub rtt_p99_us: f64,
    /// Standard deviation of the PING round trips measured before the cell.
    #[serde(default)]
    pub rtt_sd_us: f64,
    pub limit: u64,
    pub offered: u64,
    pub admitted: u64,
    pub refused_by_limit: u64,
    pub refused_by_retries: u64,
    pub aborts: u64,
    pub errors: u64,
    pub round_trips: u64,
    pub wall_ms: f64,
    pub first_error: String,
}

limitbench_analysis::keyed!(Row);
