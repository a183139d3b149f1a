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

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::study_a_common as common;
use super::{Experiment, RunContext};
use crate::clock::Clock;
use crate::error::Result;
use crate::load::closed_loop;
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

#[derive(Debug, Serialize, Deserialize, Clone)]
pub struct Row {
    pub cell: String,
    pub trial: u64,
    pub seed: u64,
    pub strategy: String,
    /// Empty for the baseline.
    pub retry_budget: Option<u32>,
    pub backoff_us: Option<u64>,
    pub budget_includes_first: Option<bool>,
    pub workers: u64,
    pub target_rtt_ms: f64,
    pub rtt_median_us: f64,
    pub rtt_p99_us: f64,
    pub limit: u64,
    pub offered: u64,
    pub admitted: u64,
    pub refused_by_limit: u64,
    pub refused_by_retries: u64,
    pub aborts: u64,
    pub errors: u64,
    pub round_trips: u64,
    pub wall_ms: f64,
    pub first_error: String,
}

struct Cell {
    strategy: String,
    opts: Option<(u32, u64, bool)>,
    rtt_ms: f64,
}

impl Cell {
    fn id(&self) -> String {
        let rtt = common::ms_label(self.rtt_ms);
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

async fn run(ctx: &RunContext) -> Result<()> {
    let p: Params = ctx.params()?;
    let cells = cells(ctx, &p);
    let fleet = common::server(ctx, p.pin_redis_cpu).await?;
    let mut log = ctx.trial_log(&[])?;
    let mut progress = ctx.progress(cells.len() as u64 * p.trials);
    let mut round_trips = common::RoundTrips::default();
    let limit = Limit::per_window(p.limit, p.window_ms);
    for cell in &cells {
        let id = cell.id();
        let todo: Vec<u64> = (0..p.trials).filter(|t| !log.is_done(&id, *t)).collect();
        progress.skip(p.trials - todo.len() as u64);
        if todo.is_empty() {
            continue;
        }
        let r = round_trips
            .get(ctx, fleet.primary_addr(), cell.rtt_ms, p.calibrate_samples)
            .await?;
        let s = ctx.build_strategy(&cell.strategy, &cell.options())?;
        common::prepare(&fleet, &s).await?;
        let mut drivers = common::drivers(r.addr, &s, &vec![Clock::default(); p.workers]).await?;
        let measured = r.measure(p.rtt_samples).await?;
        for trial in todo {
            common::clear_of_boundary(p.window_ms, Duration::from_secs(60)).await;
            let client = common::fresh_client("retr", &id, trial);
            // Exactly L requests in all, shared by the workers.
            let (events, _tc, back) =
                closed_loop(drivers, &client, limit, 1, p.limit, None).await?;
            drivers = back;
            let n = common::count(&events);
            let row = Row {
                cell: id.clone(),
                trial,
                seed: common::trial_seed(ctx.seed, &id, trial),
                strategy: cell.strategy.clone(),
                retry_budget: cell.opts.map(|o| o.0),
                backoff_us: cell.opts.map(|o| o.1),
                budget_includes_first: cell.opts.map(|o| o.2),
                workers: p.workers as u64,
                target_rtt_ms: cell.rtt_ms,
                rtt_median_us: measured.rtt_median_us,
                rtt_p99_us: measured.rtt_p99_us,
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
            };
            log.commit(&id, trial, &[row])?;
            progress.inc(&id);
        }
    }
    progress.finish();
    Ok(())
}
