//! The testbed of study A's experiments (`concurrency`, `retries`,
//! `bursts`, `skew`): what they build or wait for around their trials. The
//! one server, the strategy's scripts on it, a round trip calibrated
//! through the delay proxy, a pool of drivers, a window boundary out of the
//! way, and Redis's clock offset.
//!
//! It lives in `experiments/`, not in `load/`, because it works with the
//! run: the server comes from the `RunContext` and every calibration is
//! written to the run's manifest, while `load/` only sends decisions and
//! records events. Most of it is what an experiment's `Sweep::setup` builds
//! for a cell.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use super::RunContext;
use limitbench_base::error::{Error, Result};
use limitbench_core::clock::Clock;
use limitbench_core::conn::Conn;
use limitbench_core::fleet::{Fleet, ServerConfig};
use limitbench_core::load::Driver;
use limitbench_core::proxy::{DelayProxy, RttStats};
use limitbench_core::strategy::Strategy;

/// The one server of a study-A experiment (or the external one), optionally
/// pinned to the CPU at position `pin_cpu` (`pin_redis_cpu`) of those the
/// harness was allowed when it started (`RunContext::resolve_cpus`).
pub async fn server(ctx: &RunContext, pin_cpu: Option<usize>) -> Result<Fleet> {
    let mut cfg = ServerConfig::default();
    if let Some(position) = pin_cpu {
        cfg = cfg.pinned(ctx.resolve_cpus(&[("pin_redis_cpu", position)])?[0]);
    }
    let fleet = ctx.standalone(cfg).await?;
    ctx.note_fleet("server", &fleet).await?;
    Ok(fleet)
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

/// `n` drivers of `s`, each on its own connection from `fleet` (a cluster
/// client on a cluster), on our clock.
pub async fn fleet_drivers(fleet: &Fleet, s: &Arc<dyn Strategy>, n: usize) -> Result<Vec<Driver>> {
    let mut v = Vec::with_capacity(n);
    for w in 0..n {
        v.push(Driver::new(
            w as u32,
            s.clone(),
            fleet.conn().await?,
            Clock::default(),
        ));
    }
    Ok(v)
}

/// The first window boundary (Redis's clock, `offset_us` ahead of ours) at
/// least `ahead_us` from now, on the trial clock `tc`.
pub fn next_boundary(
    tc: &limitbench_core::load::TrialClock,
    offset_us: i64,
    window_ms: u64,
    ahead_us: i64,
) -> i64 {
    let w = window_ms as i64 * 1000;
    let redis_now = Clock::system_now_us() + offset_us;
    let b = (redis_now + ahead_us).div_euclid(w) * w + w;
    b - offset_us - tc.start_unix_us
}

/// Order cells by (round trip, jitter), the key `rtt` gives: one proxy per
/// pair then serves consecutive cells ([`RoundTrips`]).
pub fn by_round_trip<C>(cells: &mut [C], rtt: impl Fn(&C) -> (f64, f64)) {
    cells.sort_by(|a, b| rtt(a).partial_cmp(&rtt(b)).unwrap());
}

/// Where workers connect for a given round trip: straight to Redis for 0,
/// else through a delay proxy calibrated once for that target.
pub struct RoundTrip {
    pub target_ms: f64,
    /// Width of the proxy's uniform per-chunk extra delay, per direction.
    pub jitter_ms: f64,
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
        ctx: &RunContext,
        redis: SocketAddr,
        target_ms: f64,
        calibrate_samples: u32,
    ) -> Result<&RoundTrip> {
        self.get_jittered(ctx, redis, target_ms, 0.0, calibrate_samples)
            .await
    }

    /// As [`RoundTrips::get`], with `jitter_ms` of uniform extra delay per
    /// chunk and direction (see `proxy`); a (target, jitter) pair is one proxy.
    pub async fn get_jittered(
        &mut self,
        ctx: &RunContext,
        redis: SocketAddr,
        target_ms: f64,
        jitter_ms: f64,
        calibrate_samples: u32,
    ) -> Result<&RoundTrip> {
        if self.current.as_ref().map(|r| (r.target_ms, r.jitter_ms)) != Some((target_ms, jitter_ms))
        {
            drop(self.current.take());
            let r = RoundTrip::jittered(redis, target_ms, jitter_ms, calibrate_samples).await?;
            let label = if jitter_ms > 0.0 {
                format!("{}+jitter{}", ms_label(target_ms), ms_label(jitter_ms))
            } else {
                ms_label(target_ms)
            };
            self.calibrations.insert(
                label,
                serde_json::json!({"calibration": r.calibration, "one_way_us": r.one_way_us(), "jitter_ms": jitter_ms}),
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
        Self::jittered(redis, target_ms, 0.0, calibrate_samples).await
    }

    /// A round trip of `target_ms` (median) whose packets get a uniform extra
    /// delay in [0, `jitter_ms`] per direction; jitter needs a proxy, so it
    /// needs a target above 0.
    pub async fn jittered(
        redis: SocketAddr,
        target_ms: f64,
        jitter_ms: f64,
        calibrate_samples: u32,
    ) -> Result<Self> {
        if jitter_ms > 0.0 && target_ms <= 0.0 {
            return Err(Error::Other(
                "round-trip jitter needs an added round trip (the delay proxy)".into(),
            ));
        }
        if target_ms <= 0.0 {
            let calibration = measure_rtt(redis, calibrate_samples).await?;
            return Ok(RoundTrip {
                target_ms,
                jitter_ms,
                addr: redis,
                proxy: None,
                calibration,
            });
        }
        let proxy = DelayProxy::start(redis)?;
        // Connections through the proxy authenticate as those to the
        // server do (a `--redis-url` with a password).
        limitbench_core::resp::inherit_auth(&redis, proxy.listen);
        proxy.set_jitter(Duration::from_secs_f64(jitter_ms / 1000.0));
        let calibration = proxy
            .calibrate(
                Duration::from_secs_f64(target_ms / 1000.0),
                calibrate_samples,
            )
            .await?;
        Ok(RoundTrip {
            target_ms,
            jitter_ms,
            addr: proxy.listen,
            proxy: Some(proxy),
            calibration,
        })
    }

    /// The PING round trip workers get now (measured, one connection).
    pub async fn measure(&self, samples: u32) -> Result<RttStats> {
        measure_rtt(self.addr, samples).await
    }

    /// A cell's workers: `s` prepared on `fleet`, one driver per worker
    /// through this round trip, then the round trip measured over `samples`.
    pub async fn cell_drivers(
        &self,
        fleet: &Fleet,
        s: &Arc<dyn Strategy>,
        workers: usize,
        samples: u32,
    ) -> Result<(Vec<Driver>, RttStats)> {
        fleet.prepare(s.as_ref()).await?;
        let drivers = drivers(self.addr, s, &vec![Clock::default(); workers]).await?;
        Ok((drivers, self.measure(samples).await?))
    }

    pub fn one_way_us(&self) -> f64 {
        self.proxy
            .as_ref()
            .map(|p| p.one_way().as_secs_f64() * 1e6)
            .unwrap_or(0.0)
    }
}

use limitbench_core::proxy::measure_rtt;

/// If a window of `window_ms` (on our clock) ends within `margin`, wait until
/// it has rolled over, so that a trial never straddles a window boundary by
/// accident (the concurrency and retries trials assume one window).
pub async fn clear_of_boundary(window_ms: u64, margin: Duration) {
    let w = window_ms as i64 * 1000;
    let now = Clock::system_now_us();
    let left = w - now.rem_euclid(w);
    if left < margin.as_micros() as i64 {
        tokio::time::sleep(Duration::from_micros(left as u64 + 2000)).await;
    }
}

/// How many TIME round trips [`redis_clock_offset`] takes the best of.
const OFFSET_SAMPLES: usize = 7;

/// Redis's clock minus ours (us), from TIME at the middle of a round trip:
/// of [`OFFSET_SAMPLES`] round trips, the one that took least, as NTP
/// filters its samples. The middle of one round trip is off by up to half
/// of it when its two legs take different times; a loaded machine can make
/// one round trip take milliseconds, and a boundary mapped with such an
/// offset puts a burst meant 1 ms after Redis's window edge before the
/// caller's (the straddle pattern on a caller-clock window).
pub async fn redis_clock_offset(conn: &mut Conn) -> Result<i64> {
    let mut best: Option<(i64, i64)> = None;
    for _ in 0..OFFSET_SAMPLES {
        let before = Clock::system_now_us();
        let r = conn.call("", &limitbench_core::args!["TIME"]).await?;
        let after = Clock::system_now_us();
        let parts = r
            .into_array()
            .ok_or_else(|| Error::Protocol("TIME did not reply an array".into()))?;
        let secs = parts.first().and_then(|p| p.as_i64()).unwrap_or(0);
        let micros = parts.get(1).and_then(|p| p.as_i64()).unwrap_or(0);
        let offset = secs * 1_000_000 + micros - (before + after) / 2;
        let rtt = after - before;
        if best.is_none_or(|(r, _)| rtt < r) {
            best = Some((rtt, offset));
        }
    }
    Ok(best.map(|(_, o)| o).unwrap_or(0))
}

/// A number of milliseconds (or a load factor) as a short label for cell
/// ids and calibration keys (`6.7`, `0`): cell ids must not change between
/// runs, or a resumed run would not find its trials.
pub fn ms_label(ms: f64) -> String {
    let s = format!("{ms:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ms_labels_are_short_and_stable() {
        assert_eq!(ms_label(0.0), "0");
        assert_eq!(ms_label(6.7), "6.7");
        assert_eq!(ms_label(10.0), "10");
        assert_eq!(ms_label(0.25), "0.25");
        assert_eq!(ms_label(1.0 / 3.0), "0.333");
    }
}
