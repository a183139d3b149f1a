//! The judge's unit tests: the equivalence test, the detail rule and the
//! notes, on hand-made claims and measurements.

use super::super::{Alternative, Check, ClaimSpec, Measured, Num};
use super::outcome::trials_to_decide;
use super::*;

fn spec(id: &str, published: f64, tolerance: f64) -> ClaimSpec {
    super::super::test_spec(
        id,
        "B",
        "memory",
        Check::WithinAbs,
        Num::One(published),
        Num::One(tolerance),
    )
}

/// A claim measured at member_len=26 with `v26`, and swept at 16 and 24.
fn member(id: &str, v26: f64, v16: f64, v24: f64) -> Measured {
    Measured::new(id, vec![v26], "", "")
        .setting(&[("member_len", "26")])
        .alternative(Alternative::new(&[("member_len", "16")], vec![v16], ""))
        .alternative(Alternative::new(&[("member_len", "24")], vec![v24], ""))
}

#[test]
fn the_whole_interval_decides_and_few_trials_never_do() {
    let s = spec("X", 10.0, 1.0);
    let o = |v: f64, iv: &[(f64, f64)], n| outcome(&s, &[v], iv, &[], n);
    // Point values alone (no sample behind them).
    assert_eq!(o(12.0, &[], None), Outcome::Outside);
    assert_eq!(o(10.5, &[], None), Outcome::Inside);
    // The interval touching the region is no longer a pass.
    assert_eq!(o(12.0, &[(10.5, 13.0)], Some(20)), Outcome::Straddles);
    assert_eq!(o(10.2, &[(9.8, 10.4)], Some(20)), Outcome::Inside);
    assert_eq!(o(10.2, &[(9.8, 11.4)], Some(20)), Outcome::Straddles);
    assert_eq!(o(13.0, &[(11.5, 14.0)], Some(20)), Outcome::Outside);
    // A point outside its own interval widens it: it cannot pass.
    assert_eq!(o(11.5, &[(9.5, 10.5)], Some(20)), Outcome::Straddles);
    // Fewer than ten trials decide nothing, however tight.
    assert_eq!(o(10.0, &[(10.0, 10.0)], Some(9)), Outcome::TooFew);
    assert_eq!(o(30.0, &[(30.0, 30.0)], Some(2)), Outcome::TooFew);
    let m = Measured::new("X", vec![10.0], "", "").intervals(vec![(9.9, 10.1)], "over 5 trials");
    assert_eq!(
        judge(&[s.clone()], vec![m], "full")[0].verdict,
        Verdict::Inconclusive
    );
    let m = Measured::new("X", vec![10.0], "", "").intervals(vec![(9.8, 10.2)], "over 12 trials");
    assert_eq!(
        judge(&[s.clone()], vec![m], "full")[0].verdict,
        Verdict::Reproduced
    );
    // Every trial one value: its +-1% interval rests on that rule, an
    // assumption the verdict names.
    let one = crate::confseq::mean_interval(&[10.0; 12], 0.95);
    let m = Measured::new("X", vec![10.0], "", "").intervals(vec![one], "over 12 trials");
    let j = &judge(&[s.clone()], vec![m], "full")[0];
    assert_eq!(j.verdict, Verdict::ReproducedWithAssumption);
    assert!(j.assumption.contains("one value"), "{}", j.assumption);
    // A value mapped from such intervals (A1.2's |mean - formula| at 0)
    // hides the rule from the judge: the analyzer names it, and the
    // verdict carries it all the same.
    assert!(crate::confseq::one_value(&[3.0; 4]) && !crate::confseq::one_value(&[3.0, 4.0]));
    let m = Measured::new("X", vec![10.0], "", "")
        .intervals(vec![(9.8, 10.2)], "over 12 trials")
        .interval_assumption(Some("every trial read one count at c=8".into()));
    let j = &judge(&[s], vec![m], "full")[0];
    assert_eq!(j.verdict, Verdict::ReproducedWithAssumption);
    assert!(j.assumption.contains("c=8"), "{}", j.assumption);
}

#[test]
fn a_stated_detail_that_must_change_is_a_finding_not_an_assumption() {
    let mut s = spec("K", 16.0, 4.0);
    s.stated_details = vec!["capacity_s".into()];
    let m = Measured::new("K", vec![50.0], "", "")
        .setting(&[("capacity_s", "1")])
        .alternative(Alternative::new(&[("capacity_s", "0.1")], vec![15.0], ""));
    let j = &judge(&[s], vec![m], "full")[0];
    assert_eq!(j.verdict, Verdict::NotReproduced);
    assert!(
        j.why
            .contains("changes what the study states (capacity_s=1)"),
        "{}",
        j.why
    );
    assert!(j.why.contains("2 settings tried"), "{}", j.why);
}

#[test]
fn a_default_kept_because_it_reproduces_is_an_assumption() {
    let mut s = spec("M", 41.0, 2.0);
    s.assumed = vec!["member_len".into()];
    let j = &judge(&[s], vec![member("M", 41.0, 30.0, 38.0)], "full")[0];
    assert_eq!(j.verdict, Verdict::ReproducedWithAssumption);
    assert_eq!(j.assumption, "member_len=26");
    assert!(j.why.contains("3 setting(s) tried"), "{}", j.why);
}

#[test]
fn a_default_and_a_reading_are_both_named_when_a_claim_rests_on_both() {
    let mut s = spec("M", 41.0, 2.0);
    s.assumed = vec!["member_len".into()];
    s.reading = Some("the counter kept as two keys".into());
    let j = &judge(&[s], vec![member("M", 41.0, 30.0, 38.0)], "full")[0];
    assert_eq!(j.verdict, Verdict::ReproducedWithAssumption);
    assert_eq!(j.assumption, "member_len=26; the counter kept as two keys");
    assert!(
        j.why
            .contains("reading the study does not state: the counter"),
        "{}",
        j.why
    );
}

#[test]
fn one_value_per_detail_serves_every_claim_or_the_setup_is_not_identified() {
    let claims = [
        spec("M1", 30.0, 1.0),
        spec("M2", 4.0, 0.5),
        spec("M3", 12.0, 2.0),
    ];
    // B3.1 passes at 24 and 16, B3.2 at 24 only, B4.3 at its default 26 and at 24.
    let rows = judge(
        &claims,
        vec![
            member("M1", 20.0, 30.5, 29.5),
            member("M2", 7.0, 8.0, 4.1),
            member("M3", 11.0, 7.0, 12.5),
        ],
        "full",
    );
    let v: Vec<(Verdict, &str)> = rows
        .iter()
        .map(|j| (j.verdict, j.assumption.as_str()))
        .collect();
    assert_eq!(
        v,
        [
            (Verdict::ReproducedWithAssumption, "member_len=24"),
            (Verdict::ReproducedWithAssumption, "member_len=24"),
            (Verdict::Reproduced, ""),
        ]
    );
    // Now B3.1 reproduces only at 16: no single member length serves both.
    // Each reproduces somewhere, so that is no finding against the study:
    // the setup is not identified (inconclusive), never reproduced.
    let rows = judge(
        &claims[..2],
        vec![member("M1", 20.0, 30.5, 20.0), member("M2", 7.0, 8.0, 4.1)],
        "full",
    );
    assert!(
        rows.iter().all(|j| j.verdict == Verdict::Inconclusive),
        "{rows:#?}"
    );
    assert!(
        rows[0].why.starts_with("setup not identified"),
        "{}",
        rows[0].why
    );
    assert!(
        rows[0].why.contains("one value per detail"),
        "{}",
        rows[0].why
    );
    // Nothing reproduces: the range swept is named.
    let rows = judge(&claims[..1], vec![member("M1", 1.0, 2.0, 3.0)], "full");
    assert_eq!(rows[0].verdict, Verdict::NotReproduced);
    assert!(
        rows[0].why.contains("member_len: 26 (default), 16, 24"),
        "{}",
        rows[0].why
    );
}

#[test]
fn a_fitted_value_binds_every_claim_of_the_experiment_that_has_the_detail() {
    let a = Measured::new("W1", vec![20.0], "", "")
        .setting(&[("backoff", "fixed-0"), ("arrival", "all-at-once")])
        .alternative(Alternative::new(
            &[("backoff", "full-jitter-10ms")],
            vec![50.0],
            "",
        ));
    let b = Measured::new("W2", vec![100.0], "", "")
        .setting(&[("backoff", "fixed-0"), ("workers", "64")])
        .alternative(Alternative::new(&[("workers", "4")], vec![20.0], ""));
    // One experiment: W2 runs at backoff=fixed-0, so W1's jitter
    // conflicts with it: the setup is not identified.
    let rows = judge(
        &[spec("W1", 50.0, 10.0), spec("W2", 20.0, 5.0)],
        vec![a.clone(), b.clone()],
        "full",
    );
    assert_eq!(rows[0].verdict, Verdict::Inconclusive, "{}", rows[0].why);
    assert!(
        rows[0].why.contains("W2 needs backoff=fixed-0"),
        "{}",
        rows[0].why
    );
    // A claim of the experiment that no setting reproduces does not veto
    // the value, but it must be measured at it: until then the claim that
    // needs the value is undecided, and says what to measure.
    let c = Measured::new("W3", vec![1.0], "", "").setting(&[("backoff", "fixed-0")]);
    let rows = judge(
        &[spec("W1", 50.0, 10.0), spec("W3", 20.0, 5.0)],
        vec![a.clone(), c.clone()],
        "full",
    );
    assert_eq!(rows[0].verdict, Verdict::Inconclusive, "{}", rows[0].why);
    assert!(
        rows[0]
            .why
            .contains("W3 shares backoff and is not measured at backoff=full-jitter-10ms"),
        "{}",
        rows[0].why
    );
    assert_eq!(rows[1].verdict, Verdict::NotReproduced);
    // Measured there (and still failing), it no longer holds the value up.
    let c = c.alternative(Alternative::new(
        &[("backoff", "full-jitter-10ms")],
        vec![2.0],
        "",
    ));
    let rows = judge(
        &[spec("W1", 50.0, 10.0), spec("W3", 20.0, 5.0)],
        vec![a.clone(), c],
        "full",
    );
    assert_eq!(
        (rows[0].verdict, rows[0].assumption.as_str()),
        (
            Verdict::ReproducedWithAssumption,
            "backoff=full-jitter-10ms"
        ),
        "{}",
        rows[0].why
    );
    assert_eq!(rows[1].verdict, Verdict::NotReproduced);
    // Another experiment's detail of the same name does not bind.
    let mut w2 = spec("W2", 20.0, 5.0);
    w2.experiment = "retries".into();
    let rows = judge(&[spec("W1", 50.0, 10.0), w2], vec![a, b], "full");
    assert_eq!(
        rows[0].verdict,
        Verdict::ReproducedWithAssumption,
        "{}",
        rows[0].why
    );
    assert_eq!(rows[0].assumption, "backoff=full-jitter-10ms");
    assert_eq!(
        (rows[1].verdict, rows[1].assumption.as_str()),
        (Verdict::ReproducedWithAssumption, "workers=4")
    );
}

#[test]
fn a_claim_waiting_on_another_names_every_setting_and_what_to_measure() {
    // A2.1 and A2.2 as they stand in the reference: W1 reproduces at a
    // spread arrival and at a jittered backoff; W3, reproduced nowhere, was
    // measured at the defaults of both only.
    let a = Measured::new("W1", vec![20.0], "", "")
        .setting(&[("backoff", "fixed-0"), ("arrival", "all-at-once")])
        .alternative(Alternative::new(
            &[("arrival", "spread-750ms")],
            vec![52.0],
            "",
        ))
        .alternative(Alternative::new(
            &[("backoff", "full-jitter-10ms")],
            vec![49.0],
            "",
        ))
        .alternative(Alternative::new(
            &[("backoff", "fixed-10ms")],
            vec![30.0],
            "",
        ));
    let c = Measured::new("W3", vec![1.0], "", "")
        .setting(&[("backoff", "fixed-0"), ("arrival", "all-at-once")])
        .alternative(Alternative::new(&[("workers", "4")], vec![2.0], ""));
    let rows = judge(
        &[spec("W1", 50.0, 10.0), spec("W3", 20.0, 5.0)],
        vec![a.clone(), c.clone()],
        "full",
    );
    let why = &rows[0].why;
    assert_eq!(rows[0].verdict, Verdict::Inconclusive, "{why}");
    assert!(
        why.contains("reproduces at arrival=spread-750ms or backoff=full-jitter-10ms"),
        "{why}"
    );
    assert!(
        why.contains(
            "at arrival=spread-750ms: W3 shares arrival and is not measured at arrival=spread-750ms"
        ),
        "{why}"
    );
    assert!(
        why.contains("at backoff=full-jitter-10ms: W3 shares backoff and is not measured at backoff=full-jitter-10ms"),
        "{why}"
    );
    assert!(!why.contains("at backoff=fixed-10ms:"), "{why}");
    assert_eq!(rows[1].verdict, Verdict::NotReproduced);
    // W3 measured at the spread arrival (still failing there): W1 takes it.
    let c = c.alternative(Alternative::new(
        &[("arrival", "spread-750ms")],
        vec![3.0],
        "",
    ));
    let rows = judge(
        &[spec("W1", 50.0, 10.0), spec("W3", 20.0, 5.0)],
        vec![a, c],
        "full",
    );
    assert_eq!(
        (rows[0].verdict, rows[0].assumption.as_str()),
        (Verdict::ReproducedWithAssumption, "arrival=spread-750ms"),
        "{}",
        rows[0].why
    );
}

#[test]
fn a_stated_detail_is_never_fitted_and_binds_no_other_claim() {
    // A4.1 and A4.2 as they stand in the reference: both state a 1 s
    // bucket. K2 reproduces only with a 0.1 s bucket (a finding against the
    // study); K1 reproduces at the stated bucket under heavier load (an
    // unstated detail), and also at the 0.1 s bucket.
    let mut k1 = spec("K1", 1.3, 0.05);
    k1.check = Check::AtMost;
    k1.stated_details = vec!["capacity_s".into()];
    let mut k2 = spec("K2", 16.0, 4.0);
    k2.stated_details = vec!["capacity_s".into()];
    let m1 = Measured::new("K1", vec![5.0], "", "")
        .setting(&[("load_x", "5"), ("capacity_s", "1")])
        .alternative(Alternative::new(
            &[("load_x", "10"), ("capacity_s", "0.1")],
            vec![0.98],
            "",
        ))
        .alternative(Alternative::new(&[("load_x", "10")], vec![1.3], ""))
        .alternative(Alternative::new(&[("capacity_s", "0.1")], vec![43.0], ""));
    let m2 = Measured::new("K2", vec![50.0], "", "")
        .setting(&[("capacity_s", "1")])
        .alternative(Alternative::new(&[("capacity_s", "0.1")], vec![15.5], ""));
    let rows = judge(&[k1, k2], vec![m1, m2], "full");
    assert_eq!(
        (rows[0].verdict, rows[0].assumption.as_str()),
        (Verdict::ReproducedWithAssumption, "load_x=10"),
        "{}",
        rows[0].why
    );
    assert_eq!(rows[1].verdict, Verdict::NotReproduced, "{}", rows[1].why);
    assert!(
        rows[1]
            .why
            .contains("finding: it reproduces at capacity_s=0.1, which changes what the study states (capacity_s=1)"),
        "{}",
        rows[1].why
    );
}

#[test]
fn a_claim_about_the_full_run_is_not_run_at_other_sizes() {
    let mut s = spec("S0", 100.0, 0.0);
    s.check = Check::AtLeast;
    s.sizes = Some(vec!["full".into()]);
    let m = || vec![Measured::new("S0", vec![40.0], "", "")];
    assert_eq!(
        judge(&[s.clone()], m(), "quick")[0].verdict,
        Verdict::NotRun
    );
    assert_eq!(judge(&[s], m(), "full")[0].verdict, Verdict::NotReproduced);
}

#[test]
fn a_measurement_whose_own_checks_failed_is_no_finding() {
    // Far outside the region, but the experiment's validity check failed
    // (Redis not saturated): inconclusive with the reason, never a finding.
    let s = spec("V", 10.0, 1.0);
    let m = Measured::new("V", vec![20.0], "", "")
        .intervals(vec![(19.5, 20.5)], "over 12 trials")
        .invalid("Redis was 0.52 busy in a run (saturation check: at least 0.9)");
    let j = &judge(&[s.clone()], vec![m.clone()], "full")[0];
    assert_eq!(j.verdict, Verdict::Inconclusive);
    assert!(j.why.contains("invalid measurement"), "{}", j.why);
    assert!(j.why.contains("0.52 busy"), "{}", j.why);
    assert_eq!(verdict(&s, &m), Verdict::Inconclusive);
    // Inside the region, but invalid: no pass either.
    let m = Measured::new("V", vec![10.0], "", "")
        .intervals(vec![(9.9, 10.1)], "over 12 trials")
        .invalid("the schedule ran late past its bound");
    assert_eq!(
        judge(&[s.clone()], vec![m], "full")[0].verdict,
        Verdict::Inconclusive
    );
    // A swept setting whose own checks failed does not reproduce the claim.
    let m = Measured::new("V", vec![20.0], "", "")
        .intervals(vec![(19.5, 20.5)], "over 12 trials")
        .setting(&[("load", "5")])
        .alternative(
            Alternative::new(&[("load", "10")], vec![10.0], "")
                .intervals(vec![(9.9, 10.1)])
                .invalid("other processes took 1.2 cores"),
        );
    let j = &judge(&[s], vec![m], "full")[0];
    assert_eq!(j.verdict, Verdict::Inconclusive, "{}", j.why);
    assert!(j.why.contains("load=10"), "{}", j.why);
    assert!(j.why.contains("1.2 cores"), "{}", j.why);
}

#[test]
fn the_power_calculation_says_how_many_trials_would_decide() {
    let s = spec("P", 10.0, 1.0);
    // Region 9..11; point 10.5, interval 10.0..11.2 (h = 0.6) over 10
    // trials; d = 0.5 to the edge: 10 * (0.6/0.5)^2 = 14.4 -> 15.
    let m = Measured::new("P", vec![10.5], "", "").intervals(vec![(9.9, 11.1)], "over 10 trials");
    assert_eq!(trials_to_decide(&s, &m), Some(Some(15)));
    let j = &judge(&[s.clone()], vec![m], "full")[0];
    assert_eq!(j.verdict, Verdict::Inconclusive);
    assert!(j.why.contains("about 15 trials per cell"), "{}", j.why);
    // A point on the edge: no number of trials decides it.
    let m = Measured::new("P", vec![11.0], "", "").intervals(vec![(10.5, 11.5)], "over 10 trials");
    assert_eq!(trials_to_decide(&s, &m), Some(None));
    // A confidence sequence shrinks more slowly than 1/sqrt(n) far from the
    // trials it is tightest at: point 10.8, h = 0.6, d = 0.2: the
    // square-root rule says 90, its own boundary more.
    let cs = Measured::new("P", vec![10.8], "", "")
        .intervals(vec![(10.2, 11.4)], crate::confseq::method(10));
    let Some(Some(need)) = trials_to_decide(&s, &cs) else {
        panic!("undecided")
    };
    assert!(need > 90, "{need}");
    let a = crate::confseq::Asymptotic::new(crate::confseq::ALPHA, crate::confseq::PLANNED_N);
    let sd = 0.6 / a.unit_margin(10);
    assert!(sd * a.unit_margin(need) < 0.2 && sd * a.unit_margin(need - 1) >= 0.2);
    // Decided already: nothing to compute.
    let m = Measured::new("P", vec![10.0], "", "").intervals(vec![(9.8, 10.2)], "over 10 trials");
    assert_eq!(trials_to_decide(&s, &m), None);
}

#[test]
fn a_claim_resting_on_an_unstated_reading_is_reproduced_with_that_assumption_named() {
    // Inside the region: without a reading it is reproduced; with one (the
    // study does not say which rate its loop ran at) the verdict names it.
    let mut s = spec("R", 10.0, 1.0);
    let m = Measured::new("R", vec![10.0], "", "").intervals(vec![(9.8, 10.2)], "over 12 trials");
    assert_eq!(
        judge(&[s.clone()], vec![m.clone()], "full")[0].verdict,
        Verdict::Reproduced
    );
    s.reading = Some("the loop ran at B2.2's rates".into());
    let j = &judge(&[s.clone()], vec![m], "full")[0];
    assert_eq!(j.verdict, Verdict::ReproducedWithAssumption);
    assert!(j.why.contains("B2.2's rates"), "{}", j.why);
    // Outside, the reading changes nothing: not reproduced.
    let m = Measured::new("R", vec![20.0], "", "").intervals(vec![(19.8, 20.2)], "over 12 trials");
    assert_eq!(
        judge(&[s], vec![m], "full")[0].verdict,
        Verdict::NotReproduced
    );
}

#[test]
fn an_assumed_shared_detail_says_whether_the_claim_tests_it_or_only_follows() {
    // P (like B3.1) reproduces at 26 only; Q (like B3.3) at 16 and 26.
    // Against Q, P fails at 16, which Q allows: P tests the shared value.
    // Q reproduces wherever P does: it adds no test of its own.
    let mut p = spec("P", 41.0, 4.0);
    p.assumed = vec!["member_len".into()];
    let mut q = spec("Q", 130.0, 5.0);
    q.assumed = vec!["member_len".into()];
    let rows = judge(
        &[p, q],
        vec![
            member("P", 41.0, 33.0, 60.0),
            member("Q", 128.0, 128.0, 150.0),
        ],
        "full",
    );
    assert_eq!(
        rows[0].verdict,
        Verdict::ReproducedWithAssumption,
        "{}",
        rows[0].why
    );
    assert!(
        rows[0]
            .why
            .contains("this claim at 26: it fails at 16, which they allow"),
        "{}",
        rows[0].why
    );
    assert!(
        rows[1].why.contains("adds no test of member_len"),
        "{}",
        rows[1].why
    );
}

#[test]
fn the_cells_to_decide_are_those_of_the_undecided_settings() {
    let s = spec("C", 10.0, 1.0);
    // Main decided outside (12, 11.5..12.5); the swept 16 straddles, the
    // swept 24 is decided: only 16's cells can change the verdict.
    let m = |main: (f64, (f64, f64))| {
        Measured::new("C", vec![main.0], "", "")
            .intervals(vec![main.1], "over 20 trials")
            .setting(&[("member_len", "26")])
            .rests_on(["main-a", "main-b"])
            .alternative(
                Alternative::new(&[("member_len", "16")], vec![10.8], "")
                    .intervals(vec![(10.5, 11.2)])
                    .rests_on(["m16"]),
            )
            .alternative(
                Alternative::new(&[("member_len", "24")], vec![15.0], "")
                    .intervals(vec![(14.0, 16.0)])
                    .rests_on(["m24"]),
            )
    };
    assert_eq!(cells_to_decide(&s, &m((12.0, (11.5, 12.5)))), ["m16"]);
    // The main straddling too: its cells first, then 16's.
    assert_eq!(
        cells_to_decide(&s, &m((10.9, (10.5, 11.3)))),
        ["main-a", "main-b", "m16"]
    );
    // A swept setting that names no cells rests on the main ones; nothing
    // undecided (a conflict between claims): the main cells.
    let bare = Measured::new("C", vec![12.0], "", "")
        .intervals(vec![(11.5, 12.5)], "over 20 trials")
        .rests_on(["main"])
        .alternative(Alternative::new(&[("x", "1")], vec![10.9], "").intervals(vec![(10.6, 11.2)]));
    assert_eq!(cells_to_decide(&s, &bare), ["main"]);
    let decided = Measured::new("C", vec![12.0], "", "")
        .intervals(vec![(11.5, 12.5)], "over 20 trials")
        .rests_on(["main"]);
    assert_eq!(cells_to_decide(&s, &decided), ["main"]);
}
