//! What one stall measurement does: build a big log, start the PING probe,
//! trigger the stall (the strategy's trimming call, or PEXPIRE 1 ms and the
//! active expire cycle), and read SLOWLOG, LATENCY and the probe.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::{Params, StallRow};
use crate::run::RunContext;
use limitbench_base::error::{Error, Result};
use limitbench_core::conn::Conn;
use limitbench_core::info;
use limitbench_core::load::replay::{self, LogSpec, RawPipe};
use limitbench_core::resp::{Connection, Reply};
use limitbench_core::strategy::{Limit, Request, client_key};

/// A PING loop on its own connection, on its own OS thread pinned to
/// `cpu` (Redis's main thread's CPU in `stalls`, so that a late reply can
/// only be Redis's main thread busy, never the probe waiting for a CPU that
/// a background thread or the harness holds); records every round trip with
/// the time it started (relative to `origin`).
pub struct StallProbe {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Result<Vec<(f64, f64)>>>,
    /// The CPU the probe's thread runs on (None: it could not be pinned).
    pub cpu: Option<usize>,
}

impl StallProbe {
    pub async fn start(addr: std::net::SocketAddr, origin: Instant, cpu: usize) -> Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let (ready_tx, ready_rx) = tokio::sync::oneshot::channel::<Result<Option<usize>>>();
        let thread = std::thread::Builder::new()
            .name("stall-probe".into())
            .spawn(move || -> Result<Vec<(f64, f64)>> {
                let pinned = limitbench_core::pin::pin_current_thread(cpu).is_ok()
                    && limitbench_core::pin::current_cpus().ok().as_deref() == Some(&[cpu][..]);
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
                    let _ = ready_tx.send(Ok(pinned.then_some(cpu)));
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
        let cpu = ready_rx
            .await
            .map_err(|_| Error::Other("the probe thread ended before it connected".into()))??;
        Ok(StallProbe { stop, thread, cpu })
    }

    /// (sent at ms, round trip ms) of every PING.
    /// LATENCY RESET, then probe `addr` for `lead_ms` before the event: the
    /// probe, its origin, and the ms after the origin the event starts at.
    pub async fn lead(
        admin: &mut Connection,
        addr: std::net::SocketAddr,
        lead_ms: u64,
        cpu: usize,
    ) -> Result<(Self, Instant, f64)> {
        admin
            .call(&limitbench_core::args!["LATENCY", "RESET"])
            .await?;
        let origin = Instant::now();
        let probe = StallProbe::start(addr, origin, cpu).await?;
        tokio::time::sleep(Duration::from_millis(lead_ms)).await;
        Ok((probe, origin, origin.elapsed().as_secs_f64() * 1000.0))
    }

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
        .filter(|(s, r)| s + r >= from_ms && *s <= to_ms)
        .count() as u64
}

/// Worst round trip of PINGs in flight at any time in [from, to] ms, and
/// the worst of those that ended before `from`.
pub fn probe_worst(pings: &[(f64, f64)], from_ms: f64, to_ms: f64) -> (f64, f64) {
    let during = pings
        .iter()
        .filter(|(s, r)| s + r >= from_ms && *s <= to_ms)
        .map(|x| x.1)
        .fold(0.0, f64::max);
    let before = pings
        .iter()
        .filter(|(s, r)| s + r < from_ms)
        .map(|x| x.1)
        .fold(0.0, f64::max);
    (during, before)
}

async fn build(
    addr: std::net::SocketAddr,
    key: &str,
    n: u64,
    p: &Params,
    first_score_us: i64,
) -> Result<f64> {
    let t0 = Instant::now();
    let mut pipe = RawPipe::connect(addr).await?;
    replay::fill_logs(
        &mut pipe,
        std::slice::from_ref(&key.to_string()),
        &LogSpec {
            entries: n,
            member_len: p.member_len,
            first_id: 1,
            first_score_us,
            score_step_us: 1,
            ttl_ms: None,
            chunk: p.build_chunk,
        },
    )
    .await?;
    Ok(t0.elapsed().as_secs_f64())
}

async fn encoding(admin: &mut Connection, key: &str) -> String {
    match admin
        .call(&limitbench_core::args!["OBJECT", "ENCODING", key])
        .await
    {
        Ok(r) => r.as_string().unwrap_or_default(),
        Err(_) => "missing".into(),
    }
}

/// LATENCY LATEST -> event -> max ms.
async fn latency_latest(admin: &mut Connection) -> Result<std::collections::BTreeMap<String, f64>> {
    let r = admin
        .call(&limitbench_core::args!["LATENCY", "LATEST"])
        .await?;
    let mut out = std::collections::BTreeMap::new();
    for e in r.into_array().unwrap_or_default() {
        let f = e.into_array().unwrap_or_default();
        if let (Some(name), Some(max)) = (f.first().and_then(|x| x.as_string()), f.get(3)) {
            out.insert(name, max.as_f64().unwrap_or(0.0));
        }
    }
    Ok(out)
}

/// The longest SLOWLOG entry whose command is a script call, us.
async fn slowlog_script_us(admin: &mut Connection) -> Result<Option<f64>> {
    let r = admin
        .call(&limitbench_core::args!["SLOWLOG", "GET", 1024i64])
        .await?;
    let mut worst: Option<f64> = None;
    for e in r.into_array().unwrap_or_default() {
        let f = e.into_array().unwrap_or_default();
        let dur = f.get(2).and_then(|x| x.as_f64());
        let cmd = match f.get(3) {
            Some(Reply::Array(a)) => a
                .first()
                .and_then(|x| x.as_string())
                .unwrap_or_default()
                .to_ascii_lowercase(),
            _ => String::new(),
        };
        if matches!(cmd.as_str(), "evalsha" | "eval" | "fcall")
            && let Some(d) = dur
        {
            worst = Some(worst.map_or(d, |w: f64| w.max(d)));
        }
    }
    Ok(worst)
}

#[allow(clippy::too_many_arguments)]
pub(super) async fn trim_once(
    ctx: &RunContext,
    p: &Params,
    admin: &mut Connection,
    addr: std::net::SocketAddr,
    strategy: &dyn limitbench_core::strategy::Strategy,
    n: u64,
    trial: u64,
) -> Result<StallRow> {
    let client = format!("trim-{n}-{trial}");
    let key = client_key(&client, "swl");
    admin
        .call(&limitbench_core::args!["DEL", key.as_str()])
        .await?;
    // Entries older than the window by a margin, so the next call trims all.
    let old =
        limitbench_core::clock::Clock::system_now_us() - (p.window_ms as i64 * 1000) * 2 - n as i64;
    let build_s = build(addr, &key, n, p, old).await?;
    let enc = encoding(admin, &key).await;
    let size: i64 = admin
        .call(&limitbench_core::args!["ZCARD", key.as_str()])
        .await?
        .as_i64()
        .unwrap_or(-1);
    if size != n as i64 {
        return Err(Error::Other(format!("built {size} entries, wanted {n}")));
    }
    let mut conn = Conn::connect(addr).await?;
    admin
        .call(&limitbench_core::args!["SLOWLOG", "RESET"])
        .await?;
    let (probe, origin, from) = StallProbe::lead(admin, addr, p.probe_lead_ms, p.probe_cpu).await?;
    let probe_cpu = probe.cpu;
    let d = strategy
        .decide(
            &mut conn,
            &Request {
                client: &client,
                limit: Limit::per_window(n.max(1), p.window_ms),
                cost: 1,
                now_us: 0,
                request_id: n + 1,
            },
        )
        .await?;
    let to = origin.elapsed().as_secs_f64() * 1000.0;
    tokio::time::sleep(Duration::from_millis(p.probe_tail_ms)).await;
    let pings = probe.stop().await?;
    let (worst, base) = probe_worst(&pings, from, to);
    let during = pings_during(&pings, from, to);
    let slow = slowlog_script_us(admin).await?;
    let lat = latency_latest(admin).await?;
    let after: i64 = admin
        .call(&limitbench_core::args!["ZCARD", key.as_str()])
        .await?
        .as_i64()
        .unwrap_or(-1);
    admin
        .call(&limitbench_core::args!["UNLINK", key.as_str()])
        .await?;
    Ok(StallRow {
        cell: super::trim_id(n),
        trial,
        kind: "trim".into(),
        entries: n,
        lazyfree_lazy_expire: "n/a".into(),
        bio_cpus: "n/a".into(),
        member_len: p.member_len,
        seed: ctx.seed,
        redis_cpu: Some(p.redis_cpu),
        build_s,
        encoding: enc,
        slowlog_us: slow,
        latency_command_ms: Some(lat.get("command").copied().unwrap_or(0.0)),
        probe_worst_ms: worst,
        probe_baseline_worst_ms: base,
        probe_pings: pings.len() as u64,
        probe_cpu,
        probe_pings_during: Some(during),
        event_ms: to - from,
        after_size: after,
        admitted: Some(d.admitted),
        ..Default::default()
    })
}

#[allow(clippy::too_many_arguments)]
pub(super) async fn expire_once(
    ctx: &RunContext,
    p: &Params,
    admin: &mut Connection,
    addr: std::net::SocketAddr,
    n: u64,
    mode: &str,
    trial: u64,
) -> Result<StallRow> {
    admin
        .call(&limitbench_core::args![
            "CONFIG",
            "SET",
            "lazyfree-lazy-expire",
            mode
        ])
        .await?;
    let key = client_key(&format!("expire-{n}-{mode}-{trial}"), "swl");
    admin
        .call(&limitbench_core::args!["DEL", key.as_str()])
        .await?;
    let now = limitbench_core::clock::Clock::system_now_us();
    let build_s = build(addr, &key, n, p, now - n as i64).await?;
    let enc = encoding(admin, &key).await;
    // Nothing pending from earlier trials.
    wait_lazyfree_done(admin).await?;
    let expired0 = info::read_number(admin, "stats", "expired_keys").await?;
    let keys0 = dbsize(admin).await?;
    let (probe, origin, from) = StallProbe::lead(admin, addr, p.probe_lead_ms, p.probe_cpu).await?;
    let probe_cpu = probe.cpu;
    let set = admin
        .call(&limitbench_core::args!["PEXPIRE", key.as_str(), 1i64])
        .await?
        .as_i64();
    if set != Some(1) {
        return Err(Error::Other(format!(
            "PEXPIRE on {key} replied {set:?}: the log was not there after the build"
        )));
    }
    // Poll without touching the key (a lookup would expire it lazily).
    // PEXPIRE deletes the key itself, without counting an expired key, when
    // the deadline has passed by the time it checks (the main thread lost
    // the CPU for a millisecond between reading the clock and checking):
    // the key count dropping says the same as the counter rising.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let e = info::read_number(admin, "stats", "expired_keys").await?;
        if e > expired0 || dbsize(admin).await? < keys0 {
            break;
        }
        if Instant::now() > deadline {
            let pttl = admin
                .call(&limitbench_core::args!["PTTL", key.as_str()])
                .await
                .map(|r| format!("{r:?}"))
                .unwrap_or_default();
            return Err(Error::Timeout(format!(
                "{key} not expired within 30 s of PEXPIRE 1 (expired_keys {expired0} -> {e}, PTTL {pttl})"
            )));
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let to = origin.elapsed().as_secs_f64() * 1000.0;
    let pending = info::read_number(admin, "memory", "lazyfree_pending_objects")
        .await
        .ok();
    wait_lazyfree_done(admin).await?;
    tokio::time::sleep(Duration::from_millis(p.probe_tail_ms)).await;
    let pings = probe.stop().await?;
    let (worst, base) = probe_worst(&pings, from, to + p.probe_tail_ms as f64);
    let during = pings_during(&pings, from, to + p.probe_tail_ms as f64);
    let lat = latency_latest(admin).await?;
    let exists = admin
        .call(&limitbench_core::args!["EXISTS", key.as_str()])
        .await?
        .as_i64()
        .unwrap_or(-1);
    // The caller names the cell and the background threads' placement.
    Ok(StallRow {
        trial,
        kind: "expire".into(),
        entries: n,
        lazyfree_lazy_expire: mode.into(),
        member_len: p.member_len,
        seed: ctx.seed,
        redis_cpu: Some(p.redis_cpu),
        build_s,
        encoding: enc,
        latency_expire_del_ms: Some(lat.get("expire-del").copied().unwrap_or(0.0)),
        latency_expire_cycle_ms: Some(lat.get("expire-cycle").copied().unwrap_or(0.0)),
        probe_worst_ms: worst,
        probe_baseline_worst_ms: base,
        probe_pings: pings.len() as u64,
        probe_cpu,
        probe_pings_during: Some(during),
        event_ms: to - from,
        after_size: exists,
        lazyfree_pending_after: pending,
        ..Default::default()
    })
}

async fn wait_lazyfree_done(admin: &mut Connection) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(30);
    while info::read_number(admin, "memory", "lazyfree_pending_objects").await? > 0.0 {
        if Instant::now() > deadline {
            return Err(Error::Timeout("lazy free still pending after 30 s".into()));
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(())
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

/// DBSIZE: the keys in the database, without touching any of them.
async fn dbsize(admin: &mut Connection) -> Result<i64> {
    admin
        .call(&limitbench_core::args!["DBSIZE"])
        .await?
        .as_i64()
        .ok_or_else(|| Error::Other("DBSIZE did not reply with an integer".into()))
}
