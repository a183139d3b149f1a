//! Helpers shared by study A's four experiments (`concurrency`, `retries`,
//! `bursts`, `skew`): the server, round trips through the delay proxy, worker
//! connections, per-trial seeds and fresh client ids, the admission-history
//! side table, and the summary of a trial's events.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::RunContext;
use crate::clock::Clock;
use crate::conn::Conn;
use crate::error::{Error, Result};
use crate::fleet::{Fleet, ServerConfig};
use crate::load::{Driver, Event, TrialClock};
use crate::proxy::{DelayProxy, RttStats, rtt_stats};
use crate::resp::Connection;
use crate::strategy::Strategy;

/// The one server of a study-A experiment (or the external one), optionally pinned.
pub async fn server(ctx: &RunContext, pin_cpu: Option<usize>) -> Result<Fleet> {
    let mut cfg = ServerConfig::default();
    if let Some(c) = pin_cpu {
        cfg = cfg.pinned(c);
    }
    let fleet = ctx.standalone(cfg).await?;
    ctx.note_fleet("server", &fleet).await?;
    Ok(fleet)
}

/// Load a strategy's scripts on every node.
pub async fn prepare(fleet: &Fleet, s: &Arc<dyn Strategy>) -> Result<()> {
    for mut node in fleet.node_connections().await? {
        s.prepare(&mut node).await?;
    }
    Ok(())
}

/// Where workers connect for a given round trip: straight to Redis for 0,
/// else through a delay proxy calibrated once for that target.
pub struct RoundTrip {
    pub target_ms: f64,
    pub addr: SocketAddr,
    proxy: Option<DelayProxy>,
    pub calibration: RttStats,
}

/// One calibrated round trip at a time, for experiments whose cells are
/// ordered by round trip: a new target replaces the proxy (the old one goes
/// first) and every calibration is recorded in the manifest.
#[derive(Default)]
pub struct RoundTrips {
    current: Option<RoundTrip>,
    calibrations: serde_json::Map<String, serde_json::Value>,
}

impl RoundTrips {
    pub async fn get(
        &mut self,
        ctx: &crate::experiments::RunContext,
        redis: SocketAddr,
        target_ms: f64,
        calibrate_samples: u32,
    ) -> Result<&RoundTrip> {
        if self.current.as_ref().map(|r| r.target_ms) != Some(target_ms) {
            drop(self.current.take());
            let r = RoundTrip::new(redis, target_ms, calibrate_samples).await?;
            self.calibrations.insert(
                ms_label(target_ms),
                serde_json::json!({"calibration": r.calibration, "one_way_us": r.one_way_us()}),
            );
            ctx.note(
                "round_trips",
                serde_json::Value::Object(self.calibrations.clone()),
            )?;
            self.current = Some(r);
        }
        Ok(self.current.as_ref().expect("set above"))
    }
}

impl RoundTrip {
    pub async fn new(redis: SocketAddr, target_ms: f64, calibrate_samples: u32) -> Result<Self> {
        if target_ms <= 0.0 {
            let calibration = measure_rtt(redis, calibrate_samples).await?;
            return Ok(RoundTrip {
                target_ms,
                addr: redis,
                proxy: None,
                calibration,
            });
        }
        let proxy = DelayProxy::start(redis)?;
        let calibration = proxy
            .calibrate(
                Duration::from_secs_f64(target_ms / 1000.0),
                calibrate_samples,
            )
            .await?;
        Ok(RoundTrip {
            target_ms,
            addr: proxy.listen,
            proxy: Some(proxy),
            calibration,
        })
    }

    /// The PING round trip workers get now (measured, one connection).
    pub async fn measure(&self, samples: u32) -> Result<RttStats> {
        measure_rtt(self.addr, samples).await
    }

    pub fn one_way_us(&self) -> f64 {
        self.proxy
            .as_ref()
            .map(|p| p.one_way().as_secs_f64() * 1e6)
            .unwrap_or(0.0)
    }
}

/// PING `samples` times on one new connection to `addr`.
pub async fn measure_rtt(addr: SocketAddr, samples: u32) -> Result<RttStats> {
    let mut c = Connection::connect(addr).await?;
    c.call(&crate::args!["PING"]).await?;
    let mut v = Vec::with_capacity(samples as usize);
    for _ in 0..samples.max(1) {
        let t = Instant::now();
        c.call(&crate::args!["PING"]).await?;
        v.push(t.elapsed().as_secs_f64() * 1e6);
    }
    Ok(rtt_stats(&mut v))
}

/// One driver per clock, each on its own connection to `addr`.
pub async fn drivers(
    addr: SocketAddr,
    s: &Arc<dyn Strategy>,
    clocks: &[Clock],
) -> Result<Vec<Driver>> {
    let mut v = Vec::with_capacity(clocks.len());
    for (i, c) in clocks.iter().enumerate() {
        let conn = Conn::connect(addr).await?;
        v.push(Driver::new(i as u32, s.clone(), conn, *c));
    }
    Ok(v)
}

/// A 64-bit FNV-1a hash: stable across runs and platforms (unlike `DefaultHasher`).
pub fn fnv(text: &str) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in text.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

/// The seed of one trial: the run's seed mixed with the cell and trial, so a
/// resumed run draws the same arrivals and clocks for the same trial.
pub fn trial_seed(run_seed: u64, cell: &str, trial: u64) -> u64 {
    fnv(&format!("{run_seed}/{cell}/{trial}"))
}

/// A client id (and so a key) nobody used before in this run.
pub fn fresh_client(experiment: &str, cell: &str, trial: u64) -> String {
    format!("{experiment}-{:012x}-{trial}", fnv(cell) & 0xffff_ffff_ffff)
}

/// Whether a strategy's design promises exactly the limit under concurrency:
/// atomic and without a known bug (check-then-act, the caller-clock bucket,
/// the timestamp-member log and the derived-key window are not counted).
pub fn atomic_design(s: &dyn Strategy) -> bool {
    s.info().atomic && s.info().known_bug.is_none()
}

/// Whether the `redis_time_us` a strategy returns is Redis's clock (the
/// caller-clock bucket returns the caller's time in that slot, and scripts
/// that read no clock return -1).
pub fn reports_redis_time(strategy: &str) -> bool {
    strategy != "token-bucket-caller-clock"
}

/// One decision of the admission history (`<experiment>-history.csv`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HistoryRow {
    pub cell: String,
    pub trial: u64,
    pub worker: u32,
    pub intended_us: i64,
    pub sent_us: i64,
    pub replied_us: i64,
    /// Redis's TIME at the decision, on the trial's time axis (us since the
    /// trial start), where the strategy's script reads and returns it.
    pub redis_time_us: Option<i64>,
    pub admitted: bool,
    pub error: bool,
}

pub fn history_rows(cell: &str, trial: u64, strategy: &str, events: &[Event]) -> Vec<HistoryRow> {
    let redis_clock = reports_redis_time(strategy);
    events
        .iter()
        .map(|e| HistoryRow {
            cell: cell.to_string(),
            trial,
            worker: e.worker,
            intended_us: e.intended_us,
            sent_us: e.sent_us,
            replied_us: e.replied_us,
            // A script that returns -1 ends up ~55 years before the trial.
            redis_time_us: e
                .redis_time_us
                .filter(|t| redis_clock && *t > -86_400_000_000),
            admitted: e.admitted && e.error.is_none(),
            error: e.error.is_some(),
        })
        .collect()
}

/// What a trial's events add up to.
#[derive(Debug, Clone, Default)]
pub struct Counts {
    pub offered: u64,
    pub admitted: u64,
    pub errors: u64,
    pub aborts: u64,
    pub retries_exhausted: u64,
    pub round_trips: u64,
    /// From the first send to the last reply, us.
    pub span_us: i64,
    pub first_error: Option<String>,
}

pub fn count(events: &[Event]) -> Counts {
    let mut c = Counts {
        offered: events.len() as u64,
        ..Default::default()
    };
    for e in events {
        if let Some(err) = &e.error {
            c.errors += 1;
            if c.first_error.is_none() {
                c.first_error = Some(err.clone());
            }
        } else if e.admitted {
            c.admitted += 1;
        }
        c.aborts += e.aborts as u64;
        c.retries_exhausted += e.retries_exhausted as u64;
        c.round_trips += e.round_trips as u64;
    }
    let first = events.iter().map(|e| e.sent_us).min().unwrap_or(0);
    let last = events.iter().map(|e| e.replied_us).max().unwrap_or(0);
    c.span_us = last - first;
    c
}

/// Redis's clock minus ours (us), from TIME at the middle of a round trip.
pub async fn redis_clock_offset(conn: &mut Conn) -> Result<i64> {
    let before = Clock::system_now_us();
    let r = conn.call("", &crate::args!["TIME"]).await?;
    let after = Clock::system_now_us();
    let parts = r
        .into_array()
        .ok_or_else(|| Error::Protocol("TIME did not reply an array".into()))?;
    let secs = parts.first().and_then(|p| p.as_i64()).unwrap_or(0);
    let micros = parts.get(1).and_then(|p| p.as_i64()).unwrap_or(0);
    Ok(secs * 1_000_000 + micros - (before + after) / 2)
}

/// A trial clock, for a schedule placed against Redis's windows.
pub fn trial_clock_now() -> TrialClock {
    TrialClock::start()
}

/// If a window of `window_ms` (on our clock) ends within `margin`, wait until
/// it has rolled over, so that a trial never straddles a window boundary by
/// accident (the concurrency trials assume one window).
pub async fn clear_of_boundary(window_ms: u64, margin: Duration) {
    let w = window_ms as i64 * 1000;
    let now = Clock::system_now_us();
    let left = w - now.rem_euclid(w);
    if left < margin.as_micros() as i64 {
        tokio::time::sleep(Duration::from_micros(left as u64 + 2000)).await;
    }
}

/// Milliseconds, as a short label for cell ids (`6.7`, `0`).
pub fn ms_label(ms: f64) -> String {
    let s = format!("{ms:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}
