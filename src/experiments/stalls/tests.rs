//! The stalls analysis's metrics on hand-written rows: one test per claim's
//! metric, each with exact expected values.

use super::analyze::*;
use super::rows::StallRow;

fn trim(n: u64, slowlog_us: f64) -> StallRow {
    StallRow {
        kind: "trim".into(),
        entries: n,
        slowlog_us: Some(slowlog_us),
        after_size: 1,
        admitted: Some(true),
        ..Default::default()
    }
}

fn expire(mode: &str, bio: &str, n: u64, del_ms: f64, cycle_ms: f64, probe_ms: f64) -> StallRow {
    StallRow {
        kind: "expire".into(),
        entries: n,
        lazyfree_lazy_expire: mode.into(),
        bio_cpus: bio.into(),
        latency_expire_del_ms: Some(del_ms),
        latency_expire_cycle_ms: Some(cycle_ms),
        probe_worst_ms: probe_ms,
        ..Default::default()
    }
}

#[test]
fn b41_slowlog_at_100k_and_1m_and_their_ratio() {
    let rows = [
        trim(10_000, 500.0),
        trim(100_000, 4_000.0),
        trim(100_000, 6_000.0),
        trim(1_000_000, 50_000.0),
    ];
    let (a, b, ratio) = b41_trim_growth(&trims_by_entries(&rows)).unwrap();
    assert_eq!((a.mean, a.n, b.mean), (5.0, 2, 50.0));
    assert_eq!(ratio, 10.0);
    assert!(b41_trim_growth(&trims_by_entries(&rows[..3])).is_none());
}

#[test]
fn b41_every_trim_must_leave_one_entry_and_admit() {
    let mut rows = vec![trim(100, 1.0), trim(200, 1.0)];
    assert!(all_trimmed(&rows));
    rows[1].after_size = 5;
    assert!(!all_trimmed(&rows));
    rows[1].after_size = 1;
    rows[0].admitted = Some(false);
    assert!(!all_trimmed(&rows));
}

#[test]
fn b42_worst_expiry_stall_per_placement_at_the_biggest_log() {
    let rows = [
        expire("no", "same", 1_000_000, 40.0, 45.0, 50.0),
        expire("no", "same", 1_000_000, 42.0, 0.0, 60.0),
        expire("yes", "same", 1_000_000, 0.0, 3.0, 5.0),
        expire("no", "cpu1", 1_000_000, 41.0, 0.0, 44.0),
        expire("yes", "cpu1", 1_000_000, 0.0, 0.0, 0.5),
        // A smaller log does not count.
        expire("yes", "cpu1", 1_000, 0.0, 99.0, 99.0),
        // A placement measured with one mode only has no pair.
        expire("no", "cpu2", 1_000_000, 30.0, 0.0, 1.0),
    ];
    let by_mode = expiries_by_mode(&rows);
    assert_eq!(expiry_stall_ms(&rows[0]), 45.0);
    let (biggest, per) = b42_by_placement(&by_mode);
    assert_eq!(biggest, 1_000_000);
    let p = |bio: &str, no_ms, yes_ms, probe_no_ms, probe_yes_ms| Placement {
        bio: bio.into(),
        no_ms,
        yes_ms,
        probe_no_ms,
        probe_yes_ms,
    };
    assert_eq!(
        per,
        [
            p("cpu1", 41.0, 0.0, 44.0, 0.5),
            p("same", 45.0, 3.0, 60.0, 5.0)
        ]
    );
}

#[test]
fn b41_growth_is_paired_by_trial_and_the_band_comes_from_the_published_growth() {
    let mut rows = vec![
        trim(100_000, 10_000.0),
        trim(1_000_000, 150_000.0),
        trim(100_000, 20_000.0),
        trim(1_000_000, 400_000.0),
    ];
    rows[2].trial = 1;
    rows[3].trial = 1;
    assert_eq!(b41_trial_ratios(&trims_by_entries(&rows)), [15.0, 20.0]);
    // Linear growth (10x) is the band's bottom; the top is as far above the
    // published growth as that is above linear; below-linear is mirrored.
    let (lo, hi) = b41_band(20.0);
    assert!((lo - 10.0).abs() < 1e-9 && (hi - 40.0).abs() < 1e-9);
    let (lo, hi) = b41_band(5.0);
    assert!((lo - 2.5).abs() < 1e-9 && (hi - 10.0).abs() < 1e-9);
}

#[test]
fn b42_is_judged_with_the_background_thread_on_another_core() {
    let rows = [
        expire("no", "same", 1000, 200.0, 0.0, 201.0),
        expire("yes", "same", 1000, 3.0, 0.0, 5.0),
        expire("no", "cpu1", 1000, 190.0, 0.0, 191.0),
        expire("yes", "cpu1", 1000, 0.0, 0.0, 0.3),
    ];
    let (_, per_bio) = b42_by_placement(&expiries_by_mode(&rows));
    let p = b42_study_placement(&per_bio).unwrap();
    assert_eq!((p.bio.as_str(), p.yes_ms), ("cpu1", 0.0));
    // Only the one-core placement measured: it is used (and the note says so).
    let (_, same) = b42_by_placement(&expiries_by_mode(&rows[..2]));
    assert_eq!(b42_study_placement(&same).unwrap().bio, "same");
}

#[test]
fn the_published_no_time_is_read_from_the_published_text() {
    assert_eq!(number_after("no: 57 ms; yes: < 1 ms", "no:"), Some(57.0));
    assert_eq!(number_after("no: 1,057.5 ms", "no:"), Some(1057.5));
    assert_eq!(number_after("yes: < 1 ms", "no:"), None);
}
