//! B2.5's sliding logs at the fill levels the study leaves unstated, in a
//! cell of their own (`swl-fill`), so that resuming an older run folder
//! runs only them:
//!
//! - `normal`: the study's normal traffic (the same keys and uniform
//!   traffic as every other strategy, a window of `window_ms`), the server
//!   emptied before each run (`before_run`: freed and purged before the
//!   window, never during it). A run's logs grow from nothing and stay under
//!   the limit, so nearly every decision admits: trim nothing, ZCARD, ZADD.
//!   This is the default fill level of B2.5.
//! - `steady`: each of `swl_clients` logs holds about L entries spread
//!   over its window, with the window sized so that each decision trims
//!   about one entry and adds one: W = L / (decisions per second per log),
//!   from two short pilots (the first on empty logs, the second at the
//!   steady state of the first). The logs are refilled to L entries spread
//!   over the last W before each run. Memory: `swl_clients` x L entries
//!   (500 x 10,000 = 5e6 entries, about 0.7 GB at ~130 B each).
//!
//! The prefilled-full logs (every decision refused) stay in the main cell.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use super::{Load, Params, Plan, Variant};
use crate::experiments::RunContext;
use crate::run::seeds;
use limitbench_base::error::{Error, Result};
use limitbench_core::load::replay::{self, HotSpec, LogSpec, RawPipe, Template};
use limitbench_core::resp::Connection;

/// A fill level of the sliding logs of the `swl-fill` cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum Fill {
    /// Emptied before each run (the study's normal traffic).
    Normal,
    /// About L entries over a window sized to the decision rate.
    Steady,
}

impl Fill {
    fn word(self) -> &'static str {
        match self {
            Fill::Normal => "normal",
            Fill::Steady => "steady",
        }
    }
}

/// How a variant's logs are made ready before each of its runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) enum BeforeRun {
    /// Nothing: the state carries over (every variant but B2.5's fill levels).
    #[default]
    Nothing,
    /// Empty the (cell's own) server: its logs start empty.
    Empty,
    /// Empty it and write `prefill_entries` entries per log over the last `window_ms`.
    Refill,
}

/// The id of the `swl-fill` cell.
pub(super) const CELL: &str = "swl-fill";

/// The variants of the `swl-fill` cell: every fill level at every limit.
pub(super) fn plans(p: &Params, normal: impl Fn(String) -> Plan) -> Vec<Plan> {
    let mut out = Vec::new();
    for &fill in p.swl_fill_levels.as_deref().unwrap_or(&[]) {
        for &l in &p.swl_limits {
            let cell = format!("sliding-window-log|L{l}|{}", fill.word());
            out.push(match fill {
                Fill::Normal => Plan {
                    limit: l,
                    before_run: BeforeRun::Empty,
                    ..normal(cell)
                },
                // The window is sized in the setup (`size_windows`).
                Fill::Steady => Plan {
                    keys: p.swl_clients,
                    limit: l,
                    prefill_entries: l,
                    before_run: BeforeRun::Refill,
                    ..normal(cell)
                },
            });
        }
    }
    out
}

/// The keys a replayed variant writes (one per client).
fn keys_of(v: &Variant) -> Result<Vec<String>> {
    let Load::Replay(tpl) = &v.load else {
        return Err(Error::Other(format!(
            "cost: the sliding-log variant `{}` needs a replayable strategy",
            v.plan.cell
        )));
    };
    (0..v.plan.keys).map(|i| tpl.key(i)).collect()
}

/// `prefill_entries` entries per log, scored evenly over the last
/// `window_ms` up to now, TTL = window: a log at its steady state.
async fn refill(pipe: &mut RawPipe, v: &Variant, keys: &[String]) -> Result<()> {
    let entries = v.plan.prefill_entries.max(1);
    let window_us = (v.plan.window_ms * 1000) as i64;
    let step = (window_us / entries as i64).max(1);
    let now = limitbench_core::clock::Clock::system_now_us();
    let spec = LogSpec {
        entries,
        member_len: 16,
        // Ids of their own, above the hot loop's (ID_BASE up) and the full
        // logs' (9 x ID_BASE up), so no prefilled member is a request's.
        first_id: replay::ID_BASE * 8,
        first_score_us: now - step * (entries as i64 - 1),
        score_step_us: step,
        ttl_ms: Some(v.plan.window_ms),
        chunk: 100,
    };
    replay::fill_logs(pipe, keys, &spec).await?;
    Ok(())
}

/// Make variant `v`'s logs ready for a run (nothing for other variants).
///
/// Every run of the cell starts from an empty keyspace whose memory Redis
/// has already freed and handed back, so that no earlier run's cleanup
/// falls inside this run's window: `FLUSHALL SYNC` frees every key in the
/// main thread now (an `UNLINK` of this variant's keys alone left a
/// steady L=10,000 fill of 5e6 entries, whose keys the normal level shares,
/// to Redis's lazy-free thread on Redis's own CPU during the next normal
/// run: it took CPU from the main thread and was counted in that run's CPU
/// per decision), then `MEMORY PURGE` hands jemalloc's freed pages back now
/// rather than by its background thread during the window, then the logs
/// of a steady level are refilled. Only the `swl-fill` cell has such
/// variants (its own server), so the flush touches no other variant's keys.
pub(super) async fn before_run(addr: SocketAddr, admin: &mut Connection, v: &Variant) -> Result<()> {
    if v.plan.before_run == BeforeRun::Nothing {
        return Ok(());
    }
    let keys = keys_of(v)?;
    admin
        .call(&limitbench_core::args!["FLUSHALL", "SYNC"])
        .await?;
    admin.call(&limitbench_core::args!["MEMORY", "PURGE"]).await?;
    // FLUSHALL SYNC leaves nothing to the lazy-free thread; wait if it
    // still has objects (an older server, or a flush of another client).
    let started = std::time::Instant::now();
    while limitbench_core::info::read_number(admin, "memory", "lazyfree_pending_objects").await? > 0.0
    {
        if started.elapsed() > Duration::from_secs(120) {
            return Err(Error::Other(format!(
                "cost: Redis's lazy-free thread still busy 120 s before `{}`",
                v.plan.cell
            )));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    if v.plan.before_run == BeforeRun::Refill {
        let mut pipe = RawPipe::connect(addr).await?;
        refill(&mut pipe, v, &keys).await?;
    }
    Ok(())
}

/// The steady-state variants' windows: W = L / (decisions/s per log),
/// from a pilot on empty logs and a second at the steady state of the
/// first; each variant is rebuilt with its window. Noted in the manifest.
pub(super) async fn size_windows(
    ctx: &RunContext,
    p: &Params,
    addr: SocketAddr,
    admin: &mut Connection,
    variants: &mut [Variant],
    load_cpu: Option<usize>,
) -> Result<()> {
    let pilot = Duration::from_secs_f64(p.swl_pilot_s.unwrap_or(1.0));
    let warmup = Duration::from_secs_f64(p.warmup_s);
    if variants.iter().any(|v| v.plan.before_run != BeforeRun::Nothing) {
        ctx.note(
            "swl-fill-before-run",
            serde_json::json!("FLUSHALL SYNC, MEMORY PURGE, wait for lazyfree_pending_objects = 0, then the steady levels' refill: every run (and pilot) starts on a server already freed, no earlier run's cleanup inside its window"),
        )?;
    }
    let mut notes = serde_json::Map::new();
    for v in variants.iter_mut().filter(|v| v.plan.before_run == BeforeRun::Refill) {
        let l = v.plan.limit;
        let mut window_ms = p.window_ms;
        let mut rates = Vec::new();
        for round in 0..2 {
            let plan = Plan {
                window_ms,
                // The first pilot starts from empty logs.
                prefill_entries: if round == 0 { 0 } else { l },
                ..v.plan.clone()
            };
            *v = plan.build(ctx, admin, addr).await?;
            before_run(addr, admin, v).await?;
            let Load::Replay(tpl) = &v.load else {
                return Err(Error::Other(format!("cost: `{}` is not replayable", v.plan.cell)));
            };
            let spec = HotSpec {
                addr,
                conns: p.conns,
                keys: v.plan.keys,
                single_key: None,
                seed: seeds::trial_seed(ctx.seed, &format!("{}|pilot{round}", v.plan.cell), 0),
                pin_cpu: load_cpu,
            };
            let w = replay::measure_window(admin, Arc::<Template>::clone(tpl), spec, warmup, pilot)
                .await?;
            let rate = w.counts.decisions as f64 / w.wall_s;
            if !(rate > 0.0) {
                return Err(Error::Other(format!(
                    "cost: the pilot of `{}` made no decisions",
                    v.plan.cell
                )));
            }
            rates.push(rate);
            // L entries at (rate / logs) decisions per second per log.
            window_ms = ((l as f64 * v.plan.keys as f64 / rate) * 1000.0).round().max(1.0) as u64;
        }
        let plan = Plan {
            window_ms,
            prefill_entries: l,
            ..v.plan.clone()
        };
        *v = plan.build(ctx, admin, addr).await?;
        notes.insert(
            v.plan.cell.clone(),
            serde_json::json!({
                "logs": v.plan.keys, "limit": l, "pilot_rates_per_s": rates,
                "window_ms": window_ms,
                "rule": "window = L x logs / pilot rate: each decision trims about one entry and adds one",
            }),
        );
    }
    if !notes.is_empty() {
        ctx.note("steady-logs", serde_json::Value::Object(notes))?;
    }
    Ok(())
}
