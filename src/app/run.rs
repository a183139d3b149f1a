//! `limitbench run`: one session (`app::session`), then (with
//! `--until-decisive`) the rounds of extra trials (`app::adaptive`); prints
//! the run folder last.

use std::path::Path;

use anyhow::Result;

use super::session::{RunRequest, run_session};
use crate::run::shard::Shard;

/// `limitbench run`: one session, then (with --until-decisive) the rounds
/// of extra trials; prints the run folder last.
pub async fn run_experiments(a: RunRequest, root: &Path) -> Result<i32> {
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
    let started = std::time::Instant::now();
    let (status, run, names) = run_session(a.clone(), root).await?;
    let session_s = started.elapsed().as_secs_f64();
    let status = match (until, &run) {
        (true, Some(run)) => {
            super::adaptive::rounds(&a, root, run, &names, status, session_s).await?
        }
        _ => status,
    };
    if let Some(run) = run {
        println!("{}", run.path.display());
    }
    Ok(status)
}
