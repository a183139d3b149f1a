//! Rows the run itself writes, beside the experiments' own: plain serde
//! types that the analysis reads too.

use serde::{Deserialize, Serialize};

/// One row of `noise.csv`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NoiseRow {
    pub experiment: String,
    pub cell: String,
    pub seconds: f64,
    /// CPU used by other processes, in cores, averaged over the cell.
    pub other_cpu_cores_mean: f64,
    /// The largest one-interval value.
    pub other_cpu_cores_max: f64,
    /// The other process that used the most CPU, "name (pid) cores".
    pub busiest_other: String,
}
