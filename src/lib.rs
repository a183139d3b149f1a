//! limitbench: how Redis-backed rate limiters behave, measured.
//!
//! Layout (the flow is `experiments/<name>.toml` -> `limitbench run` ->
//! `data/<run-id>/*.csv` -> `limitbench analyze` -> claims, report, figures):
//!
//! - `resp`: a minimal RESP2 connection (one request in flight, counted round trips).
//! - `conn`: `Conn`, a single connection or a slot-routing cluster client.
//! - `fleet`: the `redis-server` processes the harness owns, and their reaping.
//! - `strategy`: the rate limiters (one file each, Lua in `lua/`), the script
//!   invocation modes, and external (Lua + TOML) strategies.
//! - `clock`: caller clocks with per-worker skew.
//! - `check`: the correctness checks that `limitbench check` runs on any strategy.

pub mod analysis;
pub mod check;
pub mod clock;
pub mod conn;
pub mod error;
pub mod experiments;
pub mod files;
pub mod fleet;
pub mod hdr;
pub mod info;
pub mod load;
pub mod paths;
pub mod pin;
pub mod proxy;
pub mod resp;
pub mod run;
pub mod scorecard;
pub mod stats;
pub mod strategy;

pub use error::{Error, Result};
