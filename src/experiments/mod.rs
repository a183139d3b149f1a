//! Experiments: each is one file here plus a definition in
//! `experiments/<name>.toml` with `[defaults]` and `[smoke]`, `[quick]`,
//! `[full]` sizes. An experiment sweeps cells (strategy x workers x delay x
//! ...), runs trials per cell, and commits one row per trial through
//! `record::TrialLog`, which makes every run resumable.
//!
//! Adding one: write `src/experiments/<name>.rs` with
//! `pub const EXPERIMENT: Def`, add it to `REGISTRY`, add the TOML file.

pub mod bursts;
pub mod cluster;
pub mod concurrency;
pub mod context;
pub mod cost;
pub mod fail_open;
pub mod failover;
pub mod memory;
pub mod replication;
pub mod retries;
pub mod script_survival;
pub mod skew;
pub mod stalls;
pub mod study_a_common;
pub mod study_b_topo_util;
pub mod ts_member;

use std::future::Future;
use std::pin::Pin;

pub use context::{Progress, RunContext, Size};

use crate::error::{Error, Result};

pub type BoxFut<'a> = Pin<Box<dyn Future<Output = Result<()>> + Send + 'a>>;

/// An experiment's registration.
pub struct Def {
    pub name: &'static str,
    /// `A`, `B` or `beyond`.
    pub study: &'static str,
    /// Claim IDs its rows are evidence for.
    pub claims: &'static [&'static str],
    /// Can it run against `--redis-url` (no server control needed)?
    pub allows_external: bool,
    pub run: for<'a> fn(&'a RunContext) -> BoxFut<'a>,
}

/// Every experiment, in the order `run all` runs them.
pub const REGISTRY: &[Def] = &[
    concurrency::EXPERIMENT,
    retries::EXPERIMENT,
    bursts::EXPERIMENT,
    skew::EXPERIMENT,
    replication::EXPERIMENT,
    cost::EXPERIMENT,
    memory::EXPERIMENT,
    stalls::EXPERIMENT,
    ts_member::EXPERIMENT,
    script_survival::EXPERIMENT,
    cluster::EXPERIMENT,
    fail_open::EXPERIMENT,
    failover::EXPERIMENT,
];

pub fn find(name: &str) -> Result<&'static Def> {
    REGISTRY
        .iter()
        .find(|d| d.name == name)
        .ok_or_else(|| Error::UnknownExperiment {
            name: name.to_string(),
            known: REGISTRY
                .iter()
                .map(|d| d.name)
                .collect::<Vec<_>>()
                .join(", "),
        })
}
