//! Unit tests of the `retries` analysis: each metric on a few hand-written
//! rows, with the exact value it must give; the lockstep model against a
//! count worked by hand.

use super::analyze::*;
use super::cells::{fixed_label, parse_backoff};
use super::rows::Row;
use crate::experiments::concurrency::rows::Row as ConcurrencyRow;

/// A WATCH/MULTI trial (`budget` = Some) or a baseline trial (None), at the
/// default details, `rtt_ms` and 64 workers.
fn row(budget: Option<u32>, rtt_ms: f64, admitted: u64, wall_ms: f64) -> Row {
    Row {
        cell: "c".into(),
        trial: 0,
        seed: 1,
        strategy: if budget.is_some() {
            "watch-multi"
        } else {
            "fixed-window-lua"
        }
        .into(),
        retry_budget: budget,
        backoff_us: budget.map(|_| 0),
        budget_includes_first: budget.map(|_| false),
        backoff: String::new(),
        attempt: String::new(),
        arrival_ms: 0.0,
        rtt_jitter_ms: 0.0,
        workers: 64,
        target_rtt_ms: rtt_ms,
        rtt_median_us: rtt_ms * 1000.0,
        rtt_p99_us: rtt_ms * 1000.0,
        rtt_sd_us: 0.0,
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

fn with(mut r: Row, f: impl FnOnce(&mut Row)) -> Row {
    f(&mut r);
    r
}

#[test]
fn old_rows_read_as_the_default_details_and_a_fixed_backoff() {
    let old = with(row(Some(10), 6.7, 40, 1.0), |r| r.backoff_us = Some(10_000));
    let d = Details::of(&old);
    assert_eq!(d.backoff, "fixed-10ms");
    assert_eq!(d.label(), "backoff=fixed-10ms");
    assert_eq!(
        Details::of(&row(Some(10), 6.7, 40, 1.0)),
        Details::default_setting()
    );
    let new = with(row(Some(10), 6.7, 40, 1.0), |r| {
        r.backoff = "full-jitter-1ms".into();
        r.arrival_ms = 250.0;
        r.rtt_jitter_ms = 0.5;
    });
    assert_eq!(
        Details::of(&new).label(),
        "backoff=full-jitter-1ms, arrival=spread-250ms, rtt_jitter_ms=0.5"
    );
}

#[test]
fn backoff_labels_round_trip() {
    assert_eq!(parse_backoff("fixed-0").unwrap(), ("fixed", 0));
    assert_eq!(parse_backoff("fixed-10ms").unwrap(), ("fixed", 10_000));
    assert_eq!(
        parse_backoff("full-jitter-1ms").unwrap(),
        ("full-jitter", 1000)
    );
    assert_eq!(parse_backoff("fixed-250us").unwrap(), ("fixed", 250));
    assert!(parse_backoff("expo-1ms").is_err());
    assert!(parse_backoff("fixed-x").is_err());
    assert_eq!(fixed_label(0), "fixed-0");
    assert_eq!(fixed_label(1000), "fixed-1ms");
}

#[test]
fn a2_1_is_budget_10_at_the_longest_round_trip_default_first() {
    let rows = vec![
        // Not the longest round trip.
        row(Some(10), 0.0, 99, 1.0),
        // Not budget 10.
        row(Some(100), 6.7, 90, 1.0),
        with(row(Some(10), 6.7, 70, 1.0), |r| r.arrival_ms = 500.0),
        row(Some(10), 6.7, 40, 1.0),
        row(Some(10), 6.7, 44, 1.0),
        // Not 64 workers.
        with(row(Some(10), 6.7, 10, 1.0), |r| r.workers = 8),
    ];
    let (rtt, at) = a2_1(&groups(&rows)).unwrap();
    assert_eq!(rtt, 6700);
    let got: Vec<(String, Vec<f64>)> = at.iter().map(|(d, v)| (d.label(), v.clone())).collect();
    assert_eq!(
        got,
        vec![
            ("default".to_string(), vec![40.0, 44.0]),
            ("arrival=spread-500ms".to_string(), vec![70.0]),
        ]
    );
    assert!(a2_1(&groups(&rows[1..2])).is_none());
}

#[test]
fn a2_2_slowdown_per_worker_count_over_the_baseline_at_the_same_workers() {
    let w8 = |r: Row| with(r, |r| r.workers = 8);
    let rows = vec![
        row(Some(1000), 1.0, 100, 30.0),
        row(Some(1000), 1.0, 100, 50.0),
        row(None, 1.0, 100, 10.0),
        w8(row(Some(1000), 1.0, 100, 20.0)),
        w8(row(None, 1.0, 100, 10.0)),
        // Another backoff at 64 workers: the slowdown at that setting (the
        // baseline does not retry, so its default cell is the comparator).
        with(row(Some(1000), 1.0, 99, 400.0), |r| {
            r.backoff = "fixed-1ms".into()
        }),
        // Another backoff at 8 workers: in no sweep (one detail at a time).
        w8(with(row(Some(1000), 1.0, 99, 400.0), |r| {
            r.backoff = "fixed-1ms".into()
        })),
        // A spread arrival: compared with the baseline on the same arrivals.
        with(row(Some(1000), 1.0, 100, 900.0), |r| r.arrival_ms = 750.0),
        with(row(None, 1.0, 100, 750.0), |r| r.arrival_ms = 750.0),
        // No baseline at 6.7 ms: no ratio there, but counted for exactness.
        row(Some(1000), 6.7, 100, 90.0),
        // Another budget: ignored.
        row(Some(10), 1.0, 40, 5.0),
    ];
    let s = a2_2(&groups(&rows));
    assert_eq!(s.len(), 4);
    assert_eq!((s[0].workers, s[0].exact, s[0].trials), (8, 1, 1));
    assert_eq!(s[0].ratios[0].0, 1000);
    assert_eq!(s[0].ratios[0].1, 2.0);
    assert_eq!((s[1].workers, s[1].exact, s[1].trials), (64, 3, 3));
    assert_eq!(s[1].ratios.len(), 1);
    let (rtt, ratio, lo, hi, n) = s[1].ratios[0];
    assert_eq!((rtt, ratio, n), (1000, 4.0, 2));
    // Two distinct trials: their hull widened by their gap, over the Lua mean.
    assert!(lo < ratio && ratio < hi && lo == 1.0 && hi == 7.0, "{lo} {hi}");
    // Then the other settings at 64 workers, the default baseline for a
    // backoff, the spread baseline (not the all-at-once one) for an arrival.
    assert!(s[0].is_worker_sweep() && s[1].is_worker_sweep());
    let other: Vec<(String, f64)> = s[2..]
        .iter()
        .map(|x| (x.details.label(), x.ratios[0].1))
        .collect();
    assert_eq!(
        other,
        vec![
            ("arrival=spread-750ms".to_string(), 900.0 / 750.0),
            ("backoff=fixed-1ms".to_string(), 40.0),
        ]
    );
    assert!(s[2..].iter().all(|x| x.workers == 64 && !x.is_worker_sweep()));
}

#[test]
fn a2_3_over_admission_covers_retries_and_concurrency_watch_trials() {
    let rows = vec![row(Some(10), 1.0, 40, 1.0), row(None, 1.0, 101, 1.0)];
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
        rtt_sd_us: 0.0,
        rtt_jitter_ms: 0.0,
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

#[test]
fn lockstep_model_admits_one_per_wave() {
    // One worker never races: every request is admitted on its first try.
    assert_eq!(lockstep_admitted(1, 100, 1), 100);
    // Two workers, one attempt each: waves of two admit one, refuse one.
    assert_eq!(lockstep_admitted(2, 10, 1), 5);
    // 4 workers, 6 requests, 2 attempts: wave 1 admits one (its worker takes
    // request 5), wave 2 admits one and two requests run out (request 6 is
    // taken), waves 3 and 4 admit requests 5 and 6: 4 in all.
    assert_eq!(lockstep_admitted(4, 6, 2), 4);
    // With many workers two generations of `attempts` waves use up the pool.
    for a in [2, 4, 11] {
        assert_eq!(lockstep_admitted(64, 100, a), 2 * a as u64);
    }
}
