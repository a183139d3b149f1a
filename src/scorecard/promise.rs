//! The promise, "at most L per window": the most admitted in any sliding
//! window of one window length (`analysis::window::max_in_window`, exact
//! over the admission times) divided by L, for three open-loop patterns
//! (the `bursts` experiment's, one variant each):
//!
//! - `straddle`: L arrivals 50 ms (of a 1 s window) before a boundary of
//!   Redis's clock and L 1 ms after it;
//! - `quiet-burst`: one window at the limit, one window of silence, then a
//!   flood at 3x the limit for 1.2 windows, starting mid-window;
//! - `burst-sustained`: L at once mid-window, then steady traffic at the
//!   limit for 2 windows.
//!
//! Admission times are Redis's clock when the strategy reports it on every
//! admitted decision (`Info::reports_redis_time`), else reply times; the
//! detail says which. The bucket designs (capacity L, refill L per window)
//! are measured against the same promise and may exceed it: that is the
//! finding, not a fault of the measurement.

use std::sync::Arc;

use super::{Bench, Outcome};
use crate::analysis::window::max_in_window as most_in_window;
use crate::clock::Clock;
use crate::error::Result;
use crate::experiments::testbed;
use crate::load::TrialClock;
use crate::load::dispatch::{Assign, open_loop_on};
use crate::load::schedule::{self, Arrival};
use crate::run::Size;
use crate::strategy::Limit;

pub const PATTERNS: [&str; 3] = ["straddle", "quiet-burst", "burst-sustained"];

/// Limit and window (ms) by size: a shorter window at smoke.
fn limit_window(size: Size) -> (u64, u64) {
    match size {
        Size::Smoke => (20, 500),
        _ => (50, 1000),
    }
}

fn arrivals(
    pattern: &str,
    l: u64,
    window_ms: u64,
    tc: &TrialClock,
    offset_us: i64,
) -> Vec<Arrival> {
    let w = window_ms as i64 * 1000;
    let per_s = l as f64 * 1000.0 / window_ms as f64;
    match pattern {
        "straddle" => {
            let lead = w / 20;
            let b = testbed::next_boundary(tc, offset_us, window_ms, lead + 100_000);
            schedule::merge(vec![
                schedule::burst(l, b - lead, 0, ""),
                schedule::burst(l, b + 1000, 0, ""),
            ])
        }
        "quiet-burst" => {
            let start = tc.us() + 50_000;
            let warm = schedule::steady(per_s, start, w, "");
            let b = testbed::next_boundary(tc, offset_us, window_ms, 2 * w + 50_000);
            let flood = schedule::steady(per_s * 3.0, b + w / 2, w * 6 / 5, "");
            schedule::merge(vec![warm, flood])
        }
        _ => {
            let b = testbed::next_boundary(tc, offset_us, window_ms, 50_000);
            let at = b + w / 2;
            let gap = (1e6 / per_s) as i64;
            schedule::merge(vec![
                schedule::burst(l, at, 0, ""),
                schedule::steady(per_s, at + gap, 2 * w, ""),
            ])
        }
    }
}

pub async fn max_in_window(b: &Bench<'_>, pattern: &str) -> Result<Outcome> {
    let (l, window_ms) = limit_window(b.size());
    let limit = Limit::per_window(l, window_ms);
    let client = b.client(pattern);
    let mut conn = b.fleet.conn().await?;
    let offset = testbed::redis_clock_offset(&mut conn).await?;
    drop(conn);
    let drivers = testbed::drivers(b.addr(), &b.strategy, &[Clock::default(); 16]).await?;
    let tc = TrialClock::start();
    let a: Vec<Arrival> =
        schedule::for_client(&arrivals(pattern, l, window_ms, &tc, offset), &client);
    let offered = a.len();
    let (events, _) = open_loop_on(drivers, Arc::new(a), Assign::Pool, limit, tc).await?;
    let errors = events.iter().filter(|e| e.error.is_some()).count();
    let admitted: Vec<_> = events.iter().filter(|e| e.admitted).collect();
    let redis =
        b.strategy.info().reports_redis_time && admitted.iter().all(|e| e.redis_time_us.is_some());
    let mut times: Vec<i64> = admitted
        .iter()
        .map(|e| {
            if redis {
                e.redis_time_us.unwrap()
            } else {
                e.replied_us
            }
        })
        .collect();
    times.sort_unstable();
    let (most, _) = most_in_window(&times, window_ms as i64 * 1000);
    let late_max = events
        .iter()
        .map(|e| e.sent_us - e.intended_us)
        .max()
        .unwrap_or(0);
    let ratio = most as f64 / l as f64;
    Ok(Outcome::at_most(
        ratio,
        "x limit",
        1.0,
        1.1,
        format!(
            "limit {l} per {window_ms} ms, {offered} offered, {} admitted, {errors} errors; most in any window {most} (times: {}); latest send {:.1} ms behind schedule",
            admitted.len(),
            if redis {
                "Redis's clock"
            } else {
                "reply times"
            },
            late_max as f64 / 1000.0
        ),
    ))
}
