//! Unit tests of `script-survival`: the analysis's metrics on hand-written rows.

mod analysis {
    use crate::experiments::script_survival::analyze::*;
    use crate::experiments::script_survival::rows::*;

    #[test]
    fn the_expected_outcome_per_cell_follows_the_claims() {
        // B6.2/B6.3: the script cache only on the primary.
        assert_eq!(expected("no", "primary", "evalsha"), Some(1.0));
        assert_eq!(expected("no", "restart", "evalsha"), Some(0.0));
        assert_eq!(expected("yes", "promoted", "script_exists"), Some(0.0));
        // B6.4: functions everywhere; B6.5: the fallback client recovers.
        assert_eq!(expected("no", "replica", "fcall"), Some(1.0));
        assert_eq!(
            expected("no", "restart", "client:evalsha-fallback"),
            Some(1.0)
        );
        assert_eq!(expected("no", "restart", "client:evalsha"), Some(0.0));
        // A read-only replica refuses writes whatever the claim.
        assert_eq!(expected("yes", "replica", "fcall"), Some(0.0));
        assert_eq!(expected("yes", "replica", "fcall_ro"), Some(1.0));
        assert_eq!(
            expected("yes", "replica", "client:evalsha-fallback"),
            Some(0.0)
        );
    }

    fn row(ro: &str, scenario: &str, check: &str, ok: bool, outcome: &str, reply: &str) -> Row {
        Row {
            replica_read_only: ro.into(),
            scenario: scenario.into(),
            check: check.into(),
            script: "token-bucket".into(),
            ok,
            outcome: outcome.into(),
            reply: reply.into(),
            ..Default::default()
        }
    }

    fn client(
        scenario: &str,
        check: &str,
        failed_calls: u64,
        extra: i64,
        succeeded: u64,
        outcome: &str,
    ) -> Row {
        Row {
            decisions: 3,
            succeeded,
            failed_calls,
            extra_round_trips: extra,
            ..row("yes", scenario, check, succeeded == 3, outcome, "")
        }
    }

    /// Which of a claim's conditions hold.
    fn holds(conditions: &[(String, bool)]) -> Vec<bool> {
        conditions.iter().map(|c| c.1).collect()
    }

    #[test]
    fn b62_needs_noscript_after_every_restart() {
        let noscript = "NOSCRIPT No matching script.";
        let rows = vec![
            row("yes", "restart", "script_exists", false, "false", "0"),
            row("yes", "restart", "evalsha", false, "NOSCRIPT", noscript),
            row("no", "restart", "evalsha", true, "ok", "1"),
        ];
        let m = b62(&Rows(&rows)).unwrap();
        assert_eq!(holds(&m.conditions), vec![true, false]);
        assert!(b62(&Rows(&rows[..1])).is_none());
    }

    #[test]
    fn b63_checks_the_replica_and_the_promoted_replica() {
        let rows = vec![
            row("yes", "replica", "evalsha", false, "NOSCRIPT", "NOSCRIPT x"),
            row(
                "yes",
                "promoted",
                "evalsha",
                false,
                "NOSCRIPT",
                "NOSCRIPT x",
            ),
            row("yes", "replica", "script_exists", true, "true", "1"),
            row("yes", "replica", "fcall", false, "READONLY", "READONLY y"),
        ];
        let m = b63(&Rows(&rows)).unwrap();
        assert_eq!(holds(&m.conditions), vec![true, true, false]);
        assert!(m.note.contains("READONLY y"));
    }

    #[test]
    fn b64_counts_fcall_outcomes_per_place() {
        let rows = vec![
            row("yes", "restart", "fcall", true, "ok", "1"),
            row("yes", "promoted", "fcall", true, "ok", "1"),
            row(
                "yes",
                "replica",
                "function_list",
                true,
                "true",
                "1 libraries",
            ),
            row("yes", "replica", "fcall_ro", true, "ok", "0"),
            row("yes", "replica", "fcall", false, "READONLY", "READONLY z"),
            row("no", "replica", "fcall", false, "ERR", "ERR w"),
        ];
        let m = b64(&Rows(&rows)).unwrap();
        assert!(
            m.display
                .contains("on a writable replica 0/1, on a read-only replica 0/1")
        );
        assert_eq!(holds(&m.conditions), vec![true, true, true, true, false]);
    }

    #[test]
    fn b65_wants_one_failed_call_and_one_extra_round_trip() {
        let rows = vec![
            client("restart", "client:evalsha-fallback", 1, 1, 3, "ok"),
            client("promoted", "client:evalsha-fallback", 2, 2, 3, "ok"),
            client("restart", "client:evalsha", 3, 0, 0, "NOSCRIPT"),
            // Not after a loss of the cache: ignored.
            client("primary", "client:evalsha-fallback", 0, 0, 3, "ok"),
        ];
        let m = b65(&Rows(&rows)).unwrap();
        assert!(
            m.display
                .starts_with("fallback client: failed calls 1 or 2, extra round trips 1 or 2")
        );
        assert_eq!(holds(&m.conditions), vec![false, false, true, true]);
    }
}
