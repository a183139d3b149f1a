//! A run knows when it was disturbed (issue 31): a CPU hog that is not the
//! harness's own, started beside a run, stops a quick run at its preflight
//! (unless `--allow-busy`), and marks every trial it overlapped as
//! disturbed in `schedule.csv`; the claims judged on those cells are
//! `inconclusive (disturbed: ...)`, never decided.

mod common;

use std::process::{Child, Command};

use common::limitbench;

/// The tests here measure the machine: one at a time (a hog of one would
/// disturb the other).
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A busy loop in another process (a child of the test, not of the
/// harness), killed when dropped.
struct Hog(Child);

impl Hog {
    fn start() -> Self {
        let c = Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .expect("start a busy loop");
        // Let it show in the CPU times.
        std::thread::sleep(std::time::Duration::from_millis(300));
        Hog(c)
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_hog_beside_the_run_stops_the_preflight_and_marks_the_trials_it_disturbed() {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data_s = data.to_str().unwrap();
    let hog = Hog::start();

    // A quick run refuses a busy machine, naming the way on, and writes nothing.
    let busy = limitbench(
        &[
            "run",
            "concurrency",
            "--size",
            "quick",
            "--data-dir",
            data_s,
            "--run-id",
            "busy",
        ],
        None,
    );
    assert_ne!(busy.code(), 0, "{}", busy.stderr());
    assert!(
        busy.stderr().contains("the machine is busy"),
        "{}",
        busy.stderr()
    );
    assert!(busy.stderr().contains("--allow-busy"), "{}", busy.stderr());
    assert!(!data.join("busy").exists());

    // A smoke run (no preflight) beside the hog: every trial's window saw it.
    let run = limitbench(
        &[
            "run",
            "concurrency",
            "--size",
            "smoke",
            "--strategy",
            "check-then-act",
            "--data-dir",
            data_s,
            "--run-id",
            "hogged",
        ],
        None,
    );
    drop(hog);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    assert!(run.stderr().contains("disturbed"), "{}", run.stderr());
    let table = std::fs::read_to_string(data.join("hogged/schedule.csv")).unwrap();
    let mut rdr = csv::Reader::from_reader(table.as_bytes());
    let rows: Vec<limitbench_analysis::rows::ScheduleRow> =
        rdr.deserialize().collect::<Result<_, _>>().unwrap();
    let committed: Vec<_> = rows.iter().filter(|r| r.committed).collect();
    assert!(!committed.is_empty());
    for r in &committed {
        // The hog took about a core; the harness's own processes are not counted.
        assert!(r.other_cpu_cores.unwrap() > 0.5, "{r:?}");
        assert_eq!(r.other_cpu_bound, Some(0.1));
        assert!(r.disturbed.contains("other processes took"), "{r:?}");
        assert!(
            r.disturbed.contains("(busiest: "),
            "the busiest is named: {r:?}"
        );
    }
    // The claim judged on those cells decides nothing.
    let an = limitbench(&["analyze", data.join("hogged").to_str().unwrap()], None);
    assert_eq!(an.code(), 0, "{}", an.stderr());
    let claims = std::fs::read_to_string(data.join("hogged/claims.csv")).unwrap();
    let a11 = claims
        .lines()
        .find(|l| l.starts_with("A1.1,"))
        .expect("A1.1 judged");
    assert!(
        a11.contains("inconclusive") && a11.contains("disturbed"),
        "{a11}"
    );
}

/// The pids of `parent`'s children named `name`.
fn children(parent: u32, name: &str) -> Vec<u32> {
    ::limitbench::run::proctree::snapshot()
        .into_iter()
        .filter(|(_, p)| p.ppid == parent && p.name.starts_with(name))
        .map(|(pid, _)| pid)
        .collect()
}

#[test]
fn a_trial_whose_server_stood_still_is_redone_never_stored() {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let exp = common::small_experiments(dir.path());
    // Skew at smoke size with 4-second trials: a 3-second stop of the
    // server lands inside one.
    let skew = std::fs::read_to_string(exp.join("skew.toml")).unwrap();
    std::fs::write(
        exp.join("skew.toml"),
        skew.replacen("durations_ms = [1000] }", "durations_ms = [4000] }", 1),
    )
    .unwrap();
    let data = dir.path().join("data");
    let child = Command::new(env!("CARGO_BIN_EXE_limitbench"))
        .args([
            "run",
            "skew",
            "--size",
            "smoke",
            "--parallel",
            "1",
            "--strategy",
            "fixed-window-lua",
            "--experiments-dir",
            exp.to_str().unwrap(),
            "--data-dir",
            data.to_str().unwrap(),
            "--run-id",
            "stalled",
        ])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let t = std::time::Instant::now();
    let server = loop {
        if let Some(s) = children(pid, "redis-server").first() {
            break *s;
        }
        assert!(t.elapsed().as_secs() < 30, "no redis-server started");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    // Inside a trial: once a trial's keys are on a server. (A server's
    // process title reads `redis-server 127.0.0.1:<port>`.)
    std::thread::sleep(std::time::Duration::from_millis(300));
    let servers = children(pid, "redis-server");
    let ports: Vec<String> = servers
        .iter()
        .filter_map(|s| {
            let title = std::fs::read_to_string(format!("/proc/{s}/cmdline")).ok()?;
            let addr = title
                .split(['\0', ' '])
                .find(|a| a.contains(':'))?
                .to_string();
            Some(addr.rsplit(':').next()?.to_string())
        })
        .collect();
    assert!(!ports.is_empty(), "no server port among {servers:?}");
    let _ = server;
    loop {
        let keys: u64 = ports
            .iter()
            .map(|port| {
                Command::new("redis-cli")
                    .args(["-p", port, "DBSIZE"])
                    .output()
                    .map(|o| {
                        String::from_utf8_lossy(&o.stdout)
                            .trim()
                            .parse::<u64>()
                            .unwrap_or(0)
                    })
                    .unwrap_or(0)
            })
            .sum();
        if keys > 0 {
            break;
        }
        assert!(t.elapsed().as_secs() < 60, "no trial wrote a key");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    let kill = |sig: &str| {
        for s in &servers {
            Command::new("kill")
                .args([sig, &s.to_string()])
                .status()
                .unwrap();
        }
    };
    kill("-STOP");
    std::thread::sleep(std::time::Duration::from_secs(3));
    kill("-CONT");
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // Every stored trial ran on time; the stalled attempt is in the schedule, not stored.
    let rows = std::fs::read_to_string(data.join("stalled/skew.csv")).unwrap();
    let mut rdr = csv::Reader::from_reader(rows.as_bytes());
    let header = rdr.headers().unwrap().clone();
    let col = header.iter().position(|h| h == "lateness_p99_us").unwrap();
    for r in rdr.records() {
        let late: f64 = r.unwrap()[col].parse().unwrap();
        assert!(late < 1e6, "a stored trial ran {late} us late");
    }
    let schedule = std::fs::read_to_string(data.join("stalled/schedule.csv")).unwrap();
    assert!(
        schedule
            .lines()
            .any(|l| l.contains("stalled:") && l.contains(",false,")),
        "{schedule}"
    );
}
