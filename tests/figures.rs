//! Every figure of the committed reference run, re-rendered from its CSVs:
//! no text outside the canvas, no two labels overlapping (from the SVG's
//! `<text>` positions, sizes, anchors and rotations), data in every figure,
//! a PNG and the numbers drawn beside every SVG, and every claim ID of
//! `claims.csv` in some figure's title.

use std::path::Path;

use limitbench::analysis::figure::{text_boxes, text_problems};

#[test]
fn every_figure_of_the_reference_run_renders_without_text_problems() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let reference = root.join("data/reference");
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("reference");
    std::fs::create_dir(&run).unwrap();
    // The run's inputs only: its CSVs (not the analysis outputs) and manifest.
    for e in std::fs::read_dir(&reference).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        if (name.ends_with(".csv") && name != "claims.csv") || name == "manifest.json" {
            std::fs::copy(&p, run.join(&name)).unwrap();
        }
    }
    let rows = limitbench::analysis::analyze(&run, &root.join("analysis/claims.toml")).unwrap();
    let figures = run.join("figures");
    let mut svgs: Vec<_> = std::fs::read_dir(&figures)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "svg"))
        .collect();
    svgs.sort();
    assert!(svgs.len() >= 20, "only {} figures", svgs.len());
    let mut problems = Vec::new();
    let mut titles = String::new();
    for svg in &svgs {
        let name = svg.file_stem().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(svg).unwrap();
        for p in text_problems(&text) {
            problems.push(format!("{name}: {p}"));
        }
        let (_, boxes) = text_boxes(&text);
        titles += &boxes.iter().take(3).map(|b| b.text.clone()).collect::<Vec<_>>().join(" ");
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
        assert_eq!(&png[1..4], b"PNG", "{name}.png is not a PNG");
    }
    for (c, _, _) in &rows {
        if !titles.contains(&format!("{}:", c.id)) && !titles.contains(&format!("{},", c.id)) {
            problems.push(format!("claim {} is in no figure's title", c.id));
        }
    }
    assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n"));
}
