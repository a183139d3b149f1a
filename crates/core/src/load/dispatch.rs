//! Open-loop dispatch on a trial clock the caller chose: which driver sends
//! which scheduled arrival, and when.
//!
//! `load::open_loop` starts its own trial clock when it releases the
//! drivers, so a schedule cannot be placed against something outside the
//! harness, such as Redis's next window boundary. Here the caller makes the
//! `TrialClock` first (and builds the arrivals relative to it), then says
//! how arrivals are dispatched to drivers:
//!
//! - `Assign::Pool`: any free driver takes the next arrival (a pool that
//!   keeps a burst on time);
//! - `Assign::Fixed`: arrival `k` goes to driver `assign[k]` (a load balancer
//!   that sent it to one server, whose clock the decision then uses); each
//!   driver sends its own arrivals in order.
//!
//! Either way every arrival is waited for with `schedule::wait_until` and the
//! events carry intended, sent and replied times, so lateness is measured.
//! (Not `open_loop.rs`: `load::open_loop` is the fn that starts the clock
//! itself and calls [`open_loop_on`] with `Assign::Pool`.)

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::schedule::{self, Arrival};
use super::{Driver, Event, TrialClock};
use crate::strategy::Limit;
use limitbench_base::error::{Error, Result};

/// Which driver sends an arrival.
pub enum Assign {
    /// The next free driver.
    Pool,
    /// Arrival `k` goes to driver `assign[k]`.
    Fixed(Arc<Vec<u32>>),
}

/// Send `arrivals` (sorted by `at_us`, relative to `tc`) through `drivers`.
/// Returns the events sorted by intended time, and the drivers back.
pub async fn open_loop_on(
    drivers: Vec<Driver>,
    arrivals: Arc<Vec<Arrival>>,
    assign: Assign,
    limit: Limit,
    tc: TrialClock,
) -> Result<(Vec<Event>, Vec<Driver>)> {
    let n = drivers.len();
    if let Assign::Fixed(a) = &assign
        && (a.len() != arrivals.len() || a.iter().any(|w| *w as usize >= n))
    {
        return Err(Error::Other(
            "open_loop_on: the assignment must name a driver for every arrival".into(),
        ));
    }
    let next = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::with_capacity(n);
    for (di, mut d) in drivers.into_iter().enumerate() {
        let (next, arrivals) = (next.clone(), arrivals.clone());
        let mine: Option<Vec<usize>> = match &assign {
            Assign::Pool => None,
            Assign::Fixed(a) => Some(
                a.iter()
                    .enumerate()
                    .filter(|(_, w)| **w as usize == di)
                    .map(|(k, _)| k)
                    .collect(),
            ),
        };
        tasks.push(tokio::spawn(async move {
            let mut events = Vec::new();
            let mut own = mine.map(|v| v.into_iter());
            loop {
                let i = match own.as_mut() {
                    Some(it) => match it.next() {
                        Some(i) => i,
                        None => break,
                    },
                    None => next.fetch_add(1, Ordering::Relaxed) as usize,
                };
                let Some(a) = arrivals.get(i) else { break };
                schedule::wait_until(tc.at(a.at_us)).await;
                events.push(d.decide(&tc, &a.client, limit, a.cost, a.at_us).await);
            }
            (events, d)
        }));
    }
    let (mut all, back) = super::join_workers(tasks).await?;
    all.sort_by_key(|e| (e.intended_us, e.sent_us));
    Ok((all, back))
}
