//! `limitbench run`: validate every input before the first trial, then
//! run the experiments in order through their sweeps, keep the manifest's
//! per-session times, compress a finished run's large tables and point
//! `data/latest` at a run that measured something.

use std::path::PathBuf;

use anyhow::{Context, Result};

use crate::experiments::{self, RunContext, Size};
use crate::fleet::{self, Fleet, RedisBinary, ServerConfig};
use crate::run::manifest::{self as mf, RunInputs, RunManifest};
use crate::run::record::{RunDir, now_rfc3339};
use crate::strategy::{self, Options};

/// Where the harness measures: its own redis-server, or the user's.
#[derive(clap::Args, Clone)]
pub struct Target {
    /// Use this Redis (loopback only) instead of starting one.
    #[arg(long, env = "LIMITBENCH_REDIS_URL")]
    pub redis_url: Option<String>,
    /// The redis-server binary to start (default: from PATH).
    #[arg(long)]
    pub redis_server: Option<PathBuf>,
}

impl Target {
    pub async fn standalone(&self) -> Result<Fleet> {
        if let Some(url) = &self.redis_url {
            return Ok(Fleet::external(fleet::parse_redis_url(url)?));
        }
        let bin = RedisBinary::locate(self.redis_server.as_deref())?;
        Ok(Fleet::standalone(&bin, ServerConfig::default()).await?)
    }
}

#[derive(clap::Args)]
pub struct RunArgs {
    /// Experiments to run (`all` for every one, in order).
    #[arg(required = true)]
    pub experiments: Vec<String>,
    #[arg(long, value_enum, default_value = "full")]
    pub size: Size,
    /// Name of the new run folder (default: the UTC date and time).
    #[arg(long, conflicts_with = "resume")]
    pub run_id: Option<String>,
    /// Continue a killed run (its folder name or path): finished trials are kept.
    #[arg(long)]
    pub resume: Option<String>,
    /// Only these strategies (comma-separated), instead of each experiment's list.
    #[arg(long, value_delimiter = ',')]
    pub strategy: Option<Vec<String>>,
    /// Folder of external strategies.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    #[arg(long, default_value_t = crate::run::seeds::DEFAULT_SEED)]
    pub seed: u64,
    /// Where run folders go; default: data/ in the project.
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// The experiment definitions; default: experiments/ in the project.
    #[arg(long)]
    pub experiments_dir: Option<PathBuf>,
    #[command(flatten)]
    pub target: Target,
    /// What the server is (product, version, allocators, its own defaults),
    /// read by `limitbench matrix` before the run; goes into the manifest.
    #[arg(skip)]
    pub server_identity: Option<serde_json::Value>,
}

// Longer than 120 lines: validation of every input before the first trial, then the experiments in order with the manifest's per-session times; the steps must stay in this order.
pub async fn run_experiments(a: RunArgs, root: &std::path::Path) -> Result<i32> {
    let names: Vec<&'static str> = if a.experiments.iter().any(|e| e == "all") {
        experiments::REGISTRY.iter().map(|d| d.name).collect()
    } else {
        a.experiments
            .iter()
            .map(|e| experiments::find(e).map(|d| d.name))
            .collect::<Result<_, _>>()?
    };
    if let Some(list) = &a.strategy {
        for s in list {
            strategy::build(s, a.dir.as_deref(), &Options::default())?;
        }
    }
    let redis_url = a
        .target
        .redis_url
        .as_deref()
        .map(fleet::parse_redis_url)
        .transpose()?;
    let redis = match redis_url {
        Some(_) => None,
        None => Some(RedisBinary::locate(a.target.redis_server.as_deref())?),
    };
    for n in &names {
        let d = experiments::find(n)?;
        if redis_url.is_some() && !d.allows_external {
            anyhow::bail!(
                "experiment `{n}` starts and controls its own servers; it cannot run with --redis-url"
            );
        }
    }
    let data_dir = a.data_dir.clone().unwrap_or_else(|| root.join("data"));
    let experiments_dir = a
        .experiments_dir
        .clone()
        .unwrap_or_else(|| root.join("experiments"));
    let inputs = RunInputs {
        strategy_filter: a.strategy.clone(),
        strategy_dir: a.dir.as_ref().map(|d| d.display().to_string()),
        scripts: script_digests(root, a.dir.as_deref())?,
    };

    // Everything this run will read is checked before the first trial: a
    // broken file of the last experiment must not surface after an hour.
    validate(&names, &a, &experiments_dir, redis.as_ref(), redis_url).await?;

    std::fs::create_dir_all(&data_dir)
        .with_context(|| format!("creating {}", data_dir.display()))?;
    let run = match &a.resume {
        Some(id) => {
            let run = RunDir::open(&data_dir, id)?;
            // A finished run's large tables are compressed; appending needs them plain.
            run.decompress_csvs()?;
            run
        }
        None => RunDir::create(&data_dir, a.run_id.as_deref())?,
    };
    let mut manifest = start_manifest(&run, &a, redis.as_ref(), inputs)?;
    manifest.ended = None;
    manifest.save(&run)?;
    let manifest = std::sync::Arc::new(std::sync::Mutex::new(manifest));
    eprintln!(
        "limitbench: run {} ({}), writing {}",
        run.run_id,
        a.size.as_str(),
        run.path.display()
    );
    let mut timings = Vec::new();
    let mut failures = 0;
    for n in names {
        let d = experiments::find(n)?;
        let ctx = RunContext::new(
            d.name,
            run.clone(),
            a.size,
            a.seed,
            a.strategy.clone(),
            a.dir.clone(),
            redis.clone(),
            redis_url,
            &experiments_dir,
            manifest.clone(),
        )?;
        {
            let mut m = manifest.lock().unwrap();
            m.started_experiment(d.name, &ctx.params);
            m.save(&run)?;
        }
        let t = std::time::Instant::now();
        let out = (d.run)(&ctx).await;
        let secs = t.elapsed().as_secs_f64();
        let outcome = match &out {
            Ok(()) => "done".to_string(),
            Err(e) => {
                failures += 1;
                eprintln!("limitbench: experiment {} failed: {e}", d.name);
                format!("failed: {e}")
            }
        };
        {
            let mut m = manifest.lock().unwrap();
            m.ended_experiment(d.name, secs, &outcome);
            m.save(&run)?;
        }
        timings.push((d.name, secs, outcome));
    }
    {
        let mut m = manifest.lock().unwrap();
        m.ended = Some(now_rfc3339());
        m.save(&run)?;
    }
    // Asked once, before compression renames the tables it reads.
    let measured = run.has_committed_trials();
    // A finished run keeps its large tables compressed (the analysis reads both).
    if failures == 0 {
        for f in run.compress_large_csvs()? {
            eprintln!("limitbench: compressed {}", f.display());
        }
    }
    // `data/latest` names the newest run that measured something.
    if measured {
        run.point_latest(&data_dir);
    }
    eprintln!("limitbench: time per experiment (this session):");
    for (n, s, o) in &timings {
        eprintln!("  {n:<16} {s:>8.1} s  {o}");
    }
    if measured {
        eprintln!(
            "limitbench: claims, report and figures: limitbench analyze {}",
            run.path.display()
        );
    }
    println!("{}", run.path.display());
    Ok(if failures > 0 { 1 } else { 0 })
}

/// The run's manifest: a new one, or the resumed run's after checking that
/// the resume uses the same size, seed and inputs.
fn start_manifest(
    run: &RunDir,
    a: &RunArgs,
    redis: Option<&RedisBinary>,
    inputs: RunInputs,
) -> Result<RunManifest> {
    let mut manifest = RunManifest::load(run)?.unwrap_or_default();
    if manifest.run_id.is_empty() {
        let (commit, dirty) = mf::git_state();
        manifest = RunManifest {
            run_id: run.run_id.clone(),
            git_commit: commit,
            git_dirty: dirty,
            seed: a.seed,
            size: a.size.as_str().into(),
            command: std::env::args().collect::<Vec<_>>().join(" "),
            machine: mf::machine_info(),
            redis_server: match redis {
                Some(b) => {
                    let mut v = serde_json::json!({"path": b.path, "version": b.version});
                    if let Some(serde_json::Value::Object(id)) = &a.server_identity {
                        for (k, x) in id {
                            v[k] = x.clone();
                        }
                    }
                    v
                }
                None => serde_json::json!({"external": a.target.redis_url}),
            },
            started: now_rfc3339(),
            inputs: Some(inputs),
            ..Default::default()
        };
    } else {
        if manifest.size != a.size.as_str() || manifest.seed != a.seed {
            anyhow::bail!(
                "run {} was started with --size {} --seed {}; resume it with the same size and seed",
                run.run_id,
                manifest.size,
                manifest.seed
            );
        }
        if let Some(before) = &manifest.inputs {
            let differs = before.differences(&inputs);
            if !differs.is_empty() {
                anyhow::bail!(
                    "run {} cannot be resumed with different inputs ({}); start a new run instead",
                    run.run_id,
                    differs.join("; ")
                );
            }
        }
    }
    Ok(manifest)
}

/// Check every experiment file (at this size, into its parameter type) and
/// every strategy script the run can use (compiled by SCRIPT LOAD / FUNCTION
/// LOAD on a scratch server) before anything is written.
async fn validate(
    names: &[&'static str],
    a: &RunArgs,
    experiments_dir: &std::path::Path,
    redis: Option<&RedisBinary>,
    redis_url: Option<std::net::SocketAddr>,
) -> Result<()> {
    let scratch = tempfile::tempdir().context("creating a scratch folder")?;
    let run = RunDir::scratch(scratch.path());
    let manifest = std::sync::Arc::new(std::sync::Mutex::new(RunManifest::default()));
    let mut problems = Vec::new();
    for n in names {
        let ctx = RunContext::new(
            n,
            run.clone(),
            a.size,
            a.seed,
            a.strategy.clone(),
            a.dir.clone(),
            redis.cloned(),
            redis_url,
            experiments_dir,
            manifest.clone(),
        );
        match ctx {
            Err(e) => problems.push(e.to_string()),
            Ok(ctx) => {
                let ctx = ctx.validate_only();
                // Every experiment parses its parameters first; in validation
                // mode that is where it stops (tests/cli.rs checks it for all).
                match (experiments::find(n)?.run)(&ctx).await {
                    Err(crate::Error::Validated) => {}
                    Err(e) => problems.push(e.to_string()),
                    Ok(()) => problems.push(format!(
                        "experiment `{n}` did not parse its parameters before doing work"
                    )),
                }
            }
        }
    }
    // A manifest that does not load: the strategies asked for still run,
    // but "every strategy" would quietly lack it, so then it stops the run.
    for b in strategy::external::scan(a.dir.as_deref())?.broken_text() {
        match &a.strategy {
            Some(_) => eprintln!("limitbench: warning: not loaded: {b}"),
            None => problems.push(format!("a strategy manifest does not load: {b}")),
        }
    }
    let strategies = match &a.strategy {
        Some(list) => list.clone(),
        None => strategy::all_names(a.dir.as_deref())?,
    };
    let fleet = match (redis_url, redis) {
        (Some(u), _) => Fleet::external(u),
        (None, Some(bin)) => Fleet::standalone(bin, ServerConfig::default())
            .await
            .context("starting a scratch redis-server to compile the scripts")?,
        (None, None) => unreachable!("a run has a binary or a URL"),
    };
    let mut nodes = fleet.node_connections().await?;
    for name in &strategies {
        let s = strategy::build(name, a.dir.as_deref(), &Options::default())?;
        for node in nodes.iter_mut() {
            if let Err(e) = s.prepare(node).await {
                problems.push(format!("strategy `{name}`: its script does not load: {e}"));
            }
        }
    }
    drop(fleet);
    if !problems.is_empty() {
        anyhow::bail!(
            "the run was not started; fix these first:\n  {}",
            problems.join("\n  ")
        );
    }
    Ok(())
}

/// SHA-1 of every script and external manifest the run can load, so a resume
/// with edited scripts is refused.
fn script_digests(
    root: &std::path::Path,
    dir: Option<&std::path::Path>,
) -> Result<std::collections::BTreeMap<String, String>> {
    let mut out = std::collections::BTreeMap::new();
    let mut folders = vec![root.join("lua"), root.join("lua/external")];
    if let Some(d) = dir {
        folders.push(d.to_path_buf());
    }
    for f in folders {
        let Ok(rd) = std::fs::read_dir(&f) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "lua" || x == "toml") {
                let bytes =
                    std::fs::read(&p).with_context(|| format!("reading {}", p.display()))?;
                out.insert(
                    p.display().to_string(),
                    crate::strategy::script::sha1_hex(&bytes),
                );
            }
        }
    }
    Ok(out)
}
