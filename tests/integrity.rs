//! Run integrity (issue 12), tried as a hostile user would: a redis-server
//! killed mid-trial, torn and ragged CSVs, a strategy whose every decision
//! fails, a broken file of a later experiment, a run started from another
//! directory, a resume with a different strategy filter. Each test runs the
//! real binary against real servers.

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{limitbench, small_experiments};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// (cell, trial) keys and error counts of a concurrency.csv.
fn trials(csv: &Path) -> (BTreeSet<(String, u64)>, u64) {
    let mut rdr = csv::Reader::from_path(csv).unwrap();
    let h = rdr.headers().unwrap().clone();
    let ci = h.iter().position(|x| x == "cell").unwrap();
    let ti = h.iter().position(|x| x == "trial").unwrap();
    let ei = h.iter().position(|x| x == "errors").unwrap();
    let mut keys = BTreeSet::new();
    let mut errors = 0;
    let mut rows = 0;
    for r in rdr.records() {
        let r = r.unwrap();
        keys.insert((r[ci].to_string(), r[ti].parse().unwrap()));
        errors += r[ei].parse::<u64>().unwrap();
        rows += 1;
    }
    assert_eq!(
        rows,
        keys.len(),
        "a (cell, trial) committed twice in {}",
        csv.display()
    );
    (keys, errors)
}

/// The redis-server processes whose parent is `pid`.
fn child_servers(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(child) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) else {
            continue;
        };
        let Some((name, rest)) = stat.split_once(") ") else {
            continue;
        };
        let ppid: u32 = rest
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        if ppid == pid && name.ends_with("(redis-server") {
            out.push(child);
        }
    }
    out
}

#[test]
fn a_server_killed_mid_trial_commits_nothing_bad_and_resume_redoes_it() {
    let tmp = tempfile::tempdir().unwrap();
    let exp = small_experiments(tmp.path());
    let data = tmp.path().join("data");
    let args = |extra: &[&str]| {
        let mut v: Vec<String> = ["run", "concurrency", "--size", "smoke", "--experiments-dir"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        v.push(exp.display().to_string());
        v.push("--data-dir".into());
        v.push(data.display().to_string());
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    // An uninterrupted run: the keys every run must end with.
    let full = args(&["--run-id", "whole"]);
    let r = limitbench(&full.iter().map(String::as_str).collect::<Vec<_>>(), None);
    r.expect_code(0);
    let (want, errs) = trials(&data.join("whole/concurrency.csv"));
    assert_eq!(errs, 0);

    // The same run, its redis-server killed once some trials are committed.
    let killed = args(&["--run-id", "killed"]);
    let child = Command::new(env!("CARGO_BIN_EXE_limitbench"))
        .args(&killed)
        .current_dir(ROOT)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let csv = data.join("killed/concurrency.csv");
    let t0 = Instant::now();
    loop {
        let lines = std::fs::read_to_string(&csv)
            .map(|t| t.lines().count())
            .unwrap_or(0);
        if lines > 12 {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the run committed no trials in 60 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let servers = child_servers(child.id());
    assert!(!servers.is_empty(), "no redis-server child found");
    for s in &servers {
        unsafe {
            libc::kill(*s as i32, libc::SIGKILL);
        }
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr:\n{stderr}");
    assert!(
        stderr.contains("redis-server on 127.0.0.1:") && stderr.contains(" died during "),
        "the error must say which Redis died:\n{stderr}"
    );
    let (before, errors) = trials(&csv);
    assert_eq!(
        errors, 0,
        "a trial cut short by the dead server was committed"
    );
    assert!(before.len() < want.len());

    // Resume redoes what was not committed and ends like the whole run.
    let resumed = args(&["--resume", "killed"]);
    limitbench(
        &resumed.iter().map(String::as_str).collect::<Vec<_>>(),
        None,
    )
    .expect_code(0);
    let (after, errors) = trials(&csv);
    assert_eq!(errors, 0);
    assert_eq!(
        after, want,
        "resumed rows differ from an uninterrupted run's"
    );

    // The manifest keeps each session's time and sums them.
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(data.join("killed/manifest.json")).unwrap())
            .unwrap();
    let e = &m["experiments"]["concurrency"];
    let sessions = e["sessions"].as_array().expect("sessions");
    assert_eq!(sessions.len(), 2, "one session per start: {e}");
    let sum: f64 = sessions
        .iter()
        .map(|s| s["seconds"].as_f64().unwrap())
        .sum();
    assert!(sessions[0]["seconds"].as_f64().unwrap() > 0.0, "{e}");
    assert!((e["seconds"].as_f64().unwrap() - sum).abs() < 0.11, "{e}");

    // A resume with another strategy filter is refused.
    let other = args(&["--resume", "killed", "--strategy", "token-bucket"]);
    limitbench(&other.iter().map(String::as_str).collect::<Vec<_>>(), None)
        .expect_code(2)
        .expect_output("cannot be resumed with different inputs");
}

#[test]
fn analyze_skips_a_torn_line_and_rejects_ragged_rows_and_non_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let exp = small_experiments(tmp.path());
    let data = tmp.path().join("data");
    limitbench(
        &[
            "run",
            "concurrency",
            "--size",
            "smoke",
            "--strategy",
            "token-bucket",
            "--run-id",
            "r",
            "--experiments-dir",
            exp.to_str().unwrap(),
            "--data-dir",
            data.to_str().unwrap(),
        ],
        None,
    )
    .expect_code(0);
    let run = data.join("r");
    let csv = run.join("concurrency.csv");
    let good = std::fs::read_to_string(&csv).unwrap();
    // Torn: the last line cut in half (what a kill leaves): a warning, exit 0.
    std::fs::write(&csv, &good[..good.len() - 20]).unwrap();
    limitbench(&["analyze", run.to_str().unwrap()], None)
        .expect_code(0)
        .expect_output("is torn");
    // Ragged: a row with too few fields in the middle: an error naming the line.
    let mut lines: Vec<&str> = good.lines().collect();
    lines.insert(2, "a,b,c");
    std::fs::write(&csv, lines.join("\n") + "\n").unwrap();
    limitbench(&["analyze", run.to_str().unwrap()], None)
        .expect_code(2)
        .expect_output("line 3: 3 fields where the header has");
    // A folder that is not a run: an error, and nothing written into it.
    let empty = tmp.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    limitbench(&["analyze", empty.to_str().unwrap()], None)
        .expect_code(2)
        .expect_output("is not a run folder");
    assert_eq!(std::fs::read_dir(&empty).unwrap().count(), 0);
}

#[test]
fn a_strategy_whose_every_decision_fails_is_an_error_of_the_run() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("strategies");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("bad5.lua"),
        "redis.call('INCR', KEYS[1])\nredis.call('PEXPIRE', KEYS[1], 60000)\nreturn {1, 0, -1}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("bad5.toml"),
        "name = \"bad5\"\nscript = \"bad5.lua\"\nkeys = [\"rl:{${client}}:b5\"]\nargs = [\"${limit}\", \"${cost}\"]\n[reply]\nadmitted = 5\n",
    )
    .unwrap();
    let exp = small_experiments(tmp.path());
    let data = tmp.path().join("data");
    limitbench(
        &[
            "run",
            "concurrency",
            "--size",
            "smoke",
            "--strategy",
            "bad5",
            "--dir",
            dir.to_str().unwrap(),
            "--experiments-dir",
            exp.to_str().unwrap(),
            "--data-dir",
            data.to_str().unwrap(),
        ],
        None,
    )
    .expect_code(1)
    .expect_output("decisions of `bad5` failed")
    .expect_output("reply[5] is absent (nil: the reply array has 3 elements)");
    assert!(
        std::fs::symlink_metadata(data.join("latest")).is_err(),
        "data/latest moved to a run that committed no trial"
    );
    // `check` reports every check, each as an ERROR, and exits 1.
    let r = limitbench(&["check", "bad5", "--dir", dir.to_str().unwrap()], None);
    r.expect_code(1)
        .expect_output("ERROR exact-limit")
        .expect_output("ERROR cost");
}

#[test]
fn a_broken_file_of_a_later_experiment_stops_the_run_before_it_starts() {
    let tmp = tempfile::tempdir().unwrap();
    let exp = small_experiments(tmp.path());
    let failover = exp.join("failover.toml");
    let text = std::fs::read_to_string(&failover).unwrap();
    std::fs::write(
        &failover,
        text.replacen("trials = 1", "trials = \"one\"", 1),
    )
    .unwrap();
    let data = tmp.path().join("data");
    limitbench(
        &[
            "run",
            "concurrency",
            "failover",
            "--size",
            "smoke",
            "--experiments-dir",
            exp.to_str().unwrap(),
            "--data-dir",
            data.to_str().unwrap(),
        ],
        None,
    )
    .expect_code(2)
    .expect_output("the run was not started")
    .expect_output("failover.toml")
    .expect_output("[smoke] trials");
    assert!(
        !data.exists() || std::fs::read_dir(&data).unwrap().count() == 0,
        "a run folder was written"
    );
}

#[test]
fn a_run_started_from_another_directory_finds_the_project() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    // The current directory is an empty temp folder: the binary finds the
    // project's experiments/ and claims table from its own location.
    limitbench(
        &[
            "run",
            "replication",
            "--size",
            "smoke",
            "--run-id",
            "elsewhere",
            "--data-dir",
            data.to_str().unwrap(),
        ],
        Some(tmp.path()),
    )
    .expect_code(0);
    assert!(data.join("elsewhere/replication.csv").exists());
    assert!(!tmp.path().join("experiments").exists());
    limitbench(
        &["analyze", data.join("elsewhere").to_str().unwrap()],
        Some(tmp.path()),
    )
    .expect_code(0);
}
