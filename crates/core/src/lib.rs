//! limitbench's measuring floor: everything that talks to Redis or times a
//! decision, and nothing that analyses, plots or knows an experiment.
//!
//! - `resp`: a minimal RESP2 connection (one request in flight, counted round trips).
//! - `conn`: `Conn`, a single connection or a slot-routing cluster client.
//! - `info`: INFO fields.
//! - `redact`: the one masking of passwords in everything written or printed.
//! - `fleet`: the `redis-server` processes the harness owns, and their reaping.
//! - `namespace`: the run's key prefix and function-library names on a Redis
//!   the user runs (set by the fleet, read by the strategies).
//! - `proxy`: the userspace delay proxy (no netem on the machines it runs on).
//! - `pin`: CPU pinning of Redis and the load.
//! - `strategy`: the rate limiters (one file each, Lua in `lua/`), the script
//!   invocation modes, and external (Lua + TOML) strategies. A strategy only
//!   issues its Redis calls;
//! - `load`: the wrapper that owns clocks, counting, timers and errors
//!   around them (the YCSB DB/DBWrapper split), schedules and the lean
//!   replay loop of the cost experiments.
//! - `clock`: caller clocks with per-worker skew.

pub mod clock;
pub mod conn;
pub mod fleet;
pub mod info;
pub mod load;
pub mod namespace;
pub mod pin;
pub mod proxy;
pub mod redact;
pub mod resp;
pub mod strategy;
