//! Experiments: one folder each, listed once in [`REGISTRY`].
//!
//! An experiment `<name>` is `src/experiments/<name>/` plus its sizes in
//! `experiments/<name>.toml` (`[defaults]` and `[smoke]`, `[quick]`, `[full]`):
//!
//! - `mod.rs`: its parameters type, its cells and what one trial does, run
//!   through the sweep engine (`run::sweep`), and its `EXPERIMENT` entry;
//! - `rows.rs`: the rows it writes (`<name>.csv` and side tables), plain
//!   serde types shared by the run and the analysis;
//! - `analyze.rs` (or `analyze/`): rows -> metrics -> claim values ->
//!   figures and a report section. It reads CSVs only: `rows.rs` and
//!   `analyze` are compiled into `limitbench-analysis` (`analyzers.rs`),
//!   which has no Redis, fleet or load module to import, so the compiler
//!   refuses an analyzer that tries.
//!
//! Which claims an experiment's rows are evidence for is said once, in
//! `analysis/claims.toml` (`experiment = "<name>"`).
//!
//! Adding an experiment: a new folder with those three files, its name in
//! the one list, `for_each_experiment!` in `analyzers.rs` (which declares
//! its analysis side there and, through the `experiments!` callback below,
//! its run side here and its place in [`REGISTRY`]), and the TOML file;
//! `baseline/` is the smallest complete one.

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
