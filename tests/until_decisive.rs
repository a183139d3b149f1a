//! `limitbench run --until-decisive`: the experiments of inconclusive
//! claims get more trials per cell, round by round, up to the cap, each
//! round in manifest.json. Real redis-servers, a smoke-size `retries`.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use common::limitbench;
use limitbench::run::seeds::{DEFAULT_SEED, trial_seed};

fn manifest(run: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(run.join("manifest.json")).unwrap()).unwrap()
}

/// A row of retries.csv: (cell, trial, seed).
type Row = (String, u64, u64);
/// The trials each cell holds.
type TrialsByCell = BTreeMap<String, BTreeSet<u64>>;

/// (cell, trial, seed) of every row of `retries.csv`, in file order.
fn rows(run: &Path) -> Vec<(String, u64, u64)> {
    let path = limitbench_base::files::find_table(run, "retries.csv").unwrap();
    let bytes = limitbench_base::files::read_maybe_compressed(&path).unwrap();
    let mut rdr = csv::Reader::from_reader(bytes.as_slice());
    let h = rdr.headers().unwrap().clone();
    let col = |n: &str| h.iter().position(|x| x == n).unwrap();
    let (c, t, s) = (col("cell"), col("trial"), col("seed"));
    rdr.records()
        .map(|r| {
            let r = r.unwrap();
            (
                r[c].to_string(),
                r[t].parse().unwrap(),
                r[s].parse().unwrap(),
            )
        })
        .collect()
}

/// `limitbench run retries` at smoke size (watch-multi only) with
/// `--until-decisive --max-trials <cap>`, then `extra` arguments.
fn adaptive_run(data: &Path, cap: &str, extra: &[&str]) -> common::Run {
    let mut args = vec![
        "run",
        "retries",
        "--size",
        "smoke",
        "--strategy",
        "watch-multi",
        "--parallel",
        "1",
        "--until-decisive",
        "--max-trials",
        cap,
        "--data-dir",
        data.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    limitbench(&args, None)
}

/// The cell floors round `r` (0-based) set in retries.
fn cell_floors(u: &serde_json::Value, r: usize) -> BTreeMap<String, u64> {
    u["rounds"][r]["cell_floor"]["retries"]
        .as_object()
        .unwrap_or_else(|| panic!("no cell floors in round {}: {u}", r + 1))
        .iter()
        .map(|(c, f)| (c.clone(), f.as_u64().unwrap()))
        .collect()
}

/// The trials each cell of retries.csv holds, checking every row's seed
/// is the one any trial of that index gets and no trial is there twice.
fn trials_by_cell(dir: &Path) -> (Vec<Row>, TrialsByCell) {
    let rows = rows(dir);
    let mut per: BTreeMap<String, BTreeSet<u64>> = BTreeMap::new();
    for (cell, trial, seed) in &rows {
        assert_eq!(
            *seed,
            trial_seed(DEFAULT_SEED, cell, *trial),
            "{cell} trial {trial}"
        );
        assert!(
            per.entry(cell.clone()).or_default().insert(*trial),
            "{cell} trial {trial} twice"
        );
    }
    (rows, per)
}

#[test]
fn inconclusive_claims_get_more_trials_up_to_the_cap() {
    let data = tempfile::tempdir().unwrap();
    let run = adaptive_run(data.path(), "2", &["--run-id", "adaptive"]);
    run.expect_code(0)
        .expect_output("round 1:")
        .expect_output("cell(s) of retries (up to 2 trials each)")
        .expect_output("--until-decisive stopped: cap reached");
    let dir = data.path().join("adaptive");
    assert_eq!(run.stdout().lines().last(), Some(dir.to_str().unwrap()));

    // The manifest: the cap and its basis, one round (the smoke size runs 1
    // trial per cell; the round raised the cells the inconclusive claims
    // rest on to the cap of 2), then the stop.
    let m = manifest(&dir);
    let u = &m["until_decisive"];
    assert_eq!(u["cap_per_cell"], 2, "{u}");
    assert_eq!(u["cap_basis"], "--max-trials");
    let rounds = u["rounds"].as_array().unwrap();
    assert_eq!(rounds.len(), 1, "one round reaches the cap: {u}");
    assert_eq!(rounds[0]["round"], 1);
    assert_eq!(rounds[0]["outcome"], "done");
    let open: Vec<&str> = rounds[0]["inconclusive"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(
        open.contains(&"A2.1") && open.contains(&"A2.3"),
        "A2.1 and A2.3 (1 trial) are inconclusive: {u}"
    );
    let raised = cell_floors(u, 0);
    assert!(
        !raised.is_empty() && raised.values().all(|f| *f == 2),
        "{u}"
    );
    assert!(
        u["stopped"].as_str().unwrap().starts_with("cap reached"),
        "{u}"
    );
    let capped = u["capped_claims"].as_array().unwrap();
    assert!(capped.iter().any(|c| c == "A2.1"), "{u}");
    // Each raised cell's record: the round, the claims that asked, the
    // trials it holds and why it stopped: A2.3 (a count over every trial)
    // decides at 2 trials, A2.1 (10 needed) stops at the cap.
    let cells = u["cells"]["retries"].as_object().unwrap();
    assert_eq!(
        cells.keys().cloned().collect::<BTreeSet<_>>(),
        raised.keys().cloned().collect::<BTreeSet<_>>(),
        "{u}"
    );
    let mut a2_1_cells = BTreeSet::new();
    for (cell, rec) in cells {
        assert_eq!(rec["rounds"], serde_json::json!([1]), "{cell}: {rec}");
        assert_eq!(rec["trials"], 2, "{cell}: {rec}");
        let claims: Vec<&str> = rec["claims"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap())
            .collect();
        assert!(claims.iter().all(|c| open.contains(c)), "{cell}: {rec}");
        let stopped = rec["stopped"].as_str().unwrap();
        if claims.contains(&"A2.1") {
            a2_1_cells.insert(cell.clone());
            assert!(
                stopped.starts_with("undecided at 2 trials (A2.1 inconclusive)")
                    && stopped.contains("cap reached"),
                "{cell}: {rec}"
            );
        } else {
            assert_eq!(
                stopped, "decided at 2 trials: A2.3 reproduced",
                "{cell}: {rec}"
            );
        }
    }
    assert!(
        !a2_1_cells.is_empty() && a2_1_cells.len() < cells.len(),
        "A2.1 rests on a part of the cells: {u}"
    );
    // Every claim still inconclusive after the last round is one the cap stopped.
    let claims = std::fs::read_to_string(dir.join("claims.csv")).unwrap();
    for line in claims.lines().filter(|l| l.contains(",inconclusive,")) {
        let id = line.split(',').next().unwrap();
        if line.contains("retries") {
            assert!(
                capped.iter().any(|c| c == id),
                "{id} inconclusive but not capped: {u}"
            );
            // (A claim whose cells were disturbed, e.g. by a build beside
            // the test, is no finding whatever its trials: not the cap's.)
            assert!(
                line.contains("the cap of 2 trials per cell") || line.contains("(disturbed"),
                "{line}"
            );
        }
    }
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(
        report.contains("## Extra trials for inconclusive claims"),
        "{report}"
    );
    assert!(
        report.contains(&format!(
            "- round 1: trials per cell {} cell(s) of retries up to 2",
            raised.len()
        )),
        "{report}"
    );
    assert!(
        report.contains("| experiment | cell | trials | rounds | stopped |"),
        "{report}"
    );
    assert_eq!(
        m["experiments"]["retries"]["sessions"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    // Every raised cell holds trials 0 and 1, the extra one seeded as any
    // trial is; the first session's trials were kept (all come first).
    let (rows, per) = trials_by_cell(&dir);
    for (cell, trials) in &per {
        let want = if raised.contains_key(cell) {
            BTreeSet::from([0, 1])
        } else {
            BTreeSet::from([0])
        };
        assert_eq!(trials, &want, "{cell}");
    }
    let first_extra = rows.iter().position(|r| r.1 == 1).unwrap();
    assert!(rows[..first_extra].iter().all(|r| r.1 == 0));
    assert_eq!(
        first_extra,
        per.len(),
        "the first session's trials come first"
    );

    // Resumed with a cap of 3: only A2.1's cells get a third trial (A2.3
    // decided); the records say so.
    adaptive_run(data.path(), "3", &["--resume", "adaptive"])
        .expect_code(0)
        .expect_output("round 2:");
    let m = manifest(&dir);
    let u = &m["until_decisive"];
    let again = cell_floors(u, 1);
    assert_eq!(
        again.keys().cloned().collect::<BTreeSet<_>>(),
        a2_1_cells,
        "round 2 raises A2.1's cells only: {u}"
    );
    assert!(again.values().all(|f| *f == 3), "{u}");
    for (cell, rec) in u["cells"]["retries"].as_object().unwrap() {
        if a2_1_cells.contains(cell) {
            assert_eq!(rec["rounds"], serde_json::json!([1, 2]), "{cell}: {rec}");
            assert_eq!(rec["trials"], 3, "{cell}: {rec}");
        } else {
            assert_eq!(rec["rounds"], serde_json::json!([1]), "{cell}: {rec}");
            assert_eq!(rec["trials"], 2, "{cell}: {rec}");
        }
    }
    let (_, per) = trials_by_cell(&dir);
    for (cell, trials) in &per {
        let want = if a2_1_cells.contains(cell) {
            BTreeSet::from([0, 1, 2])
        } else {
            BTreeSet::from([0, 1])
        };
        assert_eq!(trials, &want, "{cell}");
    }

    // Resumed with a cap of 6 and a budget of 1 s of trial time: A2.1's
    // next round (its cells to 6, 3 trials each at their median time) does
    // not fit, so nothing runs and the claim says why.
    adaptive_run(
        data.path(),
        "6",
        &["--resume", "adaptive", "--round-budget", "1"],
    )
    .expect_code(0)
    .expect_output("--until-decisive stopped: budget spent");
    let u = manifest(&dir)["until_decisive"].clone();
    assert_eq!(u["budget_s"], 1, "{u}");
    assert_eq!(
        u["rounds"].as_array().unwrap().len(),
        2,
        "no third round: {u}"
    );
    assert!(
        u["unfunded_claims"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c == "A2.1"),
        "{u}"
    );
    assert_eq!(trials_by_cell(&dir).1, per, "no trial was added");
    let claims = std::fs::read_to_string(dir.join("claims.csv")).unwrap();
    let a2_1 = claims.lines().find(|l| l.starts_with("A2.1,")).unwrap();
    assert!(
        a2_1.contains("stopped on their budget of 1 s") || a2_1.contains("(disturbed"),
        "{a2_1}"
    );
}

/// Cost's cells of rounds write a row per variant under the variant's id,
/// and its claims rest on the cells (`rounds-1..G`, `swl-fill`): a floor on one
/// runs every variant again, and the rounds count its trials right.
#[test]
fn a_floor_on_a_row_cell_raises_the_sweep_cell_that_writes_it() {
    let data = tempfile::tempdir().unwrap();
    let run = limitbench(
        &[
            "run",
            "cost",
            "--size",
            "smoke",
            "--until-decisive",
            "--max-trials",
            "2",
            "--run-id",
            "cost-rounds",
            "--data-dir",
            data.path().to_str().unwrap(),
        ],
        None,
    );
    run.expect_code(0)
        .expect_output("cell(s) of cost (up to 2 trials each)");
    let dir = data.path().join("cost-rounds");
    let u = manifest(&dir)["until_decisive"].clone();
    let raised = u["rounds"][0]["cell_floor"]["cost"].as_object().unwrap();
    let table = limitbench_base::files::find_table(&dir, "cost.csv").unwrap();
    let bytes = limitbench_base::files::read_maybe_compressed(&table).unwrap();
    let mut rdr = csv::Reader::from_reader(bytes.as_slice());
    let h = rdr.headers().unwrap().clone();
    let (c, t) = (
        h.iter().position(|x| x == "cell").unwrap(),
        h.iter().position(|x| x == "trial").unwrap(),
    );
    let mut per: BTreeMap<String, BTreeSet<u64>> = BTreeMap::new();
    for r in rdr.records() {
        let r = r.unwrap();
        per.entry(r[c].to_string())
            .or_default()
            .insert(r[t].parse().unwrap());
    }
    // The cost groups (experiments/cost.toml `groups`): every group's cell
    // of rounds is raised.
    assert!(raised.contains_key("rounds-1"), "{u}");
    assert!(per.len() > 2, "{per:?}");
    for (cell, trials) in &per {
        assert_eq!(trials, &BTreeSet::from([0, 1]), "{cell}: {per:?}");
    }
    let rec = &u["cells"]["cost"]["rounds-1"];
    assert_eq!(rec["trials"], 2, "{u}");
    assert_eq!(rec["rounds"], serde_json::json!([1]), "{u}");
}
