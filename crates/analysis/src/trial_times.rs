//! A run's trials, counted and timed: that every experiment the manifest
//! says finished left rows, how many trials each cell of an
//! experiment's table holds (what `run --until-decisive` raises), and the
//! trials that took far longer than the others of their cell, from the run's
//! `trial-times.csv` ([`crate::rows::TrialTime`]): a stall outside what the
//! experiment measures. [`crate::analyze`] prints those as warnings on
//! stderr before it analyses the experiments.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::rows::{AnyRow, TRIAL_TIMES_CSV, TrialTime};
use limitbench_base::error::Result;

/// An experiment the manifest says finished (`outcome: done`) whose table
/// holds no row is a broken input, not a quiet `not-run`.
pub fn finished_experiments_have_rows(run_dir: &Path) -> Result<()> {
    let Some(exps) = manifest_experiments(run_dir) else {
        return Ok(());
    };
    let mut empty = Vec::new();
    for (name, e) in exps {
        if e.get("outcome").and_then(|o| o.as_str()) != Some("done") {
            continue;
        }
        let file = format!("{name}.csv");
        match crate::read_table::<AnyRow>(run_dir, &file)? {
            None => empty.push(format!("{file} is missing")),
            Some((path, rows, _torn)) if rows.is_empty() => {
                empty.push(format!("{} holds no row", path.display()))
            }
            Some(_) => {}
        }
    }
    if empty.is_empty() {
        Ok(())
    } else {
        Err(limitbench_base::error::Error::Other(format!(
            "the manifest of {} says these experiments finished, but: {}; the run folder is incomplete or was edited",
            run_dir.display(),
            empty.join("; ")
        )))
    }
}

/// `manifest.json`'s `experiments` table (None without a readable one).
fn manifest_experiments(run_dir: &Path) -> Option<serde_json::Map<String, serde_json::Value>> {
    let text = std::fs::read_to_string(run_dir.join("manifest.json")).ok()?;
    let m: serde_json::Value = serde_json::from_str(&text).ok()?;
    m.get("experiments")?.as_object().cloned()
}

/// The (cell, trial) of any experiment's row.
#[derive(serde::Deserialize)]
struct CellTrial {
    cell: String,
    trial: u64,
}

/// The fewest trials any cell of `experiment`'s table (`<experiment>.csv`,
/// plain or compressed) holds; 0 when the table does not exist or is empty.
/// `run --until-decisive` raises its floor from the fewest, not the most:
/// an experiment whose cells run different counts (memory's CPU cells one
/// window each beside fills of ten) is capped only when every cell is.
pub fn fewest_trials_per_cell(run_dir: &Path, experiment: &str) -> Result<u64> {
    Ok(trials_per_cell(run_dir, experiment)?
        .values()
        .copied()
        .min()
        .unwrap_or(0))
}

/// The distinct trials each cell of `experiment` holds, by cell id: the
/// cells its table's rows name, and the cells the sweep ran
/// (`trial-times.csv`; they differ where one cell writes rows under other
/// ids, as cost's cell of rounds writes a row per variant). Empty when
/// neither table exists.
pub fn trials_per_cell(run_dir: &Path, experiment: &str) -> Result<BTreeMap<String, u64>> {
    let mut per: BTreeMap<String, BTreeSet<u64>> = BTreeMap::new();
    let table = format!("{experiment}.csv");
    if let Some((_, rows, _torn)) = crate::read_table::<CellTrial>(run_dir, &table)? {
        for r in rows {
            per.entry(r.cell).or_default().insert(r.trial);
        }
    }
    if let Some((_, rows, _torn)) = crate::read_table::<TrialTime>(run_dir, TRIAL_TIMES_CSV)? {
        for t in rows.into_iter().filter(|t| t.experiment == experiment) {
            per.entry(t.cell).or_default().insert(t.trial);
        }
    }
    Ok(per.into_iter().map(|(c, t)| (c, t.len() as u64)).collect())
}

/// The median wall time of a trial, in ms, per (experiment, cell) and per
/// experiment (cell ""), from `trial-times.csv` (empty without one): what
/// `run --until-decisive` estimates a round's cost from.
pub fn median_trial_ms(run_dir: &Path) -> Result<BTreeMap<(String, String), f64>> {
    let Some((_, rows, _torn)) = crate::read_table::<TrialTime>(run_dir, TRIAL_TIMES_CSV)? else {
        return Ok(BTreeMap::new());
    };
    let mut by: BTreeMap<(String, String), Vec<f64>> = BTreeMap::new();
    for t in rows {
        by.entry((t.experiment.clone(), String::new()))
            .or_default()
            .push(t.wall_ms);
        by.entry((t.experiment, t.cell))
            .or_default()
            .push(t.wall_ms);
    }
    Ok(by
        .into_iter()
        .map(|(k, v)| (k, crate::stats::quantile(&v, 0.5)))
        .collect())
}

/// The time an experiment spends outside its trials, per cell, in ms, by
/// experiment: its seconds in `manifest.json` (summed over its sessions)
/// less the wall time of its trials (`trial-times.csv`), over the cells
/// those trials ran in, never below 0. Starting servers, loading scripts,
/// filling keys and settling happen once per cell a session runs, so a
/// round that adds trials to `k` cells costs about `k` times this beside
/// the trials (`run --until-decisive`'s estimate; without it a quick run's
/// round of 2026-12-03 took 87 s on a 60 s budget). Empty without either
/// file.
pub fn setup_ms_per_cell(run_dir: &Path) -> Result<BTreeMap<String, f64>> {
    let Some(exps) = manifest_experiments(run_dir) else {
        return Ok(BTreeMap::new());
    };
    let Some((_, rows, _torn)) = crate::read_table::<TrialTime>(run_dir, TRIAL_TIMES_CSV)? else {
        return Ok(BTreeMap::new());
    };
    let mut by: BTreeMap<String, (f64, BTreeSet<String>)> = BTreeMap::new();
    for t in rows {
        let e = by.entry(t.experiment).or_default();
        e.0 += t.wall_ms;
        e.1.insert(t.cell);
    }
    let mut out = BTreeMap::new();
    for (name, (trial_ms, cells)) in by {
        let Some(seconds) = exps
            .get(&name)
            .and_then(|e| e.get("seconds"))
            .and_then(|s| s.as_f64())
        else {
            continue;
        };
        let per = (seconds * 1000.0 - trial_ms).max(0.0) / cells.len().max(1) as f64;
        out.insert(name, per);
    }
    Ok(out)
}

/// A trial over this many times its cell's median is flagged by `analyze`.
pub const OUTLIER_FACTOR: f64 = 5.0;

/// Trials whose wall time is over [`OUTLIER_FACTOR`] times the median of
/// their cell and over a second longer (cells with at least 3 trials), as
/// warnings for `analyze`. No `trial-times.csv` (plain or compressed): none.
pub fn outliers(run_dir: &Path) -> Result<Vec<String>> {
    // A torn last line (a killed run) is no trial's time: it is left out.
    let Some((_, rows, _torn)) = crate::read_table::<TrialTime>(run_dir, TRIAL_TIMES_CSV)? else {
        return Ok(vec![]);
    };
    let mut by_cell: BTreeMap<(String, String), Vec<(u64, f64)>> = BTreeMap::new();
    for t in rows {
        by_cell
            .entry((t.experiment, t.cell))
            .or_default()
            .push((t.trial, t.wall_ms));
    }
    let mut out = Vec::new();
    for ((exp, cell), v) in by_cell {
        if v.len() < 3 {
            continue;
        }
        let mut w: Vec<f64> = v.iter().map(|x| x.1).collect();
        w.sort_by(|a, b| a.total_cmp(b));
        let median = w[w.len() / 2];
        for (trial, ms) in v {
            if ms > median * OUTLIER_FACTOR && ms - median > 1000.0 {
                out.push(format!(
                    "{exp}: trial {trial} of cell `{cell}` took {:.1} s, {:.0}x its cell's median {:.1} s (a stall outside what the experiment measures?)",
                    ms / 1000.0,
                    ms / median,
                    median / 1000.0
                ));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finished_experiment_without_rows_is_a_broken_input() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(
            d.join("manifest.json"),
            r#"{"experiments": {"concurrency": {"outcome": "done"}, "retries": {"outcome": "failed"}}}"#,
        )
        .unwrap();
        let e = finished_experiments_have_rows(d).unwrap_err().to_string();
        assert!(e.contains("concurrency.csv is missing"), "{e}");
        // A header alone, or a header and a torn line, is no row.
        std::fs::write(d.join("concurrency.csv"), "cell,trial\na,0").unwrap();
        let e = finished_experiments_have_rows(d).unwrap_err().to_string();
        assert!(e.contains("concurrency.csv holds no row"), "{e}");
        // A row: fine; the failed experiment's missing table is not asked for.
        std::fs::write(d.join("concurrency.csv"), "cell,trial\na,0\n").unwrap();
        finished_experiments_have_rows(d).unwrap();
    }

    #[test]
    fn a_trial_far_slower_than_its_cell_is_flagged() {
        let dir = tempfile::tempdir().unwrap();
        let mut text = String::from("experiment,cell,trial,wall_ms\n");
        for (t, ms) in [1300.0, 1350.0, 1400.0, 91351.0].iter().enumerate() {
            text += &format!("concurrency,token-bucket/c8/rtt0,{t},{ms}\n");
        }
        // A cell of fast trials with one twice as slow: not a stall.
        for (t, ms) in [10.0, 11.0, 22.0].iter().enumerate() {
            text += &format!("concurrency,gcra/c1/rtt0,{t},{ms}\n");
        }
        std::fs::write(dir.path().join(TRIAL_TIMES_CSV), text).unwrap();
        let w = outliers(dir.path()).unwrap();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("trial 3 of cell `token-bucket/c8/rtt0` took 91.4 s"),
            "{w:?}"
        );
        assert!(outliers(&dir.path().join("none")).unwrap().is_empty());
    }
    #[test]
    fn setup_is_the_experiments_time_outside_its_trials_per_cell() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        assert!(setup_ms_per_cell(d).unwrap().is_empty());
        std::fs::write(
            d.join("manifest.json"),
            r#"{"experiments": {"cluster": {"seconds": 10.0}, "cost": {"seconds": 1.0}}}"#,
        )
        .unwrap();
        let mut text = String::from("experiment,cell,trial,wall_ms\n");
        // cluster: 4 s of trials in 2 cells of a 10 s experiment.
        for (c, t, ms) in [("a", 0, 1000.0), ("a", 1, 1000.0), ("b", 0, 2000.0)] {
            text += &format!("cluster,{c},{t},{ms}\n");
        }
        // cost: trials longer than its seconds (rounded): never below 0.
        text += "cost,rounds-1,0,1500\n";
        // stalls: no seconds in the manifest: no estimate.
        text += "stalls,s,0,10\n";
        std::fs::write(d.join(TRIAL_TIMES_CSV), text).unwrap();
        let s = setup_ms_per_cell(d).unwrap();
        assert_eq!(s.get("cluster").copied(), Some(3000.0), "{s:?}");
        assert_eq!(s.get("cost").copied(), Some(0.0), "{s:?}");
        assert!(!s.contains_key("stalls"), "{s:?}");
    }
}
