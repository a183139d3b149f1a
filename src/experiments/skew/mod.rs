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
//! How many servers there are, whether their offsets are evenly spread or
//! random, and how long the load lasts are not stated by the study:
//! `servers`, `clocks`, `durations_ms` and `assign` (random or
//! round-robin servers) are swept.

pub mod analyze;

use std::sync::Arc;

use rand::{RngExt, SeedableRng};
use serde::{Deserialize, Serialize};

use super::study_a_common::{self as common, HistoryRow};
use super::{Experiment, RunContext};
use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::load::TrialClock;
use crate::load::schedule;
use crate::load::study_a_load::{Assign, open_loop_on};
use crate::strategy::{Limit, Options};

pub const EXPERIMENT: Experiment = Experiment {
    name: "skew",
    study: "A",
    allows_external: true,
    run: |ctx: &RunContext| Box::pin(run(ctx)),
    analyze: analyze::analyze,
};

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
    pin_redis_cpu: Option<usize>,
}

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
}

#[derive(Debug, Serialize, Deserialize, Clone)]
pub struct Row {
    pub cell: String,
    pub trial: u64,
    pub seed: u64,
    pub strategy: String,
    pub skew_ms: f64,
    pub servers: u64,
    pub clocks: String,
    /// The servers' clock offsets, us, `;`-separated.
    pub offsets_us: String,
    pub load_x: f64,
    pub arrivals: String,
    /// `random` or `round-robin`: which server sends each arrival.
    pub assign: String,
    pub capacity: u64,
    pub rate_per_s: f64,
    pub duration_ms: f64,
    pub offered: u64,
    pub admitted: u64,
    pub errors: u64,
    pub achieved_rate_per_s: f64,
    pub lateness_p99_us: f64,
    pub first_error: String,
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
}

impl Setting {
    fn label(&self) -> String {
        format!(
            "S{}/W{}/{}/x{}/{}/T{}{}",
            common::ms_label(self.skew_ms),
            self.servers,
            self.clocks,
            common::ms_label(self.load),
            self.arrivals,
            common::ms_label(self.duration_ms),
            if self.assign == "random" { "" } else { "/rr" }
        )
    }
}

async fn run(ctx: &RunContext) -> Result<()> {
    let p: Params = ctx.params()?;
    let strategies = ctx.strategies(&p.strategies);
    let mut settings: Vec<Setting> = Vec::new();
    for g in &p.grids {
        for a in &g.arrivals {
            for c in &g.clocks {
                if !["spread", "random"].contains(&c.as_str())
                    || !["poisson", "steady"].contains(&a.as_str())
                {
                    return Err(Error::Other(format!(
                        "skew: clocks must be spread|random and arrivals poisson|steady (got {c}, {a})"
                    )));
                }
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
                            for &s in &g.skews_ms {
                                let st = Setting {
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
    let fleet = common::server(ctx, p.pin_redis_cpu).await?;
    let mut log = ctx.trial_log(&["history"])?;
    let mut progress = ctx.progress(settings.len() as u64 * p.reps * strategies.len() as u64);
    let limit = Limit::bucket(p.capacity, p.rate_per_s);
    let built: Vec<_> = strategies
        .iter()
        .map(|n| {
            ctx.build_strategy(n, &Options::default())
                .map(|s| (n.clone(), s))
        })
        .collect::<Result<_>>()?;
    for (_, s) in &built {
        common::prepare(&fleet, s).await?;
    }
    for st in &settings {
        for rep in 0..p.reps {
            let todo: Vec<_> = built
                .iter()
                .filter(|(n, _)| !log.is_done(&format!("{n}/{}", st.label()), rep))
                .cloned()
                .collect();
            progress.skip((built.len() - todo.len()) as u64);
            if todo.is_empty() {
                continue;
            }
            let seed = common::trial_seed(ctx.seed, &st.label(), rep);
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            let spread_us = (st.skew_ms * 1000.0) as i64;
            let clocks = if st.clocks == "spread" {
                Clock::spread(st.servers, spread_us)
            } else {
                Clock::random(st.servers, spread_us, &mut rng)
            };
            let rate = p.rate_per_s * st.load;
            let dur = (st.duration_ms * 1000.0) as i64;
            let times = if st.arrivals == "steady" {
                schedule::steady(rate, 50_000, dur, "")
            } else {
                schedule::poisson(rate, 50_000, dur, "", &mut rng)
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
            let mut pools = Vec::new();
            for (_, s) in &todo {
                pools.push(common::drivers(fleet.primary_addr(), s, &clocks).await?);
            }
            // The clock starts once every connection is open.
            let tc = TrialClock::start();
            let mut tasks = Vec::new();
            for ((name, _), drivers) in todo.iter().zip(pools) {
                let cell = format!("{name}/{}", st.label());
                let client = common::fresh_client("skew", &cell, rep);
                let arrivals = schedule::for_client(&times, &client);
                tasks.push((
                    name.clone(),
                    cell,
                    tokio::spawn(open_loop_on(
                        drivers,
                        Arc::new(arrivals),
                        Assign::Fixed(assign.clone()),
                        limit,
                        tc,
                    )),
                ));
            }
            for (name, cell, t) in tasks {
                let (events, _) = t
                    .await
                    .map_err(|e| Error::Other(format!("skew: load task failed: {e}")))??;
                let n = common::count(&events);
                let ach = schedule::achieved(
                    &events
                        .iter()
                        .map(|e| (e.intended_us, e.sent_us))
                        .collect::<Vec<_>>(),
                );
                log.side::<HistoryRow>(
                    "history",
                    &common::history_rows(&cell, rep, &name, &events),
                )?;
                let row = Row {
                    cell: cell.clone(),
                    trial: rep,
                    seed,
                    strategy: name.clone(),
                    skew_ms: st.skew_ms,
                    servers: st.servers as u64,
                    clocks: st.clocks.clone(),
                    offsets_us: clocks
                        .iter()
                        .map(|c| c.offset_us.to_string())
                        .collect::<Vec<_>>()
                        .join(";"),
                    load_x: st.load,
                    arrivals: st.arrivals.clone(),
                    assign: st.assign.clone(),
                    capacity: p.capacity,
                    rate_per_s: p.rate_per_s,
                    duration_ms: st.duration_ms,
                    offered: n.offered,
                    admitted: n.admitted,
                    errors: n.errors,
                    achieved_rate_per_s: ach.achieved_rate_per_s,
                    lateness_p99_us: ach.lateness_p99_us,
                    first_error: n.first_error.unwrap_or_default(),
                };
                log.commit(&cell, rep, &[row])?;
                progress.inc(&cell);
            }
        }
    }
    progress.finish();
    Ok(())
}
