//! The correctness checks `limitbench check <strategy>` runs, the first thing
//! to run on a new strategy. They need a Redis (the harness's own or
//! `--redis-url`) and use fresh, unique keys, so they never touch other data.
//!
//! The limit and window of the checks that depend on them are settings
//! (`Settings`, `--limit` and `--window`), defaulting to 10 per 1 s, which
//! every library takes: a limiter configured in whole seconds cannot be
//! given 300 ms, and some refuse a burst below the rate. The other windows
//! are an hour (whole seconds too), so no window ends during a check.

use std::sync::Arc;
use std::time::Duration;

use limitbench_base::error::Result;
use limitbench_core::clock::Clock;
use limitbench_core::conn::Conn;
use limitbench_core::fleet::Fleet;
use limitbench_core::load::counts::count;
use limitbench_core::load::{Driver, closed_loop, next_request_id};
use limitbench_core::resp::Connection;
use limitbench_core::strategy::{ClockSource, Invocation, Limit, ModeSupport, Request, Strategy};

mod window;
pub use window::parse_window;

#[derive(Debug, Clone)]
pub struct CheckResult {
    pub name: &'static str,
    pub passed: bool,
    pub detail: String,
    /// The check could not finish: what it sent and what Redis answered.
    pub error: Option<String>,
    /// The check does not apply to this strategy (why is the detail): a
    /// script that takes no cost has no cost check. Not a failure.
    pub not_applicable: bool,
}

impl CheckResult {
    fn new(name: &'static str, passed: bool, detail: String) -> Self {
        CheckResult {
            name,
            passed,
            detail,
            error: None,
            not_applicable: false,
        }
    }

    fn not_applicable(name: &'static str, why: String) -> Self {
        CheckResult {
            not_applicable: true,
            ..Self::new(name, true, why)
        }
    }

    /// `pass`, `FAIL`, `ERROR` or `n/a`.
    pub fn verdict(&self) -> &'static str {
        if self.not_applicable {
            return "n/a";
        }
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
        not_applicable: false,
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

/// `workers` drivers, each on its own connection and the machine's clock,
/// released together by the load module's closed loop, offering `offered`
/// decisions of cost 1 in all on one key. Returns how many were admitted;
/// a decision that failed makes the whole an error (its text).
pub async fn concurrent(
    s: Arc<dyn Strategy>,
    fleet: &Fleet,
    client: &str,
    limit: Limit,
    workers: usize,
    offered: u64,
) -> Result<u64> {
    let mut drivers = Vec::with_capacity(workers);
    for w in 0..workers {
        drivers.push(Driver::new(
            w as u32,
            s.clone(),
            fleet.conn().await?,
            Clock::default(),
        ));
    }
    let (events, _, _) = closed_loop(drivers, client, limit, 1, offered, None).await?;
    let counts = count(&events);
    match counts.first_error {
        Some(e) => Err(limitbench_base::Error::Other(e)),
        None => Ok(counts.admitted),
    }
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
    let time = conn
        .call("", &limitbench_core::args!["TIME"])
        .await?
        .into_array();
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
        not_applicable: false,
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

/// Every key on `conn` whose name contains `needle` (SCAN MATCH *needle*;
/// the harness's own servers only: on a user's server keys are matched by
/// their prefix, `fleet::owned::keys_with_prefix`).
pub async fn keys_containing(conn: &mut Connection, needle: &str) -> Result<Vec<String>> {
    Ok(limitbench_core::fleet::owned::scan_keys(conn, &format!("*{needle}*")).await?)
}

/// Every key whose name contains `client`, with its PTTL.
pub async fn keys_of(conn: &mut Conn, fleet: &Fleet, client: &str) -> Result<Vec<(String, i64)>> {
    let _ = conn;
    let mut out = Vec::new();
    for mut node in fleet.node_connections().await? {
        for name in keys_containing(&mut node, client).await? {
            let ttl = node
                .call(&limitbench_core::args!["PTTL", name.as_str()])
                .await?
                .as_i64()
                .unwrap_or(-2);
            out.push((name, ttl));
        }
    }
    Ok(out)
}

/// Builds the strategy under check again for another invocation mode.
pub type Rebuild = dyn Fn(Invocation) -> Result<Arc<dyn Strategy>> + Send + Sync;

/// What the checks are run with.
pub struct Settings {
    /// The limit of the exact-limit, cost and refill checks.
    pub limit: u64,
    /// The refill check's window (ms).
    pub window_ms: u64,
    /// For the `modes` check: the strategy in another invocation mode
    /// (without it, that check only reports what the server can load).
    pub rebuild: Option<Box<Rebuild>>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            limit: 10,
            window_ms: 1000,
            rebuild: None,
        }
    }
}

/// Run every check on `strategy` against `fleet` with the default settings.
pub async fn run_checks(strategy: Arc<dyn Strategy>, fleet: &Fleet) -> Result<Vec<CheckResult>> {
    run_checks_with(strategy, fleet, &Settings::default()).await
}

/// Run every check on `strategy` against `fleet`. Scripts are loaded first.
pub async fn run_checks_with(
    strategy: Arc<dyn Strategy>,
    fleet: &Fleet,
    set: &Settings,
) -> Result<Vec<CheckResult>> {
    // Loading the scripts is not a check: without them nothing can run.
    // A script that does not compile names the strategy (and its file).
    fleet.prepare(strategy.as_ref()).await.map_err(|e| {
        let name = &strategy.info().name;
        limitbench_base::error::Error::Other(format!(
            "strategy `{name}` (its script, {name}.lua): the script does not load: {e}"
        ))
    })?;
    let s = strategy.as_ref();
    let mut conn = fleet.conn().await?;
    let hour = 3_600_000;
    let (l, w) = (set.limit, set.window_ms);
    let mut results = Vec::new();

    let exact = unique_client("exact");
    results.push(outcome(
        "exact-limit",
        &format!("{} sequential requests, limit {l} per hour, cost 1", l + 5),
        check_exact(s, &mut conn, &exact, l, hour).await,
    ));
    results.push(outcome(
        "expiry",
        "TTL of every key of the exact-limit client",
        check_expiry(&mut conn, fleet, &exact).await,
    ));
    results.push(outcome(
        "cost",
        &format!("{} requests of cost 3, limit {l} per hour", l / 3 + 2),
        check_cost(s, &mut conn, l, hour).await,
    ));
    results.push(outcome(
        "refill",
        &format!(
            "{} requests, limit {l} per {w} ms, then 1 more after {} ms",
            l + 1,
            2 * w + 50
        ),
        check_refill(s, &mut conn, l, w).await,
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
    results.push(outcome(
        "modes",
        "per invocation mode: what the server loads, then 3 decisions, limit 2 per hour",
        modes_check(s, set.rebuild.as_deref(), fleet).await,
    ));
    Ok(results)
}

/// 1. Exactly the limit on a fresh key, then refusals.
async fn check_exact(
    s: &dyn Strategy,
    conn: &mut Conn,
    client: &str,
    limit: u64,
    hour: u64,
) -> Result<CheckResult> {
    let n = limit as usize;
    let got = sequential(s, conn, client, Limit::per_window(limit, hour), 1, n + 5).await?;
    let admitted = got.iter().filter(|a| **a).count();
    let pattern_ok = got[..n].iter().all(|a| *a) && got[n..].iter().all(|a| !*a);
    Ok(CheckResult::new(
        "exact-limit",
        admitted == n && pattern_ok,
        format!(
            "limit {limit}, {} sequential requests: {admitted} admitted, the first {limit} admitted and the rest refused: {pattern_ok}",
            n + 5
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

/// Check 3, cost > 1: as many requests of cost 3 as the limit holds, then refusals.
async fn check_cost(
    s: &dyn Strategy,
    conn: &mut Conn,
    limit: u64,
    hour: u64,
) -> Result<CheckResult> {
    if !s.info().takes_cost {
        return Ok(CheckResult::not_applicable(
            "cost",
            "not run: the script takes no cost (its manifest passes no ${cost}), so every request is one unit; a request of cost 3 cannot be expressed".into(),
        ));
    }
    let client = unique_client("cost");
    let fit = (limit / 3) as usize;
    let got = sequential(s, conn, &client, Limit::per_window(limit, hour), 3, fit + 2).await?;
    let admitted = got.iter().filter(|a| **a).count();
    let want: Vec<bool> = (0..fit + 2).map(|i| i < fit).collect();
    Ok(CheckResult::new(
        "cost",
        got == want,
        format!(
            "limit {limit}, cost 3, {} requests: {admitted} admitted ({} units), pattern {got:?}",
            fit + 2,
            admitted * 3
        ),
    ))
}

/// Check 4, refill / reset once time passes. The burst starts just after a
/// boundary of the wall clock's windows (where windows aligned to the
/// epoch, on the caller's or a local Redis's clock, begin), so that it does
/// not straddle one.
async fn check_refill(
    s: &dyn Strategy,
    conn: &mut Conn,
    limit: u64,
    window: u64,
) -> Result<CheckResult> {
    let client = unique_client("refill");
    let lim = Limit::per_window(limit, window);
    if let Err(why) = s.info().accepts(&lim) {
        return Err(limitbench_base::Error::Other(format!(
            "{why}; give a window it takes with --window"
        )));
    }
    let w_us = window as i64 * 1000;
    let into = Clock::system_now_us().rem_euclid(w_us);
    let lead_us = (w_us / 100).clamp(1000, 20_000);
    tokio::time::sleep(Duration::from_micros((w_us - into + lead_us) as u64)).await;
    let n = limit as usize;
    let before = sequential(s, conn, &client, lim, 1, n + 1).await?;
    tokio::time::sleep(Duration::from_millis(2 * window + 50)).await;
    let after = sequential(s, conn, &client, lim, 1, 1).await?;
    Ok(CheckResult::new(
        "refill",
        before.iter().filter(|a| **a).count() == n && !before[n] && after[0],
        format!(
            "limit {limit} per {window} ms: before {before:?}, after {} ms: {after:?}",
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

/// Which invocation modes can run the strategy on `fleet`'s first node:
/// what the server loads (`Strategy::mode_support`: FUNCTION LOAD, the API
/// a function lacks), and then, for each mode that loads, a first decision
/// on a fresh key of `client_prefix` (a mode whose first call fails cannot
/// run either; its error is the reason). Each mode is built by `rebuild`.
/// Also the decisions of each runnable mode (3 requests, limit 2 per hour),
/// for comparing them.
pub async fn runnable_modes(
    s: &dyn Strategy,
    rebuild: &Rebuild,
    fleet: &Fleet,
    client_prefix: &str,
) -> Result<Vec<(ModeSupport, Vec<bool>)>> {
    let mut node = fleet
        .node_connections()
        .await?
        .into_iter()
        .next()
        .ok_or_else(|| limitbench_base::Error::Other("the fleet has no node".into()))?;
    let mut out = Vec::new();
    for mut m in s.mode_support(&mut node).await? {
        let mut got = Vec::new();
        if m.problem.is_none() {
            let tried = async {
                let sm = rebuild(m.mode)?;
                fleet.prepare(sm.as_ref()).await?;
                let mut conn = fleet.conn().await?;
                let client = format!("{client_prefix}{}-{}", m.mode, next_request_id());
                sequential(
                    sm.as_ref(),
                    &mut conn,
                    &client,
                    Limit::per_window(2, 3_600_000),
                    1,
                    3,
                )
                .await
            }
            .await;
            match tried {
                Ok(g) => got = g,
                Err(e) => m.problem = Some(format!("its first call failed: {e}")),
            }
        }
        out.push((m, got));
    }
    Ok(out)
}

/// Check 7, the invocation modes: each mode the strategy declares either runs and
/// decides as the others do, or is reported as not runnable with the
/// reason. Fails when the mode under check cannot run or two runnable
/// modes decide differently.
async fn modes_check(
    s: &dyn Strategy,
    rebuild: Option<&Rebuild>,
    fleet: &Fleet,
) -> Result<CheckResult> {
    let declared = &s.info().modes;
    if declared.is_empty() {
        return Ok(CheckResult::new(
            "modes",
            true,
            "not a script: no invocation modes".into(),
        ));
    }
    let found: Vec<(ModeSupport, Vec<bool>)> = match rebuild {
        Some(r) => runnable_modes(s, r, fleet, &unique_client("modes")).await?,
        None => {
            let mut node = fleet.node_connections().await?.remove(0);
            s.mode_support(&mut node)
                .await?
                .into_iter()
                .map(|m| (m, Vec::new()))
                .collect()
        }
    };
    let runs: Vec<&(ModeSupport, Vec<bool>)> =
        found.iter().filter(|(m, _)| m.problem.is_none()).collect();
    let agree = runs.windows(2).all(|w| w[0].1 == w[1].1);
    let mut parts: Vec<String> = runs
        .iter()
        .map(|(m, got)| {
            if got.is_empty() {
                format!("{}: loads", m.mode)
            } else {
                format!("{}: {got:?}", m.mode)
            }
        })
        .collect();
    parts.extend(found.iter().filter_map(|(m, _)| {
        m.problem
            .as_ref()
            .map(|p| format!("{}: cannot run: {p}", m.mode))
    }));
    // The mode this strategy was built with is the one `decide` uses: the
    // exact-limit check ran it. It must be among the runnable ones.
    let used_ok = match s.invocation() {
        Some(used) => runs.iter().any(|(m, _)| m.mode == used),
        None => true,
    };
    Ok(CheckResult::new(
        "modes",
        !runs.is_empty() && agree && used_ok,
        format!(
            "{} of {} declared modes can run{}: {}",
            runs.len(),
            declared.len(),
            if agree {
                ""
            } else {
                " and they decide differently"
            },
            parts.join("; ")
        ),
    ))
}
