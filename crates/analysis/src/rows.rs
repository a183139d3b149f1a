//! Rows the run itself writes, beside the experiments' own: plain serde
//! types that the analysis reads too, and [`Keyed`], which every row type
//! implements (its `cell` column is how a resumed run knows what is
//! committed, and how the analysis groups trials).

use serde::{Deserialize, Serialize};

/// Any row of any table, its fields left unread: for counting rows with the
/// one reader (`crate::read_table`).
#[derive(Deserialize)]
pub struct AnyRow {}

/// A row that belongs to a (cell, trial): every main and side row has a
/// `cell` column.
pub trait Keyed {
    fn cell(&self) -> &str;
}

/// Implements [`Keyed`] for row types with a `cell: String` field.
#[macro_export]
macro_rules! keyed {
    ($($t:ty),+ $(,)?) => {
        $(impl $crate::rows::Keyed for $t {
            fn cell(&self) -> &str {
                &self.cell
            }
        })+
    };
}

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
    /// CPU of the processes the harness's other lanes started (their
    /// servers and children), in cores, averaged over the cell (absent in
    /// runs before it was recorded: 0).
    #[serde(default)]
    pub beside_lanes_cpu_cores_mean: f64,
    /// How many other lanes ran at some time during the cell.
    #[serde(default)]
    pub beside_lanes: u64,
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

/// The run's record of how long each committed trial took (one
/// [`TrialTime`] a row), which [`crate::trial_times::outliers`] reads.
pub const TRIAL_TIMES_CSV: &str = "trial-times.csv";

/// One row of `trial-times.csv`: a committed trial's wall time (setup
/// excluded), written by the run's sweep engine.
#[derive(Debug, Serialize, Deserialize)]
pub struct TrialTime {
    pub experiment: String,
    pub cell: String,
    pub trial: u64,
    pub wall_ms: f64,
}

#[cfg(test)]
mod tests {
    use super::NoiseRow;

    #[test]
    fn a_noise_table_written_before_the_lane_columns_still_reads() {
        let old = "experiment,cell,seconds,other_cpu_cores_mean,other_cpu_cores_max,busiest_other\n\
                   cost,rounds,10.9,1.01,1.2,redis-benchmark (7) 1.01\n";
        let rows: Vec<NoiseRow> = csv::Reader::from_reader(old.as_bytes())
            .deserialize()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(rows[0].other_cpu_cores_mean, 1.01);
        assert_eq!(rows[0].busiest_other, "redis-benchmark (7) 1.01");
        assert_eq!(
            (rows[0].beside_lanes, rows[0].beside_lanes_cpu_cores_mean),
            (0, 0.0)
        );
        let new = old
            .replace(
                "busiest_other\n",
                "busiest_other,beside_lanes_cpu_cores_mean,beside_lanes\n",
            )
            .replace("1.01\n", "1.01,0.25,3\n");
        let rows: Vec<NoiseRow> = csv::Reader::from_reader(new.as_bytes())
            .deserialize()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(
            (rows[0].beside_lanes, rows[0].beside_lanes_cpu_cores_mean),
            (3, 0.25)
        );
    }
}
