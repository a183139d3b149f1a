//! The rows of `bursts.csv` (one per strategy and trial) and of its side
//! table `bursts-history.csv` (every decision, the shared [`HistoryRow`]).

use serde::{Deserialize, Serialize};

pub use limitbench_analysis::experiments::rows::HistoryRow;

#[derive(Debug, Serialize, Deserialize, Clone)]
pub struct Row {
    pub cell: String,
    pub trial: u64,
    pub seed: u64,
    pub strategy: String,
    pub pattern: String,
    /// `lead_ms` for straddle, `phase_ms` for the burst patterns.
    pub phase_ms: Option<f64>,
    /// `fixed` (the variant's phase) or `uniform` (drawn per trial); empty
    /// in runs from before the uniform draw existed, which were all fixed.
    #[serde(default)]
    pub phase_draw: String,
    /// Traffic rate after the burst (or of steady/poisson), x the limit per window.
    pub rate_x: Option<f64>,
    pub limit: u64,
    pub window_ms: u64,
    /// Where the aligned window boundary fell on the trial clock (us).
    pub boundary_us: Option<i64>,
    pub redis_clock_offset_us: i64,
    pub offered: u64,
    pub admitted: u64,
    pub errors: u64,
    /// Which clock the history's admission times for the window metric use.
    pub clock: String,
    pub lateness_p99_us: f64,
    pub lateness_max_us: f64,
    pub drivers: u64,
    pub parallel_strategies: u64,
    pub first_error: String,
    /// The headline metric: the most admitted in any sliding window of
    /// `window_ms` on `clock`, from this trial's history (the analysis
    /// recomputes it from `bursts-history.csv`); empty in older runs.
    #[serde(default)]
    pub max_in_window: Option<u64>,
}

limitbench_analysis::keyed!(Row);
