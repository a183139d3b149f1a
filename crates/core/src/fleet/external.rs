//! A Redis the user runs (`--redis-url`, `--cluster-url`): checked before
//! anything is written, announced (the host and the prefix the run will
//! write under), described without credentials, and cleaned up at the end
//! (also on Ctrl-C and panic, through `owned`'s claims).
//!
//! Refused: a non-loopback host unless the caller allows remote servers
//! (the scorecard's `--allow-remote`; `run` and `check` never do), a
//! server that is a replica (writes would fail, or be lost), one whose
//! `maxmemory` is nearly used (the run's keys could evict the user's), and
//! one that already holds a key under the prefix (unless the run resumes:
//! then those keys are the run's own, left by a killed session).

use std::net::SocketAddr;
use std::time::Duration;

use super::owned;
use crate::conn::ClusterConn;
use crate::namespace;
use crate::redact;
use crate::resp::Connection;
use limitbench_base::error::{Error, Result};

/// At least this share of `maxmemory` must be free.
pub const MIN_FREE_MEMORY: f64 = 0.10;

/// How a user-named server is opened.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenPolicy {
    /// A non-loopback host is allowed (the scorecard's `--allow-remote`).
    pub allow_remote: bool,
    /// Keys under the prefix may exist already (a resumed run's own).
    pub resume: bool,
    /// The URL must be a Redis Cluster node (`--cluster-url`).
    pub cluster: bool,
}

/// A checked server the run writes to under `prefix`.
#[derive(Debug)]
pub struct UserServer {
    /// The URL without its password.
    pub url: String,
    pub addr: SocketAddr,
    /// Every node written to: the server, or every master of the cluster.
    pub nodes: Vec<SocketAddr>,
    pub prefix: String,
    /// Optional permissions the user lacks (`permissions::check`), each
    /// with the server's reply; `announce` says them.
    pub missing_optional: Vec<String>,
}

/// Parse, allow (if remote and allowed) and register the credentials of a
/// user-named URL.
pub fn register(url: &str, allow_remote: bool) -> Result<SocketAddr> {
    let u = super::parse_redis_url_full(url)?;
    if !u.addr.ip().is_loopback() {
        if !allow_remote {
            return Err(Error::Other(format!(
                "{} is not a loopback address; writing to a remote Redis needs --allow-remote (scorecard only; run and check measure on loopback)",
                redact::url(url)
            )));
        }
        crate::resp::allow_remote(u.addr);
    }
    crate::resp::register_auth(u.addr, u.auth);
    Ok(u.addr)
}

/// Whether a failed AUTH came from Redis (a refused password) or from
/// something that does not speak RESP (not Redis).
fn refused_by_redis(e: &Error) -> bool {
    let t = e.to_string();
    [
        "WRONGPASS",
        "invalid password",
        "invalid username",
        "ERR AUTH",
        "NOAUTH",
        "ERR Client sent AUTH",
        "ERR ",
    ]
    .iter()
    .any(|w| t.contains(w))
}

/// Connect and PING within 5 s; every failure names its cause.
pub async fn check_redis(addr: SocketAddr, url: &str) -> Result<Connection> {
    let shown = redact::url(url);
    let connect = tokio::time::timeout(Duration::from_secs(5), Connection::connect(addr));
    let mut c = match connect.await {
        Err(_) => {
            return Err(Error::Other(format!(
                "cannot reach {shown}: no answer in 5 s (not Redis?)"
            )));
        }
        Ok(Err(e)) if e.to_string().contains("AUTH") => {
            let e = redact::text(&e.to_string());
            return Err(Error::Other(if refused_by_redis_text(&e) {
                format!("{shown} refused the credentials: {e}")
            } else {
                format!("{shown} is not Redis (it did not answer AUTH like Redis): {e}")
            }));
        }
        Ok(Err(e)) => return Err(Error::Other(format!("cannot reach {shown}: {e}"))),
        Ok(Ok(c)) => c,
    };
    c.timeout = Some(Duration::from_secs(5));
    let r = c.call(&crate::args!["PING"]).await;
    match r {
        Ok(r) if r.as_string().as_deref() == Some("PONG") => Ok(c),
        Ok(r) => Err(Error::Other(format!(
            "{shown} did not answer PING like Redis: {}",
            r.one_line()
        ))),
        Err(e) if e.to_string().contains("NOAUTH") => Err(Error::Other(format!(
            "{shown} needs a password (put user:password before the host in the URL): {e}"
        ))),
        Err(e) => Err(Error::Other(format!(
            "{shown} did not answer PING like Redis (not Redis?): {e}"
        ))),
    }
}

fn refused_by_redis_text(t: &str) -> bool {
    refused_by_redis(&Error::Other(t.to_string()))
}

/// Refuse a replica and a server without memory headroom.
pub async fn check_writable_server(c: &mut Connection, shown: &str) -> Result<()> {
    let f = crate::info::read(c, &["replication", "memory"]).await?;
    if f.get("role").map(String::as_str) == Some("slave") {
        return Err(Error::Other(format!(
            "{shown} is a replica (role:slave); point the harness at the primary"
        )));
    }
    let max = crate::info::number(&f, "maxmemory").unwrap_or(0.0);
    let used = crate::info::number(&f, "used_memory").unwrap_or(0.0);
    if max > 0.0 && used > max * (1.0 - MIN_FREE_MEMORY) {
        return Err(Error::Other(format!(
            "{shown} has used {used:.0} of its maxmemory {max:.0} bytes (less than {:.0}% free); the run's keys could evict the server's own",
            MIN_FREE_MEMORY * 100.0
        )));
    }
    Ok(())
}

/// Whether a node has cluster mode on.
async fn is_cluster(c: &mut Connection) -> std::result::Result<bool, String> {
    match c.call(&crate::args!["CLUSTER", "INFO"]).await {
        Ok(r) => Ok(crate::resp::info_fields(&r.as_string().unwrap_or_default())
            .contains_key("cluster_state")),
        Err(e) => Err(e.to_string()),
    }
}

impl UserServer {
    /// Check the server (and, for a cluster, every master) and the prefix,
    /// then claim it: from here on every key built starts with `prefix`
    /// and everything under it is removed at the end.
    pub async fn open(
        url: &str,
        prefix: &str,
        run_id: Option<&str>,
        policy: OpenPolicy,
    ) -> Result<Self> {
        owned::check_prefix(prefix, run_id)?;
        let shown = redact::url(url);
        let addr = register(url, policy.allow_remote)?;
        let mut c = check_redis(addr, url).await?;
        let user = super::parse_redis_url_full(url)?.auth.user;
        let perms = super::permissions::check(&mut c, prefix, &shown, user.as_deref()).await?;
        let nodes = if policy.cluster {
            match is_cluster(&mut c).await {
                Ok(true) => ClusterConn::connect(addr).await?.node_addrs(),
                Ok(false) | Err(_) => {
                    return Err(Error::Other(format!(
                        "--cluster-url {shown} is not a Redis Cluster node (cluster support disabled)"
                    )));
                }
            }
        } else {
            vec![addr]
        };
        let mut held = 0;
        for &n in &nodes {
            let mut nc = if n == addr {
                check_redis(n, url).await?
            } else {
                Connection::connect(n).await?
            };
            nc.timeout = Some(Duration::from_secs(10));
            check_writable_server(&mut nc, &format!("{shown} (node {n})")).await?;
            held += owned::keys_with_prefix(&mut nc, prefix).await?.len();
        }
        if held > 0 && !policy.resume {
            return Err(Error::Other(format!(
                "{shown} already holds {held} key(s) starting with the prefix `{prefix}`; choose another --key-prefix or --run-id"
            )));
        }
        namespace::set_namespace(prefix);
        owned::claim(nodes.clone(), prefix, policy.cluster)?;
        Ok(UserServer {
            url: shown,
            addr,
            nodes,
            prefix: prefix.to_string(),
            missing_optional: perms.missing_optional,
        })
    }

    /// The process ids the server's nodes on loopback report (`INFO
    /// server`'s `process_id`); a node that does not answer (an ACL without
    /// INFO) is left out. Inside a container the id is the container's, so
    /// the caller checks the process before trusting it.
    pub async fn local_pids(&self) -> Vec<u32> {
        let mut out = Vec::new();
        for n in self.nodes.iter().filter(|n| n.ip().is_loopback()) {
            let Ok(mut c) = Connection::connect(*n).await else {
                continue;
            };
            c.timeout = Some(Duration::from_secs(5));
            if let Ok(info) = crate::info::read(&mut c, &["server"]).await
                && let Some(pid) = info.get("process_id").and_then(|p| p.parse().ok())
            {
                out.push(pid);
            }
        }
        out
    }

    /// Say where the run writes, before it writes.
    pub fn announce(&self) {
        eprintln!(
            "limitbench: writing to {} ({} node(s)) under the key prefix `{}` only; everything under it is removed at the end",
            self.url,
            self.nodes.len(),
            self.prefix
        );
        for m in &self.missing_optional {
            eprintln!(
                "limitbench: note: the user may not use {m}; what needs it is skipped or fails naming it"
            );
        }
    }

    /// Remove everything the run wrote (every claim), with a line saying what.
    pub async fn clean_up(&self) -> Result<owned::Removed> {
        let r = owned::release_all().await?;
        namespace::set_namespace("");
        eprintln!(
            "limitbench: removed {} key(s) and {} function library(ies) under `{}` from {}",
            r.keys, r.libraries, self.prefix, self.url
        );
        Ok(r)
    }
}

impl Drop for UserServer {
    /// A run that ends early (an error, a panic) still cleans up.
    fn drop(&mut self) {
        owned::release_all_blocking(false);
    }
}
