use super::*;
use crate::claims::{Alternative, Check, Num, judge, test_spec};

pub(crate) fn row(e: &str, c: &str, t: u64, p99: u64, b: Option<u64>, ok: bool) -> ScheduleRow {
    ScheduleRow {
        experiment: e.into(),
        cell: c.into(),
        trial: t,
        attempt: 0,
        slip_max_us: p99,
        slip_p99_us: p99,
        slip_bound_us: b,
        beside: String::new(),
        committed: ok,
        other_cpu_cores: None,
        beside_lanes_cpu_cores: None,
        other_cpu_bound: None,
        disturbed: String::new(),
        steal_cores: None,
    }
}

// The intent of skew's former `late` tests: only committed trials of the
// experiment past their bound count, matched through `<strategy>/<cell>`.
#[test]
fn only_committed_trials_of_the_experiment_past_their_bound_are_disturbed() {
    let rows = vec![
        row("skew", "S1000/x5", 0, 5000, Some(3000), true),
        row("skew", "S1000/x5", 1, 2000, Some(3000), true),
        // Redone: not committed.
        row("skew", "S1000/x5", 2, 9000, Some(3000), false),
        row("bursts", "S1000/x5", 3, 9000, Some(3000), true),
        row("skew", "S0/x1", 4, 9000, None, true),
    ];
    let d = Disturbances::of(&rows);
    assert!(d.trial_disturbed("skew", "token-bucket/S1000/x5", 0));
    assert!(!d.trial_disturbed("skew", "token-bucket/S1000/x5", 1));
    assert!(!d.trial_disturbed("skew", "token-bucket/S1000/x5", 2));
    assert!(!d.trial_disturbed("skew", "token-bucket/S1000/x5", 3));
    assert!(!d.trial_disturbed("skew", "token-bucket/S0/x1", 4));
    assert!(d.trial_disturbed("bursts", "S1000/x5", 3));
    let cell = &d.cells[&("skew".to_string(), "S1000/x5".to_string())];
    assert_eq!((cell.disturbed.len(), cell.committed), (1, 2));
    let why = d.reason("skew", &["token-bucket/S1000/x5".into()]).unwrap();
    assert!(why.starts_with(DISTURBED), "{why}");
    assert!(
        why.contains("1 of 2 committed trials of skew cell S1000/x5"),
        "{why}"
    );
    assert!(
        why.contains("schedule late: p99 slip over 4.90 ms, past the bound 3.0 ms"),
        "{why}"
    );
    assert_eq!(d.reason("skew", &["token-bucket/S0/x1".into()]), None);
    // No cells named: every cell of the experiment, said so.
    let all = d.reason("skew", &[]).unwrap();
    assert!(all.contains("names no cells"), "{all}");
}

#[test]
fn the_recorded_reason_wins_and_the_worst_is_shown() {
    let mut a = row("e", "c", 0, 100, Some(3000), true);
    a.other_cpu_cores = Some(0.9);
    a.other_cpu_bound = Some(0.3);
    a.disturbed = "others took 0.90 cores, past the bound 0.30".into();
    let mut b = row("e", "c", 1, 100, Some(3000), true);
    b.other_cpu_cores = Some(0.4);
    b.other_cpu_bound = Some(0.3);
    b.disturbed = "others took 0.40 cores, past the bound 0.30".into();
    let d = Disturbances::of(&[b, a]);
    let why = d.reason("e", &["c".into()]).unwrap();
    assert!(
        why.contains("2 of 2 committed trials of e cell c (others took 0.90"),
        "{why}"
    );
}

#[test]
fn a_claim_on_a_disturbed_cell_is_inconclusive_disturbed_and_clean_it_is_decided() {
    let spec = test_spec(
        "X",
        "A",
        "e",
        Check::WithinAbs,
        Num::One(60.0),
        Num::One(10.0),
    );
    let m = || {
        Measured::new("X", vec![60.0], "", "")
            .intervals(vec![(59.0, 61.0)], "bootstrap")
            .trials(20)
            .rests_on(["s/c"])
            .alternative(Alternative::new(&[("d", "1")], vec![60.0], "").rests_on(["s/other"]))
    };
    let mut bad = row("e", "c", 3, 9000, Some(3000), true);
    let clean = Disturbances::of(&[row("e", "c", 3, 100, Some(3000), true)]);
    let mut ms = vec![m()];
    clean.apply(std::slice::from_ref(&spec), &mut ms);
    let j = judge(std::slice::from_ref(&spec), ms, "full");
    assert_eq!(j[0].verdict, crate::Verdict::Reproduced);
    bad.disturbed = "lanes beside a CPU-bound cell".into();
    let dirty = Disturbances::of(&[bad, row("e", "other", 0, 1, Some(3000), true)]);
    let mut ms = vec![m()];
    dirty.apply(std::slice::from_ref(&spec), &mut ms);
    assert!(ms[0].sweep[0].invalid.is_empty());
    let j = judge(std::slice::from_ref(&spec), ms, "full");
    assert_eq!(j[0].verdict, crate::Verdict::Inconclusive);
    assert!(
        j[0].why.starts_with("inconclusive (disturbed: 1 committed"),
        "{}",
        j[0].why
    );
    assert!(
        j[0].why.contains("lanes beside a CPU-bound cell"),
        "{}",
        j[0].why
    );
    assert_eq!(
        crate::report::verdict_text(&j[0]),
        "inconclusive (disturbed)"
    );
    let touched = dirty.touched(&j);
    assert_eq!(touched.len(), 1);
    assert_eq!(touched[0].main, vec!["X".to_string()]);
    assert!(touched[0].swept.is_empty());
    let text = summary_text(&serde_json::json!({}), &dirty, &j);
    assert!(
        text.contains("Disturbed cells:") && text.contains("e: c (1/1)"),
        "{text}"
    );
}

#[test]
fn a_busy_preflight_opens_the_report() {
    let manifest = serde_json::json!({"preflight": {"other_cpu_cores": 1.27, "busiest_other": "cc1 (42) 0.9",
        "bound_cores": 0.2, "allowed_busy": true}});
    let text = summary_text(&manifest, &Disturbances::default(), &[]);
    assert!(
        text.starts_with("**This run was started on a busy machine**"),
        "{text}"
    );
    assert!(
        text.contains("1.27 cores") && text.contains("0.20 cores") && text.contains("cc1 (42)"),
        "{text}"
    );
    let quiet = serde_json::json!({"preflight": {"other_cpu_cores": 0.01, "busiest_other": "x",
        "bound_cores": 0.2, "allowed_busy": false}});
    assert_eq!(summary_text(&quiet, &Disturbances::default(), &[]), "");
}

#[test]
fn per_trial_noise_gives_median_max_and_beside() {
    let mut rows = Vec::new();
    for (t, o) in [0.1, 0.5, 0.2].iter().enumerate() {
        let mut r = row("e", "c", t as u64, 10, Some(3000), true);
        r.other_cpu_cores = Some(*o);
        r.beside_lanes_cpu_cores = Some(0.3);
        rows.push(r);
    }
    rows.push(row("e", "old", 0, 10, Some(3000), true));
    let n = crate::noise::per_trial(&rows);
    assert_eq!(n.len(), 1);
    assert_eq!(
        (n[0].trials, n[0].other_median, n[0].other_max),
        (3, 0.2, 0.5)
    );
    assert!((n[0].beside_mean - 0.3).abs() < 1e-12);
}

#[test]
fn a_disturbed_swept_setting_reproduces_nothing_and_the_claim_stands() {
    let spec = test_spec(
        "Y",
        "A",
        "e",
        Check::WithinAbs,
        Num::One(60.0),
        Num::One(10.0),
    );
    let m = Measured::new("Y", vec![60.0], "", "")
        .intervals(vec![(59.0, 61.0)], "bootstrap")
        .trials(20)
        .rests_on(["s/c"])
        .alternative(Alternative::new(&[("d", "1")], vec![60.0], "").rests_on(["s/other"]));
    let d = Disturbances::of(&[
        row("e", "c", 0, 100, Some(3000), true),
        row("e", "other", 0, 9000, Some(3000), true),
    ]);
    let mut ms = vec![m];
    d.apply(std::slice::from_ref(&spec), &mut ms);
    assert!(ms[0].invalid.is_empty());
    assert!(ms[0].sweep[0].invalid[0].starts_with(DISTURBED));
    let j = judge(std::slice::from_ref(&spec), ms, "full");
    assert_eq!(j[0].verdict, crate::Verdict::Reproduced);
    let t = d.touched(&j);
    assert_eq!(
        (t[0].main.len(), t[0].swept.clone()),
        (0, vec!["Y".to_string()])
    );
    let text = summary_text(&serde_json::json!({}), &d, &j);
    assert!(
        text.contains("none of the claims") && text.contains("Only swept settings of Y"),
        "{text}"
    );
}
