//! A session's run folder and manifest: the folder created (or the
//! resumed one opened), the manifest started (or checked against the
//! resume's flags) and kept up to date on Ctrl-C, and the number of lanes.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};

use super::request::RunRequest;
use crate::run::lock::RunLock;
use crate::run::manifest::{self as mf, RunInputs, RunManifest};
use crate::run::record::{RunDir, now_rfc3339};
use crate::run::shard::Shard;
use limitbench_core::fleet::RedisBinary;

/// The shared manifest of a session: every experiment (and lane) records
/// its start, end and notes in it.
pub(super) type SharedManifest = Arc<Mutex<RunManifest>>;

/// The session's run folder: the resumed one (its large tables made plain
/// again for appending), or a new one (named by the id the user server's
/// prefix was made from, when there is one).
pub(super) fn open_run_dir(
    a: &RunRequest,
    data_dir: &Path,
    on_user_server: bool,
) -> Result<(RunDir, RunLock)> {
    std::fs::create_dir_all(data_dir)
        .with_context(|| format!("creating {}", data_dir.display()))?;
    let run = match &a.resume {
        Some(id) => {
            let run = RunDir::open(data_dir, id)?;
            // One session of a run at a time (before anything is written).
            let lock = RunLock::take(&run.path, "run --resume")?;
            // A finished run's large tables are compressed; appending needs them plain.
            run.decompress_csvs()?;
            return Ok((run, lock));
        }
        None if on_user_server => {
            // The id the prefix was made from.
            RunDir::create(
                data_dir,
                Some(&RunDir::free_id(data_dir, a.run_id.as_deref())),
            )?
        }
        None => RunDir::create(data_dir, a.run_id.as_deref())?,
    };
    let lock = RunLock::take(&run.path, "run")?;
    Ok((run, lock))
}

/// Start (or continue) the manifest, save it unfinished and keep it
/// updated on Ctrl-C.
pub(super) async fn record_start(
    run: &RunDir,
    a: &RunRequest,
    server: (Option<&RedisBinary>, Option<SocketAddr>),
    inputs: RunInputs,
    shard: Option<Shard>,
) -> Result<SharedManifest> {
    let mut manifest = start_manifest(run, a, server, inputs, shard).await?;
    manifest.ended = None;
    manifest.save(run)?;
    let manifest = Arc::new(Mutex::new(manifest));
    {
        // Ctrl-C: the manifest records the interruption (the trials
        // committed so far are kept; resume redoes the rest).
        let (m, run) = (manifest.clone(), run.clone());
        limitbench_core::fleet::reaper::on_interrupt(move || {
            if let Ok(mut m) = m.try_lock() {
                m.interrupted();
                let _ = m.save(&run);
            }
        });
    }
    Ok(manifest)
}

/// How many latency-bound experiments run at once, and how that was chosen.
pub(super) async fn choose_parallel(flag: Option<u64>) -> (usize, serde_json::Value) {
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
async fn start_manifest(
    run: &RunDir,
    a: &RunRequest,
    (redis, external): (Option<&RedisBinary>, Option<SocketAddr>),
    inputs: RunInputs,
    shard: Option<Shard>,
) -> Result<RunManifest> {
    let manifest = RunManifest::load(run)?.unwrap_or_default();
    if manifest.run_id.is_empty() {
        let server =
            super::server::record(&a.server, redis, a.server_identity.as_ref(), external).await;
        return Ok(new_manifest(run, a, server, inputs, shard));
    }
    check_resume(run, a, &manifest, &inputs, shard)?;
    Ok(manifest)
}

/// A new run's manifest: the project's provenance, the flags, the
/// machine, the server (`server::record`).
fn new_manifest(
    run: &RunDir,
    a: &RunRequest,
    redis_server: serde_json::Value,
    inputs: RunInputs,
    shard: Option<Shard>,
) -> RunManifest {
    let p = crate::run::provenance::project();
    RunManifest {
        run_id: run.run_id.clone(),
        git_commit: p.commit,
        git_dirty: p.dirty,
        git_tree: p.tree,
        git_source: p.source,
        seed: a.seed,
        size: a.size.as_str().into(),
        command: std::env::args().collect::<Vec<_>>().join(" "),
        machine: mf::machine_info(),
        redis_server,
        started: now_rfc3339(),
        inputs: Some(inputs),
        shard,
        ..Default::default()
    }
}

/// A resume continues the same run: the same shard, size, seed and inputs.
fn check_resume(
    run: &RunDir,
    a: &RunRequest,
    manifest: &RunManifest,
    inputs: &RunInputs,
    shard: Option<Shard>,
) -> Result<()> {
    if manifest.shard != shard {
        let says = |s: Option<Shard>| s.map(|s| s.label()).unwrap_or_else(|| "unsharded".into());
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
        let differs = before.differences(inputs);
        if !differs.is_empty() {
            anyhow::bail!(
                "run {} cannot be resumed with different inputs ({}); start a new run instead",
                run.run_id,
                differs.join("; ")
            );
        }
    }
    Ok(())
}
