//! The `limitbench` command line. Errors from the library arrive here as
//! `anyhow` errors and leave as a message and a non-zero exit.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};

mod cli;

use cli::matrix::{MatrixArgs, ServersArgs};
use cli::scorecard::{ScorecardArgs, scorecard};
use limitbench::app::{self, run::RunArgs, run::Target};
use limitbench::experiments;
use limitbench::strategy::{self, Options};

#[derive(Parser)]
#[command(
    name = "limitbench",
    version,
    about = "How Redis-backed rate limiters behave, measured"
)]
struct Cli {
    /// The limitbench checkout (experiments/, analysis/claims.toml, lua/,
    /// data/); default: found from the binary's location or the current directory.
    #[arg(long, global = true, env = "LIMITBENCH_PROJECT_DIR")]
    project_dir: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
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
        target: Target,
    },
    /// Run experiments and write data/<run-id>/ (CSV per experiment, manifest.json).
    Run(RunArgs),
    /// Join the folders of a sharded run's shards (`run --shard I/N`) into
    /// one run folder, after checking that they are parts of one run (commit,
    /// size, seed, inputs, parameters, redis-server); then analyze it.
    Merge {
        /// The merged run's folder (new, or empty).
        out: PathBuf,
        /// Every shard's run folder.
        #[arg(required = true, num_args = 2..)]
        runs: Vec<PathBuf>,
    },
    /// List the experiments and the claims their rows are evidence for.
    Experiments {
        /// The claims table (which experiment each claim comes from);
        /// default: analysis/claims.toml in the project.
        #[arg(long)]
        claims: Option<PathBuf>,
    },
    /// Compare a run's claims with a reference run's (both analysed): values
    /// and verdicts per claim; exits 1 when a claim measured in both runs
    /// has different verdicts.
    Compare {
        /// The run to check, e.g. data/latest.
        run_dir: PathBuf,
        /// The run to compare with; default data/reference in the project.
        reference: Option<PathBuf>,
    },
    /// Score strategies side by side on every measured property: writes
    /// data/<run-id>/scorecard.csv, scorecard.md, scorecard.svg, scorecard.json.
    Scorecard(ScorecardArgs),
    /// List the servers the matrix runs on (Redis 7.0 / 8.2, Valkey 8.1 /
    /// 9.1): name, product, version, allocator, licence, found or fetchable.
    Servers(ServersArgs),
    /// Fetch the servers and run the same experiments on each into
    /// data/<run-id>/<server>/, then a claims table with a column per server.
    Matrix(MatrixArgs),
    /// Recompute every claim from a run folder's CSVs (no Redis needed):
    /// writes claims.csv, report.md and figures/.
    Analyze {
        /// The run folder, e.g. data/latest.
        run_dir: PathBuf,
        /// The claims table; default: analysis/claims.toml in the project.
        #[arg(long)]
        claims: Option<PathBuf>,
    },
}

#[tokio::main]
async fn main() {
    limitbench::fleet::reaper::install_handlers();
    let cli = Cli::parse();
    let code = match run(cli).await {
        Ok(code) => code,
        Err(e) => {
            // Error messages pass through the one redaction too.
            let text = limitbench::redact::text(&format!("{e:#}"));
            eprintln!("limitbench: error: {text}");
            2
        }
    };
    std::process::exit(code);
}

// Longer than 120 lines: the command dispatch: one arm per subcommand, each a few lines.
async fn run(cli: Cli) -> Result<i32> {
    // Every command but `strategies` and `check` reads the project's files.
    let root = match &cli.command {
        Command::Strategies { .. } | Command::Check { .. } | Command::Servers(_) => {
            limitbench::paths::locate(cli.project_dir.as_deref()).ok()
        }
        _ => Some(limitbench::paths::locate(cli.project_dir.as_deref())?),
    };
    let project = |rel: &str| {
        root.as_ref()
            .map(|r| r.join(rel))
            .unwrap_or_else(|| PathBuf::from(rel))
    };
    match cli.command {
        Command::Strategies { dir } => {
            let folder = strategy::external::scan(dir.as_deref())?;
            let names = strategy::all_names(dir.as_deref())?;
            let mut rows = Vec::new();
            for name in &names {
                let s = strategy::build(name, dir.as_deref(), &Options::default())?;
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
                let promise = i.promise.map(|p| p.as_str()).unwrap_or("-");
                rows.push([
                    i.name.clone(),
                    i.kind.as_str().to_string(),
                    i.clock.as_str().to_string(),
                    promise.to_string(),
                    modes,
                    i.keys.clone(),
                ]);
            }
            let head = [
                "name",
                "kind",
                "clock",
                "promise",
                "invocation modes",
                "keys",
            ];
            // Every column as wide as its longest cell, the last unpadded.
            let width: Vec<usize> = (0..head.len())
                .map(|c| {
                    rows.iter()
                        .map(|r| r[c].chars().count())
                        .chain([head[c].len()])
                        .max()
                        .unwrap_or(0)
                })
                .collect();
            let line = |cells: &[&str]| {
                let mut out = String::new();
                for (c, cell) in cells.iter().enumerate() {
                    if c + 1 == cells.len() {
                        out += cell;
                    } else {
                        out += &format!("{cell:<w$} ", w = width[c]);
                    }
                }
                println!("{}", out.trim_end());
            };
            line(&head);
            for r in &rows {
                line(&r.iter().map(String::as_str).collect::<Vec<_>>());
            }
            for m in &folder.manifests {
                for w in &m.warnings {
                    eprintln!("limitbench: warning: {w}");
                }
            }
            for b in folder.broken_text() {
                eprintln!("limitbench: error: not loaded: {b}");
            }
            Ok(if folder.broken.is_empty() { 0 } else { 2 })
        }
        Command::Check {
            strategy: name,
            dir,
            limit,
            window,
            opts,
            target,
        } => {
            let opts = Options::parse_pairs(&opts)?;
            let folder = strategy::external::scan(dir.as_deref())?;
            for b in folder.broken_text() {
                eprintln!("limitbench: warning: not loaded (other strategies still are): {b}");
            }
            if let Some(m) = folder.manifests.iter().find(|m| m.name == name) {
                for w in &m.warnings {
                    eprintln!("limitbench: warning: {w}");
                }
            }
            // Built once to name a bad strategy before any server is touched,
            // then again after the server is claimed (function names carry
            // the prefix on a server the user runs).
            strategy::build(&name, dir.as_deref(), &opts)?;
            let (fleet, user_server) =
                target
                    .standalone()
                    .await
                    .context(if target.redis_url.is_some() {
                        "the server to check"
                    } else {
                        "starting redis-server"
                    })?;
            let s = strategy::build(&name, dir.as_deref(), &opts)?;
            let rebuild = {
                let (name, dir, opts) = (name.clone(), dir.clone(), opts.clone());
                move |mode: strategy::Invocation| {
                    strategy::build(
                        &name,
                        dir.as_deref(),
                        &opts.clone().with("invocation", mode.as_str()),
                    )
                }
            };
            let settings = limitbench::check::Settings {
                limit,
                window_ms: window,
                rebuild: Some(Box::new(rebuild)),
            };
            let results = limitbench::check::run_checks_with(s.clone(), &fleet, &settings).await;
            if let Some(u) = &user_server {
                u.clean_up().await?;
            }
            let results = results?;
            let mut failed = 0;
            for r in &results {
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
            println!("all {} checks passed for {name}", results.len());
            Ok(0)
        }
        Command::Experiments { claims } => {
            let claims = claims.unwrap_or_else(|| project("analysis/claims.toml"));
            let names: Vec<&str> = experiments::REGISTRY.iter().map(|e| e.name).collect();
            let claims = limitbench::analysis::claims::load(&claims, &names)?;
            for d in experiments::REGISTRY {
                let ids: Vec<&str> = claims
                    .iter()
                    .filter(|c| c.experiment == d.name)
                    .map(|c| c.id.as_str())
                    .collect();
                println!(
                    "{:<16} study {:<7} claims {}",
                    d.name,
                    d.study,
                    ids.join(" ")
                );
            }
            Ok(0)
        }
        Command::Run(args) => app::run::run_experiments(args, &project("")).await,
        Command::Merge { out, runs } => {
            let names: Vec<&str> = experiments::REGISTRY.iter().map(|d| d.name).collect();
            let merged = limitbench::run::merge::merge(&out, &runs, &names)?;
            for (table, rows) in &merged.tables {
                eprintln!("limitbench: {table}: {rows} rows");
            }
            eprintln!(
                "limitbench: claims, report and figures: limitbench analyze {}",
                merged.dir.path.display()
            );
            println!("{}", merged.dir.path.display());
            Ok(0)
        }
        Command::Compare { run_dir, reference } => {
            use limitbench::analysis::compare;
            let reference = reference.unwrap_or_else(|| project("data/reference"));
            let pairs = compare::pair(
                &compare::read_claims(&run_dir)?,
                &compare::read_claims(&reference)?,
            );
            println!("{} against {}:\n", run_dir.display(), reference.display());
            print!("{}", compare::table(&pairs));
            let differ = pairs.iter().filter(|p| p.differs()).count();
            print!("\n{}", compare::summary(&pairs));
            Ok(if differ > 0 { 1 } else { 0 })
        }
        Command::Scorecard(args) => scorecard(args, &project("")).await,
        Command::Servers(args) => cli::matrix::list(args).await,
        Command::Matrix(args) => cli::matrix::matrix(args, &project("")).await,
        Command::Analyze { run_dir, claims } => {
            let claims = claims.unwrap_or_else(|| project("analysis/claims.toml"));
            if !run_dir.is_dir() {
                anyhow::bail!("{} is not a run folder", run_dir.display());
            }
            let rows = app::analyze(&run_dir, &claims)?;
            use limitbench::analysis::report::{tally, verdict_text};
            let repro: Vec<_> = rows
                .iter()
                .filter(|j| j.spec.tally == "reproduction")
                .collect();
            let apart: Vec<String> = rows
                .iter()
                .filter(|j| j.spec.tally != "reproduction")
                .map(|j| format!("{} {}", j.spec.id, verdict_text(j)))
                .collect();
            println!("{}", run_dir.join("report.md").display());
            println!("claims: {} (apart: {})", tally(&repro), apart.join(", "));
            Ok(0)
        }
    }
}
