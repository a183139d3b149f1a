//! The scorecard in lanes (`--parallel`, issue 32) on real redis-server,
//! smoke size: three strategies scored one after another and in three
//! lanes give the same verdict on every column whose verdict the built-ins
//! decide with a margin (works, exactness, the promise patterns, the 1 s
//! skew, memory); in lanes the strategies' lane probes did run side by
//! side, and the probes that time CPU (cost, concurrency) and `works` ran
//! alone: nothing of another strategy beside them, by the scorecard's own
//! record and by their wall-clock times.

mod common;

use std::collections::BTreeMap;

use limitbench::run::Size;
use limitbench::scorecard::{self as sc, Config, ScorecardServer};
use limitbench_analysis::scorecard::CellVerdict;

const STRATEGIES: [&str; 3] = ["token-bucket", "fixed-window-lua", "sliding-window-log"];

/// Columns whose verdicts the three decide with a margin at smoke size
/// (token-bucket and the log pass the promise patterns, the fixed window
/// fails them by 2x; all three are exact and on Redis's clock).
const DETERMINISTIC: [&str; 9] = [
    "works",
    "exact-0ms",
    "exact-6.7ms",
    "straddle",
    "quiet-burst",
    "burst-sustained",
    "anchored",
    "clock-1s",
    "memory",
];

fn config(out: &std::path::Path, lanes: usize) -> Config {
    Config {
        strategies: STRATEGIES.map(String::from).to_vec(),
        dir: None,
        size: Size::Smoke,
        target: ScorecardServer::Own(common::redis()),
        key_prefix: "limitbench:test:".into(),
        out: out.to_path_buf(),
        experiments_dir: std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments"),
        promise_limit: None,
        promise_window_ms: None,
        broken: Vec::new(),
        lanes,
    }
}

fn verdicts(card: &sc::Scorecard) -> BTreeMap<(String, &'static str), CellVerdict> {
    let mut v = BTreeMap::new();
    for s in STRATEGIES {
        for p in DETERMINISTIC {
            let c = card.cell(s, p).unwrap_or_else(|| panic!("no cell {s}/{p}"));
            v.insert((s.to_string(), p), c.verdict);
        }
    }
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lanes_give_the_same_verdicts_and_cpu_probes_run_alone() {
    let one = tempfile::tempdir().unwrap();
    let t = std::time::Instant::now();
    let mut order = Vec::new();
    let seq = sc::run(&config(one.path(), 1), |r| order.push(r.strategy.clone()))
        .await
        .expect("the sequential scorecard runs");
    let seq_secs = t.elapsed().as_secs_f64();
    assert_eq!(order, STRATEGIES);
    assert_eq!(seq.lanes, 1);

    let three = tempfile::tempdir().unwrap();
    let t = std::time::Instant::now();
    let mut order = Vec::new();
    let par = sc::run(&config(three.path(), 3), |r| order.push(r.strategy.clone()))
        .await
        .expect("the scorecard in lanes runs");
    let par_secs = t.elapsed().as_secs_f64();
    eprintln!("one after another {seq_secs:.1} s, in 3 lanes {par_secs:.1} s");
    // Rows and progress in the strategies' order, whatever order they ended in.
    assert_eq!(order, STRATEGIES);
    let rows: Vec<&str> = par.results.iter().map(|r| r.strategy.as_str()).collect();
    assert_eq!(rows, STRATEGIES);
    assert_eq!(par.lanes, 3);

    // The same verdicts, cell by cell, and the expected ones.
    let (a, b) = (verdicts(&seq), verdicts(&par));
    assert_eq!(a, b, "one after another vs in lanes");
    let key = |s: &str, p: &'static str| (s.to_string(), p);
    assert_eq!(b[&key("token-bucket", "straddle")], CellVerdict::Pass);
    assert_eq!(b[&key("fixed-window-lua", "straddle")], CellVerdict::Fail);
    assert_eq!(
        b[&key("sliding-window-log", "exact-6.7ms")],
        CellVerdict::Pass
    );
    for r in &par.results {
        assert!(
            r.cells.iter().all(|c| c.verdict != CellVerdict::Error),
            "{:?}",
            r.cells
        );
    }

    // Which ran beside which: the lane probes overlapped other strategies'
    // (else nothing ran in lanes), the CPU ones nothing.
    let all: Vec<(&str, &sc::lanes::ProbeTime)> = par
        .results
        .iter()
        .flat_map(|r| r.probes.iter().map(move |p| (r.strategy.as_str(), p)))
        .collect();
    let lane_beside = all
        .iter()
        .filter(|(_, p)| p.part == "lanes" && !p.beside.is_empty())
        .count();
    assert!(
        lane_beside >= 2,
        "no lane probe ran beside another: {all:?}"
    );
    for (s, p) in &all {
        if !["cost", "concurrency", "baseline"].contains(&p.experiment.as_str()) {
            continue;
        }
        assert_eq!(p.part, "alone", "{s}/{}", p.experiment);
        assert!(p.beside.is_empty(), "{s}/{}: {:?}", p.experiment, p.beside);
        // And by the wall clock: no other strategy's probe overlaps it.
        for (o, q) in &all {
            if o != s {
                assert!(
                    q.ended_ms <= p.started_ms || q.started_ms >= p.ended_ms,
                    "{o}/{} ran during {s}/{}",
                    q.experiment,
                    p.experiment
                );
            }
        }
    }
    assert!(all.iter().filter(|(_, p)| p.experiment == "cost").count() == 3);

    // The probe folder's manifest says the same, and scorecard.json says
    // what a strategy's seconds are.
    let m: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(three.path().join("probes/token-bucket/manifest.json")).unwrap(),
    )
    .unwrap();
    let cost = &m["experiments"]["cost"]["scorecard"];
    assert_eq!(cost["part"], "alone", "{m}");
    assert_eq!(cost["beside"], serde_json::json!([]), "{m}");
    assert_eq!(m["experiments"]["bursts"]["scorecard"]["part"], "lanes");
    sc::output::write_all(three.path(), &par).unwrap();
    let j: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(three.path().join("scorecard.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(j["lanes"], 3);
    assert!(
        j["seconds_per_strategy_are"]
            .as_str()
            .unwrap()
            .contains("sum"),
        "{j}"
    );
    assert_eq!(j["results"][0]["probes"].as_array().unwrap().len(), 6);
}
