//! `limitbench check`: the correctness checks (`limitbench::check`) on one
//! strategy, on the harness's own redis-server or the user's; exits 1 if
//! any fails.

use std::path::PathBuf;

use anyhow::{Context, Result};

use super::server_args::ServerArgs;
use limitbench_core::strategy::{self, Options};

#[derive(clap::Args)]
pub struct CheckArgs {
    /// A strategy's name (a built-in, or an external manifest's `name` in
    /// --dir or lua/external), or the path of an external manifest
    /// (`my-limiter.toml`: its folder is the --dir).
    strategy: String,
    #[arg(long)]
    dir: Option<PathBuf>,
    /// The limit of the exact-limit, cost and refill checks.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    limit: u64,
    /// The refill check's window, with a unit: 1s, 2s, 500ms.
    #[arg(long, default_value = "1s", value_parser = limitbench::check::parse_window)]
    window: u64,
    /// Strategy option key=value (repeatable), e.g. invocation=fcall.
    #[arg(long = "opt")]
    opts: Vec<String>,
    #[command(flatten)]
    server: ServerArgs,
}

pub async fn run(mut a: CheckArgs) -> Result<i32> {
    let name = resolve_manifest_path(&mut a)?;
    let opts = Options::parse_pairs(&a.opts)?;
    warn_about_manifests(&name, a.dir.as_ref())?;
    // Built once to name a bad strategy before any server is touched,
    // then again after the server is claimed (function names carry
    // the prefix on a server the user runs).
    strategy::build(&name, a.dir.as_deref(), &opts)?;
    let server = a.server.choice();
    let (fleet, user_server) =
        server
            .standalone()
            .await
            .context(if server.redis_url.is_some() {
                "the server to check"
            } else {
                "starting redis-server"
            })?;
    let s = strategy::build(&name, a.dir.as_deref(), &opts)?;
    let rebuild = {
        let (name, dir, opts) = (name.clone(), a.dir.clone(), opts.clone());
        move |mode: strategy::Invocation| {
            strategy::build(
                &name,
                dir.as_deref(),
                &opts.clone().with("invocation", mode.as_str()),
            )
        }
    };
    let settings = limitbench::check::Settings {
        limit: a.limit,
        window_ms: a.window,
        rebuild: Some(Box::new(rebuild)),
    };
    let results = limitbench::check::run_checks_with(s.clone(), &fleet, &settings).await;
    if let Some(u) = &user_server {
        u.clean_up().await?;
    }
    let results = results?;
    let failed = print_results(&results);
    if let Some(bug) = s.info().known_bug {
        println!("note: {name} is a deliberately buggy design: {bug}");
    }
    if failed > 0 {
        println!(
            "{failed} of {} checks failed or could not run for {name}",
            results.len()
        );
        return Ok(1);
    }
    let na = results.iter().filter(|r| r.not_applicable).count();
    if na > 0 {
        println!(
            "all {} checks that apply passed for {name} ({na} not applicable)",
            results.len() - na
        );
    } else {
        println!("all {} checks passed for {name}", results.len());
    }
    Ok(0)
}

/// `check path/to/limiter.toml`: the manifest's `name`, its folder as the
/// --dir (a --dir beside it must be that folder). A plain name is returned
/// as it is.
fn resolve_manifest_path(a: &mut CheckArgs) -> Result<String> {
    let path = std::path::Path::new(&a.strategy);
    let looks_like_path = a.strategy.ends_with(".toml") || a.strategy.contains('/');
    if !looks_like_path {
        return Ok(a.strategy.clone());
    }
    if !path.is_file() {
        anyhow::bail!(
            "`{}` looks like a manifest's path but is not a file; give a strategy's name (`limitbench strategies` lists them) or the path of an external manifest (.toml)",
            a.strategy
        );
    }
    let m = strategy::external::Manifest::load(path)?;
    let folder = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."))
        .to_path_buf();
    if let Some(d) = &a.dir
        && d.canonicalize().ok() != folder.canonicalize().ok()
    {
        anyhow::bail!(
            "--dir {} and the manifest's folder {} differ: give one of them",
            d.display(),
            folder.display()
        );
    }
    a.dir = Some(folder);
    Ok(m.name)
}

/// The external manifests that do not load (the other strategies still
/// do), and the warnings of the one checked.
fn warn_about_manifests(name: &str, dir: Option<&PathBuf>) -> Result<()> {
    let folder = strategy::external::scan(dir.map(PathBuf::as_path))?;
    for b in folder.broken_text() {
        eprintln!("limitbench: warning: not loaded (other strategies still are): {b}");
    }
    if let Some(m) = folder.manifests.iter().find(|m| m.name == name) {
        for w in &m.warnings {
            eprintln!("limitbench: warning: {w}");
        }
    }
    Ok(())
}

/// One line per check; returns how many failed or could not run.
fn print_results(results: &[limitbench::check::CheckResult]) -> usize {
    let mut failed = 0;
    for r in results {
        match &r.error {
            None => println!("{:<5} {:<14} {}", r.verdict(), r.name, r.detail),
            Some(e) => println!(
                "{:<5} {:<14} {}; Redis or the harness answered: {e}",
                r.verdict(),
                r.name,
                r.detail
            ),
        }
        failed += usize::from(!r.passed);
    }
    failed
}
