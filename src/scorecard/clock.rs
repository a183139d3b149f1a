//! Clock: how far the strategy drifts from the ideal token bucket when the
//! callers' clocks disagree. Four callers (servers) with clocks spread evenly
//! over +/-S send open-loop arrivals round-robin at 3x the refill rate of a
//! bucket of 50 refilling 50/s; the ideal bucket (`analysis::window::
//! ideal_bucket`) is computed from the recorded send times. The value is the
//! admitted % of ideal at +/-S minus the same at no skew, in points: a design
//! that differs from a bucket (a fixed window) is compared with itself, so
//! only the clock's effect is left; each run starts at the same phase of a
//! 1 s window of Redis's clock, so a windowed design's result does not
//! move with the phase. A strategy on Redis's clock should show
//! none; the detail states which clock it runs on (`Info::clock`).

use std::sync::Arc;

use super::{Bench, Outcome};
use crate::analysis::window::ideal_bucket;
use crate::clock::Clock;
use crate::error::Result;
use crate::experiments::testbed;
use crate::load::TrialClock;
use crate::load::dispatch::{Assign, open_loop_on};
use crate::load::schedule;
use crate::run::Size;
use crate::strategy::Limit;

const SERVERS: usize = 4;
const CAPACITY: u64 = 50;
const RATE: f64 = 50.0;
const LOAD_X: f64 = 3.0;

/// (property, skew in ms).
pub const SKEWS: [(&str, i64); 3] = [("clock-10ms", 10), ("clock-100ms", 100), ("clock-1s", 1000)];

/// One run at +/-`skew_ms`: (admitted, ideal, errors).
async fn once(b: &Bench<'_>, skew_ms: i64, duration_ms: i64) -> Result<(u64, u64, usize)> {
    let clocks = Clock::spread(SERVERS, skew_ms * 1000);
    let drivers = testbed::drivers(b.addr(), &b.strategy, &clocks).await?;
    let client = b.client(&format!("skew{skew_ms}"));
    let mut conn = b.fleet.conn().await?;
    let offset = testbed::redis_clock_offset(&mut conn).await?;
    drop(conn);
    let tc = TrialClock::start();
    // Every run starts 20 ms after a boundary of Redis's clock (of the
    // bucket's 1 s "window"), so a windowed design sees the same phase in
    // the skewed run and in the baseline: the difference is the skew's.
    let window_ms = (CAPACITY as f64 * 1000.0 / RATE) as u64;
    let start = crate::experiments::testbed::next_boundary(&tc, offset, window_ms, 20_000) + 20_000;
    let a = schedule::steady(RATE * LOAD_X, start, duration_ms * 1000, &client);
    let assign: Vec<u32> = (0..a.len()).map(|k| (k % SERVERS) as u32).collect();
    let (events, _) = open_loop_on(
        drivers,
        Arc::new(a),
        Assign::Fixed(Arc::new(assign)),
        Limit::bucket(CAPACITY, RATE),
        tc,
    )
    .await?;
    let errors = events.iter().filter(|e| e.error.is_some()).count();
    let mut sent: Vec<i64> = events
        .iter()
        .filter(|e| e.error.is_none())
        .map(|e| e.sent_us)
        .collect();
    sent.sort_unstable();
    let ideal = ideal_bucket(&sent, CAPACITY as f64, RATE);
    let admitted = events.iter().filter(|e| e.admitted).count() as u64;
    Ok((admitted, ideal, errors))
}

/// Every clock property: the skews this size runs, and the rest `not-run`.
pub async fn drift(b: &Bench<'_>) -> Vec<(&'static str, Result<Outcome>)> {
    let duration_ms = match b.size() {
        Size::Smoke => 1000,
        Size::Quick => 2000,
        Size::Full => 4000,
    };
    let base = once(b, 0, duration_ms).await;
    let mut out = Vec::new();
    for (prop, skew) in SKEWS {
        if b.size() == Size::Smoke && skew != 1000 {
            out.push((prop, Ok(Outcome::NotRun("size smoke".into()))));
            continue;
        }
        let r = match &base {
            Err(e) => Err(crate::Error::Other(format!("unskewed baseline: {e}"))),
            Ok((a0, i0, e0)) => {
                let (a0, i0, e0) = (*a0, *i0, *e0);
                once(b, skew, duration_ms).await.map(|(a, i, e)| {
                let pct = |a: u64, i: u64| 100.0 * a as f64 / i.max(1) as f64;
                let drift = pct(a, i) - pct(a0, i0);
                Outcome::at_most(
                    drift.abs(),
                    "points",
                    2.0,
                    5.0,
                    format!(
                        "clock {} (Info.clock); bucket {CAPACITY} refilling {RATE}/s, {SERVERS} callers at +/-{skew} ms, {LOAD_X}x the rate for {duration_ms} ms: admitted {a} of ideal {i} ({:.1} %), unskewed {a0} of {i0} ({:.1} %): {:+.1} points; {} errors",
                        b.strategy.info().clock.as_str(),
                        pct(a, i),
                        pct(a0, i0),
                        drift,
                        e + e0
                    ),
                )
            })
            }
        };
        out.push((prop, r));
    }
    out
}
