//! `ts-member` (claims B5.1-B5.4): the sliding log whose sorted-set member is
//! the timestamp (`ZADD key now now`). Requests in the same tick share one
//! entry, so the log undercounts and the limiter over-admits.
//!
//! Open loop: limit `limit` per `window_ms`, Poisson arrivals at each of
//! `rates` (all inside one window, so a correct limiter admits exactly the
//! limit), sent by a pool of `drivers` connections. Members: `redis-ms`,
//! `caller-ms`, `redis-us` (sliding-log-ts-member with that member_clock)
//! and `request-id` (sliding-window-log).
//!
//! The study does not say how its sender paced the arrivals nor how many
//! connections sent them, and both change how many requests share a
//! millisecond. So two senders are swept: the precise one (tick 0: every
//! send waited for to the microsecond) and a timer-tick sender whose sends
//! are released at the next multiple of a tick (`sender_ticks_ms`), each
//! over `drivers` connections. Every member runs at the first tick and
//! driver count (the main setting, for `duration_s`, the study's 2 s); the
//! `sweep_members` also run every other combination, for
//! `sweep_duration_s`. A trial's admissions are settled once the log holds
//! `limit` distinct stamps (nothing expires within the trial), which at
//! 1,000/s and above takes well under 0.5 s; every cell runs at least
//! `1.5 x limit / rate` seconds so the log fills even at 100/s, and the
//! analysis checks it did (ZCARD at the end). Each row carries the achieved
//! rate, the inter-arrival spread, the lateness, and the share of sends (and
//! of Redis executions) that fell in the millisecond of the one before.
//!
//! Closed loop (B5.2): `closed_workers` workers flat out for each of
//! `closed_durations_s` against limit `closed_limit`.
//!
//! One server for the whole experiment; a cell (mode, member, rate, tick,
//! drivers) sets up its strategy and its pool of driver connections once,
//! and every trial uses a fresh client (key).

// The analysis half (analyze/) is compiled into limitbench-analysis
// (crates/analysis/src/experiments/mod.rs); it is this experiment's all the same.
pub use limitbench_analysis::experiments::ts_member::{analyze, rows};
#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use rows::Row;

use super::decisions::history_rows;
use super::rows::HistoryRow;
use super::{RunContext, Spec, testbed};
use crate::run::keys::unique_client;
use crate::run::latency;
use crate::run::seeds::trial_rng;
use crate::run::sweep::{self, Sweep, TrialRows};
use limitbench_base::error::Result;
use limitbench_core::fleet::{Fleet, ServerConfig};
use limitbench_core::load::{Driver, Event, closed_loop, open_loop, schedule};
use limitbench_core::strategy::{Limit, Options, Strategy, client_key};

/// Its registration (the registry adds its `run` and its analysis half's `analyze`).
// its closed loop is CPU-bound: alone.
pub const SPEC: Spec = Spec::new("ts-member", "B").external().others_at_most(0.1);

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct Params {
    members: Vec<String>,
    rates: Vec<f64>,
    sender_ticks_ms: Vec<f64>,
    drivers: Vec<usize>,
    sweep_members: Vec<String>,
    limit: u64,
    window_ms: u64,
    duration_s: f64,
    sweep_duration_s: f64,
    trials: u64,
    /// Trials of the main cells of the two millisecond clocks, redis-ms and
    /// caller-ms (B5.3 compares them, B5.1 reads redis-ms), per rate of
    /// `rates` (empty: `trials`; never fewer), planned from the pilot spread
    /// (review of B5.3).
    #[serde(default)]
    clock_trials: Vec<u64>,
    sweep_trials: u64,
    closed_members: Vec<String>,
    closed_workers: usize,
    closed_limit: u64,
    closed_durations_s: Vec<f64>,
    closed_trials: u64,
}

/// Build the strategy for a member kind: (strategy, its name, its key suffix).
pub fn member_strategy(member: &str) -> Result<(Arc<dyn Strategy>, String, &'static str)> {
    if member == "request-id" {
        let s = limitbench_core::strategy::build("sliding-window-log", None, &Options::default())?;
        Ok((s, "sliding-window-log".into(), "swl"))
    } else {
        let s = limitbench_core::strategy::build(
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

/// One cell: open loop at a rate and sender, or closed loop for a duration.
struct Cell {
    id: String,
    mode: &'static str,
    member: String,
    rate: f64,
    /// The sender's timer tick, ms (0: precise).
    tick_ms: f64,
    drivers: usize,
    limit: u64,
    duration_s: f64,
    trials: u64,
}

/// Long enough for the log to fill at `rate`: the precise sender needs about
/// `limit / (1 - e^(-rate/1000))` ms (1.05 s at 100/s); 1.5 x limit / rate
/// leaves about four standard deviations of the count of occupied
/// milliseconds to spare.
fn fill_s(limit: u64, rate: f64) -> f64 {
    1.5 * limit as f64 / rate
}

/// Every member at the main (first) tick and driver count, the
/// `sweep_members` at every combination; then the closed-loop cells.
fn cells(p: &Params) -> Vec<Cell> {
    let mut v = Vec::new();
    for member in &p.members {
        for (ri, &rate) in p.rates.iter().enumerate() {
            for (ti, &tick_ms) in p.sender_ticks_ms.iter().enumerate() {
                for (di, &drivers) in p.drivers.iter().enumerate() {
                    let main = ti == 0 && di == 0;
                    if !main && !p.sweep_members.contains(member) {
                        continue;
                    }
                    let clock = p.clock_trials.get(ri).copied().unwrap_or(0);
                    // The two clocks B5.3 compares (and B5.1 reads redis-ms).
                    let clocks = member == "redis-ms" || member == "caller-ms";
                    let (d, trials) = if main && clocks {
                        (p.duration_s, p.trials.max(clock))
                    } else if main {
                        (p.duration_s, p.trials)
                    } else {
                        (p.sweep_duration_s, p.sweep_trials)
                    };
                    v.push(Cell {
                        id: format!("open/{member}/{rate}/t{tick_ms}/d{drivers}"),
                        mode: "open",
                        member: member.clone(),
                        rate,
                        tick_ms,
                        drivers,
                        limit: p.limit,
                        duration_s: d.max(fill_s(p.limit, rate)),
                        trials,
                    });
                }
            }
        }
    }
    for member in &p.closed_members {
        for &d in &p.closed_durations_s {
            v.push(Cell {
                id: format!("closed/{member}/w{}/{d}s", p.closed_workers),
                mode: "closed",
                member: member.clone(),
                rate: 0.0,
                tick_ms: 0.0,
                drivers: p.closed_workers,
                limit: p.closed_limit,
                duration_s: d,
                trials: p.closed_trials,
            });
        }
    }
    v
}

/// Cross-cell state: the one server.
struct TsMember {
    p: Params,
    fleet: Fleet,
}

/// Per cell: the member's strategy and the pool of drivers its trials share.
struct CellSetup {
    strategy_name: String,
    /// The key suffix of the strategy (to read the log's ZCARD).
    suffix: &'static str,
    drivers: Vec<Driver>,
}

impl TsMember {
    /// Send the trial's requests: the scheduled arrivals (open) or the
    /// workers flat out for the duration (closed). Returns the events, the
    /// number of requests offered and the trial clock's wall-clock start.
    async fn send(
        &self,
        ctx: &RunContext,
        cell: &Cell,
        setup: &mut CellSetup,
        client: &str,
        trial: u64,
    ) -> Result<(Vec<Event>, u64, i64)> {
        let limit = Limit::per_window(cell.limit, self.p.window_ms);
        let pool = std::mem::take(&mut setup.drivers);
        let (events, offered, tc, back) = if cell.mode == "open" {
            let dur_us = (cell.duration_s * 1e6) as i64;
            // A short lead so the first arrivals are not sent late by the release.
            let lead = 5_000;
            let mut rng = trial_rng(ctx.seed, &cell.id, trial);
            let arrivals = schedule::on_tick(
                schedule::poisson(cell.rate, lead, dur_us, client, &mut rng),
                (cell.tick_ms * 1000.0).round() as i64,
            );
            let n = arrivals.len() as u64;
            let (ev, tc, back) = open_loop(pool, Arc::new(arrivals), limit).await?;
            (ev, n, tc, back)
        } else {
            let run_for = Some(Duration::from_secs_f64(cell.duration_s));
            let (ev, tc, back) = closed_loop(pool, client, limit, 1, u64::MAX, run_for).await?;
            let n = ev.len() as u64;
            (ev, n, tc, back)
        };
        setup.drivers = back;
        Ok((events, offered, tc.start_unix_us))
    }
}

impl Sweep for TsMember {
    type Cell = Cell;
    type Setup = CellSetup;
    type Row = Row;
    type Side = HistoryRow;
    const SIDE: Option<&'static str> = Some("history");
    const TIMED: bool = true;

    fn cell_id(&self, cell: &Cell) -> String {
        cell.id.clone()
    }

    fn stalled(&self, _cell: &Self::Cell, out: &TrialRows<Row, HistoryRow>) -> Option<String> {
        out.rows
            .iter()
            .find_map(|r| super::decisions::stalled(&r.strategy, r.lateness_p99_us))
    }
    fn reject(&self, _cell: &Self::Cell, out: &TrialRows<Row, HistoryRow>) -> Option<String> {
        out.rows.iter().find_map(|r| {
            super::decisions::reject_failed(
                &r.strategy,
                r.errors,
                r.offered,
                "see the strategy's `check` output",
            )
        })
    }
    fn trials(&self, cell: &Cell) -> u64 {
        cell.trials
    }

    async fn setup(&mut self, _ctx: &RunContext, cell: &Cell) -> Result<CellSetup> {
        let (strategy, strategy_name, suffix) = member_strategy(&cell.member)?;
        self.fleet.prepare(strategy.as_ref()).await?;
        let drivers = testbed::fleet_drivers(&self.fleet, &strategy, cell.drivers).await?;
        Ok(CellSetup {
            strategy_name,
            suffix,
            drivers,
        })
    }

    async fn trial(
        &mut self,
        ctx: &RunContext,
        cell: &Cell,
        setup: &mut CellSetup,
        trial: u64,
    ) -> Result<TrialRows<Row, HistoryRow>> {
        let client = unique_client("tsm", &cell.id, trial);
        let (events, offered, start_unix_us) = self.send(ctx, cell, setup, &client, trial).await?;
        // Both on the wall clock, so the millisecond boundaries are the ones
        // the caller's and Redis's timestamps fall on.
        let sends: Vec<i64> = events.iter().map(|e| e.sent_us + start_unix_us).collect();
        let execs: Vec<i64> = events
            .iter()
            .filter_map(|e| e.redis_time_us.map(|t| t + start_unix_us))
            .collect();
        // The fill period (up to the last admission) decides what is
        // admitted; after it every request is refused whatever its timing.
        let last_sent = events
            .iter()
            .filter(|e| e.admitted)
            .map(|e| e.sent_us + start_unix_us)
            .max();
        let last_exec = events
            .iter()
            .filter(|e| e.admitted)
            .filter_map(|e| e.redis_time_us.map(|t| t + start_unix_us))
            .max();
        let upto = |v: &[i64], last: Option<i64>| -> Vec<i64> {
            v.iter().copied().filter(|t| Some(*t) <= last).collect()
        };
        let a = schedule::achieved_by(&events);
        let admitted = events.iter().filter(|e| e.admitted).count() as u64;
        let errors = events.iter().filter(|e| e.error.is_some()).count() as u64;
        let mut c = self.fleet.conn().await?;
        let key = client_key(&client, setup.suffix);
        let zcard = c
            .call(&key, &limitbench_core::args!["ZCARD", key.as_str()])
            .await?
            .as_i64()
            .unwrap_or(-1);
        let lat = latency::events_row(&cell.id, trial, &setup.strategy_name, &events)?;
        // The first trial of an open cell up to 1,000/s keeps its requests
        // (at most a few thousand) to draw the collisions as they happened;
        // the faster and closed cells would make it the run's largest file.
        let history = if trial == 0 && cell.mode == "open" && cell.rate <= 1000.0 {
            history_rows(&cell.id, trial, true, &events)
        } else {
            Vec::new()
        };
        let mut out = TrialRows::one(Row {
            cell: cell.id.clone(),
            trial,
            seed: ctx.seed,
            mode: cell.mode.into(),
            member: cell.member.clone(),
            strategy: setup.strategy_name.clone(),
            rate_per_s: cell.rate,
            pacing: if cell.mode == "open" {
                "poisson".into()
            } else {
                "closed".into()
            },
            sender_tick_ms: cell.tick_ms,
            drivers: cell.drivers as u64,
            limit: cell.limit,
            window_ms: self.p.window_ms,
            duration_s: cell.duration_s,
            offered,
            sent: events.len() as u64,
            admitted,
            errors,
            over_limit: admitted as i64 - cell.limit as i64,
            admitted_per_limit: admitted as f64 / cell.limit as f64,
            achieved_rate_per_s: a.achieved_rate_per_s,
            gap_mean_us: a.gap_mean_us,
            gap_sd_us: a.gap_sd_us,
            lateness_mean_us: a.lateness_mean_us,
            lateness_p99_us: a.lateness_p99_us,
            lateness_max_us: a.lateness_max_us,
            admitted_distinct_redis_ms: distinct_redis_ms(&events),
            zcard_end: zcard,
            send_same_ms_share: schedule::same_ms_share(&sends),
            redis_same_ms_share: schedule::same_ms_share(&execs),
            fill_send_same_ms_share: schedule::same_ms_share(&upto(&sends, last_sent)),
            fill_redis_same_ms_share: schedule::same_ms_share(&upto(&execs, last_exec)),
        })
        .with_latency(lat);
        out.side = history;
        Ok(out)
    }
}

pub async fn run(ctx: &RunContext) -> Result<()> {
    let p: Params = ctx.params()?;
    if !p.clock_trials.is_empty() && p.clock_trials.len() != p.rates.len() {
        return Err(limitbench_base::error::Error::Other(format!(
            "ts-member: clock_trials has {} entries for {} rates (one per rate, or none)",
            p.clock_trials.len(),
            p.rates.len()
        )));
    }
    ctx.note("params", serde_json::to_value(&p).unwrap())?;
    let fleet = ctx.standalone(ServerConfig::default()).await?;
    ctx.note_fleet("fleet", &fleet).await?;
    let cells = cells(&p);
    sweep::run(ctx, &mut TsMember { p, fleet }, &cells).await
}
