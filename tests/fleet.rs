//! The fleet on real servers: cluster slots, replica sync, RDB restart,
//! promotion, clear errors, and nothing left running afterwards.

mod common;

use std::time::Duration;

use limitbench_base::Error;
use limitbench_core::args;
use limitbench_core::conn::{Conn, key_slot};
use limitbench_core::fleet::{Fleet, RedisBinary, Server, ServerConfig};

#[tokio::test]
async fn cluster_covers_every_slot_and_routes_by_slot() {
    let fleet = Fleet::cluster(&common::redis(), ServerConfig::default(), 3)
        .await
        .unwrap();
    let mut n = fleet.node_connections().await.unwrap();
    assert_eq!(n.len(), 3);
    let info = n[0]
        .call(&args!["CLUSTER", "INFO"])
        .await
        .unwrap()
        .as_string()
        .unwrap();
    assert!(
        info.contains("cluster_state:ok") && info.contains("cluster_slots_assigned:16384"),
        "{info}"
    );
    let Conn::Cluster(mut c) = fleet.conn().await.unwrap() else {
        panic!("expected a cluster client")
    };
    // Keys spread over the three masters, and each command lands on the owner.
    let mut owners = std::collections::BTreeSet::new();
    for i in 0..30 {
        let k = format!("user:{i}");
        c.call(&k, &args!["SET", k.as_str(), "1"]).await.unwrap();
        owners.insert(c.owner_of(&k));
    }
    assert_eq!(owners.len(), 3);
    assert_eq!(key_slot(b"{u1}:a"), key_slot(b"{u1}:b"));
    let pids: Vec<u32> = fleet.servers.iter().filter_map(|s| s.pid()).collect();
    drop(c);
    drop(fleet);
    for p in pids {
        assert!(
            !common::alive(p),
            "redis-server {p} still running after the fleet was dropped"
        );
    }
}

#[tokio::test]
async fn replica_syncs_and_can_be_promoted() {
    let mut fleet = Fleet::primary_replica(&common::redis(), ServerConfig::default())
        .await
        .unwrap();
    let mut p = fleet.primary().connection().await.unwrap();
    p.call(&args!["SET", "k", "v"]).await.unwrap();
    let acked = p
        .call(&args!["WAIT", 1u64, 2000u64])
        .await
        .unwrap()
        .as_i64()
        .unwrap();
    assert_eq!(acked, 1);
    let mut r = fleet.replica().unwrap().connection().await.unwrap();
    assert_eq!(
        r.call(&args!["GET", "k"])
            .await
            .unwrap()
            .as_string()
            .as_deref(),
        Some("v")
    );
    let err = r
        .call(&args!["SET", "k", "w"])
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("READONLY"), "{err}");
    fleet.servers[0].kill();
    fleet.servers[1].promote().await.unwrap();
    r.call(&args!["SET", "k", "w"]).await.unwrap();
}

#[tokio::test]
async fn restart_keeps_the_rdb_and_functions_but_not_the_script_cache() {
    let mut s = Server::start(&common::redis(), ServerConfig::default(), false, None)
        .await
        .unwrap();
    let script = limitbench_core::strategy::Script::new("t", "return 1");
    let mut c = s.connection().await.unwrap();
    script.load(&mut c).await.unwrap();
    c.call(&args!["SET", "kept", "yes"]).await.unwrap();
    drop(c);
    let port = s.port;
    s.restart_with_rdb().await.unwrap();
    assert_eq!(s.port, port);
    let mut c = s.connection().await.unwrap();
    assert_eq!(
        c.call(&args!["GET", "kept"])
            .await
            .unwrap()
            .as_string()
            .as_deref(),
        Some("yes")
    );
    let exists = c
        .call(&args!["SCRIPT", "EXISTS", script.sha.as_str()])
        .await
        .unwrap();
    assert_eq!(exists.into_array().unwrap()[0].as_i64(), Some(0));
    let r = c
        .call(&args!["FCALL", script.function.as_str(), 0u64])
        .await
        .unwrap();
    assert_eq!(r.as_i64(), Some(1));
}

#[tokio::test]
async fn a_taken_port_is_a_clear_error() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let err = Server::start(
        &common::redis(),
        ServerConfig {
            port: Some(port),
            ..Default::default()
        },
        false,
        None,
    )
    .await
    .err()
    .unwrap();
    assert!(
        matches!(err, Error::PortInUse { port: p } if p == port),
        "{err}"
    );
    assert!(err.to_string().contains("already in use"));
}

#[test]
fn missing_or_old_redis_server_is_a_clear_error() {
    let err =
        RedisBinary::locate(Some(std::path::Path::new("/nonexistent/redis-server"))).unwrap_err();
    assert!(matches!(err, Error::RedisServerMissing(_)));
    assert!(err.to_string().contains("apt-get install"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("redis-server");
    std::fs::write(
        &fake,
        "#!/bin/sh\necho 'Redis server v=6.2.14 sha=0 malloc=libc bits=64'\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let err = RedisBinary::locate(Some(&fake)).unwrap_err();
    assert!(matches!(err, Error::RedisTooOld { .. }), "{err}");
}

#[tokio::test]
async fn a_server_that_dies_at_start_shows_its_log() {
    let cfg = ServerConfig::default().with("maxmemory-policy", "no-such-policy");
    let err = Server::start(&common::redis(), cfg, false, None)
        .await
        .err()
        .unwrap();
    let text = err.to_string();
    assert!(matches!(err, Error::ServerDied { .. }), "{text}");
    assert!(
        text.contains("maxmemory-policy")
            || text.contains("Bad directive")
            || text.contains("argument"),
        "{text}"
    );
}

#[tokio::test]
async fn only_loopback() {
    let err = limitbench_core::fleet::parse_redis_url("redis://10.0.0.1:6379").unwrap_err();
    assert!(matches!(err, Error::NotLoopback(_)));
    assert!(limitbench_core::fleet::parse_redis_url("redis://localhost:6380").is_ok());
    let err = limitbench_core::resp::Connection::connect("192.168.1.1:6379".parse().unwrap())
        .await
        .err()
        .unwrap();
    assert!(matches!(err, Error::NotLoopback(_)));
    tokio::time::sleep(Duration::from_millis(1)).await;
}
