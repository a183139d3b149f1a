//! The rows of `fail-open.csv` (one per time bin of a trial) and of
//! `fail-open-summary.csv` (one per trial).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct BinRow {
    pub cell: String,
    pub trial: u64,
    pub seed: u64,
    pub policy: String,
    pub bin: u64,
    pub t_start_s: f64,
    pub phase: String,
    pub offered: u64,
    pub by_redis: u64,
    pub redis_admitted: u64,
    pub admitted_open: u64,
    pub refused_closed: u64,
    pub timeouts: u64,
    pub errors: u64,
    /// Decisions the policy made (Redis did not) that took longer than the
    /// deadline plus `late_margin_ms` (absent in older runs).
    #[serde(default)]
    pub late_misses: u64,
    pub admitted: u64,
    pub limit_per_bin: f64,
    pub over_limit: f64,
    pub latency_p50_ms: f64,
    pub latency_max_ms: f64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SummaryRow {
    pub cell: String,
    pub trial: u64,
    pub seed: u64,
    pub policy: String,
    pub strategy: String,
    pub offered_per_s: f64,
    pub limit_per_s: u64,
    pub timeout_ms: u64,
    pub normal_rtt_ms: f64,
    pub slow_rtt_ms: f64,
    pub slow_start_s: f64,
    pub gone_start_s: f64,
    pub back_start_s: f64,
    pub end_s: f64,
    /// Restart to the server answering (start_again returning).
    pub server_ready_ms: f64,
    /// Restart to the first decision Redis made again.
    pub recover_ms: f64,
    pub outage_offered: u64,
    pub outage_admitted: u64,
    pub outage_limit: f64,
    pub outage_over_limit: f64,
    pub misses: u64,
    pub decisions: u64,
}

limitbench_analysis::keyed!(BinRow, SummaryRow);
