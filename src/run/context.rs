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

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde::de::DeserializeOwned;

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
        let params = load_params(&params_file, size)?;
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
            stall_after: None,
            shard: None,
            lane: None,
            bound: crate::run::parallel::Bound::Cpu,
            part: None,
            attempt: std::sync::atomic::AtomicU64::new(0),
            trial_floor: 0,
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
        self.params = load_probe_params(&self.params_file, self.size)?;
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

    /// Declare how the experiment's cells use the machine.
    pub fn with_bound(mut self, bound: crate::run::parallel::Bound) -> Self {
        self.bound = bound;
        self
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

    /// Which table of the experiment file a parameter comes from.
    fn table_of(&self, key: &str) -> String {
        let text = std::fs::read_to_string(&self.params_file).unwrap_or_default();
        let doc: toml::Table = toml::from_str(&text).unwrap_or_default();
        let has = |t: Option<&toml::Value>| {
            t.and_then(|t| t.as_table())
                .is_some_and(|t| t.contains_key(key))
        };
        let size = self.size.as_str();
        if self.probe {
            let probe = doc.get("probe");
            if has(probe.and_then(|p| p.get(size))) {
                return format!("probe.{size}");
            }
            if has(probe) {
                return "probe".into();
            }
        } else if has(doc.get(size)) {
            return size.into();
        }
        "defaults".into()
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

    /// The parameters as the experiment's own type; unknown or missing
    /// fields are errors naming the file.
    pub fn params<T: DeserializeOwned>(&self) -> Result<T> {
        // Ranges before types: `trials = 0` must not run "0 trials ... done".
        if let Some((path, problem)) = out_of_range(&self.params, "") {
            let key = path.split(['.', '[']).next().unwrap_or("").to_string();
            return Err(Error::Manifest {
                file: self.params_file.clone(),
                field: format!("[{}] {path}", self.table_of(&key)),
                problem,
            });
        }
        let p = serde_path_to_error::deserialize(toml::Value::Table(self.params.clone())).map_err(
            |e| {
                let path = e.path().to_string();
                let key = path.split(['.', '[']).next().unwrap_or("").to_string();
                Error::Manifest {
                    file: self.params_file.clone(),
                    field: format!("[{}] {path}", self.table_of(&key)),
                    problem: e.into_inner().message().to_string(),
                }
            },
        )?;
        if self.validating {
            return Err(Error::Validated);
        }
        Ok(p)
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

/// What a numeric parameter must be, by its name: a count (trials,
/// workers, repetitions) at least 1; a rate, a window, a duration, a limit
/// greater than 0. Other names are not range-checked here.
/// What a range rule says a value must be, and the test of it.
type RangeRule = (&'static str, fn(f64) -> bool);

fn range_rule(name: &str) -> Option<RangeRule> {
    let count = name == "trials"
        || name.ends_with("_trials")
        || name == "workers"
        || name.ends_with("_workers")
        || matches!(name, "reps" | "runs" | "conns" | "drivers" | "users")
        || name.ends_with("_samples");
    let positive = name.contains("rate")
        || name.ends_with("per_s")
        || name == "window_ms"
        || name.ends_with("_window_ms")
        || name.contains("duration")
        || matches!(name, "limit" | "capacity");
    if count {
        Some(("a count, at least 1", |v| v >= 1.0))
    } else if positive {
        Some(("greater than 0", |v| v > 0.0))
    } else {
        None
    }
}

/// The first parameter (path, problem) outside its range, looking into
/// arrays and nested tables (a group's `workers`).
fn out_of_range(table: &toml::Table, at: &str) -> Option<(String, String)> {
    fn walk(name: &str, path: &str, v: &toml::Value) -> Option<(String, String)> {
        match v {
            toml::Value::Integer(_) | toml::Value::Float(_) => {
                let x = v.as_float().or_else(|| v.as_integer().map(|i| i as f64))?;
                let (what, ok) = range_rule(name)?;
                (!ok(x)).then(|| (path.to_string(), format!("is {v}, must be {what}")))
            }
            toml::Value::Array(a) => a
                .iter()
                .enumerate()
                .find_map(|(i, x)| walk(name, &format!("{path}[{i}]"), x)),
            toml::Value::Table(t) => out_of_range(t, path),
            _ => None,
        }
    }
    table.iter().find_map(|(k, v)| {
        let path = if at.is_empty() {
            k.clone()
        } else {
            format!("{at}.{k}")
        };
        walk(k, &path, v)
    })
}

/// An experiment file, its top-level keys checked.
fn read_definition(file: &Path) -> Result<toml::Table> {
    let text = std::fs::read_to_string(file).map_err(|e| Error::Manifest {
        file: file.to_path_buf(),
        field: "(file)".into(),
        problem: format!("cannot read the experiment definition: {e}"),
    })?;
    let doc: toml::Table = toml::from_str(&text).map_err(|e| Error::Manifest {
        file: file.to_path_buf(),
        field: "(TOML syntax)".into(),
        problem: e.to_string(),
    })?;
    for k in doc.keys() {
        if !["description", "defaults", "smoke", "quick", "full", "probe"].contains(&k.as_str()) {
            return Err(Error::Manifest {
                file: file.to_path_buf(),
                field: k.clone(),
                problem: "unknown top-level key (allowed: description, defaults, smoke, quick, full, probe; claim IDs live in analysis/claims.toml)".into(),
            });
        }
    }
    Ok(doc)
}

/// `doc[name]` as a table (absent: empty); `what` names it in the error.
fn table_in(file: &Path, doc: &toml::Table, name: &str, what: &str) -> Result<toml::Table> {
    match doc.get(name) {
        None => Ok(toml::Table::new()),
        Some(toml::Value::Table(t)) => Ok(t.clone()),
        Some(_) => Err(Error::Manifest {
            file: file.to_path_buf(),
            field: what.into(),
            problem: "must be a table".into(),
        }),
    }
}

/// The scorecard's probe: `[defaults]`, then `[probe]` (without its size
/// tables), then `[probe.<size>]`.
fn load_probe_params(file: &Path, size: Size) -> Result<toml::Table> {
    let doc = read_definition(file)?;
    if doc.get("probe").is_none() {
        return Err(Error::Manifest {
            file: file.to_path_buf(),
            field: "probe".into(),
            problem: "no [probe] table: the scorecard has no cell of this experiment to run".into(),
        });
    }
    let mut merged = table_in(file, &doc, "defaults", "defaults")?;
    let probe = table_in(file, &doc, "probe", "probe")?;
    let sizes = ["smoke", "quick", "full"];
    for (k, v) in &probe {
        if !sizes.contains(&k.as_str()) {
            merged.insert(k.clone(), v.clone());
        }
    }
    let field = format!("probe.{}", size.as_str());
    for (k, v) in table_in(file, &probe, size.as_str(), &field)? {
        merged.insert(k, v);
    }
    Ok(merged)
}

fn load_params(file: &Path, size: Size) -> Result<toml::Table> {
    let doc = read_definition(file)?;
    let table = |name: &str| table_in(file, &doc, name, name);
    if doc.get(size.as_str()).is_none() {
        return Err(Error::Manifest {
            file: file.to_path_buf(),
            field: size.as_str().into(),
            problem: "no table for this size".into(),
        });
    }
    let mut merged = table("defaults")?;
    for (k, v) in table(size.as_str())? {
        merged.insert(k, v);
    }
    Ok(merged)
}

/// The run's one progress display (a bar per experiment in flight).
fn progress_display() -> &'static indicatif::MultiProgress {
    static DISPLAY: std::sync::OnceLock<indicatif::MultiProgress> = std::sync::OnceLock::new();
    DISPLAY.get_or_init(indicatif::MultiProgress::new)
}

/// The cells of other experiments in flight beside `label`'s, for a
/// progress line ("" when it runs alone).
fn beside_text(label: &str) -> String {
    let own = format!("{label}/");
    let others: Vec<String> = crate::run::parallel::in_flight()
        .into_iter()
        .filter(|c| !c.starts_with(&own))
        .collect();
    if others.is_empty() {
        String::new()
    } else {
        format!(" | beside: {}", others.join(", "))
    }
}

/// Progress on stderr: a bar with ETA on a terminal, a line every ~10% otherwise.
pub struct Progress {
    bar: Option<indicatif::ProgressBar>,
    /// Says nothing at all.
    silent: bool,
    label: &'static str,
    total: u64,
    done: u64,
    last_pct: u64,
    started: Instant,
}

impl Progress {
    pub fn new(label: &'static str, total: u64) -> Self {
        use std::io::IsTerminal;
        let bar = if std::io::stderr().is_terminal() {
            let b = indicatif::ProgressBar::new(total);
            b.set_style(
                indicatif::ProgressStyle::with_template(
                    "{prefix:>16} [{bar:30}] {pos}/{len} {msg} elapsed {elapsed} eta {eta}",
                )
                .unwrap()
                .progress_chars("=> "),
            );
            b.set_prefix(label);
            // One display for the whole run: experiments side by side get
            // one bar each, stacked, not bars drawn over each other.
            Some(progress_display().add(b))
        } else {
            eprintln!("[{label}] {total} trials to run");
            None
        };
        Progress {
            bar,
            silent: false,
            label,
            total,
            done: 0,
            last_pct: 0,
            started: Instant::now(),
        }
    }

    /// Progress that says nothing (counts only).
    pub fn silent(label: &'static str, total: u64) -> Self {
        Progress {
            bar: None,
            silent: true,
            label,
            total,
            done: 0,
            last_pct: 0,
            started: Instant::now(),
        }
    }

    /// Trials already done (resumed).
    pub fn skip(&mut self, n: u64) {
        self.done += n;
        if let Some(b) = &self.bar {
            b.inc(n);
        }
    }

    pub fn inc(&mut self, msg: &str) {
        self.done += 1;
        match &self.bar {
            Some(b) => {
                b.set_message(format!("{msg}{}", beside_text(self.label)));
                b.inc(1);
            }
            None if self.silent => {}
            None => {
                let pct = self.done * 100 / self.total.max(1);
                if pct >= self.last_pct + 10 || self.done == self.total {
                    self.last_pct = pct;
                    let el = self.started.elapsed().as_secs_f64();
                    eprintln!(
                        "[{}] {}/{} ({pct}%) {:.0}s {msg}{}",
                        self.label,
                        self.done,
                        self.total,
                        el,
                        beside_text(self.label)
                    );
                }
            }
        }
    }

    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = r#"
description = "x"
[defaults]
limit = 100
trials = 9
[smoke]
[quick]
trials = 5
[probe]
trials = 1
workers = [64]
[probe.smoke]
workers = [8]
"#;

    fn file(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.toml");
        std::fs::write(&p, text).unwrap();
        (dir, p)
    }

    fn int(t: &toml::Table, k: &str) -> Option<i64> {
        t.get(k).and_then(|v| v.as_integer())
    }

    #[test]
    fn a_probe_is_defaults_then_probe_then_probe_at_the_size() {
        let (_d, p) = file(FILE);
        let q = load_probe_params(&p, Size::Quick).unwrap();
        assert_eq!((int(&q, "limit"), int(&q, "trials")), (Some(100), Some(1)));
        assert_eq!(q["workers"].as_array().unwrap()[0].as_integer(), Some(64));
        // The run's own size tables do not reach the probe, nor its size
        // tables the parameters.
        assert!(!q.contains_key("smoke") && !q.contains_key("quick"));
        let s = load_probe_params(&p, Size::Smoke).unwrap();
        assert_eq!(s["workers"].as_array().unwrap()[0].as_integer(), Some(8));
        // The run is unchanged by the probe table.
        let r = load_params(&p, Size::Quick).unwrap();
        assert_eq!(
            (int(&r, "trials"), r.contains_key("workers")),
            (Some(5), false)
        );
    }

    #[test]
    fn a_file_without_a_probe_table_cannot_be_probed() {
        let (_d, p) = file("[defaults]\nlimit = 1\n[quick]\n");
        let e = load_probe_params(&p, Size::Quick).unwrap_err().to_string();
        assert!(e.contains("no [probe] table"), "{e}");
        let (_d, p) = file("[defaults]\n[quick]\n[probes]\n");
        let e = load_params(&p, Size::Quick).unwrap_err().to_string();
        assert!(
            e.contains("unknown top-level key") && e.contains("probe"),
            "{e}"
        );
    }

    #[test]
    fn a_bad_probe_parameter_names_its_table() {
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct P {
            limit: u64,
            trials: u64,
            workers: Vec<u64>,
        }
        let (d, p) = file(&FILE.replace("workers = [8]", "workers = [\"8\"]"));
        let run = RunDir::scratch(d.path());
        let manifest = Arc::new(Mutex::new(crate::run::manifest::RunManifest::default()));
        let dir = p.parent().unwrap();
        let ctx = RunContext::new(
            "x",
            run,
            Size::Smoke,
            1,
            None,
            None,
            None,
            None,
            dir,
            manifest,
        )
        .unwrap()
        .probe()
        .unwrap();
        let e = ctx.params::<P>().unwrap_err().to_string();
        assert!(e.contains("[probe.smoke] workers"), "{e}");
        let ctx = ctx.with_key_prefix("lb:run:");
        assert!(ctx.fresh_client("conc", "c", 0).starts_with("lb:run:conc-"));
        assert!(ctx.unique_client("fo", "c", 0).starts_with("lb:run:fo-"));
    }
}
