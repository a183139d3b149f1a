//! The committed server matrix (`data/servers`), copied and re-analysed
//! with `limitbench analyze` (no server started): the heatmaps of the
//! claims by servers and of each server's scorecard are written as PNG, SVG
//! and CSV with one cell per claim row and server (per strategy and
//! property), coloured as the verdicts in `matrix-claims.csv` and each
//! `scorecard.csv` say; `matrix-claims.md` opens with what differs, then
//! the heatmaps, then the tables; the judged claims do not change.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let p = e.path();
        let dest = to.join(e.file_name());
        if p.is_dir() {
            copy_dir(&p, &dest);
        } else {
            std::fs::copy(&p, &dest).unwrap();
        }
    }
}

/// A CSV's records as maps from its header's names.
fn records(path: &Path) -> Vec<BTreeMap<String, String>> {
    let mut r = csv::Reader::from_path(path).unwrap();
    let head = r.headers().unwrap().clone();
    r.records()
        .map(|x| {
            let x = x.unwrap();
            head.iter()
                .zip(x.iter())
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

#[test]
fn analysing_the_committed_matrix_draws_the_claims_and_scorecards_as_heatmaps() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("servers");
    copy_dir(&root.join("data/servers"), &run);
    let figures = run.join("figures");
    // What an earlier analysis drew must not count.
    let _ = std::fs::remove_dir_all(&figures);
    let out = Command::new(env!("CARGO_BIN_EXE_limitbench"))
        .args(["analyze"])
        .arg(&run)
        .env("LIMITBENCH_PROJECT_DIR", root)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // The judged claims are the committed ones.
    for name in ["matrix-claims.csv"] {
        assert_eq!(
            std::fs::read_to_string(run.join(name)).unwrap(),
            std::fs::read_to_string(root.join("data/servers").join(name)).unwrap(),
            "{name} changed"
        );
    }

    // The claims' heatmap: a cell per claim row and server, coloured by its verdict.
    for ext in ["png", "svg", "csv"] {
        let p = figures.join(format!("matrix-claims-heatmap.{ext}"));
        assert!(p.is_file(), "{} missing", p.display());
    }
    let all = records(&run.join("matrix-claims.csv"));
    // The claims outside the tally (A0, B0: the study's own description,
    // not a claim to reproduce) are not drawn, and the caption says why.
    let apart = apart_claims(root);
    assert!(
        !apart.is_empty(),
        "claims.toml has no claim outside the tally"
    );
    let matrix: Vec<_> = all
        .iter()
        .filter(|m| !apart.contains(&m["claim"]))
        .cloned()
        .collect();
    let cells = records(&figures.join("matrix-claims-heatmap.csv"));
    assert_eq!(
        cells.len(),
        matrix.len(),
        "one cell per claim row and server, apart from {apart:?}"
    );
    let left_out: Vec<&String> = apart
        .iter()
        .filter(|id| all.iter().any(|m| m["claim"] == **id))
        .collect();
    let servers: Vec<String> = {
        let mut s: Vec<String> = matrix.iter().map(|m| m["server"].clone()).collect();
        s.dedup();
        s.sort();
        s.dedup();
        s
    };
    assert!(servers.len() >= 2, "{servers:?}");
    for (m, c) in matrix.iter().zip(&cells) {
        // Same order: claim rows, then servers; the column heading starts with the server.
        assert!(c["row"].starts_with(&m["claim"]), "{c:?} vs {m:?}");
        assert!(c["column"].starts_with(&m["server"]), "{c:?} vs {m:?}");
        assert!(
            m["verdict"].starts_with(&c["category"]),
            "{c:?} coloured as {} but judged {}",
            c["category"],
            m["verdict"]
        );
        assert_eq!(
            c["value"].parse::<f64>().ok(),
            m["value"].parse::<f64>().ok()
        );
        // Framed exactly where the difference survives the rerun.
        assert_eq!(
            c["outlined"] == "true",
            m["survives_rerun"] == "true",
            "{c:?} vs {m:?}"
        );
    }
    // No label of the heatmap outside the canvas or on another.
    let svg = std::fs::read_to_string(figures.join("matrix-claims-heatmap.svg")).unwrap();
    let problems = limitbench_analysis::figure::text_problems(&svg);
    assert!(problems.is_empty(), "{problems:?}");
    let texts = svg_texts(&svg);
    for id in &left_out {
        assert!(
            !cells.iter().any(|c| c["row"].starts_with(&format!("{id} "))
                || c["row"].starts_with(&format!("{id},"))),
            "{id} drawn though outside the tally"
        );
    }
    if !left_out.is_empty() {
        let caption = texts.join(" ");
        assert!(
            caption.contains("Not drawn:"),
            "the caption does not say which claims are left out"
        );
    }
    row_labels_whole(&svg, &cells);

    // One scorecard heatmap per server with a scorecard: a cell per
    // (strategy, property), coloured by that server's verdict.
    let mut with_card = 0;
    for s in &servers {
        let card = run.join(s).join("scorecard.csv");
        if !card.exists() {
            continue;
        }
        with_card += 1;
        let want = records(&card);
        let got = records(&figures.join(format!("matrix-scorecard-{s}.csv")));
        assert!(figures.join(format!("matrix-scorecard-{s}.png")).is_file());
        assert!(figures.join(format!("matrix-scorecard-{s}.svg")).is_file());
        assert_eq!(got.len(), want.len(), "{s}");
        let card_svg =
            std::fs::read_to_string(figures.join(format!("matrix-scorecard-{s}.svg"))).unwrap();
        row_labels_whole(&card_svg, &got);
        for (w, g) in want.iter().zip(&got) {
            assert_eq!(g["row"], w["strategy"]);
            assert!(g["column"].starts_with(&w["property"]), "{g:?}");
            assert_eq!(g["category"], w["verdict"], "{s}: {g:?}");
        }
    }
    assert!(with_card >= 2, "{with_card} scorecards");

    // matrix-claims.md: what differs first, then the heatmaps, then the tables.
    let md = std::fs::read_to_string(run.join("matrix-claims.md")).unwrap();
    let at = |s: &str| {
        md.find(s)
            .unwrap_or_else(|| panic!("`{s}` not in matrix-claims.md"))
    };
    assert!(at("## What differs between servers") < at("figures/matrix-claims-heatmap.png"));
    assert!(at("figures/matrix-claims-heatmap.png") < at("| server | product"));
    assert!(at("| server | product") < at("## At a glance"));
}

/// The ids of the claims outside the tally (`tally` other than
/// `reproduction` in analysis/claims.toml).
fn apart_claims(root: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(root.join("analysis/claims.toml")).unwrap();
    let t: toml::Table = toml::from_str(&text).unwrap();
    t["claim"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| {
            c.get("tally")
                .and_then(|v| v.as_str())
                .unwrap_or("reproduction")
                != "reproduction"
        })
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect()
}

/// Every text drawn in an SVG.
fn svg_texts(svg: &str) -> Vec<String> {
    limitbench_plot::svg_text::text_boxes(svg)
        .1
        .into_iter()
        .map(|b| b.text)
        .collect()
}

/// Label fit: every row label of a heatmap (its CSV's `row`) is drawn
/// whole, as one text, ending left of the texts of its row's cells
/// (nothing cut or covered by the cells).
fn row_labels_whole(svg: &str, cells: &[BTreeMap<String, String>]) {
    let (_, boxes) = limitbench_plot::svg_text::text_boxes(svg);
    let mut labels: Vec<&str> = cells.iter().map(|c| c["row"].as_str()).collect();
    labels.dedup();
    for l in labels {
        let lb = boxes
            .iter()
            .find(|b| b.text == l)
            .unwrap_or_else(|| panic!("row label `{l}` not drawn whole"));
        let own: Vec<&str> = cells
            .iter()
            .filter(|c| c["row"] == l)
            .flat_map(|c| c["text"].split(" / "))
            .collect();
        let beside: Vec<f64> = boxes
            .iter()
            .filter(|b| {
                own.contains(&b.text.as_str()) && b.y0 < lb.y1 + 10.0 && b.y1 > lb.y0 - 10.0
            })
            .map(|b| b.x0)
            .collect();
        assert!(!beside.is_empty(), "no cell text beside row label `{l}`");
        let left = beside.iter().copied().fold(f64::INFINITY, f64::min);
        assert!(
            lb.x1 <= left,
            "row label `{l}` ends at {} px, past its cells' text at {left} px",
            lb.x1
        );
    }
}
