//! Unit tests of `replication`: the analysis's metrics on hand-written rows,
//! and the pure parts of the run (no Redis; `tests/study_b_topology.rs`
//! covers the servers).

mod analysis {
    use crate::experiments::replication::analyze::*;
    use crate::experiments::replication::rows::*;

    fn row(strategy: &str, matches: u64, mismatches: u64) -> Row {
        Row {
            cell: strategy.into(),
            strategy: strategy.into(),
            buckets: matches + mismatches,
            decisions: 100,
            caught_up: true,
            keys_primary: 10,
            keys_replica: 10,
            matches,
            mismatches,
            ..Default::default()
        }
    }

    #[test]
    fn compared_sums_matches_and_mismatches() {
        let rows = [row("token-bucket", 9, 1), row("token-bucket", 7, 3)];
        assert_eq!(compared(&rows.iter().collect::<Vec<_>>()), (20, 4));
    }

    #[test]
    fn b1_counts_only_token_bucket_mismatches_and_checks_catch_up() {
        let mut lagging = row("token-bucket", 10, 0);
        lagging.caught_up = false;
        let rows = vec![
            row("token-bucket", 8, 2),
            lagging,
            row("token-bucket-caller-clock", 0, 10),
        ];
        let m = b1(&rows).unwrap();
        assert_eq!(m.values, vec![2.0]);
        assert_eq!(m.display, "2 of 20 buckets differ (2 trials)");
        assert_eq!(
            m.conditions.iter().map(|c| c.1).collect::<Vec<_>>(),
            vec![false, true, true]
        );
        assert!(b1(&rows[2..]).is_none());
    }
}

mod run {
    use crate::experiments::replication::*;

    #[test]
    fn arrivals_are_seeded_increasing_and_on_the_buckets() {
        let p = Params {
            strategies: vec![],
            trials: 1,
            buckets: 3,
            decisions: 50,
            duration_s: 0.5,
            capacity: 5,
            rate_per_s: 1.0,
            drivers: 1,
            catch_up_timeout_ms: 10,
        };
        let clients: Vec<String> = (0..3).map(|b| format!("c-b{b}")).collect();
        let a = arrivals(&p, &clients, &mut trial_rng(1, "token-bucket", 0));
        let b = arrivals(&p, &clients, &mut trial_rng(1, "token-bucket", 0));
        assert_eq!(a.len(), 50);
        assert!(a.windows(2).all(|w| w[0].at_us <= w[1].at_us));
        assert!(a.iter().all(|x| clients.contains(&x.client)));
        assert_eq!(
            a.iter()
                .map(|x| (x.at_us, x.client.clone()))
                .collect::<Vec<_>>(),
            b.iter()
                .map(|x| (x.at_us, x.client.clone()))
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn diff_states_reports_changed_and_absent_fields() {
        let p: BTreeMap<String, String> = [("tokens", "4"), ("ts", "1")]
            .map(|(k, v)| (k.into(), v.into()))
            .into();
        let r: BTreeMap<String, String> =
            [("tokens", "5")].map(|(k, v)| (k.into(), v.into())).into();
        assert_eq!(
            diff_states(&p, &r),
            vec![
                ("tokens".into(), "4".into(), "5".into()),
                ("ts".into(), "1".into(), "(absent)".into())
            ]
        );
    }
}
