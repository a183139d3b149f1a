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

/// The schedule table: one row per trial attempt (written by the sweep
/// engine, `run::sweep`).
pub const SCHEDULE_CSV: &str = "schedule.csv";

/// One row of `schedule.csv`: how late the harness's timers ran during one
/// attempt of a trial, what ran beside it, how much CPU others took, and
/// whether the attempt was disturbed past its experiment's bounds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ScheduleRow {
    pub experiment: String,
    pub cell: String,
    pub trial: u64,
    pub attempt: u64,
    /// Largest lateness of the 1 ms probe timer during the trial (us).
    pub slip_max_us: u64,
    /// Its 99th percentile (us): what the bound is checked against.
    pub slip_p99_us: u64,
    /// The bound this experiment declares (us; empty for CPU-bound).
    pub slip_bound_us: Option<u64>,
    /// Cells (of other experiments, or of other lanes of this one) that
    /// held a turn (ran a trial, a setup or a teardown) at some time during
    /// the trial, `experiment/cell`, `;`-separated; empty when it ran alone.
    pub beside: String,
    /// Committed (false: disturbed, and redone on fresh keys).
    pub committed: bool,
    /// CPU taken by processes that are not the harness's during the trial,
    /// in cores (the sampler's intervals that overlap the trial, weighted
    /// by overlap; absent in runs before it was recorded).
    #[serde(default)]
    pub other_cpu_cores: Option<f64>,
    /// CPU of the harness's other lanes beside the trial, in cores (same
    /// intervals; absent in runs before it was recorded).
    #[serde(default)]
    pub beside_lanes_cpu_cores: Option<f64>,
    /// The experiment's bound on others' CPU during a trial, in cores
    /// (absent in runs before it was recorded).
    #[serde(default)]
    pub other_cpu_bound: Option<f64>,
    /// Why the attempt was disturbed (empty: it was not): the slip past its
    /// bound, others' CPU past theirs, or lanes beside a CPU-bound cell.
    /// A committed attempt that says so was the last one and ran alone.
    #[serde(default)]
    pub disturbed: String,
    /// The machine's stolen time during the trial, in cores (the
    /// hypervisor running another guest while this one's CPUs waited: no
    /// process shows it; `/proc/stat`). It counts with `other_cpu_cores`
    /// against `other_cpu_bound`. Absent in runs before it was recorded.
    #[serde(default)]
    pub steal_cores: Option<f64>,
}

crate::keyed!(ScheduleRow);

impl ScheduleRow {
    /// Why this committed attempt is no measurement, if it is not: the
    /// recorded disturbance, or (in runs from before it was recorded) a
    /// p99 slip past the recorded bound.
    pub fn disturbance(&self) -> Option<String> {
        if !self.disturbed.is_empty() {
            return Some(self.disturbed.clone());
        }
        let b = self.slip_bound_us?;
        // The p99 is recorded as its 100 us bin's upper edge: it is past
        // the bound for certain only when the bin's lower edge is.
        (self.slip_p99_us > b + SLIP_RESOLUTION_US).then(|| {
            format!(
                "schedule late: p99 slip over {:.2} ms, past the bound {:.1} ms",
                (self.slip_p99_us - SLIP_RESOLUTION_US) as f64 / 1000.0,
                b as f64 / 1000.0
            )
        })
    }
}

/// The resolution of a recorded slip percentile (`run::parallel`'s bins):
/// a p99 of `x` means one in `(x - 100 us, x]`.
pub const SLIP_RESOLUTION_US: u64 = 100;

impl ScheduleRow {
    /// Whether this attempt's figures were recorded by a run that judged
    /// disturbance (others' CPU); older rows of CPU-bound experiments
    /// carry neither that nor a slip bound, so nothing was checked.
    pub fn checked(&self) -> bool {
        self.slip_bound_us.is_some() || self.other_cpu_cores.is_some()
    }
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
    /// The machine's stolen time (its hypervisor running another guest
    /// while this one's CPUs waited), in cores, averaged over the cell
    /// (absent in runs before it was recorded: 0).
    #[serde(default)]
    pub steal_cores_mean: f64,
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
