//! `bursts` (claims A3.1-A3.4): "at most L per window" against traffic
//! patterns, open loop, every strategy. The metric (the most admitted in any
//! sliding window of one window length) is recomputed by the analysis from
//! the admission history (`bursts-history.csv`), so this file only sends the
//! arrivals and records every decision.
//!
//! Patterns (each a function of the trial's variant):
//! - `straddle`: a burst of L starting `lead_ms` before a window boundary
//!   and another of L `after_ms` after it. The boundary is Redis's: TIME is
//!   read, the next boundary computed on Redis's clock and mapped to ours.
//! - `quiet-then-burst`: traffic at the limit for `warm_ms`, at least
//!   `quiet_ms` of silence, then a flood at `flood_rate` x the limit for
//!   `flood_ms`, starting `phase_ms` after a window boundary.
//! - `burst-then-sustained`: a burst of L at `phase_ms` after a boundary,
//!   then steady traffic at `rate` x the limit for `sustained_ms`.
//! - `steady` / `poisson`: evenly spaced / random arrivals at `rate` x the
//!   limit for `steady_ms`.
//! - `anchored`: one request at a moment of our choosing (`anchored_first_at`
//!   of a window after a boundary of Redis's clock, one variant each), then
//!   a burst of L `lead_ms` before one window after it, another burst of L
//!   `anchored_after_ms` after that edge, and then steady traffic at
//!   `anchored_tail_x` times the limit's rate for `anchored_tail_ms` (0.3
//!   of a window unless set). A window
//!   anchored at a key's first request has its edge there, which the
//!   patterns aligned on Redis's clock never find. A fixed window so
//!   anchored (INCR, then PEXPIRE when the count is 1: the key expires one
//!   window after that request, wherever it fell) admits the second burst:
//!   about 2L across the edge. A sliding-window counter whose windows start
//!   at the key's first request refuses the second burst (the previous
//!   window's count still weighs almost fully) but lets the tail in as that
//!   weight decays: about 1.3L in the window after the first burst (1.9L
//!   with a tail of a whole window). A
//!   sliding log admits L in any window. Not a pattern of the study (no
//!   claim reads it); the scorecard's probe runs it, and its column is the
//!   worst of the variants. `boundary_us` is the anchored edge (the first
//!   request's intended time + one window).
//!
//! Where in the window a burst lands is not stated by the study, so
//! `lead_ms` and `phase_ms` are swept; burst-then-sustained also gets, per
//! sustained rate, a variant whose phase is drawn uniformly from the window
//! for each trial (`uniform_phase_reps` trials), since the study's mean and
//! worst trial imply phases that varied between its trials. Strategies run side by side (one
//! driver pool and one key each) on the same arrival times, unless
//! `parallel = false` or the pattern is in `sequential_patterns`.
//!
//! On the sweep engine a cell is a pattern variant and a trial is one rep:
//! it runs every strategy on the variant's arrivals and returns a row per
//! strategy under the cell id `<strategy>/<variant>` (`Sweep::keys`), with
//! every decision in the `history` side table. A trial killed half way is
//! run again whole; only the rows of strategies not yet committed are kept.

// The analysis half (analyze/) is compiled into limitbench-analysis
// (crates/analysis/src/experiments/mod.rs); it is this experiment's all the same.
pub use limitbench_analysis::experiments::bursts::{analyze, rows};
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::sync::Arc;

use rand::RngExt;
use serde::Deserialize;

pub use rows::{HistoryRow, Row};

use super::decisions::history_rows;
use super::testbed::{self, ms_label};
use super::{RunContext, Spec};
use limitbench_core::clock::Clock;
use limitbench_core::conn::Conn;
use limitbench_base::error::{Error, Result};
use limitbench_core::load::counts::count;
use limitbench_core::load::dispatch::{Assign, open_loop_on};
use limitbench_core::load::schedule::{self, Arrival};
use limitbench_core::load::{Driver, TrialClock};
use crate::run::latency;
use crate::run::seeds::{self, TrialRng, trial_seed};
use crate::run::sweep::{self, Sweep, TrialRows};
use limitbench_core::strategy::{Limit, Options};

/// Its registration (the registry adds its `run` and its analysis half's `analyze`).
// windows of 1 s and more, phases of 50 ms and more: a 10 ms slip is under a fifth of the shortest.
pub const SPEC: Spec = Spec::new("bursts", "A").external().latency_bound(10.0).others_at_most(0.25);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    limit: u64,
    window_ms: u64,
    strategies: Vec<String>,
    patterns: Vec<String>,
    reps: u64,
    /// Driver pool per strategy (requests in flight at most).
    drivers: usize,
    parallel: bool,
    /// Patterns whose strategies run one at a time even when `parallel`
    /// (straddle: so that each burst of L leaves within a few ms).
    sequential_patterns: Vec<String>,
    straddle_lead_ms: Vec<f64>,
    straddle_after_ms: f64,
    phases_ms: Vec<f64>,
    warm_ms: f64,
    quiet_ms: f64,
    flood_rate: f64,
    flood_ms: f64,
    sustained_rates: Vec<f64>,
    /// Burst phases of burst-then-sustained (absent: `phases_ms`).
    sustained_phases_ms: Option<Vec<f64>>,
    /// Trials of the burst-then-sustained variant with a uniform random
    /// phase, per sustained rate (absent or 0: no such variant).
    uniform_phase_reps: Option<u64>,
    sustained_ms: f64,
    steady_rates: Vec<f64>,
    steady_ms: f64,
    /// `anchored`: how long before the anchored edge the first burst goes
    /// (one variant each; absent: a twentieth of the window).
    anchored_lead_ms: Option<Vec<f64>>,
    /// `anchored`: how long after the anchored edge the second burst goes
    /// (absent: 10 ms): after the key has expired, in the next window.
    anchored_after_ms: Option<f64>,
    /// `anchored`: where the first request goes, as a fraction of a window
    /// after a boundary of Redis's clock (one variant each; absent: 0.5).
    anchored_first_at: Option<Vec<f64>>,
    /// `anchored`: the rate of the traffic after the second burst, as a
    /// multiple of the limit's (absent: 2; 0: no such traffic).
    anchored_tail_x: Option<f64>,
    /// `anchored`: how long that traffic lasts (absent: 0.3 of a window,
    /// in which a first-hit sliding counter's decaying weight lets about
    /// 1.3L into one window).
    anchored_tail_ms: Option<f64>,
    /// Pin Redis to the CPU at this position of those the harness was
    /// allowed when it started (absent: not pinned; `testbed::server`).
    pin_redis_cpu: Option<usize>,
}

impl Params {
    fn anchored_leads(&self) -> Vec<f64> {
        self.anchored_lead_ms
            .clone()
            .unwrap_or_else(|| vec![self.window_ms as f64 / 20.0])
    }

    fn anchored_first_at(&self) -> Vec<f64> {
        self.anchored_first_at.clone().unwrap_or_else(|| vec![0.5])
    }
}

/// One arrival schedule, run for several strategies.
#[derive(Debug, Clone)]
struct Variant {
    pattern: String,
    phase_ms: Option<f64>,
    rate_x: Option<f64>,
    /// The phase is drawn uniformly from the window, per trial.
    uniform: bool,
    /// `anchored`: the first request's place after a boundary, a fraction
    /// of a window.
    first_at: Option<f64>,
}

impl Variant {
    fn label(&self) -> String {
        let mut s = self.pattern.clone();
        if self.uniform {
            s += "/phase-uniform";
        } else if let Some(p) = self.phase_ms {
            s += &format!(
                "/{}{}",
                if self.pattern == "straddle" || self.pattern == "anchored" {
                    "lead"
                } else {
                    "phase"
                },
                ms_label(p)
            );
        }
        if let Some(r) = self.rate_x {
            s += &format!("/x{}", ms_label(r));
        }
        if let Some(f) = self.first_at {
            s += &format!("/first{}w", ms_label(f));
        }
        s
    }
}

fn variants(p: &Params) -> Result<Vec<Variant>> {
    let mut v = Vec::new();
    let mk = |pattern: &str, phase_ms, rate_x| Variant {
        pattern: pattern.into(),
        phase_ms,
        rate_x,
        uniform: false,
        first_at: None,
    };
    for pat in &p.patterns {
        match pat.as_str() {
            "straddle" => v.extend(p.straddle_lead_ms.iter().map(|l| mk(pat, Some(*l), None))),
            "anchored" => {
                let tail = p.anchored_tail_x.unwrap_or(2.0);
                for f in p.anchored_first_at() {
                    if !(0.0..1.0).contains(&f) {
                        return Err(Error::Other(format!(
                            "bursts: anchored_first_at {f} is not a fraction of a window in [0, 1)"
                        )));
                    }
                    v.extend(p.anchored_leads().iter().map(|l| Variant {
                        first_at: Some(f),
                        ..mk(pat, Some(*l), (tail > 0.0).then_some(tail))
                    }));
                }
            }
            "quiet-then-burst" => v.extend(
                p.phases_ms
                    .iter()
                    .map(|ph| mk(pat, Some(*ph), Some(p.flood_rate))),
            ),
            "burst-then-sustained" => {
                let phases = p.sustained_phases_ms.as_ref().unwrap_or(&p.phases_ms);
                for r in &p.sustained_rates {
                    v.extend(phases.iter().map(|ph| mk(pat, Some(*ph), Some(*r))));
                    if p.uniform_phase_reps.unwrap_or(0) > 0 {
                        v.push(Variant {
                            uniform: true,
                            ..mk(pat, None, Some(*r))
                        });
                    }
                }
            }
            "steady" | "poisson" => {
                v.extend(p.steady_rates.iter().map(|r| mk(pat, None, Some(*r))))
            }
            other => {
                return Err(Error::Other(format!(
                    "bursts: unknown pattern `{other}` (straddle, quiet-then-burst, burst-then-sustained, steady, poisson, anchored)"
                )));
            }
        }
    }
    Ok(v)
}

/// The arrival times (us on `tc`) of one trial, and the boundary used.
fn schedule_of(
    p: &Params,
    v: &Variant,
    tc: &TrialClock,
    offset_us: i64,
    rng: &mut TrialRng,
) -> (Vec<Arrival>, Option<i64>) {
    let per_s = p.limit as f64 * 1000.0 / p.window_ms as f64;
    let ms = |x: f64| (x * 1000.0) as i64;
    let start = tc.us() + 50_000;
    let l = p.limit;
    match v.pattern.as_str() {
        "straddle" => {
            let lead = ms(v.phase_ms.unwrap_or(0.0));
            let b = testbed::next_boundary(tc, offset_us, p.window_ms, lead + 100_000);
            let a = schedule::merge(vec![
                schedule::burst(l, b - lead, 0, ""),
                schedule::burst(l, b + ms(p.straddle_after_ms), 0, ""),
            ]);
            (a, Some(b))
        }
        "anchored" => {
            let w = p.window_ms as i64 * 1000;
            let lead = ms(v.phase_ms.unwrap_or(0.0));
            let after = ms(p.anchored_after_ms.unwrap_or(10.0));
            // The first time at least 50 ms ahead that lies `first_at` of a
            // window after a boundary of Redis's clock (at most one window's
            // wait, not a boundary's wait and then the offset).
            let at = (w as f64 * v.first_at.unwrap_or(0.5)) as i64;
            let b = testbed::next_boundary(tc, offset_us, p.window_ms, 50_000);
            let first = if b - w + at >= tc.us() + 50_000 {
                b - w + at
            } else {
                b + at
            };
            let edge = first + w;
            let mut parts = vec![
                schedule::burst(1, first, 0, ""),
                schedule::burst(l, edge - lead, 0, ""),
                schedule::burst(l, edge + after, 0, ""),
            ];
            if let Some(x) = v.rate_x {
                let rate = per_s * x;
                let gap = (1e6 / rate) as i64;
                let tail = ms(p.anchored_tail_ms.unwrap_or(p.window_ms as f64 * 0.3));
                parts.push(schedule::steady(rate, edge + after + gap, tail, ""));
            }
            (schedule::merge(parts), Some(edge))
        }
        "quiet-then-burst" => {
            let warm = schedule::steady(per_s, start, ms(p.warm_ms), "");
            let b = testbed::next_boundary(
                tc,
                offset_us,
                p.window_ms,
                ms(p.warm_ms + p.quiet_ms) + 50_000,
            );
            let at = b + ms(v.phase_ms.unwrap_or(0.0));
            let flood = schedule::steady(per_s * v.rate_x.unwrap_or(1.0), at, ms(p.flood_ms), "");
            (schedule::merge(vec![warm, flood]), Some(b))
        }
        "burst-then-sustained" => {
            let b = testbed::next_boundary(tc, offset_us, p.window_ms, 50_000);
            let at = b + ms(v.phase_ms.unwrap_or(0.0));
            let rate = per_s * v.rate_x.unwrap_or(1.0);
            let gap = (1e6 / rate) as i64;
            (
                schedule::merge(vec![
                    schedule::burst(l, at, 0, ""),
                    schedule::steady(rate, at + gap, ms(p.sustained_ms), ""),
                ]),
                Some(b),
            )
        }
        "steady" => (
            schedule::steady(per_s * v.rate_x.unwrap_or(1.0), start, ms(p.steady_ms), ""),
            None,
        ),
        _ => (
            schedule::poisson(
                per_s * v.rate_x.unwrap_or(1.0),
                start,
                ms(p.steady_ms),
                "",
                rng,
            ),
            None,
        ),
    }
}

/// Cross-cell state: the strategies, a driver pool per strategy (kept for
/// the whole run), and a connection to read Redis's clock with.
struct Bursts {
    p: Params,
    strategies: Vec<String>,
    pools: BTreeMap<String, Vec<Driver>>,
    /// Per strategy: does it report Redis's clock (`Info::reports_redis_time`)?
    redis_clock: BTreeMap<String, bool>,
    clock_conn: Conn,
}

impl Bursts {
    /// The cell id of one strategy's rows on variant `v`.
    fn key(strategy: &str, v: &Variant) -> String {
        format!("{strategy}/{}", v.label())
    }

    /// Run `batch` side by side on one schedule of `v` (its own trial clock,
    /// boundary and Redis clock offset), and record each strategy's row and
    /// history. Every batch of a trial draws from the same seed, so
    /// strategies run one at a time still get the same random arrivals.
    async fn batch(
        &mut self,
        ctx: &RunContext,
        v: &Variant,
        batch: &[String],
        rep: u64,
        out: &mut TrialRows<Row, HistoryRow>,
    ) -> Result<()> {
        let p = &self.p;
        let limit = Limit::per_window(p.limit, p.window_ms);
        let seed = trial_seed(ctx.seed, &v.label(), rep);
        let mut rng = seeds::rng(seed);
        // A uniform-phase variant draws this trial's phase first.
        let drawn;
        let v = if v.uniform {
            drawn = Variant {
                phase_ms: Some(rng.random_range(0..p.window_ms * 1000) as f64 / 1000.0),
                ..v.clone()
            };
            &drawn
        } else {
            v
        };
        let offset = testbed::redis_clock_offset(&mut self.clock_conn).await?;
        let tc = TrialClock::start();
        let (times, boundary) = schedule_of(p, v, &tc, offset, &mut rng);
        let mut tasks = Vec::new();
        for name in batch {
            let cell = Self::key(name, v);
            let client = ctx.fresh_client("burst", &cell, rep);
            let arrivals = schedule::for_client(&times, &client);
            let drivers = self.pools.remove(name).expect("a pool per strategy");
            let load = open_loop_on(drivers, Arc::new(arrivals), Assign::Pool, limit, tc);
            tasks.push((name.clone(), cell, tokio::spawn(load)));
        }
        for (name, cell, t) in tasks {
            let (events, back) = t
                .await
                .map_err(|e| Error::Other(format!("bursts: load task failed: {e}")))??;
            self.pools.insert(name.clone(), back);
            let n = count(&events);
            let hist = history_rows(&cell, rep, self.redis_clock[&name], &events);
            let redis_clock = hist
                .iter()
                .filter(|h| h.admitted)
                .all(|h| h.redis_time_us.is_some());
            let ach = schedule::achieved_by(&events);
            let (times, _) = limitbench_analysis::window::admission_times(&hist, true);
            let (most, _) =
                limitbench_analysis::window::max_in_window(&times, p.window_ms as i64 * 1000);
            out.side.extend(hist);
            out.latency
                .push(latency::events_row(&cell, rep, &name, &events)?);
            out.rows.push(Row {
                cell,
                trial: rep,
                seed,
                strategy: name,
                pattern: v.pattern.clone(),
                phase_ms: v.phase_ms,
                phase_draw: if v.uniform { "uniform" } else { "fixed" }.into(),
                rate_x: v.rate_x,
                limit: p.limit,
                window_ms: p.window_ms,
                boundary_us: boundary,
                redis_clock_offset_us: offset,
                offered: n.offered,
                admitted: n.admitted,
                errors: n.errors,
                clock: if redis_clock { "redis" } else { "reply" }.into(),
                lateness_p99_us: ach.lateness_p99_us,
                lateness_max_us: ach.lateness_max_us,
                drivers: p.drivers as u64,
                parallel_strategies: batch.len() as u64,
                first_error: n.first_error.unwrap_or_default(),
                max_in_window: Some(most as u64),
            });
        }
        Ok(())
    }
}

/// A cell is a pattern variant; one trial runs every strategy on it and
/// commits a row per strategy, under the cell ids `<strategy>/<variant>`.
impl Sweep for Bursts {
    type Cell = Variant;
    type Setup = ();
    type Row = Row;
    type Side = HistoryRow;
    const SIDE: Option<&'static str> = Some("history");
    const TIMED: bool = true;

    fn cell_id(&self, v: &Variant) -> String {
        v.label()
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
    fn trials(&self, v: &Variant) -> u64 {
        if v.uniform {
            self.p.uniform_phase_reps.unwrap_or(0)
        } else {
            self.p.reps
        }
    }

    fn keys(&self, v: &Variant) -> Vec<String> {
        self.strategies.iter().map(|s| Self::key(s, v)).collect()
    }

    async fn setup(&mut self, _ctx: &RunContext, _v: &Variant) -> Result<()> {
        Ok(())
    }

    async fn trial(
        &mut self,
        ctx: &RunContext,
        v: &Variant,
        _setup: &mut (),
        rep: u64,
    ) -> Result<TrialRows<Row, HistoryRow>> {
        // Side by side, or one strategy at a time.
        let batches: Vec<Vec<String>> =
            if self.p.parallel && !self.p.sequential_patterns.contains(&v.pattern) {
                vec![self.strategies.clone()]
            } else {
                self.strategies.iter().map(|s| vec![s.clone()]).collect()
            };
        let mut out = TrialRows::with_side(Vec::new(), Vec::new());
        for batch in batches.iter().filter(|b| !b.is_empty()) {
            self.batch(ctx, v, batch, rep, &mut out).await?;
        }
        Ok(out)
    }
}

pub async fn run(ctx: &RunContext) -> Result<()> {
    let p: Params = ctx.params()?;
    let strategies = ctx.strategies(&p.strategies);
    let variants = variants(&p)?;
    let fleet = testbed::server(ctx, p.pin_redis_cpu).await?;
    let mut pools: BTreeMap<String, Vec<Driver>> = BTreeMap::new();
    let mut redis_clock = BTreeMap::new();
    for name in &strategies {
        let s = ctx.build_strategy(name, &Options::default())?;
        redis_clock.insert(name.clone(), s.info().reports_redis_time);
        fleet.prepare(s.as_ref()).await?;
        let d =
            testbed::drivers(fleet.primary_addr(), &s, &vec![Clock::default(); p.drivers]).await?;
        pools.insert(name.clone(), d);
    }
    let clock_conn = fleet.conn().await?;
    let mut sweep = Bursts {
        p,
        strategies,
        pools,
        redis_clock,
        clock_conn,
    };
    sweep::run(ctx, &mut sweep, &variants).await
}
