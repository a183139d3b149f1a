//! Helpers shared by study B's topology experiments (`replication`,
//! `ts-member`, `script-survival`, `cluster`, `fail-open`, `failover`):
//! exact error texts, waiting for a replica to catch up, a seeded RNG per
//! trial, and small parsing helpers. Nothing here decides anything; it only
//! keeps the six experiment files from repeating the same plumbing.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use rand::SeedableRng;

use crate::error::{Error, Result};
use crate::resp::{Connection, Reply, info_fields};

/// The text a caller would see: Redis's own error reply verbatim where there
/// is one, else the harness's error message.
pub fn error_text(e: &Error) -> String {
    match e.reply_text() {
        Some(t) => t.to_string(),
        None => e.to_string(),
    }
}

/// The first word of a Redis error (`NOSCRIPT`, `READONLY`, `ERR`, ...), or
/// a class for errors that are not replies (`timeout`, `io`, `other`).
pub fn error_class(e: &Error) -> String {
    match e {
        Error::Reply(t) => t.split_whitespace().next().unwrap_or("ERR").to_string(),
        Error::Timeout(_) => "timeout".into(),
        Error::Io { .. } => "io".into(),
        _ => "other".into(),
    }
}

/// A reply shown as one short line (for CSV cells).
pub fn reply_text(r: &Reply) -> String {
    match r {
        Reply::Nil => "nil".into(),
        Reply::Status(s) => s.clone(),
        Reply::Int(i) => i.to_string(),
        Reply::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
        Reply::Error(e) => e.clone(),
        Reply::Array(a) => format!(
            "[{}]",
            a.iter().map(reply_text).collect::<Vec<_>>().join(",")
        ),
    }
}

/// `INFO replication` of one server.
pub async fn replication_info(
    addr: SocketAddr,
) -> Result<std::collections::BTreeMap<String, String>> {
    let mut c = Connection::connect(addr).await?;
    let r = c.call(&crate::args!["INFO", "replication"]).await?;
    Ok(info_fields(&r.as_string().unwrap_or_default()))
}

/// How the replica caught up with the primary.
#[derive(Debug, Clone, Copy, Default)]
pub struct CatchUp {
    pub master_offset: u64,
    pub replica_offset: u64,
    pub waited_ms: f64,
    pub caught_up: bool,
}

/// Wait until the replica's processed offset reaches the primary's
/// `master_repl_offset` as read now (or `limit` passes). Comparing offsets,
/// rather than sleeping, proves the replica has applied every write made so far.
pub async fn wait_caught_up(
    primary: SocketAddr,
    replica: SocketAddr,
    limit: Duration,
) -> Result<CatchUp> {
    let start = Instant::now();
    let p = replication_info(primary).await?;
    let master_offset: u64 = p
        .get("master_repl_offset")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    loop {
        let r = replication_info(replica).await?;
        let replica_offset: u64 = r
            .get("slave_repl_offset")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        if replica_offset >= master_offset || start.elapsed() > limit {
            return Ok(CatchUp {
                master_offset,
                replica_offset,
                waited_ms: start.elapsed().as_secs_f64() * 1e3,
                caught_up: replica_offset >= master_offset,
            });
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// A deterministic RNG for one (cell, trial): the run's seed mixed with the
/// cell's name and the trial number, so a resumed trial draws what it would have.
pub fn trial_rng(seed: u64, cell: &str, trial: u64) -> rand::rngs::StdRng {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in cell.as_bytes() {
        h ^= *b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    rand::rngs::StdRng::seed_from_u64(seed ^ h ^ trial.wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

/// A run-unique prefix for keys, so trials never share state.
pub fn unique_client(tag: &str, cell: &str, trial: u64) -> String {
    format!(
        "{tag}-{}-{trial}-{}",
        cell.replace(|c: char| !c.is_ascii_alphanumeric(), "_"),
        crate::load::next_request_id()
    )
}
