//! What `limitbench run` was asked to do, as plain data: the command line
//! builds it from its flags; `limitbench matrix` and the rounds of
//! `--until-decisive` build their own.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::server::ServerChoice;
use crate::experiments::Size;

/// What `limitbench run` was asked to do, as plain data (the command line
/// builds it; `limitbench matrix` and the rounds of `--until-decisive`
/// build their own).
#[derive(Clone)]
pub struct RunRequest {
    /// Experiments to run (`all` for every one, in order).
    pub experiments: Vec<String>,
    pub size: Size,
    /// Name of the new run folder (default: the UTC date and time).
    pub run_id: Option<String>,
    /// Continue a killed run (its folder name or path).
    pub resume: Option<String>,
    /// Only these strategies, instead of each experiment's list.
    pub strategy: Option<Vec<String>>,
    /// Folder of external strategies.
    pub dir: Option<PathBuf>,
    pub seed: u64,
    /// Where run folders go; default: data/ in the project.
    pub data_dir: Option<PathBuf>,
    /// The experiment definitions; default: experiments/ in the project.
    pub experiments_dir: Option<PathBuf>,
    /// Give up on a trial that runs longer than this.
    pub stall_after: Option<std::time::Duration>,
    /// One shard of the cells, `INDEX/COUNT`.
    pub shard: Option<String>,
    /// The number of shards when the index comes from the batch engine.
    pub shard_count: Option<u64>,
    /// Latency-bound experiments to run at once.
    pub parallel: Option<u64>,
    /// Measure even if the preflight finds the machine busy (`preflight`).
    pub allow_busy: bool,
    /// After the run, more trials until every claim is decided (`app::adaptive`).
    pub until_decisive: bool,
    /// With `until_decisive`: the cap of trials per cell.
    pub max_trials: Option<u64>,
    /// With `until_decisive`: the rounds' budget of trial time, seconds (0:
    /// none; None: the size's).
    pub round_budget: Option<u64>,
    /// Where the run measures.
    pub server: ServerChoice,
    /// What the server is (product, version, allocators, its own defaults),
    /// read by `limitbench matrix` before the run; goes into the manifest.
    pub server_identity: Option<serde_json::Value>,
    /// The least trials per cell, per experiment (set by the rounds of
    /// --until-decisive, never on the command line).
    pub trial_floors: BTreeMap<String, u64>,
    /// The least trials of single cells, per experiment and cell id (the
    /// rounds of --until-decisive raise only the cells an inconclusive
    /// claim rests on).
    pub cell_floors: BTreeMap<String, BTreeMap<String, u64>>,
}
