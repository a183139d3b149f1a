//! The analysis half of every experiment, compiled into this crate from
//! the experiment's own folder: `src/experiments/<name>/analyze/` holds the
//! experiment's rows (`rows.rs`: the CSV schema the run writes and the
//! analysis reads), its analysis (`mod.rs` and its children: rows ->
//! metrics -> claim values -> figures and a report section) and its
//! scorecard columns (`scorecard.rs`: probe rows -> cells). Every file under
//! an `analyze/` folder belongs to this crate and names it
//! `limitbench_analysis::` (never `crate::`, which in `src/` means the app);
//! every other file of `src/experiments/` belongs to
//! the application (the measuring half: parameters, cells, one trial). This
//! crate depends on nothing that talks to Redis, so an analyzer that imports
//! the measuring side does not build: the layering is the compiler's.
//!
//! The application re-exports these modules under the same paths
//! (`limitbench::experiments::<name>::{rows, analyze}`).
//!
//! The list below is the one list of experiments: the application builds
//! its registry from it through [`for_each_experiment!`], in this order (the
//! order `run all` runs them and the report shows them). Adding an
//! experiment adds its name there and its two modules here.

/// Rows more than one experiment writes (the admission history).
pub mod rows;

/// Calls `$callback!(name, ...)` with every experiment's module name, in
/// run and report order: the application declares each experiment's run
/// side and its registry with it, so an experiment is listed once.
#[macro_export]
macro_rules! for_each_experiment {
    ($callback:ident) => {
        $callback!(
            concurrency,
            retries,
            bursts,
            skew,
            replication,
            cost,
            memory,
            stalls,
            ts_member,
            script_survival,
            cluster,
            fail_open,
            failover,
            baseline,
        );
    };
}

// Each experiment's analysis half: `<name>::rows` and `<name>::analyze`,
// both from `src/experiments/<name>/analyze/` (the path is written out
// because `#[path]` takes a literal).
#[path = "../../../../src/experiments/concurrency/analyze"]
pub mod concurrency {
    #[path = "mod.rs"]
    pub mod analyze;
    pub mod rows;
}
#[path = "../../../../src/experiments/retries/analyze"]
pub mod retries {
    #[path = "mod.rs"]
    pub mod analyze;
    pub mod rows;
}
#[path = "../../../../src/experiments/bursts/analyze"]
pub mod bursts {
    #[path = "mod.rs"]
    pub mod analyze;
    pub mod rows;
}
#[path = "../../../../src/experiments/skew/analyze"]
pub mod skew {
    #[path = "mod.rs"]
    pub mod analyze;
    pub mod rows;
}
#[path = "../../../../src/experiments/replication/analyze"]
pub mod replication {
    #[path = "mod.rs"]
    pub mod analyze;
    pub mod rows;
}
#[path = "../../../../src/experiments/cost/analyze"]
pub mod cost {
    #[path = "mod.rs"]
    pub mod analyze;
    pub mod rows;
}
#[path = "../../../../src/experiments/memory/analyze"]
pub mod memory {
    #[path = "mod.rs"]
    pub mod analyze;
    pub mod rows;
}
#[path = "../../../../src/experiments/stalls/analyze"]
pub mod stalls {
    #[path = "mod.rs"]
    pub mod analyze;
    pub mod rows;
}
#[path = "../../../../src/experiments/ts_member/analyze"]
pub mod ts_member {
    #[path = "mod.rs"]
    pub mod analyze;
    pub mod rows;
}
#[path = "../../../../src/experiments/script_survival/analyze"]
pub mod script_survival {
    #[path = "mod.rs"]
    pub mod analyze;
    pub mod rows;
}
#[path = "../../../../src/experiments/cluster/analyze"]
pub mod cluster {
    #[path = "mod.rs"]
    pub mod analyze;
    pub mod rows;
}
#[path = "../../../../src/experiments/fail_open/analyze"]
pub mod fail_open {
    #[path = "mod.rs"]
    pub mod analyze;
    pub mod rows;
}
#[path = "../../../../src/experiments/failover/analyze"]
pub mod failover {
    #[path = "mod.rs"]
    pub mod analyze;
    pub mod rows;
}
#[path = "../../../../src/experiments/baseline/analyze"]
pub mod baseline {
    #[path = "mod.rs"]
    pub mod analyze;
    pub mod rows;
}

/// Every listed experiment has its analysis half above (a name in the list
/// without its module, or with a module lacking `analyze`, does not build).
macro_rules! every_listed_has_an_analysis_half {
    ($($name:ident),* $(,)?) => {
        const _: &[crate::Analyzer] = &[$($name::analyze::analyze),*];
    };
}
for_each_experiment!(every_listed_has_an_analysis_half);
