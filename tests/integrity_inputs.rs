//! Run integrity (issue 12) and a researcher's first hour (issue 13), the
//! parts `integrity.rs` does not cover: `check` reporting every check, reply
//! errors shown as Redis would, a TOML syntax error's line, temporary server
//! folders, external strategies kept out of the published claims, `--dir`
//! adding to `lua/external/`, validation failures leaving `data/` alone, a
//! resume with another strategy folder or an edited script. Each test runs
//! the real binary against real servers.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{limitbench, small_experiments};

/// Write `<name>.lua` and `<name>.toml` (keys `rl:{client}:<name>`, args the
/// limit and the window, replies mapped by `reply`) into `dir`.
fn strategy(dir: &Path, name: &str, lua: &str, reply: &str) {
    common::external_strategy(
        dir,
        name,
        lua,
        &format!("args = [\"${{limit}}\", \"${{window_ms}}\"]\n[reply]\n{reply}"),
    );
}

#[test]
fn check_reports_every_check_and_exits_1_when_one_errors() {
    // The TTL in seconds rounds to 0 in the refill check's short window:
    // SETEX errors there, the other checks still run and report.
    let d = tempfile::tempdir().unwrap();
    strategy(
        d.path(),
        "ttl0",
        "local n = redis.call('INCR', KEYS[1])\nredis.call('PEXPIRE', KEYS[1], 60000)\n\
         redis.call('SETEX', KEYS[1]..':x', math.floor(tonumber(ARGV[2]) / 1000000), 1)\n\
         if n <= tonumber(ARGV[1]) then return {1, tonumber(ARGV[1]) - n} end\nreturn {0, 0}\n",
        "admitted = 1\nremaining = 2",
    );
    let r = limitbench(
        &["check", "ttl0", "--dir", d.path().to_str().unwrap()],
        None,
    );
    r.expect_code(1)
        .expect_output("pass  exact-limit")
        .expect_output("pass  concurrent-64")
        .expect_output("ERROR refill         sent ")
        .expect_output("invalid expire time in 'setex'")
        .expect_output("checks failed or could not run for ttl0");
}

#[test]
fn reply_errors_name_the_field_and_rule_and_show_the_reply_as_redis_would() {
    let d = tempfile::tempdir().unwrap();
    let inc = "redis.call('INCR', KEYS[1])\nredis.call('PEXPIRE', KEYS[1], 60000)\n";
    strategy(
        d.path(),
        "bulk",
        &format!("{inc}return {{'yes', 'x'}}\n"),
        "admitted = 1\nremaining = 2",
    );
    strategy(
        d.path(),
        "bare",
        &format!("{inc}return 1\n"),
        "admitted = 1\nremaining = 2",
    );
    let dir = d.path().to_str().unwrap();
    limitbench(&["check", "bulk", "--dir", dir], None)
        .expect_code(1)
        .expect_output("strategy `bulk`")
        .expect_output("reply.admitted = 1 cannot be applied: reply[1] is the string \"yes\"")
        .expect_output("Redis replied: 1) \"yes\"  2) \"x\"");
    // A bare integer is no array for the position form; the error says how
    // to write the rule for one value.
    limitbench(&["check", "bare", "--dir", dir], None)
        .expect_code(1)
        .expect_output("reply is the integer 1, not an array")
        .expect_output("write the rule on `reply`, e.g. `reply == 1`")
        .expect_output("Redis replied: (integer) 1");
}

#[test]
fn a_toml_syntax_error_names_its_line_once() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("x.lua"), "return {1, 0}").unwrap();
    std::fs::write(
        d.path().join("x.toml"),
        "name = \"x\"\nscript = \"x.lua\nkeys = [\"k\"]\n",
    )
    .unwrap();
    let r = limitbench(&["strategies", "--dir", d.path().to_str().unwrap()], None);
    r.expect_code(2)
        .expect_output("x.toml")
        .expect_output("line 2");
    assert_eq!(
        r.stderr().matches("x.toml").count(),
        1,
        "the error is printed once:\n{}",
        r.stderr()
    );
}

#[test]
fn temp_server_folders_are_removed_on_sigint_and_stale_ones_swept() {
    let tmp = tempfile::tempdir().unwrap();
    // A folder left by a limitbench that no longer runs.
    let mut gone = Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    // Its owner lock is free: the owner is gone.
    let stale = tmp.path().join(format!("limitbench-redis-{dead}-abc"));
    std::fs::create_dir_all(&stale).unwrap();
    std::fs::write(stale.join("redis.conf"), "port 1\n").unwrap();
    std::fs::write(stale.join(".owner.lock"), "").unwrap();
    // Left a while ago (a folder made a moment ago may not be locked yet by
    // its owner, and is never swept).
    let aged = Command::new("touch")
        .args(["-d", "1 minute ago"])
        .arg(&stale)
        .status()
        .unwrap();
    assert!(aged.success());
    // A folder whose pid this harness cannot see (a run in another PID
    // namespace) but whose owner lock is held: a live run's, kept.
    let held = tmp.path().join(format!("limitbench-redis-{dead}-held"));
    std::fs::create_dir_all(&held).unwrap();
    let lock = std::fs::File::create(held.join(".owner.lock")).unwrap();
    lock.try_lock().unwrap();
    let ours = |pid: u32| {
        std::fs::read_dir(tmp.path())
            .unwrap()
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with(&format!("limitbench-redis-{pid}-"))
            })
            .count()
    };
    let mut child = Command::new(env!("CARGO_BIN_EXE_limitbench"))
        .args(["check", "check-then-act"])
        .env("TMPDIR", tmp.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut seen = 0;
    for _ in 0..500 {
        seen = ours(pid);
        if seen > 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(seen > 0, "the harness made no temp server folder");
    assert!(
        !stale.exists(),
        "the stale folder of pid {dead} was not swept"
    );
    assert!(held.exists(), "a folder whose owner lock is held was swept");
    drop(lock);
    std::thread::sleep(Duration::from_millis(200));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid as i32, libc::SIGINT) };
    let st = child.wait().unwrap();
    assert_eq!(st.code(), Some(130));
    assert_eq!(ours(pid), 0, "SIGINT left temp server folders behind");
}

/// An always-admit external strategy next to a built-in, on a smoke run
/// filtered to those two: the external one is listed but kept out of A3.0,
/// and the claims the run cannot judge are not-run, never fail.
#[test]
fn an_external_strategy_and_a_filtered_smoke_run_fail_no_claim() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("mine");
    strategy(
        &dir,
        "always",
        "return {1, 0}\n",
        "admitted = 1\nremaining = 2",
    );
    let exp = small_experiments(tmp.path());
    let data = tmp.path().join("data");
    let p = |p: &Path| p.to_str().unwrap().to_string();
    let (dir_s, exp_s, data_s) = (p(&dir), p(&exp), p(&data));
    limitbench(
        &[
            "run",
            "concurrency",
            "--size",
            "smoke",
            "--strategy",
            "always,token-bucket",
            "--dir",
            &dir_s,
            "--experiments-dir",
            &exp_s,
            "--data-dir",
            &data_s,
            "--run-id",
            "ext",
        ],
        None,
    )
    .expect_code(0);
    let csv = std::fs::read_to_string(data.join("ext/concurrency.csv")).unwrap();
    assert!(csv.contains(",always,external,"), "{csv}");
    let r = limitbench(&["analyze", &p(&data.join("ext"))], None);
    r.expect_code(0).expect_output(" 0 not-reproduced,");
    let claims = std::fs::read_to_string(data.join("ext/claims.csv")).unwrap();
    let a30 = claims.lines().find(|l| l.starts_with("A3.0,")).unwrap();
    assert!(
        a30.contains(",reproduced,"),
        "A3.0 counted the external strategy: {a30}"
    );
    assert!(
        !claims.lines().any(|l| l.contains(",not-reproduced,")),
        "a filtered smoke run failed a claim:\n{claims}"
    );
}

#[test]
fn dir_adds_to_the_shipped_strategies_and_every_clock_is_listed() {
    let d = tempfile::tempdir().unwrap();
    strategy(
        d.path(),
        "always",
        "return {1, 0}\n",
        "admitted = 1\nremaining = 2",
    );
    let r = limitbench(&["strategies", "--dir", d.path().to_str().unwrap()], None);
    r.expect_code(0);
    let out = r.stdout();
    let row = |name: &str| {
        out.lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("{name} not listed:\n{out}"))
            .split_whitespace()
            .map(String::from)
            .collect::<Vec<_>>()
    };
    assert_eq!(row("name")[2], "clock", "{out}");
    assert_eq!(row("leaky-bucket")[2], "redis", "{out}");
    assert_eq!(row("always")[2], "none", "{out}");
    assert_eq!(row("token-bucket")[2], "redis", "{out}");
    assert_eq!(row("token-bucket-caller-clock")[2], "caller", "{out}");
}

#[test]
fn a_run_that_fails_validation_leaves_data_and_latest_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let exp = small_experiments(tmp.path());
    let bursts = exp.join("bursts.toml");
    let text = std::fs::read_to_string(&bursts).unwrap();
    std::fs::write(&bursts, format!("{text}\n[broken\n")).unwrap();
    let data = tmp.path().join("data");
    std::fs::create_dir_all(data.join("old")).unwrap();
    std::os::unix::fs::symlink("old", data.join("latest")).unwrap();
    limitbench(
        &[
            "run",
            "concurrency",
            "bursts",
            "--size",
            "smoke",
            "--experiments-dir",
            exp.to_str().unwrap(),
            "--data-dir",
            data.to_str().unwrap(),
        ],
        None,
    )
    .expect_code(2)
    .expect_output("bursts.toml");
    let names: Vec<String> = std::fs::read_dir(&data)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "a run folder was written: {names:?}");
    assert_eq!(
        std::fs::read_link(data.join("latest")).unwrap(),
        Path::new("old")
    );
}

#[test]
fn a_resume_with_another_dir_or_an_edited_script_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("mine");
    strategy(
        &dir,
        "always",
        "return {1, 0}\n",
        "admitted = 1\nremaining = 2",
    );
    let copy = tmp.path().join("copy");
    strategy(
        &copy,
        "always",
        "return {1, 0}\n",
        "admitted = 1\nremaining = 2",
    );
    let exp = small_experiments(tmp.path());
    let data = tmp.path().join("data");
    let run = |d: &Path, extra: &[&str]| {
        let mut a = vec![
            "run",
            "concurrency",
            "--size",
            "smoke",
            "--strategy",
            "always",
            "--dir",
            d.to_str().unwrap(),
            "--experiments-dir",
            exp.to_str().unwrap(),
            "--data-dir",
            data.to_str().unwrap(),
        ];
        a.extend_from_slice(extra);
        limitbench(&a, None)
    };
    run(&dir, &["--run-id", "r"]).expect_code(0);
    run(&copy, &["--resume", "r"])
        .expect_code(2)
        .expect_output("cannot be resumed with different inputs")
        .expect_output("--dir was");
    std::fs::write(dir.join("always.lua"), "return {1, 1}\n").unwrap();
    run(&dir, &["--resume", "r"])
        .expect_code(2)
        .expect_output("always.lua changed");
}

/// `bursts.csv` holds the headline metric the report shows (the most
/// admitted in any window), `run` says how to get the report, and a smoke
/// run of one strategy fails no claim it cannot judge.
#[test]
fn bursts_rows_hold_the_most_admitted_in_any_window() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let r = limitbench(
        &[
            "run",
            "bursts",
            "--size",
            "smoke",
            "--strategy",
            "token-bucket",
            "--data-dir",
            data.to_str().unwrap(),
            "--run-id",
            "b",
        ],
        None,
    );
    r.expect_code(0).expect_output("limitbench analyze ");
    let text = std::fs::read_to_string(data.join("b/bursts.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (most, admitted, limit) = (col("max_in_window"), col("admitted"), col("limit"));
    let mut n = 0;
    for l in lines {
        let f: Vec<&str> = l.split(',').collect();
        let m: u64 = f[most].parse().unwrap_or_else(|_| panic!("{l}"));
        let a: u64 = f[admitted].parse().unwrap();
        let lim: u64 = f[limit].parse().unwrap();
        assert!(m >= 1 && m <= a && m <= 2 * lim, "{l}");
        n += 1;
    }
    assert!(n > 0, "no bursts rows:\n{text}");
    // One strategy at smoke size: the claims it cannot judge are not-run.
    limitbench(&["analyze", data.join("b").to_str().unwrap()], None)
        .expect_code(0)
        .expect_output(" 0 not-reproduced,");
}

#[test]
fn an_os_error_is_printed_once() {
    let r = limitbench(
        &[
            "run",
            "replication",
            "--size",
            "smoke",
            "--data-dir",
            "/proc/limitbench-nope",
        ],
        None,
    );
    r.expect_code(2)
        .expect_output("creating /proc/limitbench-nope: No such file or directory");
    assert_eq!(
        r.stderr().matches("No such file or directory").count(),
        1,
        "{}",
        r.stderr()
    );
}
