//! `retries` (claims A2.1, A2.2, A2.3): `watch-multi` on one hot key with 64
//! workers (own connections, barrier) and exactly L legitimate requests in
//! all (the workers take requests from a shared pool until L have been
//! offered), per retry budget and round trip: admitted, refused because the
//! retries ran out, aborts, wall time. The same trials with the Lua fixed
//! window give the slowdown ratio.
//!
//! The study states neither the backoff between retries nor whether the
//! budget counts the first try, so both are swept (`backoff_us`,
//! `budget_includes_first`); the rows say which values each trial used.

pub mod cells;
// The analysis half (analyze/) is compiled into limitbench-analysis
// (crates/analysis/src/experiments/mod.rs); it is this experiment's all the same.
pub use limitbench_analysis::experiments::retries::{analyze, rows};
#[cfg(test)]
mod tests;

use std::time::Duration;

use serde::Deserialize;

pub use rows::Row;

use cells::{Cell, Grid, WATCH};

use super::testbed::{self, RoundTrips};
use super::{RunContext, Spec};
use limitbench_base::error::Result;
use std::sync::Arc;

use limitbench_core::load::counts::count;
use limitbench_core::load::schedule::Arrival;
use limitbench_core::load::{closed_loop, open_loop};
use crate::run::latency;
use crate::run::seeds::trial_seed;
use crate::run::sweep::{self, NoSide, Sweep, TrialRows};
use limitbench_core::strategy::Limit;

/// Its registration (the registry adds its `run` and its analysis half's `analyze`).
// Alone. Its WATCH/MULTI workers fall into lockstep waves at long round
// trips (the A2.1 bound), which late timers break. Its delayed cells ran
// in lanes in the reference run of 2026-12-02 (the 0 ms ones alone
// first, `cpu_cells`; keys through `ctx.fresh_client`, so a redo has
// fresh keys): beside 8 lanes the 99th percentile of timer lateness had
// a median of 8.9 ms (1.1 ms alone), 338 of 518 attempts beside others
// were redone and the experiment took 477 s against 282 s alone.
pub const SPEC: Spec = Spec::new("retries", "A").external().others_at_most(0.1);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    limit: u64,
    window_ms: u64,
    /// Workers of the cells whose grid does not say.
    workers: usize,
    trials: u64,
    grids: Vec<Grid>,
    /// The atomic baseline run on the same trials (slowdown ratio).
    baseline: String,
    rtt_samples: u32,
    calibrate_samples: u32,
    /// Pin Redis to the CPU at this position of those the harness was
    /// allowed when it started (absent: not pinned; `testbed::server`).
    pin_redis_cpu: Option<usize>,
}

/// Cross-cell state: the server, and one calibrated proxy per round trip.
struct Retries {
    p: Params,
    fleet: limitbench_core::fleet::Fleet,
    round_trips: RoundTrips,
}

/// Per cell: the strategy's drivers and the round trip measured before the cell.
struct CellSetup {
    measured: limitbench_core::proxy::RttStats,
    drivers: Vec<limitbench_core::load::Driver>,
}

impl Sweep for Retries {
    type Cell = Cell;
    type Setup = CellSetup;
    type Row = Row;
    type Side = NoSide;
    const TIMED: bool = true;

    fn cell_id(&self, cell: &Cell) -> String {
        cell.id()
    }

    fn reject(&self, _cell: &Self::Cell, out: &TrialRows<Row, NoSide>) -> Option<String> {
        out.rows.iter().find_map(|r| {
            super::decisions::reject_failed(&r.strategy, r.errors, r.offered, &r.first_error)
        })
    }
    fn trials(&self, cell: &Cell) -> u64 {
        cell.trials
    }

    async fn setup(&mut self, ctx: &RunContext, cell: &Cell) -> Result<CellSetup> {
        let p = &self.p;
        let r = self
            .round_trips
            .get_jittered(
                ctx,
                self.fleet.primary_addr(),
                cell.rtt_ms,
                cell.jitter_ms,
                p.calibrate_samples,
            )
            .await?;
        let s = ctx.build_strategy(&cell.strategy, &cell.options()?)?;
        let (drivers, measured) = r
            .cell_drivers(&self.fleet, &s, cell.workers, p.rtt_samples)
            .await?;
        Ok(CellSetup { measured, drivers })
    }

    async fn trial(
        &mut self,
        ctx: &RunContext,
        cell: &Cell,
        setup: &mut CellSetup,
        trial: u64,
    ) -> Result<TrialRows<Row>> {
        let p = &self.p;
        let id = cell.id();
        let limit = Limit::per_window(p.limit, p.window_ms);
        testbed::clear_of_boundary(p.window_ms, Duration::from_secs(60)).await;
        let client = ctx.fresh_client("retr", &id, trial);
        // Exactly L requests in all, shared by the workers: all at once
        // (each worker takes the next as soon as it is done), or arriving
        // at seeded uniform times over `arrival_ms` (the next free worker
        // takes each when it is due).
        let drivers = std::mem::take(&mut setup.drivers);
        let seed = trial_seed(ctx.seed, &id, trial);
        let (events, back) = if cell.arrival_ms > 0.0 {
            let arrivals = spread_arrivals(p.limit, cell.arrival_ms, &client, seed);
            let (e, _tc, back) = open_loop(drivers, Arc::new(arrivals), limit).await?;
            (e, back)
        } else {
            let (e, _tc, back) = closed_loop(drivers, &client, limit, 1, p.limit, None).await?;
            (e, back)
        };
        setup.drivers = back;
        let n = count(&events);
        let lat = latency::events_row(&id, trial, &cell.strategy, &events)?;
        Ok(TrialRows::one(Row {
            cell: id.clone(),
            trial,
            seed,
            strategy: cell.strategy.clone(),
            retry_budget: cell.watch.as_ref().map(|o| o.0),
            backoff_us: match &cell.watch {
                Some(o) => Some(cells::parse_backoff(&o.1)?.1),
                None => None,
            },
            budget_includes_first: cell.watch.as_ref().map(|o| o.2),
            backoff: cell.watch.as_ref().map(|o| o.1.clone()).unwrap_or_default(),
            attempt: cell.watch.as_ref().map(|o| o.3.clone()).unwrap_or_default(),
            arrival_ms: cell.arrival_ms,
            rtt_jitter_ms: cell.jitter_ms,
            workers: cell.workers as u64,
            target_rtt_ms: cell.rtt_ms,
            rtt_median_us: setup.measured.rtt_median_us,
            rtt_p99_us: setup.measured.rtt_p99_us,
            rtt_sd_us: setup.measured.rtt_sd_us,
            limit: p.limit,
            offered: n.offered,
            admitted: n.admitted,
            refused_by_limit: n.offered - n.admitted - n.errors - n.retries_exhausted,
            refused_by_retries: n.retries_exhausted,
            aborts: n.aborts,
            errors: n.errors,
            round_trips: n.round_trips,
            wall_ms: events.iter().map(|e| e.replied_us).max().unwrap_or(0) as f64 / 1000.0,
            first_error: n.first_error.unwrap_or_default(),
        })
        .with_latency(lat))
    }
}

/// `n` arrivals at seeded uniform times over `over_ms`, sorted.
fn spread_arrivals(n: u64, over_ms: f64, client: &str, seed: u64) -> Vec<Arrival> {
    use rand::RngExt;
    let mut rng = crate::run::seeds::rng(seed);
    let span = (over_ms * 1000.0) as i64;
    let mut at: Vec<i64> = (0..n).map(|_| rng.random_range(0..=span)).collect();
    at.sort();
    at.into_iter()
        .map(|at_us| Arrival {
            at_us,
            client: client.to_string(),
            cost: 1,
        })
        .collect()
}

pub async fn run(ctx: &RunContext) -> Result<()> {
    let p: Params = ctx.params()?;
    let wanted = ctx.strategies(&[WATCH.to_string(), p.baseline.clone()]);
    let cells = cells::cells(&p.grids, &wanted, &p.baseline, p.workers, p.trials)?;
    let fleet = testbed::server(ctx, p.pin_redis_cpu).await?;
    let mut sweep = Retries {
        p,
        fleet,
        round_trips: RoundTrips::default(),
    };
    sweep::run(ctx, &mut sweep, &cells).await
}
