//! CPU parameters are positions in the CPUs the harness was allowed when it
//! started (`pin::resolve_cpu`): a harness that may run only on CPU 1 (as a
//! pod given one exclusive core) pins Redis, its background threads, the
//! probe and itself to CPU 1 for position 0, and a position past its one
//! CPU is a clear error, not a pin to a CPU it does not own.

mod common;

use std::path::Path;
use std::process::Command;

/// Why this machine cannot restrict the harness to CPU 1 (None: it can).
fn cannot_restrict() -> Option<&'static str> {
    if limitbench_core::pin::num_cpus() < 2 {
        return Some("fewer than 2 CPUs allowed: no CPU 1 to restrict to");
    }
    if !Path::new("/usr/bin/taskset").exists() && !Path::new("/bin/taskset").exists() {
        return Some("taskset (util-linux) is not installed");
    }
    match limitbench_core::pin::current_cpus() {
        Ok(c) if c.contains(&1) => None,
        _ => Some("this process may not run on CPU 1"),
    }
}

/// `limitbench args...` under `taskset -c 1`.
fn on_cpu_1(args: &[&str]) -> common::Run {
    let out = Command::new("taskset")
        .args(["-c", "1", env!("CARGO_BIN_EXE_limitbench")])
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run taskset");
    common::Run {
        cmd: format!("taskset -c 1 limitbench {}", args.join(" ")),
        out,
    }
}

/// `stalls` at its smallest with every CPU parameter at position 0 (the
/// background threads too): one trim and one expiry of 1000 entries.
const STALLS_AT_0: &str = r#"
description = "stalls, every CPU parameter at position 0"
[defaults]
redis_cpu = 0
probe_cpu = 0
probe_rt_priority = 0
harness_cpu = 0
trim_probe = true
trim_sizes = [1000]
trim_trials = 1
expiry_sizes = [1000]
expiry_trials = 1
lazyfree_modes = ["yes"]
window_ms = 60000
build_chunk = 1000
probe_lead_ms = 5
probe_tail_ms = 5
slowlog_threshold_us = 100
member_len = 26
bio_cpulists = ["0"]
[smoke]
"#;

#[test]
fn position_0_of_a_harness_allowed_only_cpu_1_is_cpu_1() {
    if let Some(why) = cannot_restrict() {
        eprintln!("skipped: {why}");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let exp = tmp.path().join("experiments");
    std::fs::create_dir(&exp).unwrap();
    std::fs::write(exp.join("stalls.toml"), STALLS_AT_0).unwrap();
    let data = tmp.path().join("data");
    let r = on_cpu_1(&[
        "run",
        "stalls",
        "--size",
        "smoke",
        "--run-id",
        "t",
        "--data-dir",
        data.to_str().unwrap(),
        "--experiments-dir",
        exp.to_str().unwrap(),
    ]);
    r.expect_code(0);
    let run = data.join("t");
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("manifest.json")).unwrap()).unwrap();
    let cpus = &m["experiments"]["stalls"]["cpus"];
    assert_eq!(cpus["allowed_at_start"], "1", "{cpus}");
    for name in ["redis_cpu", "probe_cpu", "harness_cpu", "bio_cpulists[0]"] {
        assert_eq!(
            cpus[name],
            serde_json::json!({"position": 0, "cpu": 1}),
            "{name}: {cpus}"
        );
    }
    // Where redis-server's threads could run, read from /proc while each
    // event ran: the main thread and the background ones on CPU 1.
    let mut rd = csv::Reader::from_path(run.join("stalls.csv")).unwrap();
    let rows: Vec<limitbench::experiments::stalls::StallRow> =
        rd.deserialize().map(|r| r.unwrap()).collect();
    assert_eq!(rows.len(), 2, "{rows:?}");
    for row in &rows {
        let threads = row.redis_threads.as_deref().unwrap();
        assert!(threads.starts_with("redis-server:1;"), "{threads}");
        assert!(threads.split(';').all(|t| t.ends_with(":1")), "{threads}");
        assert_eq!(row.redis_cpu, Some(1), "{row:?}");
        assert_eq!(row.probe_cpu, Some(1), "{row:?}");
        assert_eq!(row.harness_cpu, Some(1), "{row:?}");
    }
    // The cell id keeps the position (the same on every machine), the row
    // says where the background threads ran.
    let expiry = rows.iter().find(|r| r.kind == "expire").unwrap();
    assert!(expiry.cell.ends_with("|bio-cpu0"), "{}", expiry.cell);
    assert_eq!(expiry.bio_cpus, "cpu1");
    assert_eq!(
        limitbench::experiments::stalls::analyze::threads_misplaced(expiry),
        None
    );
}

#[test]
fn a_position_past_the_allowed_cpus_is_an_error_naming_them() {
    if let Some(why) = cannot_restrict() {
        eprintln!("skipped: {why}");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    // cost's own parameters: Redis at position 0, the load at position 1.
    let r = on_cpu_1(&[
        "run",
        "cost",
        "--size",
        "smoke",
        "--run-id",
        "t",
        "--data-dir",
        tmp.path().to_str().unwrap(),
    ]);
    assert_ne!(r.code(), 0, "{}{}", r.stdout(), r.stderr());
    r.expect_output("`load_cpu` = 1").expect_output(
        "CPUs this process was allowed when it started (1: 1 CPU(s), positions 0 to 0)",
    );
    // Nothing was measured on a CPU it does not own.
    let csv = tmp.path().join("t/cost.csv");
    let rows = std::fs::read_to_string(&csv).unwrap_or_default();
    assert!(rows.lines().count() <= 1, "{rows}");
}
