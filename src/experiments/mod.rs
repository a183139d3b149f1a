//! Experiments: one folder each, listed once in [`REGISTRY`].
//!
//! An experiment `<name>` is `src/experiments/<name>/` plus its sizes in
//! `experiments/<name>.toml` (`[defaults]` and `[smoke]`, `[quick]`, `[full]`,
//! and `[probe]` when it fills scorecard columns). Its folder holds two
//! halves, and a file's path says which crate it belongs to:
//!
//! - the measuring half, in this crate (the app): `mod.rs` (its parameters
//!   type, its cells and what one trial does, run through the sweep engine,
//!   `run::sweep`, and its `EXPERIMENT` entry), `tests.rs` and any helper
//!   beside them;
//! - the analysis half, `analyze/`, compiled into `limitbench-analysis`
//!   only (`crates/analysis/src/experiments/mod.rs`): `rows.rs` (the rows
//!   it writes: plain serde types shared by the run and the analysis),
//!   `mod.rs` and its children (rows -> metrics -> claim values -> figures
//!   and a report section) and `scorecard.rs` (its scorecard columns, when
//!   it fills any). That crate has no Redis, fleet or load module to import,
//!   so the compiler refuses an analyzer that tries; there `crate::` means
//!   `limitbench_analysis`, everywhere else in this folder the app.
//!
//! Which claims an experiment's rows are evidence for is said once, in
//! `analysis/claims.toml` (`experiment = "<name>"`).
//!
//! Adding an experiment: docs/adding-an-experiment.md; `baseline/` is the
//! smallest complete one.

pub mod decisions;
pub use limitbench_analysis::experiments::rows;
pub mod testbed;

use std::future::Future;
use std::pin::Pin;

pub use crate::run::{Progress, RunContext, Size};

use crate::error::{Error, Result};
use limitbench_analysis::Analyzer;

pub type BoxFut<'a> = Pin<Box<dyn Future<Output = Result<()>> + 'a>>;

/// An experiment's registration: how to run it and how to analyse its rows.
pub struct Experiment {
    pub name: &'static str,
    /// `A`, `B` or `beyond`.
    pub study: &'static str,
    /// Can it run against `--redis-url` (no server control needed)?
    pub allows_external: bool,
    /// CPU-bound (runs alone) or latency-bound (may run beside other
    /// latency-bound experiments, within a bound on its schedule's slip):
    /// `run::parallel`.
    pub bound: crate::run::parallel::Bound,
    /// For a latency-bound experiment: which of its cells (by id) are
    /// CPU-bound all the same. A run with lanes runs those alone, before the
    /// lanes, and the rest in lanes (`run::parallel::Part`).
    pub cpu_cells: Option<fn(&str) -> bool>,
    pub run: for<'a> fn(&'a RunContext) -> BoxFut<'a>,
    pub analyze: Analyzer,
}

/// Declares each experiment's module and lists its `EXPERIMENT` in
/// [`REGISTRY`]: one name per experiment, written once.
macro_rules! experiments {
    ($($name:ident),* $(,)?) => {
        $(pub mod $name;)*
        /// Every experiment, in the order `run all` runs them and the report
        /// shows them.
        pub const REGISTRY: &[Experiment] = &[$($name::EXPERIMENT),*];
    };
}

limitbench_analysis::for_each_experiment!(experiments);

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
