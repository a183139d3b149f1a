//! `failover` (beyond the studies): how many requests get through above the
//! limit when the primary dies and its replica is promoted mid-window?
//!
//! Replication is asynchronous: a write the client saw acknowledged may not
//! have reached the replica when the primary dies, and the promoted replica
//! then has room the primary had already spent. Per trial: a fresh primary
//! and replica; the replica follows the primary through a `DelayProxy` adding
//! `repl_delay_ms` each way on the replication link (0: direct), because on
//! loopback the replication stream is otherwise almost never behind, and a
//! real link's latency is unstated and decides the outcome. `workers` clients
//! hammer one client's limiter (`limit` per hour: no refill during a trial)
//! on the primary; when the primary has made `kill_at` admissions the
//! primary is SIGKILLed and the replica promoted at once (REPLICAOF NO ONE);
//! the clients reconnect to it and send `post_offered` more decisions.
//! With `wait=true` each decision is followed by `WAIT 1 <wait_timeout_ms>`
//! and an admission counts only if one replica acknowledged it (a client
//! that cannot confirm refuses). Over-admission = admissions the clients saw
//! in all minus the limit.
//!
//! A cell is (strategy, wait, replication delay); its setup is the strategy,
//! and every trial starts its own pair (a promotion cannot be undone).
//! `strategies = ["*"]` is every strategy, narrowed to `--strategy` (the
//! scorecard's probe); what the promoted replica holds is read for the
//! fixed windows and token buckets only (NaN for other designs). With
//! `hold_at_kill` (the probe) the workers stop sending to the primary once
//! it has made `kill_at` admissions and wait for the promotion, so the
//! failover lands at the same point of the window whatever the decision
//! rate, and the kill happens with no traffic on the primary.

// The analysis half (analyze/) is compiled into limitbench-analysis
// (crates/analysis/src/experiments/mod.rs); it is this experiment's all the same.
pub use limitbench_analysis::experiments::failover::{analyze, rows};
#[cfg(test)]
mod tests;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

pub use rows::Row;

use super::{RunContext, Spec};
use limitbench_core::clock::Clock;
use limitbench_core::conn::Conn;
use limitbench_base::error::{Error, Result};
use limitbench_core::fleet::{RedisBinary, Server, ServerConfig};
use limitbench_core::load::next_request_id;
use limitbench_core::proxy::DelayProxy;
use crate::run::sweep::{self, NoSide, Sweep, TrialRows};
use limitbench_core::strategy::{Limit, Options, Request, Strategy, client_key, window_index};

/// Its registration (the registry adds its `run` and its analysis half's `analyze`).
// Run alone: at quick size its over-admission at a 5 ms replication
// delay moved from a mean of 98.7 (sequential) to 23.0 (in 3 lanes beside
// fail-open), 3 trials each (status-power.md); when the kill lands
// relative to the replication stream is timing the lanes disturb.
pub const SPEC: Spec = Spec::new("failover", "beyond").others_at_most(0.1);

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct Params {
    strategies: Vec<String>,
    waits: Vec<bool>,
    repl_delays_ms: Vec<f64>,
    trials: u64,
    limit: u64,
    kill_at: u64,
    workers: usize,
    post_offered: u64,
    wait_timeout_ms: u64,
    /// PINGs through the replication link's proxy for `repl_rtt_ms` (absent: 20).
    repl_rtt_samples: Option<u32>,
    /// Cut the delayed replication link at the kill (absent: no): what the
    /// replica had not received by then is lost, however long the promotion
    /// takes. Without it the bytes in flight on the delayed link still reach
    /// the replica if REPLICAOF NO ONE takes longer than the link's one-way
    /// delay (a loaded machine), and the cell measures that race instead of
    /// the lag (the scorecard's probe).
    cut_link_at_kill: Option<bool>,
    /// Stop sending to the primary at `kill_at` admissions (absent: no, the
    /// workers send on until the primary is gone).
    hold_at_kill: Option<bool>,
}

const PHASE_PRIMARY: u8 = 0;
const PHASE_SWITCHING: u8 = 1;
const PHASE_PROMOTED: u8 = 2;

struct Shared {
    phase: AtomicU8,
    admitted: AtomicU64,
    post_claimed: AtomicU64,
    kill: tokio::sync::Notify,
}

/// What one worker saw; summed over the workers for the row.
#[derive(Default)]
struct WorkerOut {
    replies_pre: u64,
    admitted_pre: u64,
    unconfirmed_pre: u64,
    lost_calls: u64,
    post_sent: u64,
    admitted_post: u64,
    errors_post: u64,
    rtt_sum_ms: f64,
    rtt_n: u64,
}

impl std::ops::AddAssign for WorkerOut {
    fn add_assign(&mut self, o: WorkerOut) {
        self.replies_pre += o.replies_pre;
        self.admitted_pre += o.admitted_pre;
        self.unconfirmed_pre += o.unconfirmed_pre;
        self.lost_calls += o.lost_calls;
        self.post_sent += o.post_sent;
        self.admitted_post += o.admitted_post;
        self.errors_post += o.errors_post;
        self.rtt_sum_ms += o.rtt_sum_ms;
        self.rtt_n += o.rtt_n;
    }
}

#[allow(clippy::too_many_arguments)]
async fn worker(
    strategy: Arc<dyn Strategy>,
    primary: SocketAddr,
    replica: SocketAddr,
    client: String,
    limit: Limit,
    p: Arc<Params>,
    wait: bool,
    sh: Arc<Shared>,
) -> Result<WorkerOut> {
    let mut out = WorkerOut::default();
    let mut conn = Conn::connect(primary).await?;
    let req = |id| Request {
        client: &client,
        limit,
        cost: 1,
        now_us: Clock::system_now_us(),
        request_id: id,
    };
    // On the primary until it dies (or the switch starts, or it has made
    // `kill_at` admissions when holding).
    let hold = p.hold_at_kill.unwrap_or(false);
    while sh.phase.load(Ordering::Acquire) == PHASE_PRIMARY {
        if hold && sh.admitted.load(Ordering::Acquire) >= p.kill_at {
            break;
        }
        let t = Instant::now();
        let d = match strategy.decide(&mut conn, &req(next_request_id())).await {
            Ok(d) => d,
            Err(_) => {
                out.lost_calls += 1;
                break;
            }
        };
        out.replies_pre += 1;
        // The kill is timed by what the primary decided (confirmed or not), so
        // both WAIT settings fail over at the same point of the window.
        if d.admitted {
            let n = sh.admitted.fetch_add(1, Ordering::AcqRel) + 1;
            if n == p.kill_at {
                sh.kill.notify_one();
            }
        }
        let mut admitted = d.admitted;
        if wait {
            match conn
                .call("", &limitbench_core::args!["WAIT", 1u64, p.wait_timeout_ms])
                .await
            {
                Ok(r) if r.as_i64().unwrap_or(0) >= 1 => {}
                Ok(_) => {
                    if admitted {
                        out.unconfirmed_pre += 1;
                    }
                    admitted = false;
                }
                Err(_) => {
                    if admitted {
                        out.lost_calls += 1;
                    }
                    break;
                }
            }
        }
        out.rtt_sum_ms += t.elapsed().as_secs_f64() * 1e3;
        out.rtt_n += 1;
        if admitted {
            out.admitted_pre += 1;
        }
    }
    while sh.phase.load(Ordering::Acquire) != PHASE_PROMOTED {
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
    let mut conn = Conn::connect(replica).await?;
    while sh.post_claimed.fetch_add(1, Ordering::AcqRel) < p.post_offered {
        out.post_sent += 1;
        match strategy.decide(&mut conn, &req(next_request_id())).await {
            Ok(d) => out.admitted_post += d.admitted as u64,
            Err(_) => out.errors_post += 1,
        }
    }
    Ok(out)
}

/// A trial's primary and replica, the replica following through a delay
/// proxy when the cell's delay is > 0.
struct Pair {
    primary: Server,
    replica: Server,
    /// Kept alive for the trial: the replication link runs through it.
    _proxy: Option<DelayProxy>,
    /// The port the replica follows (the proxy's, or the primary's).
    upstream: u16,
    repl_rtt_ms: f64,
}

impl Pair {
    async fn start(bin: &RedisBinary, delay_ms: f64, rtt_samples: u32) -> Result<Self> {
        let primary = Server::start(bin, ServerConfig::default(), false, None).await?;
        let proxy = if delay_ms > 0.0 {
            Some(DelayProxy::start(primary.addr())?)
        } else {
            None
        };
        let upstream = proxy
            .as_ref()
            .map(|x| x.listen.port())
            .unwrap_or(primary.port);
        let replica = Server::start(bin, ServerConfig::default(), false, Some(upstream)).await?;
        replica.wait_in_sync(Duration::from_secs(30)).await?;
        let repl_rtt_ms = match &proxy {
            Some(px) => {
                px.set_one_way(Duration::from_secs_f64(delay_ms / 1e3));
                px.measure_rtt(rtt_samples).await?.rtt_median_us / 1e3
            }
            None => 0.0,
        };
        Ok(Pair {
            primary,
            replica,
            _proxy: proxy,
            upstream,
            repl_rtt_ms,
        })
    }

    /// Load the strategy on the primary and prove the replica is streaming
    /// (not just "in sync"): a write acknowledged by WAIT shows the link is live.
    async fn arm(&self, strategy: &dyn Strategy, cell: &str) -> Result<()> {
        let mut c = self.primary.connection().await?;
        strategy.prepare(&mut c).await?;
        c.call(&limitbench_core::args!["SET", "failover:ready", 1u64]).await?;
        let acked = c.call(&limitbench_core::args!["WAIT", 1u64, 5000u64]).await?;
        if acked.as_i64().unwrap_or(0) < 1 {
            return Err(Error::Other(format!(
                "failover: the replica did not acknowledge a write within 5 s (cell {cell})"
            )));
        }
        Ok(())
    }
}

/// One cell: a strategy, with or without WAIT, at a replication delay.
struct Cell {
    strategy: String,
    wait: bool,
    delay_ms: f64,
}

/// What the workers and the failover gave: the summed worker counts, the
/// kill + promote time and the use the promoted replica saw.
struct Outcome {
    tot: WorkerOut,
    failover_ms: f64,
    used: f64,
}

struct Failover {
    p: Arc<Params>,
    bin: RedisBinary,
}

impl Failover {
    /// Start the workers on the primary, kill it when it has made `kill_at`
    /// admissions (or after 30 s), promote the replica, let the workers finish there.
    async fn fail_over(
        &self,
        pair: &mut Pair,
        cell: &Cell,
        strategy: &Arc<dyn Strategy>,
        client: &str,
    ) -> Result<Outcome> {
        let limit = Limit::per_window(self.p.limit, 3_600_000);
        let sh = Arc::new(Shared {
            phase: AtomicU8::new(PHASE_PRIMARY),
            admitted: AtomicU64::new(0),
            post_claimed: AtomicU64::new(0),
            kill: tokio::sync::Notify::new(),
        });
        let mut tasks = Vec::new();
        for _ in 0..self.p.workers {
            tasks.push(tokio::spawn(worker(
                strategy.clone(),
                pair.primary.addr(),
                pair.replica.addr(),
                client.to_string(),
                limit,
                self.p.clone(),
                cell.wait,
                sh.clone(),
            )));
        }
        let _ = tokio::time::timeout(Duration::from_secs(30), sh.kill.notified()).await;
        let t0 = Instant::now();
        if self.p.cut_link_at_kill.unwrap_or(false)
            && let Some(px) = &pair._proxy
        {
            px.cut();
        }
        pair.primary.kill();
        sh.phase.store(PHASE_SWITCHING, Ordering::Release);
        pair.replica.promote().await?;
        let failover_ms = t0.elapsed().as_secs_f64() * 1e3;
        let used = replica_used(&pair.replica, &cell.strategy, client, limit).await?;
        sh.phase.store(PHASE_PROMOTED, Ordering::Release);
        let mut tot = WorkerOut::default();
        for t in tasks {
            tot += t
                .await
                .map_err(|e| Error::Other(format!("failover worker failed: {e}")))??;
        }
        Ok(Outcome {
            tot,
            failover_ms,
            used,
        })
    }
}

impl Sweep for Failover {
    type Cell = Cell;
    type Setup = Arc<dyn Strategy>;
    type Row = Row;
    type Side = NoSide;

    fn cell_id(&self, c: &Cell) -> String {
        format!("{}/wait={}/delay={}", c.strategy, c.wait, c.delay_ms)
    }

    fn trials(&self, _c: &Cell) -> u64 {
        self.p.trials
    }

    async fn setup(&mut self, ctx: &RunContext, c: &Cell) -> Result<Arc<dyn Strategy>> {
        ctx.build_strategy(&c.strategy, &Options::default())
    }

    async fn trial(
        &mut self,
        ctx: &RunContext,
        c: &Cell,
        strategy: &mut Arc<dyn Strategy>,
        trial: u64,
    ) -> Result<TrialRows<Row>> {
        let cell = self.cell_id(c);
        let samples = self.p.repl_rtt_samples.unwrap_or(20);
        let mut pair = Pair::start(&self.bin, c.delay_ms, samples).await?;
        if trial == 0 {
            ctx.note(
                &format!("servers-{cell}"),
                serde_json::json!({"primary": pair.primary.config_get_all().await?, "replica_of": pair.upstream}),
            )?;
        }
        pair.arm(strategy.as_ref(), &cell).await?;
        let client = ctx.unique_client("fo", &cell, trial);
        let Outcome {
            tot,
            failover_ms,
            used,
        } = self.fail_over(&mut pair, c, strategy, &client).await?;
        let p = &self.p;
        let admitted_total = tot.admitted_pre + tot.admitted_post;
        Ok(TrialRows::one(Row {
            cell,
            trial,
            seed: ctx.seed,
            strategy: c.strategy.clone(),
            wait: c.wait,
            repl_delay_ms: c.delay_ms,
            repl_rtt_ms: pair.repl_rtt_ms,
            limit: p.limit,
            workers: p.workers as u64,
            replies_pre: tot.replies_pre,
            admitted_pre: tot.admitted_pre,
            unconfirmed_pre: tot.unconfirmed_pre,
            lost_calls: tot.lost_calls,
            post_sent: tot.post_sent,
            admitted_post: tot.admitted_post,
            errors_post: tot.errors_post,
            admitted_total,
            over_admitted: admitted_total as i64 - p.limit as i64,
            replica_used_at_promotion: used,
            failover_ms,
            decision_rtt_mean_ms: tot.rtt_sum_ms / tot.rtt_n.max(1) as f64,
        }))
    }
}

pub async fn run(ctx: &RunContext) -> Result<()> {
    let p: Params = ctx.params()?;
    ctx.note("params", serde_json::to_value(&p).unwrap())?;
    if p.kill_at == 0 || p.kill_at > p.limit {
        return Err(Error::Other(
            "failover: kill_at must be in 1..=limit".into(),
        ));
    }
    let mut cells = Vec::new();
    for s in &ctx.named_strategies(&p.strategies)? {
        for &wait in &p.waits {
            for &delay_ms in &p.repl_delays_ms {
                cells.push(Cell {
                    strategy: s.clone(),
                    wait,
                    delay_ms,
                });
            }
        }
    }
    let bin = ctx.binary()?.clone();
    sweep::run(
        ctx,
        &mut Failover {
            p: Arc::new(p),
            bin,
        },
        &cells,
    )
    .await
}

/// What the promoted replica holds for the client: the window's count, or
/// the tokens spent (capacity - tokens) for a bucket; NaN for a design
/// whose state is neither.
async fn replica_used(replica: &Server, strategy: &str, client: &str, limit: Limit) -> Result<f64> {
    let mut c = replica.connection().await?;
    if !strategy.starts_with("token-bucket") && !strategy.starts_with("fixed-window") {
        return Ok(f64::NAN);
    }
    if strategy.starts_with("token-bucket") {
        let key = client_key(client, "tb");
        let t = c
            .call(&limitbench_core::args!["HGET", key.as_str(), "tokens"])
            .await?;
        Ok(limit.limit as f64 - t.as_f64().unwrap_or(limit.limit as f64))
    } else {
        let w = window_index(Clock::system_now_us(), limit.window_ms);
        let key = client_key(client, &format!("fw:{w}"));
        let v = c.call(&limitbench_core::args!["GET", key.as_str()]).await?;
        Ok(v.as_f64().unwrap_or(0.0))
    }
}
