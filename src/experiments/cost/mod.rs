//! `cost`: what one decision costs Redis (claims B2.1-B2.6, B6.1).
//!
//! One Redis pinned to CPU 0, nothing else on it; the harness pins itself to
//! CPU 1 for the whole measurement. Each variant (GET, INCR, the MULTI fixed
//! window, every Lua strategy by EVALSHA, the token bucket also by EVAL and
//! FCALL, the sliding log prefilled full at two limits, an abusive client on
//! one key) is run `runs` times, interleaved (run 1 of every variant, then run
//! 2, ...) so drift hits all alike. A run: start `conns` connections replaying
//! the strategy's own request bytes in a closed loop (`load::study_b_cost_hot`),
//! warm up, then CONFIG RESETSTAT and a measured window bracketed by INFO
//! cpu/commandstats snapshots. Decisions are counted on the client side.
//!
//! For GET the same run also runs `redis-benchmark -c <conns> -r <keys> -t
//! get` on the same CPU and records its rate beside ours (is the harness the
//! bottleneck?). A row whose Redis was less than 90% busy is flagged
//! `load_bound`.

pub mod analyze;

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::{Experiment, RunContext};
use crate::error::{Error, Result};
use crate::fleet::ServerConfig;
use crate::load::study_b_cost_hot::{
    self as hot, AdmitRule, HotSpec, LogSpec, PinGuard, RawPipe, Template,
};
use crate::resp::Connection;
use crate::strategy::{Kind, Limit, Options, Strategy};

pub const EXPERIMENT: Experiment = Experiment {
    name: "cost",
    study: "B",
    allows_external: false,
    run: |ctx: &RunContext| Box::pin(run(ctx)),
    analyze: analyze::analyze,
};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    conns: usize,
    keys: u64,
    runs: u64,
    run_s: f64,
    warmup_s: f64,
    redis_cpu: usize,
    load_cpu: usize,
    /// Normal traffic's limit and window: large, so normal traffic is admitted.
    limit: u64,
    window_ms: u64,
    lua_strategies: Vec<String>,
    /// Extra invocations of the token bucket besides EVALSHA.
    token_bucket_invocations: Vec<String>,
    swl_limits: Vec<u64>,
    /// Clients of the prefilled sliding-log variants (their logs are full).
    swl_clients: u64,
    abusive_strategies: Vec<String>,
    abusive_limit: u64,
    abusive_window_ms: u64,
    benchmark: bool,
}

/// One row per (variant, run).
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct CostRow {
    pub cell: String,
    pub trial: u64,
    pub variant: String,
    /// `get`, `incr` or the strategy's name.
    pub strategy: String,
    pub invocation: String,
    /// `uniform` over `keys` clients, or `single-key` (the abusive client).
    pub traffic: String,
    pub conns: usize,
    pub keys: u64,
    pub limit: u64,
    pub window_ms: u64,
    /// Entries per sliding log before the run (0: none).
    pub prefill_entries: u64,
    pub seed: u64,
    pub redis_cpu: Option<usize>,
    pub load_cpu: Option<usize>,
    pub wall_s: f64,
    pub decisions: u64,
    pub admitted: u64,
    pub errors: u64,
    pub decisions_per_s: f64,
    pub redis_cpu_us: f64,
    pub redis_cpu_us_per_decision: f64,
    pub redis_busy_fraction: f64,
    pub redis_main_thread_busy_fraction: f64,
    /// The top-level command Redis ran per decision (evalsha, fcall, exec, get ...).
    pub cmd: String,
    pub cmd_calls: u64,
    /// INFO commandstats usec_per_call of `cmd` (the script's own time for Lua).
    pub cmd_usec_per_call: f64,
    /// All top-level commands of a decision (MULTI+EXEC for the transaction), usec / decision.
    pub cmd_usec_per_decision: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
    /// Redis less than 90% busy: the load generator may be the bottleneck.
    pub load_bound: bool,
    pub first_error: String,
    /// redis-benchmark in the same run (GET only).
    pub bench_rps: Option<f64>,
    pub bench_redis_cpu_us_per_request: Option<f64>,
    pub bench_busy_fraction: Option<f64>,
    pub harness_over_bench: Option<f64>,
}

struct Variant {
    cell: String,
    strategy: String,
    invocation: String,
    traffic: &'static str,
    keys: u64,
    single_key: Option<u64>,
    limit: u64,
    window_ms: u64,
    prefill_entries: u64,
    tpl: Arc<Template>,
    /// Top-level commands per decision, for commandstats.
    cmds: Vec<String>,
}

impl Variant {
    /// A plain command (the GET and INCR scale): every reply counts as one
    /// decision; `args` has `{client}` where the key's client id goes.
    fn command(name: &str, args: &[&str], keys: u64) -> Self {
        Variant {
            cell: name.into(),
            strategy: name.into(),
            invocation: "command".into(),
            traffic: "uniform",
            keys,
            single_key: None,
            limit: 0,
            window_ms: 0,
            prefill_entries: 0,
            tpl: Arc::new(Template::command(args, AdmitRule::Always)),
            cmds: vec![name.into()],
        }
    }
}

/// The abusive client's index: outside every normal key range.
const ABUSIVE_CLIENT: u64 = 99_999_999;

fn strategy_opts(s: &dyn Strategy, invocation: &str, extra: &[(&str, &str)]) -> Options {
    let mut o = Options::default();
    if matches!(s.info().kind, Kind::Lua | Kind::External) {
        o = o.with("invocation", invocation);
    }
    for (k, v) in extra {
        o = o.with(k, v);
    }
    o
}

fn rule_for(s: &dyn Strategy, limit: u64) -> AdmitRule {
    match s.info().kind {
        Kind::Transaction => AdmitRule::FirstIntAtMost(limit as i64),
        _ => AdmitRule::FirstIntIsOne,
    }
}

/// Build a strategy with `invocation`, load its scripts, capture its request.
#[allow(clippy::too_many_arguments)]
async fn strategy_variant(
    ctx: &RunContext,
    admin: &mut Connection,
    name: &str,
    invocation: &str,
    extra: &[(&str, &str)],
    cell: String,
    traffic: &'static str,
    keys: u64,
    single_key: Option<u64>,
    limit: Limit,
    prefill_entries: u64,
) -> Result<Variant> {
    let probe = ctx.build_strategy(name, &Options::default())?;
    let opts = strategy_opts(probe.as_ref(), invocation, extra);
    let s = ctx.build_strategy(name, &opts)?;
    s.prepare(admin).await?;
    let tpl = hot::capture(
        s.as_ref(),
        limit,
        crate::clock::Clock::system_now_us(),
        rule_for(s.as_ref(), limit.limit),
    )
    .await?;
    let (invocation, cmds) = match s.info().kind {
        Kind::Transaction => ("multi".to_string(), vec!["multi".into(), "exec".into()]),
        Kind::Lua | Kind::External => (invocation.to_string(), vec![invocation.to_string()]),
        Kind::ClientSide => ("commands".to_string(), vec![]),
    };
    Ok(Variant {
        cell,
        strategy: name.to_string(),
        invocation,
        traffic,
        keys,
        single_key,
        limit: limit.limit,
        window_ms: limit.window_ms,
        prefill_entries,
        tpl: Arc::new(tpl),
        cmds,
    })
}

async fn run(ctx: &RunContext) -> Result<()> {
    let p: Params = ctx.params()?;
    let fleet = ctx
        .standalone(ServerConfig::default().pinned(p.redis_cpu))
        .await?;
    let addr = fleet.primary_addr();
    let mut admin = Connection::connect(addr).await?;
    ctx.note_fleet("server", &fleet).await?;
    let redis_allowed = fleet.primary().pid().and_then(crate::pin::allowed_cpus);

    let normal = Limit::per_window(p.limit, p.window_ms);
    let mut variants: Vec<Variant> = Vec::new();
    // redis-benchmark's key names (`key:` + 12 digits), so both read the same keys.
    variants.push(Variant::command(
        "get",
        &["GET", "key:0000{client}"],
        p.keys,
    ));
    variants.push(Variant::command("incr", &["INCR", "cnt:{client}"], p.keys));
    variants.push(
        strategy_variant(
            ctx,
            &mut admin,
            "fixed-window-multi",
            "evalsha",
            &[],
            "fixed-window-multi".into(),
            "uniform",
            p.keys,
            None,
            normal,
            0,
        )
        .await?,
    );
    for s in ctx.strategies(&p.lua_strategies) {
        if s == "fixed-window-multi" {
            continue;
        }
        let extra: &[(&str, &str)] = if s == "sliding-window-log" {
            &[("member_len", "16")]
        } else {
            &[]
        };
        variants.push(
            strategy_variant(
                ctx,
                &mut admin,
                &s,
                "evalsha",
                extra,
                format!("{s}|evalsha"),
                "uniform",
                p.keys,
                None,
                normal,
                0,
            )
            .await?,
        );
    }
    for inv in &p.token_bucket_invocations {
        variants.push(
            strategy_variant(
                ctx,
                &mut admin,
                "token-bucket",
                inv,
                &[],
                format!("token-bucket|{inv}"),
                "uniform",
                p.keys,
                None,
                normal,
                0,
            )
            .await?,
        );
    }
    for &l in &p.swl_limits {
        variants.push(
            strategy_variant(
                ctx,
                &mut admin,
                "sliding-window-log",
                "evalsha",
                &[("member_len", "16")],
                format!("sliding-window-log|L{l}|full"),
                "uniform",
                p.swl_clients,
                None,
                Limit::per_window(l, p.window_ms),
                l,
            )
            .await?,
        );
    }
    for s in &p.abusive_strategies {
        let extra: &[(&str, &str)] = if s == "sliding-window-log" {
            &[("member_len", "16")]
        } else {
            &[]
        };
        variants.push(
            strategy_variant(
                ctx,
                &mut admin,
                s,
                "evalsha",
                extra,
                format!("{s}|abusive"),
                "single-key",
                1,
                Some(ABUSIVE_CLIENT),
                Limit::per_window(p.abusive_limit, p.abusive_window_ms),
                0,
            )
            .await?,
        );
    }

    // Prefill: GET's keys, and full sliding logs (window far from passing, so
    // every call trims nothing and refuses). Not measured.
    let mut pipe = RawPipe::connect(addr).await?;
    {
        let mut buf = Vec::new();
        for i in 0..p.keys {
            let k = format!("key:{i:012}");
            crate::resp::encode(&mut buf, &crate::args!["SET", k.as_str(), "xxx"]);
        }
        let out = pipe.send(&buf, p.keys as usize).await?;
        if out.errors > 0 {
            return Err(Error::Reply(out.first_error.unwrap_or_default()));
        }
    }
    let prefill_started = Instant::now();
    let mut next_id = hot::ID_BASE * 9;
    for v in variants.iter().filter(|v| v.prefill_entries > 0) {
        // The template's key for client i is exactly what the strategy writes;
        // render it to be sure the prefilled key is the one the loop hits.
        let keys: Vec<String> = (0..v.keys).map(|i| v.tpl.key(i)).collect::<Result<_>>()?;
        let now = crate::clock::Clock::system_now_us();
        next_id = hot::fill_logs(
            &mut pipe,
            &keys,
            &LogSpec {
                entries: v.prefill_entries,
                member_len: 16,
                first_id: next_id,
                first_score_us: now - v.prefill_entries as i64,
                score_step_us: 1,
                ttl_ms: Some(v.window_ms),
                chunk: 100,
            },
        )
        .await?;
    }
    drop(pipe);
    ctx.note(
        "prefill",
        serde_json::json!({
            "get_keys": p.keys, "get_value": "xxx",
            "sliding_log": "direct ZADD of the strategy's member format (16-digit ids), scores within the window, TTL = window; every call then refuses",
            "seconds": prefill_started.elapsed().as_secs_f64(),
        }),
    )?;

    let _pin = PinGuard::pin(p.load_cpu)?;
    let load_cpu = _pin.cpu;
    ctx.note(
        "pinning",
        serde_json::json!({
            "redis_cpu": p.redis_cpu,
            "redis_allowed_cpus": redis_allowed,
            "harness_cpu": load_cpu,
            "harness": "whole harness process pinned (pin_process_to) during the runs, unpinned after; the load runs on a current-thread runtime in one thread",
            "redis_benchmark": "taskset -c <harness_cpu>",
        }),
    )?;

    let mut log = ctx.trial_log(&[])?;
    let total = p.runs * variants.len() as u64;
    let mut progress = ctx.progress(total);
    for trial in 0..p.runs {
        for v in &variants {
            if log.is_done(&v.cell, trial) {
                progress.skip(1);
                continue;
            }
            let row = one_run(ctx, &p, &mut admin, addr, v, trial, load_cpu).await?;
            let msg = format!(
                "{} run {}: {:.0}/s, {:.1} us cpu, busy {:.2}",
                v.cell,
                trial + 1,
                row.decisions_per_s,
                row.redis_cpu_us_per_decision,
                row.redis_busy_fraction
            );
            log.commit(&v.cell, trial, &[row])?;
            progress.inc(&msg);
        }
    }
    progress.finish();
    Ok(())
}

async fn one_run(
    ctx: &RunContext,
    p: &Params,
    admin: &mut Connection,
    addr: std::net::SocketAddr,
    v: &Variant,
    trial: u64,
    load_cpu: Option<usize>,
) -> Result<CostRow> {
    let spec = HotSpec {
        addr,
        conns: p.conns,
        keys: v.keys,
        single_key: v.single_key,
        seed: ctx.seed ^ trial.wrapping_mul(0x9E37_79B9),
        pin_cpu: load_cpu,
    };
    let w = hot::measure_window(
        admin,
        v.tpl.clone(),
        spec,
        Duration::from_secs_f64(p.warmup_s),
        Duration::from_secs_f64(p.run_s),
    )
    .await?;
    let decisions = w.counts.decisions;
    let (cmd_calls, cmd_usec) = v
        .cmds
        .first()
        .and_then(|c| w.cmdstats.get(c))
        .copied()
        .unwrap_or((0, 0.0));
    let all_usec: f64 = v
        .cmds
        .iter()
        .filter_map(|c| w.cmdstats.get(c))
        .map(|x| x.1)
        .sum();
    let mut row = CostRow {
        cell: v.cell.clone(),
        trial,
        variant: v.cell.clone(),
        strategy: v.strategy.clone(),
        invocation: v.invocation.clone(),
        traffic: v.traffic.into(),
        conns: p.conns,
        keys: v.keys,
        limit: v.limit,
        window_ms: v.window_ms,
        prefill_entries: v.prefill_entries,
        seed: ctx.seed,
        redis_cpu: Some(p.redis_cpu),
        load_cpu,
        wall_s: w.wall_s,
        decisions,
        admitted: w.counts.admitted,
        errors: w.counts.errors,
        decisions_per_s: decisions as f64 / w.wall_s,
        redis_cpu_us: w.cpu.cpu_us,
        redis_cpu_us_per_decision: w.cpu.cpu_us_per_decision,
        redis_busy_fraction: w.cpu.busy_fraction,
        redis_main_thread_busy_fraction: w.cpu.main_thread_busy_fraction,
        cmd: v.cmds.first().cloned().unwrap_or_default(),
        cmd_calls,
        cmd_usec_per_call: if cmd_calls > 0 {
            cmd_usec / cmd_calls as f64
        } else {
            f64::NAN
        },
        cmd_usec_per_decision: if decisions > 0 {
            all_usec / decisions as f64
        } else {
            f64::NAN
        },
        p50_us: hot::quantile_us(&w.latency, 0.5),
        p99_us: hot::quantile_us(&w.latency, 0.99),
        p999_us: hot::quantile_us(&w.latency, 0.999),
        max_us: if w.latency.is_empty() {
            f64::NAN
        } else {
            w.latency.max() as f64 / 1000.0
        },
        // NaN (no CPU data) counts as load-bound too.
        load_bound: w.cpu.busy_fraction.is_nan() || w.cpu.busy_fraction < 0.9,
        first_error: w.first_error.unwrap_or_default(),
        ..Default::default()
    };
    if v.cell == "get" && p.benchmark {
        match redis_benchmark(
            admin,
            addr,
            p.conns,
            p.keys,
            (row.decisions_per_s * p.run_s).max(10_000.0) as u64,
            load_cpu,
        )
        .await
        {
            Ok((rps, cpu)) => {
                row.bench_rps = Some(rps);
                row.bench_redis_cpu_us_per_request = Some(cpu.cpu_us_per_decision);
                row.bench_busy_fraction = Some(cpu.busy_fraction);
                row.harness_over_bench = Some(row.decisions_per_s / rps);
            }
            Err(e) => {
                row.first_error = format!("redis-benchmark: {e}");
            }
        }
    }
    Ok(row)
}

/// `redis-benchmark -t get` with the same connections and key space, on the
/// load CPU; returns its rate and what it cost Redis.
async fn redis_benchmark(
    admin: &mut Connection,
    addr: std::net::SocketAddr,
    conns: usize,
    keys: u64,
    requests: u64,
    cpu: Option<usize>,
) -> Result<(f64, hot::CpuCost)> {
    let port = addr.port().to_string();
    let (c, r, n) = (conns.to_string(), keys.to_string(), requests.to_string());
    let mut args: Vec<&str> = vec![
        "redis-benchmark",
        "-h",
        "127.0.0.1",
        "-p",
        &port,
        "-c",
        &c,
        "-r",
        &r,
        "-t",
        "get",
        "-n",
        &n,
        "--csv",
    ];
    let cpu_s = cpu.map(|c| c.to_string());
    let mut cmd = match &cpu_s {
        Some(c) if which("taskset") => {
            let mut a = vec!["-c", c.as_str()];
            a.append(&mut args);
            let mut cmd = tokio::process::Command::new("taskset");
            cmd.args(a);
            cmd
        }
        _ => {
            let mut cmd = tokio::process::Command::new(args[0]);
            cmd.args(&args[1..]);
            cmd
        }
    };
    let (cpu0, _) = hot::redis_snapshot(admin).await?;
    let t0 = Instant::now();
    let out = cmd
        .output()
        .await
        .map_err(|e| Error::io("running redis-benchmark", e))?;
    let wall = t0.elapsed().as_secs_f64();
    let (cpu1, _) = hot::redis_snapshot(admin).await?;
    let text = String::from_utf8_lossy(&out.stdout);
    let rps = parse_benchmark_csv(&text, "GET").ok_or_else(|| {
        Error::Other(format!(
            "cannot read the GET rate from redis-benchmark's output: {} {}",
            text.trim(),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    })?;
    Ok((rps, hot::cpu_cost(&cpu0, &cpu1, requests, wall)))
}

fn which(bin: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(bin).is_file()))
        .unwrap_or(false)
}

/// The rps of `test` in redis-benchmark's `--csv` output.
pub fn parse_benchmark_csv(text: &str, test: &str) -> Option<f64> {
    text.lines().find_map(|l| {
        let mut f = l.split(',').map(|x| x.trim().trim_matches('"'));
        (f.next()? == test).then(|| f.next()?.parse().ok())?
    })
}
