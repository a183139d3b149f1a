//! limitbench: how Redis-backed rate limiters behave, measured.
//!
//! The flow is `experiments/<name>.toml` -> `limitbench run` ->
//! `data/<run-id>/*.csv` -> `limitbench analyze` -> claims, report, figures.
//! This is the application crate, on top of the workspace's layers
//! (docs/architecture.md):
//!
//! - `limitbench-base`: the error type, files, quantiles, histograms, paths;
//! - `limitbench-core`: RESP, connections, the fleet of redis-servers, the
//!   delay proxy, strategies, load;
//! - `limitbench-plot`: the chart library;
//! - `limitbench-analysis`: statistics, claims, the judge, tables, every
//!   experiment's rows and analysis (its analysis half).
//!
//! None is re-exported here: an import names the crate its item comes from
//! (`limitbench_core::fleet`, `limitbench_analysis::claims`).
//!
//! Its own modules:
//!
//! - `run`: the run engine (context, sweep of cells x trials, resume, manifest, seeds);
//! - `experiments`: each experiment's run side, and the registry;
//! - `scorecard`: every strategy against every property, from experiment cells;
//! - `check`: the correctness checks that `limitbench check` runs on any strategy;
//! - `servers`: the servers of the matrix (Redis 7.0 / 8.2, Valkey 8.1 / 9.1),
//!   fetched from pinned wheels, their identity and defaults;
//! - `app`: what the commands do (run experiments, analyze a run); the only
//!   place the experiment list is walked.

pub mod app;
pub mod check;
pub mod experiments;
pub mod run;
pub mod scorecard;
pub mod servers;
