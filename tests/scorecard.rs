//! The scorecard on real redis-server, smoke size: values that could fail.
//! An exact strategy (token-bucket) is exact at 0 and 6.7 ms and shows no
//! clock drift; check-then-act over-admits at 6.7 ms; the caller-clock
//! bucket drifts under a 1 s skew; a strategy that errors on every call
//! gets an `error` row, not a crash; a Lua-only fixed window keyed by
//! `${window_index}` (tests/fixtures/window-keyed) passes `check` and is in
//! the scorecard: exact, on the caller's clock, failing the straddle. The
//! cells are the experiments' probes: their raw rows are in the scorecard's
//! folder, and a cell's value is what the experiment's rows say.

mod common;

use limitbench::run::Size;
use limitbench::scorecard::{self as sc, Config, PROPERTIES, ScorecardServer};
use limitbench_analysis::scorecard::{CellOutcome, CellVerdict};

/// The two tests measure timing (bursts around a window boundary) on two
/// shared cores: they take turns.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn failing_strategy(dir: &std::path::Path) {
    std::fs::write(
        dir.join("always-fails.lua"),
        "return redis.error_reply('ERR always fails')\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("always-fails.toml"),
        "name = \"always-fails\"\nscript = \"always-fails.lua\"\nkeys = [\"rl:{${client}}:af\"]\nargs = [\"${limit}\"]\n[reply]\nadmitted = 1\n",
    )
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
// Longer than 120 lines: one smoke scorecard run whose table every assertion reads.
async fn smoke_scorecard_judges_what_it_measures() {
    let _turn = SERIAL.lock().await;
    let dir = tempfile::tempdir().unwrap();
    failing_strategy(dir.path());
    // The Lua-only fixed window keyed by ${window_index}: `check` passes.
    let fixture =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/window-keyed");
    for f in ["fixed-window-keyed.lua", "fixed-window-keyed.toml"] {
        std::fs::copy(fixture.join(f), dir.path().join(f)).unwrap();
    }
    let keyed = sc::build("fixed-window-keyed", Some(dir.path()), &Default::default()).unwrap();
    assert_eq!(keyed.info().clock.as_str(), "caller");
    let fleet = common::standalone().await;
    let checks = limitbench::check::run_checks(keyed, &fleet).await.unwrap();
    assert!(checks.iter().all(|c| c.passed), "{checks:?}");
    drop(fleet);
    let out = tempfile::tempdir().unwrap();
    let cfg = Config {
        strategies: [
            "token-bucket",
            "check-then-act",
            "token-bucket-caller-clock",
            "always-fails",
            "fixed-window-keyed",
        ]
        .map(String::from)
        .to_vec(),
        dir: Some(dir.path().to_path_buf()),
        size: Size::Smoke,
        target: ScorecardServer::Own(common::redis()),
        key_prefix: "limitbench:test:".into(),
        out: out.path().to_path_buf(),
        experiments_dir: std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments"),
        promise_limit: None,
        promise_window_ms: None,
        broken: Vec::new(),
        lanes: 1,
    };
    let card = sc::run(&cfg, |_| {}).await.expect("the scorecard runs");
    let get = |s: &str, p: &str| {
        card.cell(s, p)
            .unwrap_or_else(|| panic!("no cell {s}/{p}"))
            .clone()
    };

    // Exact: exactly the limit at 0 and 6.7 ms, no drift on Redis's clock.
    for p in ["exact-0ms", "exact-6.7ms"] {
        let c = get("token-bucket", p);
        assert_eq!(
            (c.value, c.verdict),
            (Some(1.0), CellVerdict::Pass),
            "{c:?}"
        );
    }
    let c = get("token-bucket", "clock-1s");
    assert!(
        c.value.unwrap() <= 2.0 && c.verdict == CellVerdict::Pass,
        "{c:?}"
    );

    // The race baseline must fail exactness at 6.7 ms.
    let c = get("check-then-act", "exact-6.7ms");
    assert!(
        c.value.unwrap() > 1.0 && c.verdict == CellVerdict::Fail,
        "{c:?}"
    );

    // The caller-clock bucket drifts at +/-1 s, and says whose clock it is on.
    let c = get("token-bucket-caller-clock", "clock-1s");
    assert!(
        c.value.unwrap() > 5.0 && c.verdict == CellVerdict::Fail,
        "{c:?}"
    );
    assert!(c.detail.contains("clock caller"), "{c:?}");

    // Slow properties are not run at smoke size, and say so.
    let c = get("token-bucket", "replication");
    assert_eq!(c.verdict, CellVerdict::NotRun);
    assert_eq!(c.detail, "size smoke");

    // A strategy that errors on every call: an error row, the rest not-run.
    let c = get("always-fails", "works");
    assert_eq!(c.verdict, CellVerdict::Error, "{c:?}");
    assert!(c.detail.contains("always fails"), "{c:?}");
    assert_eq!(
        get("always-fails", "exact-0ms").verdict,
        CellVerdict::NotRun
    );

    // The window-keyed fixture is in the scorecard, exact, on the caller's
    // clock, and fails the straddle (two windows' worth around a boundary).
    let c = get("fixed-window-keyed", "exact-0ms");
    assert_eq!(
        (c.value, c.verdict),
        (Some(1.0), CellVerdict::Pass),
        "{c:?}"
    );
    let c = get("fixed-window-keyed", "straddle");
    assert!(
        c.value.unwrap() > 1.5 && c.verdict == CellVerdict::Fail,
        "{c:?}"
    );
    assert!(
        get("fixed-window-keyed", "works")
            .detail
            .contains("clock: caller")
    );

    // One measurement path: the probes' raw rows are kept per strategy, and
    // the cost cell is the cost experiment's own ratio on them.
    let probes = out.path().join("probes/token-bucket");
    for f in [
        "manifest.json",
        "concurrency.csv",
        "bursts-history.csv",
        "skew.csv",
        "cost.csv",
    ] {
        assert!(probes.join(f).exists(), "no {f} in {}", probes.display());
    }
    let cost = std::fs::read_to_string(probes.join("cost.csv")).unwrap();
    let mut rdr = csv::Reader::from_reader(cost.as_bytes());
    let head = rdr.headers().unwrap().clone();
    let col = |name: &str| head.iter().position(|h| h == name).unwrap();
    let per_decision = |cell: &str| -> f64 {
        let rows: Vec<f64> = csv::Reader::from_reader(cost.as_bytes())
            .records()
            .map(|r| r.unwrap())
            .filter(|r| &r[col("cell")] == cell)
            .map(|r| r[col("redis_cpu_us_per_decision")].parse().unwrap())
            .collect();
        rows.iter().sum::<f64>() / rows.len() as f64
    };
    let c = get("token-bucket", "cost-x-get");
    let want = per_decision("token-bucket|evalsha") / per_decision("get");
    assert!((c.value.unwrap() - want).abs() < 1e-9, "{c:?} vs {want}");
    // The race baseline is two requests per decision: no template replays
    // it, so the cost experiment measures its own decide in the same loop.
    let c = get("check-then-act", "cost-x-get");
    assert!(
        c.value.unwrap() > 0.0 && c.verdict != CellVerdict::NotRun,
        "{c:?}"
    );
    assert!(c.detail.contains("by decide"), "{c:?}");
    let c = get("check-then-act", "memory");
    assert!(
        c.value.unwrap() > 0.0 && c.detail.contains("one at a time"),
        "{c:?}"
    );

    // Every strategy has every property, and the files are written.
    for r in &card.results {
        assert_eq!(r.cells.len(), PROPERTIES.len(), "{}", r.strategy);
    }
    sc::output::write_all(out.path(), &card).unwrap();
    let csv = std::fs::read_to_string(out.path().join("scorecard.csv")).unwrap();
    // A header and one line per cell: a detail of several lines (a server's
    // error) is written on one.
    assert_eq!(csv.lines().count(), 1 + 5 * PROPERTIES.len(), "{csv}");
    let records = csv::Reader::from_reader(csv.as_bytes())
        .records()
        .map(|r| r.unwrap())
        .collect::<Vec<_>>();
    assert_eq!(records.len(), 5 * PROPERTIES.len());
    assert!(records.iter().all(|r| r.len() == 7), "{records:?}");
    let md = std::fs::read_to_string(out.path().join("scorecard.md")).unwrap();
    assert!(
        md.contains("| always-fails |") && md.contains("| error |"),
        "{md}"
    );
    assert!(out.path().join("scorecard.svg").exists());
}

/// A Redis "you run": the fleet starts it, a password is set, and it is
/// passed in by URL as if it were external; a cluster the same way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
// Longer than 120 lines: one end-to-end scenario (servers with AUTH, a standalone and a cluster scorecard by URL, cleanup, then every bad URL) that shares the servers it starts.
async fn an_external_redis_and_cluster_by_url_with_auth() {
    let _turn = SERIAL.lock().await;
    use limitbench_core::fleet::{Fleet, ServerConfig};
    let bin = common::redis();
    let server = common::standalone().await;
    let port = server.primary_addr().port();
    let mut c = server.primary().connection().await.unwrap();
    c.call(&limitbench_core::args![
        "ACL", "SETUSER", "bench", "on", ">b3nch", "~*", "&*", "+@all"
    ])
    .await
    .unwrap();
    c.call(&limitbench_core::args![
        "CONFIG",
        "SET",
        "requirepass",
        "s3cret"
    ])
    .await
    .unwrap();
    let cluster = Fleet::cluster(&bin, ServerConfig::default(), 3)
        .await
        .unwrap();
    for s in &cluster.servers {
        let mut c = s.connection().await.unwrap();
        c.call(&limitbench_core::args![
            "CONFIG",
            "SET",
            "requirepass",
            "cl0ster"
        ])
        .await
        .unwrap();
    }
    let cport = cluster.primary_addr().port();
    let url = format!("redis://bench:b3nch@127.0.0.1:{port}/2");
    let curl = format!("redis://:cl0ster@127.0.0.1:{cport}");
    let prefix = "limitbench:ext-test:";

    let x = sc::External::connect(&url, Some(&curl), prefix)
        .await
        .expect("a good URL is accepted");
    let out = tempfile::tempdir().unwrap();
    let cfg = Config {
        strategies: vec!["token-bucket".into()],
        dir: None,
        size: Size::Smoke,
        target: ScorecardServer::External(x),
        key_prefix: prefix.into(),
        out: out.path().to_path_buf(),
        experiments_dir: std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments"),
        promise_limit: None,
        promise_window_ms: None,
        broken: Vec::new(),
        lanes: 1,
    };
    let card = sc::run(&cfg, |_| {}).await.unwrap();
    let get = |p: &str| card.cell("token-bucket", p).unwrap().clone();
    for p in ["exact-0ms", "exact-6.7ms"] {
        let c = get(p);
        assert_eq!(
            (c.value, c.verdict),
            (Some(1.0), CellVerdict::Pass),
            "{c:?}"
        );
    }
    let c = get("cluster");
    assert_eq!(
        (c.value, c.verdict),
        (Some(1.0), CellVerdict::Pass),
        "{c:?}"
    );
    // The bursts ran on the external server too (through the experiment).
    assert!(get("straddle").value.unwrap() > 0.0);
    // Experiments that start their own servers are not run on yours.
    for p in [
        "cost-x-get",
        "memory",
        "replication",
        "survive-restart",
        "gone-redis",
    ] {
        let c = get(p);
        assert_eq!(c.verdict, CellVerdict::NotRun, "{c:?}");
        assert!(c.detail.contains("external Redis"), "{c:?}");
    }
    let header = card.target.to_string();
    assert!(
        header.contains("redis_version")
            && header.contains("rtt_median_us")
            && header.contains("maxmemory_policy"),
        "{header}"
    );
    assert!(
        !header.contains("b3nch") && !header.contains("cl0ster"),
        "a password leaked: {header}"
    );
    // Nor in the probes' run folder (manifest with the server's CONFIG, CSVs).
    for f in std::fs::read_dir(out.path().join("probes/token-bucket")).unwrap() {
        let p = f.unwrap().path();
        let text = String::from_utf8_lossy(&std::fs::read(&p).unwrap()).to_string();
        assert!(
            !text.contains("b3nch") && !text.contains("s3cret") && !text.contains("cl0ster"),
            "a password leaked into {}",
            p.display()
        );
    }

    // Only keys under the prefix were written, in db 2, and all are gone.
    let mut admin = server.primary().connection().await.unwrap();
    admin
        .call(&limitbench_core::args!["AUTH", "s3cret"])
        .await
        .unwrap();
    for db in [0u64, 2] {
        admin
            .call(&limitbench_core::args!["SELECT", db])
            .await
            .unwrap();
        let n = admin
            .call(&limitbench_core::args!["DBSIZE"])
            .await
            .unwrap()
            .as_i64()
            .unwrap();
        assert_eq!(n, 0, "db {db} still holds {n} keys");
    }
    for s in &cluster.servers {
        let mut c = s.connection().await.unwrap();
        c.call(&limitbench_core::args!["AUTH", "cl0ster"])
            .await
            .unwrap();
        assert_eq!(
            c.call(&limitbench_core::args!["DBSIZE"])
                .await
                .unwrap()
                .as_i64(),
            Some(0)
        );
    }

    // A server that already holds a key under the prefix is refused.
    admin
        .call(&limitbench_core::args![
            "SET",
            "limitbench:ext-test:rl:{x}:k",
            "1"
        ])
        .await
        .unwrap();
    let e = sc::External::connect(&url, None, prefix)
        .await
        .err()
        .expect("refused");
    assert!(e.to_string().contains("already holds 1 key"), "{e}");
    // A key holding the prefix in its middle is not the run's.
    admin
        .call(&limitbench_core::args![
            "DEL",
            "limitbench:ext-test:rl:{x}:k"
        ])
        .await
        .unwrap();
    admin
        .call(&limitbench_core::args![
            "SET",
            "rl:{limitbench:ext-test:x}:k",
            "1"
        ])
        .await
        .unwrap();
    drop(
        sc::External::connect(&url, None, prefix)
            .await
            .expect("a foreign key is not the run's"),
    );
    admin
        .call(&limitbench_core::args![
            "EXISTS",
            "rl:{limitbench:ext-test:x}:k"
        ])
        .await
        .map(|r| assert_eq!(r.as_i64(), Some(1)))
        .unwrap();

    // Bad input through the binary: a clear cause and a non-zero exit.
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let free_port = free.local_addr().unwrap().port();
    drop(free);
    let not_redis = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let np = not_redis.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in not_redis.incoming().flatten() {
            use std::io::Write;
            let mut s = s;
            let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n");
        }
    });
    let cases = [
        (
            format!("redis://127.0.0.1:{free_port}"),
            None,
            "cannot reach",
        ),
        (
            format!("redis://bench:wrong@127.0.0.1:{port}"),
            None,
            "refused the credentials",
        ),
        (
            format!("redis://127.0.0.1:{port}"),
            None,
            "needs a password",
        ),
        (format!("redis://127.0.0.1:{np}"), None, "not Redis"),
        (
            url.clone(),
            Some(format!("redis://bench:b3nch@127.0.0.1:{port}")),
            "not a Redis Cluster node",
        ),
    ];
    for (u, cu, want) in cases {
        let mut args = vec![
            "scorecard",
            "--size",
            "smoke",
            "--strategy",
            "token-bucket",
            "--run-id",
            "never",
            "--data-dir",
            "/nonexistent/never",
            "--key-prefix",
            "limitbench:never:",
            "--redis-url",
            u.as_str(),
        ];
        if let Some(cu) = &cu {
            args.extend(["--cluster-url", cu.as_str()]);
        }
        common::limitbench(&args, None)
            .expect_code(2)
            .expect_output(want);
    }
    drop(cluster);
    drop(server);
}

/// The probes that need servers of their own (quick size and up), run for
/// the token bucket through the scorecard's probe runner and judged: its
/// replica holds the primary's state; it over-admits across a failover
/// whose replication link lags; it works on a cluster; its EVALSHA client
/// alone fails after a restart (the script cache is not in the RDB) and on
/// a promoted replica (scripts are not replicated), the function library
/// survives both; with Redis gone, every decision follows the policy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_probes_judge_what_they_measure() {
    let _turn = SERIAL.lock().await;
    use limitbench::scorecard::probe::StrategyRun;
    use limitbench::scorecard::properties::PROBES;
    use limitbench_analysis::scorecard::ProbeRows;
    let out = tempfile::tempdir().unwrap();
    let cfg = common::own_scorecard(&["token-bucket"], None, Size::Quick, out.path());
    let s = sc::build("token-bucket", None, &Default::default()).unwrap();
    let run = StrategyRun::start(&cfg, "token-bucket").await.unwrap();
    let mut cells = std::collections::BTreeMap::new();
    for p in PROBES.iter().filter(|p| !p.at_smoke) {
        assert!(p.skip(&cfg).is_none(), "{} skipped", p.experiment);
        run.probe(p)
            .await
            .unwrap_or_else(|e| panic!("the {} probe failed: {e}", p.experiment));
        for (prop, r) in (p.judge)(&ProbeRows::new(
            run.dir(),
            "token-bucket",
            &sc::declared(s.info()),
        )) {
            let outcome = r.unwrap_or_else(|e| panic!("{prop}: {e}"));
            cells.insert(prop, outcome);
        }
    }
    let value = |p: &str| match &cells[p] {
        CellOutcome::Measured {
            value,
            verdict,
            detail,
            ..
        } => (*value, *verdict, detail.clone()),
        other => panic!("{p}: {other:?}"),
    };
    assert_eq!(value("replication").0, 1.0, "{:?}", value("replication"));
    assert_eq!(value("cluster").0, 1.0, "{:?}", value("cluster"));
    let (over, verdict, detail) = value("failover");
    assert!(
        over > 0.2 && verdict == CellVerdict::Fail,
        "{over} {verdict:?} {detail}"
    );
    for p in ["survive-restart", "survive-promotion"] {
        let (v, _, detail) = value(p);
        assert_eq!(v, 0.75, "{p}: {detail}");
        assert!(
            detail.contains("evalsha: NOSCRIPT") && detail.contains("fcall: ok"),
            "{detail}"
        );
    }
    let (gone, _, detail) = value("gone-redis");
    assert_eq!(gone, 1.0, "{detail}");
    // The raw rows are the experiments' own tables.
    for f in [
        "replication.csv",
        "failover.csv",
        "cluster-users.csv",
        "script-survival.csv",
        "fail-open.csv",
    ] {
        assert!(run.dir().join(f).exists(), "no {f}");
    }
}

/// In a library's CI (issue 33): a strategy with failing cells exits 1,
/// and the cells are in scorecard.json as in scorecard.csv.
#[test]
fn a_failing_cell_exits_one_and_the_cells_are_written_as_json() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_str().unwrap();
    let r = common::limitbench(
        &[
            "scorecard",
            "--strategy",
            "check-then-act",
            "--size",
            "smoke",
            "--data-dir",
            data,
            "--run-id",
            "ci",
        ],
        None,
    );
    assert_eq!(r.code(), 1, "{}", r.stderr());
    assert!(
        r.stderr().contains("(--fail-on fail): exit 1"),
        "{}",
        r.stderr()
    );
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("ci/scorecard.json")).unwrap(),
    )
    .unwrap();
    let cells = json["results"][0]["cells"].as_array().unwrap();
    let csv = std::fs::read_to_string(dir.path().join("ci/scorecard.csv")).unwrap();
    assert_eq!(cells.len(), csv.lines().count() - 1);
    assert!(cells.iter().any(|c| c["verdict"] == "fail"), "{cells:?}");
}
