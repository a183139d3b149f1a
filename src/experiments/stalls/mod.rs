//! `stalls`: one big key stops Redis (claims B4.1, B4.2).
//!
//! Trim: a sliding log of n entries whose window has passed (all scores
//! older than the window; the key has no TTL, so it outlived its window, as
//! a key with a TTL longer than the window does). The strategy's next call
//! trims it all with ZREMRANGEBYSCORE inside the script. The stall is
//! measured three ways: the SLOWLOG entry of that call, LATENCY LATEST's
//! `command` event (threshold 1 ms), and the worst round trip of a probe
//! client sending PING back to back on its own connection during the call.
//!
//! Expiry: a log of n entries gets PEXPIRE 1 ms and is left to the active
//! expire cycle, with `lazyfree-lazy-expire` no (7.0's default: freed inline)
//! or yes (freed on a background thread). The stall is LATENCY's
//! `expire-del`/`expire-cycle` events and the probe's worst round trip.
//!
//! The sets are built before any measurement starts, with pipelined ZADD
//! batches (not counted).

pub mod analyze;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::{Experiment, RunContext};
use crate::conn::Conn;
use crate::error::{Error, Result};
use crate::fleet::ServerConfig;
use crate::load::study_b_cost_hot::{self as hot, LogSpec, RawPipe};
use crate::resp::{Connection, Reply};
use crate::strategy::{Limit, Options, Request, client_key};

pub const EXPERIMENT: Experiment = Experiment {
    name: "stalls",
    study: "B",
    allows_external: false,
    run: |ctx: &RunContext| Box::pin(run(ctx)),
    analyze: analyze::analyze,
};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    redis_cpu: usize,
    trim_sizes: Vec<u64>,
    trim_trials: u64,
    expiry_sizes: Vec<u64>,
    expiry_trials: u64,
    lazyfree_modes: Vec<String>,
    window_ms: u64,
    /// Members per ZADD while building.
    build_chunk: usize,
    /// Probe time before the call / after it.
    probe_lead_ms: u64,
    probe_tail_ms: u64,
    slowlog_threshold_us: u64,
    /// Member length of the log (the strategy's default: 0).
    member_len: usize,
    /// Where Redis's background (lazy-free) threads run: "" = with the main
    /// thread (inherited pinning), or a `bio_cpulist` value. Unstated by the
    /// study; it decides whether a background free still stalls the main thread.
    bio_cpulists: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct StallRow {
    pub cell: String,
    pub trial: u64,
    /// `trim` or `expire`.
    pub kind: String,
    pub entries: u64,
    pub lazyfree_lazy_expire: String,
    /// Background threads' CPUs: `same` (as the main thread) or `cpuN`.
    pub bio_cpus: String,
    pub member_len: usize,
    pub seed: u64,
    pub redis_cpu: Option<usize>,
    pub build_s: f64,
    pub encoding: String,
    /// SLOWLOG duration of the trimming call (trim), us.
    pub slowlog_us: Option<f64>,
    /// LATENCY LATEST max of `command` (trim), ms; 0 = no event >= 1 ms.
    pub latency_command_ms: Option<f64>,
    /// LATENCY LATEST max of `expire-del` / `expire-cycle` (expire), ms; 0 = none.
    pub latency_expire_del_ms: Option<f64>,
    pub latency_expire_cycle_ms: Option<f64>,
    /// The probe's worst PING round trip during the event, and before it.
    pub probe_worst_ms: f64,
    pub probe_baseline_worst_ms: f64,
    pub probe_pings: u64,
    /// Client-side duration of the trimming call (trim) or time from PEXPIRE
    /// to the key being gone (expire), ms.
    pub event_ms: f64,
    /// ZCARD after the call (trim: 1, the new entry) or EXISTS (expire: 0).
    pub after_size: i64,
    pub admitted: Option<bool>,
    /// Background frees still pending right after the key went (expire).
    pub lazyfree_pending_after: Option<f64>,
}

async fn start_server(ctx: &RunContext, p: &Params, bio: &str) -> Result<crate::fleet::Fleet> {
    let mut cfg = ServerConfig::default()
        .pinned(p.redis_cpu)
        .with(
            "slowlog-log-slower-than",
            &p.slowlog_threshold_us.to_string(),
        )
        .with("slowlog-max-len", "1024")
        .with("latency-monitor-threshold", "1");
    if !bio.is_empty() {
        cfg = cfg.with("bio_cpulist", bio);
    }
    ctx.standalone(cfg).await
}

fn bio_label(bio: &str) -> String {
    if bio.is_empty() {
        "same".into()
    } else {
        format!("cpu{bio}")
    }
}

async fn run(ctx: &RunContext) -> Result<()> {
    let p: Params = ctx.params()?;
    ctx.note(
        "method",
        serde_json::json!({
            "build": "pipelined ZADD batches of the strategy's member format; trim: scores older than the window, no TTL; expire: PEXPIRE 1 ms after the build, active expiry",
            "probe": "PING back to back on its own connection from the harness (not pinned)",
            "redis_cpu": p.redis_cpu,
            "bio_cpulists": p.bio_cpulists,
            "bio_note": "'' = background (lazy-free) threads inherit the server's pinning (same CPU as the main thread); otherwise bio_cpulist",
        }),
    )?;
    let mut log = ctx.trial_log(&[])?;
    let total = p.trim_sizes.len() as u64 * p.trim_trials
        + p.bio_cpulists.len() as u64
            * p.expiry_sizes.len() as u64
            * p.lazyfree_modes.len() as u64
            * p.expiry_trials;
    let mut progress = ctx.progress(total);

    for (bi, bio) in p.bio_cpulists.iter().enumerate() {
        let fleet = start_server(ctx, &p, bio).await?;
        let addr = fleet.primary_addr();
        ctx.note_fleet(&format!("server_bio_{}", bio_label(bio)), &fleet)
            .await?;
        let strategy = ctx.build_strategy(
            "sliding-window-log",
            &Options::default()
                .with("invocation", "evalsha")
                .with("member_len", p.member_len),
        )?;
        let mut admin = Connection::connect(addr).await?;
        strategy.prepare(&mut admin).await?;
        // Trims do not involve background threads: run them on the first server only.
        if bi == 0 {
            for trial in 0..p.trim_trials {
                for &n in &p.trim_sizes {
                    let cell = format!("trim|n{n}");
                    if log.is_done(&cell, trial) {
                        progress.skip(1);
                        continue;
                    }
                    let row =
                        trim_once(ctx, &p, &mut admin, addr, strategy.as_ref(), n, trial).await?;
                    let msg = format!(
                        "{cell} #{trial}: slowlog {:.1} ms, probe {:.1} ms",
                        row.slowlog_us.unwrap_or(f64::NAN) / 1000.0,
                        row.probe_worst_ms
                    );
                    log.commit(&cell, trial, &[row])?;
                    progress.inc(&msg);
                }
            }
        }
        for trial in 0..p.expiry_trials {
            for mode in &p.lazyfree_modes {
                for &n in &p.expiry_sizes {
                    let cell = format!("expire|n{n}|lazyfree-{mode}|bio-{}", bio_label(bio));
                    if log.is_done(&cell, trial) {
                        progress.skip(1);
                        continue;
                    }
                    let mut row = expire_once(ctx, &p, &mut admin, addr, n, mode, trial).await?;
                    row.cell = cell.clone();
                    row.bio_cpus = bio_label(bio);
                    let msg = format!(
                        "{cell} #{trial}: expire-del {:.0} ms, probe {:.1} ms",
                        row.latency_expire_del_ms.unwrap_or(f64::NAN),
                        row.probe_worst_ms
                    );
                    log.commit(&cell, trial, &[row])?;
                    progress.inc(&msg);
                }
            }
        }
    }
    progress.finish();
    Ok(())
}

/// A PING loop on its own connection; records every round trip with the
/// time it started (relative to `origin`).
pub struct Probe {
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<Result<Vec<(f64, f64)>>>,
}

impl Probe {
    pub async fn start(addr: std::net::SocketAddr, origin: Instant) -> Result<Self> {
        let mut c = Connection::connect(addr).await?;
        c.call(&crate::args!["PING"]).await?;
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let task = tokio::spawn(async move {
            let mut out = Vec::with_capacity(1 << 16);
            while !s.load(Ordering::Relaxed) {
                let t0 = Instant::now();
                c.call(&crate::args!["PING"]).await?;
                let rtt_ms = t0.elapsed().as_secs_f64() * 1000.0;
                out.push(((t0 - origin).as_secs_f64() * 1000.0, rtt_ms));
            }
            Ok(out)
        });
        Ok(Probe { stop, task })
    }

    /// (sent at ms, round trip ms) of every PING.
    pub async fn stop(self) -> Result<Vec<(f64, f64)>> {
        self.stop.store(true, Ordering::Relaxed);
        self.task
            .await
            .map_err(|e| Error::Other(format!("probe task: {e}")))?
    }
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
    hot::fill_logs(
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
    match admin.call(&crate::args!["OBJECT", "ENCODING", key]).await {
        Ok(r) => r.as_string().unwrap_or_default(),
        Err(_) => "missing".into(),
    }
}

/// LATENCY LATEST -> event -> max ms.
async fn latency_latest(admin: &mut Connection) -> Result<std::collections::BTreeMap<String, f64>> {
    let r = admin.call(&crate::args!["LATENCY", "LATEST"]).await?;
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
    let r = admin.call(&crate::args!["SLOWLOG", "GET", 1024i64]).await?;
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
async fn trim_once(
    ctx: &RunContext,
    p: &Params,
    admin: &mut Connection,
    addr: std::net::SocketAddr,
    strategy: &dyn crate::strategy::Strategy,
    n: u64,
    trial: u64,
) -> Result<StallRow> {
    let client = format!("trim-{n}-{trial}");
    let key = client_key(&client, "swl");
    admin.call(&crate::args!["DEL", key.as_str()]).await?;
    // Entries older than the window by a margin, so the next call trims all.
    let old = crate::clock::Clock::system_now_us() - (p.window_ms as i64 * 1000) * 2 - n as i64;
    let build_s = build(addr, &key, n, p, old).await?;
    let enc = encoding(admin, &key).await;
    let size: i64 = admin
        .call(&crate::args!["ZCARD", key.as_str()])
        .await?
        .as_i64()
        .unwrap_or(-1);
    if size != n as i64 {
        return Err(Error::Other(format!("built {size} entries, wanted {n}")));
    }
    let mut conn = Conn::connect(addr).await?;
    admin.call(&crate::args!["SLOWLOG", "RESET"]).await?;
    admin.call(&crate::args!["LATENCY", "RESET"]).await?;
    let origin = Instant::now();
    let probe = Probe::start(addr, origin).await?;
    tokio::time::sleep(Duration::from_millis(p.probe_lead_ms)).await;
    let from = origin.elapsed().as_secs_f64() * 1000.0;
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
    let slow = slowlog_script_us(admin).await?;
    let lat = latency_latest(admin).await?;
    let after: i64 = admin
        .call(&crate::args!["ZCARD", key.as_str()])
        .await?
        .as_i64()
        .unwrap_or(-1);
    admin.call(&crate::args!["UNLINK", key.as_str()]).await?;
    Ok(StallRow {
        cell: format!("trim|n{n}"),
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
        event_ms: to - from,
        after_size: after,
        admitted: Some(d.admitted),
        ..Default::default()
    })
}

#[allow(clippy::too_many_arguments)]
async fn expire_once(
    ctx: &RunContext,
    p: &Params,
    admin: &mut Connection,
    addr: std::net::SocketAddr,
    n: u64,
    mode: &str,
    trial: u64,
) -> Result<StallRow> {
    admin
        .call(&crate::args!["CONFIG", "SET", "lazyfree-lazy-expire", mode])
        .await?;
    let key = client_key(&format!("expire-{n}-{mode}-{trial}"), "swl");
    admin.call(&crate::args!["DEL", key.as_str()]).await?;
    let now = crate::clock::Clock::system_now_us();
    let build_s = build(addr, &key, n, p, now - n as i64).await?;
    let enc = encoding(admin, &key).await;
    // Nothing pending from earlier trials.
    wait_lazyfree_done(admin).await?;
    let expired0 = hot::info_f64(admin, "stats", "expired_keys").await?;
    admin.call(&crate::args!["LATENCY", "RESET"]).await?;
    let origin = Instant::now();
    let probe = Probe::start(addr, origin).await?;
    tokio::time::sleep(Duration::from_millis(p.probe_lead_ms)).await;
    let from = origin.elapsed().as_secs_f64() * 1000.0;
    let set = admin
        .call(&crate::args!["PEXPIRE", key.as_str(), 1i64])
        .await?
        .as_i64();
    if set != Some(1) {
        return Err(Error::Other(format!(
            "PEXPIRE on {key} replied {set:?}: the log was not there after the build"
        )));
    }
    // Poll without touching the key (a lookup would expire it lazily).
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let e = hot::info_f64(admin, "stats", "expired_keys").await?;
        if e > expired0 {
            break;
        }
        if Instant::now() > deadline {
            let pttl = admin
                .call(&crate::args!["PTTL", key.as_str()])
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
    let pending = hot::info_f64(admin, "memory", "lazyfree_pending_objects")
        .await
        .ok();
    wait_lazyfree_done(admin).await?;
    tokio::time::sleep(Duration::from_millis(p.probe_tail_ms)).await;
    let pings = probe.stop().await?;
    let (worst, base) = probe_worst(&pings, from, to + p.probe_tail_ms as f64);
    let lat = latency_latest(admin).await?;
    let exists = admin
        .call(&crate::args!["EXISTS", key.as_str()])
        .await?
        .as_i64()
        .unwrap_or(-1);
    Ok(StallRow {
        cell: format!("expire|n{n}|lazyfree-{mode}"),
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
        event_ms: to - from,
        after_size: exists,
        lazyfree_pending_after: pending,
        ..Default::default()
    })
}

async fn wait_lazyfree_done(admin: &mut Connection) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(30);
    while hot::info_f64(admin, "memory", "lazyfree_pending_objects").await? > 0.0 {
        if Instant::now() > deadline {
            return Err(Error::Timeout("lazy free still pending after 30 s".into()));
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(())
}
