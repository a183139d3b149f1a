//! What a server is, read from the server itself: product (Valkey answers
//! `redis_version:7.2.4` for compatibility and names itself in
//! `server_name` / `valkey_version`), version, allocator, and its own
//! defaults of every setting limitbench later changes.

use std::collections::BTreeMap;

use limitbench_base::error::Result;
use limitbench_core::fleet::{RedisBinary, Server, ServerConfig};

/// Every setting limitbench writes into a server's config or sets at run
/// time (fleet/server.rs's config file, the experiments' directives and
/// CONFIG SETs). Their defaults are read from a server started bare, before
/// anything is set, so a row can say which default a finding depends on.
pub const SETTINGS_LIMITBENCH_SETS: &[&str] = &[
    "save",
    "appendonly",
    "repl-diskless-sync-delay",
    "latency-monitor-threshold",
    "cluster-node-timeout",
    "replica-read-only",
    "slowlog-log-slower-than",
    "slowlog-max-len",
    "latency-tracking",
    "lazyfree-lazy-expire",
    "lazyfree-lazy-eviction",
    "lazyfree-lazy-server-del",
    "lazyfree-lazy-user-del",
    "lazyfree-lazy-user-flush",
    "replica-lazy-flush",
    "bio_cpulist",
    "maxmemory",
    "maxmemory-policy",
    "zset-max-listpack-entries",
    "zset-max-listpack-value",
];

/// What a server is: plain data, defined beside the matrix's analysis
/// (`limitbench_analysis::matrix`), which reads it; [`probe`] fills it.
use limitbench_analysis::matrix::Identity;

/// The product and version from INFO server's fields.
pub fn product_of(info: &BTreeMap<String, String>) -> (String, String) {
    let redis_version = info.get("redis_version").cloned().unwrap_or_default();
    match info.get("valkey_version") {
        Some(v) => ("Valkey".into(), v.clone()),
        None if info
            .get("server_name")
            .is_some_and(|n| n.eq_ignore_ascii_case("valkey")) =>
        {
            ("Valkey".into(), redis_version)
        }
        None => ("Redis".into(), redis_version),
    }
}

/// Start `bin` bare on loopback (as the matrix does before a run), read its
/// identity and defaults, stop it.
pub async fn probe(bin: &RedisBinary) -> Result<Identity> {
    let cfg = ServerConfig {
        bare: true,
        ..Default::default()
    };
    let server = Server::start(bin, cfg, false, None).await?;
    let mut info = server.info("server").await?;
    info.extend(server.info("memory").await?);
    let mut conn = server.connection().await?;
    let mut defaults = BTreeMap::new();
    for key in SETTINGS_LIMITBENCH_SETS {
        let r = conn
            .call(&limitbench_core::args!["CONFIG", "GET", *key])
            .await?;
        let items = r.into_array().unwrap_or_default();
        if let (Some(k), Some(v)) = (
            items.first().and_then(|x| x.as_string()),
            items.get(1).and_then(|x| x.as_string()),
        ) {
            defaults.insert(k, v);
        }
    }
    drop(conn);
    drop(server);
    let (product, version) = product_of(&info);
    Ok(Identity {
        product,
        version,
        redis_version: info.get("redis_version").cloned().unwrap_or_default(),
        mem_allocator: info.get("mem_allocator").cloned().unwrap_or_default(),
        version_malloc: super::version_malloc(&bin.path).unwrap_or_default(),
        binary: bin.path.display().to_string(),
        defaults,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valkey_is_named_by_its_own_version_not_the_compatibility_one() {
        let mut f = BTreeMap::new();
        f.insert("redis_version".to_string(), "7.2.4".to_string());
        f.insert("server_name".to_string(), "valkey".to_string());
        f.insert("valkey_version".to_string(), "9.1.2".to_string());
        assert_eq!(product_of(&f), ("Valkey".into(), "9.1.2".into()));
        f.remove("valkey_version");
        f.remove("server_name");
        f.insert("redis_version".to_string(), "8.2.3".to_string());
        assert_eq!(product_of(&f), ("Redis".into(), "8.2.3".into()));
    }
}
