//! The analysis side of every experiment: its `rows.rs` (the CSV schema
//! the run writes and the analysis reads) and its `analyze` code, compiled
//! into `limitbench-analysis` from the experiment's own folder (this file is
//! that crate's `experiments` module, by `#[path]`). The analysis crate
//! depends on nothing that talks to Redis, so an analyzer that imports the
//! measuring side does not build: the layering is the compiler's.
//!
//! The run side of each experiment (its `mod.rs`, parameters, cells and
//! trial) is compiled into the application crate, which re-exports these
//! modules under the same paths (`experiments::<name>::{rows, analyze}`).
//!
//! The list below is the one list of experiments: the application builds
//! its registry from it through [`for_each_experiment!`], in this order (the
//! order `run all` runs them and the report shows them).

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

macro_rules! analysis_side {
    ($($name:ident),* $(,)?) => {
        $(pub mod $name {
            pub mod analyze;
            pub mod rows;
        })*
    };
}

for_each_experiment!(analysis_side);
