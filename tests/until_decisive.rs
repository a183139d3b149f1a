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

#[test]
fn inconclusive_claims_get_more_trials_up_to_the_cap() {
    let data = tempfile::tempdir().unwrap();
    let run = limitbench(
        &[
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
            "2",
            "--run-id",
            "adaptive",
            "--data-dir",
            data.path().to_str().unwrap(),
        ],
        None,
    );
    run.expect_code(0)
        .expect_output("round 1:")
        .expect_output("more trials for retries (at least 2 per cell)")
        .expect_output("--until-decisive stopped: cap reached");
    let dir = data.path().join("adaptive");
    assert_eq!(run.stdout().lines().last(), Some(dir.to_str().unwrap()));

    // The manifest: the cap and its basis, one round (the smoke size runs 1
    // trial per cell, the floor raised it to the cap of 2), then the stop.
    let m = manifest(&dir);
    let u = &m["until_decisive"];
    assert_eq!(u["cap_per_cell"], 2, "{u}");
    assert_eq!(u["cap_basis"], "--max-trials");
    let rounds = u["rounds"].as_array().unwrap();
    assert_eq!(rounds.len(), 1, "one round reaches the cap: {u}");
    assert_eq!(rounds[0]["round"], 1);
    assert_eq!(rounds[0]["trial_floor"]["retries"], 2);
    assert_eq!(rounds[0]["outcome"], "done");
    let open: Vec<&str> = rounds[0]["inconclusive"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(
        open.contains(&"A2.1"),
        "A2.1 (1 trial) is inconclusive: {u}"
    );
    assert!(
        u["stopped"].as_str().unwrap().starts_with("cap reached"),
        "{u}"
    );
    let capped = u["capped_claims"].as_array().unwrap();
    assert!(!capped.is_empty(), "{u}");
    // Every claim still inconclusive after the last round is one the cap stopped.
    let claims = std::fs::read_to_string(dir.join("claims.csv")).unwrap();
    for line in claims.lines().filter(|l| l.contains(",inconclusive,")) {
        let id = line.split(',').next().unwrap();
        if line.contains("retries") {
            assert!(
                capped.iter().any(|c| c == id),
                "{id} inconclusive but not capped: {u}"
            );
            assert!(line.contains("the cap of 2 trials per cell"), "{line}");
        }
    }
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(
        report.contains("## Extra trials for inconclusive claims"),
        "{report}"
    );
    assert!(
        report.contains("- round 1: trials per cell retries >= 2"),
        "{report}"
    );
    assert_eq!(m["experiments"]["retries"]["trial_floor"], 2);
    assert_eq!(
        m["experiments"]["retries"]["sessions"]
            .as_array()
            .unwrap()
            .len(),
        2
    );

    // Every cell holds trials 0 and 1, the extra one seeded as any trial is;
    // the first session's trials were kept (all of them come first).
    let rows = rows(&dir);
    let mut per: BTreeMap<&str, BTreeSet<u64>> = BTreeMap::new();
    for (cell, trial, seed) in &rows {
        assert_eq!(
            *seed,
            trial_seed(DEFAULT_SEED, cell, *trial),
            "{cell} trial {trial}"
        );
        assert!(
            per.entry(cell).or_default().insert(*trial),
            "{cell} trial {trial} twice"
        );
    }
    assert!(per.len() >= 2, "{per:?}");
    for (cell, trials) in &per {
        assert_eq!(trials, &BTreeSet::from([0, 1]), "{cell}");
    }
    let first_extra = rows.iter().position(|r| r.1 == 1).unwrap();
    assert!(rows[..first_extra].iter().all(|r| r.1 == 0));
    assert_eq!(
        first_extra,
        per.len(),
        "the first session's trials come first"
    );
}
