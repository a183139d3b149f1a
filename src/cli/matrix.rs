//! `limitbench servers` and `limitbench matrix`: the same experiments on
//! every server of `limitbench::servers::SERVERS`, one sub-folder each.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Parser;

use limitbench::app;
use limitbench::experiments::Size;
use limitbench::run::record::now_rfc3339;
use limitbench::servers::{self, Availability, identity};

#[derive(clap::Args)]
pub struct ServersArgs {
    /// Download the wheels that are not cached yet.
    #[arg(long)]
    fetch: bool,
    /// Only these servers (comma-separated, or `all`).
    #[arg(long, value_delimiter = ',')]
    server: Vec<String>,
}

/// The experiments the matrix runs when none are named: those whose claims
/// depend on the server (memory layout, expiry, scripts, cluster errors,
/// atomicity), not on the network or the client.
pub const DEFAULT_EXPERIMENTS: &[&str] = &[
    "memory",
    "stalls",
    "script-survival",
    "cluster",
    "concurrency",
];

#[derive(clap::Args)]
pub struct MatrixArgs {
    /// Experiments to run on each server (default: memory stalls
    /// script-survival cluster concurrency; `all` for every one).
    experiments: Vec<String>,
    /// The servers (comma-separated, or `all`).
    #[arg(long, value_delimiter = ',', default_value = "all")]
    server: Vec<String>,
    #[arg(long, value_enum, default_value = "full")]
    size: Size,
    /// The scorecard of the built-ins on each server at this size.
    #[arg(long, value_enum, default_value = "quick")]
    scorecard_size: Size,
    /// No scorecard.
    #[arg(long)]
    no_scorecard: bool,
    /// Name of the run folder (default: servers-<UTC date and time>).
    #[arg(long, conflicts_with = "resume")]
    run_id: Option<String>,
    /// Continue a matrix run: finished servers are kept, the others resumed.
    #[arg(long)]
    resume: Option<String>,
    #[arg(long, default_value_t = limitbench::run::seeds::DEFAULT_SEED)]
    seed: u64,
    /// Where run folders go; default: data/ in the project.
    #[arg(long)]
    data_dir: Option<PathBuf>,
}

/// One line per server: name, product, version, allocator, licence, status.
pub async fn list(a: ServersArgs) -> Result<i32> {
    let cache = servers::cache_dir();
    println!("cache: {}", cache.display());
    println!(
        "{:<11} {:<7} {:<8} {:<31} {:<11} licence",
        "name", "product", "version", "allocator (INFO / --version)", "status"
    );
    for spec in servers::select(&a.server)? {
        let avail = if a.fetch {
            spec.fetch(&cache)
        } else {
            spec.availability(&cache)
        };
        let (version, alloc, status, why) = match &avail {
            Availability::Ready(bin) => match identity::probe(bin).await {
                Ok(id) => (
                    format!("{} {}", id.product, id.version),
                    format!("{} / {}", id.mem_allocator, id.version_malloc),
                    "ready".to_string(),
                    None,
                ),
                Err(e) => (
                    spec.version.to_string(),
                    "?".into(),
                    "broken".into(),
                    Some(format!("does not start: {e}")),
                ),
            },
            Availability::Fetchable => (
                spec.version.to_string(),
                "?".into(),
                "fetchable".into(),
                None,
            ),
            Availability::Unavailable(why) => (
                spec.version.to_string(),
                "?".into(),
                "unavailable".into(),
                Some(why.clone()),
            ),
        };
        let version = version.split(' ').next_back().unwrap_or("").to_string();
        println!(
            "{:<11} {:<7} {:<8} {:<31} {:<11} {}",
            spec.name, spec.product, version, alloc, status, spec.licence
        );
        if let Some(w) = why {
            println!("  reason: {w}");
        }
    }
    Ok(0)
}

/// Per server: its status in the matrix and what was measured.
#[derive(serde::Serialize, serde::Deserialize, Default, Clone)]
pub struct ServerEntry {
    pub name: String,
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub identity: Option<identity::Identity>,
    pub run_seconds: f64,
    pub scorecard_seconds: f64,
    pub licence: String,
}

// Longer than 120 lines: fetch, probe, run, scorecard, analyze per server, then the table; one pass in that order.
pub async fn matrix(a: MatrixArgs, root: &Path) -> Result<i32> {
    let specs = servers::select(&a.server)?;
    let experiments: Vec<String> = if a.experiments.is_empty() {
        DEFAULT_EXPERIMENTS.iter().map(|s| s.to_string()).collect()
    } else {
        a.experiments.clone()
    };
    for e in &experiments {
        if e != "all" {
            limitbench::experiments::find(e)?;
        }
    }
    let data_dir = a.data_dir.clone().unwrap_or_else(|| root.join("data"));
    let run_dir = match &a.resume {
        Some(id) => {
            let p = if Path::new(id).is_dir() {
                PathBuf::from(id)
            } else {
                data_dir.join(id)
            };
            if !p.is_dir() {
                anyhow::bail!("no matrix run folder {} to resume", p.display());
            }
            p
        }
        None => {
            let id = a.run_id.clone().unwrap_or_else(|| {
                format!(
                    "servers-{}",
                    now_rfc3339()
                        .replace([':', '-'], "")
                        .replace('T', "-")
                        .trim_end_matches('Z')
                )
            });
            let p = data_dir.join(&id);
            if p.exists() {
                anyhow::bail!(
                    "{} exists; choose another --run-id or --resume it",
                    p.display()
                );
            }
            std::fs::create_dir_all(&p).with_context(|| format!("creating {}", p.display()))?;
            p
        }
    };
    let cache = servers::cache_dir();
    let index_path = run_dir.join("servers.json");
    let mut entries: Vec<ServerEntry> = std::fs::read_to_string(&index_path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    let save = |entries: &Vec<ServerEntry>| -> Result<()> {
        std::fs::write(&index_path, serde_json::to_string_pretty(entries)?)
            .with_context(|| format!("writing {}", index_path.display()))
    };
    eprintln!(
        "limitbench: matrix of {} servers, writing {}",
        specs.len(),
        run_dir.display()
    );
    let mut failures = 0;
    for spec in &specs {
        let pos = match entries.iter().position(|e| e.name == spec.name) {
            Some(p) => p,
            None => {
                entries.push(ServerEntry {
                    name: spec.name.into(),
                    ..Default::default()
                });
                entries.len() - 1
            }
        };
        entries[pos].licence = spec.licence.into();
        let bin = match spec.fetch(&cache) {
            Availability::Ready(b) => b,
            Availability::Fetchable => unreachable!("fetch leaves no server fetchable"),
            Availability::Unavailable(why) => {
                eprintln!("limitbench: server {} skipped: {why}", spec.name);
                entries[pos].status = "skipped".into();
                entries[pos].reason = Some(why);
                save(&entries)?;
                continue;
            }
        };
        let id = match identity::probe(&bin).await {
            Ok(id) => id,
            Err(e) => {
                let why = format!("does not start: {e}");
                eprintln!("limitbench: server {} skipped: {why}", spec.name);
                entries[pos].status = "skipped".into();
                entries[pos].reason = Some(why);
                save(&entries)?;
                continue;
            }
        };
        eprintln!(
            "limitbench: server {}: {} (mem_allocator {}, --version malloc {})",
            spec.name,
            id.label(),
            id.mem_allocator,
            id.version_malloc
        );
        entries[pos].identity = Some(id.clone());
        entries[pos].reason = None;
        let sub = run_dir.join(spec.name);
        if !finished(&sub) {
            entries[pos].status = "running".into();
            save(&entries)?;
            let mut args: Vec<String> = experiments.clone();
            args.extend(["--size".into(), a.size.as_str().into()]);
            args.extend(["--seed".into(), a.seed.to_string()]);
            // One experiment at a time: the servers' columns are compared
            // with each other, so each runs as the committed matrix did.
            args.extend(["--parallel".into(), "1".into()]);
            args.extend(["--data-dir".into(), run_dir.display().to_string()]);
            args.push("--redis-server".into());
            args.push(bin.path.display().to_string());
            if sub.join("manifest.json").exists() {
                args.extend(["--resume".into(), spec.name.into()]);
            } else {
                args.extend(["--run-id".into(), spec.name.into()]);
            }
            #[derive(Parser)]
            struct RunCmd {
                #[command(flatten)]
                run: app::run::RunArgs,
            }
            let mut run =
                RunCmd::try_parse_from(std::iter::once("limitbench".to_string()).chain(args))
                    .context("building the run's arguments")?
                    .run;
            run.server_identity = Some(id.to_json());
            let t = Instant::now();
            let code = app::run::run_experiments(run, root).await?;
            entries[pos].run_seconds += t.elapsed().as_secs_f64();
            if code != 0 {
                failures += 1;
                entries[pos].status = "failed".into();
                save(&entries)?;
                continue;
            }
        }
        let _ = std::fs::remove_file(run_dir.join("latest"));
        if !a.no_scorecard && !sub.join("scorecard.csv").exists() {
            let t = Instant::now();
            let args = vec![
                "--size".to_string(),
                a.scorecard_size.as_str().into(),
                "--data-dir".into(),
                run_dir.display().to_string(),
                "--run-id".into(),
                spec.name.into(),
                "--redis-server".into(),
                bin.path.display().to_string(),
            ];
            #[derive(Parser)]
            struct ScoreCmd {
                #[command(flatten)]
                card: super::scorecard::ScorecardArgs,
            }
            let card =
                ScoreCmd::try_parse_from(std::iter::once("limitbench".to_string()).chain(args))
                    .context("building the scorecard's arguments")?
                    .card;
            let out = super::scorecard::scorecard(card, root).await;
            entries[pos].scorecard_seconds += t.elapsed().as_secs_f64();
            if let Err(e) = out {
                eprintln!("limitbench: scorecard on {} failed: {e:#}", spec.name);
                failures += 1;
            }
        }
        entries[pos].status = "done".into();
        save(&entries)?;
    }
    // The analysis: each server's claims, then one table across them.
    let claims = root.join("analysis/claims.toml");
    let entries_id: Vec<app::matrix::ServerColumn> = entries
        .iter()
        .map(|e| app::matrix::ServerColumn {
            name: e.name.clone(),
            status: e.status.clone(),
            reason: e.reason.clone(),
            identity: e.identity.clone(),
            run_seconds: e.run_seconds,
            scorecard_seconds: e.scorecard_seconds,
        })
        .collect();
    let written = app::matrix::analyze_matrix(&run_dir, &claims, &entries_id)?;
    for f in &written {
        eprintln!("limitbench: wrote {}", f.display());
    }
    eprintln!("limitbench: time per server:");
    for e in &entries {
        eprintln!(
            "  {:<11} {:<8} run {:>7.1} s  scorecard {:>6.1} s{}",
            e.name,
            e.status,
            e.run_seconds,
            e.scorecard_seconds,
            e.reason
                .as_deref()
                .map(|r| format!("  ({r})"))
                .unwrap_or_default()
        );
    }
    println!("{}", run_dir.display());
    Ok(if failures > 0 { 1 } else { 0 })
}

/// A server's run finished: its manifest has an end and every experiment is done.
fn finished(sub: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(sub.join("manifest.json")) else {
        return false;
    };
    let Ok(m) = serde_json::from_str::<serde_json::Value>(&text) else {
        return false;
    };
    m["ended"].is_string()
        && m["experiments"]
            .as_object()
            .is_some_and(|e| e.values().all(|x| x["outcome"] == "done"))
}
