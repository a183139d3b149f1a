//! Unit tests of the `bursts` analysis: the per-trial window metric on a
//! hand-written history, and which trials each claim reads, with the exact
//! values they must give.

use std::collections::BTreeMap;

use super::analyze::*;
use super::rows::{HistoryRow, Row};

fn row(strategy: &str, variant: &str, trial: u64) -> Row {
    Row {
        cell: format!("{strategy}/{variant}"),
        trial,
        seed: 1,
        strategy: strategy.into(),
        pattern: variant.split('/').next().unwrap().into(),
        phase_ms: None,
        phase_draw: String::new(),
        rate_x: None,
        limit: 4,
        window_ms: 1,
        boundary_us: None,
        redis_clock_offset_us: 0,
        offered: 8,
        admitted: 8,
        errors: 0,
        clock: "reply".into(),
        lateness_p99_us: 0.0,
        lateness_max_us: 0.0,
        drivers: 16,
        parallel_strategies: 1,
        first_error: String::new(),
        max_in_window: None,
    }
}

/// Admissions at `times` (us) on the reply clock, Redis's clock where given.
fn history(r: &Row, times: &[i64], redis: bool) -> Vec<HistoryRow> {
    times
        .iter()
        .map(|&t| HistoryRow {
            cell: r.cell.clone(),
            trial: r.trial,
            worker: 0,
            intended_us: t - 100,
            sent_us: t - 50,
            replied_us: t,
            redis_time_us: redis.then_some(t - 20),
            admitted: true,
            error: false,
        })
        .collect()
}

/// A trial with a given ratio (no history needed).
fn with_ratio(r: &Row, ratio: f64) -> Trial<'_> {
    Trial {
        row: r,
        ratio,
        span_2l_us: None,
        clock: "reply",
        bucket: f64::NAN,
        straddled: None,
    }
}

#[test]
fn the_window_metric_is_the_most_in_any_window_over_the_limit() {
    // L = 4 per 1 ms: 6 admissions within 1 ms, 8 within 1.6 ms.
    let r = row("fixed-window-lua", "straddle/lead0.5", 0);
    let h = history(&r, &[0, 100, 200, 900, 950, 990, 1500, 1600], false);
    let t = trial(&r, &h);
    assert_eq!(t.ratio, 1.5);
    assert_eq!(t.span_2l_us, Some(1600));
    assert_eq!(t.clock, "reply");
    let t = trial(&r, &history(&r, &[0, 2000], true));
    assert_eq!((t.ratio, t.clock), (0.25, "redis"));
    // No history: no ratio (not zero).
    assert!(trial(&r, &[]).ratio.is_nan());
}

#[test]
fn trials_find_their_history_by_cell_and_trial() {
    let rows = vec![
        row("token-bucket", "steady/x1", 0),
        row("token-bucket", "steady/x1", 1),
    ];
    let mut hist = BTreeMap::new();
    hist.insert(
        (rows[1].cell.clone(), 1),
        history(&rows[1], &[0, 10, 20], false),
    );
    let t = trials(&rows, &hist);
    assert!(t[0].ratio.is_nan());
    assert_eq!(t[1].ratio, 0.75);
}

#[test]
fn the_table_groups_ratios_by_variant_and_strategy() {
    let rows = [
        row("a", "steady/x1", 0),
        row("a", "steady/x1", 1),
        row("b", "steady/x1", 0),
    ];
    let t: Vec<Trial> = rows
        .iter()
        .zip([1.0, 1.5, 2.0])
        .map(|(r, x)| with_ratio(r, x))
        .collect();
    let m = ratio_table(&t);
    assert_eq!(
        m[&("steady/x1".to_string(), "a".to_string())],
        vec![1.0, 1.5]
    );
    assert_eq!(m[&("steady/x1".to_string(), "b".to_string())], vec![2.0]);
}

#[test]
fn a3_1_reads_the_fixed_windows_on_straddle() {
    let rows = [
        row("fixed-window-lua", "straddle/lead5", 0),
        row("fixed-window-multi", "straddle/lead50", 0),
        row("fixed-window-lua", "steady/x1", 0),
        row("token-bucket", "straddle/lead5", 0),
        row("fixed-window-lua", "straddle/lead5", 1),
    ];
    let mut t: Vec<Trial> = rows
        .iter()
        .zip([2.0, 1.5, 3.0, 3.0, f64::NAN])
        .map(|(r, x)| with_ratio(r, x))
        .collect();
    t[0].span_2l_us = Some(2500);
    let fw = a3_1_trials(&t);
    let s = ratios(&fw);
    assert_eq!((s.n, s.max, s.mean), (2, 2.0, 1.75));
    assert_eq!(spans_2l_ms(&fw), vec![2.5]);
    assert_eq!(
        ratios_by_variant(&fw),
        BTreeMap::from([
            ("straddle/lead5".to_string(), vec![2.0]),
            ("straddle/lead50".to_string(), vec![1.5]),
        ])
    );
}

#[test]
fn a3_2_reads_the_token_bucket_on_quiet_then_burst() {
    let rows = [
        row("token-bucket", "quiet-then-burst/phase0/x3", 0),
        row("token-bucket", "quiet-then-burst/phase500/x3", 0),
        row("token-bucket", "straddle/lead5", 0),
        row("token-bucket-caller-clock", "quiet-then-burst/phase0/x3", 0),
    ];
    let t: Vec<Trial> = rows
        .iter()
        .zip([1.9, 1.1, 4.0, 4.0])
        .map(|(r, x)| with_ratio(r, x))
        .collect();
    let s = ratios(&a3_2_trials(&t));
    assert_eq!((s.n, s.max, s.min), (2, 1.9, 1.1));
}

#[test]
fn a3_3_reads_the_sliding_window_counter_on_burst_then_sustained() {
    let rows = [
        row(
            "sliding-window-counter",
            "burst-then-sustained/phase0/x1",
            0,
        ),
        row(
            "sliding-window-counter",
            "burst-then-sustained/phase0/x1",
            1,
        ),
        row("sliding-window-counter", "steady/x1", 0),
        row("sliding-window-log", "burst-then-sustained/phase0/x1", 0),
    ];
    let t: Vec<Trial> = rows
        .iter()
        .zip([1.0, 1.5, 3.0, 3.0])
        .map(|(r, x)| with_ratio(r, x))
        .collect();
    let s = ratios(&a3_3_trials(&t));
    assert_eq!((s.n, s.mean, s.max), (2, 1.25, 1.5));
}

#[test]
fn a3_4_reads_the_sliding_window_log_on_every_pattern() {
    let rows = [
        row("sliding-window-log", "straddle/lead5", 0),
        row("sliding-window-log", "steady/x1", 0),
        row("sliding-window-counter", "steady/x1", 0),
        // Not a pattern of the study: A3.4 leaves it out.
        row("sliding-window-log", "anchored/lead50", 0),
    ];
    let t: Vec<Trial> = rows
        .iter()
        .zip([1.0, 0.75, 3.0, 1.5])
        .map(|(r, x)| with_ratio(r, x))
        .collect();
    let s = ratios(&a3_4_trials(&t));
    assert_eq!((s.n, s.max), (2, 1.0));
}

#[test]
fn a3_3_sweeps_the_burst_phase_and_the_sustained_rate() {
    let swc = "sliding-window-counter";
    let mut rows = Vec::new();
    for (v, phase, draw, x) in [
        ("burst-then-sustained/phase0/x1", 0.0, "fixed", 1.0),
        ("burst-then-sustained/phase500/x1", 500.0, "", 1.0),
        (
            "burst-then-sustained/phase-uniform/x1",
            123.0,
            "uniform",
            1.0,
        ),
        (
            "burst-then-sustained/phase-uniform/x1",
            900.0,
            "uniform",
            1.0,
        ),
        ("burst-then-sustained/phase500/x0.5", 500.0, "fixed", 0.5),
    ] {
        let mut r = row(swc, v, rows.len() as u64);
        r.phase_ms = Some(phase);
        r.phase_draw = draw.into();
        r.rate_x = Some(x);
        rows.push(r);
    }
    let t: Vec<Trial> = rows
        .iter()
        .zip([1.0, 1.5, 1.1, 1.9, 1.25])
        .map(|(r, x)| with_ratio(r, x))
        .collect();
    let s = a3_3_sweep(&t);
    let got: Vec<(String, String, Vec<f64>)> = s.into_iter().map(|((p, x), v)| (p, x, v)).collect();
    let e = |p: &str, x: &str, v: &[f64]| (p.to_string(), x.to_string(), v.to_vec());
    assert_eq!(
        got,
        vec![
            e("500", "0.5", &[1.25]),
            e("0", "1", &[1.0]),
            e("500", "1", &[1.5]),
            // Old rows (no phase_draw) count as fixed; uniform draws are not pooled with them.
            e("fixed:0+500", "1", &[1.0, 1.5]),
            e("uniform", "1", &[1.1, 1.9]),
        ]
    );
}

#[test]
fn a3_3_counts_the_bursts_that_spilled_past_the_window_and_the_means_with_and_without() {
    let swc = "sliding-window-counter";
    // (phase ms, latest send ms, ratio, drawn uniformly): window 1000 ms.
    let spec = [
        (990.0, 20.0, 1.2, true),  // 1010 > 1000: spilled
        (600.0, 100.0, 1.6, true), // 700: inside
        (980.0, 30.0, 1.0, true),  // 1010: spilled
        (999.0, 50.0, 1.0, false), // spilled, but a fixed phase: another setting
    ];
    let rows: Vec<Row> = spec
        .iter()
        .enumerate()
        .map(|(i, (phase, late, _, uniform))| {
            let v = if *uniform { "phase-uniform" } else { "phase999" };
            let mut r = row(swc, &format!("burst-then-sustained/{v}/x1"), i as u64);
            r.window_ms = 1000;
            r.phase_ms = Some(*phase);
            r.lateness_max_us = late * 1000.0;
            r.phase_draw = if *uniform { "uniform" } else { "fixed" }.into();
            r.rate_x = Some(1.0);
            r
        })
        .collect();
    let t: Vec<Trial> = rows
        .iter()
        .zip(spec)
        .map(|(r, s)| with_ratio(r, s.2))
        .collect();
    assert_eq!(
        t.iter().map(spilled).collect::<Vec<_>>(),
        [true, false, true, true]
    );
    let mut no_phase = rows[0].clone();
    no_phase.phase_ms = None;
    assert!(!spilled(&with_ratio(&no_phase, 1.0)));
    let text = spill_text(&t, &("uniform".into(), "1".into())).unwrap();
    assert!(
        text.starts_with("in 2 of 3 trials a burst planned within 20 ms of the window's end was sent late (20..30 ms"),
        "{text}"
    );
    // With them (1.2, 1.6, 1.0), without (1.6), and had they stayed in the
    // window (1.99, 1.6, 1.98).
    assert!(
        text.ends_with("the mean is 1.267 with them (judged), 1.600 without them, and 1.857 had their bursts stayed in the window (1 + phase / window each)"),
        "{text}"
    );
    // A setting none of whose trials spilled says nothing.
    assert_eq!(spill_text(&t[1..2], &("uniform".into(), "1".into())), None);
}

// ---- A3.1's straddle rule ----

/// A straddle trial of L = 4 per 1 s on a fixed window, the boundary at
/// 1 s on the trial clock, `offset` the recorded Redis clock offset: the
/// fixed window's edge is at 1 s + offset on the trial's axis.
fn straddle_row(trial: u64, offset: i64) -> Row {
    let mut r = row("fixed-window-lua", "straddle/lead5", trial);
    r.phase_ms = Some(5.0);
    r.window_ms = 1000;
    r.boundary_us = Some(1_000_000);
    r.redis_clock_offset_us = offset;
    r
}

/// Two bursts of 4 meant to leave 5 ms before and 1 ms after the boundary,
/// the first one's sends at `first_sent` (us; each answered 200 us later),
/// the second's at 1_001_000 and after. Admissions as a fixed window on
/// the caller's clock (edge at `edge`, the stamp the send time) decides
/// them: at most 4 per window.
fn straddle_history(r: &Row, first_sent: [i64; 4], edge: i64) -> Vec<HistoryRow> {
    let second = [1_001_000, 1_001_010, 1_001_020, 1_001_030];
    let mut count = [0u32; 2];
    first_sent
        .iter()
        .map(|&s| (995_000, s))
        .chain(second.iter().map(|&s| (1_001_000, s)))
        .map(|(intended_us, sent_us)| {
            let w = usize::from(sent_us >= edge);
            count[w] += 1;
            HistoryRow {
                cell: r.cell.clone(),
                trial: r.trial,
                worker: 0,
                intended_us,
                sent_us,
                replied_us: sent_us + 200,
                redis_time_us: None,
                admitted: count[w] <= 4,
                error: false,
            }
        })
        .collect()
}

const ON_TIME: [i64; 4] = [995_000, 995_010, 995_020, 995_030];
/// The first burst sent late, its last two sends after the boundary.
const LATE: [i64; 4] = [999_000, 999_500, 1_000_500, 1_003_000];

#[test]
fn a_straddle_trial_counts_only_if_its_bursts_fell_on_both_sides_of_the_edge() {
    use super::analyze::straddle::straddled;
    let r = straddle_row(0, 0);
    assert_eq!(straddled(&r, &straddle_history(&r, ON_TIME, 1_000_000)), Ok(()));
    // Sent late across the boundary: the two bursts share a window.
    let h = straddle_history(&r, LATE, 1_000_000);
    assert_eq!(straddled(&r, &h), Err(Miss::FirstAfter));
    assert_eq!(trial(&r, &h).ratio, 1.5);
    // Answered after the edge though sent before it: not certain, invalid.
    let h = straddle_history(&r, [995_000, 995_010, 995_020, 999_900], 1_000_000);
    assert_eq!(straddled(&r, &h), Err(Miss::FirstAfter));
    // Sent on time, but the offset puts the caller's edge 4.9 ms before
    // `boundary_us`: the first burst's replies come after it.
    let r = straddle_row(0, -4_900);
    let h = straddle_history(&r, ON_TIME, 995_100);
    assert_eq!(straddled(&r, &h), Err(Miss::FirstAfter));
    // The edge 1.5 ms after `boundary_us`: the second burst leaves before it.
    let r = straddle_row(0, 1_500);
    let h = straddle_history(&r, ON_TIME, 1_001_500);
    assert_eq!(straddled(&r, &h), Err(Miss::SecondBefore));
    // The rule reads times, never admissions: the same times with every
    // request admitted, or none, decide the same.
    let r = straddle_row(0, 0);
    for admitted in [true, false] {
        let mut h = straddle_history(&r, LATE, 1_000_000);
        h.iter_mut().for_each(|x| x.admitted = admitted);
        assert_eq!(straddled(&r, &h), Err(Miss::FirstAfter));
    }
    // Redis's TIME, where recorded, is the stamp: no round-trip bound.
    let mut h = straddle_history(&r, [995_000, 995_010, 995_020, 999_900], 1_000_000);
    h.iter_mut().for_each(|x| x.redis_time_us = Some(x.sent_us + 50));
    assert_eq!(straddled(&r, &h), Ok(()));
    // Not a straddle pattern: no verdict on it.
    let s = row("fixed-window-lua", "steady/x1", 0);
    assert_eq!(trial(&s, &history(&s, &[0, 10], false)).straddled, None);
}

/// `valid` trials sent on time and one whose first burst was sent late.
fn a3_1_run(valid: u64) -> Vec<(Row, Vec<HistoryRow>)> {
    (0..=valid)
        .map(|i| {
            let r = straddle_row(i, 0);
            let h = straddle_history(&r, if i == valid { LATE } else { ON_TIME }, 1_000_000);
            (r, h)
        })
        .collect()
}

fn a3_1_judged(run: &[(Row, Vec<HistoryRow>)]) -> limitbench_analysis::claims::Judged {
    use limitbench_analysis::claims;
    let t: Vec<Trial> = run.iter().map(|(r, h)| trial(r, h)).collect();
    let m = measured_a3_1(&t, &serde_json::json!({})).expect("A3.1 measured");
    let names: Vec<&str> = crate::experiments::REGISTRY.iter().map(|e| e.name).collect();
    let specs = claims::load(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("analysis/claims.toml"),
        &names,
    )
    .unwrap();
    let spec = specs.into_iter().find(|c| c.id == "A3.1").unwrap();
    claims::judge(&[spec], vec![m], "full").remove(0)
}

#[test]
fn a3_1_is_judged_on_the_trials_that_straddled_and_counts_the_others() {
    use limitbench_analysis::claims::Verdict;
    let run = a3_1_run(10);
    let t: Vec<Trial> = run.iter().map(|(r, h)| trial(r, h)).collect();
    let (valid, invalid) = a3_1_split(&t);
    assert_eq!((valid.len(), invalid.len()), (10, 1));
    assert_eq!((invalid[0].0.row.trial, invalid[0].1), (10, Miss::FirstAfter));
    // The late trial reads 1.5 and is left out: the mean is the valid 2.0,
    // and the claim (2x within 0.05) reproduces; with it, the eleven
    // trials' two values would leave the interval across the edge.
    let j = a3_1_judged(&run);
    let m = j.measured.as_ref().unwrap();
    assert_eq!(m.values, vec![2.0]);
    assert_eq!(m.trial_count(), Some(10));
    assert!(
        m.display.contains("1 of 11 straddle trials did not straddle")
            && m.display.contains("first burst's last reply after the boundary: 1"),
        "{}",
        m.display
    );
    assert!(m.note.contains("fixed-window-lua/straddle/lead5 1 of 11"), "{}", m.note);
    assert!(
        matches!(j.verdict, Verdict::Reproduced | Verdict::ReproducedWithAssumption),
        "{:?}: {}",
        j.verdict,
        j.why
    );
    // Nine valid trials left: too few, inconclusive, and the reason says so.
    let j = a3_1_judged(&a3_1_run(9));
    assert_eq!(j.verdict, Verdict::Inconclusive);
    assert!(
        j.why.contains("9 of 10 straddle trials straddled")
            && j.why.contains("fewer than the 10"),
        "{}",
        j.why
    );
}
