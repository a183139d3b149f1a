//! Unit tests of `cluster`: the analysis's metrics on hand-written rows,
//! and the pure parts of the run (no Redis; `tests/study_b_topology.rs`
//! covers the servers).

mod analysis {
    use crate::experiments::cluster::analyze::*;
    use crate::experiments::cluster::rows::*;

    const NON_LOCAL: &str = "ERR Script attempted to access a non local key in a cluster node script: abc, on @user_script:4.";

    fn users(
        nodes: u64,
        variant: &str,
        flags: &str,
        ok: u64,
        ok_other_node: u64,
        errors: &str,
    ) -> Row {
        Row {
            kind: "users".into(),
            nodes,
            variant: variant.into(),
            flags: flags.into(),
            users: 10,
            ok,
            failed: 10 - ok,
            fraction_ok: ok as f64 / 10.0,
            same_node: ok,
            ok_same_node: ok - ok_other_node,
            ok_other_node,
            errors: errors.into(),
            ..Default::default()
        }
    }

    #[test]
    fn main_nodes_prefers_three_masters() {
        assert_eq!(main_nodes(&[2, 3, 4]), 3);
        assert_eq!(main_nodes(&[2, 4]), 2);
        assert_eq!(main_nodes(&[]), 0);
    }

    #[test]
    fn error_cores_drop_counts_and_script_suffixes() {
        let r = users(
            3,
            "derived-plain",
            "none",
            5,
            0,
            &format!("{NON_LOCAL} (x4) | ERR other (x1)"),
        );
        assert_eq!(
            error_cores(&[&r], true),
            vec![
                "ERR Script attempted to access a non local key in a cluster node",
                "ERR other"
            ]
        );
        assert_eq!(error_cores(&[&r], false)[1], "ERR other (x1)");
    }

    #[test]
    fn b71_is_the_first_trials_fraction_on_three_masters() {
        let errs = format!("{NON_LOCAL} (x5)");
        let rows = vec![
            users(3, "derived-plain", "none", 4, 0, &errs),
            users(3, "derived-plain", "none", 2, 0, &errs),
            users(2, "derived-plain", "none", 9, 0, ""),
        ];
        let u = UsersRows::of(&rows);
        let m = b71(&u).unwrap();
        // The first trial's users (4 of 10), not the mean over trials.
        assert!((m.values[0] - 0.4).abs() < 1e-12);
        assert_eq!(
            m.conditions.iter().map(|c| c.1).collect::<Vec<_>>(),
            vec![true, true]
        );
        // A failure of another kind breaks the condition.
        let other = "ERR user_script:4: Script attempted to call an unknown command (x5)".to_string();
        let rows = vec![users(3, "derived-plain", "none", 4, 0, &other)];
        let m = b71(&UsersRows::of(&rows)).unwrap();
        assert!(!m.conditions[0].1);
    }

    fn trial(trial: u64, users: u64, ok: u64) -> Row {
        Row {
            cell: "users/n3/derived-plain/none".into(),
            trial,
            kind: "users".into(),
            nodes: 3,
            variant: "derived-plain".into(),
            flags: "none".into(),
            users,
            ok,
            failed: users - ok,
            fraction_ok: ok as f64 / users as f64,
            ok_same_node: ok,
            ..Default::default()
        }
    }

    /// B7.1's interval is the exact binomial one over the first trial's
    /// users: repeated trials of the same users neither narrow it nor move
    /// it, and a script that never fails lies outside "about a third".
    #[test]
    fn b71_counts_users_once_with_an_exact_interval() {
        let one = [trial(0, 1000, 336)];
        let ten: Vec<Row> = (0..10).map(|t| trial(t, 1000, 336)).collect();
        let m1 = b71(&UsersRows::of(&one)).unwrap();
        let m10 = b71(&UsersRows::of(&ten)).unwrap();
        assert_eq!(m1.intervals, m10.intervals);
        let (lo, hi) = m10.intervals[0];
        assert!((lo - 0.3067).abs() < 1e-3 && (hi - 0.3662).abs() < 1e-3, "{lo} {hi}");
        assert!(m10.interval_method.contains("10 of 10 trials read the same fraction"));
        let all = b71(&UsersRows::of(&[trial(0, 1000, 1000)])).unwrap();
        assert!(all.intervals[0].0 > 0.383, "{:?}", all.intervals);
    }

    #[test]
    fn b71_matches_each_servers_wording_of_the_non_local_key_error() {
        // The texts the servers of the matrix answered (data/servers/*/cluster-users.csv).
        for (server, text) in [
            ("redis-7.0", NON_LOCAL),
            ("redis-8.2", "ERR Script attempted to access a non local key in a cluster node script: 1bc04894, on @user_script:12."),
            ("valkey-8.1", "ERR Script attempted to access a non local key in a cluster node script: 1bc04894, on @user_script:12."),
            ("valkey-9.1", "ERR Attempted to access a non local key in a cluster node script: on @user_script:12."),
            ("a redirect", "MOVED 3999 127.0.0.1:7001"),
            ("a cross-slot call", "CROSSSLOT Keys in request don't hash to the same slot"),
            ("a cross-slot script", "ERR Script attempted to access keys that do not hash to the same slot script: 242c, on @user_script:13."),
        ] {
            assert!(is_non_local_key_error(text), "{server}: {text}");
            let rows = vec![users(3, "derived-plain", "none", 4, 0, &format!("{text} (x6)"))];
            let m = b71(&UsersRows::of(&rows)).unwrap();
            assert!(m.conditions[0].1, "{server}");
        }
        for text in ["ERR unknown command", "NOSCRIPT No matching script", "ERR local key"] {
            assert!(!is_non_local_key_error(text), "{text}");
        }
    }

    #[test]
    fn b72_is_the_worst_trial_and_checks_every_flag() {
        let rows = vec![
            users(3, "derived-tagged", "none", 10, 0, ""),
            users(3, "derived-tagged", "none", 9, 0, "ERR x (x1)"),
            users(3, "derived-tagged", "lua", 10, 0, ""),
        ];
        let m = b72(&UsersRows::of(&rows)).unwrap();
        assert_eq!(m.values, vec![0.9]);
        assert!(!m.conditions[0].1);
        assert!(b72(&UsersRows::of(&rows[2..])).is_none());
    }
}

mod run {
    use crate::experiments::cluster::*;

    fn user(ok: bool, base_node: &str, derived_node: &str, error: &str) -> UserRow {
        UserRow {
            ok,
            base_node: base_node.into(),
            derived_node: derived_node.into(),
            error: error.into(),
            ..Default::default()
        }
    }

    #[test]
    fn users_counts_sum_the_users_rows() {
        let side = [
            user(true, "a", "a", ""),
            user(true, "a", "b", ""),
            user(false, "a", "c", "ERR non local"),
            user(false, "b", "c", "ERR non local"),
            user(false, "b", "b", "ERR other"),
        ];
        let r = users_counts(&side);
        assert_eq!(
            (
                r.users,
                r.ok,
                r.failed,
                r.same_node,
                r.ok_same_node,
                r.ok_other_node
            ),
            (5, 2, 3, 2, 1, 1)
        );
        assert_eq!(r.fraction_ok, 0.4);
        assert_eq!(r.errors, "ERR non local (x2) | ERR other (x1)");
    }

    #[test]
    fn variant_keys_tag_only_the_tagged_variant() {
        assert_eq!(
            variant_keys("derived-plain", "u1", 7),
            ("rl:u1:fwd".into(), "rl:u1:fwd:7".into())
        );
        assert_eq!(variant_keys("derived-tagged", "u1", 7).1, "rl:{u1}:fwd:7");
    }
}
