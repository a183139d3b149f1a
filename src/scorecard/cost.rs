//! Cost: Redis CPU per decision (INFO cpu, user + sys, over a timed window)
//! as a multiple of Redis CPU per GET measured the same way in the same run,
//! and decisions/s of 16 closed-loop connections as a fraction of GETs/s.
//! Unpinned (the cost experiment pins Redis and the load to cores and uses
//! the lean replay loop; this is the quick, portable version). Decisions go
//! to 1,000 clients drawn in turn, at a limit of 100 per minute, so most
//! are admitted.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::{Bench, Outcome};
use crate::conn::Conn;
use crate::error::Result;
use crate::load::replay::{cpu_cost, redis_snapshot};
use crate::resp::Connection;
use crate::run::Size;
use crate::strategy::{Limit, Request, Strategy};

/// What a spray of decisions did.
#[derive(Debug, Clone, Default)]
pub struct Sprayed {
    pub decisions: u64,
    pub admitted: u64,
    pub errors: u64,
    pub first_error: Option<String>,
}

/// `conns` connections deciding on `clients` in turn until `total`
/// decisions were made or `duration` passed.
pub async fn spray(
    addr: SocketAddr,
    s: &Arc<dyn Strategy>,
    clients: &[String],
    limit: Limit,
    conns: usize,
    total: Option<u64>,
    duration: Option<Duration>,
) -> Result<Sprayed> {
    let clients = Arc::new(clients.to_vec());
    let next = Arc::new(AtomicU64::new(0));
    let deadline = duration.map(|d| Instant::now() + d);
    let mut tasks = Vec::new();
    for _ in 0..conns {
        let mut conn = Conn::connect(addr).await?;
        let (s, clients, next) = (s.clone(), clients.clone(), next.clone());
        tasks.push(tokio::spawn(async move {
            let mut out = Sprayed::default();
            loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                if total.is_some_and(|t| k >= t) || deadline.is_some_and(|d| Instant::now() >= d) {
                    break;
                }
                let req = Request::now(&clients[(k % clients.len() as u64) as usize], limit);
                out.decisions += 1;
                match s.decide(&mut conn, &req).await {
                    Ok(d) => out.admitted += u64::from(d.admitted),
                    Err(e) => {
                        out.errors += 1;
                        out.first_error.get_or_insert(e.to_string());
                    }
                }
            }
            out
        }));
    }
    let mut all = Sprayed::default();
    for t in tasks {
        let o = t
            .await
            .map_err(|e| crate::Error::Other(format!("spray task failed: {e}")))?;
        all.decisions += o.decisions;
        all.admitted += o.admitted;
        all.errors += o.errors;
        if all.first_error.is_none() {
            all.first_error = o.first_error;
        }
    }
    Ok(all)
}

/// `conns` connections sending GET on one key for `duration`: calls made.
async fn gets(addr: SocketAddr, key: &str, conns: usize, duration: Duration) -> Result<u64> {
    let deadline = Instant::now() + duration;
    let mut tasks = Vec::new();
    for _ in 0..conns {
        let mut c = Connection::connect(addr).await?;
        let key = key.to_string();
        tasks.push(tokio::spawn(async move {
            let mut n = 0u64;
            while Instant::now() < deadline {
                c.call(&crate::args!["GET", key.as_str()]).await?;
                n += 1;
            }
            Ok::<u64, crate::Error>(n)
        }));
    }
    let mut n = 0;
    for t in tasks {
        n += t
            .await
            .map_err(|e| crate::Error::Other(format!("GET task failed: {e}")))??;
    }
    Ok(n)
}

const CONNS: usize = 16;

/// (cost-x-get, decisions-per-s).
pub async fn measure(b: &Bench<'_>) -> (Result<Outcome>, Result<Outcome>) {
    match measure_both(b).await {
        Ok((c, d)) => (Ok(c), Ok(d)),
        Err(e) => {
            let msg = e.to_string();
            (Err(e), Err(crate::Error::Other(msg)))
        }
    }
}

async fn measure_both(b: &Bench<'_>) -> Result<(Outcome, Outcome)> {
    let window = match b.size() {
        Size::Smoke => Duration::from_millis(500),
        Size::Quick => Duration::from_millis(1500),
        Size::Full => Duration::from_secs(4),
    };
    let mut admin = Connection::connect(b.addr()).await?;
    let get_key = b.client("get");
    // GET first, then the strategy, each its own window.
    let (c0, _) = redis_snapshot(&mut admin).await?;
    let t = Instant::now();
    let n_get = gets(b.addr(), &get_key, CONNS, window).await?;
    let wall_get = t.elapsed().as_secs_f64();
    let (c1, _) = redis_snapshot(&mut admin).await?;
    let get = cpu_cost(&c0, &c1, n_get, wall_get);

    let base = b.client("cost");
    let clients: Vec<String> = (0..1000).map(|i| format!("{base}-{i}")).collect();
    let (d0, _) = redis_snapshot(&mut admin).await?;
    let t = Instant::now();
    let sp = spray(
        b.addr(),
        &b.strategy,
        &clients,
        Limit::per_window(100, 60_000),
        CONNS,
        None,
        Some(window),
    )
    .await?;
    let wall = t.elapsed().as_secs_f64();
    let (d1, _) = redis_snapshot(&mut admin).await?;
    let dec = cpu_cost(&d0, &d1, sp.decisions, wall);
    if sp.errors > 0 && sp.errors * 10 > sp.decisions {
        return Err(crate::Error::Other(format!(
            "{} of {} decisions failed: {}",
            sp.errors,
            sp.decisions,
            sp.first_error.unwrap_or_default()
        )));
    }
    let x = dec.cpu_us_per_decision / get.cpu_us_per_decision;
    let rate = sp.decisions as f64 / wall;
    let get_rate = n_get as f64 / wall_get;
    let cost = Outcome::at_most(
        x,
        "x GET",
        3.0,
        10.0,
        format!(
            "{:.2} us Redis CPU per decision ({} decisions, Redis {:.0} % busy) vs {:.2} us per GET ({} GETs, {:.0} % busy); {CONNS} connections, {:.1} s windows, unpinned",
            dec.cpu_us_per_decision,
            sp.decisions,
            100.0 * dec.busy_fraction,
            get.cpu_us_per_decision,
            n_get,
            100.0 * get.busy_fraction,
            window.as_secs_f64()
        ),
    );
    let per_s = Outcome::at_least(
        rate / get_rate,
        "x GET/s",
        0.5,
        0.2,
        format!(
            "{rate:.0} decisions/s vs {get_rate:.0} GETs/s ({CONNS} connections, closed loop, one process on this machine)"
        ),
    );
    // The value shown is the fraction; the rate itself is in the detail.
    Ok((cost, per_s))
}
