//! Every figure of the committed reference run, re-rendered from its CSVs:
//! no text outside the canvas, no two labels overlapping (from the SVG's
//! `<text>` positions, sizes, anchors and rotations), data in every figure,
//! a PNG and the numbers drawn beside every SVG, and every claim ID of
//! `claims.csv` in some figure's title.

use std::path::Path;

use limitbench::analysis::figure::{text_boxes, text_problems};

/// A copy of the reference run's inputs (its CSVs, at most `max_rows` rows
/// each, and its manifest) in a temporary folder.
fn copy_of_reference(tmp: &Path, max_rows: usize) -> std::path::PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let run = tmp.join("reference");
    std::fs::create_dir(&run).unwrap();
    for e in std::fs::read_dir(root.join("data/reference")).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        // Large tables are committed compressed (`.csv.zst`); the copy is plain.
        let plain = limitbench::files::plain_name(&name).to_string();
        if plain.ends_with(".csv") && plain != "claims.csv" {
            let bytes = limitbench::files::read_maybe_compressed(&p).unwrap();
            let text = String::from_utf8(bytes).unwrap();
            let kept: String = text
                .lines()
                .take(max_rows + 1)
                .map(|l| format!("{l}\n"))
                .collect();
            std::fs::write(run.join(&plain), kept).unwrap();
        } else if name == "manifest.json" {
            std::fs::copy(&p, run.join(&name)).unwrap();
        }
    }
    run
}

/// Text problems and figures without data of every figure in `run`, and the
/// concatenated first texts (titles) of every figure.
fn check_figures(run: &Path) -> (Vec<String>, String) {
    let figures = run.join("figures");
    let mut svgs: Vec<_> = std::fs::read_dir(&figures)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "svg"))
        .collect();
    svgs.sort();
    let mut problems = Vec::new();
    let mut titles = String::new();
    for svg in &svgs {
        let name = svg.file_stem().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(svg).unwrap();
        for p in text_problems(&text) {
            problems.push(format!("{name}: {p}"));
        }
        let (_, boxes) = text_boxes(&text);
        titles += &boxes
            .iter()
            .take(3)
            .map(|b| b.text.clone())
            .collect::<Vec<_>>()
            .join(" ");
        titles.push('\n');
        let data_rows = csv::Reader::from_path(figures.join(format!("{name}.csv")))
            .unwrap()
            .records()
            .filter(|r| r.as_ref().is_ok_and(|r| r.get(1) == Some("data")))
            .count();
        if data_rows == 0 {
            problems.push(format!("{name}: no data points"));
        }
        let png = std::fs::read(figures.join(format!("{name}.png"))).unwrap();
        if &png[1..4] != b"PNG" {
            problems.push(format!("{name}.png is not a PNG"));
        }
    }
    (problems, titles)
}

#[test]
fn figures_of_a_small_fixture_run_render_without_text_problems() {
    // The first 40 rows of every CSV: fewer points, other ranges and ticks.
    let tmp = tempfile::tempdir().unwrap();
    let run = copy_of_reference(tmp.path(), 40);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    limitbench::app::analyze(&run, &root.join("analysis/claims.toml")).unwrap();
    let (problems, _) = check_figures(&run);
    assert!(
        problems.is_empty(),
        "{} problems:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn every_figure_of_the_reference_run_renders_without_text_problems() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tmp = tempfile::tempdir().unwrap();
    let run = copy_of_reference(tmp.path(), usize::MAX - 1);
    let rows = limitbench::app::analyze(&run, &root.join("analysis/claims.toml")).unwrap();
    let n = std::fs::read_dir(run.join("figures"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "svg")
        })
        .count();
    assert!(n >= 20, "only {n} figures");
    let (mut problems, titles) = check_figures(&run);
    // Every claim's analyzer measures it on a full run: a claim no analyzer
    // produces (its ID misspelt in the code, say) would read `not-run` here.
    for j in rows.iter().filter(|j| j.measured.is_none()) {
        problems.push(format!(
            "claim {} is measured by no analyzer on the full reference run",
            j.spec.id
        ));
    }
    for c in rows.iter().map(|j| &j.spec) {
        if !titles.contains(&format!("{}:", c.id)) && !titles.contains(&format!("{},", c.id)) {
            problems.push(format!("claim {} is in no figure's title", c.id));
        }
    }
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    if report.contains("has no data points") {
        problems.push("the report warns of a figure without data points".into());
    }
    assert!(
        problems.is_empty(),
        "{} problems:\n{}",
        problems.len(),
        problems.join("\n")
    );
}
