//! limitbench's shared floor, below both the measuring side
//! (`limitbench-core`) and the analysis (`limitbench-analysis`): nothing here
//! talks to Redis or draws.
//!
//! - `error`: the error type every library crate returns (`thiserror`).
//! - `files`: a run folder's tables, plain or compressed.
//! - `stats`: quantiles, defined once so a "p99" means one thing everywhere.
//! - `hdr`: latency histograms and their CSV encoding.
//! - `paths`: where the project's files are (experiments/, analysis/, lua/, data/).

pub mod error;
pub mod files;
pub mod hdr;
pub mod paths;
pub mod promise;
pub mod stats;

pub use error::{Error, Result};
