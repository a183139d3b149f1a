//! Where the project's own files are (`experiments/`, `analysis/claims.toml`,
//! `lua/external/`, `data/`), whatever the current directory.
//!
//! The root is, in order: `--project-dir` (or `LIMITBENCH_PROJECT_DIR`); the
//! nearest ancestor of the running binary that holds `experiments/` and
//! `analysis/claims.toml` (a binary built in `target/release/` finds its
//! checkout); the nearest such ancestor of the current directory. A run
//! refuses to start when none is found.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::error::{Error, Result};

static ROOT: OnceLock<PathBuf> = OnceLock::new();

/// Is `dir` a limitbench checkout?
pub fn is_project(dir: &Path) -> bool {
    dir.join("experiments").is_dir() && dir.join("analysis/claims.toml").is_file()
}

fn nearest_project(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .find(|d| is_project(d))
        .map(Path::to_path_buf)
}

/// Find the project root (see the module doc) and remember it.
pub fn locate(explicit: Option<&Path>) -> Result<PathBuf> {
    let found = match explicit {
        Some(d) => {
            if !is_project(d) {
                return Err(Error::Other(format!(
                    "{} is not a limitbench project folder (it needs experiments/ and analysis/claims.toml)",
                    d.display()
                )));
            }
            Some(d.to_path_buf())
        }
        None => std::env::current_exe()
            .ok()
            .and_then(|exe| exe.canonicalize().ok())
            .and_then(|exe| exe.parent().and_then(nearest_project))
            .or_else(|| {
                std::env::current_dir()
                    .ok()
                    .and_then(|d| nearest_project(&d))
            }),
    };
    let root = found.ok_or_else(|| {
        Error::Other(
            "cannot find the limitbench project folder (experiments/ and analysis/claims.toml) \
             from the binary's location or the current directory; pass --project-dir"
                .into(),
        )
    })?;
    let root = root.canonicalize().unwrap_or(root);
    let _ = ROOT.set(root.clone());
    Ok(root)
}

/// A path inside the project: relative to the located root, or to the
/// current directory before `locate` ran (tests, library use).
pub fn project_file(rel: &str) -> PathBuf {
    match ROOT.get() {
        Some(r) => r.join(rel),
        None => PathBuf::from(rel),
    }
}
