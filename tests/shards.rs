//! Shards (issue 23): two shards of a smoke run, run side by side as two
//! machines would, merged; the merged run holds the unsharded run's
//! (cell, trial, seed) keys and `analyze` judges it the same. Shards of
//! different runs are refused with both values named.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{copy_dir, keys, limitbench, small_experiments};

/// Experiments that run in seconds at smoke size and have cell-level
/// variety (several cells, side tables, a machine-kind claim in stalls),
/// and whose smoke verdicts do not hang on one trial's timing (retries'
/// admitted count at n=1 flips between runs, sharded or not).
const EXPERIMENTS: [&str; 4] = ["concurrency", "replication", "skew", "stalls"];

/// claim id -> verdict, from an analysed run's claims.csv.
fn verdicts(run: &Path) -> BTreeMap<String, String> {
    let mut rdr = csv::Reader::from_path(run.join("claims.csv")).unwrap();
    let h = rdr.headers().unwrap().clone();
    let id = h.iter().position(|x| x == "claim").unwrap();
    let v = h.iter().position(|x| x == "verdict").unwrap();
    rdr.records()
        .map(|r| {
            let r = r.unwrap();
            (r[id].to_string(), r[v].to_string())
        })
        .collect()
}

fn run_args(exp: &Path, data: &Path, id: &str, extra: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = vec!["run".into()];
    v.extend(EXPERIMENTS.iter().map(|s| s.to_string()));
    for s in ["--size", "smoke", "--run-id", id, "--experiments-dir"] {
        v.push(s.into());
    }
    v.push(exp.display().to_string());
    v.push("--data-dir".into());
    v.push(data.display().to_string());
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

fn edit_manifest(run: &Path, f: impl FnOnce(&mut serde_json::Value)) {
    let p = run.join("manifest.json");
    let mut m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    f(&mut m);
    std::fs::write(&p, serde_json::to_string_pretty(&m).unwrap()).unwrap();
}

#[test]
fn two_shards_side_by_side_merge_into_the_unsharded_run() {
    let tmp = tempfile::tempdir().unwrap();
    let exp = small_experiments(tmp.path());
    let data = tmp.path().join("data");
    let bin = env!("CARGO_BIN_EXE_limitbench");
    // Shard 0 from the flag, shard 1 as a Kubernetes Indexed Job would start
    // it: the index from JOB_COMPLETION_INDEX, the count from our variable.
    let shard0 = Command::new(bin)
        .args(run_args(&exp, &data, "s0", &["--shard", "0/2"]))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let shard1 = Command::new(bin)
        .args(run_args(&exp, &data, "s1", &[]))
        .env("JOB_COMPLETION_INDEX", "1")
        .env("LIMITBENCH_SHARD_COUNT", "2")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    for (name, child) in [("s0", shard0), ("s1", shard1)] {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "shard {name} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let args: Vec<String> = run_args(&exp, &data, "whole", &[]);
    let args: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    limitbench(&args, None).expect_code(0);

    let (s0, s1, whole) = (data.join("s0"), data.join("s1"), data.join("whole"));
    let merged = tmp.path().join("merged");
    let m = [
        "merge",
        merged.to_str().unwrap(),
        s0.to_str().unwrap(),
        s1.to_str().unwrap(),
    ];
    limitbench(&m, None).expect_code(0);
    for e in EXPERIMENTS {
        let (a, b) = (keys(&s0, e), keys(&s1, e));
        assert!(
            !a.is_empty() && !b.is_empty(),
            "{e}: both shards hold cells"
        );
        assert_eq!(keys(&merged, e), keys(&whole, e), "{e}: merged keys");
    }
    // The merged run is one machine's (both shards ran here): nothing marked.
    let mm: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(merged.join("manifest.json")).unwrap())
            .unwrap();
    assert_eq!(mm["merged_from"].as_array().unwrap().len(), 2);
    // The trial times are kept: one row per committed trial of either shard.
    let times = |r: &Path| {
        std::fs::read_to_string(r.join("trial-times.csv"))
            .map(|t| t.lines().count().saturating_sub(1))
            .unwrap_or(0)
    };
    assert_eq!(
        times(&merged),
        times(&s0) + times(&s1),
        "trial-times.csv merged"
    );
    assert!(times(&merged) > 0);
    assert_eq!(
        mm["experiments"]["stalls"]["machines"]
            .as_array()
            .unwrap()
            .len(),
        1
    );

    for r in [&merged, &whole] {
        limitbench(&["analyze", r.to_str().unwrap()], None).expect_code(0);
    }
    let (vm, vw) = (verdicts(&merged), verdicts(&whole));
    assert!(
        vw.values().any(|v| v != "not-run"),
        "the whole run judged something: {vw:?}"
    );
    assert_eq!(vm, vw, "the merged run's verdicts are the unsharded run's");

    // Shards from two machines: the machine-kind claims of their
    // experiments are marked in the report.
    let (t0, t1) = (tmp.path().join("t0"), tmp.path().join("t1"));
    copy_dir(&s0, &t0);
    copy_dir(&s1, &t1);
    edit_manifest(&t0, |m| m["machine"]["hostname"] = "node-a".into());
    edit_manifest(&t1, |m| m["machine"]["hostname"] = "node-b".into());
    let two = tmp.path().join("two-machines");
    limitbench(
        &[
            "merge",
            two.to_str().unwrap(),
            t0.to_str().unwrap(),
            t1.to_str().unwrap(),
        ],
        None,
    )
    .expect_code(0);
    limitbench(&["analyze", two.to_str().unwrap()], None).expect_code(0);
    let report = std::fs::read_to_string(two.join("report.md")).unwrap();
    assert!(
        report.contains("machine (rows from 2 machines)"),
        "{report}"
    );
    let report = std::fs::read_to_string(merged.join("report.md")).unwrap();
    assert!(!report.contains("rows from 2 machines"));

    // Shards of different runs are refused, naming both values.
    let (u0, u1): (PathBuf, PathBuf) = (tmp.path().join("u0"), tmp.path().join("u1"));
    copy_dir(&s0, &u0);
    copy_dir(&s1, &u1);
    edit_manifest(&u1, |m| m["seed"] = 7.into());
    let out = tmp.path().join("refused");
    let r = limitbench(
        &[
            "merge",
            out.to_str().unwrap(),
            u0.to_str().unwrap(),
            u1.to_str().unwrap(),
        ],
        None,
    );
    r.expect_code(2)
        .expect_output("the seed is 20261129")
        .expect_output("but 7");
    edit_manifest(&u1, |m| {
        m["seed"] = 20261129.into();
        m["git_commit"] = "0000000".into();
    });
    let r = limitbench(
        &[
            "merge",
            out.to_str().unwrap(),
            u0.to_str().unwrap(),
            u1.to_str().unwrap(),
        ],
        None,
    );
    r.expect_code(2)
        .expect_output("the commit is")
        .expect_output("\"0000000\"");
    // A missing shard, and a shard twice.
    let r = limitbench(
        &[
            "merge",
            out.to_str().unwrap(),
            s0.to_str().unwrap(),
            s0.to_str().unwrap(),
        ],
        None,
    );
    r.expect_code(2).expect_output("are the same shard");
    // An unsharded run is not a shard.
    let r = limitbench(
        &[
            "merge",
            out.to_str().unwrap(),
            s0.to_str().unwrap(),
            whole.to_str().unwrap(),
        ],
        None,
    );
    r.expect_code(2).expect_output("is not a shard");
    // A shard resumed as another shard is refused.
    let args: Vec<String> = run_args(&exp, &data, "x", &["--shard", "1/2"]);
    let mut args: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    let pos = args.iter().position(|a| *a == "--run-id").unwrap();
    args.splice(pos..pos + 2, ["--resume", "s0"]);
    limitbench(&args, None)
        .expect_code(2)
        .expect_output("holds shard 0/2");
}

/// Latency-bound experiments in lanes (`--parallel 2`): the same keys as a
/// sequential run, every trial's schedule recorded with what ran beside
/// it, one header per table although two lanes append to it.
#[test]
fn lanes_hold_the_sequential_runs_keys_and_record_what_ran_beside() {
    let tmp = tempfile::tempdir().unwrap();
    let exp = small_experiments(tmp.path());
    let data = tmp.path().join("data");
    let lat = ["replication", "cluster"];
    let args = |id: &str, parallel: &str| {
        let mut v: Vec<String> = vec!["run".into()];
        v.extend(lat.iter().map(|s| s.to_string()));
        for s in [
            "--size",
            "smoke",
            "--run-id",
            id,
            "--parallel",
            parallel,
            "--experiments-dir",
        ] {
            v.push(s.into());
        }
        v.push(exp.display().to_string());
        v.push("--data-dir".into());
        v.push(data.display().to_string());
        v
    };
    for (id, n) in [("seq", "1"), ("lanes", "2")] {
        let a = args(id, n);
        let a: Vec<&str> = a.iter().map(|s| s.as_str()).collect();
        limitbench(&a, None).expect_code(0);
    }
    let (seq, lanes) = (data.join("seq"), data.join("lanes"));
    for e in lat {
        assert_eq!(keys(&lanes, e), keys(&seq, e), "{e}: lanes' keys");
        let text = std::fs::read_to_string(lanes.join(format!("{e}.csv"))).unwrap();
        assert_eq!(text.matches("cell,trial").count(), 1, "{e}.csv: one header");
    }
    let mut rdr = csv::Reader::from_path(lanes.join("schedule.csv")).unwrap();
    let h = rdr.headers().unwrap().clone();
    let (bi, ci) = (
        h.iter().position(|x| x == "beside").unwrap(),
        h.iter().position(|x| x == "committed").unwrap(),
    );
    let rows: Vec<csv::StringRecord> = rdr.records().map(|r| r.unwrap()).collect();
    let committed = rows.iter().filter(|r| &r[ci] == "true").count();
    let total: usize = lat.iter().map(|e| keys(&lanes, e).len()).sum();
    // cluster commits several rows per trial; every trial has one committed schedule row.
    assert!(
        committed > 0 && committed <= total,
        "{committed} committed of {total} rows"
    );
    assert!(
        rows.iter().any(|r| !r[bi].is_empty()),
        "some trial ran beside another lane"
    );
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(lanes.join("manifest.json")).unwrap())
            .unwrap();
    assert_eq!(m["parallel"]["n"], 2);
    assert_eq!(m["experiments"]["replication"]["lanes"], 2);
    assert_eq!(m["experiments"]["replication"]["outcome"], "done");
}
