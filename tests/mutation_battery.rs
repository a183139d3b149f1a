//! The mutation battery (issue 33): faulty variants of the built-in designs,
//! written here from the designs (`tests/fixtures/mutations/`), scored on a
//! real redis-server at smoke size with the promise columns at 20 per 1 s
//! (a whole second, so that the whole-second bucket's turn of the second
//! falls between the straddle's bursts). Each must fail exactly the cells
//! its fault touches and pass the rest:
//!
//! - reply shapes (`{1|0, left}`, a boolean, the units granted, the
//!   remaining count with -1, nil when refused) and a script that takes no
//!   cost are not faults: every admission cell passes as the built-in
//!   sliding log's do, and the cost and memory probes read every reply by
//!   the manifest's rule (before, the cost probe read "the first integer is
//!   1" and failed them as under-admitting);
//! - a log that admits 60% of its limit: every admission cell, memory's
//!   fill included, warns or fails with "under-admits"; the cost cells
//!   (a limit the traffic never reaches) are measured as any other;
//! - a bucket refilling in whole seconds fails `straddle` (about 2x the
//!   capacity in ~0.1 s against capacity + rate x t) and passes every other
//!   admission cell and memory;
//! - a sliding-window counter whose windows start at a key's first request
//!   fails `anchored` (the traffic after the anchored edge) and passes
//!   `straddle` (which aligned windows test), the other patterns, exact,
//!   clock and memory;
//! - no variant fails a cost cell (none of their faults touches cost).
//!
//! And `check` on the no-cost script says its cost check does not apply,
//! also when given the manifest's path.

use limitbench::run::Size;
use limitbench::scorecard::{self as sc};
use limitbench_analysis::scorecard::CellVerdict;

mod common;

const LOG_SHAPES: [&str; 6] = [
    "mut-log-pair",
    "mut-log-boolean",
    "mut-log-granted",
    "mut-log-remaining",
    "mut-log-nil",
    "mut-log-no-cost",
];

/// The cells every decision is counted in (admitted or not).
const ADMISSION: [&str; 7] = [
    "exact-0ms",
    "exact-6.7ms",
    "straddle",
    "quiet-burst",
    "burst-sustained",
    "anchored",
    "clock-1s",
];

fn mutations() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mutations")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_mutation_fails_exactly_the_cells_its_fault_touches() {
    let out = tempfile::tempdir().unwrap();
    let mut names = vec!["sliding-window-log"];
    names.extend(LOG_SHAPES);
    names.extend([
        "mut-log-sixty",
        "mut-bucket-whole-seconds",
        "mut-counter-first-hit",
    ]);
    let mut cfg = common::own_scorecard(&names, Some(&mutations()), Size::Smoke, out.path());
    cfg.promise_limit = Some(20);
    cfg.promise_window_ms = Some(1000);
    cfg.lanes = 3;
    let card = sc::run(&cfg, |_| {}).await.expect("the scorecard runs");
    let get = |s: &str, p: &str| card.cell(s, p).unwrap_or_else(|| panic!("no cell {s}/{p}"));
    let show = |s: &str, p: &str| {
        let c = get(s, p);
        format!("{s}/{p}: {:?} {:?} {}", c.verdict, c.value, c.detail)
    };
    let measured =
        |v: CellVerdict| matches!(v, CellVerdict::Pass | CellVerdict::Warn | CellVerdict::Fail);
    for name in &names {
        assert_eq!(
            get(name, "works").verdict,
            CellVerdict::Pass,
            "{}",
            show(name, "works")
        );
        // The cost probe's traffic never reaches the limit: every strategy's
        // decisions are admitted, read by its own reply rule. No fault here
        // touches cost: none fails it (its pass/warn edges, 3x GET and 0.5
        // of GET's rate, move between runs of one script by up to 20%, so
        // the verdict itself is not compared).
        for p in ["cost-x-get", "decisions-per-s"] {
            let c = get(name, p);
            assert!(
                matches!(c.verdict, CellVerdict::Pass | CellVerdict::Warn),
                "{}",
                show(name, p)
            );
            assert!(!c.detail.contains("under-admits"), "{}", show(name, p));
        }
        assert!(
            measured(get(name, "memory").verdict),
            "{}",
            show(name, "memory")
        );
    }
    // Not faults: the admission cells as the built-in log's (all pass), the
    // memory fill admitted.
    for name in LOG_SHAPES {
        for p in ADMISSION {
            assert_eq!(
                get(name, p).verdict,
                get("sliding-window-log", p).verdict,
                "{}",
                show(name, p)
            );
            assert_eq!(get(name, p).verdict, CellVerdict::Pass, "{}", show(name, p));
        }
        assert!(
            !get(name, "memory").detail.contains("under-admits"),
            "{}",
            show(name, "memory")
        );
        // Its log holds what the built-in log holds (longer members: the
        // same band).
        assert_eq!(
            get(name, "memory").verdict,
            get("sliding-window-log", "memory").verdict,
            "{}",
            show(name, "memory")
        );
    }
    // 60% of the limit: every admission cell under-admits, memory's fill too.
    for p in ADMISSION.iter().chain(&["memory"]) {
        let c = get("mut-log-sixty", p);
        assert!(
            matches!(c.verdict, CellVerdict::Warn | CellVerdict::Fail)
                && c.detail.contains("under-admits"),
            "{}",
            show("mut-log-sixty", p)
        );
    }
    // Whole-second refill: straddle fails; the cells no bucket shape touches pass.
    let b = "mut-bucket-whole-seconds";
    assert_eq!(
        get(b, "straddle").verdict,
        CellVerdict::Fail,
        "{}",
        show(b, "straddle")
    );
    // The rest pass: the other patterns never offer a burst across a turn
    // of the second (quiet-burst's flood ends before it, burst-sustained's
    // traffic after it comes one request at a time).
    for p in [
        "exact-0ms",
        "exact-6.7ms",
        "quiet-burst",
        "burst-sustained",
        "anchored",
        "clock-1s",
        "memory",
    ] {
        assert_eq!(get(b, p).verdict, CellVerdict::Pass, "{}", show(b, p));
    }
    // First-hit sliding counter: anchored fails, straddle (aligned) passes.
    let c = "mut-counter-first-hit";
    assert_eq!(
        get(c, "anchored").verdict,
        CellVerdict::Fail,
        "{}",
        show(c, "anchored")
    );
    for p in [
        "straddle",
        "quiet-burst",
        "burst-sustained",
        "exact-0ms",
        "exact-6.7ms",
        "clock-1s",
        "memory",
    ] {
        assert_eq!(get(c, p).verdict, CellVerdict::Pass, "{}", show(c, p));
    }
}

#[test]
fn check_says_a_script_without_cost_has_no_cost_check_also_by_its_path() {
    let dir = mutations();
    let path = dir.join("log-no-cost.toml");
    common::limitbench(&["check", path.to_str().unwrap()], None)
        .expect_code(0)
        .expect_output("n/a   cost")
        .expect_output("takes no cost")
        .expect_output("(1 not applicable)");
    // The same script passed a cost: its cost check runs and passes.
    common::limitbench(
        &["check", "mut-log-pair", "--dir", dir.to_str().unwrap()],
        None,
    )
    .expect_code(0)
    .expect_output("pass  cost");
    // A path that is not a file names what was expected.
    common::limitbench(&["check", "no/such/limiter.toml"], None)
        .expect_code(2)
        .expect_output("not a file");
}

#[test]
fn a_script_in_whole_seconds_is_probed_at_one_second_at_smoke() {
    let dir = mutations();
    let out = tempfile::tempdir().unwrap();
    let run = common::limitbench(
        &[
            "scorecard",
            "--size",
            "smoke",
            "--strategy",
            "mut-log-whole-seconds",
            "--dir",
            dir.to_str().unwrap(),
            "--data-dir",
            out.path().to_str().unwrap(),
            "--run-id",
            "whole-seconds",
            "--parallel",
            "1",
        ],
        None,
    );
    // Exit 1 only for a cell of what a decision costs (a throughput ratio
    // moves with the machine's load: a busy CI machine can fail it); every
    // promise cell is asserted below.
    assert!([0, 1].contains(&run.code()), "{}", run.stderr());
    let text = std::fs::read_to_string(out.path().join("whole-seconds/scorecard.csv")).unwrap();
    let mut rows = csv::Reader::from_reader(text.as_bytes());
    let head = rows.headers().unwrap().clone();
    let col = |n: &str| head.iter().position(|h| h == n).unwrap();
    let (prop, verdict, detail) = (col("property"), col("verdict"), col("detail"));
    for r in rows.records().map(Result::unwrap) {
        if ["straddle", "quiet-burst", "burst-sustained", "anchored"].contains(&&r[prop]) {
            assert_eq!(&r[verdict], "pass", "{r:?}");
            assert!(r[detail].contains("per 1000 ms"), "{r:?}");
        }
        if &r[verdict] == "fail" {
            assert!(
                ["cost-x-get", "decisions-per-s"].contains(&&r[prop]),
                "only a cost cell may fail on a busy machine: {r:?}"
            );
        }
    }
}
