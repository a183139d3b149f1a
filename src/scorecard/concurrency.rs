//! Exact under concurrency: 64 workers, each on its own connection, released
//! together on one fresh key with a limit of 100 per hour, offering 300
//! decisions; admitted vs the limit. At 0 ms (straight to Redis) and at
//! 6.7 ms round trips through the calibrated delay proxy
//! (`experiments::testbed::RoundTrip`), where a racy design over-admits most.

use std::time::Duration;

use super::{Bench, Outcome, Verdict};
use crate::clock::Clock;
use crate::error::Result;
use crate::experiments::testbed;
use crate::load::closed_loop;
use crate::proxy::DelayProxy;
use crate::strategy::Limit;

pub const WORKERS: usize = 64;
pub const LIMIT: u64 = 100;
pub const OFFERED: u64 = 300;

pub async fn exact(b: &Bench<'_>, rtt_ms: f64) -> Result<Outcome> {
    // Through a delay proxy calibrated to the round trip (as
    // `testbed::RoundTrip`), built here so that connections through it
    // authenticate as those to the server do (`--redis-url` with a password).
    let (addr, calibration, _proxy) = if rtt_ms <= 0.0 {
        (b.addr(), testbed::measure_rtt(b.addr(), 20).await?, None)
    } else {
        let p = DelayProxy::start(b.addr())?;
        crate::resp::inherit_auth(&b.addr(), p.listen);
        let cal = p
            .calibrate(Duration::from_secs_f64(rtt_ms / 1000.0), 20)
            .await?;
        (p.listen, cal, Some(p))
    };
    let clocks = vec![Clock::default(); WORKERS];
    let drivers = testbed::drivers(addr, &b.strategy, &clocks).await?;
    let client = b.client(&format!("exact{}", testbed::ms_label(rtt_ms)));
    let limit = Limit::per_window(LIMIT, 3_600_000);
    let (events, _, _) = closed_loop(
        drivers,
        &client,
        limit,
        1,
        OFFERED,
        Some(Duration::from_secs(60)),
    )
    .await?;
    let admitted = events.iter().filter(|e| e.admitted).count() as u64;
    let errors: Vec<&String> = events.iter().filter_map(|e| e.error.as_ref()).collect();
    let aborts: u32 = events.iter().map(|e| e.aborts).sum();
    let exhausted = events.iter().filter(|e| e.retries_exhausted).count();
    let ratio = admitted as f64 / LIMIT as f64;
    let detail = format!(
        "limit {LIMIT}, {WORKERS} workers, {OFFERED} offered, round trip {:.2} ms (median PING): {admitted} admitted, {} errors{}, {aborts} WATCH aborts, {exhausted} refused for retries exhausted",
        calibration.rtt_median_us / 1000.0,
        errors.len(),
        errors
            .first()
            .map(|e| format!(" (first: {e})"))
            .unwrap_or_default(),
    );
    let verdict = if admitted > LIMIT {
        Verdict::Fail
    } else if admitted == LIMIT && errors.is_empty() {
        Verdict::Pass
    } else {
        Verdict::Warn
    };
    Ok(Outcome::Measured {
        value: ratio,
        unit: "x limit",
        threshold: "pass = 1 (exactly the limit); warn < 1 (under-admits or errors); fail > 1"
            .into(),
        verdict,
        detail,
    })
}
