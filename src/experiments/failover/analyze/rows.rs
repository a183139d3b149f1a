//! The rows of `failover.csv`: one per trial.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Row {
    pub cell: String,
    pub trial: u64,
    pub seed: u64,
    pub strategy: String,
    pub wait: bool,
    pub repl_delay_ms: f64,
    /// Measured PING round trip through the replication link's proxy (0 if direct).
    pub repl_rtt_ms: f64,
    pub limit: u64,
    pub workers: u64,
    /// Decisions with a reply from the primary.
    pub replies_pre: u64,
    /// Admissions the clients counted on the primary (with WAIT: confirmed ones).
    pub admitted_pre: u64,
    /// Admissions on the primary whose WAIT found no replica in time (counted as refused).
    pub unconfirmed_pre: u64,
    /// Calls that failed because the primary died under them.
    pub lost_calls: u64,
    pub post_sent: u64,
    pub admitted_post: u64,
    pub errors_post: u64,
    pub admitted_total: u64,
    pub over_admitted: i64,
    /// The limiter's use as the promoted replica saw it (count, or capacity - tokens).
    pub replica_used_at_promotion: f64,
    pub failover_ms: f64,
    pub decision_rtt_mean_ms: f64,
}

limitbench_analysis::keyed!(Row);
