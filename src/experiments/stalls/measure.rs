//! What one stall measurement does: build a big log, start the PING probe,
//! trigger the stall (the strategy's trimming call, or PEXPIRE 1 ms and the
//! active expire cycle), and read SLOWLOG, LATENCY and the probe. Each
//! returns its `stalls.csv` row and the probe's PINGs (`stalls-pings.csv`).

use std::time::{Duration, Instant};

use super::probe::{StallProbe, pings_during, probe_worst};
use super::rows::{PingRow, ping_rows};
use super::{Params, StallRow};
use crate::run::RunContext;
use limitbench_base::error::{Error, Result};
use limitbench_core::conn::Conn;
use limitbench_core::info;
use limitbench_core::load::replay::{self, LogSpec, RawPipe};
use limitbench_core::resp::{Connection, Reply};
use limitbench_core::strategy::{Limit, Request, client_key};

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
) -> Result<(StallRow, Vec<PingRow>)> {
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
    // Without the probe (`trim_probe = false`, to see whether it slows the
    // trims it watches): LATENCY reset and the same lead, no PINGs.
    let (probe, origin, from) = if p.trim_probe {
        let (probe, origin, from) =
            StallProbe::lead(admin, addr, p.probe_lead_ms, p.probe_cpu, p.probe_rt_priority)
                .await?;
        (Some(probe), origin, from)
    } else {
        admin
            .call(&limitbench_core::args!["LATENCY", "RESET"])
            .await?;
        let origin = Instant::now();
        tokio::time::sleep(Duration::from_millis(p.probe_lead_ms)).await;
        (None, origin, origin.elapsed().as_secs_f64() * 1000.0)
    };
    let probe_cpu = probe.as_ref().and_then(|x| x.cpu);
    let probe_policy = probe.as_ref().map(|x| x.policy.clone());
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
    let pings = match probe {
        Some(probe) => probe.stop().await?,
        None => Vec::new(),
    };
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
    let ping_rows = ping_rows(&super::trim_id(n), trial, &pings, from, to);
    let row = StallRow {
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
        probe_policy,
        probe_pings_during: Some(during),
        event_ms: to - from,
        after_size: after,
        admitted: Some(d.admitted),
        ..Default::default()
    };
    Ok((row, ping_rows))
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
) -> Result<(StallRow, Vec<PingRow>)> {
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
    let (probe, origin, from) =
        StallProbe::lead(admin, addr, p.probe_lead_ms, p.probe_cpu, p.probe_rt_priority).await?;
    let (probe_cpu, probe_policy) = (probe.cpu, Some(probe.policy.clone()));
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
    // The caller names the cell (of the row and its PINGs) and the
    // background threads' placement.
    let ping_rows = ping_rows("", trial, &pings, from, to + p.probe_tail_ms as f64);
    let row = StallRow {
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
        probe_policy,
        probe_pings_during: Some(during),
        event_ms: to - from,
        after_size: exists,
        lazyfree_pending_after: pending,
        ..Default::default()
    };
    Ok((row, ping_rows))
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

/// DBSIZE: the keys in the database, without touching any of them.
async fn dbsize(admin: &mut Connection) -> Result<i64> {
    admin
        .call(&limitbench_core::args!["DBSIZE"])
        .await?
        .as_i64()
        .ok_or_else(|| Error::Other("DBSIZE did not reply with an integer".into()))
}
