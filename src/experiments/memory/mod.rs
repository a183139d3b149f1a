//! `memory`: bytes per client (claims B3.1-B3.4, B4.3).
//!
//! A measurement: FLUSHALL, read `used_memory`, fill K clients to their
//! limit, close the filling connection (its buffers would count), read
//! `used_memory` again; bytes per client = growth / K. Sample keys are
//! cross-checked with MEMORY USAGE (SAMPLES 0) and their OBJECT ENCODING and
//! size are recorded.
//!
//! Cells:
//! - sliding log, limits x member lengths (the member length is not stated by
//!   the study and the bytes per entry depend on it), filled directly with
//!   ZADD pipelines that write exactly the strategy's data (its member format,
//!   microsecond scores, the TTL); K = entry budget / L within
//!   [min_clients, max_clients].
//! - verification: the same limits filled by the strategy itself (EVALSHA,
//!   one decision at a time) and directly, at the same K, so the report can
//!   show that the direct fill equals what the strategy produces.
//! - the cliff at other `zset-max-listpack-entries` values (L = Z and Z+1).
//! - the other strategies at `other_clients` clients, filled by their own
//!   scripts (the captured request bytes, pipelined), for B3.3.
//! - CPU per decision (B3.4): logs of n entries (listpack or skiplist
//!   depending on Z), every call an admission (trim + ZADD), measured with the
//!   cost experiment's hot loop (Redis on CPU 0, load on CPU 1).

pub mod analyze;

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::{Experiment, RunContext};
use crate::conn::Conn;
use crate::error::{Error, Result};
use crate::fleet::ServerConfig;
use crate::load::study_b_cost_hot::{
    self as hot, AdmitRule, HotSpec, LogSpec, PinGuard, RawPipe, client_name,
};
use crate::resp::{Connection, Reply};
use crate::strategy::{Kind, Limit, Options, Request, Strategy, client_key};

pub const EXPERIMENT: Experiment = Experiment {
    name: "memory",
    study: "B",
    allows_external: false,
    run: |ctx: &RunContext| Box::pin(run(ctx)),
    analyze: analyze::analyze,
};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    redis_cpu: usize,
    load_cpu: usize,
    log_limits: Vec<u64>,
    member_lens: Vec<usize>,
    /// The strategy's own default member length (plain decimal request id).
    default_member_len: usize,
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
    cpu_sizes: Vec<u64>,
    cpu_clients: u64,
    cpu_conns: usize,
    cpu_run_s: f64,
    cpu_warmup_s: f64,
    samples: u64,
}

/// One measurement (bytes) or one CPU window (cpu).
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct MemoryRow {
    pub cell: String,
    pub trial: u64,
    /// `bytes` or `cpu`.
    pub kind: String,
    pub strategy: String,
    /// `direct` (ZADD pipelines), `strategy` (EVALSHA one decision at a
    /// time), `strategy-pipelined` (the strategy's request bytes, pipelined).
    pub fill: String,
    pub limit: u64,
    pub member_len: usize,
    pub id_base: u64,
    pub zset_max_listpack_entries: u64,
    pub clients: u64,
    /// Decisions (or entries) written per client.
    pub fill_per_client: u64,
    pub seed: u64,
    pub used_before: f64,
    pub used_after: f64,
    pub bytes_per_client: f64,
    pub bytes_per_entry: Option<f64>,
    /// Mean MEMORY USAGE (SAMPLES 0) of sample keys.
    pub memory_usage_mean: Option<f64>,
    /// Mean size of sample keys (ZCARD / HLEN / STRLEN).
    pub sample_size_mean: Option<f64>,
    pub encoding: String,
    pub fill_s: f64,
    // kind = cpu
    pub decisions: Option<u64>,
    pub decisions_per_s: Option<f64>,
    pub redis_cpu_us_per_decision: Option<f64>,
    pub redis_busy_fraction: Option<f64>,
    pub encoding_after: String,
    pub sample_size_after: Option<f64>,
    pub redis_cpu: Option<usize>,
    pub load_cpu: Option<usize>,
}

fn clients_for(p: &Params, limit: u64) -> u64 {
    (p.entry_budget / limit.max(1)).clamp(p.min_clients, p.max_clients)
}

async fn run(ctx: &RunContext) -> Result<()> {
    let p: Params = ctx.params()?;
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
            "cpu_cells": "logs of n entries prefilled directly (16-digit members), limit never reached so every call trims nothing and adds one; hot loop as in `cost`",
            "redis_cpu": p.redis_cpu, "load_cpu": p.load_cpu,
        }),
    )?;
    let mut admin = Connection::connect(addr).await?;
    let mut log = ctx.trial_log(&[])?;

    struct LogCell {
        limit: u64,
        member_len: usize,
        z: u64,
        clients: u64,
        fill: &'static str,
    }
    let mut cells: Vec<LogCell> = Vec::new();
    for &m in &p.member_lens {
        for &l in &p.log_limits {
            cells.push(LogCell {
                limit: l,
                member_len: m,
                z: 128,
                clients: clients_for(&p, l),
                fill: "direct",
            });
        }
        for &l in &p.verify_limits {
            for fill in ["strategy", "direct"] {
                cells.push(LogCell {
                    limit: l,
                    member_len: m,
                    z: 128,
                    clients: p.verify_clients,
                    fill,
                });
            }
        }
    }
    for &z in p.listpack_entries.iter().filter(|z| **z != 128) {
        for l in [z, z + 1] {
            cells.push(LogCell {
                limit: l,
                member_len: p.default_member_len,
                z,
                clients: p.cliff_clients,
                fill: "direct",
            });
        }
    }
    let total =
        cells.len() + p.other_strategies.len() + p.listpack_entries.len() * p.cpu_sizes.len();
    let mut progress = ctx.progress(total as u64);

    for c in &cells {
        let cell = format!(
            "sliding-window-log|L{}|m{}|z{}|k{}|{}",
            c.limit, c.member_len, c.z, c.clients, c.fill
        );
        if log.is_done(&cell, 0) {
            progress.skip(1);
            continue;
        }
        set_listpack_entries(&mut admin, c.z).await?;
        let row = measure_log_bytes(
            ctx,
            &p,
            &mut admin,
            addr,
            &cell,
            c.limit,
            c.member_len,
            c.z,
            c.clients,
            c.fill,
        )
        .await?;
        let msg = format!(
            "{cell}: {:.0} B/client, {:.1} B/entry, {}",
            row.bytes_per_client,
            row.bytes_per_entry.unwrap_or(f64::NAN),
            row.encoding
        );
        log.commit(&cell, 0, &[row])?;
        progress.inc(&msg);
    }
    set_listpack_entries(&mut admin, 128).await?;

    for s in &p.other_strategies {
        let cell = format!(
            "{s}|L{}|k{}|strategy-pipelined",
            p.other_limit, p.other_clients
        );
        if log.is_done(&cell, 0) {
            progress.skip(1);
            continue;
        }
        let row = measure_other_bytes(ctx, &p, &mut admin, addr, &cell, s).await?;
        let msg = format!("{cell}: {:.0} B/client", row.bytes_per_client);
        log.commit(&cell, 0, &[row])?;
        progress.inc(&msg);
    }

    {
        let pin = PinGuard::pin(p.load_cpu)?;
        for &z in &p.listpack_entries {
            for &n in &p.cpu_sizes {
                let cell = format!("cpu|sliding-window-log|n{n}|z{z}|k{}", p.cpu_clients);
                if log.is_done(&cell, 0) {
                    progress.skip(1);
                    continue;
                }
                let row = measure_log_cpu(ctx, &p, &mut admin, addr, &cell, n, z, pin.cpu).await?;
                let msg = format!(
                    "{cell}: {:.1} us/decision, {} -> {}",
                    row.redis_cpu_us_per_decision.unwrap_or(f64::NAN),
                    row.encoding,
                    row.encoding_after
                );
                log.commit(&cell, 0, &[row])?;
                progress.inc(&msg);
            }
        }
    }
    set_listpack_entries(&mut admin, 128).await?;
    progress.finish();
    Ok(())
}

async fn set_listpack_entries(admin: &mut Connection, z: u64) -> Result<()> {
    admin
        .call(&crate::args![
            "CONFIG",
            "SET",
            "zset-max-listpack-entries",
            z
        ])
        .await?;
    Ok(())
}

/// FLUSHALL and the memory baseline.
async fn baseline(admin: &mut Connection) -> Result<f64> {
    admin.call(&crate::args!["FLUSHALL", "SYNC"]).await?;
    tokio::time::sleep(Duration::from_millis(20)).await;
    hot::info_f64(admin, "memory", "used_memory").await
}

/// Sample keys: mean MEMORY USAGE, mean size, the encoding (of the first).
async fn sample_keys(
    admin: &mut Connection,
    keys: &[String],
) -> Result<(Option<f64>, Option<f64>, String)> {
    let mut usage = Vec::new();
    let mut sizes = Vec::new();
    let mut enc = String::new();
    for k in keys {
        let u = admin
            .call(&crate::args![
                "MEMORY",
                "USAGE",
                k.as_str(),
                "SAMPLES",
                0i64
            ])
            .await?;
        if let Some(u) = u.as_f64() {
            usage.push(u);
        }
        let t = admin
            .call(&crate::args!["TYPE", k.as_str()])
            .await?
            .as_string()
            .unwrap_or_default();
        let size_cmd = match t.as_str() {
            "zset" => Some("ZCARD"),
            "hash" => Some("HLEN"),
            "string" => Some("STRLEN"),
            _ => None,
        };
        if let Some(c) = size_cmd
            && let Some(n) = admin.call(&crate::args![c, k.as_str()]).await?.as_f64()
        {
            sizes.push(n);
        }
        if enc.is_empty() {
            enc = match admin
                .call(&crate::args!["OBJECT", "ENCODING", k.as_str()])
                .await
            {
                Ok(Reply::Bulk(b)) => String::from_utf8_lossy(&b).into_owned(),
                Ok(r) => r.as_string().unwrap_or_default(),
                Err(_) => "missing".into(),
            };
        }
    }
    let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    Ok((mean(&usage), mean(&sizes), enc))
}

fn sample_clients(clients: u64, samples: u64) -> Vec<u64> {
    let n = samples.clamp(1, clients.max(1));
    (0..n).map(|i| i * clients / n).collect()
}

fn swl_strategy(ctx: &RunContext, member_len: usize) -> Result<Arc<dyn Strategy>> {
    ctx.build_strategy(
        "sliding-window-log",
        &Options::default()
            .with("invocation", "evalsha")
            .with("member_len", member_len),
    )
}

#[allow(clippy::too_many_arguments)]
async fn measure_log_bytes(
    ctx: &RunContext,
    p: &Params,
    admin: &mut Connection,
    addr: std::net::SocketAddr,
    cell: &str,
    limit: u64,
    member_len: usize,
    z: u64,
    clients: u64,
    fill: &str,
) -> Result<MemoryRow> {
    let strategy = swl_strategy(ctx, member_len)?;
    let before = baseline(admin).await?;
    let t0 = Instant::now();
    let keys: Vec<String> = (0..clients)
        .map(|i| client_key(&client_name(i), "swl"))
        .collect();
    match fill {
        "direct" => {
            let mut pipe = RawPipe::connect(addr).await?;
            hot::fill_logs(
                &mut pipe,
                &keys,
                &LogSpec {
                    entries: limit,
                    member_len,
                    first_id: p.id_base,
                    first_score_us: crate::clock::Clock::system_now_us(),
                    score_step_us: 1,
                    ttl_ms: Some(p.window_ms),
                    chunk: 100,
                },
            )
            .await?;
        }
        _ => {
            // The strategy itself, one decision at a time. Its script is loaded
            // (and the memory it takes is part of `before`: load first, then
            // re-read the baseline).
            strategy.prepare(admin).await?;
            let before2 = hot::info_f64(admin, "memory", "used_memory").await?;
            let mut conn = Conn::connect(addr).await?;
            let mut id = p.id_base;
            let lim = Limit::per_window(limit, p.window_ms);
            for i in 0..clients {
                let name = client_name(i);
                for _ in 0..limit {
                    let d = strategy
                        .decide(
                            &mut conn,
                            &Request {
                                client: &name,
                                limit: lim,
                                cost: 1,
                                now_us: 0,
                                request_id: id,
                            },
                        )
                        .await?;
                    id += 1;
                    if !d.admitted {
                        return Err(Error::Other(format!(
                            "{cell}: the strategy refused a request while filling (client {i})"
                        )));
                    }
                }
            }
            drop(conn);
            return finish_bytes(
                admin,
                p,
                ctx,
                cell,
                "sliding-window-log",
                fill,
                limit,
                member_len,
                z,
                clients,
                limit,
                before2,
                t0,
                &keys,
                true,
            )
            .await;
        }
    }
    finish_bytes(
        admin,
        p,
        ctx,
        cell,
        "sliding-window-log",
        fill,
        limit,
        member_len,
        z,
        clients,
        limit,
        before,
        t0,
        &keys,
        true,
    )
    .await
}

#[allow(clippy::too_many_arguments)]
async fn finish_bytes(
    admin: &mut Connection,
    p: &Params,
    ctx: &RunContext,
    cell: &str,
    strategy: &str,
    fill: &str,
    limit: u64,
    member_len: usize,
    z: u64,
    clients: u64,
    fill_per_client: u64,
    before: f64,
    t0: Instant,
    keys: &[String],
    per_entry: bool,
) -> Result<MemoryRow> {
    let fill_s = t0.elapsed().as_secs_f64();
    // Let incremental rehashing settle a little (serverCron does 1 ms steps).
    tokio::time::sleep(Duration::from_millis(150)).await;
    let after = hot::info_f64(admin, "memory", "used_memory").await?;
    let sample: Vec<String> = sample_clients(clients, p.samples)
        .into_iter()
        .map(|i| keys[i as usize].clone())
        .collect();
    let (usage, size, enc) = sample_keys(admin, &sample).await?;
    let per_client = (after - before) / clients as f64;
    Ok(MemoryRow {
        cell: cell.into(),
        trial: 0,
        kind: "bytes".into(),
        strategy: strategy.into(),
        fill: fill.into(),
        limit,
        member_len,
        id_base: p.id_base,
        zset_max_listpack_entries: z,
        clients,
        fill_per_client,
        seed: ctx.seed,
        used_before: before,
        used_after: after,
        bytes_per_client: per_client,
        bytes_per_entry: per_entry.then(|| per_client / limit as f64),
        memory_usage_mean: usage,
        sample_size_mean: size,
        encoding: enc,
        fill_s,
        ..Default::default()
    })
}

async fn measure_other_bytes(
    ctx: &RunContext,
    p: &Params,
    admin: &mut Connection,
    addr: std::net::SocketAddr,
    cell: &str,
    name: &str,
) -> Result<MemoryRow> {
    let probe = ctx.build_strategy(name, &Options::default())?;
    let opts = if matches!(probe.info().kind, Kind::Lua | Kind::External) {
        Options::default().with("invocation", "evalsha")
    } else {
        Options::default()
    };
    let s = ctx.build_strategy(name, &opts)?;
    let lim = Limit::per_window(p.other_limit, p.window_ms);
    let rule = match s.info().kind {
        Kind::Transaction => AdmitRule::FirstIntAtMost(p.other_limit as i64),
        _ => AdmitRule::FirstIntIsOne,
    };
    let tpl = hot::capture(s.as_ref(), lim, crate::clock::Clock::system_now_us(), rule).await?;
    admin.call(&crate::args!["FLUSHALL", "SYNC"]).await?;
    s.prepare(admin).await?;
    tokio::time::sleep(Duration::from_millis(20)).await;
    let before = hot::info_f64(admin, "memory", "used_memory").await?;
    let t0 = Instant::now();
    let mut pipe = RawPipe::connect(addr).await?;
    let calls = p.other_fill_calls;
    let reqs = (0..p.other_clients)
        .flat_map(move |i| (0..calls).map(move |c| (i, hot::ID_BASE + i * calls + c)));
    let (_admitted, errors, first) = hot::replay_pipelined(&mut pipe, &tpl, reqs, 1000).await?;
    drop(pipe);
    if errors > 0 {
        return Err(Error::Reply(format!(
            "{cell}: {errors} errors while filling, first: {}",
            first.unwrap_or_default()
        )));
    }
    // The keys the template wrote: render client i and read its key back from Redis.
    let keys: Vec<String> = (0..p.other_clients)
        .map(|i| tpl.key(i))
        .collect::<Result<_>>()?;
    finish_bytes(
        admin,
        p,
        ctx,
        cell,
        name,
        "strategy-pipelined",
        p.other_limit,
        0,
        128,
        p.other_clients,
        calls,
        before,
        t0,
        &keys,
        false,
    )
    .await
}

#[allow(clippy::too_many_arguments)]
async fn measure_log_cpu(
    ctx: &RunContext,
    p: &Params,
    admin: &mut Connection,
    addr: std::net::SocketAddr,
    cell: &str,
    n: u64,
    z: u64,
    load_cpu: Option<usize>,
) -> Result<MemoryRow> {
    let s = swl_strategy(ctx, 16)?;
    // A limit never reached: every call trims (nothing) and adds one entry.
    let lim = Limit::per_window(1_000_000_000, p.window_ms);
    let tpl = hot::capture(
        s.as_ref(),
        lim,
        crate::clock::Clock::system_now_us(),
        AdmitRule::FirstIntIsOne,
    )
    .await?;
    admin.call(&crate::args!["FLUSHALL", "SYNC"]).await?;
    set_listpack_entries(admin, z).await?;
    s.prepare(admin).await?;
    let keys: Vec<String> = (0..p.cpu_clients)
        .map(|i| tpl.key(i))
        .collect::<Result<_>>()?;
    let t0 = Instant::now();
    let mut pipe = RawPipe::connect(addr).await?;
    hot::fill_logs(
        &mut pipe,
        &keys,
        &LogSpec {
            entries: n,
            member_len: 16,
            first_id: hot::ID_BASE * 9,
            first_score_us: crate::clock::Clock::system_now_us() - n as i64,
            score_step_us: 1,
            ttl_ms: Some(p.window_ms),
            chunk: 100,
        },
    )
    .await?;
    drop(pipe);
    let fill_s = t0.elapsed().as_secs_f64();
    let sample: Vec<String> = sample_clients(p.cpu_clients, p.samples)
        .into_iter()
        .map(|i| keys[i as usize].clone())
        .collect();
    let (_, size0, enc0) = sample_keys(admin, &sample).await?;
    let w = hot::measure_window(
        admin,
        Arc::new(tpl),
        HotSpec {
            addr,
            conns: p.cpu_conns,
            keys: p.cpu_clients,
            single_key: None,
            seed: ctx.seed ^ n ^ (z << 20),
            pin_cpu: load_cpu,
        },
        Duration::from_secs_f64(p.cpu_warmup_s),
        Duration::from_secs_f64(p.cpu_run_s),
    )
    .await?;
    let (_, size1, enc1) = sample_keys(admin, &sample).await?;
    if w.counts.errors > 0 {
        return Err(Error::Reply(format!(
            "{cell}: {} errors, first: {}",
            w.counts.errors,
            w.first_error.unwrap_or_default()
        )));
    }
    Ok(MemoryRow {
        cell: cell.into(),
        trial: 0,
        kind: "cpu".into(),
        strategy: "sliding-window-log".into(),
        fill: "direct".into(),
        limit: lim.limit,
        member_len: 16,
        id_base: hot::ID_BASE * 9,
        zset_max_listpack_entries: z,
        clients: p.cpu_clients,
        fill_per_client: n,
        seed: ctx.seed,
        encoding: enc0,
        sample_size_mean: size0,
        fill_s,
        decisions: Some(w.counts.decisions),
        decisions_per_s: Some(w.counts.decisions as f64 / w.wall_s),
        redis_cpu_us_per_decision: Some(w.cpu.cpu_us_per_decision),
        redis_busy_fraction: Some(w.cpu.busy_fraction),
        encoding_after: enc1,
        sample_size_after: size1,
        redis_cpu: Some(p.redis_cpu),
        load_cpu,
        ..Default::default()
    })
}
