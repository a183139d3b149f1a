//! The rows of `baseline.csv`: one per trial.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Row {
    pub cell: String,
    pub trial: u64,
    pub seed: u64,
    /// A strategy's name, or `PING` (the wire alone).
    pub target: String,
    pub samples: u64,
    pub round_trip_median_us: f64,
    pub round_trip_p99_us: f64,
    pub errors: u64,
    /// The first failed call's error (empty when none failed; absent in
    /// runs before it was recorded).
    #[serde(default)]
    pub first_error: String,
}

limitbench_analysis::keyed!(Row);
