//! `baseline` (beyond the studies; no claims): the smallest complete
//! experiment, and the reference point for every latency in the report: the
//! round trip of a bare PING and of one decision per strategy, one
//! connection, loopback, no contention.
//!
//! It is also the worked example of adding an experiment
//! (docs/adding-an-experiment.md): this folder (`mod.rs`: parameters, cells,
//! one trial; `analyze/`: the analysis half, compiled by limitbench-analysis:
//! `rows.rs` the rows, `mod.rs` the section, `scorecard.rs` its scorecard
//! column), `experiments/baseline.toml` (sizes) and its name in the one
//! list (`for_each_experiment!`). The sweep engine does resume, progress
//! and commits.
//!
//! Its probe (`[probe]` in the TOML) fills the scorecard's `works` column:
//! a strategy's first decisions succeed (`analyze/scorecard.rs`).

// The analysis half (analyze/) is compiled into limitbench-analysis
// (crates/analysis/src/experiments/mod.rs); it is this experiment's all the same.
pub use limitbench_analysis::experiments::baseline::{analyze, rows};

use std::time::Instant;

use serde::Deserialize;

pub use rows::Row;

use super::testbed;
use super::{RunContext, Spec};
use limitbench_core::clock::Clock;
use limitbench_base::error::Result;
use limitbench_core::fleet::Fleet;
use limitbench_core::load::{Driver, closed_loop};
use crate::run::latency;
use crate::run::seeds::trial_seed;
use crate::run::sweep::{self, NoSide, Sweep, TrialRows};
use limitbench_base::stats::quantile;
use limitbench_core::strategy::{Limit, Options};

/// Its registration (the registry adds its `run` and its analysis half's `analyze`).
// its round trips are the reference other ratios divide by: alone.
pub const SPEC: Spec = Spec::new("baseline", "beyond").external().others_at_most(0.1);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    /// Strategies to time besides PING (`--strategy` overrides).
    strategies: Vec<String>,
    samples: u64,
    trials: u64,
}

/// Cross-cell state: the server.
struct Baseline {
    p: Params,
    fleet: Fleet,
}

/// A cell's one driver (None for PING).
struct CellSetup {
    driver: Option<Driver>,
}

impl Sweep for Baseline {
    type Cell = String;
    type Setup = CellSetup;
    type Row = Row;
    type Side = NoSide;
    const TIMED: bool = true;

    fn cell_id(&self, target: &String) -> String {
        target.clone()
    }

    fn trials(&self, _: &String) -> u64 {
        self.p.trials
    }

    fn reject(&self, _: &String, out: &TrialRows<Row>) -> Option<String> {
        let r = out.rows.first()?;
        super::decisions::reject_failed(&r.target, r.errors, r.samples, &r.first_error)
    }

    async fn setup(&mut self, ctx: &RunContext, target: &String) -> Result<CellSetup> {
        if target == "PING" {
            return Ok(CellSetup { driver: None });
        }
        let s = ctx.build_strategy(target, &Options::default())?;
        self.fleet.prepare(s.as_ref()).await?;
        let mut d = testbed::drivers(self.fleet.primary_addr(), &s, &[Clock::default()]).await?;
        Ok(CellSetup { driver: d.pop() })
    }

    async fn trial(
        &mut self,
        ctx: &RunContext,
        target: &String,
        setup: &mut CellSetup,
        trial: u64,
    ) -> Result<TrialRows<Row>> {
        let n = self.p.samples;
        let (mut us, errors, first_error, hist) = match setup.driver.take() {
            None => {
                let mut c = self.fleet.conn().await?;
                let mut h = limitbench_base::hdr::new_histogram();
                let mut us = Vec::with_capacity(n as usize);
                for _ in 0..n {
                    let t = Instant::now();
                    c.call("", &limitbench_core::args!["PING"]).await?;
                    let d = t.elapsed().as_secs_f64() * 1e6;
                    h.saturating_record(d.max(1.0) as u64);
                    us.push(d);
                }
                (us, 0, String::new(), h)
            }
            Some(d) => {
                // A limit far above the samples: every decision admits.
                let client = ctx.fresh_client("base", target, trial);
                let (events, _, mut back) = closed_loop(
                    vec![d],
                    &client,
                    Limit::per_window(n * 10, 3_600_000),
                    1,
                    n,
                    None,
                )
                .await?;
                setup.driver = back.pop();
                let us = events
                    .iter()
                    .map(|e| (e.replied_us - e.sent_us) as f64)
                    .collect();
                let errors = events.iter().filter(|e| e.error.is_some()).count() as u64;
                let first_error = events
                    .iter()
                    .find_map(|e| e.error.clone())
                    .unwrap_or_default();
                (us, errors, first_error, latency::from_events(&events))
            }
        };
        us.sort_by(f64::total_cmp);
        let row = Row {
            cell: target.clone(),
            trial,
            seed: trial_seed(ctx.seed, target, trial),
            target: target.clone(),
            samples: us.len() as u64,
            round_trip_median_us: quantile(&us, 0.5),
            round_trip_p99_us: quantile(&us, 0.99),
            errors,
            first_error,
        };
        Ok(TrialRows::one(row).with_latency(latency::row(target, trial, target, &hist)?))
    }
}

pub async fn run(ctx: &RunContext) -> Result<()> {
    let p: Params = ctx.params()?;
    let mut cells = vec!["PING".to_string()];
    cells.extend(ctx.strategies(&p.strategies));
    let fleet = testbed::server(ctx, None).await?;
    sweep::run(ctx, &mut Baseline { p, fleet }, &cells).await
}
