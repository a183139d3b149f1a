//! The command registry of the `limitbench` binary: [`Cli`] (the global
//! flags), [`Command`] (one variant per subcommand) and [`dispatch`] (one
//! arm per variant, each calling its file's `run`).
//!
//! One file per subcommand, each holding its clap arguments struct and its
//! `run` function (`Result<i32>`: the exit code; an error leaves through
//! `main` as a message and exit 2). The work itself is in the library
//! (`limitbench::app`, `limitbench::check`, `limitbench::scorecard`, ...);
//! a command file parses, calls it and prints. `server_args.rs` is the
//! `--redis-url/--key-prefix/--redis-server` group that `check` and `run`
//! share.
//!
//! To add a command `foo`:
//!
//! 1. `src/cli/foo.rs`: a `//!` doc, `#[derive(clap::Args)] pub struct
//!    FooArgs` (no `///` doc on the struct: the variant's doc is the help)
//!    and `pub fn run(a: FooArgs, ...) -> anyhow::Result<i32>` (async if it
//!    awaits), no function over ~80 lines;
//! 2. here: `mod foo;`, a documented variant `Foo(foo::FooArgs)` in
//!    [`Command`] (its place in the enum is its place in `--help`), its arm
//!    in [`dispatch`], and, if it reads no project file, its name in
//!    [`needs_project`];
//! 3. a test of its parsing or output in `tests/cli.rs`.

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::{Parser, Subcommand};

mod analyze;
mod check;
mod compare;
mod experiments;
mod matrix;
mod merge;
mod run;
mod scorecard;
mod server_args;
mod servers;
mod strategies;

#[derive(Parser)]
#[command(
    name = "limitbench",
    version,
    about = "How Redis-backed rate limiters behave, measured"
)]
pub struct Cli {
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
    Strategies(strategies::StrategiesArgs),
    /// Run the correctness checks on one strategy; exits 1 if any fails.
    Check(check::CheckArgs),
    /// Run experiments and write data/<run-id>/ (CSV per experiment, manifest.json).
    Run(run::RunArgs),
    /// Join the folders of a sharded run's shards (`run --shard I/N`) into
    /// one run folder, after checking that they are parts of one run (commit,
    /// size, seed, inputs, parameters, redis-server); then analyze it.
    Merge(merge::MergeArgs),
    /// List the experiments and the claims their rows are evidence for.
    Experiments(experiments::ExperimentsArgs),
    /// Compare a run's claims with a reference run's (both analysed): values
    /// and verdicts per claim; exits 1 when a claim measured in both runs
    /// has different verdicts.
    Compare(compare::CompareArgs),
    /// Score strategies side by side on every measured property: writes
    /// data/<run-id>/scorecard.csv, scorecard.md, scorecard.svg, scorecard.json.
    Scorecard(scorecard::ScorecardArgs),
    /// List the servers the matrix runs on (Redis 7.0 / 8.2, Valkey 8.1 /
    /// 9.1): name, product, version, allocator, licence, found or fetchable.
    Servers(servers::ServersArgs),
    /// Fetch the servers and run the same experiments on each into
    /// data/<run-id>/<server>/, then a claims table with a column per server.
    Matrix(matrix::MatrixArgs),
    /// Recompute every claim from a run folder's CSVs (no Redis needed):
    /// writes claims.csv, report.md and figures/.
    Analyze(analyze::AnalyzeArgs),
}

/// Whether the command reads the project's files (experiments/,
/// analysis/claims.toml, data/): then a project that cannot be found is an
/// error; `strategies`, `check` and `servers` run anywhere.
fn needs_project(command: &Command) -> bool {
    !matches!(
        command,
        Command::Strategies(_) | Command::Check(_) | Command::Servers(_)
    )
}

/// Run the parsed command; its exit code.
pub async fn dispatch(cli: Cli) -> Result<i32> {
    let found = limitbench_base::paths::locate(cli.project_dir.as_deref());
    let root = if needs_project(&cli.command) {
        Some(found?)
    } else {
        found.ok()
    };
    // The project folder (`""`: relative to the current directory when
    // none was found, for the commands that need none).
    let root: PathBuf = root.map(|r| r.join("")).unwrap_or_default();
    let root: &Path = &root;
    match cli.command {
        Command::Strategies(a) => strategies::run(a),
        Command::Check(a) => check::run(a).await,
        Command::Run(a) => run::run(a, root).await,
        Command::Merge(a) => merge::run(a),
        Command::Experiments(a) => experiments::run(a, root),
        Command::Compare(a) => compare::run(a, root),
        Command::Scorecard(a) => scorecard::run(a, root).await,
        Command::Servers(a) => servers::run(a).await,
        Command::Matrix(a) => matrix::run(a, root).await,
        Command::Analyze(a) => analyze::run(a, root),
    }
}
