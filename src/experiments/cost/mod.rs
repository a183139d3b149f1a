//! `cost`: what one decision costs Redis (claims B2.1-B2.6, B6.1).
//!
//! One Redis pinned to CPU 0, nothing else on it; the harness pins itself to
//! CPU 1 for the whole measurement (positions 0 and 1, `redis_cpu` and
//! `load_cpu`, of the CPUs the harness was allowed when it started). Each variant (GET, INCR, the MULTI fixed
//! window, every Lua strategy by EVALSHA, the token bucket also by EVAL and
//! FCALL, the sliding log prefilled full at two limits, an abusive client on
//! one key) is run `runs` times. A run: start `conns` connections replaying
//! the strategy's own request bytes in a closed loop (`load::replay`), warm
//! up, then CONFIG RESETSTAT and a measured window bracketed by INFO
//! cpu/commandstats snapshots. Decisions are counted on the client side.
//!
//! For GET the same run also runs `redis-benchmark -c <conns> -r <keys> -t
//! get` on the same CPU and records its rate beside ours (is the harness the
//! bottleneck?). A row whose Redis was less than 90% busy is flagged
//! `load_bound`.
//!
//! Runs are interleaved (run 1 of every variant, then run 2, ...) so that
//! drift hits all variants alike. On the sweep engine that is a cell,
//! [`Rounds`], whose trial `t` is run `t` of every variant and commits one
//! row under each variant's id (the engine's multi-key trials). Its setup
//! (the server, the captured requests, the prefill, the pinning) is made
//! only if a round is left to run. The variants above are split into
//! `groups` such cells (`rounds-1` .. `rounds-G`, `groups.rs`), each with
//! its own GET, so that shards can share them with every ratio inside one
//! machine; B2.5's sliding logs under normal traffic and at a steady state
//! are one more (`swl-fill`, `logs.rs`). Each cell is on its own server, so
//! a resumed run folder made before `swl-fill` existed runs only that cell.

mod benchmark;
mod groups;
mod logs;
mod window;
// The analysis half (analyze/) is compiled into limitbench-analysis
// (crates/analysis/src/experiments/mod.rs); it is this experiment's all the same.
pub use limitbench_analysis::experiments::cost::{analyze, rows};
#[cfg(test)]
mod logs_tests;
#[cfg(test)]
mod tests;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Deserialize;

pub use benchmark::parse_benchmark_csv;
pub use rows::CostRow;

use super::{RunContext, Spec};
use limitbench_base::error::{Error, Result};
use limitbench_core::fleet::{Fleet, ServerConfig};
use limitbench_core::load::replay::{self, AdmitRule, HotLoad, HotSpec, LogSpec, RawPipe, Template};
use limitbench_core::pin::PinGuard;
use limitbench_core::resp::Connection;
use crate::run::latency;
use crate::run::seeds;
use crate::run::sweep::{self, NoSide, Sweep, TrialRows};
use limitbench_core::strategy::{Kind, Limit, Options, Strategy};

/// Its registration (the registry adds its `run` and its analysis half's `analyze`).
// CPU per decision, pinned: alone.
pub const SPEC: Spec = Spec::new("cost", "B").others_at_most(0.1);

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    conns: usize,
    keys: u64,
    runs: u64,
    run_s: f64,
    warmup_s: f64,
    /// Where Redis and the load run: positions in the CPUs the harness was
    /// allowed when it started (`RunContext::resolve_cpus`), replaced by
    /// the CPUs they name when the run starts.
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
    /// B2.5's sliding logs at other fill levels than full, in the cell
    /// `swl-fill` (absent: none).
    swl_fill_levels: Option<Vec<logs::Fill>>,
    /// Each pilot run that sizes the steady logs' window, s (absent: 1).
    swl_pilot_s: Option<f64>,
    abusive_limit: u64,
    abusive_window_ms: u64,
    benchmark: bool,
    /// Cells the variants are split into, each with its own GET
    /// (`groups.rs`; absent: 1, the one `rounds` cell).
    groups: Option<usize>,
    /// The plain commands measured as the scale, of `get` and `incr`
    /// (absent: both).
    scale_commands: Option<Vec<ScaleCommand>>,
    /// Measure the MULTI fixed window even when it is not in
    /// `lua_strategies` (absent: yes, as the B2 tables compare with it).
    fixed_window_multi: Option<bool>,
}

/// A plain command measured as the scale of every variant's cost.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
enum ScaleCommand {
    Get,
    Incr,
}

/// The abusive client's index: outside every normal key range.
const ABUSIVE_CLIENT: u64 = 99_999_999;

/// A variant as planned from the parameters: its id, its traffic, and where
/// its request comes from (captured in the setup).
#[derive(Clone)]
struct Plan {
    cell: String,
    /// The cell (schedule cell) the variant runs in: `rounds`, `rounds-k`
    /// or `swl-fill`; its ratios are to this cell's GET.
    group: String,
    traffic: &'static str,
    keys: u64,
    single_key: Option<u64>,
    limit: u64,
    window_ms: u64,
    prefill_entries: u64,
    /// What is done to the variant's logs before each run.
    before_run: logs::BeforeRun,
    request: RequestSource,
}

#[derive(Clone)]
enum RequestSource {
    /// A plain command (the GET and INCR scale): every reply counts as one
    /// decision; `args` has `{client}` where the key's client id goes.
    Command {
        name: &'static str,
        args: [&'static str; 2],
    },
    /// The strategy's own request bytes, by `invocation` for script strategies.
    Strategy { name: String, invocation: String },
}

/// What a variant's connections send.
enum Load {
    /// The captured bytes of one decision, replayed.
    Replay(Arc<Template>),
    /// The strategy's own `decide` in the same closed loop: a design of
    /// several round trips a decision (a read, then a write that depends on
    /// it) cannot be replayed from bytes, and is measured the way its
    /// callers run it (`HotLoad::start_decide`), not dropped.
    Decide {
        strategy: Arc<dyn Strategy>,
        limit: Limit,
    },
}

/// A variant ready to replay.
struct Variant {
    plan: Plan,
    /// `get`, `incr` or the strategy's name.
    strategy: String,
    /// How Redis runs it: `command`, `multi`, `evalsha`, `eval`, `fcall`,
    /// `commands`, or `decide` (several round trips a decision: not
    /// replayable, so the load calls the strategy's own `decide`).
    invocation: String,
    load: Load,
    /// Top-level commands per decision, for commandstats.
    cmds: Vec<String>,
}

/// Every variant, in the order each round runs them: the scale commands,
/// the MULTI fixed window, each strategy of `lua_strategies` (or
/// `--strategy`) by EVALSHA, the token bucket's other invocations, the
/// prefilled sliding logs, the abusive clients.
fn plan_variants(ctx: &RunContext, p: &Params) -> (Vec<Plan>, Vec<Plan>) {
    let normal = |cell: String, name: &str, invocation: &str| Plan {
        cell,
        group: String::new(),
        traffic: "uniform",
        keys: p.keys,
        single_key: None,
        limit: p.limit,
        window_ms: p.window_ms,
        prefill_entries: 0,
        before_run: logs::BeforeRun::Nothing,
        request: RequestSource::Strategy {
            name: name.into(),
            invocation: invocation.into(),
        },
    };
    let command = |name: &'static str, args: [&'static str; 2]| Plan {
        cell: name.into(),
        group: String::new(),
        traffic: "uniform",
        keys: p.keys,
        single_key: None,
        limit: 0,
        window_ms: 0,
        prefill_entries: 0,
        before_run: logs::BeforeRun::Nothing,
        request: RequestSource::Command { name, args },
    };
    let mut out = Vec::new();
    let scale = p.scale_commands.clone();
    for c in scale.unwrap_or_else(|| vec![ScaleCommand::Get, ScaleCommand::Incr]) {
        out.push(match c {
            // redis-benchmark's key names (`key:` + 12 digits), so both read the same keys.
            ScaleCommand::Get => command("get", ["GET", "key:0000{client}"]),
            ScaleCommand::Incr => command("incr", ["INCR", "cnt:{client}"]),
        });
    }
    let strategies = ctx.strategies(&p.lua_strategies);
    let multi = "fixed-window-multi";
    if p.fixed_window_multi.unwrap_or(true) || strategies.iter().any(|s| s == multi) {
        out.push(normal(multi.into(), multi, "evalsha"));
    }
    for s in strategies {
        if s != multi {
            out.push(normal(format!("{s}|evalsha"), &s, "evalsha"));
        }
    }
    for inv in &p.token_bucket_invocations {
        out.push(normal(format!("token-bucket|{inv}"), "token-bucket", inv));
    }
    for &l in &p.swl_limits {
        out.push(Plan {
            keys: p.swl_clients,
            limit: l,
            prefill_entries: l,
            ..normal(
                format!("sliding-window-log|L{l}|full"),
                "sliding-window-log",
                "evalsha",
            )
        });
    }
    for s in &p.abusive_strategies {
        out.push(Plan {
            traffic: "single-key",
            keys: 1,
            single_key: Some(ABUSIVE_CLIENT),
            limit: p.abusive_limit,
            window_ms: p.abusive_window_ms,
            ..normal(format!("{s}|abusive"), s, "evalsha")
        });
    }
    let swl = logs::plans(p, |cell| normal(cell, "sliding-window-log", "evalsha"));
    (out, swl)
}

fn strategy_opts(s: &dyn Strategy, name: &str, invocation: &str) -> Options {
    let mut o = Options::default();
    if matches!(s.info().kind, Kind::Lua | Kind::External) {
        o = o.with("invocation", invocation);
    }
    // 16-digit members, as the prefill writes them.
    if name == "sliding-window-log" {
        o = o.with("member_len", "16");
    }
    o
}

impl Plan {
    /// Build the request: encode the command, or build the strategy, load
    /// its scripts and capture its request bytes.
    async fn build(
        self,
        ctx: &RunContext,
        admin: &mut Connection,
        addr: SocketAddr,
    ) -> Result<Variant> {
        let (name, invocation) = match &self.request {
            RequestSource::Command { name, args } => {
                return Ok(Variant {
                    strategy: name.to_string(),
                    invocation: "command".into(),
                    load: Load::Replay(Arc::new(Template::command(args, AdmitRule::Always))),
                    cmds: vec![name.to_string()],
                    plan: self,
                });
            }
            RequestSource::Strategy { name, invocation } => (name.clone(), invocation.clone()),
        };
        let probe = ctx.build_strategy(&name, &Options::default())?;
        let s = ctx.build_strategy(&name, &strategy_opts(probe.as_ref(), &name, &invocation))?;
        s.prepare(admin).await?;
        let limit = Limit::per_window(self.limit, self.window_ms);
        let now = limitbench_core::clock::Clock::system_now_us();
        // One real decision through a recording proxy: the template's
        // decisions are read by the strategy's own reply rules.
        let load = match replay::capture(s.as_ref(), limit, now, addr).await {
            Ok(tpl) => Load::Replay(Arc::new(tpl)),
            Err(Error::NotReplayable { round_trips, .. }) if self.prefill_entries == 0 => {
                ctx.note(
                    &format!("decide-loop-{}", self.cell),
                    serde_json::json!({
                        "strategy": name,
                        "round_trips_per_decision": round_trips,
                        "load": "the strategy's own decide in the closed loop (not replayable from bytes); client ids as the replay's",
                    }),
                )?;
                Load::Decide {
                    strategy: s.clone(),
                    limit,
                }
            }
            Err(e) => return Err(e),
        };
        let (invocation, cmds) = match (&load, s.info().kind) {
            (Load::Decide { .. }, _) => ("decide".to_string(), vec![]),
            (_, Kind::Transaction) => ("multi".to_string(), vec!["multi".into(), "exec".into()]),
            (_, Kind::Lua | Kind::External) => (invocation.clone(), vec![invocation]),
            (_, Kind::ClientSide) => ("commands".to_string(), vec![]),
        };
        Ok(Variant {
            plan: self,
            strategy: name,
            invocation,
            load,
            cmds,
        })
    }
}

/// Prefill: GET's keys, and full sliding logs (window far from passing, so
/// every call trims nothing and refuses). Not measured.
async fn prefill(
    ctx: &RunContext,
    p: &Params,
    addr: SocketAddr,
    variants: &[Variant],
) -> Result<()> {
    let mut pipe = RawPipe::connect(addr).await?;
    let mut buf = Vec::new();
    for i in 0..p.keys {
        let k = format!("key:{i:012}");
        limitbench_core::resp::encode(&mut buf, &limitbench_core::args!["SET", k.as_str(), "xxx"]);
    }
    let out = pipe.send(&buf, p.keys as usize).await?;
    if out.errors > 0 {
        return Err(Error::Reply(out.first_error.unwrap_or_default()));
    }
    let started = Instant::now();
    let mut next_id = replay::ID_BASE * 9;
    let full = |v: &&Variant| v.plan.prefill_entries > 0 && v.plan.before_run == logs::BeforeRun::Nothing;
    for v in variants.iter().filter(full) {
        // The template's key for client i is exactly what the strategy writes;
        // render it to be sure the prefilled key is the one the loop hits.
        let Load::Replay(tpl) = &v.load else {
            return Err(Error::Other(format!(
                "cost: the prefilled variant `{}` needs a replayable strategy",
                v.plan.cell
            )));
        };
        let keys: Vec<String> = (0..v.plan.keys)
            .map(|i| tpl.key(i))
            .collect::<Result<_>>()?;
        let now = limitbench_core::clock::Clock::system_now_us();
        let entries = v.plan.prefill_entries;
        let spec = LogSpec {
            entries,
            member_len: 16,
            first_id: next_id,
            first_score_us: now - entries as i64,
            score_step_us: 1,
            ttl_ms: Some(v.plan.window_ms),
            chunk: 100,
        };
        next_id = replay::fill_logs(&mut pipe, &keys, &spec).await?;
    }
    ctx.note(
        "prefill",
        serde_json::json!({
            "get_keys": p.keys, "get_value": "xxx",
            "sliding_log": "direct ZADD of the strategy's member format (16-digit ids), scores within the window, TTL = window; every call then refuses",
            "seconds": started.elapsed().as_secs_f64(),
        }),
    )
}

/// A cell of interleaved variants, each measured once per trial (round).
struct Rounds {
    id: String,
    variants: Vec<Plan>,
}

/// What the rounds run against: the pinned server, the ready variants, and
/// the harness pinned to the load CPU until the rounds are done.
struct Testbed {
    _fleet: Fleet,
    addr: SocketAddr,
    admin: Connection,
    variants: Vec<Variant>,
    pin: PinGuard,
}

struct Cost {
    p: Params,
}

impl Sweep for Cost {
    type Cell = Rounds;
    type Setup = Testbed;
    type Row = CostRow;
    type Side = NoSide;
    const TIMED: bool = true;

    fn cell_id(&self, cell: &Rounds) -> String {
        cell.id.clone()
    }

    fn trials(&self, _: &Rounds) -> u64 {
        self.p.runs
    }

    fn keys(&self, cell: &Rounds) -> Vec<String> {
        cell.variants.iter().map(|v| v.cell.clone()).collect()
    }

    async fn setup(&mut self, ctx: &RunContext, cell: &Rounds) -> Result<Testbed> {
        let p = &self.p;
        let fleet = ctx
            .standalone(ServerConfig::default().pinned(p.redis_cpu))
            .await?;
        let addr = fleet.primary_addr();
        let mut admin = Connection::connect(addr).await?;
        ctx.note_fleet("server", &fleet).await?;
        let redis_allowed = fleet.primary().pid().and_then(limitbench_core::pin::allowed_cpus);
        let mut variants = Vec::new();
        for plan in &cell.variants {
            variants.push(plan.clone().build(ctx, &mut admin, addr).await?);
        }
        prefill(ctx, p, addr, &variants).await?;
        let pin = PinGuard::pin(p.load_cpu)?;
        logs::size_windows(ctx, p, addr, &mut admin, &mut variants, pin.cpu).await?;
        ctx.note(
            "pinning",
            serde_json::json!({
                "redis_cpu": p.redis_cpu,
                "redis_allowed_cpus": redis_allowed,
                "harness_cpu": pin.cpu,
                "harness": "whole harness process pinned (pin::PinGuard) during the runs, its previous CPUs restored after; the load runs on a current-thread runtime in one thread",
                "redis_benchmark": "taskset -c <harness_cpu>",
            }),
        )?;
        Ok(Testbed {
            _fleet: fleet,
            addr,
            admin,
            variants,
            pin,
        })
    }

    async fn trial(
        &mut self,
        ctx: &RunContext,
        _: &Rounds,
        testbed: &mut Testbed,
        trial: u64,
    ) -> Result<TrialRows<CostRow>> {
        let mut rows = Vec::new();
        let mut lat = Vec::new();
        for v in &testbed.variants {
            let load_cpu = testbed.pin.cpu;
            logs::before_run(testbed.addr, &mut testbed.admin, v).await?;
            let (row, h) = one_run(
                ctx,
                &self.p,
                &mut testbed.admin,
                testbed.addr,
                v,
                trial,
                load_cpu,
            )
            .await?;
            lat.push(latency::row(&row.cell, trial, &row.variant, &h)?);
            rows.push(row);
        }
        let mut out = TrialRows::with_side(rows, Vec::new());
        out.latency = lat;
        Ok(out)
    }
}

pub async fn run(ctx: &RunContext) -> Result<()> {
    let mut p: Params = ctx.params()?;
    let cpus = ctx.resolve_cpus(&[("redis_cpu", p.redis_cpu), ("load_cpu", p.load_cpu)])?;
    (p.redis_cpu, p.load_cpu) = (cpus[0], cpus[1]);
    groups::refuse_ungrouped(&ctx.run.path)?;
    let (main, swl) = plan_variants(ctx, &p);
    let mut cells = groups::split(main, p.groups.unwrap_or(1))?;
    // B2.5's fill levels in a cell of their own: a resumed older run folder
    // runs only them (a trial of a cell is one run of each of its variants).
    if !swl.is_empty() {
        let variants = swl
            .into_iter()
            .map(|v| Plan {
                group: logs::CELL.into(),
                ..v
            })
            .collect();
        cells.push(Rounds {
            id: logs::CELL.into(),
            variants,
        });
    }
    sweep::run(ctx, &mut Cost { p }, &cells).await
}

/// One measured window of variant `v` (and redis-benchmark beside GET).
async fn one_run(
    ctx: &RunContext,
    p: &Params,
    admin: &mut Connection,
    addr: SocketAddr,
    v: &Variant,
    trial: u64,
    load_cpu: Option<usize>,
) -> Result<(CostRow, hdrhistogram::Histogram<u64>)> {
    let spec = HotSpec {
        addr,
        conns: p.conns,
        keys: v.plan.keys,
        single_key: v.plan.single_key,
        seed: seeds::trial_seed(ctx.seed, &v.plan.cell, trial),
        pin_cpu: load_cpu,
    };
    let (warmup, window) = (
        Duration::from_secs_f64(p.warmup_s),
        Duration::from_secs_f64(p.run_s),
    );
    let w = match &v.load {
        Load::Replay(tpl) => {
            replay::measure_window(admin, tpl.clone(), spec, warmup, window).await?
        }
        Load::Decide { strategy, limit } => {
            let load = HotLoad::start_decide(strategy.clone(), *limit, spec).await?;
            replay::measure_started(admin, load, warmup, window).await?
        }
    };
    // The hot loop records nanoseconds; the latency table is in µs.
    let mut latency_us = limitbench_base::hdr::new_histogram();
    for it in w.latency.iter_recorded() {
        latency_us.saturating_record_n((it.value_iterated_to() / 1000).max(1), it.count_at_value());
    }
    let mut row = window::cost_row(p, v, trial, ctx.seed, load_cpu, w);
    // Beside every group's own GET.
    if groups::is_get(&v.plan) && p.benchmark {
        let requests = (row.decisions_per_s * p.run_s).max(10_000.0) as u64;
        match benchmark::redis_benchmark(admin, addr, p.conns, p.keys, requests, load_cpu).await {
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
    Ok((row, latency_us))
}
