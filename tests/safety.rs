//! Safe to point at a Redis someone runs (issue 20), on real redis-servers:
//! the run owns only keys that start with its prefix, deletes only those,
//! stores no password, leaves nothing behind (also after Ctrl-C), gives a
//! stalled server a named timeout instead of a stored trial, and refuses
//! bad prefixes, bad parameters, replicas, full servers and remote hosts.

mod common;

use std::time::Duration;

use limitbench_core::fleet::external::{OpenPolicy, UserServer};
use limitbench_core::fleet::{Fleet, ServerConfig};
use limitbench_core::namespace;
use limitbench_core::resp::Connection;

const PASSWORD: &str = "s3cret-issue20";

/// In-process tests share the key namespace (process-wide): one at a time.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A redis-server that wants `PASSWORD`, and an admin connection to it.
async fn password_server() -> (Fleet, Connection) {
    let f = common::standalone().await;
    let mut c = f.primary().connection().await.unwrap();
    c.call(&limitbench_core::args![
        "CONFIG",
        "SET",
        "requirepass",
        PASSWORD
    ])
    .await
    .unwrap();
    c.call(&limitbench_core::args!["AUTH", PASSWORD])
        .await
        .unwrap();
    (f, c)
}

fn url_of(f: &Fleet, db: u32) -> String {
    format!(
        "redis://:{PASSWORD}@127.0.0.1:{}/{db}",
        f.primary_addr().port()
    )
}

async fn keys(admin: &mut Connection, db: u64) -> Vec<String> {
    admin
        .call(&limitbench_core::args!["SELECT", db])
        .await
        .unwrap();
    let mut k: Vec<String> = admin
        .call(&limitbench_core::args!["KEYS", "*"])
        .await
        .unwrap()
        .into_array()
        .unwrap()
        .iter()
        .filter_map(|r| r.as_string())
        .collect();
    k.sort();
    k
}

async fn libraries(admin: &mut Connection) -> Vec<String> {
    namespace::libraries(admin).await.unwrap()
}

/// A foreign key holding the prefix in its middle (and one without it)
/// survives the clean-up; the run's keys and its function library go.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_clean_up_deletes_only_keys_that_start_with_the_prefix() {
    let _turn = SERIAL.lock().await;
    let (f, mut admin) = password_server().await;
    admin
        .call(&limitbench_core::args!["SELECT", 2u64])
        .await
        .unwrap();
    for k in ["sess:lb:t1:123", "victim:other-app"] {
        admin
            .call(&limitbench_core::args!["SET", k, "x"])
            .await
            .unwrap();
    }
    // A user's library, which must neither be replaced nor deleted; and a
    // library of another run whose id starts with this one's (`t1-2`, its
    // namespace `lb:t1-2:`): issue 34, the clean-up of `t1` removed it.
    for lib in ["lb_token_bucket", "lb_3at1_2d2_3alb_token_bucket"] {
        let code =
            format!("#!lua name={lib}\nredis.register_function('{lib}', function() return 1 end)");
        admin
            .call(&limitbench_core::args!["FUNCTION", "LOAD", &code])
            .await
            .unwrap();
    }
    let u = UserServer::open(&url_of(&f, 2), "lb:t1:", Some("t1"), OpenPolicy::default())
        .await
        .unwrap();
    // Every key a strategy builds now starts with the prefix.
    let s = limitbench_core::strategy::build("token-bucket", None, &Default::default()).unwrap();
    let fleet = Fleet::external(u.addr);
    fleet.prepare(s.as_ref()).await.unwrap();
    let req = limitbench_core::strategy::Request::now(
        "alice",
        limitbench_core::strategy::Limit::per_window(5, 60_000),
    );
    s.decide(&mut fleet.conn().await.unwrap(), &req)
        .await
        .unwrap();
    let during = keys(&mut admin, 2).await;
    assert!(
        during.iter().any(|k| k.starts_with("lb:t1:rl:{alice}")),
        "{during:?}"
    );
    assert!(
        libraries(&mut admin)
            .await
            .iter()
            .any(|l| l.starts_with("lb_3at1_3a"))
    );
    let removed = u.clean_up().await.unwrap();
    assert_eq!((removed.keys, removed.libraries), (1, 1), "{removed:?}");
    assert_eq!(
        keys(&mut admin, 2).await,
        vec!["sess:lb:t1:123", "victim:other-app"]
    );
    let mut left = libraries(&mut admin).await;
    left.sort();
    assert_eq!(
        left,
        vec!["lb_3at1_2d2_3alb_token_bucket", "lb_token_bucket"]
    );
    assert_eq!(namespace::namespace(), "");
    drop(u);
}

/// `--key-prefix ''` and `lb:` are refused before anything is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_and_short_prefixes_are_refused() {
    let (f, mut admin) = password_server().await;
    admin
        .call(&limitbench_core::args!["SELECT", 2u64])
        .await
        .unwrap();
    admin
        .call(&limitbench_core::args!["SET", "sess:lb:123", "x"])
        .await
        .unwrap();
    let url = url_of(&f, 2);
    let data = tempfile::tempdir().unwrap();
    for (prefix, want) in [
        ("", "is empty"),
        ("lb:", "shorter than"),
        ("lb:other:", "does not contain the run id"),
    ] {
        common::limitbench(
            &[
                "scorecard",
                "--size",
                "smoke",
                "--strategy",
                "token-bucket",
                "--run-id",
                "pfx1",
                "--data-dir",
                data.path().to_str().unwrap(),
                "--key-prefix",
                prefix,
                "--redis-url",
                &url,
            ],
            None,
        )
        .expect_code(2)
        .expect_output(want);
    }
    assert_eq!(keys(&mut admin, 2).await, vec!["sess:lb:123"]);
}

/// `run --redis-url` with a password (from LIMITBENCH_REDIS_URL): every
/// trial completes, also through the delay proxy; the password is nowhere
/// in the run folder or the output; nothing is left on the server after
/// `run` and after `check`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_password_run_and_check_leave_no_secret_and_no_key() {
    let (f, mut admin) = password_server().await;
    admin
        .call(&limitbench_core::args!["SELECT", 3u64])
        .await
        .unwrap();
    admin
        .call(&limitbench_core::args!["SET", "sess:lb:pw1:1", "x"])
        .await
        .unwrap();
    let url = url_of(&f, 3);
    let data = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_limitbench");
    let out = std::process::Command::new(bin)
        .args([
            "run",
            "concurrency",
            "--size",
            "smoke",
            "--run-id",
            "pw1",
            "--data-dir",
        ])
        .arg(data.path())
        .env("LIMITBENCH_REDIS_URL", &url)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        !text.contains(PASSWORD),
        "the password is in the output: {text}"
    );
    assert!(text.contains("under the key prefix `lb:pw1:`"), "{text}");
    let run = data.path().join("pw1");
    let csv = std::fs::read_to_string(run.join("concurrency.csv")).unwrap();
    assert!(
        csv.lines().any(|l| l.contains("rtt2")),
        "no trial through the proxy:\n{csv}"
    );
    for e in walk(&run) {
        let bytes = std::fs::read(&e).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(PASSWORD),
            "the password is in {}",
            e.display()
        );
    }
    let manifest = std::fs::read_to_string(run.join("manifest.json")).unwrap();
    assert!(
        manifest.contains("\"requirepass\": \"***\""),
        "CONFIG not recorded redacted"
    );
    assert_eq!(keys(&mut admin, 3).await, vec!["sess:lb:pw1:1"]);
    assert!(libraries(&mut admin).await.is_empty());

    let check = common::limitbench(
        &["check", "fixed-window-derived-key", "--redis-url", &url],
        None,
    );
    check.expect_code(0);
    assert!(!format!("{}{}", check.stdout(), check.stderr()).contains(PASSWORD));
    assert_eq!(keys(&mut admin, 3).await, vec!["sess:lb:pw1:1"]);
    assert_eq!(keys(&mut admin, 0).await, Vec::<String>::new());
    assert!(libraries(&mut admin).await.is_empty());

    // A wrong password is named as such, without echoing it.
    let wrong = format!("redis://:not-it-9@127.0.0.1:{}/3", f.primary_addr().port());
    let r = common::limitbench(&["check", "token-bucket", "--redis-url", &wrong], None);
    r.expect_code(2).expect_output("refused the credentials");
    assert!(!r.stderr().contains("not-it-9"), "{}", r.stderr());
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// The server SIGSTOPped mid-run: a named timeout, exit 1, no trial
/// stored slower than the limit; after SIGCONT a resume finishes the run
/// and removes every key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_server_gives_a_named_timeout_and_no_stored_trial() {
    let (f, mut admin) = password_server().await;
    let url = url_of(&f, 0);
    let pid = f.primary().pid().unwrap();
    let data = tempfile::tempdir().unwrap();
    let exp = common::small_experiments(data.path());
    let bin = env!("CARGO_BIN_EXE_limitbench");
    let child = std::process::Command::new(bin)
        .args([
            "run",
            "concurrency",
            "--size",
            "smoke",
            "--run-id",
            "stall1",
            "--stall-after",
            "2s",
        ])
        .arg("--data-dir")
        .arg(data.path())
        .arg("--experiments-dir")
        .arg(&exp)
        .env("LIMITBENCH_REDIS_URL", &url)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let run = data.path().join("stall1");
    // Stop the server once some trials are stored.
    let t0 = std::time::Instant::now();
    while committed(&run) < 3 && t0.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(20));
    }
    unsafe { libc::kill(pid as i32, libc::SIGSTOP) };
    let out = child.wait_with_output().unwrap();
    unsafe { libc::kill(pid as i32, libc::SIGCONT) };
    let text = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("did not finish within 2 s"), "{text}");
    assert!(text.contains("nothing of it was committed"), "{text}");
    let times = std::fs::read_to_string(run.join("trial-times.csv")).unwrap();
    for l in times.lines().skip(1) {
        let ms: f64 = l.rsplit(',').next().unwrap().parse().unwrap();
        assert!(ms < 2000.0, "a stalled trial was stored: {l}");
    }
    let before = committed(&run);
    let r = common::limitbench(
        &[
            "run",
            "concurrency",
            "--size",
            "smoke",
            "--resume",
            "stall1",
            "--data-dir",
            data.path().to_str().unwrap(),
            "--experiments-dir",
            exp.to_str().unwrap(),
            "--redis-url",
            &url,
        ],
        None,
    );
    r.expect_code(0);
    assert!(committed(&run) > before);
    assert_eq!(keys(&mut admin, 0).await, Vec::<String>::new());
    assert!(libraries(&mut admin).await.is_empty());
}

fn committed(run: &std::path::Path) -> usize {
    std::fs::read_to_string(run.join("trial-times.csv"))
        .map(|t| t.lines().count().saturating_sub(1))
        .unwrap_or(0)
}

/// SIGINT mid-run on a server the user runs: exit 130, nothing left on the
/// server, and the manifest says the session was interrupted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_leaves_nothing_on_the_server() {
    let (f, mut admin) = password_server().await;
    admin
        .call(&limitbench_core::args!["SET", "sess:lb:int1:1", "x"])
        .await
        .unwrap();
    let url = url_of(&f, 0);
    let data = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_limitbench");
    let child = std::process::Command::new(bin)
        .args(["run", "concurrency", "--size", "smoke", "--run-id", "int1"])
        .arg("--data-dir")
        .arg(data.path())
        .env("LIMITBENCH_REDIS_URL", &url)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let run = data.path().join("int1");
    let t0 = std::time::Instant::now();
    while committed(&run) < 5 && t0.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(10));
    }
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(130), "{text}");
    assert!(!text.contains(PASSWORD));
    assert_eq!(keys(&mut admin, 0).await, vec!["sess:lb:int1:1"], "{text}");
    assert!(libraries(&mut admin).await.is_empty());
    let manifest = std::fs::read_to_string(run.join("manifest.json")).unwrap();
    assert!(manifest.contains("interrupted"), "{manifest}");
}

/// Out-of-range parameters are named (file, table, field) before the first
/// trial, and nothing is measured.
#[test]
fn parameters_out_of_range_are_refused_before_the_first_trial() {
    let dir = tempfile::tempdir().unwrap();
    let exp = common::small_experiments(dir.path());
    let file = exp.join("concurrency.toml");
    let good = std::fs::read_to_string(&file).unwrap();
    for (from, to, field) in [
        // The whole line: a grid's `trials = 40` must not become `00`.
        ("\ntrials = 4\n", "\ntrials = 0\n", "[smoke] trials"),
        ("workers = [1, 8]", "workers = [1, 0]", "[smoke] workers[1]"),
    ] {
        std::fs::write(&file, good.replace(from, to)).unwrap();
        let r = common::limitbench(
            &[
                "run",
                "concurrency",
                "--size",
                "smoke",
                "--data-dir",
                dir.path().join("data").to_str().unwrap(),
                "--experiments-dir",
                exp.to_str().unwrap(),
            ],
            None,
        );
        r.expect_code(2)
            .expect_output(field)
            .expect_output("concurrency.toml");
        assert!(
            !dir.path().join("data").exists()
                || std::fs::read_dir(dir.path().join("data")).unwrap().count() == 0
        );
    }
    for bad in ["0s", "x"] {
        common::limitbench(
            &[
                "run",
                "concurrency",
                "--size",
                "smoke",
                "--stall-after",
                bad,
            ],
            None,
        )
        .expect_code(2);
    }
}

/// A replica, a server without memory headroom, and a remote host without
/// --allow-remote are refused with their cause.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_full_servers_and_remote_hosts_are_refused() {
    let _turn = SERIAL.lock().await;
    let pair = Fleet::primary_replica(&common::redis(), ServerConfig::default())
        .await
        .unwrap();
    let replica = pair.replica().unwrap().addr();
    let e = UserServer::open(
        &format!("redis://{replica}"),
        "lb:rep1:",
        Some("rep1"),
        OpenPolicy::default(),
    )
    .await
    .unwrap_err();
    assert!(e.to_string().contains("is a replica"), "{e}");
    let primary = pair.primary_addr();
    let mut c = Connection::connect(primary).await.unwrap();
    let used = limitbench_core::info::read_number(&mut c, "memory", "used_memory")
        .await
        .unwrap();
    c.call(&limitbench_core::args![
        "CONFIG",
        "SET",
        "maxmemory",
        used as u64 + 1000
    ])
    .await
    .unwrap();
    let e = UserServer::open(
        &format!("redis://{primary}"),
        "lb:mem1:",
        Some("mem1"),
        OpenPolicy::default(),
    )
    .await
    .unwrap_err();
    assert!(e.to_string().contains("maxmemory"), "{e}");
    drop(pair);
    // 192.0.2.1 (TEST-NET-1) is never a real server; refused before connecting.
    let r = common::limitbench(
        &[
            "scorecard",
            "--size",
            "smoke",
            "--strategy",
            "token-bucket",
            "--redis-url",
            "redis://192.0.2.1:6379",
        ],
        None,
    );
    r.expect_code(2).expect_output("--allow-remote");
    common::limitbench(
        &[
            "check",
            "token-bucket",
            "--redis-url",
            "redis://192.0.2.1:6379",
        ],
        None,
    )
    .expect_code(2)
    .expect_output("not a loopback address");
}

/// A connection count the user's server has no room for is refused before
/// anything runs, naming the parameter and the server's figures (issue 34).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_room_for_the_workers_is_refused_naming_the_parameter() {
    let f = common::standalone().await;
    let mut admin = f.primary().connection().await.unwrap();
    admin
        .call(&limitbench_core::args!["CONFIG", "SET", "maxclients", "50"])
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let url = format!("redis://127.0.0.1:{}", f.primary_addr().port());
    let r = common::limitbench(
        &[
            "run",
            "concurrency",
            "--size",
            "smoke",
            "--strategy",
            "check-then-act",
            "--redis-url",
            &url,
            "--data-dir",
            dir.path().to_str().unwrap(),
        ],
        None,
    );
    assert_ne!(r.code(), 0);
    assert!(
        r.stderr().contains("workers[2] = 64 connections at once")
            && r.stderr().contains("50 maxclients"),
        "{}",
        r.stderr()
    );
}
