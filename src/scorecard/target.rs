//! A Redis you run (`--redis-url`, `--cluster-url`): checked before anything
//! is written (reachable, answers like Redis, a cluster URL is a cluster, not
//! a replica, memory headroom, no key starting with the prefix, a remote
//! host only with `--allow-remote`), announced (host and prefix), described
//! for the scorecard header without credentials (INFO: version, mode,
//! maxmemory policy; the measured round trip), and cleaned up at the end:
//! every key that starts with the prefix and the libraries named with it
//! (`fleet::owned`), also on Ctrl-C, a panic or an early return.

use std::net::SocketAddr;

use limitbench_base::error::Result;
use limitbench_core::fleet::external::{OpenPolicy, UserServer};
use limitbench_core::info;
use limitbench_core::proxy::measure_rtt;
use limitbench_core::resp::Connection;

pub struct External {
    pub url: String,
    pub addr: SocketAddr,
    pub cluster_url: Option<String>,
    pub cluster: Option<SocketAddr>,
    servers: Vec<UserServer>,
}

/// The URL without its password, for printing and the header.

impl External {
    /// Check the servers and the prefix; an error names the cause. Loopback
    /// only; see [`External::connect_with`] for a remote server.
    pub async fn connect(url: &str, cluster_url: Option<&str>, prefix: &str) -> Result<Self> {
        Self::connect_with(url, cluster_url, prefix, None, false).await
    }

    /// As [`External::connect`]; `run_id` must then be in the prefix, and
    /// `allow_remote` lets a non-loopback host through (`--allow-remote`).
    pub async fn connect_with(
        url: &str,
        cluster_url: Option<&str>,
        prefix: &str,
        run_id: Option<&str>,
        allow_remote: bool,
    ) -> Result<Self> {
        let policy = OpenPolicy {
            allow_remote,
            ..OpenPolicy::default()
        };
        let main = UserServer::open(url, prefix, run_id, policy).await?;
        main.announce();
        let addr = main.addr;
        let mut servers = vec![main];
        let mut cluster = None;
        if let Some(cu) = cluster_url {
            let policy = OpenPolicy {
                cluster: true,
                ..policy
            };
            let c = UserServer::open(cu, prefix, run_id, policy).await?;
            c.announce();
            cluster = Some(c.addr);
            servers.push(c);
        }
        Ok(External {
            url: url.to_string(),
            addr,
            cluster_url: cluster_url.map(str::to_string),
            cluster,
            servers,
        })
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
            // INFO only describes the server: refused (an ACL without
            // +info), it is recorded as unavailable and the battery runs.
            let (f, unavailable) = match info::read(&mut c, &["server", "memory"]).await {
                Ok(f) => (f, None),
                Err(e) => (Default::default(), Some(format!("INFO: {e}"))),
            };
            let rtt = measure_rtt(addr, 50).await?;
            out.insert(
                label.into(),
                serde_json::json!({
                    "url": limitbench_core::redact::url(url),
                    "redis_version": f.get("redis_version"),
                    "redis_mode": f.get("redis_mode"),
                    "maxmemory_policy": f.get("maxmemory_policy"),
                    "rtt_median_us": rtt.rtt_median_us,
                    "rtt_p99_us": rtt.rtt_p99_us,
                    "unavailable": unavailable,
                }),
            );
        }
        Ok(limitbench_core::redact::json(
            &serde_json::json!({ "external": out }),
        ))
    }

    /// Remove every key that starts with the prefix and the libraries the
    /// run loaded (standalone and every cluster master); returns the keys.
    /// `prefix` must be the one connected with.
    pub async fn clean_up(&self, prefix: &str) -> Result<u64> {
        debug_assert!(self.servers.iter().all(|s| s.prefix == prefix));
        match self.servers.first() {
            Some(s) => Ok(s.clean_up().await?.keys),
            None => Ok(0),
        }
    }
}
