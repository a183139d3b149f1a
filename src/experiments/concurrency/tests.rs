//! Unit tests of the `concurrency` analysis: each metric on a few
//! hand-written rows, with the exact value it must give.

use std::collections::BTreeMap;

use super::analyze::*;
use super::rows::Row;

fn row(strategy: &str, workers: u64, rtt_ms: f64, admitted: u64) -> Row {
    Row {
        cell: format!("{strategy}/c{workers}/rtt{rtt_ms}"),
        trial: 0,
        seed: 1,
        strategy: strategy.into(),
        kind: "k".into(),
        atomic_design: strategy != "check-then-act",
        workers,
        target_rtt_ms: rtt_ms,
        rtt_median_us: rtt_ms * 1000.0 + 50.0,
        rtt_p99_us: rtt_ms * 1000.0 + 90.0,
        rtt_sd_us: 0.0,
        rtt_jitter_ms: 0.0,
        one_way_delay_us: rtt_ms * 500.0,
        limit: 100,
        window_ms: 60_000,
        offered: 100 + 2 * workers,
        admitted,
        over_admitted: admitted as i64 - 100,
        errors: 0,
        aborts: 0,
        retries_exhausted: 0,
        round_trips: 100 + 2 * workers,
        wall_ms: 1.0,
        first_error: String::new(),
    }
}

#[test]
fn lockstep_overshoot_is_c_ceil_l_over_c_minus_l() {
    assert_eq!(lockstep_overshoot(1, 100), 0);
    assert_eq!(lockstep_overshoot(3, 100), 2);
    assert_eq!(lockstep_overshoot(8, 100), 4);
    assert_eq!(lockstep_overshoot(64, 100), 28);
}

#[test]
fn a0_adds_trials_and_the_known_seconds() {
    let counts = vec![
        ("concurrency".to_string(), 3, 1.5),
        ("retries".to_string(), 2, f64::NAN),
        ("bursts".to_string(), 0, 2.0),
    ];
    assert_eq!(study_a_totals(&counts), (5, 3.5));
}

#[test]
fn a1_1_takes_check_then_act_at_64_workers_without_delay_only() {
    let rows = vec![
        row("check-then-act", 64, 0.0, 120),
        row("check-then-act", 64, 6.7, 150),
        row("check-then-act", 32, 0.0, 110),
        row("token-bucket", 64, 0.0, 100),
        row("check-then-act", 64, 0.0, 118),
        row("check-then-act", 64, 0.0, 120),
    ];
    let c64 = cta_admitted_at_64(&rows);
    assert_eq!(c64, vec![120.0, 118.0, 120.0]);
    assert_eq!(histogram(&c64), BTreeMap::from([(118, 1), (120, 2)]));
}

#[test]
fn a1_2_groups_check_then_act_by_round_trip_and_workers() {
    let rows = vec![
        row("check-then-act", 8, 0.0, 104),
        row("check-then-act", 8, 6.7, 103),
        row("check-then-act", 8, 6.7, 105),
        row("token-bucket", 8, 6.7, 100),
    ];
    let o = cta_overshoot(&rows);
    assert_eq!(
        o.by,
        BTreeMap::from([((0, 8), vec![4.0]), ((6700, 8), vec![3.0, 5.0])])
    );
    assert_eq!(
        o.rtt_measured,
        BTreeMap::from([(0, vec![50.0]), (6700, vec![6750.0, 6750.0])])
    );
}

#[test]
fn a1_2_deviation_is_at_the_longest_round_trip_for_8_to_64_workers() {
    let rows = vec![
        // 0 ms is not the longest: ignored.
        row("check-then-act", 8, 0.0, 150),
        // 8 workers: mean over 4 = formula 4.
        row("check-then-act", 8, 6.7, 103),
        row("check-then-act", 8, 6.7, 105),
        // 16 workers: over 10 vs formula 12.
        row("check-then-act", 16, 6.7, 110),
        // 2 workers is not one of 8, 16, 32, 64.
        row("check-then-act", 2, 6.7, 150),
    ];
    let o = cta_overshoot(&rows);
    assert_eq!(
        formula_deviation(&o, 100),
        Some((6700, vec![(8, 0.0), (16, 2.0)]))
    );
    // Only trials without added delay: no value.
    let o = cta_overshoot(&rows[..1]);
    assert_eq!(formula_deviation(&o, 100), None);
}

#[test]
fn a3_0_counts_atomic_trials_that_are_not_exact() {
    let mut failed = row("token-bucket", 8, 0.0, 100);
    failed.errors = 1;
    let rows = vec![
        row("token-bucket", 8, 0.0, 100),
        failed,
        row("token-bucket", 64, 0.0, 99),
        row("check-then-act", 8, 0.0, 120),
    ];
    assert_eq!(atomic_not_exact(&rows), (2, 3));
    // An external strategy that admits everything does not count: A3.0 is
    // about the designs the study measured.
    let mut always = row("always-admit", 64, 0.0, 228);
    always.kind = "external".into();
    let mut with_external = rows.clone();
    with_external.push(always);
    assert_eq!(atomic_not_exact(&with_external), (2, 3));
    let per = per_strategy(&rows);
    assert_eq!(
        per["token-bucket"],
        Tally {
            atomic: true,
            trials: 3,
            not_exact: 2,
            min_admitted: 99.0,
            max_admitted: 100.0,
        }
    );
    assert_eq!(
        per["check-then-act"],
        Tally {
            atomic: false,
            trials: 1,
            not_exact: 1,
            min_admitted: 120.0,
            max_admitted: 120.0,
        }
    );
}

#[test]
fn a1_2_jitter_rows_stay_out_of_the_formula_value_and_form_their_own_groups() {
    let mut jittered = row("check-then-act", 8, 6.7, 120);
    jittered.rtt_jitter_ms = 1.0;
    let rows = vec![
        row("check-then-act", 8, 6.7, 104),
        row("check-then-act", 8, 6.7, 106),
        jittered,
    ];
    // The value ignores the jittered trial: mean 105 - 100 = 5 vs formula 4.
    let (_, devs) = formula_deviation(&cta_overshoot(&rows), 100).unwrap();
    assert_eq!(devs, vec![(8, 1.0)]);
    let o = super::analyze::cta_overshoot_at(&rows, 1.0);
    assert_eq!(o.by[&(6700, 8)], vec![20.0]);
    assert_eq!(super::analyze::jitters_at(&rows, 6700), vec![0.0, 1.0]);
    // A single trial gives no interval: 16 away from the formula, its
    // distance anywhere from 0 up.
    let (w, ci, _, n) = super::analyze::worst_deviation(&o, 6700, 100).unwrap();
    assert_eq!((w, ci, n), (16.0, (0.0, f64::INFINITY), 1));
}

#[test]
fn deviation_interval_is_zero_at_the_near_end_when_it_holds_the_formula() {
    let (d, lo, hi) = super::analyze::deviation_ci(&[3.0, 5.0, 4.0, 6.0, 2.0], 4.0);
    assert_eq!(d, 0.0);
    assert_eq!(lo, 0.0);
    // The far end: the farther end of the mean's interval from the formula.
    let (clo, chi) = limitbench_analysis::stats::mean_cs(&[3.0, 5.0, 4.0, 6.0, 2.0]);
    assert!(hi > 0.0 && (hi - (chi - 4.0).max(4.0 - clo)).abs() < 1e-9, "{hi}");
    // Two equal trials: the value known to 1% of itself (10 +- 0.1).
    let (d, lo, hi) = super::analyze::deviation_ci(&[10.0, 10.0], 4.0);
    assert!(d == 6.0 && (lo - 5.9).abs() < 1e-9 && (hi - 6.1).abs() < 1e-9, "{lo} {hi}");
}

#[test]
fn a1_2_says_at_which_jitter_and_worker_count_the_formula_holds() {
    let at = |c: u64, admitted: u64, jitter: f64| {
        let mut r = row("check-then-act", c, 6.7, admitted);
        r.rtt_jitter_ms = jitter;
        r
    };
    // Formula: 4 over at c=8, 12 at c=16. At 2 ms jitter c=8 is 6 away.
    // Ten trials a cell, one below, at and above the mean in turn (equal
    // trials give no interval).
    let cells = [(8, 0.0, 104), (16, 0.0, 112), (8, 2.0, 110), (16, 2.0, 112)];
    let rows: Vec<_> = cells
        .iter()
        .flat_map(|&(c, j, mean)| (0..10).map(move |t| at(c, mean + [0, 1, 0, 2][t % 4] - 1 + u64::from(t == 9), j)))
        .collect();
    let note = jitter_holds(&rows, 6700, 100, 1.5);
    assert!(
        note.contains("jitter 0 ms (default): holds at every worker count"),
        "{note}"
    );
    assert!(
        note.contains("jitter 2 ms: holds at c=16; wholly above at c=8 5.80"),
        "{note}"
    );
    // Equal trials: the count known to 1% of itself (104 +- 1.04), so
    // within 1.5 of the formula; two values 3 apart are not.
    let equal = vec![at(8, 104, 0.0), at(8, 104, 0.0), at(8, 104, 0.0)];
    assert!(
        jitter_holds(&equal, 6700, 100, 1.5).contains("holds at every worker count"),
        "{}",
        jitter_holds(&equal, 6700, 100, 1.5)
    );
    let two = vec![at(8, 103, 0.0), at(8, 106, 0.0), at(8, 103, 0.0)];
    assert!(
        jitter_holds(&two, 6700, 100, 1.5).contains("reaches across the line at c=8"),
        "{}",
        jitter_holds(&two, 6700, 100, 1.5)
    );
}
