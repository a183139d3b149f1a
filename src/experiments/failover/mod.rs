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

pub mod analyze;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::study_b_topo_util::unique_client;
use super::{Experiment, RunContext};
use crate::clock::Clock;
use crate::conn::Conn;
use crate::error::{Error, Result};
use crate::fleet::{Server, ServerConfig};
use crate::load::next_request_id;
use crate::proxy::DelayProxy;
use crate::strategy::{Limit, Options, Request, Strategy, client_key, window_index};

pub const EXPERIMENT: Experiment = Experiment {
    name: "failover",
    study: "beyond",
    allows_external: false,
    run: |ctx: &RunContext| Box::pin(run(ctx)),
    analyze: analyze::analyze,
};

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
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Row {
    pub cell: String,
    pub trial: u64,
    pub seed: u64,
    pub strategy: String,
    pub wait: bool,
    pub repl_delay_ms: f64,
    /// Measured PING round trip through the replication link's proxy (0 if direct).
    pub repl_rtt_ms: f64,
    pub limit: u64,
    pub workers: u64,
    /// Decisions with a reply from the primary.
    pub replies_pre: u64,
    /// Admissions the clients counted on the primary (with WAIT: confirmed ones).
    pub admitted_pre: u64,
    /// Admissions on the primary whose WAIT found no replica in time (counted as refused).
    pub unconfirmed_pre: u64,
    /// Calls that failed because the primary died under them.
    pub lost_calls: u64,
    pub post_sent: u64,
    pub admitted_post: u64,
    pub errors_post: u64,
    pub admitted_total: u64,
    pub over_admitted: i64,
    /// The limiter's use as the promoted replica saw it (count, or capacity - tokens).
    pub replica_used_at_promotion: f64,
    pub failover_ms: f64,
    pub decision_rtt_mean_ms: f64,
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
    // On the primary until it dies (or the switch starts).
    while sh.phase.load(Ordering::Acquire) == PHASE_PRIMARY {
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
                .call("", &crate::args!["WAIT", 1u64, p.wait_timeout_ms])
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

async fn run(ctx: &RunContext) -> Result<()> {
    let p: Params = ctx.params()?;
    ctx.note("params", serde_json::to_value(&p).unwrap())?;
    if p.kill_at == 0 || p.kill_at > p.limit {
        return Err(Error::Other(
            "failover: kill_at must be in 1..=limit".into(),
        ));
    }
    let p = Arc::new(p);
    let mut log = ctx.trial_log(&[])?;
    let bin = ctx.binary()?.clone();
    let mut cells: Vec<(String, bool, f64)> = Vec::new();
    for s in &p.strategies {
        for &w in &p.waits {
            for &d in &p.repl_delays_ms {
                cells.push((s.clone(), w, d));
            }
        }
    }
    let mut prog = ctx.progress(cells.len() as u64 * p.trials);
    let limit = Limit::per_window(p.limit, 3_600_000);
    for (name, wait, delay) in &cells {
        let strategy = ctx.build_strategy(name, &Options::default())?;
        let cell = format!("{name}/wait={wait}/delay={delay}");
        for trial in 0..p.trials {
            if log.is_done(&cell, trial) {
                prog.skip(1);
                continue;
            }
            let mut primary = Server::start(&bin, ServerConfig::default(), false, None).await?;
            let proxy = if *delay > 0.0 {
                let px = DelayProxy::start(primary.addr())?;
                Some(px)
            } else {
                None
            };
            let upstream = proxy
                .as_ref()
                .map(|x| x.listen.port())
                .unwrap_or(primary.port);
            let mut replica =
                Server::start(&bin, ServerConfig::default(), false, Some(upstream)).await?;
            replica.wait_in_sync(Duration::from_secs(30)).await?;
            let repl_rtt_ms = match &proxy {
                Some(px) => {
                    px.set_one_way(Duration::from_secs_f64(delay / 1e3));
                    px.measure_rtt(20).await?.rtt_median_us / 1e3
                }
                None => 0.0,
            };
            if trial == 0 {
                ctx.note(
                    &format!("servers-{cell}"),
                    serde_json::json!({"primary": primary.config_get_all().await?, "replica_of": upstream}),
                )?;
            }
            {
                let mut c = primary.connection().await?;
                strategy.prepare(&mut c).await?;
                // The replica must be streaming (not just "in sync") before the
                // trial: a write acknowledged by WAIT proves the link is live.
                c.call(&crate::args!["SET", "failover:ready", 1u64]).await?;
                let acked = c.call(&crate::args!["WAIT", 1u64, 5000u64]).await?;
                if acked.as_i64().unwrap_or(0) < 1 {
                    return Err(Error::Other(format!(
                        "failover: the replica did not acknowledge a write within 5 s (cell {cell})"
                    )));
                }
            }
            let client = unique_client("fo", &cell, trial);
            let sh = Arc::new(Shared {
                phase: AtomicU8::new(PHASE_PRIMARY),
                admitted: AtomicU64::new(0),
                post_claimed: AtomicU64::new(0),
                kill: tokio::sync::Notify::new(),
            });
            let mut tasks = Vec::new();
            for _ in 0..p.workers {
                tasks.push(tokio::spawn(worker(
                    strategy.clone(),
                    primary.addr(),
                    replica.addr(),
                    client.clone(),
                    limit,
                    p.clone(),
                    *wait,
                    sh.clone(),
                )));
            }
            // Kill when the primary has made kill_at admissions; give up after 30 s.
            let _ = tokio::time::timeout(Duration::from_secs(30), sh.kill.notified()).await;
            let t0 = Instant::now();
            primary.kill();
            sh.phase.store(PHASE_SWITCHING, Ordering::Release);
            replica.promote().await?;
            let failover_ms = t0.elapsed().as_secs_f64() * 1e3;
            let used = replica_used(&replica, name, &client, limit).await?;
            sh.phase.store(PHASE_PROMOTED, Ordering::Release);
            let mut tot = WorkerOut::default();
            for t in tasks {
                let o = t
                    .await
                    .map_err(|e| Error::Other(format!("failover worker failed: {e}")))??;
                tot.replies_pre += o.replies_pre;
                tot.admitted_pre += o.admitted_pre;
                tot.unconfirmed_pre += o.unconfirmed_pre;
                tot.lost_calls += o.lost_calls;
                tot.post_sent += o.post_sent;
                tot.admitted_post += o.admitted_post;
                tot.errors_post += o.errors_post;
                tot.rtt_sum_ms += o.rtt_sum_ms;
                tot.rtt_n += o.rtt_n;
            }
            let admitted_total = tot.admitted_pre + tot.admitted_post;
            let row = Row {
                cell: cell.clone(),
                trial,
                seed: ctx.seed,
                strategy: name.clone(),
                wait: *wait,
                repl_delay_ms: *delay,
                repl_rtt_ms,
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
            };
            log.commit(&cell, trial, &[row])?;
            prog.inc(&format!(
                "{cell} #{trial}: {admitted_total} admitted (limit {})",
                p.limit
            ));
            drop(proxy);
            drop(replica);
        }
    }
    prog.finish();
    Ok(())
}

/// What the promoted replica holds for the client: the window's count, or
/// the tokens spent (capacity - tokens) for a bucket.
async fn replica_used(replica: &Server, strategy: &str, client: &str, limit: Limit) -> Result<f64> {
    let mut c = replica.connection().await?;
    if strategy.starts_with("token-bucket") {
        let key = client_key(client, "tb");
        let t = c
            .call(&crate::args!["HGET", key.as_str(), "tokens"])
            .await?;
        Ok(limit.limit as f64 - t.as_f64().unwrap_or(limit.limit as f64))
    } else {
        let w = window_index(Clock::system_now_us(), limit.window_ms);
        let key = client_key(client, &format!("fw:{w}"));
        let v = c.call(&crate::args!["GET", key.as_str()]).await?;
        Ok(v.as_f64().unwrap_or(0.0))
    }
}
