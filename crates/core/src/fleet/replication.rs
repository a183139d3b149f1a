//! Watching replication: a server's `INFO replication`, and waiting until a
//! replica has applied every write its primary made so far.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::resp::{Connection, info_fields};
use limitbench_base::error::Result;

/// `INFO replication` of one server.
pub async fn replication_info(addr: SocketAddr) -> Result<BTreeMap<String, String>> {
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

fn offset(info: &BTreeMap<String, String>, field: &str) -> u64 {
    info.get(field).and_then(|v| v.parse().ok()).unwrap_or(0)
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
    let master_offset = offset(&replication_info(primary).await?, "master_repl_offset");
    loop {
        let replica_offset = offset(&replication_info(replica).await?, "slave_repl_offset");
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
