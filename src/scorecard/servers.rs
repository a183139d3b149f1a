//! The properties that need servers of their own: replication (a primary
//! and a replica), cluster (three masters, or the `--cluster-url` you run),
//! script survival per invocation mode (restart, promotion) and behaviour
//! when Redis is slow or gone under a fail-open / fail-closed policy
//! (`experiments::fail_open::PolicyClient`).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::cost::spray;
use super::{Bench, Outcome, Target, decide_once};
use crate::check::keys_containing;
use crate::conn::{ClusterConn, Conn};
use crate::error::{Error, Result};
use crate::experiments::fail_open::{Policy, PolicyClient};
use crate::experiments::testbed::RoundTrip;
use crate::fleet::replication::wait_caught_up;
use crate::fleet::{Fleet, ServerConfig};
use crate::resp::Connection;
use crate::strategy::{Limit, Options, Request};

fn own<'a>(b: &'a Bench<'_>) -> Result<&'a crate::fleet::RedisBinary> {
    b.own()
        .ok_or_else(|| Error::Other("needs servers the harness starts".into()))
}

/// A key's state as a replica comparison sees it: DUMP (any type) and the
/// absolute expiry.
async fn key_state(c: &mut Connection, key: &str) -> Result<(Vec<u8>, i64)> {
    let d = c.call(&crate::args!["DUMP", key]).await?;
    let dump = match d {
        crate::resp::Reply::Bulk(b) => b,
        crate::resp::Reply::Nil => Vec::new(),
        other => other.one_line().into_bytes(),
    };
    let t = c
        .call(&crate::args!["PEXPIRETIME", key])
        .await?
        .as_i64()
        .unwrap_or(-3);
    Ok((dump, t))
}

/// Replica state equals the primary's after N decisions on 20 clients.
pub async fn replication(b: &Bench<'_>) -> Result<Outcome> {
    let bin = own(b)?;
    let fleet = Fleet::primary_replica(bin, ServerConfig::default()).await?;
    fleet.prepare(b.strategy.as_ref()).await?;
    let base = b.client("repl");
    let clients: Vec<String> = (0..20).map(|i| format!("{base}-{i}")).collect();
    let n = 2000;
    let sp = spray(
        fleet.primary_addr(),
        &b.strategy,
        &clients,
        Limit::per_window(50, 60_000),
        8,
        Some(n),
        None,
    )
    .await?;
    let replica = fleet.replica().expect("a pair has a replica").addr();
    let caught = wait_caught_up(fleet.primary_addr(), replica, Duration::from_secs(10)).await?;
    let mut p = Connection::connect(fleet.primary_addr()).await?;
    let mut r = Connection::connect(replica).await?;
    let keys = keys_containing(&mut p, &base).await?;
    let mut differ = Vec::new();
    for k in &keys {
        if key_state(&mut p, k).await? != key_state(&mut r, k).await? {
            differ.push(k.clone());
        }
    }
    if keys.is_empty() {
        return Err(Error::Other(format!(
            "no key of the clients found on the primary after {} decisions ({} errors)",
            sp.decisions, sp.errors
        )));
    }
    let equal = (keys.len() - differ.len()) as f64 / keys.len() as f64;
    Ok(Outcome::at_least(
        equal,
        "fraction",
        1.0,
        1.0,
        format!(
            "{} decisions ({} errors) by 8 connections on 20 clients; replica caught up: {} (offset {} of {}); {} keys, {} differ{}",
            sp.decisions,
            sp.errors,
            caught.caught_up,
            caught.replica_offset,
            caught.master_offset,
            keys.len(),
            differ.len(),
            differ
                .first()
                .map(|k| format!(" (first: {k})"))
                .unwrap_or_default()
        ),
    ))
}

/// Over-admission across a failover with a lagging link: a primary and a
/// replica that follows it through a delay proxy (50 ms each way, as the
/// `failover` experiment does: on loopback the stream is otherwise never
/// behind; 50 ms is longer than the decisions before the kill take, so the
/// result does not hang on a race between them and the link). 16 connections take 50 decisions on one client (limit 100 per
/// hour) on the primary; the primary is SIGKILLed at once and the replica
/// promoted; 300 more decisions go to it. Admitted in all minus the limit,
/// over the limit.
pub async fn failover(b: &Bench<'_>) -> Result<Outcome> {
    use crate::fleet::Server;
    use crate::proxy::DelayProxy;
    let bin = own(b)?;
    let mut primary = Server::start(bin, ServerConfig::default(), false, None).await?;
    let proxy = DelayProxy::start(primary.addr())?;
    let mut replica = Server::start(
        bin,
        ServerConfig::default(),
        false,
        Some(proxy.listen.port()),
    )
    .await?;
    replica.wait_in_sync(Duration::from_secs(30)).await?;
    proxy.set_one_way(Duration::from_millis(50));
    let mut c = primary.connection().await?;
    b.strategy.prepare(&mut c).await?;
    let acked = c
        .call(&crate::args!["WAIT", 1u64, 5000u64])
        .await?
        .as_i64()
        .unwrap_or(0);
    if acked < 1 {
        return Err(Error::Other(
            "the replica did not acknowledge a write within 5 s".into(),
        ));
    }
    let client = vec![b.client("failover")];
    let limit = 100;
    let l = Limit::per_window(limit, 3_600_000);
    let t0 = Instant::now();
    let before = spray(primary.addr(), &b.strategy, &client, l, 16, Some(50), None).await?;
    let phase1_ms = t0.elapsed().as_secs_f64() * 1e3;
    let t = Instant::now();
    primary.kill();
    replica.promote().await?;
    let promote_ms = t.elapsed().as_secs_f64() * 1e3;
    let after = spray(replica.addr(), &b.strategy, &client, l, 16, Some(300), None).await?;
    let admitted = before.admitted + after.admitted;
    let over = admitted.saturating_sub(limit) as f64 / limit as f64;
    Ok(Outcome::at_most(
        over,
        "x limit over",
        0.0,
        0.05,
        format!(
            "limit {limit} per hour, replication link 50 ms each way: {} of 50 admitted on the primary in {phase1_ms:.1} ms ({} errors), killed, replica promoted in {promote_ms:.1} ms, {} of 300 admitted on it ({} errors{}): {admitted} in all",
            before.admitted,
            before.errors,
            after.admitted,
            after.errors,
            after
                .first_error
                .map(|e| format!(", first: {}", first_line(&e)))
                .unwrap_or_default()
        ),
    ))
}

/// Users that work on a 3-master cluster (ours, or `--cluster-url`).
pub async fn cluster(b: &Bench<'_>) -> Result<Outcome> {
    let owned;
    let seed = match &b.cfg.target {
        Target::Own(bin) => {
            owned = Fleet::cluster(bin, ServerConfig::default(), 3).await?;
            owned.primary_addr()
        }
        Target::External(x) => match x.cluster {
            Some(a) => a,
            None => return Ok(Outcome::NotRun("no --cluster-url given".into())),
        },
    };
    let cc = ClusterConn::connect(seed).await?;
    let masters = cc.node_addrs();
    for a in &masters {
        let mut c = Connection::connect(*a).await?;
        b.strategy.prepare(&mut c).await?;
    }
    let mut conn = Conn::Cluster(cc);
    let users = 30;
    let base = b.client("cluster");
    let mut ok_users = 0;
    let mut errors: BTreeMap<String, u64> = BTreeMap::new();
    for u in 0..users {
        let client = format!("{base}-{u}");
        let mut ok = true;
        for _ in 0..2 {
            if let Err(e) = decide_once(b.strategy.as_ref(), &mut conn, &client).await {
                ok = false;
                let t = e.to_string();
                let class = if t.contains("CROSSSLOT") {
                    "CROSSSLOT"
                } else if t.contains("non local key") {
                    "non-local key"
                } else if t.contains("MOVED") {
                    "MOVED"
                } else {
                    "other"
                };
                *errors.entry(class.into()).or_default() += 1;
                if class == "other" {
                    errors.entry(format!("first other: {t}")).or_insert(0);
                }
            }
        }
        ok_users += u64::from(ok);
    }
    Ok(Outcome::at_least(
        ok_users as f64 / users as f64,
        "fraction",
        1.0,
        1.0,
        format!(
            "{ok_users} of {users} users (2 decisions each) work on {} masters; errors: {}",
            masters.len(),
            if errors.is_empty() {
                "none".to_string()
            } else {
                errors
                    .iter()
                    .map(|(k, v)| format!("{k}: {v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        ),
    ))
}

/// Per invocation mode: does a decision still work after a restart of the
/// server (SHUTDOWN SAVE, start on the RDB), and on a replica promoted after
/// its primary was killed? Scripts are loaded once, before, as `prepare`
/// does; afterwards the client just calls again.
pub async fn survival(b: &Bench<'_>) -> (Result<Outcome>, Result<Outcome>) {
    let bin = match own(b) {
        Ok(x) => x,
        Err(e) => return (Err(e), Err(Error::Other("needs own servers".into()))),
    };
    let modes: Vec<String> = match b.strategy.info().modes.as_slice() {
        [] => vec![String::new()],
        m => m.iter().map(|m| m.as_str().to_string()).collect(),
    };
    let mut restart = Vec::new();
    let mut promoted = Vec::new();
    for mode in &modes {
        let opts = if mode.is_empty() {
            Options::default()
        } else {
            Options::default().with("invocation", mode)
        };
        let s = match super::build(&b.name, b.cfg.dir.as_deref(), &opts) {
            Ok(s) => s,
            Err(e) => return (Err(e), Err(Error::Other("see survive-restart".into()))),
        };
        let label = if mode.is_empty() {
            "(no script)"
        } else {
            mode.as_str()
        };
        let client = b.client("survive");
        let r = async {
            let mut f = Fleet::standalone(bin, ServerConfig::default()).await?;
            f.prepare(s.as_ref()).await?;
            decide_once(s.as_ref(), &mut f.conn().await?, &client).await?;
            f.servers[0].restart_with_rdb().await?;
            decide_once(s.as_ref(), &mut f.conn().await?, &client).await
        }
        .await;
        restart.push((label.to_string(), r));
        let r = async {
            let mut f = Fleet::primary_replica(bin, ServerConfig::default()).await?;
            f.prepare(s.as_ref()).await?;
            decide_once(s.as_ref(), &mut f.conn().await?, &client).await?;
            let replica = f.replica().expect("a pair has a replica").addr();
            wait_caught_up(f.primary_addr(), replica, Duration::from_secs(10)).await?;
            f.servers[0].kill();
            f.servers[1].promote().await?;
            decide_once(s.as_ref(), &mut Conn::connect(replica).await?, &client).await
        }
        .await;
        promoted.push((label.to_string(), r));
    }
    let judge = |v: Vec<(String, Result<bool>)>, what: &str| {
        let ok = v.iter().filter(|(_, r)| r.is_ok()).count();
        let detail = v
            .iter()
            .map(|(m, r)| match r {
                Ok(_) => format!("{m}: ok"),
                Err(e) => format!("{m}: {}", first_line(&e.to_string())),
            })
            .collect::<Vec<_>>()
            .join("; ");
        Ok(Outcome::at_least(
            ok as f64 / v.len() as f64,
            "fraction of modes",
            1.0,
            0.01,
            format!("{what}: {detail}"),
        ))
    };
    (
        judge(restart, "after SHUTDOWN SAVE and a restart"),
        judge(
            promoted,
            "on the replica promoted after its primary was killed",
        ),
    )
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or("").chars().take(120).collect()
}

/// Slow: a 3 ms round trip (delay proxy) and a 10 ms deadline: the fraction
/// decided by Redis (a design with several round trips per decision misses
/// the deadline). Gone: the server killed, a 50 ms deadline: the fraction of
/// decisions that followed the policy (fail-open admits, fail-closed
/// refuses) within the deadline plus 20 ms.
pub async fn slow_and_gone(b: &Bench<'_>) -> (Result<Outcome>, Result<Outcome>) {
    let limit = Limit::per_window(1000, 60_000);
    let slow = async {
        let rt = RoundTrip::new(b.addr(), 3.0, 20).await?;
        let mut pc = PolicyClient::new(b.strategy.clone(), rt.addr, Duration::from_millis(10), Policy::FailClosed);
        let client = b.client("slow");
        let n = 40;
        let mut by_redis = 0;
        let mut timeouts = 0;
        for _ in 0..n {
            let req = Request::now(&client, limit);
            let o = pc.decide(&req).await;
            by_redis += u64::from(o.by_redis);
            timeouts += u64::from(o.timeout);
        }
        Ok::<Outcome, Error>(Outcome::at_least(
            by_redis as f64 / n as f64,
            "fraction",
            0.99,
            0.5,
            format!(
                "{n} decisions through a delay proxy (PING {:.2} ms) with a 10 ms deadline: {by_redis} decided by Redis, {timeouts} timed out",
                rt.calibration.rtt_median_us / 1000.0
            ),
        ))
    }
    .await;
    let gone = async {
        let bin = own(b)?;
        let mut f = Fleet::standalone(bin, ServerConfig::default()).await?;
        f.prepare(b.strategy.as_ref()).await?;
        let addr = f.primary_addr();
        let mut clients: Vec<PolicyClient> = [Policy::FailOpen, Policy::FailClosed]
            .into_iter()
            .map(|p| PolicyClient::new(b.strategy.clone(), addr, Duration::from_millis(50), p))
            .collect();
        let client = b.client("gone");
        // One decision each while the server is up (connections made).
        for pc in clients.iter_mut() {
            let req = Request::now(&client, limit);
            pc.decide(&req).await;
        }
        f.servers[0].kill();
        let mut followed = 0;
        let mut n = 0;
        let mut slowest = Duration::ZERO;
        for pc in clients.iter_mut() {
            for _ in 0..10 {
                let req = Request::now(&client, limit);
                let t = Instant::now();
                let o = pc.decide(&req).await;
                let took = t.elapsed();
                slowest = slowest.max(took);
                n += 1;
                let want = pc.policy == Policy::FailOpen;
                if !o.by_redis && o.admitted == want && took <= Duration::from_millis(70) {
                    followed += 1;
                }
            }
        }
        Ok::<Outcome, Error>(Outcome::at_least(
            followed as f64 / n as f64,
            "fraction",
            1.0,
            0.9,
            format!(
                "server killed; {n} decisions (10 fail-open, 10 fail-closed, 50 ms deadline): {followed} followed the policy within 70 ms; slowest {:.1} ms",
                slowest.as_secs_f64() * 1000.0
            ),
        ))
    }
    .await;
    (slow, gone)
}
