//! Which trials of an experiment ran late past its bound, from the run's
//! `schedule.csv` (written by the sweep engine, one row per trial attempt:
//! the 99th percentile of how late a 1 ms probe timer fired during the
//! trial, and the experiment's bound). A committed trial whose slip passed
//! the bound ran alone on its last attempt and was kept: its sends left
//! late, so it is no measurement of the limiter, and a claim that reads it
//! is `inconclusive` (`Measured::invalid`), never decided on it. Shared by
//! `skew` and `bursts`, whose schedule cells are their rows' cells without
//! the strategy (`<strategy>/<setting>`).

use std::collections::BTreeSet;

use limitbench_analysis::AnalysisCtx;
use limitbench_base::error::Result;

use limitbench_analysis::rows::ScheduleRow;

/// Late trials of one experiment: (schedule cell, trial) -> p99 slip and bound (us).
#[derive(Debug, Default, Clone)]
pub struct Late {
    pub trials: BTreeSet<(String, u64)>,
    pub worst: Vec<(String, u64, u64, u64)>,
}

impl Late {
    /// The late trials of `experiment` in the run (none without a schedule).
    pub fn read(ctx: &AnalysisCtx, experiment: &str) -> Result<Late> {
        let rows = ctx
            .read_csv::<ScheduleRow>("schedule.csv")?
            .unwrap_or_default();
        Ok(Late::of(&rows_late(rows, experiment)))
    }

    fn of(late: &[(String, u64, u64, u64)]) -> Late {
        Late {
            trials: late.iter().map(|x| (x.0.clone(), x.1)).collect(),
            worst: late.to_vec(),
        }
    }

    /// Whether trial `trial` of the row cell `<strategy>/<setting>` ran late.
    pub fn row_is_late(&self, row_cell: &str, trial: u64) -> bool {
        let setting = row_cell.split_once('/').map(|x| x.1).unwrap_or(row_cell);
        self.trials.contains(&(setting.to_string(), trial))
    }

    /// Why values resting on `n_late` of `n` trials are no measurement.
    pub fn reason(n_late: usize, n: usize, what: &str) -> String {
        format!(
            "{n_late} of the {n} trials behind {what} ran late past the experiment's schedule bound (schedule.csv: p99 slip of the 1 ms probe above slip_bound_us, kept because it ran alone): their sends left late, so they measure the harness, not the limiter"
        )
    }
}

/// Committed attempts of `experiment` whose p99 slip passed the bound.
fn rows_late(rows: Vec<ScheduleRow>, experiment: &str) -> Vec<(String, u64, u64, u64)> {
    rows.into_iter()
        .filter(|r| r.experiment == experiment && r.committed)
        .filter_map(|r| {
            let b = r.slip_bound_us?;
            (r.slip_p99_us > b).then_some((r.cell, r.trial, r.slip_p99_us, b))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_committed_trials_of_the_experiment_past_their_bound_are_late() {
        let row = |e: &str, c: &str, t: u64, p99: u64, b: Option<u64>, ok: bool| ScheduleRow {
            experiment: e.into(),
            cell: c.into(),
            trial: t,
            attempt: 0,
            slip_max_us: p99,
            slip_p99_us: p99,
            slip_bound_us: b,
            beside: String::new(),
            committed: ok,
            other_cpu_cores: None,
            beside_lanes_cpu_cores: None,
            other_cpu_bound: None,
            disturbed: String::new(),
        };
        let rows = vec![
            row("skew", "S1000/x5", 0, 5000, Some(3000), true),
            row("skew", "S1000/x5", 1, 2000, Some(3000), true),
            // Redone: not committed.
            row("skew", "S1000/x5", 2, 9000, Some(3000), false),
            row("bursts", "S1000/x5", 3, 9000, Some(3000), true),
            row("skew", "S0/x1", 4, 9000, None, true),
        ];
        let late = Late::of(&rows_late(rows, "skew"));
        assert!(late.row_is_late("token-bucket/S1000/x5", 0));
        assert!(!late.row_is_late("token-bucket/S1000/x5", 1));
        assert!(!late.row_is_late("token-bucket/S1000/x5", 2));
        assert!(!late.row_is_late("token-bucket/S1000/x5", 3));
        assert!(!late.row_is_late("token-bucket/S0/x1", 4));
        assert_eq!(late.trials.len(), 1);
    }
}
