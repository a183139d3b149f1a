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
//! - `target.rs`: a Redis you run (`--redis-url`, `--cluster-url`): its INFO,
//!   the key prefix check and the clean-up.

pub mod output;
pub mod probe;
pub mod properties;
pub mod target;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::run::Size;
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
}

/// One strategy's battery, timed.
#[derive(Debug, Clone, Serialize)]
pub struct StrategyResult {
    pub strategy: String,
    pub clock: String,
    pub seconds: f64,
    pub cells: Vec<ScorecardCell>,
}

/// The whole scorecard.
#[derive(Debug, Clone, Serialize)]
pub struct Scorecard {
    pub size: String,
    pub target: serde_json::Value,
    pub results: Vec<StrategyResult>,
    pub total_seconds: f64,
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

/// A cell from a property's outcome (or its error).
fn cell(name: &str, property: &'static str, r: Result<CellOutcome>) -> ScorecardCell {
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

/// Run the battery on every strategy; `progress` hears each finished one.
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
    let mut results = Vec::new();
    for name in &cfg.strategies {
        let t = Instant::now();
        let cells = battery(cfg, name).await;
        let (clock, cells) = match cells {
            Ok(v) => v,
            Err(e) => ("?".into(), vec![cell(name, "works", Err(e))]),
        };
        let r = StrategyResult {
            strategy: name.clone(),
            clock,
            seconds: t.elapsed().as_secs_f64(),
            cells,
        };
        progress(&r);
        results.push(r);
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

/// One strategy: (its clock, its cells in the columns' order). An `Err`
/// only when the strategy cannot even be built or no server can be started.
async fn battery(cfg: &Config, name: &str) -> Result<(String, Vec<ScorecardCell>)> {
    let s = build(name, cfg.dir.as_deref(), &Options::default())?;
    let info = s.info().clone();
    let clock = info.clock.as_str().to_string();
    let declared = declared(&info);
    let run = probe::StrategyRun::start(cfg, name).await?;
    let mut cells = Vec::new();
    for p in properties::PROBES {
        let outcomes = probe_outcomes(cfg, &run, p, name, &declared).await;
        // The first probe is `works`: a strategy that errors there errors
        // everywhere, so one row says so and the rest are not run.
        if p.properties == [WORKS] {
            let works = outcomes.into_iter().next().map(|(_, r)| r);
            let failed = match works {
                Some(Ok(
                    o @ CellOutcome::Measured {
                        verdict: CellVerdict::Pass,
                        ..
                    },
                )) => {
                    cells.push(cell(name, WORKS, Ok(o)));
                    None
                }
                Some(Ok(CellOutcome::Measured { detail, .. })) => Some(detail),
                Some(Ok(CellOutcome::NotRun(why))) => Some(why),
                Some(Err(e)) => Some(e.to_string()),
                None => Some("no outcome".into()),
            };
            if let Some(e) = failed {
                cells.push(cell(
                    name,
                    WORKS,
                    Err(Error::Other(format!(
                        "the strategy's first decision failed: {e}"
                    ))),
                ));
                for (p, _) in &PROPERTIES[1..] {
                    let why = "the strategy's first decision failed (see works)";
                    cells.push(cell(name, p, Ok(CellOutcome::NotRun(why.into()))));
                }
                return Ok((clock, cells));
            }
            continue;
        }
        for (prop, r) in outcomes {
            cells.push(cell(name, prop, r));
        }
    }
    // In the columns' order, whatever order the probes ran in.
    cells.sort_by_key(|c| PROPERTIES.iter().position(|(p, _)| *p == c.property));
    Ok((clock, cells))
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
