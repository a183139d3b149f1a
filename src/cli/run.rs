//! `limitbench run`: the arguments, turned into the library's plain
//! [`RunRequest`] and handed to `app::run::run_experiments`.

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::server_args::ServerArgs;
use limitbench::app;
use limitbench::app::session::RunRequest;
use limitbench::experiments::Size;

#[derive(clap::Args, Clone)]
pub struct RunArgs {
    /// Experiments to run (`all` for every one, in order).
    #[arg(required = true)]
    pub experiments: Vec<String>,
    #[arg(long, value_enum, default_value = "full")]
    pub size: Size,
    /// Name of the new run folder (default: the UTC date and time).
    #[arg(long, value_parser = limitbench::run::record::check_run_id, conflicts_with = "resume")]
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
    #[arg(long, default_value_t = limitbench::run::seeds::DEFAULT_SEED)]
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
    #[arg(long, value_parser = limitbench::run::deadline::parse_duration)]
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
    /// Measure even if other processes keep the machine busy (the preflight
    /// of a quick or full run stops otherwise); the manifest and the report
    /// say so.
    #[arg(long)]
    pub allow_busy: bool,
    /// After the run, give the experiments of `inconclusive` claims more
    /// trials per cell, round by round, until every claim is decided or the
    /// size's cap is reached (`app::adaptive`; recorded in manifest.json).
    #[arg(long)]
    pub until_decisive: bool,
    /// With --until-decisive: cap the trials per cell at this instead of the
    /// size's cap.
    #[arg(long, requires = "until_decisive", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_trials: Option<u64>,
    /// With --until-decisive: the rounds' budget of trial time in seconds
    /// instead of the size's (claims whose next round would not fit stay
    /// `inconclusive`, saying so); 0: no budget, only the cap.
    #[arg(long, requires = "until_decisive")]
    pub round_budget: Option<u64>,
    #[command(flatten)]
    pub server: ServerArgs,
}

impl RunArgs {
    /// The request the library runs (no trial floors, no server identity:
    /// those come from `--until-decisive`'s rounds and from `matrix`).
    pub fn request(self) -> RunRequest {
        RunRequest {
            experiments: self.experiments,
            size: self.size,
            run_id: self.run_id,
            resume: self.resume,
            strategy: self.strategy,
            dir: self.dir,
            seed: self.seed,
            data_dir: self.data_dir,
            experiments_dir: self.experiments_dir,
            stall_after: self.stall_after,
            shard: self.shard,
            shard_count: self.shard_count,
            parallel: self.parallel,
            allow_busy: self.allow_busy,
            until_decisive: self.until_decisive,
            max_trials: self.max_trials,
            round_budget: self.round_budget,
            server: self.server.choice(),
            server_identity: None,
            trial_floors: Default::default(),
            cell_floors: Default::default(),
        }
    }
}

pub async fn run(args: RunArgs, root: &Path) -> Result<i32> {
    app::run::run_experiments(args.request(), root).await
}
