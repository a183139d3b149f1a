//! Records the compiler's version for the run manifest (`rustc --version`),
//! so a run says what built the binary that produced it; and the project's
//! git state at build time (commit, tree, uncommitted changes), which the
//! manifest records when the project folder is gone at run time (a binary
//! copied elsewhere; `run::provenance`).

use std::path::Path;
use std::process::Command;

fn main() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=LIMITBENCH_RUSTC_VERSION={version}");
    println!("cargo:rerun-if-env-changed=RUSTC");

    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into());
    let git = |args: &[&str]| {
        Command::new("git")
            .arg("-C")
            .arg(&dir)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let commit = git(&["rev-parse", "HEAD"]).unwrap_or_default();
    let tree = git(&["rev-parse", "HEAD^{tree}"]).unwrap_or_default();
    let dirty = git(&["status", "--porcelain", "--untracked-files=no"])
        .map(|s| if s.is_empty() { "false" } else { "true" })
        .unwrap_or_default();
    println!("cargo:rustc-env=LIMITBENCH_BUILD_GIT_COMMIT={commit}");
    println!("cargo:rustc-env=LIMITBENCH_BUILD_GIT_TREE={tree}");
    println!("cargo:rustc-env=LIMITBENCH_BUILD_GIT_DIRTY={dirty}");
    // Build again when the commit moves (HEAD, the branch's ref, packed
    // refs), when something is staged (the index) or when a compiled source
    // changes (the dirty flag).
    // (A path that does not exist would rerun this script at every build.)
    let watch = |f: Option<String>| {
        if let Some(f) = f.map(|f| Path::new(&dir).join(f))
            && f.exists()
        {
            println!("cargo:rerun-if-changed={}", f.display());
        }
    };
    for p in ["HEAD", "index", "packed-refs"] {
        watch(git(&["rev-parse", "--git-path", p]));
    }
    if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watch(git(&["rev-parse", "--git-path", &r]));
    }
    for p in ["src", "crates", "Cargo.toml", "Cargo.lock", "build.rs"] {
        println!("cargo:rerun-if-changed={p}");
    }
}
