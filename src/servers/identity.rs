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
    Ok(Identity {
        version_malloc: super::version_malloc(&bin.path).unwrap_or_default(),
        binary: bin.path.display().to_string(),
        defaults,
        ..of_info(&info)
    })
}

/// What INFO server (and memory) say the server is: product, version,
/// allocator, build id and git sha1 (the rest of [`Identity`] empty).
pub fn of_info(info: &BTreeMap<String, String>) -> Identity {
    let (product, version) = product_of(info);
    let field = |k: &str| info.get(k).cloned().unwrap_or_default();
    Identity {
        product,
        version,
        redis_version: field("redis_version"),
        mem_allocator: field("mem_allocator"),
        build_id: field("redis_build_id"),
        git_sha1: field("redis_git_sha1"),
        ..Default::default()
    }
}

/// How the binary a run starts was chosen: `--redis-server` (`explicit`),
/// `$LIMITBENCH_REDIS_SERVER`, or the system's `redis-server` from PATH
/// (`RedisBinary::locate`'s order).
pub fn binary_source(explicit: bool) -> &'static str {
    if explicit {
        "--redis-server"
    } else if std::env::var_os("LIMITBENCH_REDIS_SERVER").is_some() {
        "$LIMITBENCH_REDIS_SERVER"
    } else {
        "the system's redis-server (PATH)"
    }
}

/// How `bin` was chosen, read from the path `RedisBinary::locate` gave
/// (for a caller that does not know whether `--redis-server` was given).
pub fn located_source(bin: &RedisBinary) -> &'static str {
    let from_env = std::env::var_os("LIMITBENCH_REDIS_SERVER")
        .is_some_and(|e| std::path::Path::new(&e) == bin.path);
    if bin.path == std::path::Path::new("redis-server") {
        "the system's redis-server (PATH)"
    } else if from_env {
        "$LIMITBENCH_REDIS_SERVER"
    } else {
        "--redis-server"
    }
}

/// A manifest's `redis_server` for a binary limitbench starts: its path and
/// `--version`, what the server says it is (`known`: what `limitbench
/// matrix` read already; otherwise the binary is started bare once, as
/// [`probe`]) and `source`, how it was chosen (a `source` in `known` wins).
/// A server that cannot be probed is recorded with `identity_error`.
pub async fn manifest_entry(
    bin: &RedisBinary,
    known: Option<&serde_json::Value>,
    source: &str,
) -> serde_json::Value {
    let mut v = serde_json::json!({"path": bin.path, "version": bin.version, "source": source});
    let id = match known {
        Some(id) => Ok(id.clone()),
        None => probe(bin).await.map(|id| id.to_json()),
    };
    match id {
        Ok(serde_json::Value::Object(id)) => {
            for (k, x) in id {
                v[k] = x;
            }
        }
        Ok(_) => {}
        Err(e) => v["identity_error"] = e.to_string().into(),
    }
    // The binary's path is `path` already.
    if let Some(o) = v.as_object_mut() {
        o.remove("binary");
    }
    v
}

/// The identity fields of a server the user runs (`--redis-url`), from its
/// INFO: product, version, allocator, build id, git sha1; or
/// `identity_error`.
pub async fn external_entry(addr: std::net::SocketAddr) -> serde_json::Value {
    let info = match limitbench_core::resp::Connection::connect(addr).await {
        Ok(mut c) => limitbench_core::info::read(&mut c, &["server", "memory"]).await,
        Err(e) => Err(e),
    };
    match info {
        Ok(info) => {
            let id = of_info(&info);
            serde_json::json!({
                "product": id.product,
                "version": id.version,
                "redis_version": id.redis_version,
                "mem_allocator": id.mem_allocator,
                "build_id": id.build_id,
                "git_sha1": id.git_sha1,
            })
        }
        Err(e) => serde_json::json!({"identity_error": e.to_string()}),
    }
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

    #[test]
    fn info_gives_the_allocator_build_id_and_git_sha1() {
        let text = "# Server\r\nredis_version:7.0.15\r\nredis_git_sha1:00000000\r\nredis_build_id:ae4d7c971a948f0\r\n# Memory\r\nmem_allocator:jemalloc-5.3.0\r\n";
        let id = of_info(&limitbench_core::resp::info_fields(text));
        assert_eq!(id.product, "Redis");
        assert_eq!(id.version, "7.0.15");
        assert_eq!(id.mem_allocator, "jemalloc-5.3.0");
        assert_eq!(id.build_id, "ae4d7c971a948f0");
        assert_eq!(id.git_sha1, "00000000");
    }
}
