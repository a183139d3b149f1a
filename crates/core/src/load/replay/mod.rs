//! Replay: the lean load generator of the cost experiments (`cost`, the CPU
//! cells of `memory`) and the direct fills that `cost`, `memory` and
//! `stalls` share.
//!
//! Why it exists beside `load::Driver`: measuring what one decision costs
//! *Redis* needs a load generator that keeps Redis's one thread saturated
//! from one core and sends exactly what the strategy sends. The general
//! driver allocates per decision (keys, arguments, replies, events); here a
//! decision is a copy of the strategy's own pre-encoded bytes, a few digits
//! written in place, one write and one read, and replies scanned without
//! allocating.
//!
//! Layout, one concern per file:
//! - `capture`: runs a strategy's `decide` once through a recording proxy
//!   to the real server and keeps the exact bytes it wrote (its replies are
//!   the server's, read by the strategy's own rules, as every replayed
//!   decision's are: `AdmitRule::for_strategy`);
//! - `template`: those bytes with slots for the client id and request id
//!   (`Template`, `AdmitRule`, `client_name`, `ID_BASE`);
//! - `reply`: `scan_reply`, the allocation-free reading of a reply (first
//!   integer, error or not), checked against `resp::parse`;
//! - `hot_loop`: `HotLoad`, N connections replaying a template in a closed
//!   loop on a thread of its own, counting decisions on the client side (or,
//!   for a strategy of several round trips a decision, calling its own
//!   `decide`: `HotLoad::start_decide`);
//! - `pipe`: `RawPipe`, raw bytes pipelined on one connection, and
//!   `replay_pipelined` (many decisions of a template per round trip);
//! - `redis_cpu`: INFO cpu/commandstats snapshots around a window of a hot
//!   load (`measure_window`) turned into CPU per decision (`cpu_cost`);
//! - `log_fill`: sorted-set logs written directly with ZADD pipelines
//!   (`fill_logs`, `log_member`), the strategy's data without its script.

mod capture;
mod hot_loop;
mod log_fill;
mod pipe;
mod redis_cpu;
mod reply;
mod template;

pub use capture::capture;
pub use hot_loop::{Counts, HotLoad, HotSpec, new_histogram};
pub use log_fill::{LogSpec, fill_logs, log_member};
pub use pipe::{PipeOutcome, RawPipe, ReplayOutcome, replay_pipelined};
pub use redis_cpu::{
    CommandStats, CpuCost, CpuSample, Window, command_stats, cpu_cost, measure_started,
    measure_window, redis_snapshot,
};
pub use reply::{Scanned, scan_reply};
pub use template::{
    AdmitRule, CLIENT_WIDTH, ID_BASE, ID_WIDTH, Template, client_name, write_digits,
};
