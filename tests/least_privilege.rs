//! A least-privilege user on a server someone runs (issue 34): an ACL
//! that refuses what only describes the server (CONFIG) or what the run
//! does not use (FUNCTION) still runs, leaves nothing behind and raises no
//! false alarm, on a real redis-server with a real ACL.

mod common;

/// `run baseline --size smoke` into `data/<run_id>` as a user `user` with
/// every command but `refused` (an ACL command category or command, e.g.
/// `-config`), on a fresh server, returned with the run (it stops with it).
async fn baseline_as(
    user: &str,
    refused: &str,
    data: &std::path::Path,
) -> (common::Run, limitbench_core::fleet::Fleet, String) {
    let f = common::standalone().await;
    let mut admin = f.primary().connection().await.unwrap();
    let pw = format!("pw-issue34-{user}");
    admin
        .call(&limitbench_core::args![
            "ACL",
            "SETUSER",
            user,
            "on",
            format!(">{pw}").as_str(),
            "~*",
            "+@all",
            refused
        ])
        .await
        .unwrap();
    let url = format!("redis://{user}:{pw}@127.0.0.1:{}", f.primary_addr().port());
    let r = common::limitbench(
        &[
            "run",
            "baseline",
            "--size",
            "smoke",
            "--redis-url",
            &url,
            "--data-dir",
            data.to_str().unwrap(),
            "--run-id",
            user,
        ],
        None,
    );
    (r, f, pw)
}

/// A user whose ACL lacks CONFIG (as on many managed servers) can run:
/// CONFIG GET only describes the server, and the manifest records it as
/// unavailable with the server's reply (issue 34).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_without_config_runs_and_the_manifest_says_config_was_unavailable() {
    let dir = tempfile::tempdir().unwrap();
    let (r, _server, pw) = baseline_as("lim", "-config", dir.path()).await;
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let m: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("lim/manifest.json")).unwrap(),
    )
    .unwrap();
    let unavailable = m["experiments"]["baseline"]["server"]["unavailable"].to_string();
    assert!(
        unavailable.contains("CONFIG GET") && unavailable.contains("NOPERM"),
        "{unavailable}"
    );
    assert!(!m.to_string().contains(&pw));
}

/// A user whose ACL refuses FUNCTION (`-function`) runs an experiment that
/// loads no library: its keys are removed and the clean-up does not claim
/// it failed because FUNCTION LIST was refused (issue 34).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_without_function_leaves_nothing_and_no_false_alarm() {
    let dir = tempfile::tempdir().unwrap();
    let (r, server, _) = baseline_as("nofn", "-function", dir.path()).await;
    assert_eq!(r.code(), 0, "{}", r.stderr());
    assert!(!r.stderr().contains("could not remove"), "{}", r.stderr());
    let left = server
        .primary()
        .connection()
        .await
        .unwrap()
        .call(&limitbench_core::args!["DBSIZE"])
        .await
        .unwrap()
        .as_i64();
    assert_eq!(left, Some(0), "keys left behind");
}

/// A user whose ACL lacks commands the run needs is stopped at connect,
/// before anything is written, with every missing permission named and the
/// ACL rules that grant them: `-@dangerous` (as many managed servers set)
/// refuses INFO; `-scan -unlink` refuse the clean-up's commands (issue 34).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_missing_what_the_run_needs_is_told_all_of_it_at_connect() {
    for (user, refused, named) in [
        ("nodanger", "-@dangerous", vec!["+info"]),
        ("noclean", "-scan", vec!["+scan"]),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let (r, server, pw) = baseline_as(user, refused, dir.path()).await;
        assert_ne!(r.code(), 0, "{user}: {}", r.stderr());
        for n in named {
            assert!(r.stderr().contains(n), "{user}: {}", r.stderr());
        }
        assert!(r.stderr().contains("ACL SETUSER"), "{user}: {}", r.stderr());
        assert!(!r.stderr().contains(&pw), "{user}: {}", r.stderr());
        // Nothing was written: the server holds no key.
        let mut admin = server.primary().connection().await.unwrap();
        let n = admin
            .call(&limitbench_core::args!["DBSIZE"])
            .await
            .unwrap()
            .as_i64();
        assert_eq!(n, Some(0), "{user}");
    }
}

/// A server with CONFIG renamed away (`rename-command CONFIG ""`, as on
/// managed servers) runs the scorecard: CONFIG only describes the server,
/// so every cell that runs on a server you run is measured, none is
/// `error` (issue 34: every cell was `error` and the scorecard exited 0).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_with_config_renamed_away_runs_the_scorecard() {
    use limitbench_core::fleet::{Fleet, ServerConfig};
    let f = Fleet::standalone(
        &common::redis(),
        ServerConfig::default().with("rename-command", "CONFIG \"\""),
    )
    .await
    .expect("a server with CONFIG renamed away starts");
    let mut admin = f.primary().connection().await.unwrap();
    let refused = admin
        .call(&limitbench_core::args!["CONFIG", "GET", "port"])
        .await;
    assert!(refused.is_err(), "CONFIG still answers: {refused:?}");
    let dir = tempfile::tempdir().unwrap();
    let url = format!("redis://127.0.0.1:{}", f.primary_addr().port());
    let r = common::limitbench(
        &[
            "scorecard",
            "--size",
            "smoke",
            "--strategy",
            "token-bucket",
            "--redis-url",
            &url,
            "--data-dir",
            dir.path().to_str().unwrap(),
            "--run-id",
            "renamed",
        ],
        None,
    );
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let csv = std::fs::read_to_string(dir.path().join("renamed/scorecard.csv")).unwrap();
    // One row per cell; the verdict is a field of its own.
    let verdicts: Vec<&str> = csv.lines().skip(1).collect();
    assert!(
        verdicts.iter().any(|l| l.contains(",pass,")),
        "no cell measured:\n{csv}"
    );
    assert!(
        !verdicts.iter().any(|l| l.contains(",error,")),
        "a cell is error:\n{csv}"
    );
    let n = admin
        .call(&limitbench_core::args!["DBSIZE"])
        .await
        .unwrap()
        .as_i64();
    assert_eq!(n, Some(0), "keys left behind");
}
