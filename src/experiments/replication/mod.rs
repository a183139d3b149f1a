//! `replication` (claim B1): is a script that reads Redis's `TIME` safe to
//! replicate? Redis 7 replicates a script by its effects (the HSET with the
//! computed values), so the replica should hold exactly the primary's state.
//!
//! One primary + replica for the whole experiment, flushed before every
//! trial. A cell is a strategy (its scripts loaded once per cell). A trial:
//! `decisions` token-bucket decisions over `buckets` buckets (Poisson
//! arrivals over `duration_s`, open loop, a pool of drivers); wait until the
//! replica's offset reaches the primary's; then every key of the trial's
//! clients (found by SCAN on the primary) is read on both sides (HGETALL +
//! PEXPIRETIME; a key that is not a hash, as other strategies write, by its
//! DUMP) and compared field by field. Any strategy can run (the scorecard's
//! probe runs the one it scores); the study's are the two buckets.
//! Main row: matches and mismatches per trial; side table `mismatches`: one
//! row per differing field. The caller-clock bucket runs too, as a contrast
//! (its time comes from the caller, so it is trivially deterministic).

// The analysis half (analyze/) is compiled into limitbench-analysis
// (crates/analysis/src/experiments/mod.rs); it is this experiment's all the same.
pub use limitbench_analysis::experiments::replication::{analyze, rows};
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rand::RngExt;
use serde::{Deserialize, Serialize};

pub use rows::{MismatchRow, Row};

use super::{RunContext, Spec, testbed};
use limitbench_base::error::{Error, Result};
use limitbench_core::fleet::replication::wait_caught_up;
use limitbench_core::fleet::{Fleet, ServerConfig};
use limitbench_core::load::{open_loop, schedule};
use limitbench_core::resp::{Connection, Reply};
use crate::run::keys::unique_client;
use crate::run::seeds::{TrialRng, trial_rng};
use crate::run::sweep::{self, Sweep, TrialRows};
use limitbench_core::strategy::{Limit, Options, Strategy};

/// Its registration (the registry adds its `run` and its analysis half's `analyze`).
// buckets of a rate over seconds: 10 ms.
pub const SPEC: Spec = Spec::new("replication", "B").latency_bound(10.0).others_at_most(0.25);

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct Params {
    strategies: Vec<String>,
    trials: u64,
    buckets: u64,
    decisions: u64,
    /// Arrivals are spread over this long (Poisson).
    duration_s: f64,
    capacity: u64,
    rate_per_s: f64,
    drivers: usize,
    catch_up_timeout_ms: u64,
}

/// One key's state as a replica comparison sees it: every hash field (or,
/// for a key of another type, its `dump` in hex) plus the absolute expiry
/// (`pexpiretime`, ms since the epoch; -1 none, -2 missing).
pub async fn key_state(c: &mut Connection, key: &str) -> Result<BTreeMap<String, String>> {
    let mut m = BTreeMap::new();
    let t = c.call(&limitbench_core::args!["TYPE", key]).await?.as_string();
    if matches!(t.as_deref(), Some("hash") | Some("none")) {
        let h = c.call(&limitbench_core::args!["HGETALL", key]).await?;
        for kv in h.into_array().unwrap_or_default().chunks(2) {
            if let (Some(k), Some(v)) = (
                kv.first().and_then(Reply::as_string),
                kv.get(1).and_then(Reply::as_string),
            ) {
                m.insert(k, v);
            }
        }
    } else if let Reply::Bulk(b) = c.call(&limitbench_core::args!["DUMP", key]).await? {
        m.insert(
            "dump".into(),
            b.iter().map(|x| format!("{x:02x}")).collect::<String>(),
        );
    }
    let t = c.call(&limitbench_core::args!["PEXPIRETIME", key]).await?;
    m.insert(
        "pexpiretime".into(),
        t.as_i64().map(|v| v.to_string()).unwrap_or_default(),
    );
    Ok(m)
}

/// Fields that differ between two states: (field, primary value, replica value).
pub fn diff_states(
    p: &BTreeMap<String, String>,
    r: &BTreeMap<String, String>,
) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    let fields: BTreeSet<&String> = p.keys().chain(r.keys()).collect();
    for f in fields {
        let (a, b) = (p.get(f), r.get(f));
        if a != b {
            out.push((
                f.clone(),
                a.cloned().unwrap_or_else(|| "(absent)".into()),
                b.cloned().unwrap_or_else(|| "(absent)".into()),
            ));
        }
    }
    out
}

/// `decisions` Poisson arrivals at `decisions / duration_s` per second, each
/// on a bucket drawn uniformly from `clients`.
fn arrivals(p: &Params, clients: &[String], rng: &mut TrialRng) -> Vec<schedule::Arrival> {
    let rate = p.decisions as f64 / p.duration_s;
    let mut out = Vec::with_capacity(p.decisions as usize);
    let mut t = 0.0f64;
    for _ in 0..p.decisions {
        let u: f64 = rng.random_range(f64::MIN_POSITIVE..1.0);
        t += -u.ln() * 1e6 / rate;
        let b = rng.random_range(0..p.buckets) as usize;
        out.push(schedule::Arrival {
            at_us: t as i64,
            client: clients[b].clone(),
            cost: 1,
        });
    }
    out
}

/// Every bucket compared between primary and replica.
#[derive(Debug, Default)]
struct Comparison {
    matches: u64,
    mismatches: u64,
    /// How many buckets each field differed in.
    by_field: BTreeMap<String, u64>,
    side: Vec<MismatchRow>,
}

impl Comparison {
    /// Read every key on both sides and record what differs.
    async fn of(
        primary: SocketAddr,
        replica: SocketAddr,
        keys: &[String],
        cell: &str,
        trial: u64,
    ) -> Result<Self> {
        let mut pc = Connection::connect(primary).await?;
        let mut rc = Connection::connect(replica).await?;
        let mut out = Comparison::default();
        for key in keys {
            let a = key_state(&mut pc, key).await?;
            let b = key_state(&mut rc, key).await?;
            let d = diff_states(&a, &b);
            if d.is_empty() {
                out.matches += 1;
                continue;
            }
            out.mismatches += 1;
            for (f, pv, rv) in d {
                *out.by_field.entry(f.clone()).or_default() += 1;
                out.side.push(MismatchRow {
                    cell: cell.into(),
                    trial,
                    key: key.clone(),
                    field: f,
                    primary: pv,
                    replica: rv,
                });
            }
        }
        Ok(out)
    }

    /// `field:count;...` for the row.
    fn fields(&self) -> String {
        self.by_field
            .iter()
            .map(|(k, v)| format!("{k}:{v}"))
            .collect::<Vec<_>>()
            .join(";")
    }
}

async fn dbsize(addr: SocketAddr) -> Result<u64> {
    let mut c = Connection::connect(addr).await?;
    let r = c.call(&limitbench_core::args!["DBSIZE"]).await?;
    Ok(r.as_i64().unwrap_or(-1).max(0) as u64)
}

/// Cross-cell state: the primary + replica pair every trial runs on.
struct Replication {
    p: Params,
    fleet: Fleet,
    replica: SocketAddr,
}

impl Sweep for Replication {
    /// The strategy's name.
    type Cell = String;
    /// The strategy, its scripts loaded on the primary.
    type Setup = Arc<dyn Strategy>;
    type Row = Row;
    type Side = MismatchRow;
    const SIDE: Option<&'static str> = Some("mismatches");

    fn cell_id(&self, cell: &String) -> String {
        cell.clone()
    }

    fn trials(&self, _cell: &String) -> u64 {
        self.p.trials
    }

    async fn setup(&mut self, ctx: &RunContext, cell: &String) -> Result<Arc<dyn Strategy>> {
        let strategy = ctx.build_strategy(cell, &Options::default())?;
        self.fleet.prepare(strategy.as_ref()).await?;
        Ok(strategy)
    }

    async fn trial(
        &mut self,
        ctx: &RunContext,
        cell: &String,
        strategy: &mut Arc<dyn Strategy>,
        trial: u64,
    ) -> Result<TrialRows<Row, MismatchRow>> {
        let p = &self.p;
        // Scripts and functions survive FLUSHALL.
        self.fleet.flush_all().await?;
        let prefix = unique_client("repl", cell, trial);
        let clients: Vec<String> = (0..p.buckets).map(|b| format!("{prefix}-b{b}")).collect();
        let arrivals = arrivals(p, &clients, &mut trial_rng(ctx.seed, cell, trial));
        let drivers = testbed::fleet_drivers(&self.fleet, strategy, p.drivers).await?;
        let limit = Limit::bucket(p.capacity, p.rate_per_s);
        let (events, _, _) = open_loop(drivers, Arc::new(arrivals), limit).await?;
        let achieved = schedule::achieved_by(&events);
        let primary = self.fleet.primary_addr();
        let timeout = Duration::from_millis(p.catch_up_timeout_ms);
        let cu = wait_caught_up(primary, self.replica, timeout).await?;
        let keys_primary = dbsize(primary).await?;
        let keys_replica = dbsize(self.replica).await?;
        let mut keys = crate::check::keys_containing(
            &mut Connection::connect(primary).await?,
            &prefix,
        )
        .await?;
        keys.sort();
        let cmp = Comparison::of(primary, self.replica, &keys, cell, trial).await?;
        let errors = events.iter().filter(|e| e.error.is_some()).count() as u64;
        if let Some(e) = events.iter().find_map(|e| e.error.clone()) {
            eprintln!("[replication] {cell} trial {trial}: {errors} errors, first: {e}");
        }
        let row = Row {
            cell: cell.clone(),
            trial,
            seed: ctx.seed,
            strategy: cell.clone(),
            buckets: p.buckets,
            decisions: events.len() as u64,
            admitted: events.iter().filter(|e| e.admitted).count() as u64,
            errors,
            achieved_rate_per_s: achieved.achieved_rate_per_s,
            caught_up: cu.caught_up,
            catch_up_ms: cu.waited_ms,
            master_offset: cu.master_offset,
            replica_offset: cu.replica_offset,
            keys_primary,
            keys_replica,
            matches: cmp.matches,
            mismatches: cmp.mismatches,
            mismatched_fields: cmp.fields(),
        };
        Ok(TrialRows::with_side(vec![row], cmp.side))
    }
}

pub async fn run(ctx: &RunContext) -> Result<()> {
    let p: Params = ctx.params()?;
    ctx.note("params", serde_json::to_value(&p).unwrap())?;
    let cells = ctx.strategies(&p.strategies);
    let fleet = Fleet::primary_replica(ctx.binary()?, ServerConfig::default()).await?;
    ctx.note_fleet("fleet", &fleet).await?;
    let replica = fleet
        .replica()
        .ok_or_else(|| Error::Other("no replica in the fleet".into()))?
        .addr();
    sweep::run(ctx, &mut Replication { p, fleet, replica }, &cells).await
}
