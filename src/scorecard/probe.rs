//! Running an experiment's probe for one strategy: the experiment's own
//! `run`, with a `RunContext` whose parameters are its `[probe]` tables
//! ([`RunContext::probe`]), whose strategy filter is the one strategy, whose
//! client ids carry the scorecard's key prefix and whose target is the
//! scorecard's (our servers, or the Redis you run). The sweep engine does
//! the rest, as in any run: trials committed to the strategy's own run
//! folder `<scorecard>/probes/<strategy>/` (its CSVs, `noise.csv` and
//! `manifest.json`), trials an experiment rejects not committed and an
//! error.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::lanes::{ProbeTime, Schedule};
use super::properties::{PROBES, Probe};
use super::{Config, ScorecardServer, dir_of};
use crate::experiments::{self, Experiment};
use crate::run::RunContext;
use crate::run::context::SharedFleets;
use crate::run::manifest::{self as mf, RunManifest};
use crate::run::record::{RunDir, now_rfc3339};
use crate::run::seeds::DEFAULT_SEED;
use limitbench_base::error::{Error, Result};

/// The probes of one strategy: its run folder and manifest.
pub struct StrategyRun<'a> {
    cfg: &'a Config,
    name: String,
    run: RunDir,
    manifest: Arc<Mutex<RunManifest>>,
    /// The scorecard's record of which probe ran when (shared by every
    /// strategy of one scorecard).
    schedule: Arc<Schedule>,
    /// Each probe run so far: its part, time, what ran beside it.
    times: Mutex<Vec<ProbeTime>>,
    /// Servers lent by the scorecard to every strategy's probes (on
    /// servers of our own: the cluster probe's cluster).
    shared: Option<Arc<SharedFleets>>,
}

/// A strategy's name as a folder name (an external manifest may name it
/// anything).
fn folder_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The command line as the manifest keeps it: URLs without their password.
fn command_line() -> String {
    std::env::args()
        .map(|a| {
            if a.contains("://") {
                limitbench_core::redact::url(&a)
            } else {
                a
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A context for `e`'s probe in `run`, for the strategies `filter`.
fn context(
    cfg: &Config,
    e: &'static Experiment,
    run: &RunDir,
    filter: Vec<String>,
    manifest: Arc<Mutex<RunManifest>>,
    shared: Option<Arc<SharedFleets>>,
) -> Result<RunContext> {
    let (redis, redis_url, cluster) = match &cfg.target {
        ScorecardServer::Own(b) => (Some(b.clone()), None, None),
        ScorecardServer::External(x) => (None, Some(x.addr), x.cluster),
    };
    let dir = filter
        .first()
        .and_then(|name| dir_of(name, cfg.dir.as_deref()));
    let mut ctx = RunContext::new(
        e.name,
        run.clone(),
        cfg.size,
        DEFAULT_SEED,
        Some(filter.clone()),
        dir,
        redis,
        redis_url,
        &cfg.experiments_dir,
        manifest,
    )?
    .probe()?
    // The experiment's bound on its schedule's slip, checked per trial as
    // in a run: a trial past it beside another strategy's probe is redone
    // on fresh keys (its last attempt alone); one still past it is kept
    // marked in schedule.csv and named in its cells' detail.
    .with_bound(e.bound, f64::INFINITY)
    .with_key_prefix(&cfg.key_prefix)
    .with_cluster_url(cluster)
    .with_shared(shared)
    .quiet();
    // `--limit` / `--window`: the promise columns' traffic at the caller's
    // limit and window (the patterns' other times stay the table's).
    if e.name == "bursts" {
        if let Some(l) = cfg.promise_limit {
            ctx.params
                .insert("limit".into(), toml::Value::Integer(l as i64));
        }
        if let Some(w) = cfg.promise_window_ms {
            ctx.params
                .insert("window_ms".into(), toml::Value::Integer(w as i64));
        } else if let Some(w) = whole_second_window(&ctx, &filter) {
            // A script that takes its window in whole seconds cannot be
            // asked for the table's (smoke: 500 ms): its columns run at the
            // next whole second, which their detail shows ("per 1000 ms").
            ctx.params
                .insert("window_ms".into(), toml::Value::Integer(w as i64));
        }
    }
    Ok(ctx)
}

/// For a strategy that takes its window in whole seconds
/// (`Info::window_whole_seconds`) probed at a window that is not one: the
/// next whole second, in ms. `None`: the table's window serves.
fn whole_second_window(ctx: &RunContext, filter: &[String]) -> Option<u64> {
    let w = ctx.params.get("window_ms")?.as_integer()? as u64;
    let name = filter.first()?;
    let s = ctx.build_strategy(name, &Default::default()).ok()?;
    (s.info().window_whole_seconds && !w.is_multiple_of(1000)).then(|| w.div_ceil(1000) * 1000)
}

impl<'a> StrategyRun<'a> {
    /// The strategy's run folder (new) and its manifest.
    pub async fn start(cfg: &'a Config, name: &str) -> Result<Self> {
        let probes = cfg.out.join("probes");
        let folder = folder_name(name);
        if probes.join(&folder).exists() {
            return Err(Error::Other(format!(
                "{} already holds a probe run; choose another --run-id",
                probes.join(&folder).display()
            )));
        }
        let run = RunDir::create(&probes, Some(&folder))?;
        let p = crate::run::provenance::project();
        let manifest = RunManifest {
            run_id: run.run_id.clone(),
            git_commit: p.commit,
            git_dirty: p.dirty,
            git_tree: p.tree,
            git_source: p.source,
            seed: DEFAULT_SEED,
            size: cfg.size.as_str().into(),
            command: command_line(),
            machine: mf::machine_info(),
            redis_server: match &cfg.target {
                ScorecardServer::Own(b) => {
                    // The battery's servers are started from `b`: what it
                    // is, read from a bare start of it.
                    let source = crate::servers::identity::located_source(b);
                    crate::servers::identity::manifest_entry(b, None, source).await
                }
                ScorecardServer::External(x) => {
                    let mut v = crate::servers::identity::external_entry(x.addr).await;
                    v["external"] = limitbench_core::redact::url(&x.url).into();
                    v["source"] = "external --redis-url".into();
                    v
                }
            },
            started: now_rfc3339(),
            ..Default::default()
        };
        manifest.save(&run)?;
        Ok(StrategyRun {
            cfg,
            name: name.to_string(),
            run,
            manifest: Arc::new(Mutex::new(manifest)),
            schedule: Arc::new(Schedule::default()),
            times: Mutex::new(Vec::new()),
            shared: None,
        })
    }

    /// Record this strategy's probes in `schedule`, the scorecard's shared
    /// one (what ran beside what).
    pub fn with_schedule(mut self, schedule: Arc<Schedule>) -> Self {
        self.schedule = schedule;
        self
    }

    /// Borrow the servers `shared` holds (the scorecard's, shared by every
    /// strategy) instead of starting them per probe.
    pub fn with_shared(mut self, shared: Option<Arc<SharedFleets>>) -> Self {
        self.shared = shared;
        self
    }

    /// Every probe run so far, in the order they ran.
    pub fn times(&self) -> Vec<ProbeTime> {
        self.times.lock().unwrap().clone()
    }

    /// The last run of `experiment`'s probe.
    pub fn time_of(&self, experiment: &str) -> Option<ProbeTime> {
        let t = self.times.lock().unwrap();
        t.iter().rev().find(|p| p.experiment == experiment).cloned()
    }

    /// The folder the probes' CSVs are in.
    pub fn dir(&self) -> &Path {
        &self.run.path
    }

    /// Run `p`'s experiment on its probe cells for this strategy.
    pub async fn probe(&self, p: &Probe) -> Result<()> {
        let e = experiments::find(p.experiment)?;
        let ctx = context(
            self.cfg,
            e,
            &self.run,
            vec![self.name.clone()],
            self.manifest.clone(),
            self.shared.clone(),
        )?;
        {
            let mut m = self.manifest.lock().unwrap();
            m.started_experiment(e.name, &ctx.params);
            m.save(&self.run)?;
        }
        let t = Instant::now();
        // Ends when dropped, also when the probe's time limit drops it.
        let span = self.schedule.begin(&self.name, e.name);
        let out = (e.run)(&ctx).await;
        let mut time = span.end(p.alone);
        (time.disturbed, time.redone) = disturbed(&self.run, e.name);
        let outcome = match &out {
            Ok(()) => "done".to_string(),
            Err(e) => format!("failed: {e}"),
        };
        let mut m = self.manifest.lock().unwrap();
        m.ended_experiment(e.name, t.elapsed().as_secs_f64(), &outcome);
        m.note(
            e.name,
            "scorecard",
            serde_json::to_value(&time).unwrap_or_default(),
        );
        self.times.lock().unwrap().push(time);
        // The run ends with its last probe, whichever part that is in.
        m.ended = Some(now_rfc3339());
        m.save(&self.run)?;
        out
    }
}

/// The trials of `experiment` committed disturbed in the probe folder's
/// `schedule.csv` (`cell trial N: why`), and the attempts redone.
fn disturbed(run: &RunDir, experiment: &str) -> (Vec<String>, u64) {
    let path = run.file(crate::run::parallel::SCHEDULE_CSV);
    let Ok(mut r) = csv::Reader::from_path(&path) else {
        return (Vec::new(), 0);
    };
    let mut out = (Vec::new(), 0);
    for row in r
        .deserialize::<crate::run::parallel::ScheduleRow>()
        .flatten()
    {
        if row.experiment != experiment {
            continue;
        }
        if !row.committed {
            out.1 += 1;
        } else if !row.disturbed.is_empty() {
            out.0.push(format!(
                "{} trial {}: {}",
                row.cell, row.trial, row.disturbed
            ));
        }
    }
    out
}

/// Parse every probe table this scorecard will run into its experiment's
/// parameters (validation mode: nothing starts, nothing is written); the
/// problems, all at once.
pub async fn validate(cfg: &Config) -> Result<()> {
    let Some(first) = cfg.strategies.first() else {
        return Ok(());
    };
    let scratch = tempfile::tempdir()
        .map_err(|e| Error::io("creating a scratch folder to check the probe tables", e))?;
    let run = RunDir::scratch(scratch.path());
    let manifest = Arc::new(Mutex::new(RunManifest::default()));
    let mut problems = Vec::new();
    for p in PROBES.iter().filter(|p| p.skip(cfg).is_none()) {
        let e = experiments::find(p.experiment)?;
        let ctx = match context(cfg, e, &run, vec![first.clone()], manifest.clone(), None) {
            Ok(c) => c.validate_only(),
            Err(err) => {
                problems.push(err.to_string());
                continue;
            }
        };
        match (e.run)(&ctx).await {
            Err(Error::Validated) => {}
            Err(err) => problems.push(err.to_string()),
            Ok(()) => problems.push(format!(
                "experiment `{}` did not parse its probe parameters before doing work",
                e.name
            )),
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(Error::Other(format!(
            "the scorecard was not started; fix these first:\n  {}",
            problems.join("\n  ")
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folder_names_keep_only_safe_characters() {
        assert_eq!(folder_name("token-bucket"), "token-bucket");
        assert_eq!(folder_name("../a b/c"), ".._a_b_c");
    }

    /// Every probe table of the shipped experiments parses into its
    /// experiment's parameters at every size (no server is started).
    #[tokio::test]
    async fn every_shipped_probe_table_parses_at_every_size() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let out = tempfile::tempdir().unwrap();
        for size in [
            crate::run::Size::Smoke,
            crate::run::Size::Quick,
            crate::run::Size::Full,
        ] {
            let cfg = Config {
                strategies: vec!["token-bucket".into()],
                dir: None,
                size,
                // Validation stops before a server would start; the path is not run.
                target: ScorecardServer::Own(limitbench_core::fleet::RedisBinary {
                    path: "redis-server".into(),
                    version: "7.0.0".into(),
                }),
                key_prefix: "limitbench:test:".into(),
                out: out.path().to_path_buf(),
                experiments_dir: root.join("experiments"),
                promise_limit: None,
                promise_window_ms: None,
                broken: Vec::new(),
                lanes: 1,
            };
            validate(&cfg).await.unwrap();
        }
    }

    #[tokio::test]
    async fn a_broken_probe_table_is_named_before_anything_runs() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let dir = tempfile::tempdir().unwrap();
        for f in std::fs::read_dir(root.join("experiments"))
            .unwrap()
            .flatten()
        {
            std::fs::copy(f.path(), dir.path().join(f.file_name())).unwrap();
        }
        let p = dir.path().join("concurrency.toml");
        let text = std::fs::read_to_string(&p)
            .unwrap()
            .replace("workers = [64]", "workers = [\"64\"]");
        std::fs::write(&p, text).unwrap();
        let cfg = Config {
            strategies: vec!["token-bucket".into()],
            dir: None,
            size: crate::run::Size::Quick,
            target: ScorecardServer::Own(limitbench_core::fleet::RedisBinary {
                path: "redis-server".into(),
                version: "7.0.0".into(),
            }),
            key_prefix: "limitbench:test:".into(),
            out: dir.path().join("out"),
            experiments_dir: dir.path().to_path_buf(),
            promise_limit: None,
            promise_window_ms: None,
            broken: Vec::new(),
            lanes: 1,
        };
        let e = validate(&cfg).await.unwrap_err().to_string();
        assert!(
            e.contains("concurrency.toml") && e.contains("[probe] workers"),
            "{e}"
        );
    }
}
