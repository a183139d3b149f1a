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
    let matrix = records(&run.join("matrix-claims.csv"));
    let cells = records(&figures.join("matrix-claims-heatmap.csv"));
    assert_eq!(
        cells.len(),
        matrix.len(),
        "one cell per claim row and server"
    );
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
