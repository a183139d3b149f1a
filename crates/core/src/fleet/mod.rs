//! The Redis servers an experiment runs against.
//!
//! - `server.rs`: one `redis-server` process (config, private directory, port,
//!   start/restart/kill, replica sync, promotion).
//! - `reaper.rs`: makes sure no server outlives the harness (Drop, signal
//!   handler, panic hook, parent-death signal).
//! - `replication.rs`: `INFO replication` and waiting until a replica has
//!   caught up with its primary (offsets compared).
//! - this file: `Fleet`, the topologies (standalone, primary + replica,
//!   3-master cluster) or an external Redis given by `--redis-url`.

pub mod external;
pub mod owned;
pub mod permissions;
pub mod reaper;
pub mod replication;
pub mod server;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

pub use server::{RedisBinary, Server, ServerConfig};

use crate::conn::{CLUSTER_SLOTS, ClusterConn, Conn, NodeSetup};
use crate::redact;
use crate::resp::{Connection, info_fields};
use limitbench_base::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Topology {
    Standalone,
    PrimaryReplica,
    Cluster,
    /// A server limitbench did not start (`--redis-url`): no restarts, no config.
    External,
}

pub struct Fleet {
    pub topology: Topology,
    /// Owned servers: [primary], [primary, replica] or the cluster masters.
    pub servers: Vec<Server>,
    external: Option<SocketAddr>,
}

/// A Redis URL: `redis://[user:password@]host:port[/db]` (or `host:port`).
#[derive(Debug, Clone, PartialEq)]
pub struct RedisUrl {
    pub addr: SocketAddr,
    pub auth: crate::resp::Auth,
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let Some(Ok(v)) = s.get(i + 1..i + 3).map(|h| u8::from_str_radix(h, 16))
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parse a URL with optional user, password (percent-encoded) and database;
/// any host (a name is resolved here). No loopback check: see
/// [`parse_redis_url`] for the harness's own `--redis-url`.
pub fn parse_redis_url_full(url: &str) -> Result<RedisUrl> {
    let bad = |why: &str| {
        Error::Other(format!(
            "cannot parse redis url `{}`: {why}; expected redis://[user:password@]host:port[/db]",
            redact::url(url)
        ))
    };
    if url.contains("://") && !url.starts_with("redis://") {
        return Err(bad("only redis:// is supported (no TLS)"));
    }
    let rest = url.strip_prefix("redis://").unwrap_or(url);
    // Credentials first, up to the last '@': a password may hold '/' or '@'.
    let (creds, rest) = match rest.rsplit_once('@') {
        Some((c, h)) => (Some(c), h),
        None => (None, rest),
    };
    let (hostport, db) = match rest.split_once('/') {
        Some((r, "")) => (r, None),
        Some((r, d)) => (
            r,
            Some(
                d.parse::<u32>()
                    .map_err(|_| bad("the database must be a number"))?,
            ),
        ),
        None => (rest, None),
    };
    let (user, password) = match creds {
        None => (None, None),
        Some(c) => match c.split_once(':') {
            Some((u, p)) => (
                (!u.is_empty()).then(|| percent_decode(u)),
                Some(percent_decode(p)),
            ),
            // `redis://password@host` is how some clients write a bare password.
            None => (None, Some(percent_decode(c))),
        },
    };
    let hostport = if hostport.starts_with('[') || hostport.matches(':').count() == 1 {
        hostport.to_string()
    } else {
        format!("{hostport}:6379")
    };
    let hostport = hostport.replace("localhost", "127.0.0.1");
    let addr: SocketAddr = match hostport.parse() {
        Ok(a) => a,
        Err(_) => {
            use std::net::ToSocketAddrs;
            hostport
                .to_socket_addrs()
                .map_err(|e| bad(&format!("cannot resolve the host: {e}")))?
                .next()
                .ok_or_else(|| bad("the host resolves to no address"))?
        }
    };
    Ok(RedisUrl {
        addr,
        auth: crate::resp::Auth { user, password, db },
    })
}

/// Parse `redis://127.0.0.1:6379` (or `host:port`), refusing non-loopback
/// hosts (the harness's `--redis-url` for `run` and `check`). Credentials
/// and a database are registered for the address, so connections to it
/// authenticate.
pub fn parse_redis_url(url: &str) -> Result<SocketAddr> {
    let u = parse_redis_url_full(url)?;
    crate::resp::require_loopback(&u.addr)?;
    if u.auth != crate::resp::Auth::default() {
        crate::resp::register_auth(u.addr, u.auth);
    }
    Ok(u.addr)
}

impl Fleet {
    pub async fn standalone(bin: &RedisBinary, cfg: ServerConfig) -> Result<Self> {
        let s = Server::start(bin, cfg, false, None).await?;
        Ok(Fleet {
            topology: Topology::Standalone,
            servers: vec![s],
            external: None,
        })
    }

    /// A primary and one replica of it, waited on until the replica is in sync.
    /// The replica gets the same config (and pinning) as the primary.
    pub async fn primary_replica(bin: &RedisBinary, cfg: ServerConfig) -> Result<Self> {
        let primary = Server::start(bin, cfg.clone(), false, None).await?;
        let replica = Server::start(
            bin,
            ServerConfig { port: None, ..cfg },
            false,
            Some(primary.port),
        )
        .await?;
        replica.wait_in_sync(Duration::from_secs(30)).await?;
        Ok(Fleet {
            topology: Topology::PrimaryReplica,
            servers: vec![primary, replica],
            external: None,
        })
    }

    /// `n` masters, slots split evenly, joined with CLUSTER MEET; returns when
    /// every node reports `cluster_state:ok` with all slots assigned.
    pub async fn cluster(bin: &RedisBinary, cfg: ServerConfig, n: usize) -> Result<Self> {
        let mut servers = Vec::new();
        for _ in 0..n {
            servers.push(
                Server::start(
                    bin,
                    ServerConfig {
                        port: None,
                        ..cfg.clone()
                    },
                    true,
                    None,
                )
                .await?,
            );
        }
        let per = CLUSTER_SLOTS / n;
        for (i, s) in servers.iter().enumerate() {
            let lo = i * per;
            let hi = if i + 1 == n {
                CLUSTER_SLOTS - 1
            } else {
                (i + 1) * per - 1
            };
            let mut c = s.connection().await?;
            c.call(&crate::args![
                "CLUSTER",
                "ADDSLOTSRANGE",
                lo as u64,
                hi as u64
            ])
            .await?;
            c.call(&crate::args!["CLUSTER", "SET-CONFIG-EPOCH", (i + 1) as u64])
                .await?;
        }
        let mut first = servers[0].connection().await?;
        for s in &servers[1..] {
            first
                .call(&crate::args!["CLUSTER", "MEET", "127.0.0.1", s.port as u64])
                .await?;
        }
        let fleet = Fleet {
            topology: Topology::Cluster,
            servers,
            external: None,
        };
        fleet.wait_cluster_ok(Duration::from_secs(30)).await?;
        Ok(fleet)
    }

    pub fn external(addr: SocketAddr) -> Self {
        Fleet {
            topology: Topology::External,
            servers: vec![],
            external: Some(addr),
        }
    }

    async fn wait_cluster_ok(&self, limit: Duration) -> Result<()> {
        let start = Instant::now();
        'outer: loop {
            for s in &self.servers {
                let f = s.info("cluster").await;
                let mut c = s.connection().await?;
                let ci = c.call(&crate::args!["CLUSTER", "INFO"]).await?;
                let ci = info_fields(&ci.as_string().unwrap_or_default());
                let ok = ci.get("cluster_state").map(|v| v == "ok").unwrap_or(false)
                    && ci
                        .get("cluster_slots_assigned")
                        .map(|v| v == "16384")
                        .unwrap_or(false)
                    && ci
                        .get("cluster_known_nodes")
                        .map(|v| v == &self.servers.len().to_string())
                        .unwrap_or(false);
                if !ok || f.is_err() {
                    if start.elapsed() > limit {
                        return Err(Error::Timeout(format!(
                            "cluster not ok after {limit:?}: {ci:?}"
                        )));
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue 'outer;
                }
            }
            return Ok(());
        }
    }

    /// Where clients send writes: the primary (or the external server).
    pub fn primary_addr(&self) -> SocketAddr {
        match self.external {
            Some(a) => a,
            None => self.servers[0].addr(),
        }
    }

    pub fn primary(&self) -> &Server {
        &self.servers[0]
    }

    pub fn replica(&self) -> Option<&Server> {
        self.servers.iter().find(|s| s.is_replica_of().is_some())
    }

    /// A client connection: cluster-aware for a cluster, else to the primary.
    pub async fn conn(&self) -> Result<Conn> {
        match self.topology {
            Topology::Cluster => Ok(Conn::Cluster(
                ClusterConn::connect(self.primary_addr()).await?,
            )),
            _ => Conn::connect(self.primary_addr()).await,
        }
    }

    /// One plain connection to each server (every master, or the one server):
    /// used to load scripts everywhere before timing, and to flush.
    pub async fn node_connections(&self) -> Result<Vec<Connection>> {
        if let Some(a) = self.external {
            return Ok(vec![Connection::connect(a).await?]);
        }
        let mut v = Vec::new();
        for s in &self.servers {
            if self.topology == Topology::PrimaryReplica && s.is_replica_of().is_some() {
                continue;
            }
            v.push(s.connection().await?);
        }
        Ok(v)
    }

    /// Load a strategy's scripts and functions (any [`NodeSetup`]) on every
    /// writable node: every master of a cluster, only the primary of a pair
    /// (a function library reaches the replica through replication; the
    /// script cache does not, which is what `script-survival` measures).
    /// Done before timing, so no decision pays for a first load.
    pub async fn prepare<S: NodeSetup + ?Sized>(&self, setup: &S) -> Result<()> {
        for mut node in self.node_connections().await? {
            setup.set_up_node(&mut node).await?;
        }
        Ok(())
    }

    /// FLUSHALL on every writable node (a replica follows its primary).
    pub async fn flush_all(&self) -> Result<()> {
        for mut c in self.node_connections().await? {
            c.call(&crate::args!["FLUSHALL"]).await?;
        }
        Ok(())
    }

    /// redis-server version and `CONFIG GET *` of the primary, for the
    /// manifest. Both only describe the server: on a server that refuses
    /// them (an ACL without `+info` or `+config`, a renamed CONFIG) the
    /// manifest records them as unavailable, with the server's reply, and
    /// the run goes on.
    pub async fn describe(&self) -> Result<serde_json::Value> {
        let mut c = Connection::connect(self.primary_addr()).await?;
        let mut unavailable = Vec::new();
        let info = match c.call(&crate::args!["INFO", "server"]).await {
            Ok(r) => info_fields(&r.as_string().unwrap_or_default()),
            Err(e) => {
                unavailable.push(format!("INFO server: {e}"));
                Default::default()
            }
        };
        let cfg = match c.call(&crate::args!["CONFIG", "GET", "*"]).await {
            Ok(r) => r.into_array().unwrap_or_default(),
            Err(e) => {
                unavailable.push(format!("CONFIG GET: {e}"));
                Vec::new()
            }
        };
        let cfg: std::collections::BTreeMap<String, String> = cfg
            .chunks(2)
            .filter_map(|kv| Some((kv.first()?.as_string()?, kv.get(1)?.as_string()?)))
            .collect();
        // CONFIG holds requirepass and masterauth: masked before anyone sees it.
        Ok(redact::json(&serde_json::json!({
            "topology": self.topology,
            "redis_version": info.get("redis_version"),
            "servers": self.servers.iter().map(|s| serde_json::json!({
                "port": s.port, "pinned_cpu": s.pinned_cpu(), "replica_of": s.is_replica_of(),
            })).collect::<Vec<_>>(),
            "config": cfg,
            "unavailable": unavailable,
        })))
    }
}

#[cfg(test)]
mod url_tests {
    use super::*;

    #[test]
    fn urls_carry_user_password_and_database() {
        let u = parse_redis_url_full("redis://bench:p%40ss@127.0.0.1:7000/3").unwrap();
        assert_eq!(u.addr, "127.0.0.1:7000".parse().unwrap());
        assert_eq!(u.auth.user.as_deref(), Some("bench"));
        assert_eq!(u.auth.password.as_deref(), Some("p@ss"));
        assert_eq!(u.auth.db, Some(3));
        let u = parse_redis_url_full("redis://:secret@localhost").unwrap();
        assert_eq!(u.addr, "127.0.0.1:6379".parse().unwrap());
        assert_eq!(
            (u.auth.user, u.auth.password.as_deref(), u.auth.db),
            (None, Some("secret"), None)
        );
        assert_eq!(
            parse_redis_url_full("127.0.0.1:6380").unwrap().auth,
            crate::resp::Auth::default()
        );
        // Any host for a user-named URL; the harness's own stays loopback.
        assert!(parse_redis_url_full("redis://10.0.0.1:6379").is_ok());
        assert!(matches!(
            parse_redis_url("redis://10.0.0.1:6379"),
            Err(Error::NotLoopback(_))
        ));
        let e = parse_redis_url_full("redis://:pw@127.0.0.1:1/x")
            .unwrap_err()
            .to_string();
        assert!(e.contains("database") && !e.contains("pw@"), "{e}");
        assert!(parse_redis_url_full("rediss://127.0.0.1:1").is_err());
        // A password holding '/' and '@' parses (credentials end at the last '@')...
        let u = parse_redis_url_full("redis://u:Zq9/Xk@77@127.0.0.1:7701").unwrap();
        assert_eq!(u.auth.password.as_deref(), Some("Zq9/Xk@77"));
        assert_eq!(u.addr, "127.0.0.1:7701".parse().unwrap());
        // ...and a URL that does not parse never shows it.
        let e = parse_redis_url_full("redis://u:Zq9/Xk@77@127.0.0.1:77x01")
            .unwrap_err()
            .to_string();
        assert!(!e.contains("Zq9") && !e.contains("Xk@77"), "{e}");
    }
}
