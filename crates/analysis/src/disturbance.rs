//! Which cells a run measured while disturbed, from `schedule.csv` (one row
//! per trial attempt, [`ScheduleRow`]), and the step that makes every claim
//! resting on such a cell `inconclusive (disturbed: ...)`.
//!
//! A committed row with a disturbance is the last attempt of a trial, kept
//! after its redos and still disturbed (`ScheduleRow::disturbance`: the
//! recorded reason, or in runs before it was recorded a p99 slip past the
//! bound). Cells are the schedule's (`Sweep::cell_id`); an experiment whose
//! rows carry a strategy before it (bursts, skew: `<strategy>/<schedule
//! cell>`) is matched by dropping that first segment.
//!
//! What a claim rests on is `Measured::rests_on`: the cells behind its
//! values, as the schedule names them or as rows carrying a strategy do
//! (`<experiment>::<cell>` for another experiment's). A claim that names
//! none rests, conservatively, on every cell of its experiment, and its
//! reason says so. A swept [`crate::claims::Alternative`] naming its own
//! cells is checked on those (it then neither reproduces nor counts as a
//! finding); one naming none is left to the claim's main values. A value
//! that is no measurement of any cell (a trial count, a run time: A0, B0)
//! says so (`Measured::no_cells`) and no disturbance touches it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use limitbench_base::error::Result;

use crate::claims::{ClaimSpec, Judged, Measured};
use crate::rows::{SCHEDULE_CSV, ScheduleRow};

/// How a disturbance reason starts (the judge words such a claim
/// `inconclusive (disturbed: ...)`).
pub const DISTURBED: &str = "disturbed: ";

/// How a rested-on cell names another experiment's cell:
/// `concurrency::watch-multi/c64/rtt1`.
pub const OTHER: &str = "::";

/// The committed trials of one schedule cell and those that were disturbed.
#[derive(Debug, Clone, Default)]
pub struct CellDisturbance {
    pub committed: usize,
    /// Trial indices whose committed attempt was disturbed.
    pub disturbed: BTreeSet<u64>,
    /// The worst reason (largest excess over its bound), as the row says it.
    pub worst: String,
    worst_excess: f64,
    /// Committed trials recorded by a run that judged nothing (an older
    /// CPU-bound run: no slip bound, no others' CPU): not checked.
    pub unchecked: usize,
}

/// Every experiment's schedule cells and their disturbed trials.
#[derive(Debug, Clone, Default)]
pub struct Disturbances {
    /// (experiment, schedule cell) -> its committed trials.
    pub cells: BTreeMap<(String, String), CellDisturbance>,
    /// Whether the run wrote a schedule at all.
    pub present: bool,
}

/// How far past its bound an attempt was (a ratio; 1 when no bound tells).
fn excess(r: &ScheduleRow) -> f64 {
    let slip = r
        .slip_bound_us
        .filter(|b| *b > 0)
        .map(|b| r.slip_p99_us as f64 / b as f64)
        .unwrap_or(0.0);
    let cpu = match (r.other_cpu_cores, r.other_cpu_bound) {
        (Some(c), Some(b)) if b > 0.0 => (c + r.steal_cores.unwrap_or(0.0)) / b,
        _ => 0.0,
    };
    slip.max(cpu).max(1.0)
}

impl Disturbances {
    /// `schedule.csv` of `run_dir` (none: an empty set, `present` false).
    pub fn read(run_dir: &Path) -> Result<Disturbances> {
        Ok(
            match crate::read_table::<ScheduleRow>(run_dir, SCHEDULE_CSV)? {
                Some((_, rows, _)) => Disturbances::of(&rows),
                None => Disturbances::default(),
            },
        )
    }

    /// From the rows; only committed attempts count.
    pub fn of(rows: &[ScheduleRow]) -> Disturbances {
        let mut cells: BTreeMap<(String, String), CellDisturbance> = BTreeMap::new();
        for r in rows.iter().filter(|r| r.committed) {
            let c = cells
                .entry((r.experiment.clone(), r.cell.clone()))
                .or_default();
            c.committed += 1;
            if !r.checked() {
                c.unchecked += 1;
            }
            if let Some(why) = r.disturbance() {
                c.disturbed.insert(r.trial);
                let x = excess(r);
                if c.worst.is_empty() || x > c.worst_excess {
                    c.worst = why;
                    c.worst_excess = x;
                }
            }
        }
        Disturbances {
            cells,
            present: true,
        }
    }

    /// The schedule cell a row cell of `experiment` was measured in: the
    /// same id, else the id without its first segment (`<strategy>/...`).
    pub fn schedule_cell<'a>(&self, experiment: &str, row_cell: &'a str) -> Option<&'a str> {
        let has = |c: &str| {
            self.cells
                .contains_key(&(experiment.to_string(), c.to_string()))
        };
        if has(row_cell) {
            return Some(row_cell);
        }
        row_cell.split_once('/').map(|x| x.1).filter(|c| has(c))
    }

    /// Whether trial `trial` of row cell `row_cell` was disturbed.
    pub fn trial_disturbed(&self, experiment: &str, row_cell: &str, trial: u64) -> bool {
        self.schedule_cell(experiment, row_cell)
            .and_then(|c| self.cells.get(&(experiment.to_string(), c.to_string())))
            .is_some_and(|d| d.disturbed.contains(&trial))
    }

    /// The disturbed cells of `experiment` (schedule cell ids).
    pub fn disturbed_cells(&self, experiment: &str) -> Vec<(&str, &CellDisturbance)> {
        self.cells
            .iter()
            .filter(|((e, _), d)| e == experiment && !d.disturbed.is_empty())
            .map(|((_, c), d)| (c.as_str(), d))
            .collect()
    }

    /// The (experiment, schedule cell) a rested-on cell names: a row cell
    /// of `experiment`, or `<other experiment>::<row cell>` for a claim
    /// that reads another experiment's rows too (A2.3).
    fn resolve<'a>(&self, experiment: &'a str, cell: &'a str) -> Option<(&'a str, &'a str)> {
        let (e, rc) = cell.split_once(OTHER).unwrap_or((experiment, cell));
        self.schedule_cell(e, rc).map(|sc| (e, sc))
    }

    /// The cells a claim of `experiment` rests on, with their figures: the
    /// row cells `cells` names, as schedule cells (a name the schedule does
    /// not know is left out), or every cell of the experiment when it names
    /// none.
    fn rested_on<'a>(
        &'a self,
        experiment: &'a str,
        cells: &'a [String],
    ) -> BTreeMap<(&'a str, &'a str), &'a CellDisturbance> {
        if cells.is_empty() {
            return self
                .cells
                .iter()
                .filter(|((e, _), _)| e == experiment)
                .map(|((e, c), d)| ((e.as_str(), c.as_str()), d))
                .collect();
        }
        cells
            .iter()
            .filter_map(|rc| {
                let (e, sc) = self.resolve(experiment, rc)?;
                Some(((e, sc), &self.cells[&(e.to_string(), sc.to_string())]))
            })
            .collect()
    }

    /// Whether a rested-on cell of a claim of `experiment` names a cell of
    /// the schedule (a name that does not is never found disturbed).
    pub fn names_a_cell(&self, experiment: &str, cell: &str) -> bool {
        self.resolve(experiment, cell).is_some()
    }

    /// Why values resting on `cells` (row cells; empty: every cell of the
    /// experiment) are no measurement, if any of them was disturbed:
    /// `disturbed: 7 committed trial(s) in 1 cell(s) ...: 7 of 10 committed
    /// trials of concurrency cell c64/rtt1 (worst reason); ...`.
    pub fn reason(&self, experiment: &str, cells: &[String]) -> Option<String> {
        let hit: BTreeMap<(&str, &str), &CellDisturbance> = self
            .rested_on(experiment, cells)
            .into_iter()
            .filter(|(_, d)| !d.disturbed.is_empty())
            .collect();
        if hit.is_empty() {
            return None;
        }
        let trials: usize = hit.values().map(|d| d.disturbed.len()).sum();
        let mut by_worst: Vec<(&(&str, &str), &&CellDisturbance)> = hit.iter().collect();
        by_worst.sort_by(|a, b| b.1.worst_excess.total_cmp(&a.1.worst_excess));
        let shown: Vec<String> = by_worst
            .iter()
            .take(3)
            .map(|((e, c), d)| {
                format!(
                    "{} of {} committed trials of {e} cell {c} ({})",
                    d.disturbed.len(),
                    d.committed,
                    d.worst
                )
            })
            .collect();
        let more = if hit.len() > 3 {
            format!("; and {} more cells", hit.len() - 3)
        } else {
            String::new()
        };
        let scope = if cells.is_empty() {
            "; the claim names no cells, so every cell of its experiment counts"
        } else {
            ""
        };
        Some(format!(
            "{DISTURBED}{trials} committed trial(s) in {} cell(s) it rests on were disturbed and kept after their redos: {}{more}{scope}",
            hit.len(),
            shown.join("; ")
        ))
    }

    /// The committed trials of the cells `cells` rests on (every cell of
    /// the experiment when none are named) that nothing checked, if any.
    pub fn unchecked(&self, experiment: &str, cells: &[String]) -> Option<String> {
        let seen: Vec<usize> = self
            .rested_on(experiment, cells)
            .values()
            .map(|d| d.unchecked)
            .filter(|u| *u > 0)
            .collect();
        let n: usize = seen.iter().sum();
        (n > 0).then(|| {
            format!(
                "{n} committed trial(s) in {} of its cells were recorded before runs judged disturbance (no schedule bound, no others' CPU): not checked",
                seen.len()
            )
        })
    }

    /// The generic step between the analyzers and the judge: every claim
    /// (and every swept setting naming its own cells) resting on a cell
    /// with disturbed committed trials is marked invalid with the reason.
    pub fn apply(&self, claims: &[ClaimSpec], measured: &mut [Measured]) {
        for m in measured.iter_mut().filter(|m| !m.no_cells) {
            let Some(c) = claims.iter().find(|c| c.id == m.id) else {
                continue;
            };
            if let Some(u) = self.unchecked(&c.experiment, &m.rests_on) {
                let sep = if m.note.is_empty() { "" } else { " " };
                m.note += &format!("{sep}{u}.");
            }
            if let Some(why) = self.reason(&c.experiment, &m.rests_on) {
                if c.disturbance.as_deref() == Some("still-valid") {
                    // Counted, and said: the claim's basis says why.
                    let counted = why.trim_start_matches(DISTURBED);
                    let sep = if m.note.is_empty() { "" } else { " " };
                    m.note += &format!(
                        "{sep}Disturbed trials counted ({}): {counted}.",
                        c.disturbance_basis.trim_end_matches('.')
                    );
                } else {
                    m.invalid.push(why);
                }
            }
            for a in m.sweep.iter_mut().filter(|a| !a.rests_on.is_empty()) {
                if let Some(why) = self.reason(&c.experiment, &a.rests_on) {
                    a.invalid.push(why);
                }
            }
        }
    }

    /// Per disturbed cell, for the report's summary: the experiment, the
    /// cell, `disturbed/committed` trials, the claims whose main values
    /// rest on it (made inconclusive) and those only some swept settings
    /// of which do (those settings reproduce nothing, the claim stands).
    pub fn touched(&self, rows: &[Judged]) -> Vec<Touched> {
        let mut out = Vec::new();
        for ((e, sc), d) in self.cells.iter().filter(|(_, d)| !d.disturbed.is_empty()) {
            let on = |x: &str, cells: &[String]| {
                cells
                    .iter()
                    .any(|rc| self.resolve(x, rc) == Some((e.as_str(), sc.as_str())))
            };
            let mut t = Touched {
                experiment: e.clone(),
                cell: sc.clone(),
                trials: format!("{}/{}", d.disturbed.len(), d.committed),
                ..Default::default()
            };
            for j in rows {
                let Some(m) = j.measured.as_ref().filter(|m| !m.no_cells) else {
                    continue;
                };
                let x = j.spec.experiment.as_str();
                if (m.rests_on.is_empty() && x == e) || on(x, &m.rests_on) {
                    if j.spec.disturbance.as_deref() == Some("still-valid") {
                        t.counted.push(j.spec.id.clone());
                    } else {
                        t.main.push(j.spec.id.clone());
                    }
                } else if m.sweep.iter().any(|a| on(x, &a.rests_on)) {
                    t.swept.push(j.spec.id.clone());
                }
            }
            out.push(t);
        }
        out
    }
}

/// One disturbed cell and the claims resting on it ([`Disturbances::touched`]).
#[derive(Debug, Clone, Default)]
pub struct Touched {
    pub experiment: String,
    pub cell: String,
    pub trials: String,
    pub main: Vec<String>,
    pub swept: Vec<String>,
    /// Claims resting on it that count disturbed trials (claims.toml
    /// `disturbance = "still-valid"`: their basis says why a disturbance
    /// cannot make them pass), so they stay judged.
    pub counted: Vec<String>,
}

/// The report's opening lines on disturbance: a run started on a busy
/// machine (the manifest's `preflight` with `allowed_busy`), then the
/// disturbed cells and the claims they touch (empty when neither).
pub fn summary_text(manifest: &serde_json::Value, d: &Disturbances, rows: &[Judged]) -> String {
    let mut out = String::new();
    let p = &manifest["preflight"];
    if p["allowed_busy"].as_bool() == Some(true) {
        let f = |k: &str| {
            p[k].as_f64()
                .map(|v| format!("{v:.2}"))
                .unwrap_or_else(|| "?".into())
        };
        out += &format!(
            "**This run was started on a busy machine** (`--allow-busy`): before it began, other processes took {} cores, above the preflight's bound of {} cores (busiest: {}).\n\n",
            f("other_cpu_cores"),
            f("bound_cores"),
            p["busiest_other"].as_str().unwrap_or("?")
        );
    }
    let touched = d.touched(rows);
    if touched.is_empty() {
        return out;
    }
    let trials: usize = d.cells.values().map(|c| c.disturbed.len()).sum();
    let mut main: BTreeSet<&str> = BTreeSet::new();
    let mut swept: BTreeSet<&str> = BTreeSet::new();
    let mut counted: BTreeSet<&str> = BTreeSet::new();
    for t in &touched {
        main.extend(t.main.iter().map(String::as_str));
        swept.extend(t.swept.iter().map(String::as_str));
        counted.extend(t.counted.iter().map(String::as_str));
    }
    let swept: Vec<&str> = swept.difference(&main).copied().collect();
    let mut per_exp: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for t in &touched {
        per_exp
            .entry(&t.experiment)
            .or_default()
            .push(format!("{} ({})", t.cell, t.trials));
    }
    out += &format!(
        "**Disturbed cells:** {trials} committed trial(s) in {} cell(s) were disturbed and kept after their redos (`schedule.csv`), so every claim resting on them is `inconclusive (disturbed)`: {}.{} ",
        touched.len(),
        if main.is_empty() {
            "none of the claims".to_string()
        } else {
            main.iter().copied().collect::<Vec<_>>().join(", ")
        },
        if swept.is_empty() {
            String::new()
        } else {
            format!(
                " Only swept settings of {} rest on them (those settings reproduce nothing; the claims stand on their other cells).",
                swept.join(", ")
            )
        }
    );
    if !counted.is_empty() {
        out += &format!(
            "{} rest on them too and stay judged: each counts its disturbed trials (a safety property whose violation a late schedule can neither create nor hide: its `disturbance_basis` in claims.toml). ",
            counted.iter().copied().collect::<Vec<_>>().join(", ")
        );
    }
    let cells: Vec<String> = per_exp
        .iter()
        .map(|(e, cs)| {
            let shown: Vec<&str> = cs.iter().take(8).map(String::as_str).collect();
            let more = if cs.len() > 8 {
                format!(" and {} more", cs.len() - 8)
            } else {
                String::new()
            };
            format!("{e}: {}{more}", shown.join(", "))
        })
        .collect();
    out += &format!(
        "Cells (disturbed/committed trials): {}.\n\n",
        cells.join("; ")
    );
    let blind: Vec<&str> = rows
        .iter()
        .filter(|j| {
            j.measured
                .as_ref()
                .is_some_and(|m| m.rests_on.is_empty() && !m.no_cells)
        })
        .filter(|j| touched.iter().any(|t| t.experiment == j.spec.experiment))
        .map(|j| j.spec.id.as_str())
        .collect();
    if !blind.is_empty() {
        out += &format!(
            "{} name no cells, so every cell of their experiment counts for them.\n\n",
            blind.join(", ")
        );
    }
    out
}

#[cfg(test)]
mod tests;
