//! Auditing the scripts libraries ship (issue 19, the parts outside the
//! scorecard), each on a real redis-server with shapes written here: a
//! caller clock in fractional seconds and a window in whole seconds
//! (defect 4), a script that calls `redis.replicate_commands()` checked
//! without FCALL (defect 5), a declared promise (6), and a folder with a
//! broken manifest, a long name and a script that reads TIME (7).

mod common;

use std::path::Path;

use limitbench::check;
use limitbench_base::promise::Promise;
use limitbench_core::strategy::{self, ClockSource, Invocation, Limit, Options, Request};

use common::{external_strategy as strategy, limitbench};

/// A token bucket on the caller's clock, "now" in seconds as ARGV[3]
/// (fractional or not, as the manifest passes it).
const CALLER_SECONDS_BUCKET: &str = "\
local cap, rate, now, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local b = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(b[1]) or cap
local at = tonumber(b[2]) or now
tokens = math.min(cap, tokens + math.max(0, now - at) * rate)
if tokens < cost then
  return {0, math.floor(tokens)}
end
tokens = tokens - cost
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', ARGV[3])
redis.call('PEXPIRE', KEYS[1], math.ceil(cap / rate * 1000))
return {1, math.floor(tokens)}
";

/// The first-hit fixed window of `tests/fixtures/first-hit`.
const FIRST_HIT_WINDOW: &str = include_str!("fixtures/first-hit/fixed-window-first-hit.lua");

/// The same window with its expiry in whole seconds (EXPIRE, ARGV[3] in s).
fn whole_seconds_window() -> String {
    let s = FIRST_HIT_WINDOW.replace("'PEXPIRE', KEYS[1], ARGV[3]", "'EXPIRE', KEYS[1], ARGV[3]");
    assert_ne!(s, FIRST_HIT_WINDOW, "the fixture's PEXPIRE line moved");
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_clock_in_fractional_seconds_refills_within_a_second() {
    let d = tempfile::tempdir().unwrap();
    let reply = "[reply]\nadmitted = 1\nremaining = 2";
    strategy(
        d.path(),
        "bucket-float-s",
        CALLER_SECONDS_BUCKET,
        &format!(
            "args = [\"${{capacity}}\", \"${{rate_per_s}}\", \"${{now_s_float}}\", \"${{cost}}\"]\n{reply}"
        ),
    );
    strategy(
        d.path(),
        "bucket-whole-s",
        CALLER_SECONDS_BUCKET,
        &format!(
            "args = [\"${{capacity}}\", \"${{rate_per_s}}\", \"${{now_s}}\", \"${{cost}}\"]\n{reply}"
        ),
    );
    let fleet = common::standalone().await;
    let mut conn = fleet.conn().await.unwrap();
    // Capacity 1, refill 2/s: 0.4 s after a request 0.8 tokens are back, after 0.6 s one is.
    let t0 = 1_700_000_000_000_000i64;
    let mut seen = Vec::new();
    for name in ["bucket-float-s", "bucket-whole-s"] {
        let s = strategy::build(name, Some(d.path()), &Options::default()).unwrap();
        assert_eq!(s.info().clock, ClockSource::Caller, "{name}");
        fleet.prepare(s.as_ref()).await.unwrap();
        let mut got = Vec::new();
        for dt in [0, 400_000, 600_000] {
            let req = Request {
                client: name,
                limit: Limit::bucket(1, 2.0),
                cost: 1,
                now_us: t0 + dt,
                request_id: limitbench_core::load::next_request_id(),
            };
            got.push(s.decide(&mut conn, &req).await.unwrap().admitted);
        }
        seen.push(got);
    }
    assert_eq!(
        seen[0],
        [true, false, true],
        "fractional seconds: refilled after 0.6 s"
    );
    // Whole seconds cannot see the 0.6 s: all three fall in one second.
    assert_eq!(seen[1], [true, false, false], "whole seconds");
    // And the whole check suite passes on the fractional one (its clock check
    // gives a caller 2 h ahead a full bucket).
    limitbench(
        &[
            "check",
            "bucket-float-s",
            "--dir",
            d.path().to_str().unwrap(),
        ],
        None,
    )
    .expect_code(0)
    .expect_output("pass  clock          declares clock caller");
}

#[test]
fn check_takes_the_limit_and_a_window_the_library_accepts() {
    let d = tempfile::tempdir().unwrap();
    strategy(
        d.path(),
        "window-whole-s",
        &whole_seconds_window(),
        "args = [\"${limit}\", \"${cost}\", \"${window_s_int}\"]\n[reply]\nadmitted = 1\nremaining = 2",
    );
    let dir = d.path().to_str().unwrap();
    // The default, 10 per 1 s, is a whole second.
    limitbench(&["check", "window-whole-s", "--dir", dir], None)
        .expect_code(0)
        .expect_output("pass  refill         limit 10 per 1000 ms");
    // 300 ms cannot be said in whole seconds: an error naming why, not a wrong window.
    limitbench(
        &[
            "check",
            "window-whole-s",
            "--dir",
            dir,
            "--limit",
            "4",
            "--window",
            "300ms",
        ],
        None,
    )
    .expect_code(1)
    .expect_output("pass  exact-limit    limit 4, 9 sequential requests: 4 admitted")
    .expect_output("ERROR refill")
    .expect_output(
        "takes its window in whole seconds (${window_s_int}); a window of 300 ms is not one",
    );
    limitbench(
        &["check", "window-whole-s", "--dir", dir, "--window", "300"],
        None,
    )
    .expect_code(2)
    .expect_output("give the window with a unit");
}

/// A first-hit fixed window for Redis < 7, which asks for effects
/// replication first; `call` is how the script names it.
fn replicating_window(call: &str) -> String {
    format!("{call}\n{FIRST_HIT_WINDOW}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_that_asks_for_replicate_commands_is_run_without_fcall() {
    let d = tempfile::tempdir().unwrap();
    let rest = "args = [\"${limit}\", \"${cost}\", \"${window_ms}\"]\n[reply]\nadmitted = 1\nremaining = 2";
    strategy(
        d.path(),
        "old-redis",
        &replicating_window("redis.replicate_commands()"),
        rest,
    );
    // Named indirectly: the source scan misses it, the first FCALL does not.
    strategy(
        d.path(),
        "old-redis-indirect",
        &replicating_window("redis['replicate_commands']()"),
        rest,
    );
    let fleet = common::standalone().await;
    let mut node = fleet.node_connections().await.unwrap().remove(0);
    let s = strategy::build("old-redis", Some(d.path()), &Options::default()).unwrap();
    let support = s.mode_support(&mut node).await.unwrap();
    for m in &support {
        match m.mode {
            Invocation::Fcall => {
                let p = m.problem.as_deref().expect("fcall cannot run it");
                assert!(p.contains("redis.replicate_commands"), "{p}");
            }
            other => assert!(m.problem.is_none(), "{other}: {:?}", m.problem),
        }
    }
    // The probe of the function runtime left no library behind.
    let libs = node
        .call(&limitbench_core::args!["FUNCTION", "LIST"])
        .await
        .unwrap();
    assert!(
        !libs.one_line().contains("lb_api_probe"),
        "{}",
        libs.one_line()
    );
    // Built to run by fcall, it refuses at load, saying why.
    let f = strategy::build(
        "old-redis",
        Some(d.path()),
        &Options::default().with("invocation", "fcall"),
    )
    .unwrap();
    let e = fleet.prepare(f.as_ref()).await.unwrap_err().to_string();
    assert!(
        e.contains("cannot run by fcall") && e.contains("replicate_commands"),
        "{e}"
    );
    // The indirect one loads as a function; its first FCALL fails and says so.
    let dir = d.path().to_path_buf();
    let rebuild = move |mode: Invocation| {
        strategy::build(
            "old-redis-indirect",
            Some(&dir),
            &Options::default().with("invocation", mode.as_str()),
        )
    };
    let s = strategy::build("old-redis-indirect", Some(d.path()), &Options::default()).unwrap();
    let found = check::runnable_modes(s.as_ref(), &rebuild, &fleet, "audit-modes-")
        .await
        .unwrap();
    for (m, got) in &found {
        if m.mode == Invocation::Fcall {
            let p = m.problem.as_deref().expect("fcall fails");
            assert!(
                p.contains("first call failed") && p.contains("replicate_commands"),
                "{p}"
            );
        } else {
            assert_eq!(got, &[true, true, false], "{}: {:?}", m.mode, m.problem);
        }
    }
}

#[test]
fn check_passes_a_replicate_commands_script_on_the_modes_it_can_run() {
    let d = tempfile::tempdir().unwrap();
    strategy(
        d.path(),
        "old-redis",
        &replicating_window("redis.replicate_commands()"),
        "args = [\"${limit}\", \"${cost}\", \"${window_ms}\"]\n[reply]\nadmitted = 1\nremaining = 2",
    );
    let dir = d.path().to_str().unwrap();
    limitbench(&["check", "old-redis", "--dir", dir], None)
        .expect_code(0)
        .expect_output("pass  modes          3 of 4 declared modes can run")
        .expect_output("fcall: cannot run: the script calls redis.replicate_commands");
    limitbench(
        &[
            "check",
            "old-redis",
            "--dir",
            dir,
            "--opt",
            "invocation=fcall",
        ],
        None,
    )
    .expect_code(2)
    .expect_output("cannot run by fcall on this server");
}

#[test]
fn one_broken_manifest_leaves_the_folder_usable_and_long_names_aligned() {
    let d = tempfile::tempdir().unwrap();
    let long = "a-rather-long-strategy-name-from-some-library";
    let rest = "args = [\"${limit}\", \"${cost}\", \"${window_ms}\"]\npromise = \"at-most-limit-in-any-window\"\n[reply]\nadmitted = 1\nremaining = 2";
    strategy(d.path(), long, &replicating_window(""), rest);
    // Reads TIME, maps no Redis time: its clock is inferred from the script.
    strategy(
        d.path(),
        "reads-time",
        &format!("local t = redis.call('TIME')\n{}", replicating_window("")),
        "args = [\"${limit}\", \"${cost}\", \"${window_ms}\"]\n[reply]\nadmitted = 1",
    );
    std::fs::write(
        d.path().join("broken.toml"),
        "name = \"broken\"\nscript = \"nowhere.lua\"\nkeys = [\"k\"]\n[reply]\nadmitted = 1\n",
    )
    .unwrap();
    let dir = d.path().to_str().unwrap();
    let r = limitbench(&["strategies", "--dir", dir], None);
    r.expect_code(2)
        .expect_output("broken.toml: field `script`")
        .expect_output(long)
        .expect_output("at-most-limit-in-any-window");
    let out = r.stdout();
    let lines: Vec<&str> = out.lines().collect();
    let kind_at = lines[0].find("kind").unwrap();
    for l in &lines[1..] {
        let (before, at) = (l.as_bytes()[kind_at - 1], l.as_bytes()[kind_at]);
        assert!(
            before == b' ' && at != b' ',
            "`kind` column not aligned at {kind_at}:\n{out}"
        );
    }
    let row = lines.iter().find(|l| l.starts_with("reads-time")).unwrap();
    assert!(
        row.contains(" redis "),
        "a script that reads TIME runs on Redis's clock:\n{out}"
    );
    // The good ones still run; the broken one is named.
    limitbench(&["check", long, "--dir", dir], None)
        .expect_code(0)
        .expect_output("not loaded (other strategies still are)")
        .expect_output("broken.toml");
    let s = strategy::build(long, Some(d.path()), &Options::default()).unwrap();
    assert_eq!(s.info().promise, Some(Promise::AtMostLimitInAnyWindow));
    limitbench(&["check", "broken", "--dir", dir], None)
        .expect_code(2)
        .expect_output("unknown strategy `broken`")
        .expect_output("these manifests did not load")
        .expect_output("nowhere.lua");
}

/// Defect 1's support: the `anchored` bursts pattern finds the edge of a
/// window that starts at its key's first request. A first-hit fixed window
/// (tests/fixtures/first-hit) passes `straddle` (its window is not Redis's
/// clock's) and admits about 2L across its own edge; the sliding log holds L.
#[test]
fn a_first_hit_fixed_window_admits_about_twice_the_limit_at_its_anchored_edge() {
    let tmp = tempfile::tempdir().unwrap();
    let exp = common::small_experiments(tmp.path());
    let bursts = std::fs::read_to_string(exp.join("bursts.toml")).unwrap();
    let start = bursts.find("[smoke]").unwrap();
    let end = bursts[start..]
        .find("\n# Quick")
        .map(|i| start + i)
        .unwrap();
    let smoke = "[smoke]\nreps = 1\nlimit = 50\n\
                 strategies = [\"fixed-window-first-hit\", \"sliding-window-log\"]\n\
                 patterns = [\"straddle\", \"anchored\"]\nstraddle_lead_ms = [50]\n\
                 phases_ms = [500]\nsustained_rates = [1.0]\n";
    std::fs::write(
        exp.join("bursts.toml"),
        format!("{}{smoke}{}", &bursts[..start], &bursts[end..]),
    )
    .unwrap();
    let data = tmp.path().join("data");
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/first-hit");
    limitbench(
        &[
            "run",
            "bursts",
            "--size",
            "smoke",
            "--run-id",
            "anchored",
            "--dir",
            fixtures.to_str().unwrap(),
            "--experiments-dir",
            exp.to_str().unwrap(),
            "--data-dir",
            data.to_str().unwrap(),
        ],
        None,
    )
    .expect_code(0);
    let mut csv = csv::Reader::from_path(data.join("anchored/bursts.csv")).unwrap();
    let head = csv.headers().unwrap().clone();
    let col = |n: &str| head.iter().position(|h| h == n).unwrap();
    let (cell, most, limit, errors) = (
        col("cell"),
        col("max_in_window"),
        col("limit"),
        col("errors"),
    );
    let mut ratio = std::collections::BTreeMap::new();
    for r in csv.records() {
        let r = r.unwrap();
        assert_eq!(&r[errors], "0", "{r:?}");
        let x = r[most].parse::<f64>().unwrap() / r[limit].parse::<f64>().unwrap();
        ratio.insert(r[cell].to_string(), x);
    }
    eprintln!("bursts ratios: {ratio:?}");
    let get = |c: &str| {
        *ratio
            .get(c)
            .unwrap_or_else(|| panic!("no row {c}: {ratio:?}"))
    };
    // 1 + (L - 1) before the key expires, L after: 2L - 1 within ~60 ms.
    let anchored = get("fixed-window-first-hit/anchored/lead50/x2/first0.5w");
    assert!(
        anchored >= 1.9,
        "first-hit window on anchored: {anchored} ({ratio:?})"
    );
    // The aligned pattern misses it: its bursts fall inside one anchored window.
    let straddle = get("fixed-window-first-hit/straddle/lead50");
    assert!(
        straddle <= 1.05,
        "first-hit window on straddle: {straddle} ({ratio:?})"
    );
    let log = get("sliding-window-log/anchored/lead50/x2/first0.5w");
    assert!(log <= 1.0, "sliding log on anchored: {log} ({ratio:?})");
}
