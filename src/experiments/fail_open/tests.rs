//! Unit tests of `fail-open`: the analysis's metrics on hand-written rows,
//! and the pure parts of the run (no Redis; `tests/study_b_topology.rs`
//! covers the servers).

mod analysis {
    use crate::experiments::fail_open::analyze::*;
    use crate::experiments::fail_open::rows::*;

    fn bin(
        policy: &str,
        trial: u64,
        phase: &str,
        offered: u64,
        admitted_open: u64,
        refused_closed: u64,
        timeouts: u64,
    ) -> BinRow {
        BinRow {
            policy: policy.into(),
            trial,
            phase: phase.into(),
            offered,
            admitted_open,
            refused_closed,
            timeouts,
            admitted: admitted_open,
            ..Default::default()
        }
    }

    fn summary(policy: &str, misses: u64, recover_ms: f64) -> SummaryRow {
        SummaryRow {
            policy: policy.into(),
            misses,
            recover_ms,
            ..Default::default()
        }
    }

    #[test]
    fn per_trial_divides_by_the_trials_present() {
        let rows = [
            bin("fail-open", 0, "gone", 10, 10, 0, 0),
            bin("fail-open", 0, "gone", 20, 20, 0, 0),
            bin("fail-open", 1, "gone", 30, 30, 0, 0),
        ];
        let refs: Vec<&BinRow> = rows.iter().collect();
        assert_eq!(per_trial(&refs, &|b| b.offered as f64), 30.0);
        assert_eq!(per_trial(&[], &|b| b.offered as f64), 0.0);
    }

    #[test]
    fn b8_holds_when_open_admits_and_closed_refuses() {
        let bins = vec![
            bin("fail-open", 0, "slow", 10, 8, 0, 8),
            bin("fail-open", 0, "gone", 10, 10, 0, 0),
            bin("fail-closed", 0, "slow", 10, 0, 8, 8),
            bin("fail-closed", 0, "gone", 10, 0, 10, 0),
        ];
        let sums = vec![
            summary("fail-open", 18, 5.0),
            summary("fail-closed", 18, 6.0),
        ];
        let m = b8(&bins, &sums).unwrap();
        assert!(
            m.display
                .starts_with("fail-open admitted 10/10 while Redis was gone")
        );
        assert!(m.display.contains("fail-closed admitted 0 and refused 18"));
        assert!(m.conditions.iter().all(|c| c.1), "{:?}", m.conditions);
        // A trial that never recovered, and one policy alone.
        let m = b8(&bins, &[summary("fail-open", 18, f64::NAN)]).unwrap();
        assert!(!m.conditions[4].1);
        assert!(b8(&bins[..2], &sums).is_none());
    }

    #[test]
    fn b8_fails_when_closed_admits_while_gone() {
        let mut leaky = bin("fail-closed", 0, "gone", 10, 0, 9, 0);
        leaky.admitted = 1;
        let bins = vec![
            bin("fail-open", 0, "slow", 10, 8, 0, 8),
            bin("fail-open", 0, "gone", 10, 10, 0, 0),
            leaky,
        ];
        let m = b8(&bins, &[summary("fail-open", 18, 5.0)]).unwrap();
        assert_eq!(
            m.conditions.iter().map(|c| c.1).collect::<Vec<_>>(),
            vec![true, true, true, false, true]
        );
    }
}

mod run {
    use crate::experiments::fail_open::*;

    #[test]
    fn median_interpolates_between_the_middle_values() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn phases_follow_the_durations() {
        let p = Params {
            policies: vec![],
            strategy: "token-bucket".into(),
            trials: 1,
            offered_per_s: 10.0,
            limit_per_s: 4,
            drivers: 1,
            timeout_ms: 50,
            slow_one_way_ms: 60.0,
            normal_s: 1.0,
            slow_s: 0.5,
            gone_s: 0.5,
            back_s: 1.0,
            bin_ms: 500,
            late_margin_ms: None,
        };
        let ph = Phases::of(&p);
        assert_eq!(
            (ph.slow, ph.gone, ph.back, ph.end),
            (1_000_000, 1_500_000, 2_000_000, 3_000_000)
        );
        assert_eq!(
            [0, 1_000_000, 1_600_000, 2_000_000].map(|t| ph.at(t)),
            ["normal", "slow", "gone", "back"]
        );
        let ev = |t: i64, by_redis: bool, admitted: bool| Ev {
            worker: 0,
            intended_us: t,
            sent_us: t,
            // The policy's decision at 1.3 s takes 71 ms: later than the
            // 50 ms deadline plus the default 20 ms margin.
            replied_us: t + if t == 1_300_000 { 71_000 } else { 2_000 },
            o: PolicyOutcome {
                admitted,
                by_redis,
                ..Default::default()
            },
        };
        let evs = [
            ev(0, true, true),
            ev(1_100_000, false, true),
            ev(1_200_000, false, true),
            ev(1_300_000, false, true),
        ];
        let bins = bin_rows(&p, &evs, &BinRow::default());
        assert_eq!(bins.len(), 6);
        assert_eq!(
            (
                bins[0].by_redis,
                bins[2].admitted_open,
                bins[2].phase.as_str()
            ),
            (1, 3, "slow")
        );
        // 3 admitted in a 500 ms bin whose limit is 2.
        assert_eq!(bins[2].over_limit, 1.0);
        assert_eq!((bins[0].late_misses, bins[2].late_misses), (0, 1));
        assert_eq!(bins[0].latency_p50_ms, 2.0);
    }
}
