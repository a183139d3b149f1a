//! The scorecard finds what an audit must find (issue 19), on a real
//! redis-server at smoke size, with shapes written here
//! (tests/fixtures/first-hit, tests/fixtures/under-admission):
//! - a first-hit fixed window (INCRBY, PEXPIRE when the count is the first
//!   request's) scores near 2 on the anchored pattern, which the patterns
//!   aligned on Redis's clock never test, with the sliding-log ideal beside;
//! - a limiter that admits 1 call in 100 passes no cell (under-admission is
//!   judged, with the number);
//! - a limiter that errors on every other call passes no cell (any error
//!   makes the cell `error`);
//! - a malformed manifest beside them is named as a row of its own, and the
//!   good ones in its folder are scored;
//! - a script that reads TIME is on the redis clock without saying so.

use limitbench::run::Size;
use limitbench::scorecard::{self as sc, Config, ScorecardServer};
use limitbench_analysis::scorecard::{CellOutcome, CellVerdict};

mod common;

fn copy_fixture(folder: &str, into: &std::path::Path) {
    let from = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(folder);
    for f in std::fs::read_dir(from).unwrap().flatten() {
        std::fs::copy(f.path(), into.join(f.file_name())).unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anchored_windows_under_admission_and_errors_are_caught() {
    let dir = tempfile::tempdir().unwrap();
    copy_fixture("first-hit", dir.path());
    copy_fixture("under-admission", dir.path());
    let folder = limitbench_core::strategy::external::scan(Some(dir.path())).unwrap();
    assert_eq!(folder.broken.len(), 1, "{:?}", folder.broken_text());
    let out = tempfile::tempdir().unwrap();
    let cfg = Config {
        strategies: ["fixed-window-first-hit", "under-admits", "half-errors"]
            .map(String::from)
            .to_vec(),
        dir: Some(dir.path().to_path_buf()),
        size: Size::Smoke,
        target: ScorecardServer::Own(common::redis()),
        key_prefix: "limitbench:test:".into(),
        out: out.path().to_path_buf(),
        experiments_dir: std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments"),
        promise_limit: None,
        promise_window_ms: None,
        broken: folder
            .broken
            .iter()
            .map(|b| (b.file.display().to_string(), b.error.to_string()))
            .collect(),
        lanes: 1,
    };
    let card = sc::run(&cfg, |_| {}).await.expect("the scorecard runs");
    let get = |s: &str, p: &str| {
        card.cell(s, p)
            .unwrap_or_else(|| panic!("no cell {s}/{p}"))
            .clone()
    };

    // The first-hit window admits about 2L across the edge of its own
    // window; the sliding log's ideal on the same arrivals is L.
    let c = get("fixed-window-first-hit", "anchored");
    assert!(
        c.value.unwrap() >= 1.8 && c.verdict == CellVerdict::Fail,
        "{c:?}"
    );
    assert!(
        c.detail.contains("sliding-log ideal") && c.detail.contains("(1 x limit)"),
        "{c:?}"
    );
    assert!(c.threshold.contains("at-most-limit-in-any-window"), "{c:?}");
    // ... while on the clock-aligned straddle it looks exact.
    let c = get("fixed-window-first-hit", "straddle");
    assert!(c.value.unwrap() <= 1.1, "{c:?}");

    // Neither broken limiter passes a cell past `works`; the under-admitter's
    // cells that offer the limit say by how much it under-admits.
    for s in ["under-admits", "half-errors"] {
        let r = card.results.iter().find(|r| r.strategy == s).unwrap();
        assert_eq!(get(s, "works").verdict, CellVerdict::Pass);
        for c in r.cells.iter().filter(|c| c.property != "works") {
            assert!(c.verdict != CellVerdict::Pass, "{s}/{}: {c:?}", c.property);
        }
        let measured = r
            .cells
            .iter()
            .filter(|c| c.verdict != CellVerdict::NotRun)
            .count();
        assert!(measured >= 10, "{s}: only {measured} cells measured");
    }
    for p in ["exact-0ms", "straddle", "quiet-burst", "anchored"] {
        let c = get("under-admits", p);
        assert!(
            matches!(c.verdict, CellVerdict::Warn | CellVerdict::Fail)
                && c.detail.contains("under-admits"),
            "{p}: {c:?}"
        );
    }
    let c = get("under-admits", "exact-0ms");
    assert!(c.value.unwrap() < 0.1, "{c:?}");
    for c in card
        .results
        .iter()
        .find(|r| r.strategy == "half-errors")
        .unwrap()
        .cells
        .iter()
    {
        if c.property != "works" && c.verdict != CellVerdict::NotRun {
            assert_eq!(c.verdict, CellVerdict::Error, "{}: {c:?}", c.property);
        }
    }
    let r = card
        .results
        .iter()
        .find(|r| r.strategy == "half-errors")
        .unwrap();
    assert_eq!(
        r.clock, "redis",
        "a script reading TIME is on Redis's clock"
    );

    // The broken manifest is a row of its own, naming its file and field.
    let c = get("broken.toml", "works");
    assert_eq!(c.verdict, CellVerdict::Error, "{c:?}");
    assert!(
        c.detail.contains("did not load") && c.detail.contains("broken.toml"),
        "{c:?}"
    );
}

/// A script that calls `redis.replicate_commands()` (written for Redis < 7)
/// has no FCALL: the survival cells score the modes it can run, and say why
/// FCALL is not among them (tests/fixtures/replicate-commands).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn survival_scores_only_the_modes_a_script_can_run() {
    use limitbench::scorecard::probe::StrategyRun;
    use limitbench::scorecard::properties::PROBES;
    use limitbench_analysis::scorecard::ProbeRows;
    let dir = tempfile::tempdir().unwrap();
    copy_fixture("replicate-commands", dir.path());
    let out = tempfile::tempdir().unwrap();
    let name = "old-redis-window";
    let cfg = common::own_scorecard(&[name], Some(dir.path()), Size::Quick, out.path());
    let s = sc::build(name, Some(dir.path()), &Default::default()).unwrap();
    assert!(s.info().modes.iter().any(|m| m.as_str() == "fcall"));
    let run = StrategyRun::start(&cfg, name).await.unwrap();
    let p = PROBES
        .iter()
        .find(|p| p.experiment == "script-survival")
        .unwrap();
    run.probe(p).await.expect("the survival probe runs");
    let rows = std::fs::read_to_string(run.dir().join("script-survival.csv")).unwrap();
    assert!(rows.contains("unrunnable:fcall"), "{rows}");
    assert!(
        !rows.contains("client:fcall"),
        "an fcall client ran: {rows}"
    );
    for (prop, r) in (p.judge)(&ProbeRows::new(run.dir(), name, &sc::declared(s.info()))) {
        let Ok(CellOutcome::Measured { value, detail, .. }) = r else {
            panic!("{prop}: {r:?}");
        };
        assert!(
            detail.contains("fcall not scored") && detail.contains("replicate_commands"),
            "{prop}: {detail}"
        );
        // EVALSHA alone loses its script on a restart and a promotion; the
        // modes that send the source (EVAL, the fallback) keep working.
        assert!(value > 0.0 && value < 1.0, "{prop}: {value} {detail}");
    }
}
