//! Experiments: one folder each, listed once in [`REGISTRY`].
//!
//! An experiment `<name>` is `src/experiments/<name>/` plus its sizes in
//! `experiments/<name>.toml` (`[defaults]` and `[smoke]`, `[quick]`, `[full]`,
//! and `[probe]` when it fills scorecard columns). Its folder holds two
//! halves, and a file's path says which crate it belongs to:
//!
//! - the measuring half, in this crate (the app): `mod.rs` (its parameters
//!   type, its cells and what one trial does, run through the sweep engine,
//!   `run::sweep`, and its `SPEC`, one line), `tests.rs` and any helper
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

use limitbench_analysis::Analyzer;
use limitbench_base::error::{Error, Result};

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
    /// The most CPU other processes (not the harness's) may take during a
    /// trial, in cores, before the trial is disturbed (`run::sweep`).
    pub others_max_cores: f64,
    /// For a latency-bound experiment: which of its cells (by id) are
    /// CPU-bound all the same. A run with lanes runs those alone, before the
    /// lanes, and the rest in lanes (`run::parallel::Part`).
    pub cpu_cells: Option<fn(&str) -> bool>,
    pub run: for<'a> fn(&'a RunContext) -> BoxFut<'a>,
    pub analyze: Analyzer,
}

/// What an experiment declares about itself (its `SPEC`, one line); the
/// registry adds its `run` and its analysis half's `analyze`.
#[derive(Clone, Copy)]
pub struct Spec {
    pub name: &'static str,
    /// `A`, `B` or `beyond`.
    pub study: &'static str,
    pub allows_external: bool,
    pub bound: crate::run::parallel::Bound,
    pub others_max_cores: f64,
    pub cpu_cells: Option<fn(&str) -> bool>,
}

impl Spec {
    /// An experiment of `study` that needs servers of its own and runs
    /// alone (CPU-bound, no cells run apart).
    pub const fn new(name: &'static str, study: &'static str) -> Self {
        Spec {
            name,
            study,
            allows_external: false,
            bound: crate::run::parallel::Bound::Cpu,
            others_max_cores: f64::NAN,
            cpu_cells: None,
        }
    }

    /// A trial is disturbed when other processes take more than `cores`
    /// during it. Every experiment states it: an experiment that times CPU
    /// (runs alone) tolerates less than one that mostly waits. An idle
    /// 2-core machine here shows about 0.01.
    pub const fn others_at_most(self, cores: f64) -> Self {
        Spec {
            others_max_cores: cores,
            ..self
        }
    }

    /// It can run against `--redis-url` (it needs no control of the servers).
    pub const fn external(self) -> Self {
        Spec {
            allows_external: true,
            ..self
        }
    }

    /// Latency-bound: it may run beside other latency-bound experiments
    /// while its schedule slips by at most `max_slip_ms`.
    pub const fn latency_bound(self, max_slip_ms: f64) -> Self {
        Spec {
            bound: crate::run::parallel::Bound::Latency { max_slip_ms },
            ..self
        }
    }

    /// Latency-bound, but the cells `cpu` picks are CPU-bound all the same
    /// and run alone, before the lanes.
    pub const fn cpu_cells(self, cpu: fn(&str) -> bool) -> Self {
        Spec {
            cpu_cells: Some(cpu),
            ..self
        }
    }
}

impl Experiment {
    /// An experiment from its spec, its run and its analyzer.
    pub const fn of(
        spec: Spec,
        run: for<'a> fn(&'a RunContext) -> BoxFut<'a>,
        analyze: Analyzer,
    ) -> Self {
        Experiment {
            name: spec.name,
            study: spec.study,
            allows_external: spec.allows_external,
            bound: spec.bound,
            others_max_cores: spec.others_max_cores,
            cpu_cells: spec.cpu_cells,
            run,
            analyze,
        }
    }
}

/// Declares each experiment's module and lists it in [`REGISTRY`], from its
/// `SPEC`, its `run` and its analysis half's `analyze`: one name per
/// experiment, written once.
macro_rules! experiments {
    ($($name:ident),* $(,)?) => {
        $(pub mod $name;)*
        /// Every experiment, in the order `run all` runs them and the report
        /// shows them.
        pub const REGISTRY: &[Experiment] = &[$(Experiment::of(
            $name::SPEC,
            |ctx: &RunContext| Box::pin($name::run(ctx)),
            $name::analyze::analyze,
        )),*];
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_experiment_states_its_bound_on_others_cpu() {
        for d in REGISTRY {
            assert!(
                d.others_max_cores.is_finite() && d.others_max_cores > 0.0,
                "{} states no bound on others' CPU (Spec::others_at_most)",
                d.name
            );
            // One that times CPU (runs alone) tolerates no more than one that waits.
            if d.bound == crate::run::parallel::Bound::Cpu {
                assert!(d.others_max_cores <= 0.1, "{}", d.name);
            }
        }
    }
}
