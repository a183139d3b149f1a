//! Experiments: one folder each, listed once in [`REGISTRY`].
//!
//! An experiment `<name>` is `src/experiments/<name>/` plus its sizes in
//! `experiments/<name>.toml` (`[defaults]` and `[smoke]`, `[quick]`, `[full]`):
//!
//! - `mod.rs`: its parameters type, its cells and what one trial does, run
//!   through the sweep engine (`run::sweep`), and its `EXPERIMENT` entry;
//! - `rows.rs`: the rows it writes (`<name>.csv` and side tables), plain
//!   serde types shared by the run and the analysis;
//! - `analyze.rs`: rows -> metrics -> claim values -> figures and a report
//!   section. It reads CSVs only and imports no Redis, fleet or load module
//!   (`tests/layering.rs` fails if it does).
//!
//! Which claims an experiment's rows are evidence for is said once, in
//! `analysis/claims.toml` (`experiment = "<name>"`).
//!
//! Adding an experiment: a new folder with those three files, one line in
//! [`REGISTRY`], and the TOML file; `baseline/` is the smallest complete one.

pub mod baseline;
pub mod bursts;
pub mod cluster;
pub mod concurrency;
pub mod cost;
pub mod decisions;
pub mod fail_open;
pub mod failover;
pub mod memory;
pub mod replication;
pub mod retries;
pub mod rows;
pub mod script_survival;
pub mod skew;
pub mod stalls;
pub mod testbed;
pub mod ts_member;

use std::future::Future;
use std::pin::Pin;

pub use crate::run::{Progress, RunContext, Size};

use crate::analysis::Analyzer;
use crate::error::{Error, Result};

pub type BoxFut<'a> = Pin<Box<dyn Future<Output = Result<()>> + 'a>>;

/// An experiment's registration: how to run it and how to analyse its rows.
pub struct Experiment {
    pub name: &'static str,
    /// `A`, `B` or `beyond`.
    pub study: &'static str,
    /// Can it run against `--redis-url` (no server control needed)?
    pub allows_external: bool,
    pub run: for<'a> fn(&'a RunContext) -> BoxFut<'a>,
    pub analyze: Analyzer,
}

/// Every experiment, in the order `run all` runs them and the report shows them.
pub const REGISTRY: &[Experiment] = &[
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
    baseline::EXPERIMENT,
];

pub fn find(name: &str) -> Result<&'static Experiment> {
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
