//! What an experiment gets to work with: its parameters at the chosen size,
//! the run folder, the seed, the strategies to run, a way to start servers,
//! progress output and manifest notes.
//!
//! The parameters come from the experiment's file: `[defaults]` with the
//! size's table over it (`[smoke]`, `[quick]`, `[full]`) for a run, or, for
//! the scorecard's probe of the experiment ([`RunContext::probe`]),
//! `[defaults]` with `[probe]` over it and `[probe.<size>]` over that: the
//! scorecard runs the experiment's own code on a few cells, so a property
//! is measured one way wherever it is reported.
//!
//! The parts: the parameters, their ranges and the experiment file they
//! come from (`params.rs`), and the progress output (`progress.rs`); this
//! file holds the context itself, its constructors, client ids, strategies,
//! servers and manifest notes.

mod params;
mod progress;
mod shared;

pub use progress::Progress;
pub use shared::SharedFleets;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::run::record::{RunDir, TrialLog};
use limitbench_base::error::{Error, Result};
use limitbench_core::fleet::{Fleet, RedisBinary, ServerConfig};
use limitbench_core::strategy::{self, Options, Strategy};

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum Size {
    Smoke,
    Quick,
    Full,
}

impl Size {
    pub fn as_str(&self) -> &'static str {
        match self {
            Size::Smoke => "smoke",
            Size::Quick => "quick",
            Size::Full => "full",
        }
    }
}

pub struct RunContext {
    pub experiment: &'static str,
    pub run: RunDir,
    pub size: Size,
    pub seed: u64,
    /// `--strategy` given on the command line (None: the experiment's own list).
    pub strategy_filter: Option<Vec<String>>,
    pub strategy_dir: Option<PathBuf>,
    /// Set unless running against `--redis-url`.
    pub redis: Option<RedisBinary>,
    pub redis_url: Option<SocketAddr>,
    /// `[defaults]` merged with the size's table (or the probe's tables).
    pub params: toml::Table,
    pub params_file: PathBuf,
    /// Whether `params` are the scorecard's probe (`[probe]`, `[probe.<size>]`).
    pub probe: bool,
    /// Starts every client id the experiment makes through
    /// [`RunContext::fresh_client`] and [`RunContext::unique_client`] (and so
    /// is in every key it writes): the scorecard's prefix on a server you
    /// run; empty for a run.
    pub key_prefix: String,
    /// A Redis Cluster you run (the scorecard's `--cluster-url`), for the
    /// experiments that can measure on one (`cluster`).
    pub cluster_url: Option<SocketAddr>,
    /// Servers the scorecard lends every strategy's probe (`shared.rs`);
    /// None in a run, where each experiment starts its own.
    pub shared: Option<Arc<SharedFleets>>,
    /// `--stall-after`: the deadline of every setup and trial (default:
    /// derived from the experiment's own trials, `run::deadline`).
    pub stall_after: Option<std::time::Duration>,
    /// The run's shard (`limitbench run --shard I/N`): the sweep runs only
    /// this shard's cells (`run::shard`); None runs them all.
    pub shard: Option<crate::run::shard::Shard>,
    /// The lane of an experiment split over several concurrent runs of it
    /// in this process (`run::parallel`): like a shard, of the shard's cells.
    pub lane: Option<crate::run::shard::Shard>,
    /// CPU-bound (runs alone) or latency-bound with its schedule's bound
    /// (`run::parallel`); the registry's declaration, set by `limitbench run`.
    pub bound: crate::run::parallel::Bound,
    /// The most CPU other processes may take during a trial, in cores,
    /// before the trial is disturbed (the registry's, set by `limitbench
    /// run`; infinite, no bound, for contexts the app did not make).
    pub others_max_cores: f64,
    /// For an experiment with CPU-bound cells among latency-bound ones: the
    /// part this run takes and the experiment's test of a CPU-bound cell id
    /// (None: every cell).
    pub part: Option<(crate::run::parallel::Part, fn(&str) -> bool)>,
    /// The attempt of the trial running now: 0, or the redo after a trial
    /// whose schedule slipped past the bound. A redo writes fresh keys.
    pub attempt: std::sync::atomic::AtomicU64,
    /// The least trials every cell runs (`limitbench run --until-decisive`
    /// raises it for the experiments of inconclusive claims; 0: the cells'
    /// own counts). Extra trials are numbered on from the cell's own, so
    /// their seeds are `trial_seed(run_seed, cell, trial)` as in any run.
    pub trial_floor: u64,
    /// The least trials of single cells, by cell id (the rounds of
    /// `--until-decisive` raise the cells an inconclusive claim rests on);
    /// a cell runs the most of its own count, `trial_floor` and this.
    pub cell_floors: std::collections::BTreeMap<String, u64>,
    /// No progress output (the scorecard reports per strategy instead).
    quiet: bool,
    manifest: Arc<Mutex<crate::run::manifest::RunManifest>>,
    /// Set by `validate_only`: `params()` stops the experiment once its
    /// parameters parse, before it starts a server or writes a row.
    validating: bool,
    /// When this session of the experiment started (time is summed over
    /// sessions when a killed run is resumed).
    session_started: Instant,
}

impl RunContext {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        experiment: &'static str,
        run: RunDir,
        size: Size,
        seed: u64,
        strategy_filter: Option<Vec<String>>,
        strategy_dir: Option<PathBuf>,
        redis: Option<RedisBinary>,
        redis_url: Option<SocketAddr>,
        experiments_dir: &Path,
        manifest: Arc<Mutex<crate::run::manifest::RunManifest>>,
    ) -> Result<Self> {
        let params_file = experiments_dir.join(format!("{experiment}.toml"));
        let params = params::load_params(&params_file, size)?;
        Ok(RunContext {
            experiment,
            run,
            size,
            seed,
            strategy_filter,
            strategy_dir,
            redis,
            redis_url,
            params,
            params_file,
            probe: false,
            key_prefix: String::new(),
            cluster_url: None,
            shared: None,
            stall_after: None,
            shard: None,
            lane: None,
            bound: crate::run::parallel::Bound::Cpu,
            others_max_cores: f64::INFINITY,
            part: None,
            attempt: std::sync::atomic::AtomicU64::new(0),
            trial_floor: 0,
            cell_floors: Default::default(),
            quiet: false,
            manifest,
            validating: false,
            session_started: Instant::now(),
        })
    }

    /// This context with the scorecard's probe of the experiment as its
    /// parameters: `[defaults]`, `[probe]` over it, `[probe.<size>]` over that.
    /// An experiment file without a `[probe]` table is an error.
    pub fn probe(mut self) -> Result<Self> {
        self.params = params::load_probe_params(&self.params_file, self.size)?;
        self.probe = true;
        Ok(self)
    }

    /// Every client id made through this context starts with `prefix`.
    pub fn with_key_prefix(mut self, prefix: &str) -> Self {
        self.key_prefix = prefix.to_string();
        self
    }

    /// Run only `shard`'s cells (None: all of them).
    pub fn with_shard(mut self, shard: Option<crate::run::shard::Shard>) -> Self {
        self.shard = shard;
        self
    }

    /// Run only `lane`'s part of the cells (None: all the shard's).
    pub fn with_lane(mut self, lane: Option<crate::run::shard::Shard>) -> Self {
        self.lane = lane;
        self
    }

    /// Declare how the experiment's cells use the machine, and how much
    /// CPU other processes may take during a trial.
    pub fn with_bound(mut self, bound: crate::run::parallel::Bound, others_max_cores: f64) -> Self {
        self.bound = bound;
        self.others_max_cores = others_max_cores;
        self
    }

    /// Does this context print nothing (the scorecard's)?
    pub fn is_quiet(&self) -> bool {
        self.quiet
    }

    /// Run only one part of the cells (`run::parallel::Part`).
    pub fn with_part(
        mut self,
        part: Option<(crate::run::parallel::Part, fn(&str) -> bool)>,
    ) -> Self {
        self.part = part;
        self
    }

    /// No progress bar or lines from the sweep.
    pub fn quiet(mut self) -> Self {
        self.quiet = true;
        self
    }

    /// A Redis Cluster you run (its seed node).
    pub fn with_cluster_url(mut self, seed: Option<SocketAddr>) -> Self {
        self.cluster_url = seed;
        self
    }

    /// Servers shared with the other strategies' probes (the scorecard).
    pub fn with_shared(mut self, shared: Option<Arc<SharedFleets>>) -> Self {
        self.shared = shared;
        self
    }

    /// [`crate::run::keys::fresh_client`] under the run's key prefix.
    pub fn fresh_client(&self, experiment: &str, cell: &str, trial: u64) -> String {
        let redo = match self.attempt.load(std::sync::atomic::Ordering::Relaxed) {
            0 => String::new(),
            a => format!("-redo{a}"),
        };
        format!(
            "{}{}{redo}",
            self.key_prefix,
            crate::run::keys::fresh_client(experiment, cell, trial)
        )
    }

    /// [`crate::run::keys::unique_client`] under the run's key prefix.
    pub fn unique_client(&self, tag: &str, cell: &str, trial: u64) -> String {
        format!(
            "{}{}",
            self.key_prefix,
            crate::run::keys::unique_client(tag, cell, trial)
        )
    }

    /// This context in validation mode: the experiment's run returns
    /// `Err(Error::Validated)` as soon as its parameters parsed.
    pub fn validate_only(mut self) -> Self {
        self.validating = true;
        self
    }

    /// Record this session's time so far in the manifest (the sweep engine
    /// calls it after every committed trial, so a killed session's time counts).
    pub fn record_time(&self) -> Result<()> {
        let mut m = self.manifest.lock().unwrap();
        m.session_time(
            self.experiment,
            self.session_started.elapsed().as_secs_f64(),
        );
        m.save(&self.run)
    }

    /// The strategies to run: `--strategy` if given, else `defaults`.
    pub fn strategies(&self, defaults: &[String]) -> Vec<String> {
        self.strategy_filter
            .clone()
            .unwrap_or_else(|| defaults.to_vec())
    }

    /// A list of strategy names from a parameter: `["*"]` is every built-in
    /// and external strategy, narrowed to `--strategy` when given (as in
    /// `concurrency`'s groups); any other list is used as it is.
    pub fn named_strategies(&self, list: &[String]) -> Result<Vec<String>> {
        if list.iter().any(|s| s == "*") {
            let every = strategy::all_names(self.strategy_dir.as_deref())?;
            Ok(self.strategies(&every))
        } else {
            Ok(list.to_vec())
        }
    }

    pub fn build_strategy(&self, name: &str, opts: &Options) -> Result<Arc<dyn Strategy>> {
        strategy::build(name, self.strategy_dir.as_deref(), opts)
    }

    /// The redis-server binary, or an error if this experiment needs to
    /// control servers and the run points at an external Redis.
    pub fn binary(&self) -> Result<&RedisBinary> {
        self.redis.as_ref().ok_or_else(|| {
            Error::Other(format!("experiment `{}` starts and controls its own servers; it cannot run with --redis-url", self.experiment))
        })
    }

    /// A standalone server with `cfg` (or the external one, whose config is left alone).
    pub async fn standalone(&self, cfg: ServerConfig) -> Result<Fleet> {
        match self.redis_url {
            Some(a) => Ok(Fleet::external(a)),
            None => Fleet::standalone(self.binary()?, cfg).await,
        }
    }

    pub fn trial_log(&self, sides: &[&str]) -> Result<TrialLog> {
        TrialLog::open(&self.run, self.experiment, sides)
    }

    /// Record something about this experiment in the manifest
    /// (`experiments.<name>.<key>`), e.g. pinning or the servers' config.
    pub fn note(&self, key: &str, value: serde_json::Value) -> Result<()> {
        let mut m = self.manifest.lock().unwrap();
        m.note(self.experiment, key, value);
        m.save(&self.run)
    }

    /// The CPUs this experiment's CPU parameters name: each `(name,
    /// position)` is a position in the CPUs the harness was allowed when it
    /// started (`pin::resolve_cpu`, the one place positions become CPUs).
    /// Noted under `cpus`: the allowed set and, per parameter, its position
    /// and the CPU it became. An error (naming the set) if one is past its end.
    pub fn resolve_cpus(&self, params: &[(&str, usize)]) -> Result<Vec<usize>> {
        use limitbench_core::pin;
        let mut note = serde_json::Map::new();
        note.insert(
            "allowed_at_start".into(),
            pin::cpu_list(pin::startup_cpus()?).into(),
        );
        note.insert(
            "meaning".into(),
            "a CPU parameter is a position in the CPUs the harness process was allowed when it started (sched_getaffinity): position 0 is its first CPU".into(),
        );
        let mut out = Vec::with_capacity(params.len());
        for &(name, position) in params {
            let cpu = pin::resolve_cpu(name, position)?;
            note.insert(
                name.into(),
                serde_json::json!({"position": position, "cpu": cpu}),
            );
            out.push(cpu);
        }
        self.note("cpus", note.into())?;
        Ok(out)
    }

    /// Record a fleet's version and CONFIG under `key`, without the
    /// server's credentials (`requirepass`, `masterauth`).
    pub async fn note_fleet(&self, key: &str, fleet: &Fleet) -> Result<()> {
        let mut d = fleet.describe().await?;
        if let Some(cfg) = d.get_mut("config").and_then(|c| c.as_object_mut()) {
            for k in ["requirepass", "masterauth", "masteruser"] {
                if let Some(v) = cfg.get_mut(k)
                    && v.as_str().is_some_and(|s| !s.is_empty())
                {
                    *v = "(redacted)".into();
                }
            }
        }
        self.note(key, d)
    }

    pub fn progress(&self, total: u64) -> Progress {
        if self.quiet {
            return Progress::silent(self.experiment, total);
        }
        Progress::new(self.experiment, total)
    }
}
