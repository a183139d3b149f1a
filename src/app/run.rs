//! `limitbench run`: validate every input before the first trial, then
//! run the experiments in order through their sweeps, keep the manifest's
//! per-session times, compress a finished run's large tables and point
//! `data/latest` at a run that measured something.

use std::path::PathBuf;

use anyhow::{Context, Result};

use crate::experiments::{self, RunContext, Size};
use crate::fleet::external::{Policy, UserServer};
use crate::fleet::{self, Fleet, RedisBinary, ServerConfig};
use crate::run::manifest::{self as mf, RunInputs, RunManifest};
use crate::run::parallel::{Bound, Part};
use crate::run::record::{RunDir, now_rfc3339};
use crate::run::shard::Shard;
use crate::strategy::{self, Options};

/// Where the harness measures: its own redis-server, or the user's.
#[derive(clap::Args, Clone)]
pub struct Target {
    /// Use this Redis (loopback only) instead of starting one; also from
    /// the environment (LIMITBENCH_REDIS_URL), so a password stays out of `ps`.
    #[arg(long, env = "LIMITBENCH_REDIS_URL", hide_env_values = true)]
    pub redis_url: Option<String>,
    /// On a --redis-url server every key starts with this prefix (default
    /// lb:<run-id>:); it must contain the run id. Everything under it is
    /// removed at the end, also on Ctrl-C.
    #[arg(long)]
    pub key_prefix: Option<String>,
    /// The redis-server binary to start (default: from PATH).
    #[arg(long)]
    pub redis_server: Option<PathBuf>,
}

impl Target {
    /// The server `check` works on: its own, or the user's (checked and
    /// claimed under a prefix of its own, `lb:check-<pid>-<time>:`; the
    /// returned guard removes what was written).
    pub async fn standalone(&self) -> Result<(Fleet, Option<UserServer>)> {
        if let Some(url) = &self.redis_url {
            let id = format!(
                "check-{}-{}",
                std::process::id(),
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_secs())
                    .unwrap_or(0)
            );
            let u = self.open_user_server(url, &id, false).await?;
            return Ok((Fleet::external(u.addr), Some(u)));
        }
        let bin = RedisBinary::locate(self.redis_server.as_deref())?;
        Ok((
            Fleet::standalone(&bin, ServerConfig::default()).await?,
            None,
        ))
    }

    /// Check and claim the user's server for run `id` (loopback only).
    pub async fn open_user_server(&self, url: &str, id: &str, resume: bool) -> Result<UserServer> {
        let prefix = self
            .key_prefix
            .clone()
            .unwrap_or_else(|| fleet::owned::default_prefix(id));
        let policy = Policy {
            allow_remote: false,
            resume,
            cluster: false,
        };
        let u = UserServer::open(url, &prefix, Some(id), policy)
            .await
            .with_context(|| format!("checking --redis-url {}", crate::redact::url(url)))?;
        u.announce();
        Ok(u)
    }
}

#[derive(clap::Args, Clone)]
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
    /// Give up on a trial (or a cell's setup) that runs longer than this
    /// (30s, 500ms, 2m); default: ten times the slowest trial of the cell so far, at
    /// least 60 s (600 s for a cell's first trial and its setup). A trial that hit it is not stored.
    #[arg(long, value_parser = crate::run::deadline::parse_duration)]
    pub stall_after: Option<std::time::Duration>,
    /// Run one shard of the cells, `INDEX/COUNT` (0-based), for a run spread
    /// over machines; join the shards' folders with `limitbench merge`.
    /// Without it the index comes from JOB_COMPLETION_INDEX (Kubernetes
    /// Indexed Job) or SLURM_ARRAY_TASK_ID (Slurm array), if set.
    #[arg(long)]
    pub shard: Option<String>,
    /// The number of shards when the index comes from the batch engine
    /// (default: LIMITBENCH_SHARD_COUNT, then SLURM_ARRAY_TASK_COUNT).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub shard_count: Option<u64>,
    /// Latency-bound experiments to run at once (CPU-bound ones always run
    /// alone); default: 4 per core other processes leave free, 1 to 8
    /// (`run::parallel::default_parallel`). 1 runs everything in order.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=16))]
    pub parallel: Option<u64>,
    /// After the run, give the experiments of `inconclusive` claims more
    /// trials per cell, round by round, until every claim is decided or the
    /// size's cap is reached (`app::adaptive`; recorded in manifest.json).
    #[arg(long)]
    pub until_decisive: bool,
    /// With --until-decisive: cap the trials per cell at this instead of the
    /// size's cap.
    #[arg(long, requires = "until_decisive", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_trials: Option<u64>,
    #[command(flatten)]
    pub target: Target,
    /// What the server is (product, version, allocators, its own defaults),
    /// read by `limitbench matrix` before the run; goes into the manifest.
    #[arg(skip)]
    pub server_identity: Option<serde_json::Value>,
    /// The least trials per cell, per experiment (set by the rounds of
    /// --until-decisive, never on the command line).
    #[arg(skip)]
    pub trial_floors: std::collections::BTreeMap<String, u64>,
}

/// `limitbench run`: one session, then (with --until-decisive) the rounds
/// of extra trials; prints the run folder last.
pub async fn run_experiments(a: RunArgs, root: &std::path::Path) -> Result<i32> {
    let until = a.until_decisive;
    // A shard's folder holds part of the cells: its claims are judged only
    // once the shards are merged, so it cannot decide which need more.
    if until
        && Shard::resolve(a.shard.as_deref(), a.shard_count, |v| std::env::var(v).ok())?.is_some()
    {
        anyhow::bail!(
            "--until-decisive judges the run's claims, which a shard cannot (merge the shards first)"
        );
    }
    let (status, run, names) = run_session(a.clone(), root).await?;
    let status = match (until, &run) {
        (true, Some(run)) => super::adaptive::rounds(&a, root, run, &names, status).await?,
        _ => status,
    };
    if let Some(run) = run {
        println!("{}", run.path.display());
    }
    Ok(status)
}

// Longer than 120 lines: validation of every input before the first trial, then the experiments in order with the manifest's per-session times; the steps must stay in this order.
/// One session of a run: its exit status, the run folder (None if nothing
/// was created) and the experiments it ran.
pub(crate) async fn run_session(
    a: RunArgs,
    root: &std::path::Path,
) -> Result<(i32, Option<RunDir>, Vec<&'static str>)> {
    let shard = Shard::resolve(a.shard.as_deref(), a.shard_count, |v| std::env::var(v).ok())?;
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
    let data_dir = a.data_dir.clone().unwrap_or_else(|| root.join("data"));
    // On a server the user runs: checked, announced and claimed under the
    // run's prefix before anything (validation included) writes to it.
    let user_server = match &a.target.redis_url {
        Some(url) => {
            let id = match &a.resume {
                Some(r) => std::path::Path::new(r)
                    .file_name()
                    .map(|f| f.to_string_lossy().into_owned())
                    .unwrap_or_else(|| r.clone()),
                None => RunDir::free_id(&data_dir, a.run_id.as_deref()),
            };
            Some(
                a.target
                    .open_user_server(url, &id, a.resume.is_some())
                    .await?,
            )
        }
        None => None,
    };
    let redis_url = user_server.as_ref().map(|u| u.addr);
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
        None => match &user_server {
            // The id the prefix was made from.
            Some(_) => RunDir::create(
                &data_dir,
                Some(&RunDir::free_id(&data_dir, a.run_id.as_deref())),
            )?,
            None => RunDir::create(&data_dir, a.run_id.as_deref())?,
        },
    };
    let mut manifest = start_manifest(&run, &a, redis.as_ref(), inputs, shard)?;
    manifest.ended = None;
    manifest.save(&run)?;
    let manifest = std::sync::Arc::new(std::sync::Mutex::new(manifest));
    {
        // Ctrl-C: the manifest records the interruption (the trials
        // committed so far are kept; resume redoes the rest).
        let (m, run) = (manifest.clone(), run.clone());
        crate::fleet::reaper::on_interrupt(move || {
            if let Ok(mut m) = m.try_lock() {
                m.interrupted();
                let _ = m.save(&run);
            }
        });
    }
    eprintln!(
        "limitbench: run {} ({}{}), writing {}",
        run.run_id,
        a.size.as_str(),
        shard
            .map(|s| format!(", shard {}", s.label()))
            .unwrap_or_default(),
        run.path.display()
    );
    let parallel = choose_parallel(a.parallel).await;
    {
        let mut m = manifest.lock().unwrap();
        m.parallel = Some(parallel.1.clone());
        m.save(&run)?;
    }
    eprintln!(
        "limitbench: latency-bound experiments in {} lanes at a time ({})",
        parallel.0,
        parallel.1["how"].as_str().unwrap_or("")
    );
    // One experiment: its context, its run, its time and outcome in the manifest.
    // A lane (Some) is one of several concurrent runs of a latency-bound
    // experiment over its part of the cells; the manifest's start is the
    // first lane's and its end is written once all lanes ended (below).
    // `part`: of an experiment with CPU-bound cells among latency-bound
    // ones, the CPU part runs alone and starts its manifest entry, and the
    // lanes of the rest end it (below).
    let one = |d: &'static experiments::Experiment, lane: Option<Shard>, part: Option<Part>| {
        let (run, manifest, experiments_dir) =
            (run.clone(), manifest.clone(), experiments_dir.clone());
        let (size, seed, filter, dir, redis, stall_after) = (
            a.size,
            a.seed,
            a.strategy.clone(),
            a.dir.clone(),
            redis.clone(),
            a.stall_after,
        );
        let floor = a.trial_floors.get(d.name).copied().unwrap_or(0);
        Box::pin(async move {
            let ctx = match RunContext::new(
                d.name,
                run.clone(),
                size,
                seed,
                filter,
                dir,
                redis,
                redis_url,
                &experiments_dir,
                manifest.clone(),
            ) {
                Ok(mut c) => {
                    c.stall_after = stall_after;
                    c.trial_floor = floor;
                    let bound = match part {
                        Some(Part::Cpu) => Bound::Cpu,
                        _ => d.bound,
                    };
                    let split = part.zip(d.cpu_cells);
                    c.with_shard(shard)
                        .with_lane(lane)
                        .with_bound(bound)
                        .with_part(split)
                }
                Err(e) => return Err(anyhow::Error::from(e)),
            };
            if lane.is_none_or(|l| l.index == 0) && part != Some(Part::Latency) {
                let mut m = manifest.lock().unwrap();
                m.started_experiment(d.name, &ctx.params);
                m.note(
                    d.name,
                    "bound",
                    serde_json::to_value(d.bound).unwrap_or_default(),
                );
                if let Some(l) = lane {
                    m.note(d.name, "lanes", l.count.into());
                }
                if floor > 0 {
                    m.note(d.name, "trial_floor", floor.into());
                }
                m.save(&run)?;
            }
            let t = std::time::Instant::now();
            let out = (d.run)(&ctx).await;
            let secs = t.elapsed().as_secs_f64();
            let outcome = match &out {
                Ok(()) => "done".to_string(),
                Err(e) => {
                    eprintln!("limitbench: experiment {} failed: {e}", d.name);
                    format!("failed: {e}")
                }
            };
            if lane.is_none() && part.is_none() {
                let mut m = manifest.lock().unwrap();
                m.ended_experiment(d.name, secs, &outcome);
                m.save(&run)?;
            }
            Ok::<_, anyhow::Error>((d.name, secs, outcome))
        }) as crate::run::parallel::Job<'_, Result<(&'static str, f64, String)>>
    };
    let experiments: Vec<&'static experiments::Experiment> = names
        .iter()
        .map(|n| experiments::find(n))
        .collect::<Result<_, _>>()?;
    let mut timings = Vec::new();
    if parallel.0 <= 1 {
        for d in &experiments {
            timings.push(one(d, None, None).await?);
        }
    } else {
        // CPU-bound experiments alone, in order; then the latency-bound
        // ones, each split into N lanes (its cells round robin, each lane
        // with its own servers, keys and proxies), N lanes at a time.
        // An experiment with CPU-bound cells among latency-bound ones runs
        // those here too, in its place in the order.
        let mut alone_part: std::collections::BTreeMap<&str, (f64, String)> = Default::default();
        for d in &experiments {
            if d.bound == Bound::Cpu {
                timings.push(one(d, None, None).await?);
            } else if d.cpu_cells.is_some() {
                let (name, secs, outcome) = one(d, None, Some(Part::Cpu)).await?;
                alone_part.insert(name, (secs, outcome));
            }
        }
        let n = parallel.0 as u64;
        let laned: Vec<&'static experiments::Experiment> = experiments
            .iter()
            .filter(|d| d.bound != Bound::Cpu)
            .copied()
            .collect();
        let _holds: Vec<_> = laned
            .iter()
            .map(|d| crate::run::record::LaneHold::new(&run, d.name))
            .collect();
        let jobs: Vec<_> = laned
            .iter()
            .flat_map(|d| (0..n).map(move |k| (*d, Shard { index: k, count: n })))
            .map(|(d, lane)| one(d, Some(lane), d.cpu_cells.map(|_| Part::Latency)))
            .collect();
        let mut per: std::collections::BTreeMap<&str, (f64, String)> = Default::default();
        for r in crate::run::parallel::n_at_a_time(parallel.0, jobs).await {
            let (name, secs, outcome) = r?;
            let e = per.entry(name).or_insert((0.0, "done".to_string()));
            e.0 = e.0.max(secs);
            if outcome != "done" && e.1 == "done" {
                e.1 = outcome;
            }
        }
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
                let mut m = manifest.lock().unwrap();
                m.ended_experiment(d.name, secs, &outcome);
                m.save(&run)?;
            }
            timings.push((d.name, secs, outcome));
        }
    }
    let mut failures = timings.iter().filter(|t| t.2 != "done").count();
    {
        let mut m = manifest.lock().unwrap();
        m.ended = Some(now_rfc3339());
        m.save(&run)?;
    }
    // A clean-up that fails (a stalled server) is reported, not hidden
    // behind the experiments' outcome, and makes the exit non-zero.
    if let Some(u) = &user_server
        && let Err(e) = u.clean_up().await
    {
        eprintln!("limitbench: error: {e}");
        failures += 1;
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
    Ok((if failures > 0 { 1 } else { 0 }, Some(run), names))
}

/// How many latency-bound experiments run at once, and how that was chosen.
async fn choose_parallel(flag: Option<u64>) -> (usize, serde_json::Value) {
    if let Some(n) = flag {
        return (n as usize, serde_json::json!({"n": n, "how": "--parallel"}));
    }
    let cores = std::thread::available_parallelism()
        .map(|c| c.get())
        .unwrap_or(1);
    // What other processes take now, over one second (the noise sampler's
    // view: neither this process nor its servers).
    let sampler = crate::run::noise::NoiseSampler::start();
    let t0 = std::time::Instant::now();
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    let rows = sampler.stop_spans(
        "harness",
        &[("headroom".to_string(), t0, std::time::Instant::now())],
    );
    let others = rows.first().map(|r| r.other_cpu_cores_mean).unwrap_or(0.0);
    let n = crate::run::parallel::default_parallel(cores, others);
    (
        n,
        serde_json::json!({
            "n": n,
            "how": format!("default: 4 per free core, at most 8; {cores} cores, other processes took {others:.2} of a core over 1 s"),
        }),
    )
}

/// The run's manifest: a new one, or the resumed run's after checking that
/// the resume uses the same size, seed and inputs.
fn start_manifest(
    run: &RunDir,
    a: &RunArgs,
    redis: Option<&RedisBinary>,
    inputs: RunInputs,
    shard: Option<Shard>,
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
                None => serde_json::json!({
                    "external": a.target.redis_url.as_deref().map(crate::redact::url),
                    "key_prefix": crate::namespace::namespace(),
                }),
            },
            started: now_rfc3339(),
            inputs: Some(inputs),
            shard,
            ..Default::default()
        };
    } else {
        if manifest.shard != shard {
            let says =
                |s: Option<Shard>| s.map(|s| s.label()).unwrap_or_else(|| "unsharded".into());
            anyhow::bail!(
                "run {} holds shard {}; resume it as the same shard (now: {})",
                run.run_id,
                says(manifest.shard),
                says(shard)
            );
        }
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
