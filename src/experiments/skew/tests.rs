//! Unit tests of the `skew` analysis: the ideal bucket of a trial, the
//! caller/Redis pairs, and each claim's numbers on a few hand-written rows.

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
fn a4_2_is_the_caller_clock_at_1s_skew_near_the_limit_per_run_length() {
    let mut long = row(CALLER, 1000.0, 0.9, 0, 45);
    long.duration_ms = 10_000.0;
    let rows = vec![
        row(CALLER, 1000.0, 0.9, 0, 80),
        long,
        // Overload, another skew, the Redis clock: not A4.2's.
        row(CALLER, 1000.0, 5.0, 0, 10),
        row(CALLER, 0.0, 0.9, 0, 10),
        row(REDIS, 1000.0, 0.9, 0, 10),
    ];
    let n = a4_2(&rows, &[100.0, 50.0, 100.0, 100.0, 100.0]).unwrap();
    assert_eq!(n.longest_ms, 10_000.0);
    assert_eq!(
        n.per_duration,
        BTreeMap::from([(1000, vec![80.0]), (10_000, vec![90.0])])
    );
    assert_eq!(n.per_setting["S1000/x0.9"], vec![80.0, 90.0]);
    assert_eq!(a4_2(&rows[2..], &[100.0; 3]), None);
}

#[test]
fn a4_3_is_the_redis_clock_off_ideal_in_percent() {
    let rows = vec![
        row(REDIS, 0.0, 1.0, 0, 99),
        row(REDIS, 1000.0, 5.0, 0, 104),
        row(CALLER, 0.0, 1.0, 0, 10),
    ];
    assert_eq!(a4_3(&rows, &[100.0, 100.0, 100.0]), vec![1.0, 4.0]);
}
