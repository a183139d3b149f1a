//! Study B's topologies on real redis-servers: replica sync, restart with an
//! RDB, promotion, Redis Cluster, the timestamp-member bug, fail-open/closed.
//! Each test starts its own servers (reaped on drop) and uses fresh keys.

use std::sync::Arc;
use std::time::Duration;

use limitbench::experiments::cluster::{variant_keys, variant_strategy};
use limitbench::experiments::fail_open::{Policy, PolicyClient};
use limitbench::experiments::replication::{diff_states, key_state};
use limitbench::experiments::script_survival::{bucket_script, run_client, server_checks};
use limitbench::experiments::ts_member::member_strategy;
use limitbench_core::clock::Clock;
use limitbench_core::conn::{CLUSTER_SLOTS, Conn, key_slot};
use limitbench_core::fleet::replication::wait_caught_up;
use limitbench_core::fleet::{Fleet, RedisBinary, ServerConfig};
use limitbench_core::load::{Driver, closed_loop};
use limitbench_core::strategy::{Limit, Options, Request, build, client_key, window_index};

fn bin() -> RedisBinary {
    RedisBinary::locate(None).expect("redis-server 7 on PATH")
}

fn req<'a>(client: &'a str, limit: Limit, id: u64) -> Request<'a> {
    Request {
        client,
        limit,
        cost: 1,
        now_us: Clock::system_now_us(),
        request_id: id,
    }
}

#[tokio::test]
async fn replica_syncs_and_a_token_bucket_matches_field_by_field() {
    let fleet = Fleet::primary_replica(&bin(), ServerConfig::default())
        .await
        .unwrap();
    let s = build("token-bucket", None, &Options::default()).unwrap();
    let mut node = fleet.primary().connection().await.unwrap();
    s.prepare(&mut node).await.unwrap();
    let mut conn = fleet.conn().await.unwrap();
    let limit = Limit::bucket(5, 2.0);
    for i in 0..30 {
        s.decide(&mut conn, &req(&format!("b{}", i % 3), limit, i))
            .await
            .unwrap();
    }
    let replica = fleet.replica().unwrap().addr();
    let cu = wait_caught_up(fleet.primary_addr(), replica, Duration::from_secs(10))
        .await
        .unwrap();
    assert!(cu.caught_up && cu.replica_offset >= cu.master_offset);
    let mut pc = fleet.primary().connection().await.unwrap();
    let mut rc = fleet.replica().unwrap().connection().await.unwrap();
    for b in 0..3 {
        let key = client_key(&format!("b{b}"), "tb");
        let a = key_state(&mut pc, &key).await.unwrap();
        let r = key_state(&mut rc, &key).await.unwrap();
        assert!(a.contains_key("tokens") && a.contains_key("ts"), "{a:?}");
        assert!(a["pexpiretime"].parse::<i64>().unwrap() > 0);
        assert!(
            diff_states(&a, &r).is_empty(),
            "primary {a:?} replica {r:?}"
        );
    }
    // The comparison does see a difference when there is one.
    let mut b = key_state(&mut rc, &client_key("b0", "tb")).await.unwrap();
    b.insert("tokens".into(), "-1".into());
    let a = key_state(&mut pc, &client_key("b0", "tb")).await.unwrap();
    assert_eq!(diff_states(&a, &b).len(), 1);
}

#[tokio::test]
async fn restart_keeps_functions_drops_scripts_and_promotion_takes_writes() {
    let mut fleet = Fleet::primary_replica(&bin(), ServerConfig::default())
        .await
        .unwrap();
    let mut pc = fleet.primary().connection().await.unwrap();
    bucket_script().load(&mut pc).await.unwrap();
    drop(pc);
    let paddr = fleet.primary_addr();
    let raddr = fleet.replica().unwrap().addr();
    wait_caught_up(paddr, raddr, Duration::from_secs(10))
        .await
        .unwrap();

    // Replica: no script cache; the function is there but a write is refused.
    let mut rc = fleet.replica().unwrap().connection().await.unwrap();
    let checks = server_checks(&mut rc, "rl:{t}:tb").await;
    let get = |c: &[(String, String, bool, String, String)], name: &str| {
        c.iter().find(|x| x.0 == name).cloned().unwrap()
    };
    assert_eq!(get(&checks, "evalsha").3, "NOSCRIPT");
    assert_eq!(get(&checks, "fcall").3, "READONLY");
    assert!(get(&checks, "function_list").2);

    fleet.servers[0].restart_with_rdb().await.unwrap();
    let mut pc = fleet.primary().connection().await.unwrap();
    let checks = server_checks(&mut pc, "rl:{t}:tb").await;
    assert_eq!(get(&checks, "script_exists").3, "false");
    assert_eq!(get(&checks, "evalsha").3, "NOSCRIPT");
    assert!(get(&checks, "fcall").2, "{checks:?}");
    let no_fb = run_client(paddr, "evalsha", "c1", 3).await.unwrap();
    assert_eq!((no_fb.succeeded, no_fb.failed_calls), (0, 3));
    let fb = run_client(paddr, "evalsha-fallback", "c2", 3)
        .await
        .unwrap();
    assert_eq!((fb.succeeded, fb.failed_calls, fb.round_trips), (3, 1, 4));

    fleet
        .replica()
        .unwrap()
        .wait_in_sync(Duration::from_secs(30))
        .await
        .unwrap();
    fleet.servers[0].kill();
    fleet.servers[1].promote().await.unwrap();
    let mut rc = fleet.servers[1].connection().await.unwrap();
    let checks = server_checks(&mut rc, "rl:{t}:tb").await;
    assert_eq!(get(&checks, "evalsha").3, "NOSCRIPT");
    assert!(
        get(&checks, "fcall").2,
        "promoted replica takes writes: {checks:?}"
    );
}

#[tokio::test]
async fn cluster_covers_every_slot_and_undeclared_keys_fail_on_other_nodes() {
    let fleet = Fleet::cluster(&bin(), ServerConfig::default(), 3)
        .await
        .unwrap();
    let mut c = fleet.servers[0].connection().await.unwrap();
    let slots = c
        .call(&limitbench_core::args!["CLUSTER", "SLOTS"])
        .await
        .unwrap();
    let covered: usize = slots
        .into_array()
        .unwrap()
        .into_iter()
        .map(|r| {
            let r = r.into_array().unwrap();
            (r[1].as_i64().unwrap() - r[0].as_i64().unwrap() + 1) as usize
        })
        .sum();
    assert_eq!(covered, CLUSTER_SLOTS);

    let plain = variant_strategy("derived-plain", "none").unwrap();
    let tagged = variant_strategy("derived-tagged", "none").unwrap();
    for s in [&plain, &tagged] {
        // Fleet::prepare loads the script on every master.
        fleet.prepare(s.as_ref()).await.unwrap();
    }
    let mut conn = fleet.conn().await.unwrap();
    let Conn::Cluster(cc) = &conn else {
        panic!("not a cluster conn")
    };
    // Find a user whose derived key lives on another node than its base key.
    let limit = Limit::per_window(10, 60_000);
    let now = Clock::system_now_us();
    let w = window_index(now, limit.window_ms);
    let user = (0..200)
        .map(|i| format!("user{i}"))
        .find(|u| {
            let (b, d) = variant_keys("derived-plain", u, w);
            cc.owner_of(&b) != cc.owner_of(&d)
        })
        .unwrap();
    let (b, d) = variant_keys("derived-tagged", &user, w);
    assert_eq!(key_slot(b.as_bytes()), key_slot(d.as_bytes()));
    let err = plain.decide(&mut conn, &req(&user, limit, 1)).await;
    // Skip the rare case where the window rolled over between computing and deciding.
    if window_index(Clock::system_now_us(), limit.window_ms) == w {
        let text = err
            .expect_err("undeclared key on another node must fail")
            .to_string();
        assert!(text.contains("non local key"), "{text}");
    }
    assert!(
        tagged
            .decide(&mut conn, &req(&user, limit, 2))
            .await
            .unwrap()
            .admitted
    );
}

#[tokio::test]
async fn timestamp_member_over_admits_and_request_id_does_not() {
    let fleet = Fleet::standalone(&bin(), ServerConfig::default())
        .await
        .unwrap();
    let limit = Limit::per_window(50, 10_000);
    let mut admitted = Vec::new();
    for member in ["redis-ms", "request-id"] {
        let (s, _, _) = member_strategy(member).unwrap();
        let mut node = fleet.primary().connection().await.unwrap();
        s.prepare(&mut node).await.unwrap();
        let mut drivers = Vec::new();
        for w in 0..16 {
            drivers.push(Driver::new(
                w,
                s.clone(),
                fleet.conn().await.unwrap(),
                Clock::default(),
            ));
        }
        let (ev, _, _) = closed_loop(drivers, &format!("ts-{member}"), limit, 1, 3000, None)
            .await
            .unwrap();
        assert!(ev.iter().all(|e| e.error.is_none()));
        admitted.push(ev.iter().filter(|e| e.admitted).count());
    }
    assert!(
        admitted[0] > 50,
        "timestamp member admitted {}",
        admitted[0]
    );
    assert_eq!(admitted[1], 50);
}

#[tokio::test]
async fn fail_open_admits_when_redis_is_gone_and_fail_closed_refuses() {
    let mut fleet = Fleet::standalone(&bin(), ServerConfig::default())
        .await
        .unwrap();
    let s: Arc<dyn limitbench_core::strategy::Strategy> =
        build("token-bucket", None, &Options::default()).unwrap();
    let addr = fleet.primary_addr();
    let t = Duration::from_millis(50);
    let mut open = PolicyClient::new(s.clone(), addr, t, Policy::FailOpen);
    let mut closed = PolicyClient::new(s.clone(), addr, t, Policy::FailClosed);
    let limit = Limit::bucket(2, 0.001);
    // Up: Redis decides, including refusals once the bucket is empty.
    let outs: Vec<_> = decide_n(&mut open, limit, 3).await;
    assert!(outs.iter().all(|o| o.by_redis));
    assert_eq!(outs.iter().filter(|o| o.admitted).count(), 2);
    fleet.servers[0].kill();
    let o = open.decide(&req("fo", limit, 10)).await;
    assert!(o.admitted && !o.by_redis && (o.error.is_some() || o.timeout));
    let c = closed.decide(&req("fo", limit, 11)).await;
    assert!(!c.admitted && !c.by_redis);
    assert_eq!((open.misses, closed.misses), (1, 1));
    fleet.servers[0].start_again().await.unwrap();
    let o = open.decide(&req("fo2", limit, 12)).await;
    assert!(
        o.by_redis && o.admitted,
        "reconnects after Redis returns: {o:?}"
    );
}

async fn decide_n(
    pc: &mut PolicyClient,
    limit: Limit,
    n: u64,
) -> Vec<limitbench::experiments::fail_open::PolicyOutcome> {
    let mut v = Vec::new();
    for i in 0..n {
        v.push(pc.decide(&req("fo", limit, i)).await);
    }
    v
}
