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
        probe_baseline_worst_ms: 0.2,
        probe_pings: 100,
        probe_pings_during: Some(50),
        redis_cpu: Some(0),
        probe_cpu: Some(1),
        probe_policy: Some("fifo:50".into()),
        redis_threads: Some(if bio == "same" {
            "redis-server:0;bio_lazy_free:0;jemalloc_bg_thd:0".into()
        } else {
            format!(
                "redis-server:0;bio_lazy_free:{b};jemalloc_bg_thd:{b}",
                b = bio.trim_start_matches("cpu")
            )
        }),
        harness_cpu: Some(1),
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
    let got: Vec<(String, f64, f64, f64, f64)> = per
        .iter()
        .map(|p| {
            (
                p.bio.clone(),
                p.no_ms,
                p.yes_ms,
                p.probe_no_ms,
                p.probe_yes_ms,
            )
        })
        .collect();
    let p = |bio: &str, a, b, c, d| (bio.to_string(), a, b, c, d);
    assert_eq!(
        got,
        [
            p("cpu1", 41.0, 0.0, 44.0, 0.5),
            p("same", 45.0, 3.0, 60.0, 5.0)
        ]
    );
    // The probe's stall is its worst round trip over its baseline (0.2 ms).
    assert!((per[0].excess_yes_ms - 0.3).abs() < 1e-12);
    assert!((per[1].excess_no_ms - 59.8).abs() < 1e-12);
    assert!(per.iter().all(|p| p.invalid.is_empty()));
}

#[test]
fn b42_the_probe_must_be_real_time_beside_the_background_threads_quiet_before_and_running() {
    let ok = expire("yes", "cpu1", 1000, 0.0, 0.0, 0.5);
    assert!(probe_validity(&[&ok]).is_empty());
    assert!(threads_misplaced(&ok).is_none() && probe_realtime(&ok));
    // Older rows: the probe was not pinned.
    let mut old = ok.clone();
    old.probe_cpu = None;
    assert!(probe_validity(&[&ok, &old])[0].contains("not pinned in 1 of 2"));
    // Last session's design: the probe on Redis's own CPU.
    old.probe_cpu = Some(0);
    let why = probe_validity(&[&old]);
    assert_eq!(why.len(), 1);
    assert!(why[0].contains("Redis's main thread's CPU"), "{why:?}");
    // SCHED_FIFO refused (or an older row without a policy): not real-time.
    let mut plain = ok.clone();
    plain.probe_policy = Some("other (SCHED_FIFO refused: Operation not permitted)".into());
    assert!(!probe_realtime(&plain));
    assert!(probe_validity(&[&plain])[0].starts_with("probe not real-time in 1 of 1"));
    plain.probe_policy = None;
    assert!(probe_validity(&[&plain])[0].starts_with("probe not real-time"));
    // Redis's threads: the main thread alone on CPU 0, the others on the bio CPU.
    let mut shared = ok.clone();
    shared.redis_threads = Some("redis-server:0;bio_lazy_free:1;jemalloc_bg_thd:0".into());
    assert!(threads_misplaced(&shared).unwrap().contains("jemalloc_bg_thd on 0"));
    assert!(probe_validity(&[&shared])[0].contains("not placed as designed"));
    shared.redis_threads = Some("redis-server:0-1;bio_lazy_free:1".into());
    assert!(threads_misplaced(&shared).unwrap().contains("main thread"));
    shared.redis_threads = None;
    assert!(threads_misplaced(&shared).unwrap().contains("not recorded"));
    // The one-core placement: background threads on the main thread's CPU by design.
    let same = expire("yes", "same", 1000, 0.0, 0.0, 0.5);
    assert!(threads_misplaced(&same).is_none());
    let mut idle = ok.clone();
    idle.probe_pings_during = Some(0);
    assert!(probe_validity(&[&idle])[0].contains("no PING in flight"));
    // The baseline bound is a quarter of the 1 ms threshold, fixed before looking.
    assert_eq!(BASELINE_MAX_MS, 0.25);
    let mut noisy = ok.clone();
    noisy.probe_baseline_worst_ms = 0.3;
    assert!(probe_validity(&[&noisy])[0].contains("baseline"));
    noisy.probe_baseline_worst_ms = 0.24;
    assert!(probe_validity(&[&noisy]).is_empty());
    // LATENCY says 3 ms, the probe 0.3 ms: the instruments disagree.
    let rows = [
        expire("no", "cpu1", 1000, 190.0, 0.0, 191.0),
        expire("yes", "cpu1", 1000, 3.0, 0.0, 0.5),
    ];
    let (_, per) = b42_by_placement(&expiries_by_mode(&rows));
    assert!(instruments_disagree(&per[0]));
    let rows = [
        expire("no", "cpu1", 1000, 190.0, 0.0, 191.0),
        expire("yes", "cpu1", 1000, 0.0, 0.0, 0.5),
    ];
    let (_, per) = b42_by_placement(&expiries_by_mode(&rows));
    assert!(!instruments_disagree(&per[0]));
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
    // Roughly linear: from linear (10x) to as far beyond the published
    // growth (15x) as that is beyond linear (x1.5): 22.5x.
    let (lo, hi) = b41_band(15.0, 1.5);
    assert!((lo - 10.0).abs() < 1e-9 && (hi - 22.5).abs() < 1e-9);
}

#[test]
fn b41_shape_fails_on_growth_far_from_linear_and_is_undecided_across_an_edge() {
    use limitbench_analysis::claims::{self, Check, Measured, Outcome, outcome_with};
    let names: Vec<&str> = crate::experiments::REGISTRY
        .iter()
        .map(|e| e.name)
        .collect();
    let claims = claims::load(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("analysis/claims.toml"),
        &names,
    )
    .unwrap();
    let spec = claims.iter().find(|c| c.id == "B4.1").unwrap();
    assert_eq!(spec.check, Check::Shape);
    let band = b41_band(
        spec.published.at(1) / spec.published.at(0),
        spec.tolerance.at(0),
    );
    let judge = |iv: (f64, f64)| {
        let m = Measured::new("B4.1", vec![1.0, 10.0], "", "").band_condition("growth", iv, band);
        outcome_with(
            spec,
            &m.values,
            &m.intervals,
            &m.conditions,
            !m.undecided.is_empty(),
            Some(10),
        )
    };
    // Hand-made counter-examples: a trim whose time does not grow with the
    // entries (1x), and one that grows quadratically (100x).
    assert_eq!(judge((0.9, 1.1)), Outcome::Outside);
    assert_eq!(judge((95.0, 105.0)), Outcome::Outside);
    // Between linear and the band's upper end: roughly linear.
    assert_eq!(judge((band.0 + 0.1, band.1 - 0.1)), Outcome::Inside);
    assert_eq!(judge((band.1 - 1.0, band.1 + 1.0)), Outcome::Straddles);
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

/// On a real redis-server: the design's placement. With the background
/// threads on CPU 1, every Redis thread but the main one is moved there (the
/// bio threads and jemalloc's, by name) and the rows' record says so; the
/// probe's thread runs on its CPU at SCHED_FIFO (we are root; where the
/// kernel refuses, its policy says why and B4.2 is inconclusive).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_design_places_redis_threads_and_a_real_time_probe() {
    use super::probe::{StallProbe, place_redis_threads, redis_threads};
    use limitbench_core::fleet::{Fleet, RedisBinary, ServerConfig};
    if limitbench_core::pin::num_cpus() < 2 {
        eprintln!("one CPU: nothing to place");
        return;
    }
    let bin = RedisBinary::locate(None).expect("redis-server installed");
    let fleet = Fleet::standalone(&bin, ServerConfig::default().pinned(0))
        .await
        .unwrap();
    let pid = fleet.primary().pid().unwrap();
    let before = redis_threads(pid);
    assert!(before.starts_with("redis-server:0;"), "{before}");
    assert!(before.contains("bio_lazy_free:0"), "{before}");
    place_redis_threads(pid, Some(1)).unwrap();
    let after = redis_threads(pid);
    let row = StallRow {
        kind: "expire".into(),
        bio_cpus: "cpu1".into(),
        redis_cpu: Some(0),
        redis_threads: Some(after.clone()),
        ..Default::default()
    };
    assert_eq!(threads_misplaced(&row), None, "{after}");
    assert!(after.contains("bio_lazy_free:1"), "{after}");
    // Without a CPU for the background threads nothing moves.
    place_redis_threads(pid, None).unwrap();
    assert_eq!(redis_threads(pid), after);
    let origin = std::time::Instant::now();
    let probe = StallProbe::start(fleet.primary_addr(), origin, 1, 50)
        .await
        .unwrap();
    assert_eq!(probe.cpu, Some(1));
    let policy = probe.policy.clone();
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    let pings = probe.stop().await.unwrap();
    assert!(!pings.is_empty());
    assert!(
        policy == "fifo:50" || policy.contains("SCHED_FIFO refused"),
        "{policy}"
    );
}
