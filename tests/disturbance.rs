//! Issue 31's analysis side: a claim judged on a cell whose committed
//! trials were disturbed (`schedule.csv`'s `disturbed`, or in old runs a
//! p99 slip past the bound) is `inconclusive (disturbed: ...)`, and every
//! claim names the cells it rests on (`Measured::rests_on`).

use std::path::Path;

use limitbench_analysis::Verdict;
use limitbench_analysis::experiments::concurrency::rows::Row;
use limitbench_analysis::rows::ScheduleRow;

const LIMIT: u64 = 100;
const TRIALS: u64 = 12;

fn write_csv<T: serde::Serialize>(dir: &Path, name: &str, rows: &[T]) {
    let mut w = csv::Writer::from_path(dir.join(name)).unwrap();
    for r in rows {
        w.serialize(r).unwrap();
    }
    w.flush().unwrap();
}

fn claims_file() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("analysis/claims.toml")
}

/// The claims table with A3.0's `still-valid` disturbance removed, into
/// `dir`: A3.0 then stands for any claim a disturbed cell voids.
fn voiding_claims(dir: &Path) -> std::path::PathBuf {
    let text = std::fs::read_to_string(claims_file()).unwrap();
    let start = text.find("id = \"A3.0\"").unwrap();
    let end = start + text[start..].find("[[claim]]").unwrap();
    let block: String = text[start..end]
        .lines()
        .filter(|l| !l.starts_with("disturbance"))
        .map(|l| format!("{l}\n"))
        .collect();
    let p = dir.join("claims.toml");
    std::fs::write(&p, format!("{}{block}{}", &text[..start], &text[end..])).unwrap();
    p
}

/// A run of concurrency's atomic cells only (A3.0: every atomic trial
/// admits exactly the limit), every trial exact, with its schedule; trial
/// 3 of `fixed-window-lua/c64/rtt0` was disturbed when `disturbed` is set.
fn run(dir: &Path, disturbed: &str) {
    let mut rows = Vec::new();
    let mut schedule = Vec::new();
    for strategy in ["fixed-window-lua", "token-bucket"] {
        for workers in [8u64, 64] {
            let cell = format!("{strategy}/c{workers}/rtt0");
            for trial in 0..TRIALS {
                rows.push(Row {
                    cell: cell.clone(),
                    trial,
                    seed: trial,
                    strategy: strategy.into(),
                    kind: "script".into(),
                    atomic_design: true,
                    workers,
                    target_rtt_ms: 0.0,
                    rtt_median_us: 70.0,
                    rtt_p99_us: 90.0,
                    rtt_sd_us: 5.0,
                    rtt_jitter_ms: 0.0,
                    one_way_delay_us: 0.0,
                    limit: LIMIT,
                    window_ms: 3_600_000,
                    offered: LIMIT + 2 * workers,
                    admitted: LIMIT,
                    over_admitted: 0,
                    errors: 0,
                    aborts: 0,
                    retries_exhausted: 0,
                    round_trips: 2 * (LIMIT + 2 * workers),
                    wall_ms: 5.0,
                    first_error: String::new(),
                });
                let hit = cell == "fixed-window-lua/c64/rtt0" && trial == 3;
                schedule.push(ScheduleRow {
                    experiment: "concurrency".into(),
                    cell: cell.clone(),
                    trial,
                    attempt: if hit { 2 } else { 0 },
                    slip_max_us: 300,
                    slip_p99_us: 200,
                    slip_bound_us: Some(2000),
                    beside: String::new(),
                    committed: true,
                    other_cpu_cores: Some(if hit && !disturbed.is_empty() {
                        0.9
                    } else {
                        0.01
                    }),
                    beside_lanes_cpu_cores: Some(0.0),
                    other_cpu_bound: Some(0.3),
                    disturbed: if hit { disturbed.into() } else { String::new() },
                    steal_cores: Some(0.0),
                });
            }
        }
    }
    write_csv(dir, "concurrency.csv", &rows);
    write_csv(dir, "schedule.csv", &schedule);
    let manifest = serde_json::json!({
        "size": "full",
        "seed": 1,
        "experiments": {"concurrency": {"outcome": "done", "seconds": 10.0}},
        "preflight": {"other_cpu_cores": 0.74, "busiest_other": "cc1 (4242) 0.61",
            "bound_cores": 0.2, "allowed_busy": true},
    });
    std::fs::write(dir.join("manifest.json"), manifest.to_string()).unwrap();
}

#[test]
fn a_claim_on_a_disturbed_cell_is_inconclusive_and_decided_once_it_is_clean() {
    let why = "others took 0.90 cores during the trial, past the bound 0.30";
    let dir = tempfile::tempdir().unwrap();
    run(dir.path(), why);
    let table = tempfile::tempdir().unwrap();
    let voiding = voiding_claims(table.path());
    let judged = limitbench::app::analyze(dir.path(), &voiding).unwrap();
    let a30 = judged.iter().find(|j| j.spec.id == "A3.0").unwrap();
    assert_eq!(a30.verdict, Verdict::Inconclusive, "{}", a30.why);
    assert!(
        a30.why
            .starts_with("inconclusive (disturbed: 1 committed trial(s) in 1 cell(s)"),
        "{}",
        a30.why
    );
    assert!(
        a30.why
            .contains("1 of 12 committed trials of concurrency cell fixed-window-lua/c64/rtt0"),
        "{}",
        a30.why
    );
    assert!(a30.why.contains(why), "{}", a30.why);
    // claims.csv and the report say it the same way.
    let csv = std::fs::read_to_string(dir.path().join("claims.csv")).unwrap();
    let line = csv.lines().find(|l| l.starts_with("A3.0,")).unwrap();
    assert!(
        line.contains(",inconclusive,") && line.contains("inconclusive (disturbed: "),
        "{line}"
    );
    let report = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    assert!(
        report.contains("**A3.0 inconclusive (disturbed)**"),
        "report"
    );
    let summary = &report[..report.find("## How to read").unwrap_or(report.len())];
    assert!(
        summary.contains("**This run was started on a busy machine**")
            && summary.contains("0.74 cores"),
        "{summary}"
    );
    assert!(
        summary.contains("**Disturbed cells:**")
            && summary.contains("fixed-window-lua/c64/rtt0 (1/12)")
            && summary.contains("A3.0"),
        "{summary}"
    );
    assert!(
        report.contains("others' CPU, median (cores)"),
        "the noise section reads the per-trial columns"
    );

    // A3.0 as claims.toml has it: a safety property a late schedule can
    // neither create nor hide (`disturbance = "still-valid"`): judged with
    // the disturbed trial counted, and it says so.
    let judged = limitbench::app::analyze(dir.path(), &claims_file()).unwrap();
    let a30 = judged.iter().find(|j| j.spec.id == "A3.0").unwrap();
    assert_eq!(a30.verdict, Verdict::Reproduced, "{}", a30.why);
    let csv = std::fs::read_to_string(dir.path().join("claims.csv")).unwrap();
    let line = csv.lines().find(|l| l.starts_with("A3.0,")).unwrap();
    assert!(line.contains("Disturbed trials counted"), "{line}");

    // The same data with the disturbance cleared: decided.
    let clean = tempfile::tempdir().unwrap();
    run(clean.path(), "");
    let judged = limitbench::app::analyze(clean.path(), &voiding).unwrap();
    let a30 = judged.iter().find(|j| j.spec.id == "A3.0").unwrap();
    assert_eq!(a30.verdict, Verdict::Reproduced, "{}", a30.why);
    let report = std::fs::read_to_string(clean.path().join("report.md")).unwrap();
    assert!(!report.contains("**Disturbed cells:**"));
}

/// The claims that name no cell on purpose: the informational run-time
/// and trial-count claims.
const NO_CELLS: &[&str] = &["A0", "B0"];

#[test]
fn every_claim_of_the_reference_names_the_cells_it_rests_on() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/reference");
    let dir = tempfile::tempdir().unwrap();
    for e in std::fs::read_dir(&src).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), dir.path().join(e.file_name())).unwrap();
        }
    }
    let judged = limitbench::app::analyze(dir.path(), &claims_file()).unwrap();
    let schedule = limitbench_analysis::disturbance::Disturbances::read(dir.path()).unwrap();
    assert!(schedule.present && !schedule.cells.is_empty());
    let mut blind = Vec::new();
    let mut unknown = Vec::new();
    for j in &judged {
        let Some(m) = &j.measured else { continue };
        if NO_CELLS.contains(&j.spec.id.as_str()) {
            assert!(
                m.no_cells && m.rests_on.is_empty(),
                "{} names cells",
                j.spec.id
            );
            continue;
        }
        if m.rests_on.is_empty() {
            blind.push(j.spec.id.clone());
        }
        // Every cell named is one the schedule knows (else no disturbance
        // of it could be found), the swept settings' too.
        let e = j.spec.experiment.as_str();
        for c in m
            .rests_on
            .iter()
            .chain(m.sweep.iter().flat_map(|a| a.rests_on.iter()))
        {
            if !schedule.names_a_cell(e, c) {
                unknown.push(format!("{}: {c}", j.spec.id));
            }
        }
    }
    assert!(blind.is_empty(), "claims naming no cells: {blind:?}");
    unknown.dedup();
    assert!(
        unknown.is_empty(),
        "cells the schedule does not know: {unknown:?}"
    );
}
