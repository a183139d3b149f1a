//! The scorecard: every strategy against every property, side by side
//! (`limitbench scorecard`), measured by the experiments themselves.
//!
//! The scorecard measures nothing of its own. Each property is a column
//! that an experiment's probe fills: the experiment's own `run`, on the few
//! cells of its `[probe]` table (`experiments/<name>.toml`), for one
//! strategy, through the sweep engine like any run, into a run folder of
//! its own (`<scorecard>/probes/<strategy>/`, CSVs and manifest kept). The
//! rows are then judged by the experiment's analysis half
//! (`src/experiments/<name>/analyze/scorecard.rs`, in the analysis crate) on
//! a stated threshold: `pass`, `warn` or `fail`; or the cell is `not-run` with
//! the reason (too slow for the size, needs control of the servers) or
//! `error` with the cause (a trial the experiment did not accept, a server
//! that died). A property is so measured one way, wherever it is reported:
//! fix the experiment and the scorecard follows.
//!
//! The first column, `works`, is the `baseline` experiment's probe (one
//! decision); a strategy that fails it gets an `error` row and the rest
//! `not-run`: no crash. This module only schedules probes and writes the
//! table: it neither judges nor drives load (tests/layering.rs).
//!
//! Layout:
//! - this file: the cells, the targets (our own servers or a Redis you
//!   run), the battery of one strategy (its probes in the columns' order);
//! - `properties.rs`: the columns, and which experiment's probe fills which
//!   (and when it runs);
//! - `probe.rs`: running one experiment's probe for one strategy;
//! - `output.rs`: `scorecard.csv`, `scorecard.md`, `scorecard.svg`,
//!   `scorecard.json`;
//! - `lanes.rs`: several strategies at once (`--parallel`): which probe
//!   ran beside which;
//! - `target.rs`: a Redis you run (`--redis-url`, `--cluster-url`): its INFO,
//!   the key prefix check and the clean-up.

pub mod lanes;
pub mod output;
pub mod probe;
pub mod properties;
pub mod target;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::run::Size;
use crate::run::context::SharedFleets;
use limitbench_analysis::scorecard::{CellOutcome, CellVerdict, Declared};
use limitbench_analysis::scorecard::{ColumnOutcome, ProbeRows};
use limitbench_base::error::{Error, Result};
use limitbench_core::fleet::RedisBinary;
use limitbench_core::strategy::{self, Options, Strategy};
use properties::WORKS;

pub use properties::PROPERTIES;
pub use target::External;

/// One (strategy, property) cell: a row of `scorecard.csv`.
#[derive(Debug, Clone, Serialize)]
pub struct ScorecardCell {
    pub strategy: String,
    pub property: &'static str,
    pub value: Option<f64>,
    pub unit: &'static str,
    pub threshold: String,
    pub verdict: CellVerdict,
    pub detail: String,
}

/// Where the battery runs.
pub enum ScorecardServer {
    /// Servers the harness starts (loopback, full control).
    Own(RedisBinary),
    /// A Redis (or cluster) you run: only the experiments that need no
    /// control of the servers.
    External(External),
}

/// What to score and how.
pub struct Config {
    pub strategies: Vec<String>,
    pub dir: Option<PathBuf>,
    pub size: Size,
    pub target: ScorecardServer,
    /// Every client id (and so every key) the battery writes contains it.
    pub key_prefix: String,
    /// The scorecard's folder: the probes' run folders go in `probes/`.
    pub out: PathBuf,
    /// Where the experiment files (and their `[probe]` tables) are.
    pub experiments_dir: PathBuf,
    /// The promise columns' limit and window (ms) in place of the bursts
    /// probe table's (`--limit`, `--window`).
    pub promise_limit: Option<u64>,
    pub promise_window_ms: Option<u64>,
    /// Manifests of the strategy folders that did not load: (file, error).
    /// Each is a row of its own, `works` = error with the cause.
    pub broken: Vec<(String, String)>,
    /// Strategies whose lane probes run at once (`--parallel`; 1: one
    /// strategy after another, every probe in the columns' order). Only on
    /// servers of our own: with a Redis you run it is 1 (`lanes.rs`).
    pub lanes: usize,
}

impl Config {
    /// The lanes this scorecard runs in: 1 on a Redis you run.
    pub fn lanes(&self) -> usize {
        match self.target {
            ScorecardServer::Own(_) => self.lanes.max(1),
            ScorecardServer::External(_) => 1,
        }
    }
}

/// One strategy's battery, timed.
#[derive(Debug, Clone, Serialize)]
pub struct StrategyResult {
    pub strategy: String,
    pub clock: String,
    /// The sum of its parts: its start (folder, server identity) and each
    /// of its probes. In lanes its lane probes ran beside other
    /// strategies', so the strategies' seconds add to more than the total.
    pub seconds: f64,
    pub cells: Vec<ScorecardCell>,
    /// Each probe: alone or in lanes, its seconds and wall-clock times,
    /// the other strategies' probes beside it, its disturbed trials.
    pub probes: Vec<lanes::ProbeTime>,
}

/// The whole scorecard.
#[derive(Debug, Clone, Serialize)]
pub struct Scorecard {
    pub size: String,
    pub target: serde_json::Value,
    pub results: Vec<StrategyResult>,
    pub total_seconds: f64,
    /// The lanes it ran in (1: one strategy after another).
    pub lanes: usize,
}

impl Scorecard {
    pub fn cell(&self, strategy: &str, property: &str) -> Option<&ScorecardCell> {
        self.results
            .iter()
            .find(|r| r.strategy == strategy)?
            .cells
            .iter()
            .find(|c| c.property == property)
    }
}

/// The default list: every built-in, then the external strategies of
/// `lua/external`, then those of `dir` (added, not replacing).
pub fn default_strategies(dir: Option<&Path>) -> Result<Vec<String>> {
    let mut v = strategy::all_names(None)?;
    if dir.is_some() {
        for m in strategy::external::load_dir(dir)? {
            if !v.contains(&m.name) {
                v.push(m.name.clone());
            }
        }
    }
    Ok(v)
}

/// The folder a strategy is built from: `dir` if it is there, else the
/// built-ins and `lua/external` (`None`).
pub fn dir_of(name: &str, dir: Option<&Path>) -> Option<PathBuf> {
    let d = dir?;
    strategy::build(name, Some(d), &Options::default())
        .ok()
        .map(|_| d.to_path_buf())
}

/// Build by name from `dir` first, else the built-ins and `lua/external`.
pub fn build(name: &str, dir: Option<&Path>, opts: &Options) -> Result<Arc<dyn Strategy>> {
    strategy::build(name, dir_of(name, dir).as_deref(), opts)
}

/// `text` on one line: every run of whitespace that holds a line break
/// becomes one space (a server's error can span lines; a cell is one row
/// of scorecard.csv and one line of scorecard.md).
fn one_line(text: String) -> String {
    if !text.contains(['\n', '\r']) {
        return text;
    }
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// A cell from a property's outcome (or its error); its detail on one
/// line ([`one_line`]), so that every writer shows it as made.
fn cell(name: &str, property: &'static str, r: Result<CellOutcome>) -> ScorecardCell {
    let mut c = outcome_cell(name, property, r);
    c.detail = one_line(std::mem::take(&mut c.detail));
    c
}

fn outcome_cell(name: &str, property: &'static str, r: Result<CellOutcome>) -> ScorecardCell {
    let base = ScorecardCell {
        strategy: name.to_string(),
        property,
        value: None,
        unit: "",
        threshold: String::new(),
        verdict: CellVerdict::Error,
        detail: String::new(),
    };
    match r {
        Ok(CellOutcome::Measured {
            value,
            unit,
            threshold,
            verdict,
            detail,
        }) => ScorecardCell {
            value: Some(value),
            unit,
            threshold,
            verdict,
            detail,
            ..base
        },
        Ok(CellOutcome::NotRun(why)) => ScorecardCell {
            verdict: CellVerdict::NotRun,
            detail: why,
            ..base
        },
        Err(e) => ScorecardCell {
            detail: e.to_string(),
            ..base
        },
    }
}

/// How long one experiment's probe may take before it is an error (a
/// strategy whose calls hang), not a hung scorecard.
fn probe_limit(size: Size) -> Duration {
    Duration::from_secs(match size {
        Size::Smoke => 60,
        Size::Quick => 180,
        Size::Full => 600,
    })
}

/// Run the battery on every strategy; `progress` hears each finished one,
/// in the strategies' order. With lanes (`cfg.lanes()` > 1): every
/// strategy's `works` alone, then the probes that may run beside others,
/// `lanes` strategies at a time, then per strategy, in order, the probes
/// that run alone (`lanes.rs`).
pub async fn run(cfg: &Config, mut progress: impl FnMut(&StrategyResult)) -> Result<Scorecard> {
    let t0 = Instant::now();
    // Every probe table this scorecard reads is checked before the first
    // trial, as `run` checks its experiment files.
    probe::validate(cfg).await?;
    let target = match &cfg.target {
        ScorecardServer::Own(b) => {
            serde_json::json!({"own": {"path": b.path, "version": b.version}})
        }
        ScorecardServer::External(x) => x.describe().await?,
    };
    let schedule = Arc::new(lanes::Schedule::default());
    // On servers of our own, the cluster probe's cluster is started once
    // and lent to every strategy (`run::context::SharedFleets`); stopped
    // when this returns.
    let shared = match &cfg.target {
        ScorecardServer::Own(_) => Some(Arc::new(SharedFleets::default())),
        ScorecardServer::External(_) => None,
    };
    let mut results = Vec::new();
    let n = cfg.lanes();
    if n <= 1 {
        for name in &cfg.strategies {
            let mut b = Battery::start(cfg, name, &schedule, &shared).await;
            b.works(cfg).await;
            b.probes(cfg, |_| true).await;
            let r = b.finish();
            progress(&r);
            results.push(r);
        }
    } else {
        let mut all = Vec::new();
        for name in &cfg.strategies {
            let mut b = Battery::start(cfg, name, &schedule, &shared).await;
            b.works(cfg).await;
            all.push(b);
        }
        let jobs: Vec<crate::run::parallel::Job<'_, ()>> = all
            .iter_mut()
            .map(|b| {
                let label = format!("scorecard {}", b.name);
                Box::pin(crate::run::noise::lane(label, b.probes(cfg, |p| !p.alone)))
                    as crate::run::parallel::Job<'_, ()>
            })
            .collect();
        crate::run::parallel::n_at_a_time(n, jobs).await;
        for mut b in all {
            b.probes(cfg, |p| p.alone).await;
            let r = b.finish();
            progress(&r);
            results.push(r);
        }
    }
    for (file, error) in &cfg.broken {
        let name = Path::new(file)
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_else(|| file.clone());
        let mut cells = vec![cell(
            &name,
            "works",
            Err(Error::Other(format!("the manifest did not load: {error}"))),
        )];
        for (p, _) in &PROPERTIES[1..] {
            let why = "the manifest did not load (see works)";
            cells.push(cell(&name, p, Ok(CellOutcome::NotRun(why.into()))));
        }
        let r = StrategyResult {
            strategy: name,
            clock: "?".into(),
            seconds: 0.0,
            cells,
            probes: Vec::new(),
        };
        progress(&r);
        results.push(r);
    }
    if let ScorecardServer::External(x) = &cfg.target {
        x.clean_up(&cfg.key_prefix).await?;
    }
    Ok(Scorecard {
        size: cfg.size.as_str().into(),
        target,
        results,
        total_seconds: t0.elapsed().as_secs_f64(),
        lanes: n,
    })
}

/// What a strategy declares that its cells are judged against.
pub fn declared(info: &strategy::Info) -> Declared {
    Declared {
        promise: info.promise,
        clock: info.clock.as_str().to_string(),
        reports_redis_time: info.reports_redis_time,
    }
}

/// One strategy's battery, run in parts: its start, `works`, then any
/// of its other probes (in the columns' order within a part).
struct Battery<'a> {
    name: String,
    clock: String,
    declared: Option<Declared>,
    run: Option<probe::StrategyRun<'a>>,
    cells: Vec<ScorecardCell>,
    /// The rest is decided (it could not start, or `works` failed).
    done: bool,
    seconds: f64,
}

impl<'a> Battery<'a> {
    /// Build the strategy and start its run folder; a strategy that cannot
    /// even be built (or no server started) is an `error` row.
    async fn start(
        cfg: &'a Config,
        name: &str,
        schedule: &Arc<lanes::Schedule>,
        shared: &Option<Arc<SharedFleets>>,
    ) -> Self {
        let t = Instant::now();
        let mut b = Battery {
            name: name.to_string(),
            clock: "?".into(),
            declared: None,
            run: None,
            cells: Vec::new(),
            done: false,
            seconds: 0.0,
        };
        let started = async {
            let s = build(name, cfg.dir.as_deref(), &Options::default())?;
            let info = s.info().clone();
            let run = probe::StrategyRun::start(cfg, name).await?;
            let run = run
                .with_schedule(schedule.clone())
                .with_shared(shared.clone());
            Ok::<_, Error>((info, run))
        };
        match started.await {
            Ok((info, run)) => {
                b.clock = info.clock.as_str().to_string();
                b.declared = Some(declared(&info));
                b.run = Some(run);
            }
            Err(e) => {
                b.cells.push(cell(name, "works", Err(e)));
                b.done = true;
            }
        }
        b.seconds += t.elapsed().as_secs_f64();
        b
    }

    /// The first probe, `works`: a strategy that errors there errors
    /// everywhere, so one row says so and the rest are not run.
    async fn works(&mut self, cfg: &Config) {
        let (Some(run), Some(declared), false) = (&self.run, &self.declared, self.done) else {
            return;
        };
        let name = self.name.as_str();
        let t = Instant::now();
        let outcomes = probe_outcomes(cfg, run, &properties::PROBES[0], name, declared).await;
        self.seconds += t.elapsed().as_secs_f64();
        let works = outcomes.into_iter().next().map(|(_, r)| r);
        let failed = match works {
            Some(Ok(
                o @ CellOutcome::Measured {
                    verdict: CellVerdict::Pass,
                    ..
                },
            )) => {
                self.cells.push(cell(name, WORKS, Ok(o)));
                None
            }
            Some(Ok(CellOutcome::Measured { detail, .. })) => Some(detail),
            Some(Ok(CellOutcome::NotRun(why))) => Some(why),
            Some(Err(e)) => Some(e.to_string()),
            None => Some("no outcome".into()),
        };
        if let Some(e) = failed {
            self.cells.push(cell(
                name,
                WORKS,
                Err(Error::Other(format!(
                    "the strategy's first decision failed: {e}"
                ))),
            ));
            for (p, _) in &PROPERTIES[1..] {
                let why = "the strategy's first decision failed (see works)";
                self.cells
                    .push(cell(name, p, Ok(CellOutcome::NotRun(why.into()))));
            }
            self.done = true;
        }
    }

    /// The probes after `works` that `which` picks, in the columns' order.
    async fn probes(&mut self, cfg: &Config, which: impl Fn(&properties::Probe) -> bool) {
        let (Some(run), Some(declared), false) = (&self.run, &self.declared, self.done) else {
            return;
        };
        for p in properties::PROBES[1..].iter().filter(|p| which(p)) {
            let t = Instant::now();
            let outcomes = probe_outcomes(cfg, run, p, &self.name, declared).await;
            self.seconds += t.elapsed().as_secs_f64();
            let flagged = run
                .time_of(p.experiment)
                .filter(|t| !t.disturbed.is_empty());
            for (prop, r) in outcomes {
                let mut c = cell(&self.name, prop, r);
                if let Some(t) = &flagged {
                    c.detail = format!(
                        "{} trial(s) kept past the `{}` experiment's bounds (schedule.csv; first: {}): {}",
                        t.disturbed.len(),
                        p.experiment,
                        t.disturbed[0],
                        c.detail
                    );
                }
                self.cells.push(c);
            }
        }
    }

    /// Its row: the cells in the columns' order, whatever order the
    /// probes ran in.
    fn finish(mut self) -> StrategyResult {
        self.cells
            .sort_by_key(|c| PROPERTIES.iter().position(|(p, _)| *p == c.property));
        StrategyResult {
            probes: self.run.as_ref().map(|r| r.times()).unwrap_or_default(),
            strategy: self.name,
            clock: self.clock,
            seconds: self.seconds,
            cells: self.cells,
        }
    }
}

/// Run one probe for the strategy and judge its rows: each of its columns'
/// outcome (not run where the probe is skipped or cannot measure the
/// strategy, an error where the probe failed or timed out).
async fn probe_outcomes(
    cfg: &Config,
    run: &probe::StrategyRun<'_>,
    p: &properties::Probe,
    name: &str,
    declared: &Declared,
) -> Vec<ColumnOutcome> {
    if let Some(why) = p.skip(cfg) {
        return p.all(|| Ok(CellOutcome::NotRun(why.clone())));
    }
    match tokio::time::timeout(probe_limit(cfg.size), run.probe(p)).await {
        Err(_) => p.all(|| {
            Err(Error::Timeout(format!(
                "the `{}` probe did not finish in {} s",
                p.experiment,
                probe_limit(cfg.size).as_secs()
            )))
        }),
        // A strategy outside the experiment's method: nothing measured.
        Ok(Err(e @ Error::NotReplayable { .. })) => {
            let why = format!("the `{}` experiment cannot measure it: {e}", p.experiment);
            p.all(|| Ok(CellOutcome::NotRun(why.clone())))
        }
        Ok(Err(e)) => {
            let cause = format!("the `{}` probe: {e}", p.experiment);
            p.all(|| Err(Error::Other(cause.clone())))
        }
        Ok(Ok(())) => (p.judge)(&ProbeRows::new(run.dir(), name, declared)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cells_detail_is_one_line_where_it_is_made() {
        let c = cell(
            "s",
            "p",
            Ok(CellOutcome::NotRun(
                "refused:\n  ERR one\r\n\n  two ".into(),
            )),
        );
        assert_eq!(c.detail, "refused: ERR one two");
        let plain = cell("s", "p", Ok(CellOutcome::NotRun("  as made  ".into())));
        assert_eq!(
            plain.detail, "  as made  ",
            "a one-line detail is kept as it is"
        );
    }
}
