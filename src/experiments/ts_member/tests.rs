//! Unit tests of `ts-member`: the analysis's metrics on hand-written rows.

mod analysis {
    use crate::experiments::ts_member::analyze::*;
    use crate::experiments::ts_member::rows::*;

    fn open(member: &str, rate: f64, pacing: &str, drivers: u64, admitted: u64) -> Row {
        Row {
            mode: "open".into(),
            member: member.into(),
            rate_per_s: rate,
            pacing: pacing.into(),
            drivers,
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
    fn main_setting_is_the_poisson_setting_every_member_ran() {
        let rows = [
            open("redis-ms", 100.0, "even", 4, 100),
            open("redis-ms", 100.0, "poisson", 32, 100),
            open("request-id", 100.0, "even", 4, 100),
            open("request-id", 100.0, "poisson", 32, 100),
            open("redis-ms", 100.0, "poisson", 4, 100),
        ];
        let refs: Vec<&Row> = rows.iter().collect();
        assert_eq!(main_setting(&refs), Some(("poisson".into(), 32)));
        assert_eq!(main_setting(&refs[..1]), Some(("even".into(), 4)));
    }

    #[test]
    fn b51_is_the_mean_ratio_per_rate_in_the_main_setting() {
        let rows = vec![
            open("redis-ms", 100.0, "poisson", 32, 100),
            open("redis-ms", 100.0, "poisson", 32, 150),
            open("redis-ms", 10000.0, "poisson", 32, 400),
            // Another setting: not in B5.1.
            open("redis-ms", 100.0, "even", 4, 900),
        ];
        let m = b51(&OpenRows::of(&rows)).unwrap();
        assert_eq!(m.values[0], 1.25);
        assert!(m.values[1].is_nan());
        assert_eq!(m.values[2], 4.0);
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
        ];
        let m = b53(&OpenRows::of(&rows)).unwrap();
        // 100/s: |20 - 15| / 20 = 25%; 1000/s: |100 - 50| / 100 = 50%.
        assert_eq!(m.values, vec![50.0]);
        assert!(
            m.note
                .starts_with("caller-ms over-admitted less than redis-ms at 2 of 2 rates")
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
        assert!(!m.conditions[0].1);
        assert!(b54(&rows[2..3]).is_none());
    }
}
