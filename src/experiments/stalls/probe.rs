//! The PING probe of `stalls` and where Redis's threads run while it watches.
//!
//! The design (issue 30, decided before looking at B4.2's verdict): Redis's
//! main thread alone on its CPU (0); Redis's background threads (bio_*, the
//! lazy-free one among them, and jemalloc's) and the probe on the other CPU
//! (1), the probe real-time (SCHED_FIFO) so that neither the freeing thread
//! nor the harness can delay its own sending and receiving; the rest of the
//! harness off Redis's CPU. A probe round trip longer than its baseline is
//! then Redis's main thread busy, and the probe takes no CPU from the main
//! thread (a probe on Redis's own CPU slowed the trims it watched).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::rows::ping_phase;
use limitbench_base::error::{Error, Result};
use limitbench_core::pin;
use limitbench_core::resp::Connection;

/// A PING loop on its own connection, on its own OS thread pinned to `cpu`
/// and, with `rt_priority` > 0, real-time (SCHED_FIFO); records every round
/// trip with the time it started (relative to `origin`).
pub struct StallProbe {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Result<Vec<(f64, f64)>>>,
    /// The CPU the probe's thread runs on (None: it could not be pinned).
    pub cpu: Option<usize>,
    /// Its scheduling policy as the kernel reports it (`fifo:50`), or
    /// `other (...)` with why SCHED_FIFO was not set.
    pub policy: String,
}

/// What the probe's thread reports once it is connected.
type Ready = Result<(Option<usize>, String)>;

impl StallProbe {
    pub async fn start(
        addr: std::net::SocketAddr,
        origin: Instant,
        cpu: usize,
        rt_priority: i32,
    ) -> Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let (ready_tx, ready_rx) = tokio::sync::oneshot::channel::<Ready>();
        let thread = std::thread::Builder::new()
            .name("stall-probe".into())
            .spawn(move || -> Result<Vec<(f64, f64)>> {
                let pinned = pin::pin_current_thread(cpu).is_ok()
                    && pin::current_cpus().ok().as_deref() == Some(&[cpu][..]);
                let policy = if rt_priority > 0 {
                    match pin::set_current_fifo(rt_priority) {
                        Ok(()) => pin::current_policy(),
                        Err(e) => format!("{} (SCHED_FIFO refused: {e})", pin::current_policy()),
                    }
                } else {
                    format!("{} (no real-time priority asked)", pin::current_policy())
                };
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| Error::Other(format!("probe runtime: {e}")))?;
                rt.block_on(async move {
                    let mut c = match Connection::connect(addr).await {
                        Ok(c) => c,
                        Err(e) => {
                            let msg = e.to_string();
                            let _ = ready_tx.send(Err(e));
                            return Err(Error::Other(msg));
                        }
                    };
                    c.call(&limitbench_core::args!["PING"]).await?;
                    let _ = ready_tx.send(Ok((pinned.then_some(cpu), policy)));
                    let mut out = Vec::with_capacity(1 << 16);
                    while !s.load(Ordering::Relaxed) {
                        let t0 = Instant::now();
                        c.call(&limitbench_core::args!["PING"]).await?;
                        let rtt_ms = t0.elapsed().as_secs_f64() * 1000.0;
                        out.push(((t0 - origin).as_secs_f64() * 1000.0, rtt_ms));
                    }
                    Ok(out)
                })
            })
            .map_err(|e| Error::Other(format!("starting the probe thread: {e}")))?;
        let (cpu, policy) = ready_rx
            .await
            .map_err(|_| Error::Other("the probe thread ended before it connected".into()))??;
        Ok(StallProbe {
            stop,
            thread,
            cpu,
            policy,
        })
    }

    /// LATENCY RESET, then probe `addr` for `lead_ms` before the event: the
    /// probe, its origin, and the ms after the origin the event starts at.
    pub async fn lead(
        admin: &mut Connection,
        addr: std::net::SocketAddr,
        lead_ms: u64,
        cpu: usize,
        rt_priority: i32,
    ) -> Result<(Self, Instant, f64)> {
        admin
            .call(&limitbench_core::args!["LATENCY", "RESET"])
            .await?;
        let origin = Instant::now();
        let probe = StallProbe::start(addr, origin, cpu, rt_priority).await?;
        tokio::time::sleep(Duration::from_millis(lead_ms)).await;
        Ok((probe, origin, origin.elapsed().as_secs_f64() * 1000.0))
    }

    /// (sent at ms, round trip ms) of every PING.
    pub async fn stop(self) -> Result<Vec<(f64, f64)>> {
        self.stop.store(true, Ordering::Relaxed);
        let thread = self.thread;
        tokio::task::spawn_blocking(move || thread.join())
            .await
            .map_err(|e| Error::Other(format!("probe thread: {e}")))?
            .map_err(|_| Error::Other("the probe thread panicked".into()))?
    }
}

/// How many PINGs were in flight at some time in [from, to] ms.
pub fn pings_during(pings: &[(f64, f64)], from_ms: f64, to_ms: f64) -> u64 {
    pings
        .iter()
        .filter(|(s, r)| ping_phase(*s, *r, from_ms, to_ms) == "during")
        .count() as u64
}

/// Worst round trip of PINGs in flight at any time in [from, to] ms, and
/// the worst of those that ended before `from`.
pub fn probe_worst(pings: &[(f64, f64)], from_ms: f64, to_ms: f64) -> (f64, f64) {
    let worst = |phase: &str| {
        pings
            .iter()
            .filter(|(s, r)| ping_phase(*s, *r, from_ms, to_ms) == phase)
            .map(|x| x.1)
            .fold(0.0, f64::max)
    };
    let (during, before) = (worst("during"), worst("before"));
    (during, before)
}

/// Put Redis's threads where the design wants them: with `bio_cpu` set,
/// every thread but the main one (thread id = `pid`: bio_close_file,
/// bio_aof_fsync, bio_lazy_free, jemalloc_bg_thd, ...) on `bio_cpu`, so the
/// main thread is alone on its CPU; without it, nothing moves (the
/// background threads inherit the main thread's CPU: the one-core
/// placement). Called before every measurement, since a thread may have
/// started since the last one.
pub fn place_redis_threads(pid: u32, bio_cpu: Option<usize>) -> Result<()> {
    let Some(cpu) = bio_cpu else {
        return Ok(());
    };
    for t in pin::threads_of(pid)? {
        if t.tid as u32 == pid {
            continue;
        }
        match pin::pin_thread(t.tid, &[cpu]) {
            // The thread ended since it was listed.
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
            r => r.map_err(|e| {
                Error::io(format!("pinning Redis's thread {} to CPU {cpu}", t.name), e)
            })?,
        }
    }
    Ok(())
}

/// Where each of Redis's threads may run, `name:cpus` joined by `;` (the
/// main thread first), as the rows record it.
pub fn redis_threads(pid: u32) -> String {
    match pin::threads_of(pid) {
        Ok(ts) => ts
            .iter()
            .map(|t| format!("{}:{}", t.name, t.cpus))
            .collect::<Vec<_>>()
            .join(";"),
        Err(e) => format!("unknown ({e})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_worst_counts_pings_in_flight_during_the_event() {
        // (sent at ms, round trip ms)
        let pings = [
            (0.0, 1.0),
            (5.0, 2.0),
            (9.0, 12.0),
            (25.0, 0.5),
            (30.0, 3.0),
        ];
        // Event 10..20: the ping sent at 9 ends at 21 (in flight); the one at 5 ended at 7.
        assert_eq!(probe_worst(&pings, 10.0, 20.0), (12.0, 2.0));
        // Event 26..28: nothing in flight, the baseline is everything that ended before.
        assert_eq!(probe_worst(&pings, 26.0, 28.0), (0.0, 12.0));
        // In flight during 10..20: the PINGs sent at 9 (ends 21) only.
        assert_eq!(pings_during(&pings, 10.0, 20.0), 1);
        assert_eq!(pings_during(&pings, 26.0, 28.0), 0);
    }
}
