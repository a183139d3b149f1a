//! Rate-limiting strategies: each makes one decision by issuing Redis calls,
//! and nothing else.
//!
//! The split follows YCSB's DB/DBWrapper: a strategy only talks to Redis; the
//! wrapper in `load` owns every clock, counter, timer and error series.
//!
//! Layout:
//! - this file: the `Strategy` trait, `Request`/`Decision`, `Info` (what a
//!   caller needs to know, including whose clock it runs on: `ClockSource`),
//!   options, and the registry of built-in strategies (one line each).
//! - `script.rs`: a Lua script, its SHA (computed once), loading it as a
//!   script and as a function library, and the four invocation modes, with
//!   NOSCRIPT handled in one place; `ScriptArgs`, the KEYS and ARGV of one
//!   call, formatted into argument lists the connection reuses.
//! - `lua.rs`: `LuaStrategy`, a strategy that is one script plus a mapping of
//!   the request to KEYS/ARGV; built-in Lua strategies and external ones both
//!   use it.
//! - `multi_exec.rs`: the MULTI/INCRBY/PEXPIRE/EXEC transaction that
//!   `fixed-window-multi` and `watch-multi` both send.
//! - `reply/`: the rules that turn a script's reply into a decision (the
//!   position form of the built-ins, and the rule language of manifests).
//! - one file per built-in strategy; its Lua, if any, in `lua/<name>.lua`.
//! - `external/`: strategies from a folder of `<name>.lua` + `<name>.toml`.

pub mod check_then_act;
pub mod external;
pub mod fixed_window_derived_key;
pub mod fixed_window_lua;
pub mod fixed_window_multi;
pub mod gcra;
pub mod lua;
mod multi_exec;
pub mod reply;
pub mod script;
pub mod sliding_log_ts_member;
pub mod sliding_window_counter;
pub mod sliding_window_log;
pub mod token_bucket;
pub mod token_bucket_caller_clock;
pub mod watch_multi;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use limitbench_base::promise::Promise;
use serde::{Deserialize, Serialize};

use crate::conn::{Conn, NodeSetup};
use crate::resp::Connection;
use limitbench_base::error::{Error, Result};

pub use script::{Invocation, ModeSupport, Script, ScriptArgs, SourceUse};

/// How much traffic a key may take. Windowed strategies read `limit` per
/// `window_ms`; buckets read `limit` as the capacity (burst) and `rate_per_s`
/// as the refill rate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Limit {
    pub limit: u64,
    pub window_ms: u64,
    pub rate_per_s: f64,
}

impl Limit {
    /// `limit` per `window_ms`; a bucket refills the whole limit in one window.
    pub fn per_window(limit: u64, window_ms: u64) -> Self {
        Limit {
            limit,
            window_ms,
            rate_per_s: limit as f64 * 1000.0 / window_ms as f64,
        }
    }
    /// A bucket of `capacity` refilling at `rate_per_s`; windowed strategies
    /// see `capacity` per `capacity / rate` seconds.
    pub fn bucket(capacity: u64, rate_per_s: f64) -> Self {
        Limit {
            limit: capacity,
            window_ms: (capacity as f64 * 1000.0 / rate_per_s).ceil() as u64,
            rate_per_s,
        }
    }
}

/// One decision to make.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// The client (user, API key) whose allowance is spent; keys derive from it.
    pub client: &'a str,
    pub limit: Limit,
    /// Units this request spends (1 for most requests).
    pub cost: u64,
    /// The caller's clock, in microseconds since the epoch (possibly skewed).
    /// Only caller-clock strategies read it.
    pub now_us: i64,
    /// Unique per decision in a run.
    pub request_id: u64,
}

static REQUEST_IDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// A request id unique within this process (and so within a run).
pub fn next_request_id() -> u64 {
    REQUEST_IDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

impl<'a> Request<'a> {
    /// One unit for `client` now: the system clock and a fresh request id.
    pub fn now(client: &'a str, limit: Limit) -> Self {
        Request {
            client,
            limit,
            cost: 1,
            now_us: crate::clock::Clock::system_now_us(),
            request_id: next_request_id(),
        }
    }
}

/// The outcome of one decision, as the strategy saw it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Decision {
    pub admitted: bool,
    /// What is left of the allowance after this decision, where the strategy knows.
    pub remaining: Option<i64>,
    /// Redis's clock (us) when the script read it, where it does.
    pub redis_time_us: Option<i64>,
    /// Transactions aborted by a concurrent write (WATCH) during this decision.
    pub aborts: u32,
    /// Refused because the retry budget ran out (not because of the limit).
    pub retries_exhausted: bool,
    /// EVALSHA answered NOSCRIPT and the script was re-sent with EVAL.
    pub noscript_fallbacks: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// Separate round trips decided in the client: racy by design.
    ClientSide,
    /// MULTI/EXEC, optimistic (WATCH) or not.
    Transaction,
    /// One Lua script per decision.
    Lua,
    /// A Lua script + manifest loaded at run time.
    External,
}

impl Kind {
    pub fn as_str(&self) -> &'static str {
        match self {
            Kind::ClientSide => "client-side",
            Kind::Transaction => "transaction",
            Kind::Lua => "lua",
            Kind::External => "external",
        }
    }
}

/// Whose "now" a strategy's decision runs on: what moves its windows,
/// refills its buckets and trims its logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClockSource {
    /// Redis's `TIME`, read inside the script: every caller sees one clock,
    /// and a caller's own clock (`Request::now_us`) changes nothing.
    Redis,
    /// The caller's clock, `Request::now_us` (skewed per worker in the skew
    /// experiment): a window index computed by the caller, or "now" passed
    /// as an argument. Callers whose clocks disagree disagree on the state.
    Caller,
    /// No clock: the decision does not depend on time.
    None,
}

impl ClockSource {
    pub fn as_str(&self) -> &'static str {
        match self {
            ClockSource::Redis => "redis",
            ClockSource::Caller => "caller",
            ClockSource::None => "none",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [ClockSource::Redis, ClockSource::Caller, ClockSource::None]
            .into_iter()
            .find(|c| c.as_str() == s)
    }
}

/// What `limitbench strategies` prints about a strategy, and what a caller
/// needs to know to interpret its decisions.
#[derive(Debug, Clone)]
pub struct Info {
    pub name: String,
    pub kind: Kind,
    /// Invocation modes for scripted strategies; empty for the others.
    pub modes: Vec<Invocation>,
    /// The keys it touches, with `{client}` for the client id.
    pub keys: String,
    /// Whether the design promises an atomic decision (the race baseline does not).
    pub atomic: bool,
    /// For the deliberately buggy variants: the bug.
    pub known_bug: Option<&'static str>,
    /// Whose clock the decision runs on.
    pub clock: ClockSource,
    /// Whether every decision returns Redis's `TIME` as the script read it
    /// (`Decision::redis_time_us`), so that admissions can be placed on
    /// Redis's time axis. Usually `clock == Redis`; not always: the
    /// timestamp-member log with `member_clock=caller-ms` runs on the
    /// caller's clock and still returns Redis's time. For a Lua strategy it
    /// is whether its reply map has a time slot (`lua::ReplyMap`).
    pub reports_redis_time: bool,
    /// What the design promises about bursts, where it says (a manifest's
    /// `promise`, or the built-in's design); `None`: not declared, and a
    /// judge picks its own ideal. See `Promise`.
    pub promise: Option<Promise>,
    /// The script takes its window in whole seconds (`${window_s_int}`): a
    /// window that is not a whole number of seconds cannot be expressed, and
    /// a decision asked for one is an error (`Info::accepts`).
    pub window_whole_seconds: bool,
    /// The script takes a request's cost (a weight: units at once). An
    /// external manifest whose keys and args use no `${cost}` describes a
    /// script that takes none: every decision is of one unit, a request of
    /// another cost is an error of the decision, and `check` does not run
    /// its cost check (it says why).
    pub takes_cost: bool,
}

impl Info {
    /// Whether a decision under `limit` can be made as the strategy is
    /// written, and if not, why (a window in whole seconds only).
    pub fn accepts(&self, limit: &Limit) -> std::result::Result<(), String> {
        self.accepts_window(limit)
    }

    /// A request of `cost` units can be expressed: always, unless the
    /// script takes no cost (`takes_cost`) and `cost` is not 1.
    pub fn accepts_cost(&self, cost: u64) -> std::result::Result<(), String> {
        if !self.takes_cost && cost != 1 {
            return Err(format!(
                "strategy `{}` takes no cost (its manifest passes no ${{cost}}): a request of cost {cost} cannot be expressed",
                self.name
            ));
        }
        Ok(())
    }

    fn accepts_window(&self, limit: &Limit) -> std::result::Result<(), String> {
        if self.window_whole_seconds
            && (limit.window_ms == 0 || !limit.window_ms.is_multiple_of(1000))
        {
            return Err(format!(
                "strategy `{}` takes its window in whole seconds (${{window_s_int}}); a window of {} ms is not one",
                self.name, limit.window_ms
            ));
        }
        Ok(())
    }

    /// The same info with a declared promise.
    pub fn with_promise(mut self, p: Promise) -> Self {
        self.promise = Some(p);
        self
    }
}

#[async_trait]
pub trait Strategy: Send + Sync {
    fn info(&self) -> &Info;

    /// Run once per node before any timing: load scripts and functions.
    async fn prepare(&self, _node: &mut Connection) -> Result<()> {
        Ok(())
    }

    /// The invocation mode `decide` uses (`--opt invocation=...`), for a
    /// scripted strategy.
    fn invocation(&self) -> Option<Invocation> {
        None
    }

    /// Which of `info().modes` can run on this node, each with the reason
    /// when it cannot (a script that calls `redis.replicate_commands()`
    /// cannot run by FCALL). Loads the script as `prepare` does. Empty for
    /// strategies that are not scripts.
    async fn mode_support(&self, _node: &mut Connection) -> Result<Vec<ModeSupport>> {
        Ok(Vec::new())
    }

    /// How this strategy reads its script's reply (a Lua strategy's reply
    /// rules, an external manifest's `[reply]`), for load generators that
    /// send its bytes without calling `decide` (`load::replay`): they judge
    /// every reply by these rules, as `decide` does. `None` for strategies
    /// that are not one script call.
    fn reply_rules(&self) -> Option<&reply::ReplyRules> {
        None
    }

    /// Make one decision.
    async fn decide(&self, conn: &mut Conn, req: &Request<'_>) -> Result<Decision>;
}

/// Every strategy sets up a node by its `prepare` (what `Fleet::prepare` runs).
#[async_trait]
impl<S: Strategy + ?Sized> NodeSetup for S {
    async fn set_up_node(&self, node: &mut Connection) -> Result<()> {
        self.prepare(node).await
    }
}

/// Strategy options (`--opt key=value`, or `[strategy_options]` in an
/// experiment file). Every strategy takes what it knows and rejects the rest.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Options(pub BTreeMap<String, String>);

impl Options {
    pub fn parse_pairs<S: AsRef<str>>(pairs: &[S]) -> Result<Self> {
        let mut m = BTreeMap::new();
        for p in pairs {
            let (k, v) = p.as_ref().split_once('=').ok_or_else(|| {
                Error::Other(format!(
                    "strategy option `{}` must be key=value",
                    p.as_ref()
                ))
            })?;
            m.insert(k.trim().to_string(), v.trim().to_string());
        }
        Ok(Options(m))
    }

    pub fn with(mut self, k: &str, v: impl ToString) -> Self {
        self.0.insert(k.to_string(), v.to_string());
        self
    }

    /// Reads options by name and, at `finish`, complains about the unread ones.
    pub fn reader<'a>(&'a self, strategy: &'a str) -> OptionReader<'a> {
        OptionReader {
            opts: self,
            strategy,
            read: Vec::new(),
        }
    }
}

pub struct OptionReader<'a> {
    opts: &'a Options,
    strategy: &'a str,
    read: Vec<&'static str>,
}

impl OptionReader<'_> {
    pub fn get<T: std::str::FromStr>(&mut self, name: &'static str, default: T) -> Result<T> {
        self.read.push(name);
        match self.opts.0.get(name) {
            None => Ok(default),
            Some(v) => v.parse().map_err(|_| Error::BadOption {
                strategy: self.strategy.into(),
                option: name.into(),
                problem: format!("cannot parse `{v}`"),
            }),
        }
    }

    pub fn one_of(
        &mut self,
        name: &'static str,
        default: &'static str,
        allowed: &[&'static str],
    ) -> Result<&'static str> {
        self.read.push(name);
        match self.opts.0.get(name) {
            None => Ok(default),
            Some(v) => allowed
                .iter()
                .copied()
                .find(|a| a == v)
                .ok_or_else(|| Error::BadOption {
                    strategy: self.strategy.into(),
                    option: name.into(),
                    problem: format!("`{v}` is not one of {}", allowed.join(", ")),
                }),
        }
    }

    pub fn finish(self) -> Result<()> {
        for k in self.opts.0.keys() {
            if !self.read.contains(&k.as_str()) {
                return Err(Error::BadOption {
                    strategy: self.strategy.into(),
                    option: k.clone(),
                    problem: format!(
                        "unknown option (known: {})",
                        if self.read.is_empty() {
                            "none".into()
                        } else {
                            self.read.join(", ")
                        }
                    ),
                });
            }
        }
        Ok(())
    }
}

/// A built-in strategy: its name and how to build it from options.
pub struct Builtin {
    pub name: &'static str,
    pub build: fn(&Options) -> Result<Arc<dyn Strategy>>,
}

/// The registry: every built-in strategy, in the order the studies introduce them.
pub const BUILTINS: &[Builtin] = &[
    check_then_act::BUILTIN,
    watch_multi::BUILTIN,
    fixed_window_multi::BUILTIN,
    fixed_window_lua::BUILTIN,
    token_bucket::BUILTIN,
    token_bucket_caller_clock::BUILTIN,
    sliding_window_counter::BUILTIN,
    sliding_window_log::BUILTIN,
    sliding_log_ts_member::BUILTIN,
    fixed_window_derived_key::BUILTIN,
    gcra::BUILTIN,
];

/// Where external strategies are looked for when no `--dir` is given.
pub const DEFAULT_EXTERNAL_DIR: &str = "lua/external";

/// Every strategy name: built-ins, then those found in `dir` that load
/// (`external::scan` names the others).
pub fn all_names(dir: Option<&Path>) -> Result<Vec<String>> {
    let mut v: Vec<String> = BUILTINS.iter().map(|b| b.name.to_string()).collect();
    for m in external::load_dir(dir)? {
        v.push(m.name.clone());
    }
    Ok(v)
}

/// Build a strategy by name: a built-in, or an external one from `dir`.
/// An unknown name lists the known ones and the manifests that did not load.
pub fn build(name: &str, dir: Option<&Path>, opts: &Options) -> Result<Arc<dyn Strategy>> {
    if let Some(b) = BUILTINS.iter().find(|b| b.name == name) {
        return (b.build)(opts);
    }
    let folder = external::scan(dir)?;
    if let Some(m) = folder.manifests.iter().find(|m| m.name == name) {
        return m.build(opts);
    }
    let mut known: Vec<String> = BUILTINS.iter().map(|b| b.name.to_string()).collect();
    known.extend(folder.manifests.iter().map(|m| m.name.clone()));
    let mut known = known.join(", ");
    if !folder.broken.is_empty() {
        known += &format!(
            "; these manifests did not load: {}",
            folder.broken_text().join("; ")
        );
    }
    Err(Error::UnknownStrategy {
        name: name.to_string(),
        known,
    })
}

/// `rl:{client}:suffix`, hash-tagged so that all of a client's keys share a slot
/// (under the run's namespace on a server the user runs, `crate::namespace`).
pub fn client_key(client: &str, suffix: &str) -> String {
    ClientKey(client, suffix).to_string()
}

/// `rl:{client}:suffix` as a value to format, for building the key straight
/// into an argument list (`ArgList::push`) or one `String`; `suffix` may be
/// `format_args!(..)` (e.g. a window index) so no intermediate string is made.
pub struct ClientKey<'a, S: std::fmt::Display>(pub &'a str, pub S);

impl<S: std::fmt::Display> std::fmt::Display for ClientKey<'_, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // On a server the user runs, every key starts with the run's prefix.
        crate::namespace::write_namespace(f)?;
        write!(f, "rl:{{{}}}:{}", self.0, self.1)
    }
}

/// The index of the fixed window that `now_us` falls in.
pub fn window_index(now_us: i64, window_ms: u64) -> i64 {
    now_us.div_euclid(1000).div_euclid(window_ms.max(1) as i64)
}
