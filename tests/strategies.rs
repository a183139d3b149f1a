//! Every strategy, built-in and external, through the same correctness
//! suite on a real redis-server. `strategy_tests!` generates one module of
//! tests per strategy; `the_macro_covers_every_strategy` fails when a new
//! strategy (a built-in, or an external one in `lua/external/`) is not
//! listed there, and names the line to add.

mod common;

use std::sync::Arc;

use limitbench::check::{self, CheckResult};
use limitbench_core::conn::Conn;
use limitbench_core::fleet::Fleet;
use limitbench_core::strategy::{self, Invocation, Limit, Options, Request, Strategy};

fn build(name: &str, opts: &Options) -> Arc<dyn Strategy> {
    strategy::build(name, None, opts).unwrap_or_else(|e| panic!("building {name}: {e}"))
}

fn result<'a>(r: &'a [CheckResult], name: &str) -> &'a CheckResult {
    r.iter().find(|c| c.name == name).unwrap()
}

/// What each strategy must do in the checks. The two bug variants fail
/// where their bug shows; the race baseline over-admits under concurrency.
async fn suite(name: &str) {
    let fleet = common::standalone().await;
    let s = build(name, &Options::default());
    let r = check::run_checks(s.clone(), &fleet).await.unwrap();
    let show = format!("{name}: {r:#?}");
    match name {
        "sliding-log-ts-member" => {
            // Sequential requests on loopback share milliseconds: the log undercounts.
            assert!(!result(&r, "exact-limit").passed, "{show}");
            assert!(result(&r, "expiry").passed, "{show}");
            assert!(result(&r, "clock").passed, "{show}");
        }
        "check-then-act" => {
            for c in ["exact-limit", "expiry", "cost", "refill", "clock"] {
                assert!(result(&r, c).passed, "{show}");
            }
            // The race: over-admission must be observed (try a few times; one
            // trial could by chance interleave harmlessly).
            let mut over = !result(&r, "concurrent-64").passed;
            for _ in 0..5 {
                if over {
                    break;
                }
                let client = format!("race-{}", limitbench_core::load::next_request_id());
                let admitted = check::concurrent(
                    s.clone(),
                    &fleet,
                    &client,
                    Limit::per_window(100, 3_600_000),
                    64,
                    200,
                )
                .await
                .unwrap();
                over = admitted > 100;
            }
            assert!(
                over,
                "check-then-act never over-admitted with 64 workers: {show}"
            );
        }
        _ => {
            for c in &r {
                assert!(c.passed, "{show}");
            }
        }
    }
    if s.info().kind != strategy::Kind::ClientSide && s.info().kind != strategy::Kind::Transaction {
        invocation_modes_agree(name, &fleet).await;
    }
}

/// Every invocation mode makes the same decisions on a fresh key.
async fn invocation_modes_agree(name: &str, fleet: &Fleet) {
    let mut seen = Vec::new();
    for mode in strategy::BUILTINS
        .iter()
        .find(|b| b.name == name)
        .map(|_| Invocation::ALL.to_vec())
        .unwrap_or_else(|| build(name, &Options::default()).info().modes.clone())
    {
        let s = build(name, &Options::default().with("invocation", mode.as_str()));
        for mut n in fleet.node_connections().await.unwrap() {
            s.prepare(&mut n).await.unwrap();
        }
        let mut conn = fleet.conn().await.unwrap();
        let client = format!(
            "modes-{name}-{mode}-{}",
            limitbench_core::load::next_request_id()
        );
        let got = check::sequential(
            s.as_ref(),
            &mut conn,
            &client,
            Limit::per_window(4, 3_600_000),
            1,
            6,
        )
        .await
        .unwrap();
        seen.push((mode, got));
    }
    if name != "sliding-log-ts-member" {
        for (mode, got) in &seen {
            assert_eq!(
                got,
                &vec![true, true, true, true, false, false],
                "{name} via {mode}"
            );
        }
    }
}

macro_rules! strategy_tests {
    ($($module:ident => $name:expr),* $(,)?) => {
        const LISTED: &[&str] = &[$($name),*];
        $(
            mod $module {
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn correctness_suite() {
                    super::suite($name).await;
                }
            }
        )*
    };
}

strategy_tests! {
    check_then_act => "check-then-act",
    watch_multi => "watch-multi",
    fixed_window_multi => "fixed-window-multi",
    fixed_window_lua => "fixed-window-lua",
    token_bucket => "token-bucket",
    token_bucket_caller_clock => "token-bucket-caller-clock",
    sliding_window_counter => "sliding-window-counter",
    sliding_window_log => "sliding-window-log",
    sliding_log_ts_member => "sliding-log-ts-member",
    fixed_window_derived_key => "fixed-window-derived-key",
    gcra => "gcra",
    external_leaky_bucket => "leaky-bucket",
}

#[test]
fn the_macro_covers_every_strategy() {
    // Tests run in the crate root, where lua/external is found.
    let all = strategy::all_names(None).unwrap();
    let missing: Vec<String> = all
        .iter()
        .filter(|n| !LISTED.contains(&n.as_str()))
        .map(|n| {
            format!(
                "add `{n}` to the `strategy_tests!` list in tests/strategies.rs: `{} => \"{n}\",`",
                n.replace('-', "_")
            )
        })
        .collect();
    assert!(missing.is_empty(), "{}", missing.join("\n"));
    let stale: Vec<&&str> = LISTED
        .iter()
        .filter(|n| !all.contains(&n.to_string()))
        .collect();
    assert!(
        stale.is_empty(),
        "listed in `strategy_tests!` but not a strategy (renamed or removed?): {stale:?}"
    );
}

/// Each strategy's declared clock (`Info::clock`, `Info::reports_redis_time`)
/// holds: the check that `limitbench check` runs as "clock", here on every
/// strategy and on the options that change a clock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn declared_clocks_hold() {
    let fleet = common::standalone().await;
    let mut conn = fleet.conn().await.unwrap();
    let mut cases: Vec<(String, Options)> = strategy::all_names(None)
        .unwrap()
        .into_iter()
        .map(|n| (n, Options::default()))
        .collect();
    for clock in ["redis-us", "caller-ms"] {
        cases.push((
            "sliding-log-ts-member".into(),
            Options::default().with("member_clock", clock),
        ));
    }
    for (name, opts) in cases {
        let s = build(&name, &opts);
        for mut n in fleet.node_connections().await.unwrap() {
            s.prepare(&mut n).await.unwrap();
        }
        let r = check::clock_check(s.as_ref(), &mut conn).await.unwrap();
        assert!(r.passed, "{name} {opts:?}: {}", r.detail);
    }
}

/// The clock check can fail: a script on Redis's clock declared as `caller`.
#[tokio::test]
async fn a_wrong_clock_declaration_fails_the_check() {
    let d = tempfile::tempdir().unwrap();
    std::fs::copy("lua/external/leaky-bucket.lua", d.path().join("lb.lua")).unwrap();
    std::fs::write(
        d.path().join("lb.toml"),
        "name = \"lying-bucket\"\nscript = \"lb.lua\"\nkeys = [\"rl:{${client}}:lying\"]\n\
         args = [\"${capacity}\", \"${rate_per_s}\", \"${cost}\", \"${now_ms}\"]\n\
         clock = \"caller\"\n[reply]\nadmitted = 1\nredis_time_us = 3\n",
    )
    .unwrap();
    let s = strategy::build("lying-bucket", Some(d.path()), &Options::default()).unwrap();
    assert_eq!(s.info().clock, strategy::ClockSource::Caller);
    let fleet = common::standalone().await;
    for mut n in fleet.node_connections().await.unwrap() {
        s.prepare(&mut n).await.unwrap();
    }
    let mut conn = fleet.conn().await.unwrap();
    let r = check::clock_check(s.as_ref(), &mut conn).await.unwrap();
    assert!(!r.passed, "{}", r.detail);
}

#[tokio::test]
async fn noscript_fallback_is_counted_and_its_absence_is_an_error() {
    let fleet = common::standalone().await;
    let with = build(
        "token-bucket",
        &Options::default().with("invocation", "evalsha-fallback"),
    );
    let without = build(
        "token-bucket",
        &Options::default().with("invocation", "evalsha"),
    );
    let mut conn = fleet.conn().await.unwrap();
    // Nothing loaded: the cache is empty, as after a restart.
    let req = Request {
        client: "nf",
        limit: Limit::bucket(10, 1.0),
        cost: 1,
        now_us: 0,
        request_id: 1,
    };
    let before = conn.round_trips();
    let d = with.decide(&mut conn, &req).await.unwrap();
    assert!(d.admitted);
    assert_eq!(d.noscript_fallbacks, 1);
    assert_eq!(
        conn.round_trips() - before,
        2,
        "one failed EVALSHA + one EVAL"
    );
    // The EVAL put the script in the cache: the next EVALSHA just works.
    let d = with.decide(&mut conn, &req).await.unwrap();
    assert_eq!(d.noscript_fallbacks, 0);
    let mut node = fleet.node_connections().await.unwrap().remove(0);
    node.call(&limitbench_core::args!["SCRIPT", "FLUSH"])
        .await
        .unwrap();
    let err = without.decide(&mut conn, &req).await.unwrap_err();
    assert!(err.is_noscript(), "expected NOSCRIPT, got {err}");
}

#[tokio::test]
async fn watch_multi_counts_exhausted_budgets_apart_from_refusals() {
    let fleet = common::standalone().await;
    let s = build("watch-multi", &Options::default().with("retry_budget", 0));
    let admitted = check::concurrent(
        s.clone(),
        &fleet,
        "wm-budget",
        Limit::per_window(100, 3_600_000),
        64,
        100,
    )
    .await
    .unwrap();
    // With no retries, contention makes some legitimate requests fail, and it never over-admits.
    assert!(admitted <= 100);
    let mut conn: Conn = fleet.conn().await.unwrap();
    let req = Request {
        client: "wm-seq",
        limit: Limit::per_window(1, 3_600_000),
        cost: 1,
        now_us: limitbench_core::clock::Clock::system_now_us(),
        request_id: 7,
    };
    let d1 = s.decide(&mut conn, &req).await.unwrap();
    let d2 = s.decide(&mut conn, &req).await.unwrap();
    assert!(
        d1.admitted && !d2.admitted && !d2.retries_exhausted,
        "a refusal by the limit is not an exhausted budget"
    );
}

#[test]
fn bad_options_are_rejected_with_their_name() {
    let e = strategy::build(
        "watch-multi",
        None,
        &Options::default().with("retry_budgit", 3),
    )
    .err()
    .unwrap()
    .to_string();
    assert!(
        e.contains("retry_budgit") && e.contains("unknown option"),
        "{e}"
    );
    let e = strategy::build(
        "token-bucket",
        None,
        &Options::default().with("invocation", "evalsho"),
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("evalsho"), "{e}");
    let e = strategy::build("nope", None, &Options::default())
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("unknown strategy") && e.contains("gcra"), "{e}");
}
