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

pub mod analyze;
pub mod rows;
#[cfg(test)]
mod tests;

use std::time::Duration;

use serde::Deserialize;

pub use rows::Row;

use super::testbed::{self, RoundTrips, ms_label};
use super::{Experiment, RunContext};
use crate::clock::Clock;
use crate::error::Result;
use crate::load::closed_loop;
use crate::load::counts::count;
use crate::run::keys::fresh_client;
use crate::run::latency;
use crate::run::seeds::trial_seed;
use crate::run::sweep::{self, NoSide, Sweep, TrialRows};
use crate::strategy::{Limit, Options};

pub const EXPERIMENT: Experiment = Experiment {
    name: "retries",
    study: "A",
    allows_external: true,
    run: |ctx: &RunContext| Box::pin(run(ctx)),
    analyze: analyze::analyze,
};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    limit: u64,
    window_ms: u64,
    workers: usize,
    trials: u64,
    rtts_ms: Vec<f64>,
    retry_budgets: Vec<u32>,
    backoffs_us: Vec<u64>,
    budget_includes_first: Vec<bool>,
    /// The atomic baseline run on the same trials (slowdown ratio).
    baseline: String,
    rtt_samples: u32,
    calibrate_samples: u32,
    pin_redis_cpu: Option<usize>,
}

struct Cell {
    strategy: String,
    opts: Option<(u32, u64, bool)>,
    rtt_ms: f64,
}

impl Cell {
    fn id(&self) -> String {
        let rtt = ms_label(self.rtt_ms);
        match self.opts {
            Some((b, bo, f)) => format!(
                "{}/b{b}/backoff{bo}/first{}/rtt{rtt}",
                self.strategy,
                if f { "-counted" } else { "-free" }
            ),
            None => format!("{}/rtt{rtt}", self.strategy),
        }
    }
    fn options(&self) -> Options {
        match self.opts {
            Some((b, bo, f)) => Options::default()
                .with("retry_budget", b)
                .with("backoff_us", bo)
                .with("budget_includes_first", f),
            None => Options::default(),
        }
    }
}

fn cells(ctx: &RunContext, p: &Params) -> Vec<Cell> {
    let wanted = ctx.strategies(&["watch-multi".to_string(), p.baseline.clone()]);
    let mut out = Vec::new();
    for &rtt in &p.rtts_ms {
        if wanted.iter().any(|s| s == "watch-multi") {
            for &f in &p.budget_includes_first {
                for &bo in &p.backoffs_us {
                    for &b in &p.retry_budgets {
                        out.push(Cell {
                            strategy: "watch-multi".into(),
                            opts: Some((b, bo, f)),
                            rtt_ms: rtt,
                        });
                    }
                }
            }
        }
        for s in wanted.iter().filter(|s| *s != "watch-multi") {
            out.push(Cell {
                strategy: s.clone(),
                opts: None,
                rtt_ms: rtt,
            });
        }
    }
    out
}

/// Cross-cell state: the server, and one calibrated proxy per round trip.
struct Retries {
    p: Params,
    fleet: crate::fleet::Fleet,
    round_trips: RoundTrips,
}

/// Per cell: the strategy's drivers and the round trip measured before the cell.
struct CellSetup {
    measured: crate::proxy::RttStats,
    drivers: Vec<crate::load::Driver>,
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
    fn trials(&self, _cell: &Cell) -> u64 {
        self.p.trials
    }

    async fn setup(&mut self, ctx: &RunContext, cell: &Cell) -> Result<CellSetup> {
        let p = &self.p;
        let r = self
            .round_trips
            .get(
                ctx,
                self.fleet.primary_addr(),
                cell.rtt_ms,
                p.calibrate_samples,
            )
            .await?;
        let s = ctx.build_strategy(&cell.strategy, &cell.options())?;
        self.fleet.prepare(s.as_ref()).await?;
        let drivers = testbed::drivers(r.addr, &s, &vec![Clock::default(); p.workers]).await?;
        let measured = r.measure(p.rtt_samples).await?;
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
        let client = fresh_client("retr", &id, trial);
        // Exactly L requests in all, shared by the workers.
        let drivers = std::mem::take(&mut setup.drivers);
        let (events, _tc, back) = closed_loop(drivers, &client, limit, 1, p.limit, None).await?;
        setup.drivers = back;
        let n = count(&events);
        let lat = latency::row(&id, trial, &cell.strategy, &latency::from_events(&events))?;
        Ok(TrialRows::one(Row {
            cell: id.clone(),
            trial,
            seed: trial_seed(ctx.seed, &id, trial),
            strategy: cell.strategy.clone(),
            retry_budget: cell.opts.map(|o| o.0),
            backoff_us: cell.opts.map(|o| o.1),
            budget_includes_first: cell.opts.map(|o| o.2),
            workers: p.workers as u64,
            target_rtt_ms: cell.rtt_ms,
            rtt_median_us: setup.measured.rtt_median_us,
            rtt_p99_us: setup.measured.rtt_p99_us,
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

async fn run(ctx: &RunContext) -> Result<()> {
    let p: Params = ctx.params()?;
    let cells = cells(ctx, &p);
    let fleet = testbed::server(ctx, p.pin_redis_cpu).await?;
    let mut sweep = Retries {
        p,
        fleet,
        round_trips: RoundTrips::default(),
    };
    sweep::run(ctx, &mut sweep, &cells).await
}
