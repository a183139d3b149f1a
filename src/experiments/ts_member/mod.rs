//! `ts-member` (claims B5.1-B5.4): the sliding log whose sorted-set member is
//! the timestamp (`ZADD key now now`). Requests in the same tick share one
//! entry, so the log undercounts and the limiter over-admits.
//!
//! Open loop: limit `limit` per `window_ms`, arrivals at a steady `rates` for
//! `duration_s` (all inside one window, so a correct limiter admits exactly
//! the limit), sent by a pool of `drivers` connections. Members:
//! `redis-ms`, `caller-ms`, `redis-us` (sliding-log-ts-member with that
//! member_clock) and `request-id` (sliding-window-log). The study does not
//! say how arrivals were paced beyond "random at a steady rate" nor how many
//! connections sent them, and both change how many requests share a
//! millisecond, so `pacings` (poisson | even) and `drivers` are swept: every
//! member runs at the first pacing and driver count, the `sweep_members` at
//! every combination. Each row carries the achieved rate, the inter-arrival
//! spread and the lateness measured from the send times.
//!
//! Closed loop (B5.2): `closed_workers` workers flat out for each of
//! `closed_durations_s` against limit `closed_limit`.

pub mod analyze;

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::study_b_topo_util::{trial_rng, unique_client};
use super::{Experiment, RunContext};
use crate::clock::Clock;
use crate::conn::Conn;
use crate::error::Result;
use crate::fleet::{Fleet, ServerConfig};
use crate::load::{Driver, Event, closed_loop, open_loop, schedule};
use crate::strategy::{Limit, Options, Strategy, client_key};

pub const EXPERIMENT: Experiment = Experiment {
    name: "ts-member",
    study: "B",
    allows_external: true,
    run: |ctx: &RunContext| Box::pin(run(ctx)),
    analyze: analyze::analyze,
};

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct Params {
    members: Vec<String>,
    rates: Vec<f64>,
    pacings: Vec<String>,
    drivers: Vec<usize>,
    sweep_members: Vec<String>,
    limit: u64,
    window_ms: u64,
    duration_s: f64,
    trials: u64,
    closed_members: Vec<String>,
    closed_workers: usize,
    closed_limit: u64,
    closed_durations_s: Vec<f64>,
    closed_trials: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Row {
    pub cell: String,
    pub trial: u64,
    pub seed: u64,
    /// `open` (scheduled arrivals) or `closed` (workers flat out).
    pub mode: String,
    pub member: String,
    pub strategy: String,
    /// Offered rate (open loop); 0 for closed loop.
    pub rate_per_s: f64,
    pub pacing: String,
    /// Connections sending (open: driver pool; closed: workers).
    pub drivers: u64,
    pub limit: u64,
    pub window_ms: u64,
    pub duration_s: f64,
    pub offered: u64,
    pub sent: u64,
    pub admitted: u64,
    pub errors: u64,
    pub over_limit: i64,
    pub admitted_per_limit: f64,
    pub achieved_rate_per_s: f64,
    pub gap_mean_us: f64,
    pub gap_sd_us: f64,
    pub lateness_mean_us: f64,
    pub lateness_p99_us: f64,
    pub lateness_max_us: f64,
    /// Distinct Redis milliseconds among the admitted decisions.
    pub admitted_distinct_redis_ms: u64,
    /// ZCARD of the log after the trial (what the limiter thinks it admitted).
    pub zcard_end: i64,
}

/// Build the strategy for a member kind.
pub fn member_strategy(member: &str) -> Result<(Arc<dyn Strategy>, String, &'static str)> {
    if member == "request-id" {
        let s = crate::strategy::build("sliding-window-log", None, &Options::default())?;
        Ok((s, "sliding-window-log".into(), "swl"))
    } else {
        let s = crate::strategy::build(
            "sliding-log-ts-member",
            None,
            &Options::default().with("member_clock", member),
        )?;
        Ok((s, "sliding-log-ts-member".into(), "tsm"))
    }
}

fn distinct_redis_ms(events: &[Event]) -> u64 {
    let mut v: Vec<i64> = events
        .iter()
        .filter(|e| e.admitted)
        .filter_map(|e| e.redis_time_us.map(|t| t.div_euclid(1000)))
        .collect();
    v.sort_unstable();
    v.dedup();
    v.len() as u64
}

struct CellSpec {
    cell: String,
    mode: &'static str,
    member: String,
    rate: f64,
    pacing: String,
    drivers: usize,
    limit: u64,
    duration_s: f64,
    trials: u64,
}

fn cells(p: &Params) -> Vec<CellSpec> {
    let mut v = Vec::new();
    for member in &p.members {
        for &rate in &p.rates {
            for (pi, pacing) in p.pacings.iter().enumerate() {
                for (di, &drivers) in p.drivers.iter().enumerate() {
                    let main = pi == 0 && di == 0;
                    if !main && !p.sweep_members.contains(member) {
                        continue;
                    }
                    v.push(CellSpec {
                        cell: format!("open/{member}/{rate}/{pacing}/d{drivers}"),
                        mode: "open",
                        member: member.clone(),
                        rate,
                        pacing: pacing.clone(),
                        drivers,
                        limit: p.limit,
                        duration_s: p.duration_s,
                        trials: p.trials,
                    });
                }
            }
        }
    }
    for member in &p.closed_members {
        for &d in &p.closed_durations_s {
            v.push(CellSpec {
                cell: format!("closed/{member}/w{}/{d}s", p.closed_workers),
                mode: "closed",
                member: member.clone(),
                rate: 0.0,
                pacing: "closed".into(),
                drivers: p.closed_workers,
                limit: p.closed_limit,
                duration_s: d,
                trials: p.closed_trials,
            });
        }
    }
    v
}

async fn run(ctx: &RunContext) -> Result<()> {
    let p: Params = ctx.params()?;
    ctx.note("params", serde_json::to_value(&p).unwrap())?;
    let mut log = ctx.trial_log(&[])?;
    let fleet = ctx.standalone(ServerConfig::default()).await?;
    ctx.note_fleet("fleet", &fleet).await?;
    let specs = cells(&p);
    let total: u64 = specs.iter().map(|c| c.trials).sum();
    let mut prog = ctx.progress(total);
    for spec in &specs {
        let (strategy, sname, suffix) = member_strategy(&spec.member)?;
        for mut node in fleet.node_connections().await? {
            strategy.prepare(&mut node).await?;
        }
        let mut drivers: Option<Vec<Driver>> = None;
        for trial in 0..spec.trials {
            if log.is_done(&spec.cell, trial) {
                prog.skip(1);
                continue;
            }
            let pool = match drivers.take() {
                Some(d) => d,
                None => make_drivers(&fleet, &strategy, spec.drivers).await?,
            };
            let client = unique_client("tsm", &spec.cell, trial);
            let limit = Limit::per_window(spec.limit, p.window_ms);
            let dur_us = (spec.duration_s * 1e6) as i64;
            let (events, offered, back) = if spec.mode == "open" {
                let mut rng = trial_rng(ctx.seed, &spec.cell, trial);
                // A short lead so the first arrivals are not sent late by the release.
                let lead = 5_000;
                let arrivals = match spec.pacing.as_str() {
                    "even" => schedule::steady(spec.rate, lead, dur_us, &client),
                    _ => schedule::poisson(spec.rate, lead, dur_us, &client, &mut rng),
                };
                let n = arrivals.len() as u64;
                let (ev, _, back) = open_loop(pool, Arc::new(arrivals), limit).await?;
                (ev, n, back)
            } else {
                let (ev, _, back) = closed_loop(
                    pool,
                    &client,
                    limit,
                    1,
                    u64::MAX,
                    Some(Duration::from_secs_f64(spec.duration_s)),
                )
                .await?;
                let n = ev.len() as u64;
                (ev, n, back)
            };
            drivers = Some(back);
            let pairs: Vec<(i64, i64)> =
                events.iter().map(|e| (e.intended_us, e.sent_us)).collect();
            let a = schedule::achieved(&pairs);
            let admitted = events.iter().filter(|e| e.admitted).count() as u64;
            let errors = events.iter().filter(|e| e.error.is_some()).count() as u64;
            let mut c = fleet.conn().await?;
            let key = client_key(&client, suffix);
            let zcard = c
                .call(&key, &crate::args!["ZCARD", key.as_str()])
                .await?
                .as_i64()
                .unwrap_or(-1);
            let row = Row {
                cell: spec.cell.clone(),
                trial,
                seed: ctx.seed,
                mode: spec.mode.into(),
                member: spec.member.clone(),
                strategy: sname.clone(),
                rate_per_s: spec.rate,
                pacing: spec.pacing.clone(),
                drivers: spec.drivers as u64,
                limit: spec.limit,
                window_ms: p.window_ms,
                duration_s: spec.duration_s,
                offered,
                sent: events.len() as u64,
                admitted,
                errors,
                over_limit: admitted as i64 - spec.limit as i64,
                admitted_per_limit: admitted as f64 / spec.limit as f64,
                achieved_rate_per_s: a.achieved_rate_per_s,
                gap_mean_us: a.gap_mean_us,
                gap_sd_us: a.gap_sd_us,
                lateness_mean_us: a.lateness_mean_us,
                lateness_p99_us: a.lateness_p99_us,
                lateness_max_us: a.lateness_max_us,
                admitted_distinct_redis_ms: distinct_redis_ms(&events),
                zcard_end: zcard,
            };
            log.commit(&spec.cell, trial, &[row])?;
            prog.inc(&format!(
                "{} #{trial}: {admitted} admitted (limit {}) at {:.0}/s",
                spec.cell, spec.limit, a.achieved_rate_per_s
            ));
        }
    }
    prog.finish();
    Ok(())
}

async fn make_drivers(
    fleet: &Fleet,
    strategy: &Arc<dyn Strategy>,
    n: usize,
) -> Result<Vec<Driver>> {
    let mut v = Vec::with_capacity(n);
    for w in 0..n {
        let conn: Conn = fleet.conn().await?;
        v.push(Driver::new(
            w as u32,
            strategy.clone(),
            conn,
            Clock::default(),
        ));
    }
    Ok(v)
}
