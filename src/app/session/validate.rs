//! Before the first trial of a session: every experiment file parses at
//! the run's size and every strategy script compiles, and the digests of
//! the scripts a resume must find unchanged.

use anyhow::{Context, Result};

use super::request::RunRequest;
use crate::experiments::{self, RunContext};
use crate::run::manifest::RunManifest;
use crate::run::record::RunDir;
use limitbench_core::fleet::{Fleet, RedisBinary, ServerConfig};
use limitbench_core::strategy::{self, Options};

/// Check every experiment file (at this size, into its parameter type) and
/// every strategy script the run can use (compiled by SCRIPT LOAD / FUNCTION
/// LOAD on a scratch server) before anything is written.
pub(super) async fn validate(
    names: &[&'static str],
    a: &RunRequest,
    experiments_dir: &std::path::Path,
    redis: Option<&RedisBinary>,
    redis_url: Option<std::net::SocketAddr>,
) -> Result<()> {
    let scratch = tempfile::tempdir().context("creating a scratch folder")?;
    let run = RunDir::scratch(scratch.path());
    let manifest = std::sync::Arc::new(std::sync::Mutex::new(RunManifest::default()));
    let mut problems = Vec::new();
    // A server the user runs has room for so many more clients.
    let room = match redis_url {
        Some(u) => client_room(u).await,
        None => None,
    };
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
                if let (Some((room, max, connected)), Some((path, want))) =
                    (room, ctx.largest_connection_count())
                    && want > room
                {
                    problems.push(format!(
                        "experiment `{n}`: {path} = {want} connections at once, more than the server has room for ({max} maxclients, {connected} connected, 8 kept free for others)"
                    ));
                }
                match (experiments::find(n)?.run)(&ctx).await {
                    Err(limitbench_base::Error::Validated) => {}
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

/// How many more clients a server the user runs accepts (its INFO's
/// `maxclients` less the connected clients and 8 kept free for others),
/// with the two figures; None when INFO does not say (an ACL without it).
async fn client_room(addr: std::net::SocketAddr) -> Option<(u64, u64, u64)> {
    let mut c = limitbench_core::resp::Connection::connect(addr)
        .await
        .ok()?;
    let info = limitbench_core::info::read(&mut c, &["clients"])
        .await
        .ok()?;
    let max: u64 = info.get("maxclients")?.parse().ok()?;
    let connected: u64 = info.get("connected_clients")?.parse().ok()?;
    Some((max.saturating_sub(connected + 8), max, connected))
}

/// SHA-1 of every script and external manifest the run can load, so a resume
/// with edited scripts is refused.
pub(super) fn script_digests(
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
                    limitbench_core::strategy::script::sha1_hex(&bytes),
                );
            }
        }
    }
    Ok(out)
}
