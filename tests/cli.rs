//! The binary as a user meets it: listings, checks, and clear errors with
//! non-zero exits on bad input.

mod common;

use common::limitbench;

#[test]
fn strategies_lists_all_builtins_and_the_example_external_one() {
    let r = limitbench(&["strategies"], None);
    r.expect_code(0);
    let names: Vec<String> = r
        .stdout()
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next().map(String::from))
        .collect();
    // Properties, not a count: adding a strategy must not break this test.
    let builtins = limitbench_core::strategy::BUILTINS.iter().map(|b| b.name);
    for n in builtins.chain(["leaky-bucket"]) {
        assert!(names.iter().any(|x| x == n), "{n} missing:\n{}", r.stdout());
    }
    let mut unique = names.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(
        unique.len(),
        names.len(),
        "a name listed twice:\n{}",
        r.stdout()
    );
    r.expect_output("leaky-bucket")
        .expect_output("external")
        .expect_output("evalsha-fallback");
}

#[test]
fn check_passes_a_good_strategy_and_fails_the_race() {
    limitbench(&["check", "leaky-bucket"], None)
        .expect_code(0)
        .expect_output("all 7 checks passed");
    limitbench(
        &["check", "token-bucket", "--opt", "invocation=fcall"],
        None,
    )
    .expect_code(0);
    // The race baseline fails the concurrency check (exit 1, not an error).
    let r = limitbench(&["check", "check-then-act"], None);
    r.expect_code(1).expect_output("FAIL  concurrent-64");
}

#[test]
fn unknown_names_are_errors() {
    limitbench(&["check", "no-such-strategy"], None)
        .expect_code(2)
        .expect_output("unknown strategy `no-such-strategy`");
    limitbench(&["run", "no-such-experiment", "--size", "smoke"], None)
        .expect_code(2)
        .expect_output("unknown experiment");
    limitbench(
        &["run", "all", "--size", "smoke", "--strategy", "nope"],
        None,
    )
    .expect_code(2)
    .expect_output("unknown strategy");
}

#[test]
fn a_broken_manifest_names_file_and_field() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("x.lua"), "return {1, 0, 0}").unwrap();
    let dir = d.path().to_str().unwrap();
    // Each broken manifest, and what its error must name.
    let cases: [(&str, &[&str]); 4] = [
        (
            "name = \"x\"\nscript = \"x.lua\"\nkeys = [\"rl:${clinet}\"]\n[reply]\nadmitted = 1\n",
            &["x.toml", "field `keys`", "unknown placeholder `${clinet}`"],
        ),
        (
            "name = \"x\"\nscript = \"missing.lua\"\nkeys = [\"k\"]\n[reply]\nadmitted = 1\n",
            &["field `script`"],
        ),
        (
            "name = \"x\"\nscript = \"x.lua\"\nkeys = [\"k\"]\nmodes = [\"evil\"]\n[reply]\nadmitted = 1\n",
            &["field `modes`"],
        ),
        (
            "name = \"x\"\nscript = \"x.lua\"\nkeys = [\"k\"]\n[reply]\nadmited = 1\n",
            &["x.toml"],
        ),
    ];
    for (manifest, names) in cases {
        std::fs::write(d.path().join("x.toml"), manifest).unwrap();
        let r = limitbench(&["strategies", "--dir", dir], None);
        r.expect_code(2);
        for n in names {
            r.expect_output(n);
        }
    }
}

#[test]
fn a_missing_redis_server_is_named() {
    let r = limitbench(
        &[
            "check",
            "gcra",
            "--redis-server",
            "/nonexistent/redis-server",
        ],
        None,
    );
    r.expect_code(2).expect_output("redis-server");
    r.expect_output("apt-get install");
}

/// Ctrl-C, SIGTERM and even SIGKILL of the harness leave no redis-server
/// running (signal handler, and the parent-death signal for SIGKILL).
#[test]
fn no_orphan_server_when_the_harness_is_killed() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGKILL] {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_limitbench"))
            .args(["check", "check-then-act"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // Wait until its redis-server is up.
        let mut servers = Vec::new();
        for _ in 0..200 {
            servers = children_named(child.id(), "redis-server");
            if !servers.is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(
            !servers.is_empty(),
            "the harness never started a redis-server"
        );
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, sig) };
        let _ = child.wait();
        std::thread::sleep(std::time::Duration::from_millis(300));
        for p in servers {
            assert!(
                !common::alive(p),
                "redis-server {p} survived signal {sig} of the harness"
            );
        }
    }
}

fn children_named(parent: u32, name: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // pid (comm) state ppid ...
        let Some(close) = stat.rfind(')') else {
            continue;
        };
        let comm = &stat[stat.find('(').unwrap_or(0) + 1..close];
        let ppid: u32 = stat[close + 2..]
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        if ppid == parent && comm == name {
            out.push(pid);
        }
    }
    out
}

#[test]
fn a_run_id_is_a_plain_folder_name_never_a_path() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data_s = data.to_str().unwrap();
    for id in [
        "../escape",
        "/tmp/limitbench-escape",
        "",
        "..",
        ".hidden",
        "a/b",
    ] {
        for cmd in [
            vec![
                "run",
                "baseline",
                "--size",
                "smoke",
                "--data-dir",
                data_s,
                "--run-id",
                id,
            ],
            vec![
                "scorecard",
                "--size",
                "smoke",
                "--data-dir",
                data_s,
                "--run-id",
                id,
            ],
            vec![
                "matrix",
                "--size",
                "smoke",
                "--data-dir",
                data_s,
                "--run-id",
                id,
            ],
        ] {
            let r = limitbench(&cmd, None);
            assert_ne!(r.code(), 0, "{cmd:?}");
            assert!(
                r.stderr().contains("is not a run id"),
                "{cmd:?}: {}",
                r.stderr()
            );
        }
    }
    assert!(!data.exists() || std::fs::read_dir(&data).unwrap().next().is_none());
    assert!(!dir.path().join("escape").exists());
    assert!(!std::path::Path::new("/tmp/limitbench-escape").exists());
}

#[test]
fn a_run_folder_has_one_holder_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data_s = data.to_str().unwrap();
    let first = limitbench(
        &[
            "run",
            "baseline",
            "--size",
            "smoke",
            "--data-dir",
            data_s,
            "--run-id",
            "one",
        ],
        None,
    );
    assert_eq!(first.code(), 0, "{}", first.stderr());
    let run = data.join("one");
    let rows_before = std::fs::read_to_string(run.join("baseline.csv")).unwrap();
    // Another holder (as a second `--resume` would be) keeps it.
    let held = limitbench::run::lock::RunLock::take(&run, "a test").unwrap();
    let resume = limitbench(
        &[
            "run",
            "baseline",
            "--size",
            "smoke",
            "--data-dir",
            data_s,
            "--resume",
            "one",
        ],
        None,
    );
    assert_ne!(resume.code(), 0);
    assert!(
        resume.stderr().contains("is in use by another limitbench")
            && resume.stderr().contains("(a test)"),
        "{}",
        resume.stderr()
    );
    let analyze = limitbench(&["analyze", run.to_str().unwrap()], None);
    assert_ne!(analyze.code(), 0);
    assert!(analyze.stderr().contains("in use"), "{}", analyze.stderr());
    assert_eq!(
        std::fs::read_to_string(run.join("baseline.csv")).unwrap(),
        rows_before
    );
    drop(held);
    let analyze = limitbench(&["analyze", run.to_str().unwrap()], None);
    assert_eq!(analyze.code(), 0, "{}", analyze.stderr());
    assert!(!run.join(".lock").exists());
}

#[test]
fn a_connection_count_the_process_cannot_open_fails_before_any_trial_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let exp = common::small_experiments(dir.path());
    let conc = std::fs::read_to_string(exp.join("concurrency.toml")).unwrap();
    std::fs::write(
        exp.join("concurrency.toml"),
        conc.replacen("workers = [1, 8]", "workers = [1, 1000000]", 1),
    )
    .unwrap();
    let data = dir.path().join("data");
    let t = std::time::Instant::now();
    let r = limitbench(
        &[
            "run",
            "concurrency",
            "--size",
            "smoke",
            "--experiments-dir",
            exp.to_str().unwrap(),
            "--data-dir",
            data.to_str().unwrap(),
        ],
        None,
    );
    assert_ne!(r.code(), 0);
    let e = r.stderr();
    assert!(
        e.contains("[smoke] workers[1]")
            && e.contains("1000000 connections")
            && e.contains("ulimit -n"),
        "{e}"
    );
    assert!(
        t.elapsed().as_secs() < 10,
        "refused late: {:?}",
        t.elapsed()
    );
    assert!(!data.exists() || std::fs::read_dir(&data).unwrap().next().is_none());
}

/// A password holding '/' and '@' is never printed, whether the URL parses
/// and the server is unreachable or the URL does not parse (issue 34: the
/// parse error printed it in clear).
#[test]
fn a_password_is_never_printed_by_a_url_error() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_str().unwrap();
    for url in [
        // Parses (credentials end at the last '@'); nothing listens on port 1.
        "redis://u:Zq9/Xk@77@127.0.0.1:1",
        // Does not parse: the port is not a number.
        "redis://u:Zq9/Xk@77@127.0.0.1:notaport",
    ] {
        for cmd in ["run", "scorecard"] {
            let mut args = vec![cmd];
            if cmd == "run" {
                args.push("baseline");
            }
            args.extend(["--redis-url", url, "--data-dir", data, "--size", "smoke"]);
            let r = limitbench(&args, None);
            assert_ne!(r.code(), 0, "{url} {cmd}: {}", r.stderr());
            let all = format!("{}{}", r.stdout(), r.stderr());
            assert!(
                !all.contains("Zq9") && !all.contains("Xk@77"),
                "{url} {cmd}: {all}"
            );
        }
    }
}
