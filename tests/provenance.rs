//! Provenance (issue 31): a run records the project's commit and tree
//! whatever the current directory (`/`, or inside another repository), and
//! the server's product, version, allocator and build id; `merge` refuses
//! shards whose servers differ in any of them, naming the field and both
//! values.

mod common;

use std::path::Path;
use std::process::Command;

use common::limitbench;

/// `git -C <project> <args>`, or None where the project is no checkout.
fn project_git(args: &[&str]) -> Option<String> {
    let o = Command::new("git")
        .arg("-C")
        .arg(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .output()
        .ok()?;
    o.status
        .success()
        .then(|| String::from_utf8_lossy(&o.stdout).trim().to_string())
}

fn git(dir: &Path, args: &[&str]) {
    let o = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .output()
        .unwrap();
    assert!(o.status.success(), "git {args:?}: {o:?}");
}

/// A short real run (one experiment, one strategy, smoke) into `data/<id>`
/// with current directory `cwd`; its manifest.
fn small_run(cwd: &Path, data: &Path, id: &str, extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "run",
        "script-survival",
        "--size",
        "smoke",
        "--strategy",
        "fixed-window-lua",
        "--parallel",
        "1",
        "--data-dir",
        data.to_str().unwrap(),
        "--run-id",
        id,
    ];
    args.extend_from_slice(extra);
    limitbench(&args, Some(cwd)).expect_code(0);
    manifest(&data.join(id))
}

fn manifest(run: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(run.join("manifest.json")).unwrap()).unwrap()
}

#[test]
fn the_commit_is_the_projects_from_root_and_from_inside_another_repository() {
    let Some(head) = project_git(&["rev-parse", "HEAD"]) else {
        eprintln!("the project folder is no git checkout; nothing to compare");
        return;
    };
    let tree = project_git(&["rev-parse", "HEAD^{tree}"]).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    // Another repository, with a commit of its own.
    let other = tmp.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    git(&other, &["init", "-q"]);
    std::fs::write(other.join("f"), "x").unwrap();
    git(&other, &["add", "f"]);
    git(&other, &["commit", "-q", "-m", "other"]);
    let others = Command::new("git")
        .arg("-C")
        .arg(&other)
        .args(["rev-parse", "HEAD"])
        .output()
        .unwrap();
    let others = String::from_utf8_lossy(&others.stdout).trim().to_string();
    assert_ne!(others, head);

    for (cwd, id) in [
        (Path::new("/"), "from-root"),
        (other.as_path(), "from-other"),
    ] {
        let m = small_run(cwd, &data, id, &[]);
        assert_eq!(m["git_commit"], head.as_str(), "{id}: {m}");
        assert_eq!(m["git_tree"], tree.as_str(), "{id}: {m}");
        assert!(
            m["git_source"]
                .as_str()
                .is_some_and(|s| s.starts_with("git -C ")),
            "{id}: {m}"
        );
        // Each session says the commit it ran at: the same.
        let s = &m["experiments"]["script-survival"]["sessions"][0];
        assert_eq!(s["git_commit"], head.as_str(), "{id}: {s}");
        // The server from PATH, with what it says it is.
        let rs = &m["redis_server"];
        assert_eq!(rs["source"], "the system's redis-server (PATH)", "{rs}");
        for k in ["product", "version", "mem_allocator", "build_id"] {
            assert!(
                rs[k].as_str().is_some_and(|v| !v.is_empty()),
                "{id}: redis_server.{k} missing: {rs}"
            );
        }
    }
}

#[test]
fn merge_refuses_shards_whose_servers_differ_only_in_allocator() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let bin = common::redis().path;
    let bin = which(&bin);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let shard = |i: &str| {
        small_run(
            root,
            &data,
            &format!("s{i}"),
            &[
                "--shard",
                &format!("{i}/2"),
                "--redis-server",
                bin.to_str().unwrap(),
            ],
        )
    };
    let (m0, _) = (shard("0"), shard("1"));
    // A plain `run --redis-server <path>` records what the server is.
    let rs = &m0["redis_server"];
    assert_eq!(rs["source"], "--redis-server", "{rs}");
    assert_eq!(rs["path"], bin.to_str().unwrap(), "{rs}");
    let allocator = rs["mem_allocator"].as_str().unwrap().to_string();
    assert!(!allocator.is_empty(), "{rs}");
    assert!(
        ["Redis", "Valkey"].contains(&rs["product"].as_str().unwrap()),
        "{rs}"
    );
    assert!(!rs["build_id"].as_str().unwrap().is_empty(), "{rs}");

    // The two shards as they are merge.
    let (s0, s1) = (data.join("s0"), data.join("s1"));
    let merged = tmp.path().join("merged");
    limitbench(
        &[
            "merge",
            merged.to_str().unwrap(),
            s0.to_str().unwrap(),
            s1.to_str().unwrap(),
        ],
        None,
    )
    .expect_code(0);

    // The same shards, one of them on a server built with another allocator.
    let p = s1.join("manifest.json");
    let mut m1 = manifest(&s1);
    m1["redis_server"]["mem_allocator"] = "libc".into();
    std::fs::write(&p, serde_json::to_string_pretty(&m1).unwrap()).unwrap();
    let refused = tmp.path().join("refused");
    limitbench(
        &[
            "merge",
            refused.to_str().unwrap(),
            s0.to_str().unwrap(),
            s1.to_str().unwrap(),
        ],
        None,
    )
    .expect_code(2)
    .expect_output("the redis-server's allocator (mem_allocator) is")
    .expect_output(&format!("{allocator:?}"))
    .expect_output("\"libc\"");
    assert!(!refused.join("manifest.json").exists());
}

/// `redis-server` found on PATH as an absolute path (what a user passes to
/// `--redis-server`).
fn which(bin: &Path) -> std::path::PathBuf {
    if bin.is_absolute() {
        return bin.to_path_buf();
    }
    std::env::var_os("PATH")
        .and_then(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join(bin))
                .find(|c| c.is_file())
        })
        .expect("redis-server on PATH")
}
