//! The strategy folders (`scan`): every manifest of the shipped folder and
//! of `--dir`, the ones that loaded and the ones that did not, each with
//! its error.

use std::path::{Path, PathBuf};

use super::{Manifest, bad};
use limitbench_base::error::{Error, Result};

/// A manifest that did not load, and why.
#[derive(Debug)]
pub struct Broken {
    pub file: PathBuf,
    pub error: Error,
}

/// What a scan of the strategy folders found: the manifests that loaded,
/// and the ones that did not, each with its error.
#[derive(Debug, Default)]
pub struct Folder {
    pub manifests: Vec<Manifest>,
    pub broken: Vec<Broken>,
}

impl Folder {
    /// The broken manifests, one line each (`<file>: field ...: problem`).
    pub fn broken_text(&self) -> Vec<String> {
        self.broken.iter().map(|b| b.error.to_string()).collect()
    }
}

/// Every `*.toml` manifest in `lua/external` (when that folder exists) and
/// then in `dir`, each folder sorted by file name: `--dir` adds to the
/// shipped folder, and a manifest in `dir` replaces a shipped one of the
/// same name. A manifest that does not load (or repeats a name within its
/// folder) is listed in `broken` and the others still load. Errors only
/// when `dir` does not exist or a folder cannot be read.
pub fn scan(dir: Option<&Path>) -> Result<Folder> {
    let shipped = limitbench_base::paths::project_file(crate::strategy::DEFAULT_EXTERNAL_DIR);
    let mut out = if shipped.is_dir() {
        load_folder(&shipped)?
    } else {
        Folder::default()
    };
    if let Some(d) = dir {
        if !d.is_dir() {
            return Err(Error::Other(format!(
                "strategy folder {} does not exist",
                d.display()
            )));
        }
        let same = match (d.canonicalize(), shipped.canonicalize()) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        };
        if !same {
            let theirs = load_folder(d)?;
            for m in theirs.manifests {
                out.manifests.retain(|o| o.name != m.name);
                out.manifests.push(m);
            }
            out.broken.extend(theirs.broken);
        }
    }
    Ok(out)
}

/// The manifests of `scan` that loaded.
pub fn load_dir(dir: Option<&Path>) -> Result<Vec<Manifest>> {
    Ok(scan(dir)?.manifests)
}

/// Every `*.toml` manifest in one folder, sorted by file name.
pub(super) fn load_folder(dir: &Path) -> Result<Folder> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| Error::io(format!("reading {}", dir.display()), e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    let mut out = Folder::default();
    for f in files {
        let m = match Manifest::load(&f) {
            Ok(m) => m,
            Err(error) => {
                out.broken.push(Broken { file: f, error });
                continue;
            }
        };
        if let Some(prev) = out.manifests.iter().find(|o| o.name == m.name) {
            let error = bad(
                &f,
                "name",
                format!("`{}` is already defined by {}", m.name, prev.file.display()),
            );
            out.broken.push(Broken { file: f, error });
            continue;
        }
        out.manifests.push(m);
    }
    Ok(out)
}
