//! The latency figures of the committed reference run, re-drawn from its
//! CSVs: at most four lines in any panel (like compared with like), the
//! percentile axis labelled in nines (p50 ... p99.9), no label clipped or
//! overlapping (direct labels included), and no pooled latency table in
//! the report.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use limitbench_analysis::figure::{text_boxes, text_problems};
use limitbench_analysis::latency::closed::MAX_LINES;

#[test]
fn latency_panels_hold_at_most_four_lines_on_a_nines_axis_with_labels_that_fit() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("reference");
    std::fs::create_dir(&run).unwrap();
    for e in std::fs::read_dir(root.join("data/reference")).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        if p.is_file() && name != "claims.csv" && !name.ends_with(".md") {
            std::fs::copy(&p, run.join(&name)).unwrap();
        }
    }
    limitbench::app::analyze(&run, &root.join("analysis/claims.toml")).unwrap();
    let figures = run.join("figures");
    let expected = [
        "latency_percentiles",
        "latency_percentiles_cost",
        "latency-watch-vs-lua",
        "latency-fail-open-deadline",
        "latency-open-loop",
    ];
    for name in expected {
        let csv = figures.join(format!("{name}.csv"));
        assert!(csv.exists(), "{name} not drawn");
        // Lines per panel, from the numbers drawn.
        let mut lines: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for r in csv::Reader::from_path(&csv).unwrap().records() {
            let r = r.unwrap();
            if r.get(1) == Some("data") {
                lines
                    .entry(r[0].to_string())
                    .or_default()
                    .insert(r[2].to_string());
            }
        }
        assert!(!lines.is_empty(), "{name}: nothing drawn");
        for (panel, series) in &lines {
            assert!(
                series.len() <= MAX_LINES,
                "{name}, panel `{panel}`: {} lines: {series:?}",
                series.len()
            );
        }
        let svg = std::fs::read_to_string(figures.join(format!("{name}.svg"))).unwrap();
        let problems = text_problems(&svg);
        assert!(problems.is_empty(), "{name}: {problems:?}");
        // The percentile axis reads in nines, never in 1/(1-q).
        let texts: BTreeSet<String> = text_boxes(&svg).1.into_iter().map(|b| b.text).collect();
        for tick in ["p50", "p99"] {
            assert!(texts.contains(tick), "{name}: no tick {tick}");
        }
        assert!(!svg.contains("1/(1-q)"), "{name}: the old axis");
    }
    // Figures with many lines name them at the lines' ends: every series
    // of latency_percentiles is written once, beside its line, and the
    // figure has no legend column (its labels are inside the panels' margin).
    let svg = std::fs::read_to_string(figures.join("latency_percentiles.svg")).unwrap();
    let (size, boxes) = text_boxes(&svg);
    // The buckets' panel is the first, in the left column: its names are
    // beside it, not in a legend column at the canvas' right.
    for s in ["gcra", "leaky-bucket", "token-bucket-caller-clock"] {
        let b = boxes.iter().filter(|b| b.text == s).collect::<Vec<_>>();
        assert_eq!(b.len(), 1, "{s} written once");
        assert!(b[0].x1 < size.0 / 2.0, "{s} at {:?}", (b[0].x0, b[0].x1));
    }
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    let latency = report
        .split("## Decision latency")
        .nth(1)
        .expect("a latency section")
        .split("\n## ")
        .next()
        .unwrap();
    assert!(
        !latency.contains("| strategy | trials |"),
        "a table pooled over cells is back"
    );
    assert!(
        latency.contains("| series (one cell) |"),
        "no per-cell table"
    );
}
