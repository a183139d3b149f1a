//! `fail-open` (claim B8): what a limiter does when Redis is slow or gone.
//!
//! `PolicyClient` (`policy.rs`) is the client-side policy the study describes: every
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
//! `fail-open-history.csv`: every decision's intended (scheduled), sent and
//! replied time, so latency can be read from the schedule (corrected for
//! coordinated omission) as well as from the send (`fail-open-latency.csv`).
//!
//! One server for the whole experiment (killed and restarted by every
//! trial); a cell is a policy, in front of one strategy (`--strategy` picks it).

pub mod policy;
// The analysis half (analyze/) is compiled into limitbench-analysis
// (crates/analysis/src/experiments/mod.rs); it is this experiment's all the same.
pub use limitbench_analysis::experiments::fail_open::{analyze, rows};
#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use policy::{Policy, PolicyClient, PolicyOutcome};
pub use rows::{BinRow, SummaryRow};

use super::{RunContext, Spec};
use limitbench_base::error::{Error, Result};
use limitbench_core::fleet::{Fleet, ServerConfig};
use limitbench_core::load::{TrialClock, schedule};
use limitbench_core::proxy::DelayProxy;
use crate::run::keys::unique_client;
use crate::run::latency;
use crate::run::sweep::{self, Sweep, TrialRows};
use limitbench_analysis::experiments::rows::HistoryRow;
use limitbench_core::strategy::{Limit, Options, Request, Strategy};

/// Its registration (the registry adds its `run` and its analysis half's `analyze`).
// its client timeouts are milliseconds: a slip of 3 ms is what a timeout of the study could absorb.
pub const SPEC: Spec = Spec::new("fail-open", "B").latency_bound(3.0).others_at_most(0.25);

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
    slow_one_way_ms: f64,
    normal_s: f64,
    slow_s: f64,
    gone_s: f64,
    back_s: f64,
    bin_ms: u64,
    /// A decision the policy made counts as late (`late_misses`) when it
    /// took longer than `timeout_ms` plus this (absent: 20).
    late_margin_ms: Option<f64>,
}

/// One decision as a driver saw it (times from the trial's start).
#[derive(Debug, Clone)]
struct Ev {
    /// The driver (policy client) that sent it.
    worker: u32,
    /// When the schedule had it due: latency from here counts the wait for
    /// a late send (coordinated omission), from `sent_us` it does not.
    intended_us: i64,
    sent_us: i64,
    replied_us: i64,
    o: PolicyOutcome,
}

/// When the phases start, from the trial's start (us).
#[derive(Debug, Clone, Copy)]
struct Phases {
    slow: i64,
    gone: i64,
    back: i64,
    end: i64,
}

impl Phases {
    fn of(p: &Params) -> Self {
        let s = |x: f64| (x * 1e6) as i64;
        let (slow, gone, back) = (
            s(p.normal_s),
            s(p.normal_s + p.slow_s),
            s(p.normal_s + p.slow_s + p.gone_s),
        );
        Phases {
            slow,
            gone,
            back,
            end: back + s(p.back_s),
        }
    }

    fn at(&self, t_us: i64) -> &'static str {
        if t_us < self.slow {
            "normal"
        } else if t_us < self.gone {
            "slow"
        } else if t_us < self.back {
            "gone"
        } else {
            "back"
        }
    }
}

/// The median by linear interpolation (NaN for none): the run records a
/// bin's p50 latency itself, as recording code does not use the analysis.
fn median(values: &[f64]) -> f64 {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let pos = 0.5 * (v.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    v[lo] + (v[hi] - v[lo]) * (pos - lo as f64)
}

/// What the drivers saw while the phases ran.
struct Drive {
    /// Every decision, by intended time.
    evs: Vec<Ev>,
    /// Decisions the policies made instead of Redis.
    misses: u64,
    /// When the server was started again, and when it answered.
    back_at_us: i64,
    ready_us: i64,
}

/// Cross-cell state: the server (killed and restarted by every trial) and
/// the strategy behind the policy.
struct FailOpen {
    p: Params,
    fleet: Fleet,
    strategy: Arc<dyn Strategy>,
}

impl FailOpen {
    /// Steady arrivals over all phases, sent by `drivers` policy clients
    /// through the proxy, while this task drives the phases: delay the
    /// proxy, then kill the server, then start it again.
    async fn drive(&mut self, policy: Policy, proxy: &DelayProxy, client: &str) -> Result<Drive> {
        let p = &self.p;
        let phases = Phases::of(p);
        let limit = Limit::bucket(p.limit_per_s, p.limit_per_s as f64);
        let arrivals = Arc::new(schedule::steady(p.offered_per_s, 0, phases.end, client));
        let next = Arc::new(AtomicU64::new(0));
        let tc = TrialClock::start();
        let mut tasks = Vec::new();
        for worker in 0..p.drivers as u32 {
            let timeout = Duration::from_millis(p.timeout_ms);
            let mut pc = PolicyClient::new(self.strategy.clone(), proxy.listen, timeout, policy);
            let (arrivals, next) = (arrivals.clone(), next.clone());
            tasks.push(tokio::spawn(async move {
                let mut evs = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed) as usize;
                    let Some(a) = arrivals.get(i) else { break };
                    schedule::wait_until(tc.at(a.at_us)).await;
                    let sent_us = tc.us();
                    let req = Request::now(&a.client, limit);
                    let o = pc.decide(&req).await;
                    evs.push(Ev {
                        worker,
                        intended_us: a.at_us,
                        sent_us,
                        replied_us: tc.us(),
                        o,
                    });
                }
                (evs, pc.misses)
            }));
        }
        tokio::time::sleep_until(tc.at(phases.slow).into()).await;
        proxy.set_one_way(Duration::from_secs_f64(p.slow_one_way_ms / 1e3));
        tokio::time::sleep_until(tc.at(phases.gone).into()).await;
        proxy.set_one_way(Duration::ZERO);
        self.fleet.servers[0].kill();
        tokio::time::sleep_until(tc.at(phases.back).into()).await;
        let back_at_us = tc.us();
        self.fleet.servers[0].start_again().await?;
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
        Ok(Drive {
            evs,
            misses,
            back_at_us,
            ready_us,
        })
    }
}

/// One row per `bin_ms` bin (by intended time): who decided, what was
/// admitted, the latency.
fn bin_rows(p: &Params, evs: &[Ev], template: &BinRow) -> Vec<BinRow> {
    let phases = Phases::of(p);
    let bin_us = (p.bin_ms * 1000) as i64;
    let n_bins = ((phases.end + bin_us - 1) / bin_us) as usize;
    let limit_per_bin = p.limit_per_s as f64 * p.bin_ms as f64 / 1000.0;
    let late_us = (p.timeout_ms as f64 + p.late_margin_ms.unwrap_or(20.0)) * 1e3;
    let mut rows: Vec<BinRow> = (0..n_bins)
        .map(|b| BinRow {
            bin: b as u64,
            t_start_s: (b as i64 * bin_us) as f64 / 1e6,
            phase: phases.at(b as i64 * bin_us).into(),
            limit_per_bin,
            ..template.clone()
        })
        .collect();
    let mut lat: Vec<Vec<f64>> = vec![Vec::new(); n_bins];
    for e in evs {
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
        r.late_misses += (!e.o.by_redis && (e.replied_us - e.sent_us) as f64 > late_us) as u64;
        r.errors += e.o.error.is_some() as u64;
        r.admitted += e.o.admitted as u64;
        lat[b].push((e.replied_us - e.sent_us) as f64 / 1e3);
    }
    for (r, l) in rows.iter_mut().zip(lat.iter()) {
        r.over_limit = (r.admitted as f64 - r.limit_per_bin).max(0.0);
        r.latency_p50_ms = median(l);
        r.latency_max_ms = l.iter().copied().fold(f64::NAN, f64::max);
    }
    rows
}

/// Every decision of the trial as `<experiment>-history.csv` keeps it:
/// intended (the schedule), sent and replied times. A policy's own answer
/// (a deadline's miss, an error it turned into admit or refuse) is a
/// decision the caller got, so no row is an `error`: the history holds
/// what `fail-open-latency.csv` counts, each decision once.
fn history_rows(cell: &str, trial: u64, evs: &[Ev]) -> Vec<HistoryRow> {
    evs.iter()
        .map(|e| HistoryRow {
            cell: cell.to_string(),
            trial,
            worker: e.worker,
            intended_us: e.intended_us,
            sent_us: e.sent_us,
            replied_us: e.replied_us,
            redis_time_us: None,
            admitted: e.o.admitted,
            error: false,
        })
        .collect()
}

/// The trial's outage (slow + gone) totals and its recovery times; the
/// round trips are filled in by the caller.
fn summary_row(p: &Params, d: &Drive, template: SummaryRow) -> SummaryRow {
    let phases = Phases::of(p);
    let outage: Vec<&Ev> = d
        .evs
        .iter()
        .filter(|e| e.intended_us >= phases.slow && e.intended_us < phases.back)
        .collect();
    let outage_admitted = outage.iter().filter(|e| e.o.admitted).count() as u64;
    let outage_limit = p.limit_per_s as f64 * (p.slow_s + p.gone_s);
    let recover_ms = d
        .evs
        .iter()
        .filter(|e| e.sent_us >= d.back_at_us && e.o.by_redis)
        .map(|e| e.replied_us)
        .min()
        .map(|t| (t - d.back_at_us) as f64 / 1e3)
        .unwrap_or(f64::NAN);
    SummaryRow {
        offered_per_s: p.offered_per_s,
        limit_per_s: p.limit_per_s,
        timeout_ms: p.timeout_ms,
        slow_start_s: phases.slow as f64 / 1e6,
        gone_start_s: phases.gone as f64 / 1e6,
        back_start_s: phases.back as f64 / 1e6,
        end_s: phases.end as f64 / 1e6,
        server_ready_ms: (d.ready_us - d.back_at_us) as f64 / 1e3,
        recover_ms,
        outage_offered: outage.len() as u64,
        outage_admitted,
        outage_limit,
        outage_over_limit: (outage_admitted as f64 - outage_limit).max(0.0),
        misses: d.misses,
        decisions: d.evs.len() as u64,
        ..template
    }
}

impl Sweep for FailOpen {
    type Cell = Policy;
    type Setup = ();
    type Row = BinRow;
    type Side = SummaryRow;
    const SIDE: Option<&'static str> = Some("summary");
    const TIMED: bool = true;
    const HISTORY: bool = true;

    fn cell_id(&self, policy: &Policy) -> String {
        policy.as_str().to_string()
    }

    fn trials(&self, _policy: &Policy) -> u64 {
        self.p.trials
    }

    async fn setup(&mut self, _ctx: &RunContext, _policy: &Policy) -> Result<()> {
        Ok(())
    }

    async fn trial(
        &mut self,
        ctx: &RunContext,
        policy: &Policy,
        _setup: &mut (),
        trial: u64,
    ) -> Result<TrialRows<BinRow, SummaryRow>> {
        let cell = self.cell_id(policy);
        // Every trial ends with the server started again; make sure anyway.
        if !self.fleet.servers[0].is_running() {
            self.fleet.servers[0].start_again().await?;
        }
        // The previous trial's restart emptied the server (no RDB): load the scripts again.
        self.fleet.prepare(self.strategy.as_ref()).await?;
        let proxy = DelayProxy::start(self.fleet.primary_addr())?;
        let normal_rtt = proxy.measure_rtt(50).await?;
        proxy.set_one_way(Duration::from_secs_f64(self.p.slow_one_way_ms / 1e3));
        let slow_rtt = proxy.measure_rtt(3).await?;
        proxy.set_one_way(Duration::ZERO);
        let client = unique_client("fo", &cell, trial);
        let drive = self.drive(*policy, &proxy, &client).await?;
        let bins = bin_rows(
            &self.p,
            &drive.evs,
            &BinRow {
                cell: cell.clone(),
                trial,
                seed: ctx.seed,
                policy: policy.as_str().into(),
                ..Default::default()
            },
        );
        let summary = summary_row(
            &self.p,
            &drive,
            SummaryRow {
                cell,
                trial,
                seed: ctx.seed,
                policy: policy.as_str().into(),
                strategy: self.strategy.info().name.clone(),
                normal_rtt_ms: normal_rtt.rtt_median_us / 1e3,
                slow_rtt_ms: slow_rtt.rtt_median_us / 1e3,
                ..Default::default()
            },
        );
        // Latency as the caller saw it, fail-open timeouts included.
        let mut h = limitbench_base::hdr::new_histogram();
        for e in &drive.evs {
            h.saturating_record((e.replied_us - e.sent_us).max(1) as u64);
        }
        let lat = latency::row(&self.cell_id(policy), trial, &self.strategy.info().name, &h)?;
        let history = history_rows(&self.cell_id(policy), trial, &drive.evs);
        Ok(TrialRows::with_side(bins, vec![summary])
            .with_latency(lat)
            .with_history(history))
    }
}

pub async fn run(ctx: &RunContext) -> Result<()> {
    let p: Params = ctx.params()?;
    ctx.note("params", serde_json::to_value(&p).unwrap())?;
    let cells = p
        .policies
        .iter()
        .map(|s| Policy::parse(s))
        .collect::<Result<Vec<_>>>()?;
    let fleet = Fleet::standalone(ctx.binary()?, ServerConfig::default()).await?;
    ctx.note_fleet("fleet", &fleet).await?;
    // The policy sits in front of one strategy: `--strategy` picks it.
    let name = ctx.strategies(std::slice::from_ref(&p.strategy)).remove(0);
    let strategy = ctx.build_strategy(&name, &Options::default())?;
    sweep::run(ctx, &mut FailOpen { p, fleet, strategy }, &cells).await
}
