//! Where a run's code came from: the git commit, tree and uncommitted
//! changes of the project folder the binary was built from, whatever the
//! current directory is (a run started from `/` or from inside another
//! repository records this project's commit, not "unknown" or the other
//! repository's).
//!
//! In order: `git -C <project folder>` at run time; if that folder is no
//! checkout any more (the binary was copied elsewhere), the state `build.rs`
//! embedded at build time; where neither knows (a container image built
//! without .git, deploy/Dockerfile), `LIMITBENCH_GIT_COMMIT`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The project's git state and how it was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provenance {
    pub commit: String,
    /// `HEAD^{tree}`: the committed content, the same for the same files
    /// whatever the commit's history or message.
    pub tree: String,
    /// Tracked files differ from the commit (`git status --porcelain
    /// --untracked-files=no` says something).
    pub dirty: bool,
    /// How these were read: `git -C <folder>`, `embedded at build` or
    /// `LIMITBENCH_GIT_COMMIT`.
    pub source: String,
}

/// The folder the binary was built from (the crate's manifest folder).
pub fn project_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
}

/// The state of the checkout at `dir`, if `dir` is the top of one (a
/// folder inside another repository is not this project's checkout).
pub fn of_checkout(dir: &Path) -> Option<Provenance> {
    let top = git(dir, &["rev-parse", "--show-toplevel"])?;
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if !same(Path::new(&top), dir) {
        return None;
    }
    let commit = git(dir, &["rev-parse", "HEAD"])?;
    let tree = git(dir, &["rev-parse", "HEAD^{tree}"]).unwrap_or_default();
    let dirty = git(dir, &["status", "--porcelain", "--untracked-files=no"])
        .map(|s| !s.is_empty())
        .unwrap_or(false);
    Some(Provenance {
        commit,
        tree,
        dirty,
        source: format!("git -C {}", dir.display()),
    })
}

/// What `build.rs` read from the project folder when it built the binary.
fn embedded() -> Option<Provenance> {
    let commit = option_env!("LIMITBENCH_BUILD_GIT_COMMIT").filter(|c| !c.is_empty())?;
    Some(Provenance {
        commit: commit.to_string(),
        tree: option_env!("LIMITBENCH_BUILD_GIT_TREE")
            .unwrap_or_default()
            .to_string(),
        dirty: option_env!("LIMITBENCH_BUILD_GIT_DIRTY") == Some("true"),
        source: "embedded at build".into(),
    })
}

/// The project's provenance (see the module's text for the order).
pub fn project() -> Provenance {
    of_checkout(&project_dir())
        .or_else(embedded)
        .or_else(|| {
            std::env::var("LIMITBENCH_GIT_COMMIT")
                .ok()
                .filter(|c| !c.is_empty() && c != "unknown")
                .map(|commit| Provenance {
                    commit,
                    tree: String::new(),
                    dirty: false,
                    source: "LIMITBENCH_GIT_COMMIT".into(),
                })
        })
        .unwrap_or_else(|| Provenance {
            commit: "unknown".into(),
            tree: String::new(),
            dirty: false,
            source: "none (no checkout, nothing embedded at build)".into(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_project_folder_gives_the_commit_and_tree_of_its_head() {
        let dir = project_dir();
        let Some(p) = of_checkout(&dir) else {
            // A source tree without .git (an unpacked release) has none.
            return;
        };
        let head = git(&dir, &["rev-parse", "HEAD"]).unwrap();
        assert_eq!(p.commit, head);
        assert_eq!(p.tree.len(), head.len(), "{p:?}");
        assert_ne!(p.tree, p.commit);
        assert_eq!(project(), p);
        // build.rs reran when HEAD moved: what it embedded is this commit.
        if let Some(e) = embedded() {
            assert_eq!((e.commit, e.tree), (p.commit, p.tree));
            assert_eq!(e.source, "embedded at build");
        }
    }

    #[test]
    fn a_folder_inside_a_checkout_is_not_a_checkout_of_its_own() {
        assert_eq!(of_checkout(&project_dir().join("src")), None);
    }
}
