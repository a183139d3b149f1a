//! Running experiments: what an experiment gets to work with (`context`),
//! the sweep engine that every experiment runs its cells and trials through
//! (`sweep`), the append-only CSVs that make a run resumable (`record`, `csv_append`), the
//! run's manifest (`manifest`) and the seeds derived per trial (`seeds`).

pub mod context;
pub mod csv_append;
pub mod deadline;
pub mod keys;
pub mod latency;
pub mod lock;
pub mod manifest;
pub mod merge;
pub mod noise;
pub mod parallel;
pub mod proctree;
pub mod provenance;
pub mod record;
pub mod seeds;
pub mod shard;
pub mod sweep;

pub use context::{Progress, RunContext, Size};
