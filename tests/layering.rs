//! The layering the crate graph cannot see on its own (docs/architecture.md):
//!
//! - every file under `src/experiments/<name>/analyze/` belongs to
//!   `limitbench-analysis` and names it `limitbench_analysis::`, never
//!   `crate::` (which in `src/` means the app), and imports nothing of the
//!   measuring half (the app, the core crate, tokio);
//! - the analysis crate depends on nothing that talks to Redis, and compiles
//!   no file of `src/` outside those `analyze/` folders;
//! - the scorecard only schedules experiment probes: no file of
//!   `src/scorecard/` drives load or decides itself;
//! - the server matrix (`src/servers/`) does not import the app;
//! - no source file over 600 lines;
//! - no file-level import circle anywhere in the workspace: file A naming an
//!   item of file B and B naming one of A, directly or round a longer loop.
//!   Two kinds of reference are how Rust builds a module, not imports, and
//!   do not count: a module file re-exporting its own children (`pub use
//!   child::X`, `mod child`), and a file naming an item of its own ancestor
//!   module file (`super::X`: the parent holds what its parts share). Every
//!   other reference counts: between siblings, across folders and crates,
//!   and a parent using its child's items in its own code.
//!
//! The source is read as text (comments and string literals removed), so the
//! test needs no parser and runs in milliseconds.

#[path = "layering/source.rs"]
mod source;

use std::collections::{BTreeMap, BTreeSet};

use source::{Unit, circles, code_of, graph, paths_named, rel, resolve, root, rs_files, workspace};

#[test]
fn no_file_level_import_circle_anywhere() {
    let units = workspace();
    assert!(units.len() > 150, "only {} files read", units.len());
    let g = graph(&units);
    let found = circles(&g);
    let text: Vec<String> = found
        .iter()
        .map(|c| {
            let ties: Vec<String> = c
                .iter()
                .flat_map(|a| {
                    g[a].iter()
                        .filter(|b| c.contains(b))
                        .map(move |b| format!("{a} -> {b}"))
                })
                .collect();
            ties.join(", ")
        })
        .collect();
    assert!(found.is_empty(), "import circles:\n{}", text.join("\n"));
}

#[test]
fn the_circle_finder_finds_a_circle() {
    // The negative control: two files naming each other are one circle.
    let mut g = BTreeMap::new();
    g.insert("a.rs".to_string(), BTreeSet::from(["b.rs".to_string()]));
    g.insert("b.rs".to_string(), BTreeSet::from(["a.rs".to_string()]));
    g.insert("c.rs".to_string(), BTreeSet::from(["a.rs".to_string()]));
    assert_eq!(
        circles(&g),
        vec![vec!["a.rs".to_string(), "b.rs".to_string()]]
    );
    // And the reader sees a `use` through `super::` and a bare child.
    let u = Unit {
        file: "src/x/mod.rs".into(),
        krate: "limitbench",
        module: vec!["x".into()],
        is_dir_module: true,
        code: code_of(
            "mod y;\nuse y::Thing; // use z::Not\nfn f() { let s = \"crate::no::Path\"; super::w::g(); }",
        ),
    };
    let kids = BTreeSet::from(["y".to_string()]);
    let named: Vec<_> = paths_named(&u.code, &kids)
        .into_iter()
        .filter_map(|(p, _)| resolve(&u, &p, &kids))
        .collect();
    assert!(
        named.contains(&("limitbench", vec!["x".into(), "y".into(), "Thing".into()])),
        "{named:?}"
    );
    assert!(
        named.contains(&("limitbench", vec!["w".into(), "g".into()])),
        "{named:?}"
    );
    assert!(
        !named.iter().any(|(_, s)| s.contains(&"no".to_string())),
        "{named:?}"
    );
}

#[test]
fn analysis_halves_name_their_crate_and_import_no_measuring_code() {
    let mut files = Vec::new();
    rs_files(&root().join("src/experiments"), &mut files);
    let halves: Vec<_> = files
        .iter()
        .filter(|p| rel(p).contains("/analyze/"))
        .collect();
    assert!(
        halves.len() >= 14 * 2,
        "only {} analysis-half files",
        halves.len()
    );
    let mut wrong = Vec::new();
    for p in halves {
        let code = code_of(&std::fs::read_to_string(p).unwrap());
        for bad in [
            "crate::",
            "limitbench::",
            "limitbench_core",
            "tokio",
            "redis::",
        ] {
            let hit = code.match_indices(bad).any(|(i, _)| {
                i == 0 || {
                    let c = code.as_bytes()[i - 1];
                    !(c.is_ascii_alphanumeric() || c == b'_' || c == b':')
                }
            });
            if hit {
                wrong.push(format!("{} names `{bad}`", rel(p)));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_analysis_crate_cannot_reach_redis_and_compiles_only_analysis_halves() {
    let toml = std::fs::read_to_string(root().join("crates/analysis/Cargo.toml")).unwrap();
    let deps = toml
        .split("[dependencies]")
        .nth(1)
        .unwrap()
        .split("\n[")
        .next()
        .unwrap();
    for bad in ["limitbench-core", "tokio", "redis"] {
        assert!(!deps.contains(bad), "crates/analysis depends on {bad}");
    }
    let mut files = Vec::new();
    rs_files(&root().join("crates/analysis/src"), &mut files);
    let mut paths = 0;
    for p in &files {
        let text = std::fs::read_to_string(p).unwrap();
        for line in text
            .lines()
            .filter(|l| l.trim_start().starts_with("#[path"))
        {
            paths += 1;
            let target = line.split('"').nth(1).unwrap();
            let dir = p.parent().unwrap().join(target);
            let dir = rel(&dir.canonicalize().unwrap_or(dir.clone()));
            let ok = (dir.starts_with("src/experiments/") && dir.ends_with("/analyze"))
                || target == "mod.rs";
            assert!(ok, "{} compiles {dir}, outside an analysis half", rel(p));
        }
    }
    assert!(paths >= 14, "{paths} #[path] entries");
}

#[test]
fn the_scorecard_drives_no_load_and_the_matrix_no_app() {
    let read = |d: &str| {
        let mut files = Vec::new();
        rs_files(&root().join(d), &mut files);
        files
            .into_iter()
            .map(|p| (rel(&p), code_of(&std::fs::read_to_string(&p).unwrap())))
            .collect::<Vec<_>>()
    };
    let mut wrong = Vec::new();
    // What of the core the scorecard may name: servers (to start and
    // describe them), strategies (to build and describe them), redaction and
    // the wire (to describe a server you run); never the load.
    let allowed = ["fleet", "info", "proxy", "redact", "resp", "strategy"];
    for (f, code) in read("src/scorecard") {
        for (i, _) in code.match_indices("limitbench_core::") {
            let module: String = code[i + "limitbench_core::".len()..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !allowed.contains(&module.as_str()) {
                wrong.push(format!("{f} names limitbench_core::{module}"));
            }
        }
        let squeezed: String = code.chars().filter(|c| !c.is_whitespace()).collect();
        for bad in [
            "load::",
            ".decide(",
            "::decide(",
            "Request::",
            "closed_loop",
            "open_loop",
            "Fleet::standalone",
            "Fleet::external",
            "next_request_id",
        ] {
            if squeezed.contains(bad) {
                wrong.push(format!("{f} drives load itself: `{bad}`"));
            }
        }
    }
    for (f, code) in read("src/servers") {
        if code.contains("crate::app") || code.contains("limitbench::app") {
            wrong.push(format!("{f} imports the app"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn no_source_file_over_600_lines() {
    // A file that long holds more than one thing a reader can keep in mind;
    // split it along its seams (a folder module, a sibling file).
    let mut files = Vec::new();
    for d in ["crates", "src", "tests", "examples"] {
        rs_files(&root().join(d), &mut files);
    }
    assert!(files.len() > 200, "only {} files read", files.len());
    let long: Vec<String> = files
        .iter()
        .filter_map(|p| {
            let n = std::fs::read_to_string(p).ok()?.lines().count();
            (n > 600).then(|| format!("{} has {n} lines", rel(p)))
        })
        .collect();
    assert!(long.is_empty(), "{}", long.join("\n"));
}
