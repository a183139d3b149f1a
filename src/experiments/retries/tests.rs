//! Unit tests of the `retries` analysis: each metric on a few hand-written
//! rows, with the exact value it must give.

use super::analyze::*;
use super::rows::Row;
use crate::experiments::concurrency::rows::Row as ConcurrencyRow;

/// A WATCH/MULTI trial (`setting` = budget, backoff, first counted) or a
/// baseline trial (`setting` = None).
fn row(setting: Option<(u32, u64, bool)>, rtt_ms: f64, admitted: u64, wall_ms: f64) -> Row {
    Row {
        cell: "c".into(),
        trial: 0,
        seed: 1,
        strategy: if setting.is_some() {
            "watch-multi"
        } else {
            "fixed-window-lua"
        }
        .into(),
        retry_budget: setting.map(|s| s.0),
        backoff_us: setting.map(|s| s.1),
        budget_includes_first: setting.map(|s| s.2),
        workers: 64,
        target_rtt_ms: rtt_ms,
        rtt_median_us: rtt_ms * 1000.0,
        rtt_p99_us: rtt_ms * 1000.0,
        limit: 100,
        offered: 100,
        admitted,
        refused_by_limit: 0,
        refused_by_retries: 100u64.saturating_sub(admitted),
        aborts: 0,
        errors: 0,
        round_trips: 0,
        wall_ms,
        first_error: String::new(),
    }
}

#[test]
fn groups_split_watch_settings_from_the_baseline() {
    let rows = vec![
        row(Some((10, 0, false)), 6.7, 40, 1.0),
        row(None, 6.7, 100, 1.0),
        row(Some((10, 0, false)), 6.7, 42, 1.0),
        row(Some((10, 50, true)), 0.0, 60, 1.0),
    ];
    let g = groups(&rows);
    let keys: Vec<Key> = g.watch.keys().copied().collect();
    assert_eq!(keys, vec![(0, false, 6700, 10), (50, true, 0, 10)]);
    assert_eq!(g.watch[&(0, false, 6700, 10)].len(), 2);
    assert_eq!(g.baseline.keys().copied().collect::<Vec<_>>(), vec![6700]);
}

#[test]
fn a2_1_is_budget_10_at_the_longest_round_trip_default_setting_first() {
    let rows = vec![
        // Not the longest round trip.
        row(Some((10, 0, false)), 0.0, 99, 1.0),
        // Not budget 10.
        row(Some((100, 0, false)), 6.7, 90, 1.0),
        row(Some((10, 50, false)), 6.7, 70, 1.0),
        row(Some((10, 0, false)), 6.7, 40, 1.0),
        row(Some((10, 0, false)), 6.7, 44, 1.0),
    ];
    let (value, at) = a2_1(&groups(&rows)).unwrap();
    assert_eq!((value.mean, value.n), (42.0, 2));
    let settings: Vec<(Key, f64)> = at.iter().map(|(k, s)| (*k, s.mean)).collect();
    assert_eq!(
        settings,
        vec![((0, false, 6700, 10), 42.0), ((50, false, 6700, 10), 70.0)]
    );
    // Without the default setting, the first one is the value.
    let (value, _) = a2_1(&groups(&rows[2..3])).unwrap();
    assert_eq!(value.mean, 70.0);
    assert!(a2_1(&groups(&rows[1..2])).is_none());
}

#[test]
fn a2_2_slowdown_is_the_default_setting_over_the_baseline_per_round_trip() {
    let rows = vec![
        row(Some((1000, 0, false)), 1.0, 100, 30.0),
        row(Some((1000, 0, false)), 1.0, 100, 50.0),
        row(None, 1.0, 100, 10.0),
        // Another setting: counted for exactness, not for the slowdown.
        row(Some((1000, 50, false)), 1.0, 99, 400.0),
        // No baseline at 6.7 ms: no ratio there.
        row(Some((1000, 0, false)), 6.7, 100, 90.0),
        // Another budget: ignored.
        row(Some((10, 0, false)), 1.0, 40, 5.0),
    ];
    assert_eq!(
        a2_2(&groups(&rows)),
        Slowdown {
            ratios: vec![(1000, 4.0)],
            exact: 3,
            trials: 4,
        }
    );
}

#[test]
fn a2_3_over_admission_covers_retries_and_concurrency_watch_trials() {
    let rows = vec![
        row(Some((10, 0, false)), 1.0, 40, 1.0),
        row(None, 1.0, 101, 1.0),
    ];
    let conc = |strategy: &str, over: i64| ConcurrencyRow {
        cell: "c".into(),
        trial: 0,
        seed: 0,
        strategy: strategy.into(),
        kind: String::new(),
        atomic_design: true,
        workers: 8,
        target_rtt_ms: 0.0,
        rtt_median_us: 0.0,
        rtt_p99_us: 0.0,
        one_way_delay_us: 0.0,
        limit: 100,
        window_ms: 1000,
        offered: 116,
        admitted: (100 + over) as u64,
        over_admitted: over,
        errors: 0,
        aborts: 0,
        retries_exhausted: 0,
        round_trips: 0,
        wall_ms: 0.0,
        first_error: String::new(),
    };
    let concurrency = vec![conc("watch-multi", 0), conc("check-then-act", 20)];
    assert_eq!(a2_3(&rows, &concurrency), vec![-60, 0]);
}
