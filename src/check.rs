//! The correctness checks `limitbench check <strategy>` runs, the first thing
//! to run on a new strategy. They need a Redis (the harness's own or
//! `--redis-url`) and use fresh, unique keys, so they never touch other data.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::clock::Clock;
use crate::conn::Conn;
use crate::error::Result;
use crate::fleet::Fleet;
use crate::load::next_request_id;
use crate::resp::Connection;
use crate::strategy::{ClockSource, Limit, Request, Strategy};

#[derive(Debug, Clone)]
pub struct CheckResult {
    pub name: &'static str,
    pub passed: bool,
    pub detail: String,
    /// The check could not finish: what it sent and what Redis answered.
    pub error: Option<String>,
}

impl CheckResult {
    fn new(name: &'static str, passed: bool, detail: String) -> Self {
        CheckResult {
            name,
            passed,
            detail,
            error: None,
        }
    }

    /// `pass`, `FAIL` or `ERROR`.
    pub fn verdict(&self) -> &'static str {
        match (&self.error, self.passed) {
            (Some(_), _) => "ERROR",
            (None, true) => "pass",
            (None, false) => "FAIL",
        }
    }
}

/// A time in µs as a reader writes it, or "none".
fn us_or_none(t: Option<i64>) -> String {
    t.map(|t| format!("{t} µs"))
        .unwrap_or_else(|| "none".into())
}

/// A check's outcome; a Redis or harness error becomes an `ERROR` result
/// that says what the check sent, so the other checks still run.
fn outcome(name: &'static str, sent: &str, r: Result<CheckResult>) -> CheckResult {
    r.unwrap_or_else(|e| CheckResult {
        name,
        passed: false,
        detail: format!("sent {sent}"),
        error: Some(e.to_string()),
    })
}

fn unique_client(tag: &str) -> String {
    format!("check-{tag}-{}-{}", std::process::id(), next_request_id())
}

/// Make `n` sequential decisions with `cost` each; the admitted flags.
pub async fn sequential(
    s: &dyn Strategy,
    conn: &mut Conn,
    client: &str,
    limit: Limit,
    cost: u64,
    n: usize,
) -> Result<Vec<bool>> {
    let clock = Clock::default();
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let req = Request {
            client,
            limit,
            cost,
            now_us: clock.now_us(),
            request_id: next_request_id(),
        };
        out.push(s.decide(conn, &req).await?.admitted);
    }
    Ok(out)
}

/// `workers` tasks, each on its own connection, released together, offering
/// `offered` decisions in all on one key. Returns how many were admitted.
pub async fn concurrent(
    s: Arc<dyn Strategy>,
    fleet: &Fleet,
    client: &str,
    limit: Limit,
    workers: usize,
    offered: u64,
) -> Result<u64> {
    let mut conns = Vec::with_capacity(workers);
    for _ in 0..workers {
        conns.push(fleet.conn().await?);
    }
    let barrier = Arc::new(tokio::sync::Barrier::new(workers));
    let taken = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for mut conn in conns {
        let (s, barrier, taken, client) = (
            s.clone(),
            barrier.clone(),
            taken.clone(),
            client.to_string(),
        );
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            let mut admitted = 0u64;
            while taken.fetch_add(1, Ordering::Relaxed) < offered {
                let req = Request::now(&client, limit);
                if s.decide(&mut conn, &req).await?.admitted {
                    admitted += 1;
                }
            }
            Ok::<u64, crate::Error>(admitted)
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t
            .await
            .map_err(|e| crate::Error::Other(format!("worker panicked: {e}")))??;
    }
    Ok(total)
}

/// How far a reported Redis time may be from Redis's `TIME` read just after.
const CLOCK_TOLERANCE_US: i64 = 5_000_000;

/// Tries what the strategy declares about its clock (`Info::clock`,
/// `Info::reports_redis_time`). One decision on a fresh key, limit 1 per
/// hour: its reported time must be within 5 s of Redis's `TIME` read right
/// after (or absent, if it declares none). Then a decision from a caller
/// whose clock is two hours ahead: on the caller's clock that caller is in a
/// new window (or a refilled bucket) and is admitted; on Redis's clock, or
/// none, it is refused like any second request.
pub async fn clock_check(s: &dyn Strategy, conn: &mut Conn) -> Result<CheckResult> {
    let info = s.info();
    let client = unique_client("clock");
    let hour_us = 3_600_000_000;
    let req = |now_us| Request {
        client: &client,
        limit: Limit::per_window(1, hour_us as u64 / 1000),
        cost: 1,
        now_us,
        request_id: next_request_id(),
    };
    let now = Clock::system_now_us();
    let first = s.decide(conn, &req(now)).await?;
    let time = conn.call("", &crate::args!["TIME"]).await?.into_array();
    let part = |i: usize| {
        time.as_ref()
            .and_then(|t| t.get(i))
            .and_then(|r| r.as_i64())
    };
    let redis_now = part(0).zip(part(1)).map(|(s, us)| s * 1_000_000 + us);
    let ahead = s.decide(conn, &req(now + 2 * hour_us)).await?;
    let time_ok = match (info.reports_redis_time, first.redis_time_us, redis_now) {
        (true, Some(t), Some(r)) => (t - r).abs() <= CLOCK_TOLERANCE_US,
        (false, None, _) => true,
        _ => false,
    };
    let caller_clock = info.clock == ClockSource::Caller;
    Ok(CheckResult {
        name: "clock",
        passed: first.admitted && time_ok && ahead.admitted == caller_clock,
        detail: format!(
            "declares clock {} and {}: first request admitted {}, reported time {} (Redis TIME {}); a caller 2 h ahead admitted {} (expected {caller_clock})",
            info.clock.as_str(),
            if info.reports_redis_time {
                "reports Redis's time"
            } else {
                "reports no Redis time"
            },
            first.admitted,
            us_or_none(first.redis_time_us),
            us_or_none(redis_now),
            ahead.admitted,
        ),
        error: None,
    })
}

/// Every key on `conn` whose name contains `needle` (SCAN MATCH *needle*).
pub async fn keys_containing(conn: &mut Connection, needle: &str) -> Result<Vec<String>> {
    let pattern = format!("*{needle}*");
    let mut cursor = "0".to_string();
    let mut out = Vec::new();
    loop {
        let r = conn
            .call(&crate::args![
                "SCAN",
                cursor.as_str(),
                "MATCH",
                pattern.as_str(),
                "COUNT",
                1000u64
            ])
            .await?;
        let mut parts = r.into_array().unwrap_or_default();
        let keys = parts.pop().and_then(|k| k.into_array()).unwrap_or_default();
        cursor = parts
            .pop()
            .and_then(|c| c.as_string())
            .unwrap_or_else(|| "0".into());
        out.extend(keys.iter().filter_map(|k| k.as_string()));
        if cursor == "0" {
            return Ok(out);
        }
    }
}

/// Every key whose name contains `client`, with its PTTL.
pub async fn keys_of(conn: &mut Conn, fleet: &Fleet, client: &str) -> Result<Vec<(String, i64)>> {
    let _ = conn;
    let mut out = Vec::new();
    for mut node in fleet.node_connections().await? {
        for name in keys_containing(&mut node, client).await? {
            let ttl = node
                .call(&crate::args!["PTTL", name.as_str()])
                .await?
                .as_i64()
                .unwrap_or(-2);
            out.push((name, ttl));
        }
    }
    Ok(out)
}

/// Run every check on `strategy` against `fleet`. Scripts are loaded first.
pub async fn run_checks(strategy: Arc<dyn Strategy>, fleet: &Fleet) -> Result<Vec<CheckResult>> {
    // Loading the scripts is not a check: without them nothing can run.
    fleet.prepare(strategy.as_ref()).await?;
    let s = strategy.as_ref();
    let mut conn = fleet.conn().await?;
    let hour = 3_600_000;
    let mut results = Vec::new();

    let exact = unique_client("exact");
    results.push(outcome(
        "exact-limit",
        "15 sequential requests, limit 10 per hour, cost 1",
        check_exact(s, &mut conn, &exact, hour).await,
    ));
    results.push(outcome(
        "expiry",
        "TTL of every key of the exact-limit client",
        check_expiry(&mut conn, fleet, &exact).await,
    ));
    results.push(outcome(
        "cost",
        "5 requests of cost 3, limit 10 per hour",
        check_cost(s, &mut conn, hour).await,
    ));
    results.push(outcome(
        "refill",
        "6 requests, limit 5 per 300 ms, then 1 more after 650 ms",
        check_refill(s, &mut conn).await,
    ));
    results.push(outcome(
        "concurrent-64",
        "200 requests from 64 connections, limit 100 per hour",
        check_concurrent(strategy.clone(), fleet, hour).await,
    ));
    results.push(outcome(
        "clock",
        "one decision, compared with the server's TIME",
        clock_check(s, &mut conn).await,
    ));
    Ok(results)
}

/// 1. Exactly the limit on a fresh key, then refusals.
async fn check_exact(
    s: &dyn Strategy,
    conn: &mut Conn,
    client: &str,
    hour: u64,
) -> Result<CheckResult> {
    let got = sequential(s, conn, client, Limit::per_window(10, hour), 1, 15).await?;
    let admitted = got.iter().filter(|a| **a).count();
    let pattern_ok = got[..10].iter().all(|a| *a) && got[10..].iter().all(|a| !*a);
    Ok(CheckResult::new(
        "exact-limit",
        admitted == 10 && pattern_ok,
        format!(
            "limit 10, 15 sequential requests: {admitted} admitted, the first 10 admitted and the rest refused: {pattern_ok}"
        ),
    ))
}

/// 2. Every key written has an expiry.
async fn check_expiry(conn: &mut Conn, fleet: &Fleet, client: &str) -> Result<CheckResult> {
    let keys = keys_of(conn, fleet, client).await?;
    let forever: Vec<&String> = keys
        .iter()
        .filter(|(_, ttl)| *ttl < 0)
        .map(|(k, _)| k)
        .collect();
    Ok(CheckResult::new(
        "expiry",
        !keys.is_empty() && forever.is_empty(),
        if keys.is_empty() {
            "no key found for the client (does the key contain the client id?)".into()
        } else {
            format!(
                "{} key(s) written; without expiry: {:?}",
                keys.len(),
                forever
            )
        },
    ))
}

/// 3. Cost > 1.
async fn check_cost(s: &dyn Strategy, conn: &mut Conn, hour: u64) -> Result<CheckResult> {
    let client = unique_client("cost");
    let got = sequential(s, conn, &client, Limit::per_window(10, hour), 3, 5).await?;
    let admitted = got.iter().filter(|a| **a).count();
    Ok(CheckResult::new(
        "cost",
        got == [true, true, true, false, false],
        format!(
            "limit 10, cost 3, 5 requests: {admitted} admitted ({} units), pattern {got:?}",
            admitted * 3
        ),
    ))
}

/// 4. Refill / reset once time passes.
async fn check_refill(s: &dyn Strategy, conn: &mut Conn) -> Result<CheckResult> {
    let client = unique_client("refill");
    let window = 300;
    let before = sequential(s, conn, &client, Limit::per_window(5, window), 1, 6).await?;
    tokio::time::sleep(Duration::from_millis(2 * window + 50)).await;
    let after = sequential(s, conn, &client, Limit::per_window(5, window), 1, 1).await?;
    Ok(CheckResult::new(
        "refill",
        before.iter().filter(|a| **a).count() == 5 && !before[5] && after[0],
        format!(
            "limit 5 per {window} ms: before {before:?}, after {} ms: {after:?}",
            2 * window + 50
        ),
    ))
}

/// 5. Exact under 64 concurrent clients.
async fn check_concurrent(
    strategy: Arc<dyn Strategy>,
    fleet: &Fleet,
    hour: u64,
) -> Result<CheckResult> {
    let client = unique_client("concurrent");
    let admitted = concurrent(
        strategy,
        fleet,
        &client,
        Limit::per_window(100, hour),
        64,
        200,
    )
    .await?;
    Ok(CheckResult::new(
        "concurrent-64",
        admitted == 100,
        format!(
            "limit 100, 64 workers on their own connections, 200 requests: {admitted} admitted"
        ),
    ))
}
