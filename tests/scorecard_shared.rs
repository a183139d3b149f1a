//! The scorecard's shared servers (`run::context::SharedFleets`): on servers
//! of our own the cluster probe's cluster is started once and lent to every
//! strategy's probe; each strategy still works on it, each probe folder
//! describes the same cluster and says whether it started it, and the
//! cluster stops when the scorecard lets go of it.

mod common;

use std::sync::Arc;

use limitbench::run::Size;
use limitbench::run::context::SharedFleets;
use limitbench::scorecard as sc;
use limitbench::scorecard::probe::StrategyRun;
use limitbench::scorecard::properties::PROBES;
use limitbench_analysis::scorecard::{CellOutcome, ProbeRows};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cluster_probe_borrows_one_cluster_for_every_strategy() {
    let out = tempfile::tempdir().unwrap();
    let names = ["token-bucket", "fixed-window-lua"];
    let cfg = common::own_scorecard(&names, None, Size::Quick, out.path());
    let probe = PROBES.iter().find(|p| p.experiment == "cluster").unwrap();
    let shared = Arc::new(SharedFleets::default());
    let before = limitbench_core::fleet::reaper::live_count();
    let mut ports = Vec::new();
    let mut notes = Vec::new();
    for name in names {
        let s = sc::build(name, None, &Default::default()).unwrap();
        let run = StrategyRun::start(&cfg, name)
            .await
            .unwrap()
            .with_shared(Some(shared.clone()));
        run.probe(probe).await.unwrap();
        // The strategy works on the borrowed cluster as on its own.
        for (prop, r) in (probe.judge)(&ProbeRows::new(run.dir(), name, &sc::declared(s.info()))) {
            match r.unwrap() {
                CellOutcome::Measured { value, detail, .. } => {
                    assert_eq!(value, 1.0, "{name} {prop}: {detail}")
                }
                other => panic!("{name} {prop}: {other:?}"),
            }
        }
        let m: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(run.dir().join("manifest.json")).unwrap(),
        )
        .unwrap();
        let c = &m["experiments"]["cluster"];
        let mut p: Vec<u64> = c["fleet-3"]["servers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["port"].as_u64().unwrap())
            .collect();
        p.sort();
        ports.push(p);
        notes.push(c["fleet-3-shared"].as_str().unwrap_or("").to_string());
    }
    // One cluster: the same three ports; the first probe started it.
    assert_eq!(ports[0].len(), 3, "{ports:?}");
    assert_eq!(
        ports[0], ports[1],
        "each strategy started a cluster of its own"
    );
    assert!(
        notes[0].starts_with("started for this strategy"),
        "{notes:?}"
    );
    assert!(
        notes[1].contains("started for an earlier strategy"),
        "{notes:?}"
    );
    assert_eq!(limitbench_core::fleet::reaper::live_count(), before + 3);
    // Let go of: stopped.
    drop(shared);
    assert_eq!(limitbench_core::fleet::reaper::live_count(), before);
}
