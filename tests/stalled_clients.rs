//! The stalled clients and the fail-open schedule, recorded (issue 35): a
//! smoke run of `stalls` and `fail-open` on real redis-servers writes every
//! probe PING (`stalls-pings.csv`) and every fail-open decision with its
//! intended send time (`fail-open-history.csv`), and the rows agree with
//! the summaries the claims are judged on. The analysis of that run draws
//! the stalled clients and the fail-open latency from the schedule.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use common::limitbench;

type Rows = Vec<HashMap<String, String>>;

/// A table of the run, plain or compressed (a table of 256 KiB or more is
/// compressed at the run's end: a slower machine sends more PINGs).
fn read(run: &Path, name: &str) -> Rows {
    let path = limitbench_base::files::find_table(run, name)
        .unwrap_or_else(|| panic!("{name}: neither plain nor compressed in {}", run.display()));
    let bytes = limitbench_base::files::read_maybe_compressed(&path).unwrap();
    let mut r = csv::Reader::from_reader(bytes.as_slice());
    let headers = r.headers().unwrap().clone();
    r.records()
        .map(|rec| {
            let rec = rec.unwrap();
            headers
                .iter()
                .zip(rec.iter())
                .map(|(h, v)| (h.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

fn num(row: &HashMap<String, String>, col: &str) -> f64 {
    row[col]
        .parse()
        .unwrap_or_else(|_| panic!("{col} = {:?}", row[col]))
}

/// Every stalls.csv measurement's PINGs: as many as it counted, its
/// during-PINGs' worst is its `probe_worst_ms`, its before-PINGs' worst its
/// baseline, the phases in time order; the biggest trim's stall is seen.
fn check_stalls(run: &Path) {
    let stalls = read(run, "stalls.csv");
    let pings = read(run, "stalls-pings.csv");
    assert!(!stalls.is_empty());
    let mut by: BTreeMap<(String, String), Vec<&HashMap<String, String>>> = BTreeMap::new();
    for p in &pings {
        by.entry((p["cell"].clone(), p["trial"].clone()))
            .or_default()
            .push(p);
    }
    assert_eq!(by.len(), stalls.len(), "one group of PINGs per measurement");
    let worst = |ps: &[&HashMap<String, String>], phase: &str| {
        ps.iter()
            .filter(|p| p["phase"] == phase)
            .map(|p| num(p, "rtt_ms"))
            .fold(0.0, f64::max)
    };
    for s in &stalls {
        let ps = &by[&(s["cell"].clone(), s["trial"].clone())];
        let cell = &s["cell"];
        assert_eq!(ps.len() as f64, num(s, "probe_pings"), "{cell}");
        let during = ps.iter().filter(|p| p["phase"] == "during").count();
        assert_eq!(during as f64, num(s, "probe_pings_during"), "{cell}");
        assert!(during > 0, "{cell}: no PING in flight during the event");
        let d = worst(ps, "during");
        assert!((d - num(s, "probe_worst_ms")).abs() < 0.001, "{cell}: {d}");
        let b = worst(ps, "before");
        assert!(
            (b - num(s, "probe_baseline_worst_ms")).abs() < 0.001,
            "{cell}: {b}"
        );
        // The probe sends back to back: before-PINGs were all sent before
        // any during-PING, after-PINGs after every one of them.
        let sent = |phase: &str| -> Vec<f64> {
            ps.iter()
                .filter(|p| p["phase"] == phase)
                .map(|p| num(p, "sent_ms"))
                .collect()
        };
        let max = |v: &[f64]| v.iter().copied().fold(f64::MIN, f64::max);
        let min = |v: &[f64]| v.iter().copied().fold(f64::MAX, f64::min);
        let (bf, du, af) = (sent("before"), sent("during"), sent("after"));
        assert!(bf.is_empty() || max(&bf) < min(&du), "{cell}");
        assert!(af.is_empty() || max(&du) < min(&af), "{cell}");
        assert!(
            ps.iter()
                .all(|p| ["before", "during", "after"].contains(&p["phase"].as_str())),
            "{cell}"
        );
    }
    // The biggest trim stalls Redis for its SLOWLOG time: a PING in flight
    // waits for most of it (a probe that missed the stall fails here).
    let big = stalls
        .iter()
        .filter(|s| s["kind"] == "trim")
        .max_by(|a, b| num(a, "entries").total_cmp(&num(b, "entries")))
        .expect("a trim");
    let slow_ms = num(big, "slowlog_us") / 1000.0;
    let seen = num(big, "probe_worst_ms");
    assert!(
        seen >= 0.5 * slow_ms,
        "{}: probe saw {seen} ms of a {slow_ms} ms trim",
        big["cell"]
    );
}

/// Every fail-open decision is in the history once, due on the steady
/// schedule (one every 1/offered s), and sent no earlier than due: latency
/// from the schedule is never below latency from the send.
fn check_fail_open(run: &Path) {
    let hist = read(run, "fail-open-history.csv");
    let summary = read(run, "fail-open-summary.csv");
    assert!(!summary.is_empty());
    for s in &summary {
        let cell = &s["cell"];
        let mut rows: Vec<&HashMap<String, String>> = hist
            .iter()
            .filter(|h| &h["cell"] == cell && h["trial"] == s["trial"])
            .collect();
        assert_eq!(rows.len() as f64, num(s, "decisions"), "{cell}");
        rows.sort_by(|a, b| num(a, "intended_us").total_cmp(&num(b, "intended_us")));
        let gap = 1e6 / num(s, "offered_per_s");
        for w in rows.windows(2) {
            let step = num(w[1], "intended_us") - num(w[0], "intended_us");
            assert!((step - gap).abs() <= 1.0, "{cell}: a step of {step} us");
        }
        let mut late = 0;
        for r in &rows {
            let (i, s_, rep) = (
                num(r, "intended_us"),
                num(r, "sent_us"),
                num(r, "replied_us"),
            );
            assert!(s_ >= i, "{cell}: sent at {s_} before due at {i}");
            assert!(rep - i >= rep - s_);
            late += (s_ > i) as u32;
            assert_eq!(r["error"], "false");
        }
        // The timer never fires early, so some sends are late.
        assert!(late > 0, "{cell}");
    }
}

#[test]
fn a_smoke_run_records_every_ping_and_every_scheduled_send() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data_s = data.to_str().unwrap();
    let run = limitbench(
        &[
            "run",
            "stalls",
            "fail-open",
            "--size",
            "smoke",
            "--parallel",
            "1",
            "--data-dir",
            data_s,
            "--run-id",
            "r",
        ],
        None,
    );
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let run_dir = data.join("r");
    check_stalls(&run_dir);
    check_fail_open(&run_dir);
    // A copy without the new tables, as runs before them are.
    let old = dir.path().join("old");
    common::copy_dir(&run_dir, &old);
    for name in ["stalls-pings.csv", "fail-open-history.csv"] {
        let table = limitbench_base::files::find_table(&old, name).unwrap();
        std::fs::remove_file(table).unwrap();
    }
    check_figures(&run_dir);
    check_without_the_new_tables(&old);
}

/// Lines per panel of a drawn figure, from its numbers-drawn CSV.
fn lines(figures: &Path, name: &str) -> BTreeMap<String, std::collections::BTreeSet<String>> {
    let csv = figures.join(format!("{name}.csv"));
    let mut out: BTreeMap<String, std::collections::BTreeSet<String>> = BTreeMap::new();
    for r in csv::Reader::from_path(&csv)
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .records()
    {
        let r = r.unwrap();
        if r.get(1) == Some("data") {
            out.entry(r[0].to_string())
                .or_default()
                .insert(r[2].to_string());
        }
    }
    out
}

/// The analysis draws the stalled clients (during and outside, at most
/// four lines a panel) and fail-open from the schedule beside the send.
fn check_figures(run: &Path) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    limitbench::app::analyze(run, &root.join("analysis/claims.toml")).unwrap();
    let figures = run.join("figures");
    let stalled = lines(&figures, "latency-stalled-clients");
    assert!(!stalled.is_empty(), "no stalled-clients figure");
    for (panel, series) in &stalled {
        assert!(series.len() <= 4, "{panel}: {series:?}");
        assert!(
            series.iter().any(|s| s.ends_with("during")),
            "{panel}: {series:?}"
        );
        assert!(
            series.iter().any(|s| s.ends_with("outside")),
            "{panel}: {series:?}"
        );
    }
    let fo = lines(&figures, "latency-fail-open-deadline");
    let all: Vec<&String> = fo.values().flatten().collect();
    for policy in ["fail-open", "fail-closed"] {
        for how in ["from send", "from schedule"] {
            let name = format!("{policy}, {how}");
            assert!(all.iter().any(|s| **s == name), "no {name}: {all:?}");
        }
    }
    for name in ["latency-stalled-clients", "latency-fail-open-deadline"] {
        let svg = std::fs::read_to_string(figures.join(format!("{name}.svg"))).unwrap();
        let problems = limitbench_analysis::figure::text_problems(&svg);
        assert!(problems.is_empty(), "{name}: {problems:?}");
    }
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(report.contains("latency-stalled-clients.png"));
    assert!(!report.contains("a run of this code records them"));
}

/// A run without the PINGs and the schedule: one line says what is
/// missing, no empty figure.
fn check_without_the_new_tables(run: &Path) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    limitbench::app::analyze(run, &root.join("analysis/claims.toml")).unwrap();
    assert!(!run.join("figures/latency-stalled-clients.png").exists());
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(
        report.contains("`sent_ms`, `rtt_ms` and `phase` of each PING"),
        "the stalls line"
    );
    assert!(
        report.contains("no intended send times (`fail-open-history.csv`"),
        "the fail-open line"
    );
    let fo = lines(&run.join("figures"), "latency-fail-open-deadline");
    assert!(
        !fo.values().flatten().any(|s| s.contains("from schedule")),
        "{fo:?}"
    );
}
