//! `limitbench run --until-decisive`: `inconclusive` is not a pass. After
//! the run, the claims are judged in memory (the run's derived files are
//! rewritten, nothing else); the experiments of the claims still
//! `inconclusive` get a higher trial floor (every cell runs at least that
//! many trials) and are resumed, so their finished trials are kept and the
//! extra ones are numbered on from them (seeds `trial_seed(run_seed, cell,
//! trial)`, the keys a fresh run with the same floor holds). Round after
//! round, until no claim is inconclusive or every experiment with one has
//! reached the cap per cell. Each round is recorded in manifest.json
//! (`until_decisive`).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;

use super::budget::{next_floor, round_budget, round_overhead_s, trial_cap};
use super::session::{RunRequest, run_session};
use crate::run::manifest::{CellRounds, DecisiveRound, RunManifest, UntilDecisive};
use crate::run::record::RunDir;
use limitbench_analysis::Verdict;

fn update(run: &RunDir, f: impl FnOnce(&mut UntilDecisive)) -> Result<()> {
    let mut m: RunManifest = RunManifest::load(run)?.unwrap_or_default();
    f(m.until_decisive.get_or_insert_with(Default::default));
    m.save(run)?;
    Ok(())
}

/// The floors a round has raised so far: per experiment (a claim that
/// names no cells) and per experiment and cell.
#[derive(Debug, Clone, Default)]
struct Floors {
    experiments: BTreeMap<String, u64>,
    cells: BTreeMap<String, BTreeMap<String, u64>>,
}

/// The rounds after the first session (`status`: its exit status). Returns
/// the run's exit status: non-zero if a session failed.
pub async fn rounds(
    a: &RunRequest,
    root: &Path,
    run: &RunDir,
    names: &[&'static str],
    mut status: i32,
    session_s: f64,
) -> Result<i32> {
    let (cap, basis) = match a.max_trials {
        Some(n) => (n, "--max-trials".to_string()),
        None => {
            let (n, why) = trial_cap(a.size);
            (n, why.to_string())
        }
    };
    // The first session's time (with a killed run's earlier ones, before
    // any round): a full run's budget is the whole run's.
    let before = RunManifest::load(run)?.and_then(|m| m.until_decisive);
    let first_session_s = match &before {
        Some(u) if !u.rounds.is_empty() => u.first_session_s,
        Some(u) => u.first_session_s + session_s,
        None => session_s,
    };
    let (budget, budget_basis) = match a.round_budget {
        Some(0) => (None, "--round-budget 0: no budget".to_string()),
        Some(n) => (Some(n), "--round-budget".to_string()),
        None => round_budget(a.size, first_session_s),
    };
    let overhead = round_overhead_s(a.size);
    update(run, |u| {
        u.first_session_s = first_session_s;
        u.cap_per_cell = cap;
        u.cap_basis = basis.clone();
        u.budget_s = budget;
        u.budget_basis = budget_basis.clone();
        u.stopped = None;
    })?;
    // What earlier sessions of the rounds spent (a resumed run) counts, and
    // their rounds are numbered on (read once, above: the update leaves both).
    let spent_before = before.as_ref().map(|u| u.spent_s).unwrap_or(0.0);
    let mut round = before.as_ref().map(|u| u.rounds.len() as u64).unwrap_or(0);
    let started = std::time::Instant::now();
    let claims_file = root.join("analysis/claims.toml");
    let mut floors = Floors {
        experiments: a.trial_floors.clone(),
        cells: a.cell_floors.clone(),
    };
    let (stopped, verdicts) = loop {
        if status != 0 {
            break (
                "a session failed; resume the run to finish it".to_string(),
                None,
            );
        }
        let spent = spent_before + started.elapsed().as_secs_f64();
        update(run, |u| u.spent_s = spent)?;
        let left = budget.map(|b| b as f64 - spent - overhead);
        let (ids, raise) = match plan(run, &claims_file, names, &floors, cap, left)? {
            (Next::Stop(why), verdicts) => break (why, Some(verdicts)),
            (Next::Round { ids, raise }, _) => (ids, raise),
        };
        round += 1;
        floors.experiments.extend(raise.experiments.clone());
        for (e, cells) in &raise.cells {
            floors
                .cells
                .entry(e.clone())
                .or_default()
                .extend(cells.clone());
        }
        status = one_round(a, root, run, round, ids, raise, &floors).await?;
    };
    eprintln!("limitbench: --until-decisive stopped: {stopped}");
    let capped = stopped.starts_with("cap reached") || stopped.starts_with("budget spent");
    let per_cell = |e: &str| limitbench_analysis::trial_times::trials_per_cell(&run.path, e);
    let mut held: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    for e in floors.cells.keys() {
        held.insert(e.clone(), per_cell(e)?);
    }
    update(run, |u| {
        u.stopped = Some(stopped.clone());
        u.spent_s = spent_before + started.elapsed().as_secs_f64();
        close_cells(u, &held, verdicts.as_ref(), &stopped);
    })?;
    // The run's claims say which stayed inconclusive at the cap.
    if capped {
        super::analyze(&run.path, &claims_file)?;
    }
    Ok(status)
}

/// Each raised cell's trials and why it got no more: every claim that asked
/// for it decided, or (some still inconclusive) the cap or the failure
/// that stopped the rounds.
fn close_cells(
    u: &mut UntilDecisive,
    held: &BTreeMap<String, BTreeMap<String, u64>>,
    verdicts: Option<&BTreeMap<String, Verdict>>,
    stopped: &str,
) {
    for (e, cells) in u.cells.iter_mut() {
        for (cell, c) in cells.iter_mut() {
            c.trials = held.get(e).and_then(|h| h.get(cell)).copied().unwrap_or(0);
            let open: Vec<&str> = c
                .claims
                .iter()
                .filter(|id| {
                    verdicts.is_none_or(|v| v.get(*id).is_none_or(|x| *x == Verdict::Inconclusive))
                })
                .map(|s| s.as_str())
                .collect();
            c.stopped = if open.is_empty() {
                let decided: Vec<String> = c
                    .claims
                    .iter()
                    .map(|id| {
                        let v = verdicts.and_then(|v| v.get(id)).map(|v| v.as_str());
                        format!("{id} {}", v.unwrap_or("?"))
                    })
                    .collect();
                format!("decided at {} trials: {}", c.trials, decided.join(", "))
            } else {
                format!(
                    "undecided at {} trials ({} inconclusive): {stopped}",
                    c.trials,
                    open.join(", ")
                )
            };
        }
    }
}

/// The rounds' record of cell `c` of experiment `e` (a new one if none).
fn cell_record<'u>(u: &'u mut UntilDecisive, e: &str, c: &str) -> &'u mut CellRounds {
    u.cells
        .entry(e.to_string())
        .or_default()
        .entry(c.to_string())
        .or_default()
}

/// What a judgement of the run asks for next.
enum Next {
    /// Stop; the reason goes into the manifest.
    Stop(String),
    /// Another round: the claims still inconclusive, and the floors that
    /// rise (to what).
    Round { ids: Vec<String>, raise: Floors },
}

/// One inconclusive claim's next round: the floors it asks for and its
/// estimated trial time.
struct Ask {
    id: String,
    experiment: String,
    /// The whole experiment to this floor (a claim that names no cells).
    whole: Option<u64>,
    /// Its cells, each to this floor.
    cells: Vec<(String, u64)>,
    seconds: f64,
}

/// The asks that fit in `left` seconds (None: all), cheapest first, and
/// the ids and estimated seconds of those that do not.
fn fund(mut asks: Vec<Ask>, left: Option<f64>) -> (Vec<Ask>, Vec<(String, f64)>) {
    asks.sort_by(|a, b| a.seconds.total_cmp(&b.seconds).then(a.id.cmp(&b.id)));
    let mut remaining = left;
    let (mut funded, mut unfunded) = (Vec::new(), Vec::new());
    for a in asks {
        if let Some(r) = remaining {
            if a.seconds > r {
                unfunded.push((a.id.clone(), a.seconds));
                continue;
            }
            remaining = Some(r - a.seconds);
        }
        funded.push(a);
    }
    (funded, unfunded)
}

/// A trial's estimated wall time when its cell and experiment have none.
const UNTIMED_TRIAL_MS: f64 = 1000.0;

/// Judge the run (its derived files are rewritten) and choose: stop (no
/// claim inconclusive, every one at the cap, or no next round fits in
/// `left` seconds of budget) or raise the floors below the cap: of the
/// cells whose trials could decide an inconclusive claim
/// (`claims::cells_to_decide`: its undecided settings' cells, main or
/// swept), or of its whole experiment when it names none. The claims are funded cheapest first
/// (their next round's trials times their cells' median trial time, plus
/// each resumed cell's setup: `trial_times::setup_ms_per_cell`), as
/// long as they fit. Also returns every claim's verdict.
fn plan(
    run: &RunDir,
    claims_file: &Path,
    names: &[&'static str],
    floors: &Floors,
    cap: u64,
    left: Option<f64>,
) -> Result<(Next, BTreeMap<String, Verdict>)> {
    let judged = super::analyze(&run.path, claims_file)?;
    let verdicts: BTreeMap<String, Verdict> = judged
        .iter()
        .map(|j| (j.spec.id.clone(), j.verdict))
        .collect();
    let open: Vec<(String, String, Vec<String>)> = judged
        .iter()
        .filter(|j| j.verdict == Verdict::Inconclusive)
        .filter(|j| names.contains(&j.spec.experiment.as_str()))
        .map(|j| {
            let cells = j
                .measured
                .as_ref()
                .map(|m| limitbench_analysis::claims::cells_to_decide(&j.spec, m))
                .unwrap_or_default();
            (j.spec.id.clone(), j.spec.experiment.clone(), cells)
        })
        .collect();
    if open.is_empty() {
        update(run, |u| {
            u.capped_claims.clear();
            u.unfunded_claims.clear();
        })?;
        return Ok((
            Next::Stop("decisive: no claim of the run is inconclusive".to_string()),
            verdicts,
        ));
    }
    let medians = limitbench_analysis::trial_times::median_trial_ms(&run.path)?;
    let trial_ms = |e: &str, c: &str| {
        medians
            .get(&(e.to_string(), c.to_string()))
            .or_else(|| medians.get(&(e.to_string(), String::new())))
            .copied()
            .filter(|m| m.is_finite())
            .unwrap_or(UNTIMED_TRIAL_MS)
    };
    // Each cell a round resumes is set up again: counted beside its trials.
    let setup = limitbench_analysis::trial_times::setup_ms_per_cell(&run.path)?;
    let mut capped = Vec::new();
    let mut asks: Vec<Ask> = Vec::new();
    let mut held: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    for (id, e, cells) in &open {
        if !held.contains_key(e) {
            let per = limitbench_analysis::trial_times::trials_per_cell(&run.path, e)?;
            held.insert(e.clone(), per);
        }
        let per = &held[e];
        let whole = floors.experiments.get(e).copied().unwrap_or(0);
        // A claim that names no cells raises its whole experiment: every
        // cell its table holds.
        let targets: Vec<String> = if cells.is_empty() {
            per.keys().cloned().collect()
        } else {
            cells.clone()
        };
        // The cells' trials: what the tables hold, or the floor a round set.
        let own = floors.cells.get(e);
        let have_of = |c: &String| {
            let floor = own.and_then(|o| o.get(c)).copied().unwrap_or(0);
            per.get(c).copied().unwrap_or(0).max(floor).max(whole)
        };
        let have = targets.iter().map(have_of).min().unwrap_or(whole);
        if have >= cap {
            capped.push(id.clone());
            continue;
        }
        let to = next_floor(have, cap);
        let setup_ms = setup.get(e).copied().unwrap_or(0.0);
        let ms: f64 = targets
            .iter()
            .filter(|c| to > have_of(c))
            .map(|c| (to - have_of(c)) as f64 * trial_ms(e, c) + setup_ms)
            .sum();
        asks.push(Ask {
            id: id.clone(),
            experiment: e.clone(),
            whole: cells.is_empty().then_some(to),
            cells: if cells.is_empty() {
                Vec::new()
            } else {
                cells.iter().map(|c| (c.clone(), to)).collect()
            },
            seconds: ms / 1000.0,
        });
    }
    let (funded_asks, unfunded) = fund(asks, left);
    let mut raise = Floors::default();
    let mut asked: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    let mut funded: Vec<String> = Vec::new();
    for a in &funded_asks {
        funded.push(a.id.clone());
        if let Some(to) = a.whole {
            let f = raise.experiments.entry(a.experiment.clone()).or_default();
            *f = (*f).max(to);
        }
        for (c, to) in &a.cells {
            let f = raise
                .cells
                .entry(a.experiment.clone())
                .or_default()
                .entry(c.clone())
                .or_default();
            *f = (*f).max(*to);
            asked
                .entry((a.experiment.clone(), c.clone()))
                .or_default()
                .push(a.id.clone());
        }
    }
    update(run, |u| {
        u.capped_claims = capped.clone();
        u.unfunded_claims = unfunded.iter().map(|(id, _)| id.clone()).collect();
        for ((e, c), ids) in &asked {
            let rec = cell_record(u, e, c);
            for id in ids {
                if !rec.claims.contains(id) {
                    rec.claims.push(id.clone());
                }
            }
        }
    })?;
    if funded.is_empty() {
        let why = if unfunded.is_empty() {
            format!(
                "cap reached: {} claim(s) still inconclusive at {cap} trials per cell ({})",
                capped.len(),
                capped.join(", ")
            )
        } else {
            format!(
                "budget spent: {} claim(s) still inconclusive whose next round does not fit in the {:.0} s left ({}){}",
                unfunded.len(),
                left.unwrap_or(0.0).max(0.0),
                unfunded
                    .iter()
                    .map(|(id, s)| format!("{id} ~{s:.0} s"))
                    .collect::<Vec<_>>()
                    .join(", "),
                if capped.is_empty() {
                    String::new()
                } else {
                    format!(
                        "; {} at the cap of {cap} ({})",
                        capped.len(),
                        capped.join(", ")
                    )
                }
            )
        };
        return Ok((Next::Stop(why), verdicts));
    }
    let ids = open.iter().map(|(id, _, _)| id.clone()).collect();
    Ok((Next::Round { ids, raise }, verdicts))
}

/// Round `round`: the experiments of `raise` resumed with the new
/// `floors`, the round recorded in the manifest; the session's exit status.
async fn one_round(
    a: &RunRequest,
    root: &Path,
    run: &RunDir,
    round: u64,
    ids: Vec<String>,
    raise: Floors,
    floors: &Floors,
) -> Result<i32> {
    let mut what: Vec<String> = raise
        .experiments
        .iter()
        .map(|(e, f)| format!("{e} (at least {f} per cell)"))
        .collect();
    for (e, cells) in &raise.cells {
        let most = cells.values().max().copied().unwrap_or(0);
        what.push(format!(
            "{} cell(s) of {e} (up to {most} trials each)",
            cells.len()
        ));
    }
    eprintln!(
        "limitbench: round {round}: {} claim(s) inconclusive ({}); more trials for {}",
        ids.len(),
        ids.join(", "),
        what.join(", ")
    );
    let mut next = a.clone();
    let mut experiments: Vec<String> = raise.experiments.keys().cloned().collect();
    experiments.extend(raise.cells.keys().cloned());
    experiments.sort();
    experiments.dedup();
    next.experiments = experiments;
    next.resume = Some(run.run_id.clone());
    next.run_id = None;
    next.trial_floors = floors.experiments.clone();
    next.cell_floors = floors.cells.clone();
    let entry = DecisiveRound {
        round,
        trial_floor: raise.experiments.clone(),
        cell_floor: raise.cells.clone(),
        inconclusive: ids,
        outcome: String::new(),
    };
    update(run, |u| {
        for (e, cells) in &raise.cells {
            for c in cells.keys() {
                let rec = cell_record(u, e, c);
                if !rec.rounds.contains(&round) {
                    rec.rounds.push(round);
                }
            }
        }
        u.rounds.push(entry)
    })?;
    let (s, _, _) = run_session(next, root).await?;
    update(run, |u| {
        if let Some(r) = u.rounds.last_mut() {
            r.outcome = if s == 0 {
                "done".into()
            } else {
                format!("exit {s}")
            };
        }
    })?;
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use limitbench_analysis::trial_times::fewest_trials_per_cell;

    fn ask(id: &str, seconds: f64) -> Ask {
        Ask {
            id: id.into(),
            experiment: "retries".into(),
            whole: None,
            cells: vec![("c".into(), 10)],
            seconds,
        }
    }

    #[test]
    fn the_budget_funds_the_cheapest_rounds_that_fit() {
        let asks = || vec![ask("A2.2", 90.0), ask("A2.1", 30.0), ask("A1.2", 50.0)];
        let ids = |v: &[Ask]| v.iter().map(|a| a.id.clone()).collect::<Vec<_>>();
        // 100 s: A2.1 (30) and A1.2 (50) fit, A2.2 (90) does not.
        let (f, u) = fund(asks(), Some(100.0));
        assert_eq!(ids(&f), ["A2.1", "A1.2"]);
        assert_eq!(u, vec![("A2.2".to_string(), 90.0)]);
        // A later, cheaper ask still fits what is left.
        let (f, _) = fund(
            vec![ask("A2.2", 90.0), ask("A2.1", 30.0), ask("A1.1", 5.0)],
            Some(40.0),
        );
        assert_eq!(ids(&f), ["A1.1", "A2.1"]);
        // No budget: everything, cheapest first; nothing left: nothing.
        assert_eq!(ids(&fund(asks(), None).0), ["A2.1", "A1.2", "A2.2"]);
        let (f, u) = fund(asks(), Some(-3.0));
        assert!(f.is_empty() && u.len() == 3);
    }

    /// Memory's CPU cells run one window each beside fills of ten: the
    /// experiment is not at a cap of 10 until they are too.
    #[test]
    fn the_floor_rises_from_the_cell_with_the_fewest_trials() {
        let dir = tempfile::tempdir().unwrap();
        let mut text = String::from("cell,trial,value\n");
        for t in 0..10 {
            text.push_str(&format!("fill,{t},1\n"));
        }
        text.push_str("cpu,0,1\n");
        std::fs::write(dir.path().join("memory.csv"), text).unwrap();
        let fewest = fewest_trials_per_cell(dir.path(), "memory").unwrap();
        assert_eq!(fewest, 1);
        assert_eq!(
            next_floor(fewest, 10),
            10,
            "a cap of 10 still raises the cpu cell"
        );
        assert_eq!(fewest_trials_per_cell(dir.path(), "stalls").unwrap(), 0);
    }
}
