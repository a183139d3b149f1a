//! `concurrency` (claims A1.1, A1.2, A3.0): c workers, each on its own
//! connection (through the delay proxy for a round trip > 0), released
//! together by a barrier, send decisions back to back on one fresh key until
//! the trial has offered L + 2c requests. One row per trial: offered,
//! admitted, over-admission, errors, the measured round trip. The first
//! trial of every cell also keeps its per-request history
//! (`concurrency-history.csv`: worker, send and reply times, admitted), so the
//! race can be drawn as it happened; runs before it store none.
//!
//! Cells are strategy x workers x round trip, grouped in the definition file
//! (`groups`: which strategies run at which round trips), so that the full
//! size fits its time budget: every strategy without added delay, the racy
//! baseline and a few atomic strategies at long round trips. The cells are
//! ordered by round trip, so one proxy (calibrated once) serves all cells of
//! a round trip; the round trip is measured again before every cell and the
//! measurement is what the rows carry.

// The analysis half (analyze/) is compiled into limitbench-analysis
// (crates/analysis/src/experiments/mod.rs); it is this experiment's all the same.
pub use limitbench_analysis::experiments::concurrency::{analyze, rows};
#[cfg(test)]
mod tests;

use std::collections::BTreeSet;
use std::time::Duration;

use serde::Deserialize;

pub use rows::Row;

use super::decisions::{atomic_design, history_rows};
use super::rows::HistoryRow;
use super::testbed::{self, RoundTrips, ms_label};
use super::{RunContext, Spec};
use limitbench_base::error::Result;
use limitbench_core::load::closed_loop;
use limitbench_core::load::counts::count;
use crate::run::latency;
use crate::run::seeds::trial_seed;
use crate::run::sweep::{self, Sweep, TrialRows};
use limitbench_core::strategy::{self, Limit, Options};

/// Its registration (the registry adds its `run` and its analysis half's `analyze`).
// Alone. Its 0 ms cells race the workers on CPU. Its delayed cells ran
// in lanes in the reference run of 2026-12-02 (the 0 ms ones alone
// first, `cpu_cells`): beside 8 lanes their timers ran late (99th
// percentile median 2.6 ms, 90th 12 ms, against 1.0 / 1.4 ms alone),
// 2,158 of 3,640 attempts beside others were redone and the experiment
// took 594 s against 227 s run alone. The bound holds only alone here.
pub const SPEC: Spec = Spec::new("concurrency", "A").external().others_at_most(0.1);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    limit: u64,
    /// Long enough that no window rolls during a trial.
    window_ms: u64,
    trials: u64,
    workers: Vec<usize>,
    groups: Vec<Group>,
    rtt_samples: u32,
    calibrate_samples: u32,
    /// Pin Redis to the CPU at this position of those the harness was
    /// allowed when it started (absent: not pinned; `testbed::server`).
    pin_redis_cpu: Option<usize>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Group {
    /// Strategy names; `*` means every built-in and external strategy.
    strategies: Vec<String>,
    rtts_ms: Vec<f64>,
    /// Widths of the proxy's uniform per-packet extra delay (per direction)
    /// at each round trip above 0; default: none.
    #[serde(default)]
    rtt_jitters_ms: Vec<f64>,
    /// Overrides the experiment's worker counts for this group.
    workers: Option<Vec<usize>>,
    /// Overrides the experiment's trials per cell for this group.
    trials: Option<u64>,
}

struct Cell {
    strategy: String,
    workers: usize,
    rtt_ms: f64,
    jitter_ms: f64,
    trials: u64,
}

impl Cell {
    fn id(&self) -> String {
        let jitter = if self.jitter_ms > 0.0 {
            format!("/jitter{}", ms_label(self.jitter_ms))
        } else {
            String::new()
        };
        format!(
            "{}/c{}/rtt{}{jitter}",
            self.strategy,
            self.workers,
            ms_label(self.rtt_ms)
        )
    }
}

fn cells(ctx: &RunContext, p: &Params) -> Result<Vec<Cell>> {
    let every = strategy::all_names(ctx.strategy_dir.as_deref())?;
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for g in &p.groups {
        let named: Vec<String> = if g.strategies.iter().any(|s| s == "*") {
            ctx.strategies(&every)
        } else {
            let own = g.strategies.clone();
            match &ctx.strategy_filter {
                Some(f) => own.into_iter().filter(|s| f.contains(s)).collect(),
                None => own,
            }
        };
        for s in named {
            let jitters = if g.rtt_jitters_ms.is_empty() {
                vec![0.0]
            } else {
                g.rtt_jitters_ms.clone()
            };
            for &rtt in &g.rtts_ms {
                for &j in &jitters {
                    for &c in g.workers.as_ref().unwrap_or(&p.workers) {
                        let cell = Cell {
                            strategy: s.clone(),
                            workers: c,
                            rtt_ms: rtt,
                            jitter_ms: j,
                            trials: g.trials.unwrap_or(p.trials),
                        };
                        if seen.insert(cell.id()) {
                            out.push(cell);
                        }
                    }
                }
            }
        }
    }
    // By round trip (and jitter) first: one proxy per pair.
    testbed::by_round_trip(&mut out, |c| (c.rtt_ms, c.jitter_ms));
    Ok(out)
}

/// Cross-cell state: the server, and one calibrated proxy per round trip.
struct Concurrency {
    p: Params,
    fleet: limitbench_core::fleet::Fleet,
    round_trips: RoundTrips,
}

/// Per cell: the proxy, the strategy's drivers, the measured round trip.
struct CellSetup {
    one_way_us: f64,
    measured: limitbench_core::proxy::RttStats,
    kind: String,
    atomic: bool,
    /// Does the strategy report Redis's clock (`Info::reports_redis_time`)?
    redis_clock: bool,
    drivers: Vec<limitbench_core::load::Driver>,
}

impl Sweep for Concurrency {
    type Cell = Cell;
    type Setup = CellSetup;
    type Row = Row;
    type Side = HistoryRow;
    const SIDE: Option<&'static str> = Some("history");
    const TIMED: bool = true;

    fn cell_id(&self, cell: &Cell) -> String {
        cell.id()
    }

    fn trials(&self, cell: &Cell) -> u64 {
        cell.trials
    }

    fn reject(&self, _cell: &Cell, rows: &TrialRows<Row, HistoryRow>) -> Option<String> {
        reject_errors(rows)
    }

    async fn setup(&mut self, ctx: &RunContext, cell: &Cell) -> Result<CellSetup> {
        let r = self
            .round_trips
            .get_jittered(
                ctx,
                self.fleet.primary_addr(),
                cell.rtt_ms,
                cell.jitter_ms,
                self.p.calibrate_samples,
            )
            .await?;
        let s = ctx.build_strategy(&cell.strategy, &Options::default())?;
        let (drivers, measured) = r
            .cell_drivers(&self.fleet, &s, cell.workers, self.p.rtt_samples)
            .await?;
        Ok(CellSetup {
            one_way_us: r.one_way_us(),
            measured,
            kind: s.info().kind.as_str().to_string(),
            atomic: atomic_design(s.as_ref()),
            redis_clock: s.info().reports_redis_time,
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
        let p = &self.p;
        let id = cell.id();
        let limit = Limit::per_window(p.limit, p.window_ms);
        let offered = p.limit + 2 * cell.workers as u64;
        testbed::clear_of_boundary(p.window_ms, Duration::from_secs(20)).await;
        let client = ctx.fresh_client("conc", &id, trial);
        let drivers = std::mem::take(&mut setup.drivers);
        let (events, _tc, back) = closed_loop(drivers, &client, limit, 1, offered, None).await?;
        setup.drivers = back;
        let n = count(&events);
        let lat = latency::events_row(&id, trial, &cell.strategy, &events)?;
        // One trial per cell is enough to draw the race; all of them would
        // make the side table the run's largest file.
        let history = if trial == 0 {
            history_rows(&id, trial, setup.redis_clock, &events)
        } else {
            Vec::new()
        };
        let mut out = TrialRows::one(Row {
            cell: id.clone(),
            trial,
            seed: trial_seed(ctx.seed, &id, trial),
            strategy: cell.strategy.clone(),
            kind: setup.kind.clone(),
            atomic_design: setup.atomic,
            workers: cell.workers as u64,
            target_rtt_ms: cell.rtt_ms,
            rtt_median_us: setup.measured.rtt_median_us,
            rtt_p99_us: setup.measured.rtt_p99_us,
            rtt_sd_us: setup.measured.rtt_sd_us,
            rtt_jitter_ms: cell.jitter_ms,
            one_way_delay_us: setup.one_way_us,
            limit: p.limit,
            window_ms: p.window_ms,
            offered: n.offered,
            admitted: n.admitted,
            over_admitted: n.admitted as i64 - p.limit as i64,
            errors: n.errors,
            aborts: n.aborts,
            retries_exhausted: n.retries_exhausted,
            round_trips: n.round_trips,
            wall_ms: events.iter().map(|e| e.replied_us).max().unwrap_or(0) as f64 / 1000.0,
            first_error: n.first_error.unwrap_or_default(),
        })
        .with_latency(lat);
        out.side = history;
        Ok(out)
    }
}

/// A concurrency trial counts admissions: any failed decision (a refused
/// connection, a script error) makes the count meaningless.
fn reject_errors(rows: &TrialRows<Row, HistoryRow>) -> Option<String> {
    let r = rows.rows.first()?;
    (r.errors > 0).then(|| {
        format!(
            "{} of {} decisions of `{}` failed (first: {})",
            r.errors, r.offered, r.strategy, r.first_error
        )
    })
}

pub async fn run(ctx: &RunContext) -> Result<()> {
    let p: Params = ctx.params()?;
    let cells = cells(ctx, &p)?;
    let fleet = testbed::server(ctx, p.pin_redis_cpu).await?;
    let mut sweep = Concurrency {
        p,
        fleet,
        round_trips: RoundTrips::default(),
    };
    sweep::run(ctx, &mut sweep, &cells).await
}
