//! The rows of `ts-member.csv`: one per trial, open or closed loop.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Row {
    pub cell: String,
    pub trial: u64,
    pub seed: u64,
    /// `open` (scheduled arrivals) or `closed` (workers flat out).
    pub mode: String,
    pub member: String,
    pub strategy: String,
    /// Offered rate (open loop); 0 for closed loop.
    pub rate_per_s: f64,
    pub pacing: String,
    /// The sender's timer tick, ms: sends are released at the next multiple
    /// of it (0: the precise sender). Absent in runs before the tick sweep,
    /// which used the precise sender.
    #[serde(default)]
    pub sender_tick_ms: f64,
    /// Connections sending (open: driver pool; closed: workers).
    pub drivers: u64,
    pub limit: u64,
    pub window_ms: u64,
    pub duration_s: f64,
    pub offered: u64,
    pub sent: u64,
    pub admitted: u64,
    pub errors: u64,
    pub over_limit: i64,
    pub admitted_per_limit: f64,
    pub achieved_rate_per_s: f64,
    pub gap_mean_us: f64,
    pub gap_sd_us: f64,
    pub lateness_mean_us: f64,
    pub lateness_p99_us: f64,
    pub lateness_max_us: f64,
    /// Distinct Redis milliseconds among the admitted decisions.
    pub admitted_distinct_redis_ms: u64,
    /// ZCARD of the log after the trial (what the limiter thinks it admitted).
    pub zcard_end: i64,
    /// Share of sends in the same wall-clock millisecond as the send before
    /// them (from the actual send times; what `caller-ms` collapses).
    #[serde(default)]
    pub send_same_ms_share: Option<f64>,
    /// Share of decisions in the same Redis millisecond as the decision
    /// before them (from Redis's TIME; what `redis-ms` collapses).
    #[serde(default)]
    pub redis_same_ms_share: Option<f64>,
    /// The same two shares over the fill period only: the sends (Redis runs)
    /// up to the last admitted one, the part of the trial that decides what
    /// is admitted.
    #[serde(default)]
    pub fill_send_same_ms_share: Option<f64>,
    #[serde(default)]
    pub fill_redis_same_ms_share: Option<f64>,
}

limitbench_analysis::keyed!(Row);
