//! The summary figure's rows, from judged claims built here.
use crate::claims::{Alternative, ClaimSpec, Measured, Num};
use crate::report::summary::*;

fn in_range(values: &[f64], intervals: &[(f64, f64)]) -> Judged {
    let spec = ClaimSpec {
        kind: "machine".into(),
        ..crate::claims::test_spec(
            "R",
            "B",
            "cost",
            Check::InRange,
            Num::Many(vec![2.5, 3.5]),
            Num::One(0.02),
        )
    };
    let m =
        Measured::new("R", values.to_vec(), "", "").intervals(intervals.to_vec(), "over 10 trials");
    crate::claims::judge(&[spec], vec![m], "full").remove(0)
}

#[test]
fn a_range_claim_is_drawn_at_the_value_farthest_outside_whatever_its_place() {
    // Six values against a range of two published numbers: the third to
    // sixth have no published value of their own.
    let values = [2.03, 2.73, 2.76, 2.65, 2.24, 2.27];
    let iv: Vec<(f64, f64)> = values.iter().map(|v| (v - 0.07, v + 0.07)).collect();
    let j = in_range(&values, &iv);
    assert_eq!(j.verdict, Verdict::NotReproduced);
    let r = row(&j);
    assert!(r.note.contains("value 1/6"), "{}", r.note);
    assert!((r.value.unwrap() - 2.03 / 3.0).abs() < 1e-9, "{r:?}");
    // All inside: the one nearest an edge (3.5 against 2.45..3.57).
    let values = [3.0, 2.9, 3.5, 3.1];
    let iv: Vec<(f64, f64)> = values.iter().map(|v| (v - 0.01, v + 0.01)).collect();
    let j = in_range(&values, &iv);
    assert_eq!(j.verdict, Verdict::Reproduced);
    assert!(row(&j).note.contains("value 3/4"), "{}", row(&j).note);
}

fn judged(spec: ClaimSpec, m: Measured) -> Judged {
    crate::claims::judge(&[spec], vec![m], "full").remove(0)
}

fn spec(check: Check, published: f64, tolerance: f64) -> ClaimSpec {
    crate::claims::test_spec(
        "Z",
        "B",
        "x",
        check,
        Num::One(published),
        Num::One(tolerance),
    )
}

fn measured(v: f64, iv: (f64, f64)) -> Measured {
    Measured::new("Z", vec![v], "", "").intervals(vec![iv], "over 10 trials")
}

#[test]
fn a_zero_is_drawn_inside_its_band_and_a_published_zero_at_one() {
    // Ours 0 against at most 1: a ratio of 0, inside a band reaching 0.
    let j = judged(spec(Check::AtMost, 1.0, 0.0), measured(0.0, (0.0, 0.0)));
    assert_eq!(j.verdict, Verdict::Reproduced, "{}", j.why);
    let r = row(&j);
    assert_eq!((r.label.as_str(), r.value), ("Z ≤1 -> 0", Some(0.0)));
    let (lo, hi) = r.band.unwrap();
    assert!(lo <= 0.0 && hi == 1.0, "{r:?}");
    // Ours 0 = published 0 exactly: on the line at 1, a band of one point.
    let j = judged(spec(Check::Equals, 0.0, 0.0), measured(0.0, (0.0, 0.0)));
    let r = row(&j);
    assert_eq!((r.value, r.band), (Some(1.0), Some((1.0, 1.0))), "{r:?}");
    // 0.0426 against 0 +-0.014: (ours + s) / s with s = 0.014, beyond
    // the band's edge at 2.
    let j = judged(
        spec(Check::WithinAbs, 0.0, 0.014),
        measured(0.0426, (0.04, 0.045)),
    );
    let r = row(&j);
    assert!(
        (r.value.unwrap() - (0.0426 + 0.014) / 0.014).abs() < 1e-9,
        "{r:?}"
    );
    let (lo, hi) = r.band.unwrap();
    assert!(lo.abs() < 1e-9 && (hi - 2.0).abs() < 1e-9, "{r:?}");
    assert_eq!(r.strip(), "ratio");
}

#[test]
fn a_not_reproduced_claim_gives_the_setting_that_reproduces_it_or_its_side() {
    let mut s = spec(Check::WithinAbs, 16.0, 4.0);
    s.stated_details = vec!["capacity_s".into()];
    let m = Measured::new("Z", vec![50.0], "", "")
        .setting(&[("capacity_s", "1")])
        .alternative(Alternative::new(&[("capacity_s", "0.1")], vec![15.5], ""));
    let j = judged(s.clone(), m);
    assert_eq!(j.verdict, Verdict::NotReproduced, "{}", j.why);
    assert_eq!(row(&j).cause, "only at capacity_s=0.1 (stated: 1)");
    assert_eq!(row(&j).label, "Z 16 -> 50");
    let j = judged(s, Measured::new("Z", vec![50.0], "", ""));
    assert_eq!(cause(&j), "above the band (nothing swept)");
    // Any other verdict has no cause.
    let j = judged(spec(Check::AtMost, 1.0, 0.0), measured(0.0, (0.0, 0.0)));
    assert_eq!(cause(&j), "");
}

#[test]
fn a_behaviour_claim_is_marked_at_the_fraction_of_its_conditions_held() {
    let m = Measured::new("Z", vec![], "", "")
        .condition("a", true)
        .condition("b", true)
        .condition("c", false);
    let j = judged(spec(Check::Behaviour, 1.0, 0.0), m);
    assert_eq!(j.verdict, Verdict::NotReproduced, "{}", j.why);
    let r = row(&j);
    assert_eq!(r.strip(), "fraction");
    assert!((r.fraction.unwrap() - 2.0 / 3.0).abs() < 1e-9, "{r:?}");
    assert_eq!(
        (r.label.as_str(), r.cause.as_str()),
        ("Z all -> 2/3 held", "1 of 3 conditions fail")
    );
}

#[test]
fn the_summary_names_the_claims_the_budget_stopped_and_the_decisive_command() {
    let mut open = in_range(&[1.0], &[(0.5, 1.5)]);
    open.verdict = Verdict::Inconclusive;
    let mut done = in_range(&[1.0], &[(0.9, 1.1)]);
    done.spec.id = "D".into();
    done.verdict = Verdict::Reproduced;
    let m = serde_json::json!({
        "size": "full",
        "until_decisive": {
            "unfunded_claims": ["R", "D"],
            "capped_claims": [],
            "cap_per_cell": 30,
            "budget_basis": "the whole run in 1800 s"
        }
    });
    let t = budget_text(&m, &[open.clone(), done]);
    assert!(t.contains("1 claim(s)") && t.contains(": R"), "{t}");
    assert!(!t.contains("R, D"), "a decided claim is not listed: {t}");
    assert!(
        t.contains("--round-budget 0") && t.contains("1800 s"),
        "{t}"
    );
    let none = serde_json::json!({"size": "full"});
    assert!(budget_text(&none, &[open]).is_empty());
}
