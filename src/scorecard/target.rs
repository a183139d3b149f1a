//! A Redis you run (`--redis-url`, `--cluster-url`): checked before anything
//! is written (reachable, answers like Redis, a cluster URL is a cluster,
//! holds no key under the prefix), described for the scorecard header (INFO:
//! version, mode, maxmemory policy; the measured round trip), and cleaned
//! up at the end (every key containing the prefix deleted).

use std::net::SocketAddr;

use crate::check::keys_containing;
use crate::conn::ClusterConn;
use crate::error::{Error, Result};
use crate::experiments::testbed::measure_rtt;
use crate::info;
use crate::resp::Connection;

pub struct External {
    pub url: String,
    pub addr: SocketAddr,
    pub cluster_url: Option<String>,
    pub cluster: Option<SocketAddr>,
}

/// The URL without its password, for printing and the header.
pub use crate::fleet::redact_url as redact;

/// Parse a user-named URL, allow its address and register its credentials.
fn register(url: &str) -> Result<SocketAddr> {
    let u = crate::fleet::parse_redis_url_full(url)?;
    if !u.addr.ip().is_loopback() {
        crate::resp::allow_remote(u.addr);
    }
    crate::resp::register_auth(u.addr, u.auth);
    Ok(u.addr)
}

async fn check_redis(addr: SocketAddr, url: &str) -> Result<Connection> {
    let connect =
        tokio::time::timeout(std::time::Duration::from_secs(5), Connection::connect(addr));
    let mut c = match connect.await {
        Err(_) => {
            return Err(Error::Other(format!(
                "cannot reach {}: no answer in 5 s (not Redis?)",
                redact(url)
            )));
        }
        Ok(Err(e)) if e.to_string().contains("AUTH") => {
            return Err(Error::Other(format!(
                "{} refused the credentials: {e}",
                redact(url)
            )));
        }
        Ok(Err(e)) => return Err(Error::Other(format!("cannot reach {}: {e}", redact(url)))),
        Ok(Ok(c)) => c,
    };
    c.timeout = Some(std::time::Duration::from_secs(5));
    let r = c.call(&crate::args!["PING"]).await;
    c.timeout = None;
    match r {
        Ok(r) if r.as_string().as_deref() == Some("PONG") => Ok(c),
        Ok(r) => Err(Error::Other(format!(
            "{} did not answer PING like Redis: {}",
            redact(url),
            r.one_line()
        ))),
        Err(e) if e.to_string().contains("NOAUTH") => Err(Error::Other(format!(
            "{} needs a password (redis://user:password@host:port): {e}",
            redact(url)
        ))),
        Err(e) => Err(Error::Other(format!(
            "{} did not answer PING like Redis (not Redis?): {e}",
            redact(url)
        ))),
    }
}

impl External {
    /// Check the servers and the prefix; an error names the cause.
    pub async fn connect(url: &str, cluster_url: Option<&str>, prefix: &str) -> Result<Self> {
        let addr = register(url)?;
        let mut c = check_redis(addr, url).await?;
        let cluster = match cluster_url {
            None => None,
            Some(cu) => {
                let a = register(cu)?;
                let mut cc = check_redis(a, cu).await?;
                let ci = cc.call(&crate::args!["CLUSTER", "INFO"]).await;
                let enabled = match &ci {
                    Ok(r) => crate::resp::info_fields(&r.as_string().unwrap_or_default())
                        .contains_key("cluster_state"),
                    Err(_) => false,
                };
                if !enabled {
                    return Err(Error::Other(format!(
                        "--cluster-url {} is not a Redis Cluster node (cluster support disabled: {})",
                        redact(cu),
                        ci.err()
                            .map(|e| e.to_string())
                            .unwrap_or_else(|| "no cluster_state".into())
                    )));
                }
                Some(a)
            }
        };
        let x = External {
            url: url.to_string(),
            addr,
            cluster_url: cluster_url.map(str::to_string),
            cluster,
        };
        let mut held = keys_containing(&mut c, prefix).await?.len();
        if let Some(seed) = cluster {
            for a in ClusterConn::connect(seed).await?.node_addrs() {
                held += keys_containing(&mut Connection::connect(a).await?, prefix)
                    .await?
                    .len();
            }
        }
        if held > 0 {
            return Err(Error::Other(format!(
                "the server already holds {held} key(s) containing the prefix `{prefix}`; choose another --key-prefix or --run-id"
            )));
        }
        Ok(x)
    }

    /// INFO (version, mode, maxmemory policy) and the measured round trip.
    pub async fn describe(&self) -> Result<serde_json::Value> {
        let mut out = serde_json::Map::new();
        for (label, addr, url) in [
            ("redis", Some(self.addr), Some(&self.url)),
            ("cluster", self.cluster, self.cluster_url.as_ref()),
        ] {
            let (Some(addr), Some(url)) = (addr, url) else {
                continue;
            };
            let mut c = Connection::connect(addr).await?;
            let f = info::read(&mut c, &["server", "memory"]).await?;
            let rtt = measure_rtt(addr, 50).await?;
            out.insert(
                label.into(),
                serde_json::json!({
                    "url": redact(url),
                    "redis_version": f.get("redis_version"),
                    "redis_mode": f.get("redis_mode"),
                    "maxmemory_policy": f.get("maxmemory_policy"),
                    "rtt_median_us": rtt.rtt_median_us,
                    "rtt_p99_us": rtt.rtt_p99_us,
                }),
            );
        }
        Ok(serde_json::json!({ "external": out }))
    }

    /// Delete every key containing `prefix` (standalone and cluster masters).
    pub async fn clean_up(&self, prefix: &str) -> Result<u64> {
        let mut addrs = vec![self.addr];
        if let Some(seed) = self.cluster {
            addrs.extend(ClusterConn::connect(seed).await?.node_addrs());
        }
        let mut n = 0;
        for a in addrs {
            let mut c = Connection::connect(a).await?;
            for k in keys_containing(&mut c, prefix).await? {
                c.call(&crate::args!["DEL", k.as_str()]).await?;
                n += 1;
            }
        }
        Ok(n)
    }
}
