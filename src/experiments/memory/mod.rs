//! `memory`: bytes per client (claims B3.1-B3.4, B4.3).
//!
//! A bytes measurement: FLUSHALL, read `used_memory`, fill K clients to
//! their limit, close the filling connection (its buffers would count), read
//! `used_memory` again; bytes per client = growth / K. Sample keys are
//! cross-checked with MEMORY USAGE (SAMPLES 0) and their OBJECT ENCODING and
//! size are recorded.
//!
//! One sweep, in this order (the main cells `trials` times, each trial an
//! independent fill after FLUSHALL, the others once):
//! - [`Cell::LogBytes`], direct fill: sliding logs, limits x member lengths
//!   (the member length is not stated by the study and the bytes per entry
//!   depend on it), filled directly with ZADD pipelines that write exactly
//!   the strategy's data (its member format, microsecond scores, the TTL);
//!   K = entry budget / L within [min_clients, max_clients];
//! - [`Cell::LogBytes`], verification (at the default member length): the
//!   same limits filled by the
//!   strategy itself (EVALSHA, one decision at a time) and directly, at the
//!   same K, so the report can show that the direct fill equals what the
//!   strategy produces;
//! - [`Cell::LogBytes`], the cliff at other `zset-max-listpack-entries`
//!   values (L = Z and Z+1);
//! - [`Cell::StrategyBytes`]: the other strategies at `other_clients`
//!   clients, filled by their own scripts (the captured request bytes,
//!   pipelined), for B3.3; a strategy that needs more than one round trip
//!   per decision (check-then-act, WATCH/MULTI) cannot be replayed and is
//!   filled by its own decisions, one at a time (the row's `fill` says
//!   which; `other_fill = "decisions"` fills every strategy so). Every
//!   strategy: `other_strategies = ["*"]`, narrowed to `--strategy` (the
//!   scorecard's probe);
//! - [`Cell::LogCpu`]: CPU per decision (B3.4) of logs of n entries
//!   (listpack or skiplist depending on Z), every call an admission (trim +
//!   ZADD), measured with the cost experiment's hot loop (Redis on the CPU at
//!   position `redis_cpu`, the harness pinned to `load_cpu`'s while the
//!   cell runs), `cpu_trials` windows
//!   per cell, each after its own FLUSHALL and prefill of `cpu_entries / n`
//!   logs (so a window grows every log by the same small fraction of n);
//!   each row carries the window's cross-checks (EVALSHA's commandstats,
//!   Redis's main-thread busy fraction) and the setup's Redis CPU, which
//!   falls outside the window's delta.
//!
//! `measure.rs` holds what one cell does.

mod measure;
// The analysis half (analyze/) is compiled into limitbench-analysis
// (crates/analysis/src/experiments/mod.rs); it is this experiment's all the same.
pub use limitbench_analysis::experiments::memory::{analyze, rows};
#[cfg(test)]
mod tests;

use std::net::SocketAddr;

use serde::Deserialize;

pub use rows::MemoryRow;

use super::{RunContext, Spec};
use crate::run::sweep::{self, NoSide, Sweep, TrialRows};
use limitbench_base::error::Result;
use limitbench_core::fleet::{Fleet, ServerConfig};
use limitbench_core::pin::PinGuard;
use limitbench_core::resp::Connection;

/// Its registration (the registry adds its `run` and its analysis half's `analyze`).
// its CPU cells time the log on a pinned server: alone.
pub const SPEC: Spec = Spec::new("memory", "B").others_at_most(0.1);

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    /// Where Redis and the CPU cells' load run: positions in the CPUs the
    /// harness was allowed when it started (`RunContext::resolve_cpus`),
    /// replaced by the CPUs they name when the run starts (`load_cpu` only
    /// with CPU cells, `cpu_sizes`).
    redis_cpu: usize,
    load_cpu: usize,
    log_limits: Vec<u64>,
    member_lens: Vec<usize>,
    /// The member length the claims are judged at (the study does not state
    /// it; 26 = a ULID, a common request id; 0 = plain decimal request id).
    default_member_len: usize,
    /// Independent fills of each main cell (directly filled logs at Z=128).
    trials: u64,
    entry_budget: u64,
    max_clients: u64,
    min_clients: u64,
    window_ms: u64,
    /// First request id (members of member_len 0 are these ids in decimal).
    id_base: u64,
    verify_limits: Vec<u64>,
    verify_clients: u64,
    listpack_entries: Vec<u64>,
    /// Clients of the cells at other zset-max-listpack-entries (big listpacks
    /// fill in O(n^2) per key).
    cliff_clients: u64,
    other_strategies: Vec<String>,
    other_clients: u64,
    other_limit: u64,
    other_fill_calls: u64,
    /// Fill each strategy cell once, unmeasured, before its measured fill
    /// (absent: no; the scorecard's probe, whose clients are few).
    other_warmup: Option<bool>,
    /// How the strategy cells are filled (absent: `pipelined`).
    other_fill: Option<OtherFill>,
    cpu_sizes: Vec<u64>,
    /// Entries across a CPU cell's logs: a cell of n entries per log has
    /// `cpu_entries / n` logs (`measure::cpu_keys`).
    cpu_entries: u64,
    cpu_conns: usize,
    cpu_run_s: f64,
    cpu_warmup_s: f64,
    /// Measured windows per CPU cell, each after its own FLUSHALL and prefill
    /// (B3.4's orderings are judged on their intervals).
    cpu_trials: u64,
    samples: u64,
}

/// How a strategy cell's clients are filled: `pipelined`, the captured
/// request replayed (its clock frozen at the capture: fine for the study's
/// strategies, whose state does not hold the caller's time), falling back
/// to `decisions` for a strategy of several round trips; or `decisions`,
/// the strategy's own decisions one at a time on the real clock (the
/// scorecard's probe, for any strategy, e.g. a log whose members are
/// timestamps).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum OtherFill {
    Pipelined,
    Decisions,
}

/// How a sliding log is filled for a bytes measurement.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Fill {
    /// ZADD pipelines of the strategy's data.
    Direct,
    /// The strategy itself, one EVALSHA decision at a time.
    Strategy,
}

impl Fill {
    fn as_str(&self) -> &'static str {
        match self {
            Fill::Direct => "direct",
            Fill::Strategy => "strategy",
        }
    }
}

/// Sliding logs of `limit` entries for `clients` clients.
#[derive(Debug, Clone)]
struct LogBytes {
    limit: u64,
    member_len: usize,
    /// zset-max-listpack-entries.
    z: u64,
    clients: u64,
    fill: Fill,
}

#[derive(Debug, Clone)]
enum Cell {
    LogBytes(LogBytes),
    /// Another strategy's state, filled by its own requests (pipelined).
    StrategyBytes {
        strategy: String,
    },
    /// CPU per decision of logs of `n` entries at zset-max-listpack-entries `z`.
    LogCpu {
        n: u64,
        z: u64,
    },
}

fn clients_for(p: &Params, limit: u64) -> u64 {
    (p.entry_budget / limit.max(1)).clamp(p.min_clients, p.max_clients)
}

/// A main cell: a directly filled log at Z=128 with the sweep's client count.
fn is_main(p: &Params, c: &LogBytes) -> bool {
    c.fill == Fill::Direct && c.z == 128 && c.clients == clients_for(p, c.limit)
}

fn cells(p: &Params, other_strategies: &[String]) -> Vec<Cell> {
    let mut out = Vec::new();
    let log = |limit, member_len, z, clients, fill| {
        Cell::LogBytes(LogBytes {
            limit,
            member_len,
            z,
            clients,
            fill,
        })
    };
    for &m in &p.member_lens {
        for &l in &p.log_limits {
            out.push(log(l, m, 128, clients_for(p, l), Fill::Direct));
        }
    }
    // The strategy-filled logs check the direct fill: at the default member
    // length only (the fill code is the same for every length).
    for &l in &p.verify_limits {
        for fill in [Fill::Strategy, Fill::Direct] {
            out.push(log(l, p.default_member_len, 128, p.verify_clients, fill));
        }
    }
    for &z in p.listpack_entries.iter().filter(|z| **z != 128) {
        for l in [z, z + 1] {
            out.push(log(
                l,
                p.default_member_len,
                z,
                p.cliff_clients,
                Fill::Direct,
            ));
        }
    }
    for s in other_strategies {
        out.push(Cell::StrategyBytes {
            strategy: s.clone(),
        });
    }
    for &z in &p.listpack_entries {
        for &n in &p.cpu_sizes {
            out.push(Cell::LogCpu { n, z });
        }
    }
    // A verification cell can coincide with a main cell (same limit and
    // clients): it is measured once.
    let mut seen = std::collections::HashSet::new();
    out.retain(|c| seen.insert(cell_id(p, c)));
    out
}

/// A stable id per cell (the `cell` column).
fn cell_id(p: &Params, cell: &Cell) -> String {
    match cell {
        Cell::LogBytes(c) => format!(
            "sliding-window-log|L{}|m{}|z{}|k{}|{}",
            c.limit,
            c.member_len,
            c.z,
            c.clients,
            c.fill.as_str()
        ),
        Cell::StrategyBytes { strategy } => format!(
            "{strategy}|L{}|k{}|strategy-pipelined",
            p.other_limit, p.other_clients
        ),
        Cell::LogCpu { n, z } => {
            format!(
                "cpu|sliding-window-log|n{n}|z{z}|k{}",
                measure::cpu_keys(p, *n)
            )
        }
    }
}

/// Cross-cell state: the one server every cell measures.
struct Memory {
    p: Params,
    _fleet: Fleet,
    addr: SocketAddr,
    admin: Connection,
}

impl Sweep for Memory {
    type Cell = Cell;
    /// The harness's pinning while a CPU cell runs.
    type Setup = Option<PinGuard>;
    type Row = MemoryRow;
    type Side = NoSide;

    fn cell_id(&self, cell: &Cell) -> String {
        cell_id(&self.p, cell)
    }

    /// The main cells (what the claims read) are filled `trials` times and
    /// the CPU cells measured `cpu_trials` windows, so each claim's value has
    /// an interval; the rest once.
    fn trials(&self, cell: &Cell) -> u64 {
        match cell {
            Cell::LogBytes(c) if is_main(&self.p, c) => self.p.trials.max(1),
            Cell::LogCpu { .. } => self.p.cpu_trials.max(1),
            _ => 1,
        }
    }

    async fn setup(&mut self, _: &RunContext, cell: &Cell) -> Result<Option<PinGuard>> {
        match cell {
            Cell::LogBytes(c) => {
                measure::set_listpack_entries(&mut self.admin, c.z).await?;
                Ok(None)
            }
            Cell::StrategyBytes { .. } => {
                measure::set_listpack_entries(&mut self.admin, 128).await?;
                Ok(None)
            }
            Cell::LogCpu { .. } => Ok(Some(PinGuard::pin(self.p.load_cpu)?)),
        }
    }

    async fn trial(
        &mut self,
        ctx: &RunContext,
        cell: &Cell,
        pin: &mut Option<PinGuard>,
        trial: u64,
    ) -> Result<TrialRows<MemoryRow>> {
        let id = self.cell_id(cell);
        let (p, admin, addr) = (&self.p, &mut self.admin, self.addr);
        let row = match cell {
            Cell::LogBytes(c) => {
                let mut row = measure::log_bytes(ctx, p, admin, addr, &id, c, trial).await?;
                row.default_member = c.member_len == p.default_member_len;
                row
            }
            Cell::StrategyBytes { strategy } => {
                measure::strategy_bytes(ctx, p, admin, addr, &id, strategy).await?
            }
            Cell::LogCpu { n, z } => {
                let load_cpu = pin.as_ref().and_then(|g| g.cpu);
                measure::log_cpu(ctx, p, admin, addr, &id, *n, *z, load_cpu, trial).await?
            }
        };
        Ok(TrialRows::one(row))
    }
}

pub async fn run(ctx: &RunContext) -> Result<()> {
    let mut p: Params = ctx.params()?;
    let mut wanted = vec![("redis_cpu", p.redis_cpu)];
    if !p.cpu_sizes.is_empty() {
        wanted.push(("load_cpu", p.load_cpu));
    }
    let cpus = ctx.resolve_cpus(&wanted)?;
    p.redis_cpu = cpus[0];
    if let Some(&c) = cpus.get(1) {
        p.load_cpu = c;
    }
    let fleet = ctx
        // Per-command latency histograms are allocated on a command's first
        // call (tens of KB each) and would be counted as the first cell's data.
        .standalone(
            ServerConfig::default()
                .pinned(p.redis_cpu)
                .with("latency-tracking", "no"),
        )
        .await?;
    let addr = fleet.primary_addr();
    ctx.note_fleet("server", &fleet).await?;
    ctx.note(
        "method",
        serde_json::json!({
            "bytes_per_client": "(used_memory after fill - before) / clients, after FLUSHALL, the filling connection closed",
            "direct_fill": "ZADD of the strategy's member format (request id zero-padded to member_len), microsecond scores 1 us apart, chunks of 100, then PEXPIRE window; compare the verify cells (fill=strategy vs fill=direct at the same clients)",
            "cpu_cells": "cpu_entries / n logs of n entries prefilled directly (members of default_member_len), limit never reached so every call trims nothing and adds one; hot loop as in `cost`; each window's CPU is the INFO cpu delta around the window alone (setup, fill and warm-up before its first reading; their Redis CPU recorded as setup_redis_cpu_us), cross-checked against EVALSHA's commandstats over the same window (cmd_calls, cmd_usec_per_call) and Redis's main-thread busy fraction",
            "redis_cpu": p.redis_cpu, "load_cpu": p.load_cpu,
        }),
    )?;
    let admin = Connection::connect(addr).await?;
    let cells = cells(&p, &ctx.named_strategies(&p.other_strategies)?);
    let mut sweep = Memory {
        p,
        _fleet: fleet,
        addr,
        admin,
    };
    sweep::run(ctx, &mut sweep, &cells).await?;
    measure::set_listpack_entries(&mut sweep.admin, 128).await
}
