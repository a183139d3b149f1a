//! The experiments of a session, in order or in lanes: CPU-bound ones
//! alone, latency-bound ones split into N lanes (their cells round robin,
//! each lane with its own servers, keys and proxies), N lanes at a time.
//! Each experiment's time and outcome go into the manifest.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Result;

use super::prepare::SharedManifest;
use super::request::RunRequest;
use crate::experiments::{self, Experiment, RunContext};
use crate::run::parallel::{Bound, Job, Part};
use crate::run::record::RunDir;
use crate::run::shard::Shard;
use limitbench_core::fleet::RedisBinary;

/// One experiment's (or one experiment's lanes') name, seconds and
/// outcome (`done` or `failed: ...`).
pub(super) type Timing = (&'static str, f64, String);

/// What every experiment of a session shares.
pub(super) struct Lanes<'a> {
    pub run: &'a RunDir,
    pub manifest: &'a SharedManifest,
    pub request: &'a RunRequest,
    pub experiments_dir: PathBuf,
    pub redis: Option<RedisBinary>,
    pub redis_url: Option<SocketAddr>,
    pub shard: Option<Shard>,
}

impl Lanes<'_> {
    /// Every experiment of `names`, `lanes` latency-bound ones at a time
    /// (1: all in order); their timings in the order they are reported.
    pub async fn run_all(&self, names: &[&'static str], lanes: usize) -> Result<Vec<Timing>> {
        let experiments: Vec<&'static Experiment> = names
            .iter()
            .map(|n| experiments::find(n))
            .collect::<Result<_, _>>()?;
        let mut timings = Vec::new();
        if lanes <= 1 {
            for d in &experiments {
                timings.push(self.one(d, None, None).await?);
            }
            return Ok(timings);
        }
        // CPU-bound experiments alone, in order; an experiment with
        // CPU-bound cells among latency-bound ones runs those here too, in
        // its place in the order.
        let mut alone_part: BTreeMap<&str, (f64, String)> = Default::default();
        for d in &experiments {
            if d.bound == Bound::Cpu {
                timings.push(self.one(d, None, None).await?);
            } else if d.cpu_cells.is_some() {
                let (name, secs, outcome) = self.one(d, None, Some(Part::Cpu)).await?;
                alone_part.insert(name, (secs, outcome));
            }
        }
        timings.extend(self.in_lanes(&experiments, lanes, alone_part).await?);
        Ok(timings)
    }

    /// The latency-bound experiments, each split into `lanes` lanes, that
    /// many lanes at a time; per experiment the slowest lane's time and the
    /// first failure, plus its part that ran alone first.
    async fn in_lanes(
        &self,
        experiments: &[&'static Experiment],
        lanes: usize,
        mut alone_part: BTreeMap<&str, (f64, String)>,
    ) -> Result<Vec<Timing>> {
        let n = lanes as u64;
        let laned: Vec<&'static Experiment> = experiments
            .iter()
            .filter(|d| d.bound != Bound::Cpu)
            .copied()
            .collect();
        let _holds: Vec<_> = laned
            .iter()
            .map(|d| crate::run::record::LaneHold::new(self.run, d.name))
            .collect();
        let jobs: Vec<_> = laned
            .iter()
            .flat_map(|d| (0..n).map(move |k| (*d, Shard { index: k, count: n })))
            .map(|(d, lane)| self.one(d, Some(lane), d.cpu_cells.map(|_| Part::Latency)))
            .collect();
        let mut per: BTreeMap<&str, (f64, String)> = Default::default();
        for r in crate::run::parallel::n_at_a_time(lanes, jobs).await {
            let (name, secs, outcome) = r?;
            let e = per.entry(name).or_insert((0.0, "done".to_string()));
            e.0 = e.0.max(secs);
            if outcome != "done" && e.1 == "done" {
                e.1 = outcome;
            }
        }
        let mut timings = Vec::new();
        for d in laned {
            let (mut secs, mut outcome) = per.remove(d.name).unwrap_or((0.0, "done".into()));
            // The part that ran alone first counts in its time and outcome.
            if let Some((s, o)) = alone_part.remove(d.name) {
                secs += s;
                if o != "done" {
                    outcome = o;
                }
            }
            {
                let mut m = self.manifest.lock().unwrap();
                m.ended_experiment(d.name, secs, &outcome);
                m.save(self.run)?;
            }
            timings.push((d.name, secs, outcome));
        }
        Ok(timings)
    }

    /// One experiment: its context, its run, its time and outcome in the
    /// manifest. A lane (Some) is one of several concurrent runs of a
    /// latency-bound experiment over its part of the cells; the manifest's
    /// start is the first lane's and its end is written once all lanes
    /// ended (`in_lanes`). `part`: of an experiment with CPU-bound cells
    /// among latency-bound ones, the CPU part runs alone and starts its
    /// manifest entry, and the lanes of the rest end it.
    fn one(
        &self,
        d: &'static Experiment,
        lane: Option<Shard>,
        part: Option<Part>,
    ) -> Job<'_, Result<Timing>> {
        Box::pin(async move {
            let ctx = self.context(d, lane, part)?;
            let floor = self.floor(d);
            if lane.is_none_or(|l| l.index == 0) && part != Some(Part::Latency) {
                let mut m = self.manifest.lock().unwrap();
                m.started_experiment(d.name, &ctx.params);
                m.note(
                    d.name,
                    "bound",
                    serde_json::to_value(d.bound).unwrap_or_default(),
                );
                m.note(d.name, "others_max_cores", d.others_max_cores.into());
                if let Some(l) = lane {
                    m.note(d.name, "lanes", l.count.into());
                }
                if floor > 0 {
                    m.note(d.name, "trial_floor", floor.into());
                }
                if let Some(cells) = self.request.cell_floors.get(d.name) {
                    m.note(
                        d.name,
                        "cell_floors",
                        serde_json::to_value(cells).unwrap_or_default(),
                    );
                }
                m.save(self.run)?;
            }
            let t = std::time::Instant::now();
            // The noise sampler attributes this run's processes to it
            // (run::noise: a lane's servers are beside every other lane).
            let label = match (lane, part) {
                (Some(l), _) => format!("{} lane {}/{}", d.name, l.index + 1, l.count),
                (None, Some(Part::Cpu)) => format!("{} cpu part", d.name),
                (None, _) => d.name.to_string(),
            };
            let out = crate::run::noise::lane(label, (d.run)(&ctx)).await;
            let secs = t.elapsed().as_secs_f64();
            let outcome = match &out {
                Ok(()) => "done".to_string(),
                Err(e) => {
                    eprintln!("limitbench: experiment {} failed: {e}", d.name);
                    format!("failed: {e}")
                }
            };
            if lane.is_none() && part.is_none() {
                let mut m = self.manifest.lock().unwrap();
                m.ended_experiment(d.name, secs, &outcome);
                m.save(self.run)?;
            }
            Ok((d.name, secs, outcome))
        })
    }

    /// The least trials per cell of experiment `d` (0: its size's count).
    fn floor(&self, d: &Experiment) -> u64 {
        self.request.trial_floors.get(d.name).copied().unwrap_or(0)
    }

    /// The run context of experiment `d` (of one lane, of one part).
    fn context(
        &self,
        d: &'static Experiment,
        lane: Option<Shard>,
        part: Option<Part>,
    ) -> Result<RunContext> {
        let a = self.request;
        let mut c = RunContext::new(
            d.name,
            self.run.clone(),
            a.size,
            a.seed,
            a.strategy.clone(),
            a.dir.clone(),
            self.redis.clone(),
            self.redis_url,
            &self.experiments_dir,
            self.manifest.clone(),
        )?;
        c.stall_after = a.stall_after;
        c.trial_floor = self.floor(d);
        c.cell_floors = self
            .request
            .cell_floors
            .get(d.name)
            .cloned()
            .unwrap_or_default();
        let bound = match part {
            Some(Part::Cpu) => Bound::Cpu,
            _ => d.bound,
        };
        let split = part.zip(d.cpu_cells);
        Ok(c.with_shard(self.shard)
            .with_lane(lane)
            .with_bound(bound, d.others_max_cores)
            .with_part(split))
    }
}
