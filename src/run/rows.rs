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

/// One row of `<experiment>-latency.csv`: the per-decision latencies (sent
/// to reply, µs) of one strategy in one trial, as an HdrHistogram in its V2
/// compressed format, base64. The analysis merges histograms across trials
/// before it reads percentiles (percentiles do not average).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LatencyRow {
    pub cell: String,
    pub trial: u64,
    pub strategy: String,
    pub decisions: u64,
    pub histogram_v2_deflate_base64: String,
}

crate::keyed!(LatencyRow);
