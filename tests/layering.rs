//! Layering rules that keep recording and checking apart: analysis code
//! (`src/analysis/`, every experiment's `analyze.rs` and `rows.rs`) reads
//! CSVs only, so it may not import anything that talks to Redis, starts
//! servers or generates load. This test reads the sources and fails with the
//! file, line and the import to remove.

use std::path::{Path, PathBuf};

/// Modules analysis code may not use.
const FORBIDDEN: &[&str] = &[
    "crate::resp",
    "crate::conn",
    "crate::fleet",
    "crate::load",
    "crate::proxy",
    "crate::pin",
    "crate::strategy",
    "crate::clock",
    "crate::check",
    "crate::run::context",
    "crate::run::sweep",
    "crate::run::record",
    "tokio",
];

fn analysis_files(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    // Every file of src/analysis, its sub-folders (claims/) included.
    rust_files(&root.join("src/analysis"), &mut out);
    for e in std::fs::read_dir(root.join("src/experiments")).unwrap() {
        let d = e.unwrap().path();
        for f in ["analyze.rs", "rows.rs"] {
            if d.join(f).exists() {
                out.push(d.join(f));
            }
        }
        // A long analysis may be a folder `analyze/` (mod.rs + siblings).
        if let Ok(rd) = std::fs::read_dir(d.join("analyze")) {
            for e in rd {
                out.push(e.unwrap().path());
            }
        }
    }
    out
}

#[test]
fn analysis_imports_no_redis_fleet_or_load_module() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut bad = Vec::new();
    for f in analysis_files(root) {
        let text = std::fs::read_to_string(&f).unwrap();
        // Unit tests below `#[cfg(test)]` may build rows by hand from anywhere.
        let body = text.split("#[cfg(test)]").next().unwrap_or("");
        for (i, line) in body.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            let hit = FORBIDDEN.iter().find(|m| {
                code.contains(&format!("{m}::"))
                    || code.contains(&format!("{m};"))
                    || code.contains(&format!("{m} "))
            });
            // Inside an experiment folder, analysis reaches the run side only through `super::`.
            // In `analyze/`, a sibling reaches its folder through `super::` and the rows through `super::super::rows`.
            let in_folder = f.parent().is_some_and(|p| p.ends_with("analyze"))
                && f.file_name().unwrap() != "mod.rs";
            let up = if f.starts_with(root.join("src/analysis")) {
                false
            } else if in_folder {
                code.contains("super::super::") && !code.contains("super::super::rows")
            } else {
                code.contains("super::") && !code.contains("super::rows")
            };
            let other = code.contains("crate::experiments::")
                && !code.contains("::rows::")
                && !code.contains("crate::experiments::REGISTRY")
                && !code.contains("crate::experiments::find");
            if let Some(m) = hit {
                bad.push(format!(
                    "{}:{}: imports `{m}`: {}",
                    f.display(),
                    i + 1,
                    line.trim()
                ));
            } else if up {
                bad.push(format!("{}:{}: reaches the run side through `super::` (only `super::rows`, or within `analyze/` its siblings and `super::super::rows`, are allowed): {}", f.display(), i + 1, line.trim()));
            } else if other {
                bad.push(format!("{}:{}: imports another experiment's run code (only its `rows` module is allowed): {}", f.display(), i + 1, line.trim()));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "analysis code must read CSVs only:\n{}",
        bad.join("\n")
    );
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn recording_code_imports_no_analysis() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    let checked = analysis_files(root);
    let mut bad = Vec::new();
    for f in files {
        // Tests (an experiment folder's tests.rs) check the analysis on rows
        // made by hand; they are neither side.
        if checked.contains(&f)
            || f.ends_with("src/main.rs")
            || f.ends_with("src/experiments/mod.rs")
            || f.file_name().is_some_and(|n| n == "tests.rs")
            // The scorecard records and then judges in one command; it
            // applies the analysis's pure window metrics to its own events.
            || f.starts_with(root.join("src/scorecard"))
        {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            // `analysis::window` is pure (admission times -> the most in any
            // window); a run may store that headline metric in its rows,
            // computed by the same function the analysis uses.
            let code = code.replace("crate::analysis::window::", "");
            if code.contains("crate::analysis") {
                bad.push(format!("{}:{}: {}", f.display(), i + 1, line.trim()));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "recording code must not import the analysis (it runs one way, CSV -> analysis):\n{}",
        bad.join("\n")
    );
}
