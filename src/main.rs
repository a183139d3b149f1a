//! The `limitbench` command line. Errors from the library arrive here as
//! `anyhow` errors and leave as a message and a non-zero exit.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};

use limitbench::fleet::{self, Fleet, RedisBinary, ServerConfig};
use limitbench::strategy::{self, Options};

#[derive(Parser)]
#[command(
    name = "limitbench",
    version,
    about = "How Redis-backed rate limiters behave, measured"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args, Clone)]
struct Target {
    /// Use this Redis (loopback only) instead of starting one.
    #[arg(long, env = "LIMITBENCH_REDIS_URL")]
    redis_url: Option<String>,
    /// The redis-server binary to start (default: from PATH).
    #[arg(long)]
    redis_server: Option<PathBuf>,
}

impl Target {
    async fn standalone(&self) -> Result<Fleet> {
        if let Some(url) = &self.redis_url {
            return Ok(Fleet::external(fleet::parse_redis_url(url)?));
        }
        let bin = RedisBinary::locate(self.redis_server.as_deref())?;
        Ok(Fleet::standalone(&bin, ServerConfig::default()).await?)
    }
}

#[derive(Subcommand)]
enum Command {
    /// List the strategies: name, kind, invocation modes, keys.
    Strategies {
        /// A folder of external strategies (Lua + TOML); default lua/external.
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Run the correctness checks on one strategy; exits 1 if any fails.
    Check {
        strategy: String,
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Strategy option key=value (repeatable), e.g. invocation=fcall.
        #[arg(long = "opt")]
        opts: Vec<String>,
        #[command(flatten)]
        target: Target,
    },
}

#[tokio::main]
async fn main() {
    fleet::reaper::install_handlers();
    let cli = Cli::parse();
    let code = match run(cli).await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("limitbench: error: {e:#}");
            2
        }
    };
    std::process::exit(code);
}

async fn run(cli: Cli) -> Result<i32> {
    match cli.command {
        Command::Strategies { dir } => {
            let names = strategy::all_names(dir.as_deref())?;
            println!(
                "{:<28} {:<12} {:<44} keys",
                "name", "kind", "invocation modes"
            );
            for name in names {
                let s = strategy::build(&name, dir.as_deref(), &Options::default())?;
                let i = s.info();
                let modes = if i.modes.is_empty() {
                    "-".to_string()
                } else {
                    i.modes
                        .iter()
                        .map(|m| m.as_str())
                        .collect::<Vec<_>>()
                        .join(",")
                };
                println!(
                    "{:<28} {:<12} {:<44} {}",
                    i.name,
                    i.kind.as_str(),
                    modes,
                    i.keys
                );
            }
            Ok(0)
        }
        Command::Check {
            strategy: name,
            dir,
            opts,
            target,
        } => {
            let opts = Options::parse_pairs(&opts)?;
            let s = strategy::build(&name, dir.as_deref(), &opts)?;
            let fleet = target.standalone().await.context("starting redis-server")?;
            let results = limitbench::check::run_checks(s.clone(), &fleet).await?;
            let mut failed = 0;
            for r in &results {
                println!(
                    "{:<4} {:<14} {}",
                    if r.passed { "pass" } else { "FAIL" },
                    r.name,
                    r.detail
                );
                failed += usize::from(!r.passed);
            }
            if let Some(bug) = s.info().known_bug {
                println!("note: {name} is a deliberately buggy design: {bug}");
            }
            if failed > 0 {
                println!("{failed} of {} checks failed for {name}", results.len());
                return Ok(1);
            }
            println!("all {} checks passed for {name}", results.len());
            Ok(0)
        }
    }
}
