//! Unit tests of `ts-member`: the analysis's metrics on hand-written rows.

mod analysis {
    use limitbench_analysis::claims::setting_text;
    use crate::experiments::ts_member::analyze::*;
    use crate::experiments::ts_member::rows::*;

    /// An open-loop row; `pacing` "poisson" or "even", or "tick1.5" for
    /// Poisson arrivals on a 1.5 ms sender tick.
    fn open(member: &str, rate: f64, pacing: &str, drivers: u64, admitted: u64) -> Row {
        let tick = pacing.strip_prefix("tick").map(|t| t.parse().unwrap());
        Row {
            mode: "open".into(),
            member: member.into(),
            rate_per_s: rate,
            pacing: if tick.is_some() { "poisson" } else { pacing }.into(),
            sender_tick_ms: tick.unwrap_or(0.0),
            drivers,
            zcard_end: 100,
            limit: 100,
            admitted,
            over_limit: admitted as i64 - 100,
            admitted_per_limit: admitted as f64 / 100.0,
            gap_mean_us: 100.0,
            gap_sd_us: 100.0,
            ..Default::default()
        }
    }

    fn closed(member: &str, duration_s: f64, admitted: u64) -> Row {
        Row {
            mode: "closed".into(),
            member: member.into(),
            duration_s,
            limit: 1000,
            admitted,
            achieved_rate_per_s: 5000.0,
            ..Default::default()
        }
    }

    #[test]
    fn main_sender_is_the_precise_sender_every_member_ran() {
        let rows = [
            open("redis-ms", 100.0, "tick1.5", 32, 100),
            open("redis-ms", 100.0, "poisson", 32, 100),
            open("request-id", 100.0, "tick1.5", 32, 100),
            open("request-id", 100.0, "poisson", 32, 100),
            open("redis-ms", 100.0, "poisson", 4, 100),
        ];
        let refs: Vec<&Row> = rows.iter().collect();
        let main = |tick_us, drivers| Some(Sender { tick_us, drivers });
        assert_eq!(main_sender(&refs), main(0, 32));
        assert_eq!(main_sender(&refs[..1]), main(1500, 32));
    }

    #[test]
    fn b51_is_the_mean_ratio_per_rate_with_every_other_sender_an_alternative() {
        let mut rows = Vec::new();
        for (rate, a, b) in [(100.0, 100, 150), (1000.0, 180, 190), (10000.0, 400, 420)] {
            rows.push(open("redis-ms", rate, "poisson", 32, a));
            rows.push(open("redis-ms", rate, "poisson", 32, b));
            rows.push(open("redis-ms", rate, "tick1.5", 32, 900));
        }
        // Evenly spaced arrivals (an older sweep): left out.
        rows.push(open("redis-ms", 100.0, "even", 32, 900));
        let o = OpenRows::of(&rows);
        assert_eq!(o.other_pacing, 1);
        let m = b51(&o).unwrap();
        assert_eq!(m.values, vec![1.25, 1.85, 4.1]);
        assert!(m.intervals[0].0 >= 1.0 && m.intervals[0].1 <= 1.5);
        assert_eq!(setting_text(&m.setting), "sender_tick_ms=0, connections=32");
        assert_eq!(m.sweep.len(), 1);
        assert_eq!(
            setting_text(&m.sweep[0].setting),
            "sender_tick_ms=1.5, connections=32"
        );
        assert_eq!(m.sweep[0].values, vec![9.0; 3]);
        // Every log filled; no Rust debug formatting in what a reader sees.
        assert!(m.conditions.iter().all(|c| c.1));
        for text in [&m.display, &m.note, &m.model, &m.sweep[0].display] {
            assert!(!text.contains("Some(") && !text.contains("None"), "{text}");
        }
    }

    #[test]
    fn b51_flags_a_trial_whose_log_did_not_fill() {
        let mut rows: Vec<Row> = [100.0, 1000.0, 10000.0]
            .iter()
            .map(|r| open("redis-ms", *r, "poisson", 32, 95))
            .collect();
        rows[0].zcard_end = 95;
        let m = b51(&OpenRows::of(&rows)).unwrap();
        assert!(!m.conditions[0].1);
    }

    #[test]
    fn b51_band_compares_with_the_published_value_and_tolerance() {
        let spec = toml::from_str(
            r#"id = "B5.1"
               study = "B"
               experiment = "ts-member"
               statement = "s"
               kind = "k"
               unit = "ratio"
               published = [1.0, 2.0, 10.0]
               published_text = "p"
               check = "within_rel"
               tolerance = 0.1
               metric = "m""#,
        )
        .unwrap();
        assert_eq!(b51_band(&spec, 1000.0, 2.15), Some("within"));
        assert_eq!(b51_band(&spec, 1000.0, 2.3), Some("outside"));
        assert_eq!(b51_band(&spec, 500.0, 2.0), None);
    }

    #[test]
    fn b52_takes_the_run_closest_to_two_seconds() {
        let rows = [
            closed("redis-ms", 1.0, 20_000),
            closed("redis-ms", 2.5, 9_000),
            closed("redis-ms", 2.5, 13_000),
            closed("request-id", 2.0, 1000),
        ];
        let refs: Vec<&Row> = rows.iter().collect();
        let m = b52(&refs).unwrap();
        assert_eq!(m.values, vec![11_000.0]);
        // 9,000 is not over 10x the limit of 1,000.
        assert!(!m.conditions[0].1);
        assert!(b52(&refs[3..]).is_none());
    }

    #[test]
    fn b53_is_the_largest_relative_difference_between_clocks() {
        let rows = vec![
            open("redis-ms", 100.0, "poisson", 32, 120),
            open("caller-ms", 100.0, "poisson", 32, 115),
            open("redis-ms", 1000.0, "poisson", 32, 200),
            open("caller-ms", 1000.0, "poisson", 32, 150),
            open("redis-ms", 1000.0, "tick1.5", 32, 200),
            open("caller-ms", 1000.0, "tick1.5", 32, 190),
        ];
        let m = b53(&OpenRows::of(&rows)).unwrap();
        // 100/s: |20 - 15| / 20 = 25%; 1000/s: |100 - 50| / 100 = 50%.
        assert_eq!(m.values, vec![50.0]);
        assert_eq!(m.intervals, vec![(50.0, 50.0)]);
        assert!(
            m.note
                .starts_with("caller-ms over-admitted less than redis-ms at 2 of 2 rates")
        );
        // The 1.5 ms tick: |100 - 90| / 100 = 10%, under the same detail names as B5.1.
        assert_eq!(m.sweep[0].values, vec![10.0]);
        assert_eq!(
            setting_text(&m.sweep[0].setting),
            "sender_tick_ms=1.5, connections=32"
        );
    }

    #[test]
    fn b54_is_the_worst_over_admission_of_the_exact_members() {
        let mut errored = closed("request-id", 2.0, 1000);
        errored.over_limit = 0;
        errored.errors = 1;
        let rows = vec![
            open("redis-us", 100.0, "poisson", 32, 101),
            open("request-id", 100.0, "poisson", 32, 100),
            open("redis-ms", 100.0, "poisson", 32, 300),
            errored,
        ];
        let m = b54(&rows).unwrap();
        assert_eq!(m.values, vec![1.0]);
        assert_eq!(m.intervals, vec![(1.0, 1.0)]);
        assert!(!m.display.contains("Some("), "{}", m.display);
        assert!(!m.conditions[0].1);
        assert!(b54(&rows[2..3]).is_none());
    }
}
