//! `fail-open` (claim B8): what a limiter does when Redis is slow or gone.
//!
//! `PolicyClient` is the client-side policy the study describes: every
//! decision gets a short deadline (`timeout_ms`, connect included); when
//! Redis does not answer in time or the call fails, the request is admitted
//! (`fail-open`) or refused (`fail-closed`) and the miss is counted. After a
//! timeout the connection is unusable (the late reply may still arrive), so
//! it is dropped and the next decision reconnects.
//!
//! A trial: steady open-loop traffic (`offered_per_s`, a pool of `drivers`
//! policy clients) on one client's token bucket (`limit_per_s` capacity and
//! refill) through a `DelayProxy`, in four phases: `normal`; `slow` (the
//! proxy adds `slow_one_way_ms` each way, above the timeout); `gone` (the
//! redis-server process SIGKILLed); `back` (started again on the same port,
//! empty: it had no RDB). Main rows: one per `bin_ms` bin: decisions made by
//! Redis, admitted open, refused closed, timeouts, errors, admitted in all
//! and over the limit. Side table `summary`: per trial, the measured round
//! trips, the outage totals and the time to recover after Redis returns.

pub mod analyze;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::study_b_topo_util::{error_class, unique_client};
use super::{Experiment, RunContext};
use crate::clock::Clock;
use crate::conn::Conn;
use crate::error::{Error, Result};
use crate::fleet::{Fleet, ServerConfig};
use crate::load::{TrialClock, next_request_id, schedule};
use crate::proxy::DelayProxy;
use crate::strategy::{Limit, Options, Request, Strategy};

pub const EXPERIMENT: Experiment = Experiment {
    name: "fail-open",
    study: "B",
    allows_external: false,
    run: |ctx: &RunContext| Box::pin(run(ctx)),
    analyze: analyze::analyze,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    FailOpen,
    FailClosed,
}

impl Policy {
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "fail-open" => Ok(Policy::FailOpen),
            "fail-closed" => Ok(Policy::FailClosed),
            o => Err(Error::Other(format!(
                "fail-open: unknown policy `{o}` (fail-open, fail-closed)"
            ))),
        }
    }
    pub fn as_str(&self) -> &'static str {
        match self {
            Policy::FailOpen => "fail-open",
            Policy::FailClosed => "fail-closed",
        }
    }
}

/// One decision as the policy made it.
#[derive(Debug, Clone, Default)]
pub struct PolicyOutcome {
    pub admitted: bool,
    /// Redis decided (false: the policy decided because Redis did not).
    pub by_redis: bool,
    pub timeout: bool,
    /// Error class when Redis failed (not a timeout): `io`, `ERR`, ...
    pub error: Option<String>,
}

/// A strategy behind a deadline and a fail-open/closed policy.
pub struct PolicyClient {
    pub strategy: Arc<dyn Strategy>,
    pub addr: SocketAddr,
    pub timeout: Duration,
    pub policy: Policy,
    conn: Option<Conn>,
    /// Decisions the policy made instead of Redis (the "misses" an SDK records).
    pub misses: u64,
}

impl PolicyClient {
    pub fn new(
        strategy: Arc<dyn Strategy>,
        addr: SocketAddr,
        timeout: Duration,
        policy: Policy,
    ) -> Self {
        PolicyClient {
            strategy,
            addr,
            timeout,
            policy,
            conn: None,
            misses: 0,
        }
    }

    fn fallback(&mut self, timeout: bool, error: Option<String>) -> PolicyOutcome {
        self.conn = None;
        self.misses += 1;
        PolicyOutcome {
            admitted: self.policy == Policy::FailOpen,
            by_redis: false,
            timeout,
            error,
        }
    }

    pub async fn decide(&mut self, req: &Request<'_>) -> PolicyOutcome {
        let deadline = Instant::now() + self.timeout;
        if self.conn.is_none() {
            match tokio::time::timeout(self.timeout, Conn::connect(self.addr)).await {
                Ok(Ok(c)) => self.conn = Some(c),
                Ok(Err(e)) => return self.fallback(false, Some(error_class(&e))),
                Err(_) => return self.fallback(true, None),
            }
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return self.fallback(true, None);
        }
        let conn = self.conn.as_mut().unwrap();
        conn.set_timeout(Some(left));
        match self.strategy.decide(conn, req).await {
            Ok(d) => PolicyOutcome {
                admitted: d.admitted,
                by_redis: true,
                timeout: false,
                error: None,
            },
            Err(Error::Timeout(_)) => self.fallback(true, None),
            Err(e) => {
                let c = error_class(&e);
                self.fallback(false, Some(c))
            }
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct Params {
    policies: Vec<String>,
    strategy: String,
    trials: u64,
    offered_per_s: f64,
    limit_per_s: u64,
    drivers: usize,
    timeout_ms: u64,
    slow_one_way_ms: u64,
    normal_s: f64,
    slow_s: f64,
    gone_s: f64,
    back_s: f64,
    bin_ms: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct BinRow {
    pub cell: String,
    pub trial: u64,
    pub seed: u64,
    pub policy: String,
    pub bin: u64,
    pub t_start_s: f64,
    pub phase: String,
    pub offered: u64,
    pub by_redis: u64,
    pub redis_admitted: u64,
    pub admitted_open: u64,
    pub refused_closed: u64,
    pub timeouts: u64,
    pub errors: u64,
    pub admitted: u64,
    pub limit_per_bin: f64,
    pub over_limit: f64,
    pub latency_p50_ms: f64,
    pub latency_max_ms: f64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SummaryRow {
    pub cell: String,
    pub trial: u64,
    pub seed: u64,
    pub policy: String,
    pub strategy: String,
    pub offered_per_s: f64,
    pub limit_per_s: u64,
    pub timeout_ms: u64,
    pub normal_rtt_ms: f64,
    pub slow_rtt_ms: f64,
    pub slow_start_s: f64,
    pub gone_start_s: f64,
    pub back_start_s: f64,
    pub end_s: f64,
    /// Restart to the server answering (start_again returning).
    pub server_ready_ms: f64,
    /// Restart to the first decision Redis made again.
    pub recover_ms: f64,
    pub outage_offered: u64,
    pub outage_admitted: u64,
    pub outage_limit: f64,
    pub outage_over_limit: f64,
    pub misses: u64,
    pub decisions: u64,
}

#[derive(Debug, Clone)]
struct Ev {
    intended_us: i64,
    sent_us: i64,
    replied_us: i64,
    o: PolicyOutcome,
}

fn phase_at(t_us: i64, b: &[i64; 3]) -> &'static str {
    if t_us < b[0] {
        "normal"
    } else if t_us < b[1] {
        "slow"
    } else if t_us < b[2] {
        "gone"
    } else {
        "back"
    }
}

async fn run(ctx: &RunContext) -> Result<()> {
    let p: Params = ctx.params()?;
    ctx.note("params", serde_json::to_value(&p).unwrap())?;
    let mut log = ctx.trial_log(&["summary"])?;
    let mut fleet = Fleet::standalone(ctx.binary()?, ServerConfig::default()).await?;
    ctx.note_fleet("fleet", &fleet).await?;
    // The policy sits in front of one strategy: `--strategy` picks it.
    let name = ctx.strategies(std::slice::from_ref(&p.strategy)).remove(0);
    let strategy = ctx.build_strategy(&name, &Options::default())?;
    let limit = Limit::bucket(p.limit_per_s, p.limit_per_s as f64);
    let mut prog = ctx.progress(p.policies.len() as u64 * p.trials);
    for pol in &p.policies {
        let policy = Policy::parse(pol)?;
        let cell = pol.clone();
        for trial in 0..p.trials {
            if log.is_done(&cell, trial) {
                prog.skip(1);
                continue;
            }
            if !fleet.servers[0].is_running() {
                fleet.servers[0].start_again().await?;
            }
            for mut node in fleet.node_connections().await? {
                strategy.prepare(&mut node).await?;
            }
            let proxy = DelayProxy::start(fleet.primary_addr())?;
            let normal_rtt = proxy.measure_rtt(50).await?;
            proxy.set_one_way(Duration::from_millis(p.slow_one_way_ms));
            let slow_rtt = proxy.measure_rtt(3).await?;
            proxy.set_one_way(Duration::ZERO);
            let (rows, summary) = trial_run(
                &p, policy, &strategy, limit, &proxy, &mut fleet, &cell, trial, ctx.seed,
            )
            .await?;
            let mut summary = summary;
            summary.normal_rtt_ms = normal_rtt.rtt_median_us / 1e3;
            summary.slow_rtt_ms = slow_rtt.rtt_median_us / 1e3;
            log.side("summary", &[summary.clone()])?;
            log.commit(&cell, trial, &rows)?;
            prog.inc(&format!(
                "{cell} #{trial}: outage admitted {} (limit {:.0}), recovered in {:.0} ms",
                summary.outage_admitted, summary.outage_limit, summary.recover_ms
            ));
            drop(proxy);
        }
    }
    prog.finish();
    Ok(())
}

#[allow(clippy::too_many_arguments)]
async fn trial_run(
    p: &Params,
    policy: Policy,
    strategy: &Arc<dyn Strategy>,
    limit: Limit,
    proxy: &DelayProxy,
    fleet: &mut Fleet,
    cell: &str,
    trial: u64,
    seed: u64,
) -> Result<(Vec<BinRow>, SummaryRow)> {
    let s = |x: f64| (x * 1e6) as i64;
    let bounds = [
        s(p.normal_s),
        s(p.normal_s + p.slow_s),
        s(p.normal_s + p.slow_s + p.gone_s),
    ];
    let end_us = bounds[2] + s(p.back_s);
    let client = unique_client("fo", cell, trial);
    let arrivals = Arc::new(schedule::steady(p.offered_per_s, 0, end_us, &client));
    let next = Arc::new(AtomicU64::new(0));
    let tc = TrialClock::start();
    let mut tasks = Vec::new();
    for _ in 0..p.drivers {
        let mut pc = PolicyClient::new(
            strategy.clone(),
            proxy.listen,
            Duration::from_millis(p.timeout_ms),
            policy,
        );
        let (arrivals, next) = (arrivals.clone(), next.clone());
        tasks.push(tokio::spawn(async move {
            let mut evs = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed) as usize;
                let Some(a) = arrivals.get(i) else { break };
                schedule::wait_until(tc.at(a.at_us)).await;
                let sent_us = tc.us();
                let req = Request {
                    client: &a.client,
                    limit,
                    cost: 1,
                    now_us: Clock::system_now_us(),
                    request_id: next_request_id(),
                };
                let o = pc.decide(&req).await;
                evs.push(Ev {
                    intended_us: a.at_us,
                    sent_us,
                    replied_us: tc.us(),
                    o,
                });
            }
            (evs, pc.misses)
        }));
    }
    // The phases, driven from here while the drivers run.
    tokio::time::sleep_until(tc.at(bounds[0]).into()).await;
    proxy.set_one_way(Duration::from_millis(p.slow_one_way_ms));
    tokio::time::sleep_until(tc.at(bounds[1]).into()).await;
    proxy.set_one_way(Duration::ZERO);
    fleet.servers[0].kill();
    tokio::time::sleep_until(tc.at(bounds[2]).into()).await;
    let back_at = tc.us();
    fleet.servers[0].start_again().await?;
    let ready_us = tc.us();
    let mut evs = Vec::new();
    let mut misses = 0;
    for t in tasks {
        let (e, m) = t
            .await
            .map_err(|e| Error::Other(format!("fail-open driver failed: {e}")))?;
        evs.extend(e);
        misses += m;
    }
    evs.sort_by_key(|e| e.intended_us);

    let bin_us = (p.bin_ms * 1000) as i64;
    let n_bins = ((end_us + bin_us - 1) / bin_us) as usize;
    let limit_per_bin = p.limit_per_s as f64 * p.bin_ms as f64 / 1000.0;
    let mut rows: Vec<BinRow> = (0..n_bins)
        .map(|b| BinRow {
            cell: cell.into(),
            trial,
            seed,
            policy: policy.as_str().into(),
            bin: b as u64,
            t_start_s: (b as i64 * bin_us) as f64 / 1e6,
            phase: phase_at(b as i64 * bin_us, &bounds).into(),
            limit_per_bin,
            ..Default::default()
        })
        .collect();
    let mut lat: Vec<Vec<f64>> = vec![Vec::new(); n_bins];
    for e in &evs {
        let b = ((e.intended_us / bin_us) as usize).min(n_bins - 1);
        let r = &mut rows[b];
        r.offered += 1;
        if e.o.by_redis {
            r.by_redis += 1;
            r.redis_admitted += e.o.admitted as u64;
        } else if e.o.admitted {
            r.admitted_open += 1;
        } else {
            r.refused_closed += 1;
        }
        r.timeouts += e.o.timeout as u64;
        r.errors += e.o.error.is_some() as u64;
        r.admitted += e.o.admitted as u64;
        lat[b].push((e.replied_us - e.sent_us) as f64 / 1e3);
    }
    for (r, l) in rows.iter_mut().zip(lat.iter()) {
        r.over_limit = (r.admitted as f64 - r.limit_per_bin).max(0.0);
        r.latency_p50_ms = crate::analysis::stats::quantile(l, 0.5);
        r.latency_max_ms = l.iter().copied().fold(f64::NAN, f64::max);
    }
    let outage: Vec<&Ev> = evs
        .iter()
        .filter(|e| e.intended_us >= bounds[0] && e.intended_us < bounds[2])
        .collect();
    let outage_admitted = outage.iter().filter(|e| e.o.admitted).count() as u64;
    let outage_limit = p.limit_per_s as f64 * (p.slow_s + p.gone_s);
    let recover_ms = evs
        .iter()
        .filter(|e| e.sent_us >= back_at && e.o.by_redis)
        .map(|e| e.replied_us)
        .min()
        .map(|t| (t - back_at) as f64 / 1e3)
        .unwrap_or(f64::NAN);
    let summary = SummaryRow {
        cell: cell.into(),
        trial,
        seed,
        policy: policy.as_str().into(),
        strategy: strategy.info().name.clone(),
        offered_per_s: p.offered_per_s,
        limit_per_s: p.limit_per_s,
        timeout_ms: p.timeout_ms,
        slow_start_s: bounds[0] as f64 / 1e6,
        gone_start_s: bounds[1] as f64 / 1e6,
        back_start_s: bounds[2] as f64 / 1e6,
        end_s: end_us as f64 / 1e6,
        server_ready_ms: (ready_us - back_at) as f64 / 1e3,
        recover_ms,
        outage_offered: outage.len() as u64,
        outage_admitted,
        outage_limit,
        outage_over_limit: (outage_admitted as f64 - outage_limit).max(0.0),
        misses,
        decisions: evs.len() as u64,
        ..Default::default()
    };
    Ok((rows, summary))
}
