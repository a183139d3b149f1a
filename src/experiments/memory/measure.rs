//! What one `memory` cell does: fill, then read `used_memory` and sample
//! keys (bytes cells), or prefill logs and run a hot-loop window (CPU cells).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{Fill, LogBytes, MemoryRow, OtherFill, Params};
use crate::run::{RunContext, seeds};
use limitbench_base::error::{Error, Result};
use limitbench_core::conn::Conn;
use limitbench_core::info;
use limitbench_core::load::replay::{
    self, HotSpec, LogSpec, RawPipe, Template, client_name,
};
use limitbench_core::resp::{Connection, Reply};
use limitbench_core::strategy::{Kind, Limit, Options, Request, Strategy, client_key};

/// How long Redis is left alone before a memory reading of the strategy
/// cells (and after every fill): incremental rehashing takes 1 ms steps and
/// idle clients' buffers are resized by the server's cron (10 times a
/// second), so a reading right after a burst of commands sees memory that
/// is still moving.
const SETTLE: Duration = Duration::from_millis(150);

pub(super) async fn set_listpack_entries(admin: &mut Connection, z: u64) -> Result<()> {
    admin
        .call(&limitbench_core::args![
            "CONFIG",
            "SET",
            "zset-max-listpack-entries",
            z
        ])
        .await?;
    Ok(())
}

async fn used_memory(admin: &mut Connection) -> Result<f64> {
    info::read_number(admin, "memory", "used_memory").await
}

/// FLUSHALL and the memory baseline.
async fn baseline(admin: &mut Connection) -> Result<f64> {
    admin
        .call(&limitbench_core::args!["FLUSHALL", "SYNC"])
        .await?;
    tokio::time::sleep(Duration::from_millis(20)).await;
    used_memory(admin).await
}

/// What sample keys hold: mean MEMORY USAGE, mean size, the encoding (of the first).
struct KeySample {
    usage_mean: Option<f64>,
    size_mean: Option<f64>,
    encoding: String,
}

async fn sample_keys(admin: &mut Connection, keys: &[String]) -> Result<KeySample> {
    let mut usage = Vec::new();
    let mut sizes = Vec::new();
    let mut enc = String::new();
    for k in keys {
        let k = k.as_str();
        let u = admin
            .call(&limitbench_core::args![
                "MEMORY", "USAGE", k, "SAMPLES", 0i64
            ])
            .await?;
        if let Some(u) = u.as_f64() {
            usage.push(u);
        }
        let t = admin
            .call(&limitbench_core::args!["TYPE", k])
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
            && let Some(n) = admin.call(&limitbench_core::args![c, k]).await?.as_f64()
        {
            sizes.push(n);
        }
        if enc.is_empty() {
            enc = match admin
                .call(&limitbench_core::args!["OBJECT", "ENCODING", k])
                .await
            {
                Ok(Reply::Bulk(b)) => String::from_utf8_lossy(&b).into_owned(),
                Ok(r) => r.as_string().unwrap_or_default(),
                Err(_) => "missing".into(),
            };
        }
    }
    let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    Ok(KeySample {
        usage_mean: mean(&usage),
        size_mean: mean(&sizes),
        encoding: enc,
    })
}

/// `samples` keys spread evenly over `keys`.
fn sample_of(keys: &[String], samples: u64) -> Vec<String> {
    let clients = keys.len() as u64;
    if clients == 0 {
        return Vec::new();
    }
    let n = samples.clamp(1, clients);
    (0..n)
        .map(|i| keys[(i * clients / n) as usize].clone())
        .collect()
}

fn swl_strategy(ctx: &RunContext, member_len: usize) -> Result<Arc<dyn Strategy>> {
    ctx.build_strategy(
        "sliding-window-log",
        &Options::default()
            .with("invocation", "evalsha")
            .with("member_len", member_len),
    )
}

/// Bytes per client of sliding logs (a [`LogBytes`] cell).
pub(super) async fn log_bytes(
    ctx: &RunContext,
    p: &Params,
    admin: &mut Connection,
    addr: SocketAddr,
    cell: &str,
    c: &LogBytes,
    trial: u64,
) -> Result<MemoryRow> {
    let strategy = swl_strategy(ctx, c.member_len)?;
    let before = baseline(admin).await?;
    let t0 = Instant::now();
    let keys: Vec<String> = (0..c.clients)
        .map(|i| client_key(&client_name(i), "swl"))
        .collect();
    let before = match c.fill {
        Fill::Direct => {
            let mut pipe = RawPipe::connect(addr).await?;
            let spec = LogSpec {
                entries: c.limit,
                member_len: c.member_len,
                first_id: p.id_base,
                first_score_us: limitbench_core::clock::Clock::system_now_us(),
                score_step_us: 1,
                ttl_ms: Some(p.window_ms),
                chunk: 100,
            };
            replay::fill_logs(&mut pipe, &keys, &spec).await?;
            before
        }
        Fill::Strategy => {
            // The strategy's script is loaded first and the memory it takes
            // is part of the baseline: load, then re-read it.
            strategy.prepare(admin).await?;
            let before = used_memory(admin).await?;
            fill_by_strategy(strategy.as_ref(), p, addr, cell, c).await?;
            before
        }
    };
    let row = MemoryRow {
        strategy: "sliding-window-log".into(),
        fill: c.fill.as_str().into(),
        limit: c.limit,
        member_len: c.member_len,
        zset_max_listpack_entries: c.z,
        clients: c.clients,
        fill_per_client: c.limit,
        trial,
        ..bytes_row(ctx, p, cell)
    };
    finish_bytes(admin, p, row, before, t0, &keys, true).await
}

/// Every client to its limit, one EVALSHA decision at a time, on a
/// connection closed before the measurement.
async fn fill_by_strategy(
    strategy: &dyn Strategy,
    p: &Params,
    addr: SocketAddr,
    cell: &str,
    c: &LogBytes,
) -> Result<()> {
    let mut conn = Conn::connect(addr).await?;
    let mut id = p.id_base;
    let limit = Limit::per_window(c.limit, p.window_ms);
    for i in 0..c.clients {
        let name = client_name(i);
        for _ in 0..c.limit {
            let req = Request {
                client: &name,
                limit,
                cost: 1,
                now_us: 0,
                request_id: id,
            };
            let d = strategy.decide(&mut conn, &req).await?;
            id += 1;
            if !d.admitted {
                return Err(Error::Other(format!(
                    "{cell}: the strategy refused a request while filling (client {i})"
                )));
            }
        }
    }
    Ok(())
}

/// The fields every bytes row of this run shares.
fn bytes_row(ctx: &RunContext, p: &Params, cell: &str) -> MemoryRow {
    MemoryRow {
        cell: cell.into(),
        trial: 0,
        kind: "bytes".into(),
        id_base: p.id_base,
        seed: ctx.seed,
        ..Default::default()
    }
}

/// After a fill: let Redis settle, read `used_memory`, sample keys, and
/// complete `row` with bytes per client (and per entry if `per_entry`).
async fn finish_bytes(
    admin: &mut Connection,
    p: &Params,
    row: MemoryRow,
    before: f64,
    t0: Instant,
    keys: &[String],
    per_entry: bool,
) -> Result<MemoryRow> {
    let fill_s = t0.elapsed().as_secs_f64();
    tokio::time::sleep(SETTLE).await;
    let after = used_memory(admin).await?;
    let s = sample_keys(admin, &sample_of(keys, p.samples)).await?;
    let per_client = (after - before) / row.clients as f64;
    Ok(MemoryRow {
        used_before: before,
        used_after: after,
        bytes_per_client: per_client,
        bytes_per_entry: per_entry.then(|| per_client / row.limit as f64),
        memory_usage_mean: s.usage_mean,
        sample_size_mean: s.size_mean,
        encoding: s.encoding,
        fill_s,
        ..row
    })
}

/// Capture `s`'s request for `limit` (the template the replay fills) by one
/// real decision on `addr`, where `s` is prepared; its decisions are read
/// by its own reply rules (`AdmitRule::for_strategy`).
async fn capture(s: &dyn Strategy, limit: Limit, addr: SocketAddr) -> Result<Template> {
    replay::capture(
        s,
        limit,
        limitbench_core::clock::Clock::system_now_us(),
        addr,
    )
    .await
}

/// Round trips one decision of `s` takes (one decision on a scratch
/// client, whose key the fill's FLUSHALL removes).
async fn round_trips_per_decision(s: &dyn Strategy, addr: SocketAddr, limit: Limit) -> Result<u64> {
    let mut conn = Conn::connect(addr).await?;
    let before = conn.round_trips();
    s.decide(&mut conn, &Request::now("memory-probe", limit))
        .await?;
    Ok(conn.round_trips() - before)
}

/// How a strategy cell's clients are filled: the strategy's captured
/// request, pipelined; or, for a strategy whose decision is more than one
/// round trip, its own decisions one at a time.
enum StrategyFill {
    Pipelined(Template),
    Decisions(Arc<dyn Strategy>),
}

impl StrategyFill {
    fn as_str(&self) -> &'static str {
        match self {
            StrategyFill::Pipelined(_) => "strategy-pipelined",
            StrategyFill::Decisions(_) => "strategy",
        }
    }

    /// Every client to its limit on a connection closed before returning;
    /// the keys written (the sample is drawn from them).
    async fn fill(
        &self,
        p: &Params,
        admin: &mut Connection,
        addr: SocketAddr,
        cell: &str,
        limit: Limit,
    ) -> Result<(Vec<String>, u64)> {
        let calls = p.other_fill_calls;
        match self {
            StrategyFill::Pipelined(tpl) => {
                let mut pipe = RawPipe::connect(addr).await?;
                let reqs = (0..p.other_clients).flat_map(move |i| {
                    (0..calls).map(move |c| (i, replay::ID_BASE + i * calls + c))
                });
                let out = replay::replay_pipelined(&mut pipe, tpl, reqs, 1000).await?;
                drop(pipe);
                if out.errors > 0 {
                    return Err(Error::Reply(format!(
                        "{cell}: {} errors while filling, first: {}",
                        out.errors,
                        out.first_error.unwrap_or_default()
                    )));
                }
                // Read by the strategy's own reply rules (the capture's template).
                let refused = calls * p.other_clients - out.admitted;
                // The keys the template wrote: render client i and read its key back from Redis.
                let keys = (0..p.other_clients)
                    .map(|i| tpl.key(i))
                    .collect::<Result<_>>()?;
                Ok((keys, refused))
            }
            StrategyFill::Decisions(s) => {
                let mut conn = Conn::connect(addr).await?;
                let names: Vec<String> = (0..p.other_clients).map(client_name).collect();
                let mut refused = 0u64;
                for name in &names {
                    for _ in 0..calls {
                        match s.decide(&mut conn, &Request::now(name, limit)).await {
                            Ok(d) => refused += u64::from(!d.admitted),
                            Err(e) => {
                                return Err(Error::Reply(format!(
                                    "{cell}: an error while filling: {e}"
                                )));
                            }
                        }
                    }
                }
                drop(conn);
                let mut keys = Vec::new();
                for name in &names {
                    keys.extend(crate::check::keys_containing(admin, name).await?);
                }
                Ok((keys, refused))
            }
        }
    }
}

/// Bytes per client of another strategy, filled by its own requests. With
/// `other_warmup` the same fill is made once before, unmeasured, and
/// flushed: a fresh server's first fill also allocates what it keeps after
/// FLUSHALL (tens of KB), which is much per client at the few clients of
/// the scorecard's probe.
pub(super) async fn strategy_bytes(
    ctx: &RunContext,
    p: &Params,
    admin: &mut Connection,
    addr: SocketAddr,
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
    let limit = Limit::per_window(p.other_limit, p.window_ms);
    admin
        .call(&limitbench_core::args!["FLUSHALL", "SYNC"])
        .await?;
    s.prepare(admin).await?;
    let by_decisions = p.other_fill == Some(OtherFill::Decisions);
    let fill = if by_decisions || round_trips_per_decision(s.as_ref(), addr, limit).await? > 1 {
        StrategyFill::Decisions(s.clone())
    } else {
        StrategyFill::Pipelined(capture(s.as_ref(), limit, addr).await?)
    };
    if p.other_warmup.unwrap_or(false) {
        fill.fill(p, admin, addr, cell, limit).await?;
    }
    // The fill takes each client to its limit, not past it: a refusal there
    // is a strategy that under-admits, and the state measured is not a busy
    // client's. The study's cell stops; the scorecard's probe stores the
    // count for its judge (a warn or fail that says so, not an error).
    admin
        .call(&limitbench_core::args!["FLUSHALL", "SYNC"])
        .await?;
    s.prepare(admin).await?;
    tokio::time::sleep(SETTLE).await;
    let before = used_memory(admin).await?;
    let t0 = Instant::now();
    let (keys, refused) = fill.fill(p, admin, addr, cell, limit).await?;
    let refused = refused * u64::from(p.other_fill_calls <= limit.limit);
    if refused > 0 && !ctx.probe {
        return Err(Error::Other(format!(
            "{cell}: the strategy refused {refused} of {} requests below its limit of {} while filling (it under-admits)",
            p.other_fill_calls * p.other_clients,
            limit.limit
        )));
    }
    let row = MemoryRow {
        fill: fill.as_str().into(),
        fill_refused: Some(refused),
        ..strategy_row(ctx, p, cell, name)
    };
    finish_bytes(admin, p, row, before, t0, &keys, false).await
}

/// The fields of a [`strategy_bytes`] row before the measurement.
fn strategy_row(ctx: &RunContext, p: &Params, cell: &str, name: &str) -> MemoryRow {
    MemoryRow {
        strategy: name.into(),
        limit: p.other_limit,
        member_len: 0,
        zset_max_listpack_entries: 128,
        clients: p.other_clients,
        fill_per_client: p.other_fill_calls,
        ..bytes_row(ctx, p, cell)
    }
}

/// Redis's process CPU (user+sys) so far, µs.
async fn redis_cpu_us(admin: &mut Connection) -> Result<f64> {
    let (c, _) = replay::redis_snapshot(admin).await?;
    Ok((c.user_s + c.sys_s) * 1e6)
}

/// The logs of a CPU cell of `n` entries: `cpu_entries / n` of them, so
/// every cell holds about the same entries and a window's decisions grow
/// each log by the same fraction of n whatever n is (the window's
/// decisions / cpu_entries; B3.4's analysis checks it stayed small).
pub(super) fn cpu_keys(p: &Params, n: u64) -> u64 {
    (p.cpu_entries / n.max(1)).max(1)
}

/// CPU per decision of logs of `n` entries at zset-max-listpack-entries `z`:
/// one window. Everything that prepares it (CONFIG SET, FLUSHALL, the
/// script's load, the prefill, the key sample) runs and finishes before the
/// hot load starts; the window's CPU is the delta of INFO cpu between two
/// readings taken after the warm-up, around the window alone
/// (`replay::measure_started`). Its instruments: the decisions the client
/// counted, Redis's process and main-thread CPU, and EVALSHA's calls and
/// usec in INFO commandstats over the same window (the cross-check B3.4's
/// analysis applies); the setup's own Redis CPU is recorded beside.
#[allow(clippy::too_many_arguments)]
pub(super) async fn log_cpu(
    ctx: &RunContext,
    p: &Params,
    admin: &mut Connection,
    addr: SocketAddr,
    cell: &str,
    n: u64,
    z: u64,
    load_cpu: Option<usize>,
    trial: u64,
) -> Result<MemoryRow> {
    let member_len = p.default_member_len;
    let s = swl_strategy(ctx, member_len)?;
    // A limit never reached: every call trims (nothing) and adds one entry.
    let lim = Limit::per_window(1_000_000_000, p.window_ms);
    // The capture is one real decision: taken before the FLUSHALL below, so
    // the window's server holds only the fill.
    s.prepare(admin).await?;
    let tpl = capture(s.as_ref(), lim, addr).await?;
    let clients = cpu_keys(p, n);
    let setup0 = redis_cpu_us(admin).await?;
    admin
        .call(&limitbench_core::args!["FLUSHALL", "SYNC"])
        .await?;
    set_listpack_entries(admin, z).await?;
    s.prepare(admin).await?;
    let keys: Vec<String> = (0..clients)
        .map(|i| tpl.key(i))
        .collect::<Result<_>>()?;
    let t0 = Instant::now();
    let mut pipe = RawPipe::connect(addr).await?;
    let spec = LogSpec {
        entries: n,
        member_len,
        first_id: replay::ID_BASE * 9,
        first_score_us: limitbench_core::clock::Clock::system_now_us() - n as i64,
        score_step_us: 1,
        ttl_ms: Some(p.window_ms),
        chunk: 100,
    };
    replay::fill_logs(&mut pipe, &keys, &spec).await?;
    drop(pipe);
    let fill_s = t0.elapsed().as_secs_f64();
    let sample = sample_of(&keys, p.samples);
    let before = sample_keys(admin, &sample).await?;
    // Let the server's cron finish with the fill (rehashing, client
    // buffers) before the load starts; none of it is in the window either way.
    tokio::time::sleep(SETTLE).await;
    let setup_cpu_us = redis_cpu_us(admin).await? - setup0;
    let spec = HotSpec {
        addr,
        conns: p.cpu_conns,
        keys: clients,
        single_key: None,
        seed: seeds::trial_seed(ctx.seed, cell, trial),
        pin_cpu: load_cpu,
    };
    let warmup = Duration::from_secs_f64(p.cpu_warmup_s);
    let window = Duration::from_secs_f64(p.cpu_run_s);
    let w = replay::measure_window(admin, Arc::new(tpl), spec, warmup, window).await?;
    let after = sample_keys(admin, &sample).await?;
    if w.counts.errors > 0 {
        return Err(Error::Reply(format!(
            "{cell}: {} errors, first: {}",
            w.counts.errors,
            w.first_error.unwrap_or_default()
        )));
    }
    let (cmd_calls, cmd_usec) = w.cmdstats.get("evalsha").copied().unwrap_or((0, 0.0));
    Ok(MemoryRow {
        cell: cell.into(),
        trial,
        kind: "cpu".into(),
        strategy: "sliding-window-log".into(),
        fill: "direct".into(),
        limit: lim.limit,
        member_len,
        id_base: replay::ID_BASE * 9,
        zset_max_listpack_entries: z,
        clients,
        fill_per_client: n,
        seed: ctx.seed,
        default_member: true,
        encoding: before.encoding,
        sample_size_mean: before.size_mean,
        fill_s,
        decisions: Some(w.counts.decisions),
        decisions_per_s: Some(w.counts.decisions as f64 / w.wall_s),
        redis_cpu_us_per_decision: Some(w.cpu.cpu_us_per_decision),
        redis_busy_fraction: Some(w.cpu.busy_fraction),
        encoding_after: after.encoding,
        sample_size_after: after.size_mean,
        redis_cpu: Some(p.redis_cpu),
        load_cpu,
        redis_main_thread_busy_fraction: Some(w.cpu.main_thread_busy_fraction),
        cmd_calls: Some(cmd_calls),
        cmd_usec_per_call: (cmd_calls > 0).then(|| cmd_usec / cmd_calls as f64),
        setup_redis_cpu_us: Some(setup_cpu_us),
        window_redis_cpu_us: Some(w.cpu.cpu_us),
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_spread_over_the_keys() {
        let keys: Vec<String> = (0..10).map(|i| i.to_string()).collect();
        assert_eq!(sample_of(&keys, 5), ["0", "2", "4", "6", "8"]);
        assert_eq!(sample_of(&keys, 50).len(), 10);
        assert_eq!(sample_of(&keys[..1], 5), ["0"]);
        assert!(sample_of(&[], 5).is_empty());
    }
}
