//! Load: the wrapper that owns clocks, timing and counting (YCSB's DBWrapper),
//! closed-loop workers behind a barrier, and open-loop arrival schedules.
//!
//! A strategy only issues Redis calls. `Driver::decide` stamps the intended,
//! sent and replied times on one trial clock (`TrialClock`), counts round
//! trips on the connection, and turns the outcome into an `Event`: one row of
//! admission history from which any window metric can be recomputed later.

pub mod counts;
pub mod dispatch;
pub mod replay;
pub mod schedule;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::clock::Clock;
use crate::conn::Conn;
use crate::strategy::{Limit, Request, Strategy};
use limitbench_base::error::Result;

/// Request ids are the strategy layer's (a [`Request`] carries one); the
/// load side only draws them.
pub use crate::strategy::next_request_id;

/// One monotonic clock per trial; times are microseconds since its start,
/// with the wall-clock time of the start kept to relate them to Redis's TIME.
#[derive(Debug, Clone, Copy)]
pub struct TrialClock {
    pub start: Instant,
    pub start_unix_us: i64,
}

impl TrialClock {
    pub fn start() -> Self {
        TrialClock {
            start: Instant::now(),
            start_unix_us: Clock::system_now_us(),
        }
    }
    pub fn us(&self) -> i64 {
        self.start.elapsed().as_micros() as i64
    }
    pub fn at(&self, us: i64) -> Instant {
        self.start + Duration::from_micros(us.max(0) as u64)
    }
}

/// One decision as recorded: the admission history's row.
#[derive(Debug, Clone, Serialize, Default)]
pub struct Event {
    pub worker: u32,
    pub request_id: u64,
    pub client: String,
    /// When the schedule wanted it sent (closed loop: when the worker was ready).
    pub intended_us: i64,
    pub sent_us: i64,
    pub replied_us: i64,
    pub admitted: bool,
    pub remaining: Option<i64>,
    /// Redis's TIME where the script returned it, relative to the trial
    /// start's wall clock (so comparable with `sent_us`).
    pub redis_time_us: Option<i64>,
    pub aborts: u32,
    pub retries_exhausted: bool,
    pub noscript_fallbacks: u32,
    pub round_trips: u32,
    pub error: Option<String>,
}

/// One worker: a strategy, its own connection, its own (possibly skewed) clock.
pub struct Driver {
    pub worker: u32,
    pub strategy: Arc<dyn Strategy>,
    pub conn: Conn,
    pub clock: Clock,
}

impl Driver {
    pub fn new(worker: u32, strategy: Arc<dyn Strategy>, conn: Conn, clock: Clock) -> Self {
        Driver {
            worker,
            strategy,
            conn,
            clock,
        }
    }

    /// Make one decision and record it. Errors become events with `error` set
    /// (the load goes on; the caller decides what an error means).
    pub async fn decide(
        &mut self,
        tc: &TrialClock,
        client: &str,
        limit: Limit,
        cost: u64,
        intended_us: i64,
    ) -> Event {
        let request_id = next_request_id();
        let rt0 = self.conn.round_trips();
        let sent_us = tc.us();
        let req = Request {
            client,
            limit,
            cost,
            now_us: self.clock.now_us(),
            request_id,
        };
        let out = self.strategy.decide(&mut self.conn, &req).await;
        let replied_us = tc.us();
        let round_trips = (self.conn.round_trips() - rt0) as u32;
        let mut ev = Event {
            worker: self.worker,
            request_id,
            client: client.to_string(),
            intended_us,
            sent_us,
            replied_us,
            round_trips,
            ..Default::default()
        };
        match out {
            Ok(d) => {
                ev.admitted = d.admitted;
                ev.remaining = d.remaining;
                ev.redis_time_us = d.redis_time_us.map(|t| t - tc.start_unix_us);
                ev.aborts = d.aborts;
                ev.retries_exhausted = d.retries_exhausted;
                ev.noscript_fallbacks = d.noscript_fallbacks;
            }
            Err(e) => ev.error = Some(e.to_string()),
        }
        ev
    }
}

/// Closed loop: every driver, released together by a barrier, sends
/// decisions back to back on `client` until `offered` decisions have been
/// claimed in all (or `duration` has passed, if given).
pub async fn closed_loop(
    drivers: Vec<Driver>,
    client: &str,
    limit: Limit,
    cost: u64,
    offered: u64,
    duration: Option<Duration>,
) -> Result<(Vec<Event>, TrialClock, Vec<Driver>)> {
    let n = drivers.len();
    let barrier = Arc::new(tokio::sync::Barrier::new(n + 1));
    let claimed = Arc::new(AtomicU64::new(0));
    let tc_cell = Arc::new(std::sync::OnceLock::<TrialClock>::new());
    let mut tasks = Vec::with_capacity(n);
    for mut d in drivers {
        let (barrier, claimed, tc_cell, client) = (
            barrier.clone(),
            claimed.clone(),
            tc_cell.clone(),
            client.to_string(),
        );
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            let tc = *tc_cell.get().expect("trial clock set before release");
            let mut events = Vec::new();
            while claimed.fetch_add(1, Ordering::Relaxed) < offered {
                if duration.is_some_and(|dur| tc.start.elapsed() >= dur) {
                    break;
                }
                let intended = tc.us();
                events.push(d.decide(&tc, &client, limit, cost, intended).await);
            }
            (events, d)
        }));
    }
    let tc = TrialClock::start();
    let _ = tc_cell.set(tc);
    barrier.wait().await;
    let (mut all, back) = join_workers(tasks).await?;
    all.sort_by_key(|e| (e.sent_us, e.worker));
    Ok((all, tc, back))
}

/// Open loop: `arrivals` (sorted by time, relative to a trial clock started
/// now) are sent at their times whatever the replies do. A pool of drivers
/// claims arrivals in order; each waits for its arrival's time with
/// `schedule::wait_until` (sub-millisecond precise) and sends. With enough
/// drivers every arrival leaves on time; the events record `intended_us` and
/// `sent_us`, so the achieved schedule is measured, not assumed. To place a
/// schedule against an outside clock (Redis's window boundary), make the
/// trial clock first and use `dispatch::open_loop_on`.
pub async fn open_loop(
    drivers: Vec<Driver>,
    arrivals: Arc<Vec<schedule::Arrival>>,
    limit: Limit,
) -> Result<(Vec<Event>, TrialClock, Vec<Driver>)> {
    let tc = TrialClock::start();
    let (events, back) =
        dispatch::open_loop_on(drivers, arrivals, dispatch::Assign::Pool, limit, tc).await?;
    Ok((events, tc, back))
}

/// Wait for every worker task; their events merged, their drivers back.
pub(crate) async fn join_workers(
    tasks: Vec<tokio::task::JoinHandle<(Vec<Event>, Driver)>>,
) -> Result<(Vec<Event>, Vec<Driver>)> {
    let mut all = Vec::new();
    let mut back = Vec::with_capacity(tasks.len());
    for t in tasks {
        let (ev, d) = t
            .await
            .map_err(|e| limitbench_base::Error::Other(format!("worker task failed: {e}")))?;
        all.extend(ev);
        back.push(d);
    }
    Ok((all, back))
}
