//! `swl-fill`'s preparation of a run, on a real redis-server: whatever an
//! earlier run left (here a steady level's big logs, on the keys the normal
//! level shares) is freed and handed back before the run, none of it left
//! to Redis's lazy-free thread to do during the measured window.

use std::sync::Arc;

use super::logs::{BeforeRun, before_run};
use super::{Load, Plan, RequestSource, Variant};
use limitbench_core::fleet::{Fleet, RedisBinary, ServerConfig};
use limitbench_core::info;
use limitbench_core::load::replay::{self, LogSpec, RawPipe};
use limitbench_core::strategy::{self, Limit, Options};

fn plan(keys: u64, before_run: BeforeRun, prefill_entries: u64, window_ms: u64) -> Plan {
    Plan {
        cell: "sliding-window-log|L100|normal".into(),
        group: "swl-fill".into(),
        traffic: "uniform",
        keys,
        single_key: None,
        limit: 100,
        window_ms,
        prefill_entries,
        before_run,
        request: RequestSource::Strategy {
            name: "sliding-window-log".into(),
            invocation: "evalsha".into(),
        },
    }
}

#[tokio::test]
async fn a_swl_fill_run_starts_on_a_server_already_freed() {
    let bin = RedisBinary::locate(None).expect("redis-server installed");
    let fleet = Fleet::standalone(&bin, ServerConfig::default()).await.unwrap();
    let addr = fleet.primary_addr();
    let mut admin = fleet.primary().connection().await.unwrap();
    let opts = Options::default()
        .with("invocation", "evalsha")
        .with("member_len", "16");
    let s = strategy::build("sliding-window-log", None, &opts).unwrap();
    s.prepare(&mut admin).await.unwrap();
    let tpl = replay::capture(s.as_ref(), Limit::per_window(100, 3_600_000), 0, addr)
    .await
    .unwrap();
    let variant = |p: Plan| Variant {
        plan: p,
        strategy: "sliding-window-log".into(),
        invocation: "evalsha".into(),
        load: Load::Replay(Arc::new(tpl.clone())),
        cmds: vec!["evalsha".into()],
    };
    // What a steady level leaves: 200 big logs (skiplists, so a lazy free)
    // on the first of the normal level's keys.
    let logs: Vec<String> = (0..200).map(|i| tpl.key(i).unwrap()).collect();
    let mut pipe = RawPipe::connect(addr).await.unwrap();
    let spec = LogSpec {
        entries: 3000,
        member_len: 16,
        first_id: replay::ID_BASE * 8,
        first_score_us: 1,
        score_step_us: 1,
        ttl_ms: None,
        chunk: 100,
    };
    replay::fill_logs(&mut pipe, &logs, &spec).await.unwrap();
    let full = info::read_number(&mut admin, "memory", "used_memory").await.unwrap();
    assert!(full > 50e6, "the big logs hold {full} B");

    before_run(addr, &mut admin, &variant(plan(1000, BeforeRun::Empty, 0, 3_600_000)))
        .await
        .unwrap();
    // Right after: nothing left to free, the memory already back.
    let pending = info::read_number(&mut admin, "memory", "lazyfree_pending_objects")
        .await
        .unwrap();
    let used = info::read_number(&mut admin, "memory", "used_memory").await.unwrap();
    let keys = admin.call(&limitbench_core::args!["DBSIZE"]).await.unwrap();
    assert_eq!(pending, 0.0);
    assert!(used < 10e6, "{used} B still held after the flush ({full} before)");
    assert_eq!(keys.as_i64(), Some(0));

    // A steady level's refill: every log holds its entries inside the window.
    let steady = variant(plan(50, BeforeRun::Refill, 100, 60_000));
    before_run(addr, &mut admin, &steady).await.unwrap();
    for i in [0, 49] {
        let n = admin
            .call(&limitbench_core::args!["ZCARD", tpl.key(i).unwrap().as_str()])
            .await
            .unwrap();
        assert_eq!(n.as_i64(), Some(100), "log {i}");
    }
    let keys = admin.call(&limitbench_core::args!["DBSIZE"]).await.unwrap();
    assert_eq!(keys.as_i64(), Some(50));
}
