//! `skew` (claims A4.1-A4.3): a token bucket whose "now" comes from the
//! caller (`token-bucket-caller-clock`) against the same bucket on Redis's
//! TIME (`token-bucket`). W servers (workers) each have a fixed clock offset
//! within +/-S; open-loop arrivals (each sent by one server, chosen at
//! random with the trial's seed, like a load balancer would) at a fraction
//! or a multiple of the refill rate. Both strategies get the same arrivals,
//! servers and clocks side by side, each on its own key. The ideal bucket is
//! computed offline by the analysis from the recorded send times
//! (`skew-history.csv`), so the rows carry only what was measured.
//!
//! How many servers there are, how their offsets are drawn (evenly spread,
//! uniform random, or two-point at -S and +S), how long the load lasts and
//! the bucket's capacity are not stated by the study: `servers`, `clocks`,
//! `durations_ms`, `capacities_s` and `assign` (random or round-robin
//! servers) are swept.
//!
//! With `start_after_boundary_ms` (the scorecard's probe) every trial's
//! arrivals start that long after a boundary of Redis's clock, of a window
//! of capacity / rate seconds: a windowed design then sees the same phase
//! at every skew, so comparing it with its own unskewed trial leaves only
//! the clock's effect. Absent, they start 50 ms after the trial clock does.
//!
//! On the sweep engine a cell is a setting and a trial is one rep: it draws
//! the clocks, arrivals and servers from the trial's seed, runs every
//! strategy on them side by side and returns a row per strategy under the
//! cell id `<strategy>/<setting>` (`Sweep::keys`), with every decision in
//! the `history` side table.

// The analysis half (analyze/) is compiled into limitbench-analysis
// (crates/analysis/src/experiments/mod.rs); it is this experiment's all the same.
pub use limitbench_analysis::experiments::skew::{analyze, rows};
#[cfg(test)]
mod tests;

use std::sync::Arc;

use rand::RngExt;
use serde::Deserialize;

pub use rows::{HistoryRow, Row};

use super::decisions::history_rows;
use super::testbed::{self, ms_label};
use super::{RunContext, Spec};
use limitbench_core::clock::Clock;
use limitbench_base::error::{Error, Result};
use limitbench_core::fleet::Fleet;
use limitbench_core::load::TrialClock;
use limitbench_core::load::counts::count;
use limitbench_core::load::dispatch::{Assign, open_loop_on};
use limitbench_core::load::schedule::{self, Arrival};
use crate::run::latency;
use crate::run::seeds::{self, TrialRng, trial_seed};
use crate::run::sweep::{self, Sweep, TrialRows};
use limitbench_core::strategy::{Limit, Options, Strategy};

/// Its registration (the registry adds its `run` and its analysis half's `analyze`).
// clock offsets of milliseconds: 3 ms, above the probe's own 1 ms timer resolution.
pub const SPEC: Spec = Spec::new("skew", "A").external().latency_bound(3.0).others_at_most(0.25);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    strategies: Vec<String>,
    capacity: u64,
    rate_per_s: f64,
    /// Each grid is swept in full; together they make the settings (so a
    /// costly long run can be limited to the settings that need it).
    grids: Vec<Grid>,
    reps: u64,
    /// Pin Redis to the CPU at this position of those the harness was
    /// allowed when it started (absent: not pinned; `testbed::server`).
    pin_redis_cpu: Option<usize>,
    /// Start the arrivals this long after a window boundary of Redis's
    /// clock (window: capacity / rate); absent: 50 ms into the trial.
    start_after_boundary_ms: Option<f64>,
}

/// When the arrivals start on the trial clock when not aligned (us).
const START_US: i64 = 50_000;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Grid {
    skews_ms: Vec<f64>,
    servers: Vec<usize>,
    /// `spread` (evenly over [-S, +S]) or `random` (uniform, seeded).
    clocks: Vec<String>,
    /// Offered load, x the refill rate.
    loads: Vec<f64>,
    /// `poisson` or `steady`.
    arrivals: Vec<String>,
    /// How long the arrivals last: the bucket starts full, so short trials
    /// are dominated by the first `capacity` requests.
    durations_ms: Vec<f64>,
    /// Which server sends an arrival: `random` (seeded) or `round-robin`.
    /// Absent: random.
    assign: Option<Vec<String>>,
    /// Bucket capacities as seconds of refill (capacity / rate): the study
    /// does not state the capacity of its skew experiment, and how far the
    /// skew exceeds it decides how much the cap throws away. Absent: `capacity`.
    capacities_s: Option<Vec<f64>>,
    /// Trials per setting of this grid (absent: `reps`): the 60 s runs get fewer.
    reps: Option<u64>,
}

#[derive(Debug, Clone)]
struct Setting {
    skew_ms: f64,
    servers: usize,
    clocks: String,
    load: f64,
    arrivals: String,
    duration_ms: f64,
    assign: String,
    capacity: u64,
    /// Whether `capacity` differs from the experiment's default (then the label says so).
    capacity_swept: bool,
    reps: u64,
}

impl Setting {
    fn label(&self) -> String {
        format!(
            "S{}/W{}/{}/x{}/{}/T{}{}{}",
            ms_label(self.skew_ms),
            self.servers,
            self.clocks,
            ms_label(self.load),
            self.arrivals,
            ms_label(self.duration_ms),
            if self.assign == "random" { "" } else { "/rr" },
            if self.capacity_swept {
                format!("/C{}", self.capacity)
            } else {
                String::new()
            }
        )
    }
}

/// Every setting of every grid, in grid order, each once.
fn settings(p: &Params) -> Result<Vec<Setting>> {
    let mut settings: Vec<Setting> = Vec::new();
    for g in &p.grids {
        for a in &g.arrivals {
            for c in &g.clocks {
                if !["spread", "random", "two-point"].contains(&c.as_str())
                    || !["poisson", "steady"].contains(&a.as_str())
                {
                    return Err(Error::Other(format!(
                        "skew: clocks must be spread|random|two-point and arrivals poisson|steady (got {c}, {a})"
                    )));
                }
                let capacities: Vec<u64> = match &g.capacities_s {
                    None => vec![p.capacity],
                    Some(cs) => cs
                        .iter()
                        .map(|c| (c * p.rate_per_s).round().max(1.0) as u64)
                        .collect(),
                };
                let assigns = g.assign.clone().unwrap_or_else(|| vec!["random".into()]);
                for (d, asg) in g
                    .durations_ms
                    .iter()
                    .flat_map(|d| assigns.iter().map(move |a| (*d, a.clone())))
                {
                    if !["random", "round-robin"].contains(&asg.as_str()) {
                        return Err(Error::Other(format!(
                            "skew: assign must be random|round-robin (got {asg})"
                        )));
                    }
                    for &w in &g.servers {
                        for &load in &g.loads {
                            for (&s, &capacity) in g
                                .skews_ms
                                .iter()
                                .flat_map(|s| capacities.iter().map(move |c| (s, c)))
                            {
                                let st = Setting {
                                    capacity,
                                    capacity_swept: capacity != p.capacity,
                                    reps: g.reps.unwrap_or(p.reps),
                                    skew_ms: s,
                                    servers: w,
                                    clocks: c.clone(),
                                    load,
                                    arrivals: a.clone(),
                                    duration_ms: d,
                                    assign: asg.clone(),
                                };
                                if !settings.iter().any(|x| x.label() == st.label()) {
                                    settings.push(st);
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    Ok(settings)
}

/// What one trial of a setting draws from its seed, in this order: the
/// servers' clocks, the arrival times, which server sends each arrival.
struct Draw {
    clocks: Vec<Clock>,
    times: Vec<Arrival>,
    assign: Arc<Vec<u32>>,
}

fn draw(p: &Params, st: &Setting, rng: &mut TrialRng) -> Draw {
    let spread_us = (st.skew_ms * 1000.0) as i64;
    let clocks = match st.clocks.as_str() {
        "spread" => Clock::spread(st.servers, spread_us),
        "two-point" => Clock::two_point(st.servers, spread_us),
        _ => Clock::random(st.servers, spread_us, rng),
    };
    let rate = p.rate_per_s * st.load;
    let dur = (st.duration_ms * 1000.0) as i64;
    let times = if st.arrivals == "steady" {
        schedule::steady(rate, START_US, dur, "")
    } else {
        schedule::poisson(rate, START_US, dur, "", rng)
    };
    let assign: Arc<Vec<u32>> = Arc::new(
        (0..times.len())
            .map(|k| {
                if st.assign == "round-robin" {
                    (k % st.servers) as u32
                } else {
                    rng.random_range(0..st.servers as u32)
                }
            })
            .collect(),
    );
    Draw {
        clocks,
        times,
        assign,
    }
}

/// Cross-cell state: the server, the strategies (scripts loaded once) and,
/// for aligned starts, a connection to read Redis's clock with.
struct Skew {
    p: Params,
    fleet: Fleet,
    strategies: Vec<(String, Arc<dyn Strategy>)>,
    clock_conn: Option<limitbench_core::conn::Conn>,
}

impl Skew {
    /// How far to move the drawn arrivals (which start at [`START_US`]) so
    /// that they start `start_after_boundary_ms` after a boundary of Redis's
    /// clock; 0 when not aligned. Read just before `tc` starts.
    fn shift_us(&self, st: &Setting, tc: &TrialClock, offset_us: Option<i64>) -> i64 {
        let (Some(after), Some(offset)) = (self.p.start_after_boundary_ms, offset_us) else {
            return 0;
        };
        let window_ms = (st.capacity as f64 * 1000.0 / self.p.rate_per_s).round().max(1.0) as u64;
        let after_us = (after * 1000.0) as i64;
        testbed::next_boundary(tc, offset, window_ms, after_us) + after_us - START_US
    }

    /// The cell id of one strategy's rows on setting `st`.
    fn key(strategy: &str, st: &Setting) -> String {
        format!("{strategy}/{}", st.label())
    }
}

/// A cell is a setting; one trial runs every strategy side by side on the
/// same arrivals, servers and clocks and commits a row per strategy, under
/// the cell ids `<strategy>/<setting>`.
impl Sweep for Skew {
    type Cell = Setting;
    type Setup = ();
    type Row = Row;
    type Side = HistoryRow;
    const SIDE: Option<&'static str> = Some("history");
    const TIMED: bool = true;

    fn cell_id(&self, st: &Setting) -> String {
        st.label()
    }

    fn stalled(&self, _cell: &Self::Cell, out: &TrialRows<Row, HistoryRow>) -> Option<String> {
        out.rows
            .iter()
            .find_map(|r| super::decisions::stalled(&r.strategy, r.lateness_p99_us))
    }
    fn reject(&self, _cell: &Self::Cell, out: &TrialRows<Row, HistoryRow>) -> Option<String> {
        out.rows.iter().find_map(|r| {
            super::decisions::reject_failed(&r.strategy, r.errors, r.offered, &r.first_error)
        })
    }
    fn trials(&self, st: &Setting) -> u64 {
        st.reps
    }

    fn keys(&self, st: &Setting) -> Vec<String> {
        self.strategies
            .iter()
            .map(|(n, _)| Self::key(n, st))
            .collect()
    }

    async fn setup(&mut self, _ctx: &RunContext, _st: &Setting) -> Result<()> {
        Ok(())
    }

    async fn trial(
        &mut self,
        ctx: &RunContext,
        st: &Setting,
        _setup: &mut (),
        rep: u64,
    ) -> Result<TrialRows<Row, HistoryRow>> {
        let p = &self.p;
        let limit = Limit::bucket(st.capacity, p.rate_per_s);
        let seed = trial_seed(ctx.seed, &st.label(), rep);
        let d = draw(p, st, &mut seeds::rng(seed));
        // Every strategy gets drivers with this trial's clocks.
        let mut pools = Vec::new();
        for (_, s) in &self.strategies {
            pools.push(testbed::drivers(self.fleet.primary_addr(), s, &d.clocks).await?);
        }
        let offset = match self.clock_conn.as_mut() {
            Some(c) => Some(testbed::redis_clock_offset(c).await?),
            None => None,
        };
        // The clock starts once every connection is open.
        let tc = TrialClock::start();
        let shift = self.shift_us(st, &tc, offset);
        let times: Vec<Arrival> = d
            .times
            .iter()
            .map(|a| Arrival {
                at_us: a.at_us + shift,
                ..a.clone()
            })
            .collect();
        let mut tasks = Vec::new();
        for ((name, s), drivers) in self.strategies.iter().zip(pools) {
            let cell = Self::key(name, st);
            let client = ctx.fresh_client("skew", &cell, rep);
            let arrivals = schedule::for_client(&times, &client);
            let assign = Assign::Fixed(d.assign.clone());
            let load = open_loop_on(drivers, Arc::new(arrivals), assign, limit, tc);
            tasks.push((
                name.clone(),
                cell,
                s.info().reports_redis_time,
                tokio::spawn(load),
            ));
        }
        let offsets_us = d
            .clocks
            .iter()
            .map(|c| c.offset_us.to_string())
            .collect::<Vec<_>>()
            .join(";");
        let mut out = TrialRows::with_side(Vec::new(), Vec::new());
        for (name, cell, redis_clock, t) in tasks {
            let (events, _) = t
                .await
                .map_err(|e| Error::Other(format!("skew: load task failed: {e}")))??;
            let n = count(&events);
            let ach = schedule::achieved_by(&events);
            out.side
                .extend(history_rows(&cell, rep, redis_clock, &events));
            out.latency
                .push(latency::events_row(&cell, rep, &name, &events)?);
            out.rows.push(Row {
                cell,
                trial: rep,
                seed,
                strategy: name,
                skew_ms: st.skew_ms,
                servers: st.servers as u64,
                clocks: st.clocks.clone(),
                offsets_us: offsets_us.clone(),
                load_x: st.load,
                arrivals: st.arrivals.clone(),
                assign: st.assign.clone(),
                capacity: st.capacity,
                rate_per_s: p.rate_per_s,
                duration_ms: st.duration_ms,
                offered: n.offered,
                admitted: n.admitted,
                errors: n.errors,
                achieved_rate_per_s: ach.achieved_rate_per_s,
                lateness_p99_us: ach.lateness_p99_us,
                first_error: n.first_error.unwrap_or_default(),
                start_unix_us: Some(tc.start_unix_us),
            });
        }
        Ok(out)
    }
}

pub async fn run(ctx: &RunContext) -> Result<()> {
    let p: Params = ctx.params()?;
    let names = ctx.strategies(&p.strategies);
    let settings = settings(&p)?;
    let fleet = testbed::server(ctx, p.pin_redis_cpu).await?;
    let strategies: Vec<(String, Arc<dyn Strategy>)> = names
        .iter()
        .map(|n| {
            ctx.build_strategy(n, &Options::default())
                .map(|s| (n.clone(), s))
        })
        .collect::<Result<_>>()?;
    for (_, s) in &strategies {
        fleet.prepare(s.as_ref()).await?;
    }
    let clock_conn = match p.start_after_boundary_ms {
        Some(_) => Some(fleet.conn().await?),
        None => None,
    };
    let mut sweep = Skew {
        p,
        fleet,
        strategies,
        clock_conn,
    };
    sweep::run(ctx, &mut sweep, &settings).await
}
