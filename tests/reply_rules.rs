//! The reply rule language of external manifests (issue 19, defect 3), on a
//! real redis-server: every reply shape of `tests/fixtures/reply-shapes/`
//! (written here, one per shape real limiters use) decides as its rule
//! says, including a cost of 3; a rule that does not fit the reply is an
//! error naming what arrived, never a silent refusal or admission.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use limitbench::check;
use limitbench_core::strategy::{self, Limit, Options, Request, Strategy};

use common::limitbench;

fn shapes() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/reply-shapes")
}

fn build(name: &str, dir: &Path) -> Arc<dyn Strategy> {
    strategy::build(name, Some(dir), &Options::default())
        .unwrap_or_else(|e| panic!("building {name}: {e}"))
}

/// A folder with one manifest for `script` (copied from the shapes) and
/// the `[reply]` lines given.
fn manifest(dir: &Path, name: &str, script: &str, args: &str, reply: &str) {
    std::fs::copy(shapes().join(script), dir.join(script)).unwrap();
    std::fs::write(
        dir.join(format!("{name}.toml")),
        format!(
            "name = \"{name}\"\nscript = \"{script}\"\nkeys = [\"rl:{{${{client}}}}:{name}\"]\nargs = {args}\n[reply]\n{reply}\n"
        ),
    )
    .unwrap();
}

const SHAPES: [&str; 6] = [
    "shape-granted",
    "shape-remaining",
    "shape-hit-count",
    "shape-nil-refused",
    "shape-boolean",
    "shape-text-slots",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_reply_shape_decides_as_its_rule_says() {
    let fleet = common::standalone().await;
    let mut conn = fleet.conn().await.unwrap();
    let hour = 3_600_000;
    for name in SHAPES {
        let s = build(name, &shapes());
        fleet.prepare(s.as_ref()).await.unwrap();
        let client = format!("rules-{name}");
        let one = check::sequential(
            s.as_ref(),
            &mut conn,
            &client,
            Limit::per_window(3, hour),
            1,
            5,
        )
        .await
        .unwrap_or_else(|e| panic!("{name}, cost 1: {e}"));
        assert_eq!(
            one,
            [true, true, true, false, false],
            "{name}, limit 3, cost 1"
        );
        // A cost of 3 against a limit of 7: two requests fit.
        let client = format!("rules-{name}-cost");
        let three = check::sequential(
            s.as_ref(),
            &mut conn,
            &client,
            Limit::per_window(7, hour),
            3,
            4,
        )
        .await
        .unwrap_or_else(|e| panic!("{name}, cost 3: {e}"));
        assert_eq!(three, [true, true, false, false], "{name}, limit 7, cost 3");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remaining_and_redis_time_are_read_by_their_expressions() {
    let fleet = common::standalone().await;
    let mut conn = fleet.conn().await.unwrap();
    let req = |client| Request {
        client,
        limit: Limit::per_window(4, 3_600_000),
        cost: 1,
        now_us: 0,
        request_id: limitbench_core::load::next_request_id(),
    };
    let hits = build("shape-hit-count", &shapes());
    fleet.prepare(hits.as_ref()).await.unwrap();
    let d = hits.decide(&mut conn, &req("rem-hits")).await.unwrap();
    assert_eq!(
        (d.admitted, d.remaining),
        (true, Some(3)),
        "${{limit}} - reply"
    );
    let nil = build("shape-nil-refused", &shapes());
    fleet.prepare(nil.as_ref()).await.unwrap();
    for _ in 0..4 {
        nil.decide(&mut conn, &req("rem-nil")).await.unwrap();
    }
    let d = nil.decide(&mut conn, &req("rem-nil")).await.unwrap();
    assert_eq!(
        (d.admitted, d.remaining),
        (false, None),
        "nil reply: no remaining"
    );
    // TIME's two strings, combined by the rule, are Redis's clock.
    let text = build("shape-text-slots", &shapes());
    assert!(text.info().reports_redis_time);
    fleet.prepare(text.as_ref()).await.unwrap();
    let d = text.decide(&mut conn, &req("rem-text")).await.unwrap();
    let t = conn
        .call("", &limitbench_core::args!["TIME"])
        .await
        .unwrap()
        .into_array()
        .unwrap();
    let redis_now = t[0].as_i64().unwrap() * 1_000_000 + t[1].as_i64().unwrap();
    let got = d.redis_time_us.expect("a time");
    assert!(
        (0..2_000_000).contains(&(redis_now - got)),
        "reported {got}, TIME after {redis_now}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_after_string_in_another_slot_can_decide() {
    let d = tempfile::tempdir().unwrap();
    manifest(
        d.path(),
        "retry-after",
        "text-slots.lua",
        "[\"${limit}\", \"${cost}\", \"${window_ms}\"]",
        "admitted = \"num(reply[2]) <= 0\"",
    );
    let s = build("retry-after", d.path());
    let fleet = common::standalone().await;
    fleet.prepare(s.as_ref()).await.unwrap();
    let mut conn = fleet.conn().await.unwrap();
    let got = check::sequential(
        s.as_ref(),
        &mut conn,
        "ra",
        Limit::per_window(2, 60_000),
        1,
        3,
    )
    .await
    .unwrap();
    assert_eq!(got, [true, true, false]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rule_that_does_not_fit_the_reply_is_an_error_that_shows_it() {
    let d = tempfile::tempdir().unwrap();
    let args = "[\"${limit}\", \"${cost}\", \"${window_ms}\"]";
    // The position form reads 1 and 0 only: a grant of 3 and a text "1" are errors.
    manifest(d.path(), "pos-granted", "granted.lua", args, "admitted = 1");
    manifest(d.path(), "pos-text", "text-slots.lua", args, "admitted = 1");
    // A number compared with a string, and a rule on a nil reply.
    manifest(
        d.path(),
        "str-vs-num",
        "text-slots.lua",
        args,
        "admitted = \"reply[1] == 1\"",
    );
    manifest(
        d.path(),
        "nil-vs-num",
        "nil-refused.lua",
        args,
        "admitted = \"reply[1] >= 0\"",
    );
    let fleet = common::standalone().await;
    let mut conn = fleet.conn().await.unwrap();
    let limit = Limit::per_window(4, 3_600_000);
    let dir = d.path().to_path_buf();
    let mut first_error = async |name: &str, cost: u64, n: usize| {
        let s = build(name, &dir);
        fleet.prepare(s.as_ref()).await.unwrap();
        let client = format!("misfit-{name}");
        check::sequential(s.as_ref(), &mut conn, &client, limit, cost, n)
            .await
            .expect_err(name)
            .to_string()
    };
    let e = first_error("pos-granted", 3, 1).await;
    assert!(
        e.contains("reply[1] is the integer 3") && e.contains("reply[1] >= 1"),
        "{e}"
    );
    assert!(e.contains("Redis replied: 1) (integer) 3"), "{e}");
    let e = first_error("pos-text", 1, 1).await;
    assert!(e.contains("reply[1] is the string \"1\""), "{e}");
    let e = first_error("str-vs-num", 1, 1).await;
    assert!(
        e.contains("the string \"1\"") && e.contains("num(reply[1])"),
        "{e}"
    );
    // Admitted while within the limit, then the nil refusal cannot be compared.
    let e = first_error("nil-vs-num", 1, 6).await;
    assert!(
        e.contains("reply[1] (nil)") && e.contains("reply[1] != nil"),
        "{e}"
    );
}

#[test]
fn check_passes_a_limiter_that_grants_units_and_names_the_misread_one() {
    let dir = shapes();
    limitbench(
        &["check", "shape-granted", "--dir", dir.to_str().unwrap()],
        None,
    )
    .expect_code(0)
    .expect_output("pass  cost           limit 10, cost 3, 5 requests: 3 admitted (9 units)");
    let d = tempfile::tempdir().unwrap();
    manifest(
        d.path(),
        "pos-granted",
        "granted.lua",
        "[\"${limit}\", \"${cost}\", \"${window_ms}\"]",
        "admitted = 1",
    );
    limitbench(
        &["check", "pos-granted", "--dir", d.path().to_str().unwrap()],
        None,
    )
    .expect_code(1)
    .expect_output("ERROR cost")
    .expect_output("reply.admitted = 1 cannot be applied: reply[1] is the integer 3");
}
