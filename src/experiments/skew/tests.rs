//! Unit tests of the `skew` analysis: the ideal bucket of a trial, the
//! caller/Redis pairs, and each claim's numbers on a few hand-written rows;
//! A4.3's replay of the script (`replay_tests.rs`).

use std::collections::BTreeMap;

use super::analyze::*;
use super::rows::{HistoryRow, Row};

const CALLER: &str = "token-bucket-caller-clock";
const REDIS: &str = "token-bucket";

fn row(strategy: &str, skew_ms: f64, load_x: f64, trial: u64, admitted: u64) -> Row {
    Row {
        cell: format!("{strategy}/S{skew_ms}/x{load_x}"),
        trial,
        seed: 1,
        strategy: strategy.into(),
        skew_ms,
        servers: 4,
        clocks: "spread".into(),
        offsets_us: "0;0;0;0".into(),
        load_x,
        arrivals: "poisson".into(),
        assign: "random".into(),
        capacity: 2,
        rate_per_s: 1.0,
        duration_ms: 1000.0,
        offered: 10,
        admitted,
        errors: 0,
        achieved_rate_per_s: 1.0,
        lateness_p99_us: 0.0,
        first_error: String::new(),
        start_unix_us: None,
    }
}

fn sent(r: &Row, t: i64, error: bool) -> HistoryRow {
    HistoryRow {
        cell: r.cell.clone(),
        trial: r.trial,
        worker: 0,
        intended_us: t,
        sent_us: t,
        replied_us: t + 10,
        redis_time_us: None,
        admitted: false,
        error,
    }
}

#[test]
fn the_ideal_bucket_runs_on_the_send_times_without_errors() {
    // Capacity 2, 1 token/s: three at once pass 2; one 1 s later passes.
    let r = row(CALLER, 0.0, 1.0, 0, 0);
    let h = vec![
        sent(&r, 1_000_000, false),
        sent(&r, 0, false),
        sent(&r, 0, false),
        sent(&r, 0, false),
        // An errored send takes no token.
        sent(&r, 1_000_001, true),
    ];
    assert_eq!(ideal(&r, &h), 3.0);
    assert!(ideal(&r, &[]).is_nan());
    let mut hist = BTreeMap::new();
    hist.insert((r.cell.clone(), 0), h);
    assert_eq!(
        ideals(&[r.clone(), row(REDIS, 0.0, 1.0, 0, 0)], &hist)[0],
        3.0
    );
}

#[test]
fn pairs_join_the_two_strategies_per_setting_and_trial() {
    let rows = vec![
        row(CALLER, 0.0, 1.0, 0, 90),
        row(REDIS, 0.0, 1.0, 0, 100),
        row(CALLER, 0.0, 1.0, 1, 80),
    ];
    let p = pairs(&rows, &[100.0, 100.0, 100.0]);
    let s = "S0/x1".to_string();
    assert_eq!(
        p[&(s.clone(), 0)],
        Pair {
            caller: Some((90.0, 100.0)),
            redis: Some((100.0, 100.0)),
            row: 0,
        }
    );
    assert_eq!(p[&(s.clone(), 0)].difference_pct(), Some(10.0));
    assert_eq!(p[&(s.clone(), 1)].difference_pct(), None);
    let per = per_setting(&p);
    assert_eq!(
        per[&s],
        PerSetting {
            caller_pct: vec![90.0, 80.0],
            redis_pct: vec![100.0],
            difference_pct: vec![10.0],
            row: 0,
        }
    );
}

#[test]
fn a4_1_compares_the_pairs_under_overload_only() {
    let rows = vec![
        row(CALLER, 1000.0, 5.0, 0, 150),
        row(REDIS, 1000.0, 5.0, 0, 100),
        row(CALLER, 0.0, 5.0, 0, 102),
        row(REDIS, 0.0, 5.0, 0, 100),
        // Near the limit: not A4.1's.
        row(CALLER, 1000.0, 1.0, 0, 10),
        row(REDIS, 1000.0, 1.0, 0, 100),
    ];
    let ideal = vec![100.0; rows.len()];
    let over = a4_1(&rows, &pairs(&rows, &ideal));
    assert_eq!(
        over,
        vec![("S0/x5".to_string(), 2.0), ("S1000/x5".to_string(), 50.0)]
    );
    assert_eq!(
        worst_by_skew(&over),
        BTreeMap::from([("S0".to_string(), 2.0), ("S1000".to_string(), 50.0)])
    );
}

#[test]
fn a4_2_sweeps_capacity_servers_and_offset_draw_near_the_limit_at_1s() {
    let mut small = row(CALLER, 1000.0, 1.0, 0, 15);
    small.capacity = 1; // 1 token at 2 tokens/s: 0.5 s of refill
    small.rate_per_s = 2.0;
    small.clocks = "two-point".into();
    let rows = vec![
        row(CALLER, 1000.0, 0.9, 0, 80),
        row(CALLER, 1000.0, 1.0, 1, 60),
        small,
        // Overload, another skew, the Redis clock, round-robin: not A4.2's.
        row(CALLER, 1000.0, 5.0, 0, 10),
        row(CALLER, 0.0, 0.9, 0, 10),
        row(REDIS, 1000.0, 0.9, 0, 10),
        Row {
            assign: "round-robin".into(),
            ..row(CALLER, 1000.0, 0.9, 0, 10)
        },
    ];
    let m = a4_2_sweep(&rows, &[100.0; 7]);
    let key = |c: &str, w: &str, d: &str| (c.to_string(), w.to_string(), d.to_string());
    assert_eq!(m.len(), 2, "{m:?}");
    assert_eq!(m[&key("2", "4", "spread")], vec![80.0, 60.0]);
    assert_eq!(m[&key("0.5", "4", "two-point")], vec![15.0]);
    assert_eq!(capacity_s(&rows[2]), 0.5);
}

#[test]
fn a4_1_sweeps_load_run_length_and_capacity_at_1s_skew() {
    let mut long = row(CALLER, 1000.0, 10.0, 0, 101);
    long.duration_ms = 60_000.0;
    let rows = vec![
        row(CALLER, 1000.0, 5.0, 0, 150),
        row(REDIS, 1000.0, 5.0, 0, 100),
        row(CALLER, 1000.0, 5.0, 1, 90),
        row(REDIS, 1000.0, 5.0, 1, 100),
        long.clone(),
        Row {
            strategy: REDIS.into(),
            admitted: 100,
            ..long
        },
        // Another skew, near the limit: not in A4.1's sweep.
        row(CALLER, 0.0, 5.0, 0, 102),
        row(REDIS, 0.0, 5.0, 0, 100),
        row(CALLER, 1000.0, 1.0, 0, 10),
        row(REDIS, 1000.0, 1.0, 0, 100),
    ];
    let m = a4_1_sweep(&rows, &pairs(&rows, &[100.0; 10]));
    let k = |l: &str, t: &str| [l, t, "2", "4", "spread"].map(String::from);
    assert_eq!(m.len(), 2, "{m:?}");
    assert_eq!(m[&k("5", "1")], vec![50.0, 10.0]);
    assert_eq!(m[&k("10", "60")], vec![1.0]);
}

/// On a real redis-server: with two-point clocks 1 s apart and a bucket of
/// a tenth of a second, the server behind never finds a token while the one
/// ahead still gets its share: the mechanism A4.2's sweep measures.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bucket_smaller_than_the_skew_admits_only_the_clock_ahead() {
    use limitbench_core::clock::Clock;
    use limitbench_core::fleet::{Fleet, RedisBinary, ServerConfig};
    use limitbench_core::load::TrialClock;
    use limitbench_core::strategy::{self, Limit, Options};
    let bin = RedisBinary::locate(None).expect("redis-server installed");
    let fleet = Fleet::standalone(&bin, ServerConfig::default())
        .await
        .unwrap();
    let strat = strategy::build("token-bucket-caller-clock", None, &Options::default()).unwrap();
    fleet.prepare(strat.as_ref()).await.unwrap();
    let clocks = Clock::two_point(2, 500_000);
    let mut drivers = crate::experiments::testbed::drivers(fleet.primary_addr(), &strat, &clocks)
        .await
        .unwrap();
    // Capacity 10 at 100/s (0.1 s of refill), one request every 10 ms (the
    // refill rate), servers alternating.
    let limit = Limit::bucket(10, 100.0);
    let tc = TrialClock::start();
    let mut admitted = [0u32; 2];
    for k in 0..60u64 {
        let d = &mut drivers[(k % 2) as usize];
        let e = d.decide(&tc, "skew-unit", limit, 1, 0).await;
        assert!(e.error.is_none(), "{:?}", e.error);
        admitted[(k % 2) as usize] += e.admitted as u32;
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    // The first request (behind, on a fresh bucket) may pass; none after it.
    assert!(admitted[0] <= 1, "behind admitted {}", admitted[0]);
    assert!(admitted[1] >= 25, "ahead admitted {} of 30", admitted[1]);
}

#[test]
fn a4_1_and_a4_2_spell_their_shared_details_alike_and_sweep_the_rest() {
    // Default capacity 1 s (100 at 100/s), 8 spread servers; and a 0.1 s bucket.
    let mk = |strategy: &str, load: f64, cap: u64, trial: u64, admitted: u64| Row {
        capacity: cap,
        rate_per_s: 100.0,
        servers: 8,
        duration_ms: 5000.0,
        cell: format!("{strategy}/S1000/x{load}/C{cap}"),
        ..row(strategy, 1000.0, load, trial, admitted)
    };
    let rows = vec![
        mk(CALLER, 1.0, 100, 0, 50),
        mk(CALLER, 1.0, 100, 1, 54),
        mk(CALLER, 1.0, 10, 0, 15),
        mk(CALLER, 5.0, 100, 0, 104),
        mk(REDIS, 5.0, 100, 0, 100),
        mk(CALLER, 5.0, 10, 0, 60),
        mk(REDIS, 5.0, 10, 0, 100),
    ];
    let ideal = vec![100.0; rows.len()];
    let a2 = measured_a4_2(&rows, &ideal).unwrap();
    assert_eq!(a2.values, vec![52.0]);
    assert_eq!(a2.intervals.len(), 1);
    let (lo, hi) = a2.intervals[0];
    assert!(lo <= 52.0 && 52.0 <= hi, "{lo} {hi}");
    let names = |s: &Vec<(String, String)>| s.iter().map(|x| x.0.clone()).collect::<Vec<_>>();
    assert_eq!(names(&a2.setting), ["capacity_s", "servers", "offset_draw"]);
    assert_eq!(a2.setting[0].1, "1");
    assert_eq!(a2.sweep.len(), 1);
    assert_eq!(a2.sweep[0].setting[0], ("capacity_s".into(), "0.1".into()));
    assert_eq!(a2.sweep[0].values, vec![15.0]);

    let a1 = measured_a4_1(&rows, &pairs(&rows, &ideal)).unwrap();
    // The mean over the setting's pairs (one pair here), the largest beside.
    assert_eq!(a1.values, vec![4.0]);
    assert!(a1.display.contains("largest pair 4.00%"), "{}", a1.display);
    assert_eq!(
        names(&a1.setting),
        ["load_x", "run_s", "capacity_s", "servers", "offset_draw"]
    );
    // The details both claims sweep take the same values, spelled alike.
    for (k, v) in &a2.setting {
        assert!(a1.setting.contains(&(k.clone(), v.clone())), "{k}={v}");
    }
    assert_eq!(a1.sweep.len(), 1);
    assert_eq!(a1.sweep[0].values, vec![40.0]);
}

#[path = "replay_tests.rs"]
mod replay_tests;
