//! Unit tests of `ts-member`: the analysis's metrics on hand-written rows.

mod analysis {
    use crate::experiments::ts_member::analyze::*;
    use crate::experiments::ts_member::rows::*;
    use limitbench_analysis::claims::setting_text;

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
        let m = b51(&o, None).unwrap();
        assert_eq!(m.values, vec![1.25, 1.85, 4.1]);
        // The judged interval of the main sender's two ratios at 100/s.
        assert_eq!(m.intervals[0], limitbench_analysis::stats::mean_cs(&[1.0, 1.5]));
        assert_eq!(setting_text(&m.setting), "sender_tick_ms=0, connections=32");
        assert_eq!(m.sweep.len(), 1);
        assert_eq!(
            setting_text(&m.sweep[0].setting),
            "sender_tick_ms=1.5, connections=32"
        );
        assert_eq!(m.sweep[0].values, vec![9.0; 3]);
        // Every log filled; no Rust debug formatting in what a reader sees.
        assert!(m.invalid.is_empty());
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
        let m = b51(&OpenRows::of(&rows), None).unwrap();
        // A validity check, not a finding: inconclusive, with the reason.
        assert_eq!(m.invalid.len(), 1, "{:?}", m.invalid);
        assert!(m.conditions.is_empty());
    }

    fn b51_spec() -> limitbench_analysis::ClaimSpec {
        toml::from_str(
            r#"id = "B5.1"
               study = "B"
               experiment = "ts-member"
               statement = "s"
               kind = "k"
               unit = "ratio"
               published = [1.09, 1.89, 11.9]
               published_text = "p"
               check = "within_abs"
               tolerance = [0.014, 0.094, 1.14]
               metric = "m""#,
        )
        .unwrap()
    }

    #[test]
    fn b51_gives_each_rate_its_verdict_and_names_the_rate_that_decides() {
        let spec = b51_spec();
        // 100/s across its edge, 1,000/s wholly outside, 10,000/s inside.
        let values = [1.07, 1.61, 11.9];
        let iv = [(1.05, 1.09), (1.55, 1.68), (11.5, 12.3)];
        let (st, text) = claims::b51_per_rate(&spec, &values, &iv, 10, &[]);
        // Fewer than 10 trials decide no rate.
        let few = claims::b51_per_rate(&spec, &values, &iv, 3, &[]).0;
        assert!(few.iter().all(|s| s.verdict == "too few trials"));
        let verdicts: Vec<&str> = st.iter().map(|s| s.verdict).collect();
        assert_eq!(verdicts, ["undecided", "not-reproduced", "reproduced"]);
        // 100/s: h = 0.02, d = 1.076 - 1.07 = 0.006: 10 (0.02 / 0.006)^2 = 111.
        assert!(
            (st[0].n_needed.unwrap() - 111.1).abs() < 1.0,
            "{:?}",
            st[0].n_needed
        );
        assert!(text.contains("decided by 1000/s"), "{text}");
        // A point on the band's edge: undecidable as defined.
        let on_edge = claims::value_status(&spec, 2, 10.76, (10.6, 10.92), 10);
        assert!(
            on_edge.text(2).starts_with("undecidable as defined"),
            "{}",
            on_edge.text(2)
        );
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
    fn b52_is_the_count_over_the_models_count_at_the_runs_own_rate() {
        let mut rows = vec![
            closed("redis-ms", 1.0, 20_000),
            closed("redis-ms", 2.5, 9_000),
            closed("redis-ms", 2.5, 13_000),
            closed("request-id", 2.0, 1000),
        ];
        for r in rows.iter_mut() {
            r.achieved_rate_per_s = 10_000.0;
            r.window_ms = 10_000;
            r.zcard_end = 1000;
        }
        let refs: Vec<&Row> = rows.iter().collect();
        let m = b52(&refs, None).unwrap();
        // At 10,000 decisions/s (m = 10 per ms) the model's log admits
        // 999 x 10 / (1 - e^-10) + 1 = 9,990.5; the 2.5 s runs' mean 11,000.
        let model = 999.0 * 10.0 / (1.0 - (-10.0f64).exp()) + 1.0;
        assert!(
            (m.values[0] - 11_000.0 / model).abs() < 1e-9,
            "{:?}",
            m.values
        );
        assert_eq!(setting_text(&m.setting), "closed_duration_s=2.5");
        assert!(m.invalid.is_empty(), "{:?}", m.invalid);
        assert!(m.display.contains("11000 admitted"), "{}", m.display);
        // The 1 s run is the sweep, at its own rate.
        assert!((m.sweep[0].values[0] - 20_000.0 / model).abs() < 1e-9);
        // A run that ended before its log filled: inconclusive, not a finding.
        rows[1].zcard_end = 900;
        let refs: Vec<&Row> = rows.iter().collect();
        assert_eq!(b52(&refs, None).unwrap().invalid.len(), 1);
        assert!(b52(&refs[3..], None).is_none());
    }

    #[test]
    fn b53_is_the_difference_of_mean_admitted_per_limit_at_each_rate() {
        let rows = vec![
            open("redis-ms", 100.0, "poisson", 32, 120),
            open("caller-ms", 100.0, "poisson", 32, 115),
            open("redis-ms", 1000.0, "poisson", 32, 200),
            open("caller-ms", 1000.0, "poisson", 32, 150),
            open("redis-ms", 1000.0, "tick1.5", 32, 200),
            open("caller-ms", 1000.0, "tick1.5", 32, 190),
        ];
        let m = b53(&OpenRows::of(&rows), None).unwrap();
        // 100/s: 1.20 - 1.15; 1000/s: 2.00 - 1.50; 10,000/s did not run.
        assert!((m.values[0] - 0.05).abs() < 1e-9 && (m.values[1] - 0.5).abs() < 1e-9);
        assert!(m.values[2].is_nan());
        // One trial a member: no interval.
        assert_eq!(m.intervals[1], (f64::NEG_INFINITY, f64::INFINITY));
        assert!(
            m.note
                .starts_with("caller-ms over-admitted less than redis-ms at 2 of 2 rates"),
            "{}",
            m.note
        );
        // The 1.5 ms tick: 2.00 - 1.90, under the same detail names as B5.1.
        assert!((m.sweep[0].values[1] - 0.1).abs() < 1e-9);
        assert_eq!(
            setting_text(&m.sweep[0].setting),
            "sender_tick_ms=1.5, connections=32"
        );
    }

    #[test]
    fn the_two_sample_interval_brackets_the_difference_and_narrows_with_n() {
        let a: Vec<f64> = (0..10).map(|i| 1.0 + 0.01 * i as f64).collect();
        let b: Vec<f64> = (0..10).map(|i| 0.9 + 0.01 * i as f64).collect();
        let (lo, hi) = clocks::diff_cs(&a, &b);
        assert!(lo < 0.1 && 0.1 < hi, "{lo} {hi}");
        let a4: Vec<f64> = a.iter().cycle().take(40).copied().collect();
        let b4: Vec<f64> = b.iter().cycle().take(40).copied().collect();
        let (lo4, hi4) = clocks::diff_cs(&a4, &b4);
        assert!(hi4 - lo4 < hi - lo, "{lo4} {hi4}");
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

mod measuring {
    use super::super::{Params, cells};

    fn params(clock_trials: Vec<u64>) -> Params {
        Params {
            members: ["redis-ms", "caller-ms", "redis-us"]
                .map(String::from)
                .to_vec(),
            rates: vec![100.0, 1000.0],
            sender_ticks_ms: vec![0.0, 1.5],
            drivers: vec![32],
            // caller-ms is no sweep member here: clock_trials still raise it.
            sweep_members: vec!["redis-ms".into()],
            limit: 100,
            window_ms: 10_000,
            duration_s: 2.0,
            sweep_duration_s: 0.5,
            trials: 10,
            clock_trials,
            sweep_trials: 5,
            closed_members: vec!["redis-ms".into()],
            closed_workers: 16,
            closed_limit: 1000,
            closed_durations_s: vec![2.0],
            closed_trials: 10,
        }
    }

    #[test]
    fn clock_trials_raise_only_the_main_cells_of_the_two_clocks_per_rate() {
        let trials = |p: &Params| -> Vec<(String, u64)> {
            cells(p).into_iter().map(|c| (c.id, c.trials)).collect()
        };
        let t = trials(&params(vec![140, 90]));
        let of = |id: &str| t.iter().find(|x| x.0 == id).unwrap().1;
        assert_eq!(of("open/redis-ms/100/t0/d32"), 140);
        assert_eq!(of("open/caller-ms/1000/t0/d32"), 90);
        // Not the other members, the sweep's senders, nor the closed loop.
        assert_eq!(of("open/redis-us/100/t0/d32"), 10);
        assert_eq!(of("open/redis-ms/100/t1.5/d32"), 5);
        assert!(
            t.iter()
                .all(|x| !x.0.starts_with("open/caller-ms/100/t1.5"))
        );
        assert_eq!(of("closed/redis-ms/w16/2s"), 10);
        // The same cell ids as without them: a resumed run adds trials.
        let ids = |p: &Params| -> Vec<String> { cells(p).into_iter().map(|c| c.id).collect() };
        assert_eq!(ids(&params(vec![140, 90])), ids(&params(vec![])));
        // Fewer than `trials` never lowers a cell.
        assert_eq!(trials(&params(vec![3, 3]))[0].1, 10);
    }
}
