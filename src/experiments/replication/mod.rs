//! `replication` (claim B1): is a script that reads Redis's `TIME` safe to
//! replicate? Redis 7 replicates a script by its effects (the HSET with the
//! computed values), so the replica should hold exactly the primary's state.
//!
//! Per trial: a primary + replica (one pair for the whole experiment, flushed
//! between trials); `decisions` token-bucket decisions over `buckets` buckets
//! (Poisson arrivals over `duration_s`, open loop, a pool of drivers); wait
//! until the replica's offset reaches the primary's; then every bucket is read
//! on both sides (HGETALL + PEXPIRETIME) and compared field by field.
//! Main row: matches and mismatches per trial; side table `mismatches`: one
//! row per differing field. The caller-clock bucket runs too, as a contrast
//! (its time comes from the caller, so it is trivially deterministic).

pub mod analyze;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use rand::RngExt;
use serde::{Deserialize, Serialize};

use super::study_b_topo_util::{trial_rng, unique_client, wait_caught_up};
use super::{Experiment, RunContext};
use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::fleet::{Fleet, ServerConfig};
use crate::load::{Driver, open_loop, schedule};
use crate::resp::{Connection, Reply};
use crate::strategy::{Limit, Options, client_key};

pub const EXPERIMENT: Experiment = Experiment {
    name: "replication",
    study: "B",
    allows_external: false,
    run: |ctx: &RunContext| Box::pin(run(ctx)),
    analyze: analyze::analyze,
};

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

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Row {
    pub cell: String,
    pub trial: u64,
    pub seed: u64,
    pub strategy: String,
    pub buckets: u64,
    pub decisions: u64,
    pub admitted: u64,
    pub errors: u64,
    pub achieved_rate_per_s: f64,
    pub caught_up: bool,
    pub catch_up_ms: f64,
    pub master_offset: u64,
    pub replica_offset: u64,
    pub keys_primary: u64,
    pub keys_replica: u64,
    pub matches: u64,
    pub mismatches: u64,
    /// `field:count` for every field that differed somewhere (empty: none).
    pub mismatched_fields: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MismatchRow {
    pub cell: String,
    pub trial: u64,
    pub key: String,
    pub field: String,
    pub primary: String,
    pub replica: String,
}

/// One key's state as a replica comparison sees it: every hash field plus
/// the absolute expiry (`pexpiretime`, ms since the epoch; -1 none, -2 missing).
pub async fn key_state(c: &mut Connection, key: &str) -> Result<BTreeMap<String, String>> {
    let mut m = BTreeMap::new();
    let h = c.call(&crate::args!["HGETALL", key]).await?;
    for kv in h.into_array().unwrap_or_default().chunks(2) {
        if let (Some(k), Some(v)) = (
            kv.first().and_then(Reply::as_string),
            kv.get(1).and_then(Reply::as_string),
        ) {
            m.insert(k, v);
        }
    }
    let t = c.call(&crate::args!["PEXPIRETIME", key]).await?;
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
    let fields: std::collections::BTreeSet<&String> = p.keys().chain(r.keys()).collect();
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

async fn run(ctx: &RunContext) -> Result<()> {
    let p: Params = ctx.params()?;
    ctx.note("params", serde_json::to_value(&p).unwrap())?;
    let strategies = ctx.strategies(&p.strategies);
    let mut log = ctx.trial_log(&["mismatches"])?;
    let fleet = Fleet::primary_replica(ctx.binary()?, ServerConfig::default()).await?;
    ctx.note_fleet("fleet", &fleet).await?;
    let replica_addr = fleet
        .replica()
        .ok_or_else(|| Error::Other("no replica in the fleet".into()))?
        .addr();
    let limit = Limit::bucket(p.capacity, p.rate_per_s);
    let mut prog = ctx.progress(strategies.len() as u64 * p.trials);
    for name in &strategies {
        let strategy = ctx.build_strategy(name, &Options::default())?;
        for mut node in fleet.node_connections().await? {
            strategy.prepare(&mut node).await?;
        }
        let cell = name.clone();
        for trial in 0..p.trials {
            if log.is_done(&cell, trial) {
                prog.skip(1);
                continue;
            }
            fleet.flush_all().await?;
            // Scripts survive FLUSHALL; functions too (FLUSHALL does not touch them).
            let prefix = unique_client("repl", &cell, trial);
            let clients: Vec<String> = (0..p.buckets).map(|b| format!("{prefix}-b{b}")).collect();
            let mut rng = trial_rng(ctx.seed, &cell, trial);
            let rate = p.decisions as f64 / p.duration_s;
            let mut arrivals = Vec::with_capacity(p.decisions as usize);
            let mut t = 0.0f64;
            for _ in 0..p.decisions {
                let u: f64 = rng.random_range(f64::MIN_POSITIVE..1.0);
                t += -u.ln() * 1e6 / rate;
                let b = rng.random_range(0..p.buckets) as usize;
                arrivals.push(schedule::Arrival {
                    at_us: t as i64,
                    client: clients[b].clone(),
                    cost: 1,
                });
            }
            let mut drivers = Vec::new();
            for w in 0..p.drivers {
                drivers.push(Driver::new(
                    w as u32,
                    strategy.clone(),
                    fleet.conn().await?,
                    Clock::default(),
                ));
            }
            let (events, _, _) = open_loop(drivers, Arc::new(arrivals), limit).await?;
            let pairs: Vec<(i64, i64)> =
                events.iter().map(|e| (e.intended_us, e.sent_us)).collect();
            let achieved = schedule::achieved(&pairs);
            let cu = wait_caught_up(
                fleet.primary_addr(),
                replica_addr,
                Duration::from_millis(p.catch_up_timeout_ms),
            )
            .await?;
            let mut pc = Connection::connect(fleet.primary_addr()).await?;
            let mut rc = Connection::connect(replica_addr).await?;
            let dbsize = |r: Reply| r.as_i64().unwrap_or(-1).max(0) as u64;
            let keys_primary = dbsize(pc.call(&crate::args!["DBSIZE"]).await?);
            let keys_replica = dbsize(rc.call(&crate::args!["DBSIZE"]).await?);
            let suffix = if name.contains("caller") { "tbc" } else { "tb" };
            let (mut matches, mut mismatches) = (0u64, 0u64);
            let mut by_field: BTreeMap<String, u64> = BTreeMap::new();
            let mut side = Vec::new();
            for c in &clients {
                let key = client_key(c, suffix);
                let a = key_state(&mut pc, &key).await?;
                let b = key_state(&mut rc, &key).await?;
                let d = diff_states(&a, &b);
                if d.is_empty() {
                    matches += 1;
                } else {
                    mismatches += 1;
                    for (f, pv, rv) in d {
                        *by_field.entry(f.clone()).or_default() += 1;
                        side.push(MismatchRow {
                            cell: cell.clone(),
                            trial,
                            key: key.clone(),
                            field: f,
                            primary: pv,
                            replica: rv,
                        });
                    }
                }
            }
            let errors = events.iter().filter(|e| e.error.is_some()).count() as u64;
            if let Some(e) = events.iter().find_map(|e| e.error.clone()) {
                eprintln!("[replication] {cell} trial {trial}: {errors} errors, first: {e}");
            }
            log.side("mismatches", &side)?;
            let row = Row {
                cell: cell.clone(),
                trial,
                seed: ctx.seed,
                strategy: name.clone(),
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
                matches,
                mismatches,
                mismatched_fields: by_field
                    .iter()
                    .map(|(k, v)| format!("{k}:{v}"))
                    .collect::<Vec<_>>()
                    .join(";"),
            };
            log.commit(&cell, trial, &[row])?;
            prog.inc(&format!(
                "{cell} #{trial}: {matches} match, {mismatches} differ"
            ));
        }
    }
    prog.finish();
    Ok(())
}
