//! One session of `limitbench run`: validate every input before the first
//! trial, then run the experiments in order through their sweeps, keep the
//! manifest's per-session times, compress a finished run's large tables
//! and point `data/latest` at a run that measured something.
//!
//! Both `app::run` (the first session) and `app::adaptive` (the rounds of
//! `--until-decisive`) start sessions through [`run_session`]; this module
//! imports neither. What a session is asked ([`RunRequest`], with its
//! [`ServerChoice`]) is plain data in `request.rs` and `server.rs`. The
//! steps, in the order they must stay in:
//!
//! - `experiment_names`: the experiments asked for, the strategies checked;
//! - `choose_server`: the user's server (claimed first) or the binary;
//! - `validate`: every experiment file and strategy script, before any write;
//! - `prepare`: the run folder, the manifest, the number of lanes;
//! - `lanes`: the experiments, in order or in lanes;
//! - `finish`: the manifest's end, the clean-up, compression, `latest`.

use std::net::SocketAddr;
use std::path::Path;

use anyhow::Result;

use crate::experiments;
use crate::run::manifest::RunInputs;
use crate::run::record::{RunDir, now_rfc3339};
use crate::run::shard::Shard;
use limitbench_core::fleet::RedisBinary;
use limitbench_core::fleet::external::UserServer;
use limitbench_core::strategy::{self, Options};

mod lanes;
mod preflight;
mod prepare;
mod request;
mod server;
mod validate;

pub use request::RunRequest;
pub use server::ServerChoice;

/// A session's server: the user's (claimed, with its address) or the
/// binary the harness starts.
struct Chosen {
    user: Option<UserServer>,
    redis_url: Option<SocketAddr>,
    redis: Option<RedisBinary>,
}

/// One session of a run: its exit status, the run folder (None if nothing
/// was created) and the experiments it ran.
pub(crate) async fn run_session(
    a: RunRequest,
    root: &Path,
) -> Result<(i32, Option<RunDir>, Vec<&'static str>)> {
    let shard = Shard::resolve(a.shard.as_deref(), a.shard_count, |v| std::env::var(v).ok())?;
    let names = experiment_names(&a)?;
    let data_dir = a.data_dir.clone().unwrap_or_else(|| root.join("data"));
    let server = choose_server(&a, &data_dir, &names).await?;
    let experiments_dir = a
        .experiments_dir
        .clone()
        .unwrap_or_else(|| root.join("experiments"));
    let inputs = RunInputs {
        strategy_filter: a.strategy.clone(),
        strategy_dir: a.dir.as_ref().map(|d| d.display().to_string()),
        scripts: validate::script_digests(root, a.dir.as_deref())?,
    };
    // Everything this run will read is checked before the first trial: a
    // broken file of the last experiment must not surface after an hour.
    let (redis, redis_url) = (server.redis.as_ref(), server.redis_url);
    validate::validate(&names, &a, &experiments_dir, redis, redis_url).await?;

    // The machine before anything is written: busy stops the run here.
    let preflight = preflight::check(&a, &names).await?;
    let (run, _lock) = prepare::open_run_dir(&a, &data_dir, server.user.is_some())?;
    let manifest = prepare::record_start(&run, &a, (redis, redis_url), inputs, shard).await?;
    if let Some(p) = preflight {
        let mut m = manifest.lock().unwrap();
        m.preflight = Some(preflight::merge(m.preflight.as_ref(), p));
        m.save(&run)?;
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
    let parallel = prepare::choose_parallel(a.parallel).await;
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
    let lanes = lanes::Lanes {
        run: &run,
        manifest: &manifest,
        request: &a,
        experiments_dir,
        redis: server.redis.clone(),
        redis_url,
        shard,
    };
    let timings = lanes.run_all(&names, parallel.0).await?;
    let status = finish(&run, &manifest, server.user.as_ref(), &data_dir, &timings).await?;
    Ok((status, Some(run), names))
}

/// The experiments asked for, in order (`all`: every one), after checking
/// that every strategy of `--strategy` builds.
fn experiment_names(a: &RunRequest) -> Result<Vec<&'static str>> {
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
    Ok(names)
}

/// The session's server. On a server the user runs: checked, announced and
/// claimed under the run's prefix before anything (validation included)
/// writes to it; an experiment that controls its own servers is refused there.
async fn choose_server(a: &RunRequest, data_dir: &Path, names: &[&'static str]) -> Result<Chosen> {
    let user = match &a.server.redis_url {
        Some(url) => {
            let id = match &a.resume {
                Some(r) => Path::new(r)
                    .file_name()
                    .map(|f| f.to_string_lossy().into_owned())
                    .unwrap_or_else(|| r.clone()),
                None => RunDir::free_id(data_dir, a.run_id.as_deref()),
            };
            Some(
                a.server
                    .open_user_server(url, &id, a.resume.is_some())
                    .await?,
            )
        }
        None => None,
    };
    // A server the user runs on this machine is what the run measures:
    // its CPU is not noise (run::noise).
    if let Some(u) = &user {
        for pid in u.local_pids().await {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            if let Some((_, p)) = crate::run::proctree::parse_stat(&stat)
                && (p.name.contains("redis") || p.name.contains("valkey"))
            {
                crate::run::proctree::measured_server(pid);
            }
        }
    }
    let redis_url = user.as_ref().map(|u| u.addr);
    let redis = match redis_url {
        Some(_) => None,
        None => Some(RedisBinary::locate(a.server.redis_server.as_deref())?),
    };
    for n in names {
        let d = experiments::find(n)?;
        if redis_url.is_some() && !d.allows_external {
            anyhow::bail!(
                "experiment `{n}` starts and controls its own servers; it cannot run with --redis-url"
            );
        }
    }
    Ok(Chosen {
        user,
        redis_url,
        redis,
    })
}

/// The end of a session: the manifest's end, the user server's clean-up,
/// the large tables compressed, `data/latest`, the time per experiment.
/// Returns the session's exit status.
async fn finish(
    run: &RunDir,
    manifest: &prepare::SharedManifest,
    user_server: Option<&UserServer>,
    data_dir: &Path,
    timings: &[lanes::Timing],
) -> Result<i32> {
    let mut failures = timings.iter().filter(|t| t.2 != "done").count();
    {
        let mut m = manifest.lock().unwrap();
        m.ended = Some(now_rfc3339());
        m.save(run)?;
    }
    // A clean-up that fails (a stalled server) is reported, not hidden
    // behind the experiments' outcome, and makes the exit non-zero.
    if let Some(u) = user_server
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
        run.point_latest(data_dir);
    }
    eprintln!("limitbench: time per experiment (this session):");
    for (n, s, o) in timings {
        eprintln!("  {n:<16} {s:>8.1} s  {o}");
    }
    if measured {
        eprintln!(
            "limitbench: claims, report and figures: limitbench analyze {}",
            run.path.display()
        );
    }
    Ok(if failures > 0 { 1 } else { 0 })
}
