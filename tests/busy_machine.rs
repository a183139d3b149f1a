//! A run knows when it was disturbed (issue 31): a CPU hog that is not the
//! harness's own, started beside a run, stops a quick run at its preflight
//! (unless `--allow-busy`), and marks every trial it overlapped as
//! disturbed in `schedule.csv`; the claims judged on those cells are
//! `inconclusive (disturbed: ...)`, never decided.

mod common;

use std::process::{Child, Command};

use common::limitbench;

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
}
