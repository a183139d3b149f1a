//! The scorecard: one compact battery of measured properties per strategy,
//! side by side (`limitbench scorecard`).
//!
//! Every property is a small function that measures (never declares) one
//! value and judges it on a stated threshold: `pass`, `warn` or `fail`; or it
//! is `not-run` with the reason (too slow for the size, needs control of the
//! servers, ...) or `error` with the cause. A strategy whose first decision
//! fails gets an `error` row (`works`) and the rest `not-run`: no crash.
//!
//! Layout:
//! - this file: the battery, the targets (our own servers or a Redis you
//!   run), the cells, and the outputs (`scorecard.csv`, `scorecard.md`,
//!   `scorecard.svg`, `scorecard.json`);
//! - `concurrency.rs`: exact under 64 concurrent workers, at 0 ms and 6.7 ms;
//! - `promise.rs`: the most admitted in any window for three patterns;
//! - `clock.rs`: drift from the ideal bucket under caller clock skew;
//! - `cost.rs`: Redis CPU per decision as a multiple of GET; decisions/s;
//! - `memory.rs`: bytes per busy client (MEMORY USAGE), growth with the limit;
//! - `servers.rs`: the properties that need control of the servers
//!   (replication, failover, cluster, script survival, slow/gone Redis);
//! - `output.rs`: the CSV, markdown table and SVG figure;
//! - `target.rs`: a Redis you run (`--redis-url`, `--cluster-url`): its INFO,
//!   the key prefix check and the clean-up.

pub mod clock;
pub mod concurrency;
pub mod cost;
pub mod memory;
pub mod output;
pub mod promise;
pub mod servers;
pub mod target;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;

use crate::conn::Conn;
use crate::error::{Error, Result};
use crate::fleet::{Fleet, RedisBinary, ServerConfig};
use crate::load::next_request_id;
use crate::run::Size;
use crate::strategy::{self, Limit, Options, Request, Strategy};

pub use target::External;

/// How a cell was judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Pass,
    Warn,
    Fail,
    NotRun,
    Error,
}

impl Verdict {
    pub fn as_str(&self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Warn => "warn",
            Verdict::Fail => "fail",
            Verdict::NotRun => "not-run",
            Verdict::Error => "error",
        }
    }
}

/// One (strategy, property) cell: a row of `scorecard.csv`.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    pub strategy: String,
    pub property: &'static str,
    pub value: Option<f64>,
    pub unit: &'static str,
    pub threshold: String,
    pub verdict: Verdict,
    pub detail: String,
}

/// What a property function returns.
#[derive(Debug, Clone)]
pub enum Outcome {
    Measured {
        value: f64,
        unit: &'static str,
        threshold: String,
        verdict: Verdict,
        detail: String,
    },
    NotRun(String),
}

impl Outcome {
    /// Judge `value` "lower is better": pass at or below `pass`, warn at or
    /// below `warn`, else fail.
    pub fn at_most(value: f64, unit: &'static str, pass: f64, warn: f64, detail: String) -> Self {
        Self::judged(value, unit, ("<=", |v, t| v <= t), pass, warn, detail)
    }

    /// Judge `value` "higher is better".
    pub fn at_least(value: f64, unit: &'static str, pass: f64, warn: f64, detail: String) -> Self {
        Self::judged(value, unit, (">=", |v, t| v >= t), pass, warn, detail)
    }

    /// Pass if `value` is within `pass` by the comparison `within` (named
    /// `op`), warn if within `warn`, else (or NaN) fail.
    fn judged(
        value: f64,
        unit: &'static str,
        (op, within): (&str, fn(f64, f64) -> bool),
        pass: f64,
        warn: f64,
        detail: String,
    ) -> Self {
        let verdict = if value.is_nan() {
            Verdict::Fail
        } else if within(value, pass) {
            Verdict::Pass
        } else if within(value, warn) {
            Verdict::Warn
        } else {
            Verdict::Fail
        };
        Outcome::Measured {
            value,
            unit,
            threshold: format!("pass {op} {}, warn {op} {}", num(pass), num(warn)),
            verdict,
            detail,
        }
    }
}

/// A number as the table shows it: up to 3 significant decimals.
pub fn num(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.abs() >= 1000.0 || x == x.trunc() {
        return format!("{x:.0}");
    }
    let s = format!("{x:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Every property, in the table's column order (most important first).
pub const PROPERTIES: &[(&str, &str)] = &[
    ("works", "a first decision succeeds"),
    ("exact-0ms", "admitted / limit, 64 workers, 0 ms round trip"),
    (
        "exact-6.7ms",
        "admitted / limit, 64 workers, 6.7 ms round trip (delay proxy)",
    ),
    (
        "straddle",
        "max admitted in any window / limit: two bursts of L around a boundary",
    ),
    (
        "quiet-burst",
        "max admitted in any window / limit: a quiet spell then a 3x flood",
    ),
    (
        "burst-sustained",
        "max admitted in any window / limit: a burst of L then traffic at the rate",
    ),
    (
        "clock-10ms",
        "admitted % of the ideal bucket, +/-10 ms caller skew minus unskewed (points)",
    ),
    ("clock-100ms", "the same at +/-100 ms"),
    ("clock-1s", "the same at +/-1 s"),
    (
        "cost-x-get",
        "Redis CPU per decision / Redis CPU per GET, same run, unpinned",
    ),
    (
        "decisions-per-s",
        "decisions/s of 16 closed-loop connections, as a fraction of GETs/s",
    ),
    (
        "memory",
        "bytes per busy client (at its limit, 100 per 60 s), MEMORY USAGE",
    ),
    (
        "replication",
        "fraction of keys whose replica state (DUMP, PEXPIRETIME) equals the primary's",
    ),
    (
        "failover",
        "admitted above the limit across a failover (primary killed, replica promoted, 50 ms replication link) / limit",
    ),
    (
        "cluster",
        "fraction of users that work on a 3-master cluster",
    ),
    (
        "survive-restart",
        "fraction of invocation modes that still decide after SHUTDOWN SAVE + restart",
    ),
    (
        "survive-promotion",
        "fraction of invocation modes that decide on a promoted replica",
    ),
    (
        "slow-redis",
        "fraction decided by Redis at a 3 ms round trip with a 10 ms deadline",
    ),
    (
        "gone-redis",
        "fraction of decisions that follow the policy (open: admit, closed: refuse) in time when Redis is gone",
    ),
];

/// Where the battery runs.
pub enum Target {
    /// Servers the harness starts (loopback, full control).
    Own(RedisBinary),
    /// A Redis (or cluster) you run: only the properties that need no
    /// control of the servers.
    External(External),
}

/// What to score and how.
pub struct Config {
    pub strategies: Vec<String>,
    pub dir: Option<PathBuf>,
    pub size: Size,
    pub target: Target,
    /// Every client id (and so every key) the battery writes contains it.
    pub key_prefix: String,
}

/// One strategy's battery, timed.
#[derive(Debug, Clone, Serialize)]
pub struct StrategyResult {
    pub strategy: String,
    pub clock: String,
    pub seconds: f64,
    pub cells: Vec<Cell>,
}

/// The whole scorecard.
#[derive(Debug, Clone, Serialize)]
pub struct Scorecard {
    pub size: String,
    pub target: serde_json::Value,
    pub results: Vec<StrategyResult>,
    pub total_seconds: f64,
}

impl Scorecard {
    pub fn cell(&self, strategy: &str, property: &str) -> Option<&Cell> {
        self.results
            .iter()
            .find(|r| r.strategy == strategy)?
            .cells
            .iter()
            .find(|c| c.property == property)
    }
}

/// The default list: every built-in, then the external strategies of
/// `lua/external`, then those of `dir` (added, not replacing).
pub fn default_strategies(dir: Option<&std::path::Path>) -> Result<Vec<String>> {
    let mut v = strategy::all_names(None)?;
    if dir.is_some() {
        for m in strategy::external::load_dir(dir)? {
            if !v.contains(&m.name) {
                v.push(m.name.clone());
            }
        }
    }
    Ok(v)
}

/// Build by name from `dir` first, else the built-ins and `lua/external`.
pub fn build(
    name: &str,
    dir: Option<&std::path::Path>,
    opts: &Options,
) -> Result<Arc<dyn Strategy>> {
    match dir {
        Some(d) => {
            strategy::build(name, Some(d), opts).or_else(|_| strategy::build(name, None, opts))
        }
        None => strategy::build(name, None, opts),
    }
}

/// What every property function gets.
pub struct Bench<'a> {
    pub cfg: &'a Config,
    pub name: String,
    pub strategy: Arc<dyn Strategy>,
    /// The server of the non-destructive properties (ours, fresh per
    /// strategy, or the external one).
    pub fleet: Fleet,
}

impl Bench<'_> {
    /// Where decisions go for the non-destructive properties.
    pub fn addr(&self) -> SocketAddr {
        self.fleet.primary_addr()
    }

    /// A client id, unique in the process, under the key prefix.
    pub fn client(&self, tag: &str) -> String {
        format!(
            "{}{}-{tag}-{}",
            self.cfg.key_prefix,
            self.name,
            next_request_id()
        )
    }

    pub fn size(&self) -> Size {
        self.cfg.size
    }

    pub fn own(&self) -> Option<&RedisBinary> {
        match &self.cfg.target {
            Target::Own(b) => Some(b),
            Target::External(_) => None,
        }
    }
}

/// One decision for `client` with a generous limit (100 per minute): admitted?
pub(crate) async fn decide_once(s: &dyn Strategy, conn: &mut Conn, client: &str) -> Result<bool> {
    let req = Request::now(client, Limit::per_window(100, 60_000));
    Ok(s.decide(conn, &req).await?.admitted)
}

/// One decision on a fresh client with a generous limit.
pub async fn probe(s: &dyn Strategy, fleet: &Fleet, client: &str) -> Result<()> {
    decide_once(s, &mut fleet.conn().await?, client)
        .await
        .map(|_| ())
}

fn cell(name: &str, property: &'static str, r: Result<Outcome>) -> Cell {
    let base = Cell {
        strategy: name.to_string(),
        property,
        value: None,
        unit: "",
        threshold: String::new(),
        verdict: Verdict::Error,
        detail: String::new(),
    };
    match r {
        Ok(Outcome::Measured {
            value,
            unit,
            threshold,
            verdict,
            detail,
        }) => Cell {
            value: Some(value),
            unit,
            threshold,
            verdict,
            detail,
            ..base
        },
        Ok(Outcome::NotRun(why)) => Cell {
            verdict: Verdict::NotRun,
            detail: why,
            ..base
        },
        Err(e) => Cell {
            detail: e.to_string(),
            ..base
        },
    }
}

/// A property that does not finish in `limit` (a strategy whose calls hang)
/// is an error, not a hung scorecard.
async fn bounded(
    limit: std::time::Duration,
    f: impl std::future::Future<Output = Result<Outcome>>,
) -> Result<Outcome> {
    match tokio::time::timeout(limit, f).await {
        Ok(r) => r,
        Err(_) => Err(Error::Timeout(format!(
            "the property did not finish in {} s",
            limit.as_secs()
        ))),
    }
}

/// The server for one strategy's non-destructive properties.
async fn fleet_for(cfg: &Config) -> Result<Fleet> {
    match &cfg.target {
        Target::Own(bin) => Fleet::standalone(bin, ServerConfig::default()).await,
        Target::External(x) => Ok(Fleet::external(x.addr)),
    }
}

/// Run the battery on every strategy; `progress` hears each finished one.
pub async fn run(cfg: &Config, mut progress: impl FnMut(&StrategyResult)) -> Result<Scorecard> {
    let t0 = Instant::now();
    let target = match &cfg.target {
        Target::Own(b) => serde_json::json!({"own": {"path": b.path, "version": b.version}}),
        Target::External(x) => x.describe().await?,
    };
    let mut results = Vec::new();
    for name in &cfg.strategies {
        let t = Instant::now();
        let cells = battery(cfg, name).await;
        let (clock, cells) = match cells {
            Ok(v) => v,
            Err(e) => ("?".into(), vec![cell(name, "works", Err(e))]),
        };
        let r = StrategyResult {
            strategy: name.clone(),
            clock,
            seconds: t.elapsed().as_secs_f64(),
            cells,
        };
        progress(&r);
        results.push(r);
    }
    if let Target::External(x) = &cfg.target {
        x.clean_up(&cfg.key_prefix).await?;
    }
    Ok(Scorecard {
        size: cfg.size.as_str().into(),
        target,
        results,
        total_seconds: t0.elapsed().as_secs_f64(),
    })
}

/// One strategy: (its clock, its cells). An `Err` only when the strategy
/// cannot even be built or no server can be started.
// Longer than 120 lines: the battery lists every property in the order of the scorecard's columns, each one short call; splitting it would hide that order.
async fn battery(cfg: &Config, name: &str) -> Result<(String, Vec<Cell>)> {
    let s = build(name, cfg.dir.as_deref(), &Options::default())?;
    let clock = s.info().clock.as_str().to_string();
    let fleet = fleet_for(cfg).await?;
    let b = Bench {
        cfg,
        name: name.to_string(),
        strategy: s.clone(),
        fleet,
    };
    let mut cells = Vec::new();
    // Load its scripts, then one decision: a strategy that errors here
    // errors everywhere; one row says so and the rest are not run.
    let first = tokio::time::timeout(std::time::Duration::from_secs(30), async {
        b.fleet.prepare(s.as_ref()).await?;
        probe(s.as_ref(), &b.fleet, &b.client("probe")).await
    })
    .await
    .unwrap_or_else(|_| Err(Error::Timeout("no reply in 30 s".into())));
    if let Err(e) = first {
        cells.push(cell(
            name,
            "works",
            Err(Error::Other(format!(
                "the strategy's first decision failed: {e}"
            ))),
        ));
        for (p, _) in &PROPERTIES[1..] {
            cells.push(cell(
                name,
                p,
                Ok(Outcome::NotRun(
                    "the strategy's first decision failed (see works)".into(),
                )),
            ));
        }
        return Ok((clock, cells));
    }
    cells.push(cell(
        name,
        "works",
        Ok(Outcome::Measured {
            value: 1.0,
            unit: "",
            threshold: "a decision returns".into(),
            verdict: Verdict::Pass,
            detail: format!(
                "clock: {} (Info.clock); reports Redis time: {}",
                clock,
                s.info().reports_redis_time
            ),
        }),
    ));
    let quick = b.size() != Size::Smoke;
    let smoke = || Ok(Outcome::NotRun("size smoke".into()));
    let ext = |what: &str| {
        Ok(Outcome::NotRun(format!(
            "external Redis: needs control of the servers ({what})"
        )))
    };
    let limit = std::time::Duration::from_secs(match b.size() {
        Size::Smoke => 60,
        Size::Quick => 180,
        Size::Full => 600,
    });
    cells.push(cell(
        name,
        "exact-0ms",
        bounded(limit, concurrency::exact(&b, 0.0)).await,
    ));
    cells.push(cell(
        name,
        "exact-6.7ms",
        bounded(limit, concurrency::exact(&b, 6.7)).await,
    ));
    for p in promise::PATTERNS {
        cells.push(cell(
            name,
            p,
            bounded(limit, promise::max_in_window(&b, p)).await,
        ));
    }
    let clocks = clock::drift(&b).await;
    for (p, r) in clocks {
        cells.push(cell(name, p, r));
    }
    let (c, d) = cost::measure(&b).await;
    cells.push(cell(name, "cost-x-get", c));
    cells.push(cell(name, "decisions-per-s", d));
    cells.push(cell(
        name,
        "memory",
        bounded(limit, memory::per_client(&b)).await,
    ));
    let own = b.own().is_some();
    // Why a property that needs servers of our own, and more than a smoke
    // run, is not run here (`None`: run it).
    let skip = |what: &str| {
        if !own {
            Some(ext(what))
        } else if !quick {
            Some(smoke())
        } else {
            None
        }
    };
    let replication = match skip("a primary + replica") {
        Some(r) => r,
        None => bounded(limit, servers::replication(&b)).await,
    };
    cells.push(cell(name, "replication", replication));
    let failover = match skip("killing the primary") {
        Some(r) => r,
        None => bounded(limit, servers::failover(&b)).await,
    };
    cells.push(cell(name, "failover", failover));
    cells.push(cell(
        name,
        "cluster",
        if !quick && own {
            smoke()
        } else {
            bounded(limit, servers::cluster(&b)).await
        },
    ));
    let (r, p) = match skip("restart").zip(skip("failover")) {
        Some(pair) => pair,
        None => servers::survival(&b).await,
    };
    cells.push(cell(name, "survive-restart", r));
    cells.push(cell(name, "survive-promotion", p));
    let (slow, gone) = match skip("slowing the server down").zip(skip("stopping the server")) {
        Some(pair) => pair,
        None => servers::slow_and_gone(&b).await,
    };
    cells.push(cell(name, "slow-redis", slow));
    cells.push(cell(name, "gone-redis", gone));
    Ok((clock, cells))
}
