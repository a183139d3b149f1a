//! One judged row per claim: its verdict, the assumption it needs, and the
//! note saying why (the range swept, a conflict between claims, the size).

use std::collections::BTreeSet;

use super::super::{ClaimSpec, Measured, Setting, setting_text};
use super::outcome::{MIN_TRIALS, Outcome, main_outcome, outcome, trials_to_decide};
use super::settings::{
    Candidate, agree, assign, candidates, fits, shared_details, swept, swept_range,
};
use super::{Judged, Verdict};

/// Why the main values' outcome is not a decision, in words.
fn undecided_text(o: Outcome, spec: &ClaimSpec, m: &Measured) -> String {
    match o {
        Outcome::TooFew => format!(
            "{} trials, fewer than the {MIN_TRIALS} an interval needs to decide",
            m.trial_count().unwrap_or(0)
        ),
        _ if !m.undecided.is_empty() => format!("undecided: {}", m.undecided.join("; ")),
        _ if m.sessions_disagree => "the interval reaches across the tolerance's edge; it is the hull of measuring sessions that disagree (disjoint 95% intervals), so more trials pooled over them would not narrow it: one clean session decides it".into(),
        _ if m.sessions_apart => "the interval reaches across the tolerance's edge; it is the hull of measuring sessions kept apart (their 95% intervals overlap: they agree), as wide as its least-measured session's, so more trials in another session would not narrow it".into(),
        _ => format!(
            "the 95% interval reaches across the tolerance's edge{}",
            match trials_to_decide(spec, m) {
                Some(Some(n)) => format!(
                    "; at this spread about {n} trials per cell would decide it (power: n*(h/d)^2)"
                ),
                Some(None) =>
                    "; its point lies on the edge, so no number of trials decides it".into(),
                None => String::new(),
            }
        ),
    }
}

/// "member_len=26" for the claim's defaults of the details it names as
/// assumed (chosen by us because they reproduce, not stated by the study).
fn assumed_text(spec: &ClaimSpec, m: &Measured) -> String {
    let s: Setting = m
        .setting
        .iter()
        .filter(|(k, _)| spec.assumed.contains(k))
        .cloned()
        .collect();
    if s.is_empty() {
        spec.assumed.join(", ")
    } else {
        setting_text(&s)
    }
}

/// The values of detail `d` at which claim `m` was measured, one detail
/// changed at a time (its default, and every alternative that changes `d`
/// alone), and those at which it reproduces (`cands`).
fn values_of(d: &str, m: &Measured, cands: &[Candidate]) -> (BTreeSet<String>, BTreeSet<String>) {
    let default = m
        .setting
        .iter()
        .find(|(k, _)| k == d)
        .map(|(_, v)| v.clone());
    let mut measured: BTreeSet<String> = default.iter().cloned().collect();
    for a in m.sweep.iter().filter(|a| a.invalid.is_empty()) {
        let changed: Vec<&(String, String)> = a
            .setting
            .iter()
            .filter(|(k, v)| !m.setting.iter().any(|(dk, dv)| dk == k && dv == v))
            .collect();
        if changed.len() == 1 && changed[0].0 == d {
            measured.insert(changed[0].1.clone());
        }
    }
    let pass = cands
        .iter()
        .filter(|x| x.own.is_empty() || (x.own.len() == 1 && x.own[0].0 == d))
        .filter_map(|x| x.full.get(d).cloned())
        .filter(|v| measured.contains(v))
        .collect();
    (measured, pass)
}

/// For an assumed detail shared with other claims: does this claim test
/// the one value, or only follow the others? The values every other claim
/// sharing `d` reproduces at, against this claim's own: a value they all
/// allow where this claim fails shows it can fail at the shared value (a
/// calibration alone could not); if it reproduces wherever they do, it adds
/// no test of `d` of its own, and the note says so.
fn joint_test(
    i: usize,
    d: &str,
    claims: &[ClaimSpec],
    found: &[Option<Measured>],
    cands: &[Vec<Candidate>],
    shared: &[Vec<BTreeSet<String>>],
) -> Option<String> {
    let mi = found[i].as_ref()?;
    let (measured, pass) = values_of(d, mi, &cands[i]);
    let others: Vec<usize> = (0..claims.len())
        .filter(|&j| j != i && shared[i][j].contains(d))
        .filter(|&j| found[j].as_ref().is_some_and(|m| m.invalid.is_empty()))
        // A claim that reproduces nowhere constrains no value (as it
        // vetoes none).
        .filter(|&j| !cands[j].is_empty())
        .collect();
    if others.is_empty() || measured.len() < 2 {
        return None;
    }
    let mut allow: BTreeSet<String> = measured.clone();
    for &j in &others {
        let (mj, pj) = values_of(d, found[j].as_ref()?, &cands[j]);
        // Only values both were measured at can be compared.
        allow.retain(|v| !mj.contains(v) || pj.contains(v));
    }
    let ids = others
        .iter()
        .map(|&j| claims[j].id.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    let list = |s: &BTreeSet<String>| {
        if s.is_empty() {
            "none".to_string()
        } else {
            s.iter().cloned().collect::<Vec<_>>().join(", ")
        }
    };
    let fails_where_allowed: BTreeSet<String> = allow.difference(&pass).cloned().collect();
    if allow.is_empty() {
        return Some(format!(
            "joint test of {d}: no measured value serves all the other claims sharing it ({ids}); this claim reproduces at {}",
            list(&pass)
        ));
    }
    Some(if !fails_where_allowed.is_empty() {
        format!(
            "joint test of {d}: the other claims sharing it ({ids}) reproduce together at {d}={}, this claim at {}: it fails at {}, which they allow, so it tests the shared value and does not only pin it",
            list(&allow),
            list(&pass),
            list(&fails_where_allowed)
        )
    } else {
        format!(
            "joint test of {d}: the other claims sharing it ({ids}) reproduce together at {d}={}, this claim at {}: it reproduces wherever they do, so it adds no test of {d} of its own",
            list(&allow),
            list(&pass)
        )
    })
}

/// One row per claim in the table, measured or not, at run size `size`.
pub fn judge(claims: &[ClaimSpec], measured: Vec<Measured>, size: &str) -> Vec<Judged> {
    let found: Vec<Option<Measured>> = claims
        .iter()
        .map(|c| {
            measured
                .iter()
                .find(|m| m.id == c.id)
                .filter(|m| !(m.values.is_empty() && m.conditions.is_empty()))
                .cloned()
        })
        .collect();
    let in_size = |c: &ClaimSpec| c.sizes.as_ref().is_none_or(|s| s.iter().any(|x| x == size));
    // Every setting that reproduces each claim. One that changes a detail
    // the study states is a finding about the claim, never a setting: it
    // takes no part in choosing the one value per detail, so it cannot bind
    // the other claims that share the detail (A4.2's 0.1 s bucket does not
    // move A4.1 off the stated 1 s).
    let all_cands: Vec<Vec<Candidate>> = claims
        .iter()
        .zip(&found)
        .map(|(c, m)| match m {
            Some(m) if in_size(c) => candidates(c, m),
            _ => vec![],
        })
        .collect();
    let changes_stated =
        |c: &ClaimSpec, x: &Candidate| x.own.iter().any(|(d, _)| c.stated_details.contains(d));
    let mut cands: Vec<Vec<Candidate>> = Vec::new();
    let mut stated_finding: Vec<Option<Candidate>> = Vec::new();
    for (c, list) in claims.iter().zip(all_cands) {
        let (finding, fit): (Vec<Candidate>, Vec<Candidate>) =
            list.into_iter().partition(|x| changes_stated(c, x));
        cands.push(fit);
        stated_finding.push(finding.into_iter().next());
    }
    let sweeps: Vec<BTreeSet<String>> = found
        .iter()
        .map(|m| m.as_ref().map(swept).unwrap_or_default())
        .collect();
    let shared = shared_details(claims, &found, &sweeps);
    let mut chosen = assign(&cands, &shared);
    // A fitted value must be measured for every claim of its experiment that
    // shares the detail. A claim that no setting reproduces does not veto
    // the value (it fails wherever it is measured), but until it is measured
    // at the value, the value is not shown to serve it, and the claim that
    // needs the value stays undecided (A2.1's spread arrival, with A2.2 run
    // all at once only).
    let unmeasured = |i: usize, x: &Candidate, chosen: &[Option<usize>]| -> Vec<String> {
        let mut out = Vec::new();
        for j in (0..claims.len()).filter(|&j| j != i && chosen[j].is_none() && in_size(&claims[j]))
        {
            let Some(mj) = &found[j] else { continue };
            for d in &shared[i][j] {
                let theirs = mj.setting.iter().find(|(k, _)| k == d).map(|(_, v)| v);
                let Some(want) = x.full.get(d) else { continue };
                if theirs.is_none() || theirs == Some(want) {
                    continue;
                }
                let measured_there = mj
                    .sweep
                    .iter()
                    .any(|a| a.setting.iter().any(|(k, v)| k == d && v == want));
                if !measured_there {
                    out.push(format!(
                        "{} shares {d} and is not measured at {d}={want}",
                        claims[j].id
                    ));
                }
            }
        }
        out
    };
    // A claim whose fitted value another claim still needs measuring at:
    // another of its settings that fits the others and needs nothing, else
    // undecided, with what to measure.
    let mut pending: Vec<Vec<String>> = vec![vec![]; claims.len()];
    for i in 0..claims.len() {
        let Some(k) = chosen[i] else { continue };
        if cands[i][k].is_default || unmeasured(i, &cands[i][k], &chosen).is_empty() {
            continue;
        }
        let free = |k2: usize| {
            fits(&cands, &shared, &chosen, i, k2)
                && unmeasured(i, &cands[i][k2], &chosen).is_empty()
        };
        match (0..cands[i].len()).find(|&k2| free(k2)) {
            Some(k2) => chosen[i] = Some(k2),
            None => {
                let mut each: Vec<String> = Vec::new();
                for x in &cands[i] {
                    let t = format!(
                        "at {}: {}",
                        setting_text(&x.own),
                        unmeasured(i, x, &chosen).join("; ")
                    );
                    if !each.contains(&t) {
                        each.push(t);
                    }
                }
                pending[i] = each;
                chosen[i] = None;
            }
        }
    }

    (0..claims.len())
        .map(|i| {
            let (c, m) = (&claims[i], found[i].clone());
            // A value judged on the one-value rule (`confseq::mean_interval`:
            // every trial read the same, taken as known to +-1%) rests on
            // that assumption: it is carried as a reading, so `reproduced`
            // there is `reproduced-with-assumption`, and said otherwise.
            let rule = m
                .as_ref()
                .and_then(|m| one_value_rule(m).or_else(|| m.interval_assumption.clone()));
            let with_rule = rule.map(|a| ClaimSpec {
                reading: Some(match &c.reading {
                    Some(r) => format!("{r}; {a}"),
                    None => a,
                }),
                ..c.clone()
            });
            let c = with_rule.as_ref().unwrap_or(c);
            let row = |verdict, assumption: String, borderline, why: String| {
                // A named reading is said whatever the verdict (a reproduced
                // one carries it as its assumption already).
                let why = match &c.reading {
                    Some(r) if verdict != Verdict::ReproducedWithAssumption && verdict != Verdict::NotRun => {
                        format!("{why}{}read as: {r}", if why.is_empty() { "" } else { "; " })
                    }
                    _ => why,
                };
                Judged {
                    spec: c.clone(),
                    measured: m.clone(),
                    verdict,
                    assumption,
                    borderline,
                    why,
                }
            };
            if !in_size(c) {
                let sizes = c.sizes.clone().unwrap_or_default().join(", ");
                return row(
                    Verdict::NotRun,
                    String::new(),
                    false,
                    format!("measured at size {sizes} only; this run is {size}"),
                );
            }
            let Some(mm) = &m else {
                return row(
                    Verdict::NotRun,
                    String::new(),
                    false,
                    "not measured at this size".into(),
                );
            };
            // Validity before verdict: a measurement whose own checks failed
            // is no finding, whatever it reads.
            // A disturbed cell (`crate::disturbance`) reads
            // `inconclusive (disturbed: ...)`; other failed checks are named
            // after it as an invalid measurement.
            if !mm.invalid.is_empty() {
                let (disturbed, other): (Vec<&String>, Vec<&String>) = mm
                    .invalid
                    .iter()
                    .partition(|r| r.starts_with(crate::disturbance::DISTURBED));
                let mut why: Vec<String> = disturbed
                    .iter()
                    .map(|r| format!("inconclusive ({r})"))
                    .collect();
                if !other.is_empty() {
                    why.push(format!(
                        "invalid measurement, no finding: {}",
                        other.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("; ")
                    ));
                }
                return row(Verdict::Inconclusive, String::new(), false, why.join("; "));
            }
            let tried = 1 + mm.sweep.len();
            let range = swept_range(mm);
            let at_default = main_outcome(c, mm);
            if cands[i].iter().any(|x| x.is_default) {
                if c.assumed.is_empty() {
                    return match &c.reading {
                        None => row(Verdict::Reproduced, String::new(), false, String::new()),
                        // Reproduced under a reading the study leaves open:
                        // an assumption, named and counted as one.
                        Some(r) => row(
                            Verdict::ReproducedWithAssumption,
                            r.clone(),
                            false,
                            format!("reproduces under a reading the study does not state: {r}"),
                        ),
                    };
                }
                // Our default of a detail the study leaves open, kept because
                // it reproduces: an assumption, counted as one.
                let a = assumed_text(c, mm);
                // ... and under a named reading, if it rests on one too.
                let (a, read) = match &c.reading {
                    Some(r) => (
                        format!("{a}; {r}"),
                        format!("; and under a reading the study does not state: {r}"),
                    ),
                    None => (a, String::new()),
                };
                let joint: String = c
                    .assumed
                    .iter()
                    .filter_map(|d| joint_test(i, d, claims, &found, &cands, &shared))
                    .map(|t| format!("; {t}"))
                    .collect();
                return row(
                    Verdict::ReproducedWithAssumption,
                    a.clone(),
                    false,
                    format!(
                        "reproduces at our default {}, a value the study does not state, chosen because it reproduces; {tried} setting(s) tried{}{joint}{read}",
                        assumed_text(c, mm),
                        if range.is_empty() { String::new() } else { format!("; swept {range}") }
                    ),
                );
            }
            // "undecided at the defaults (...); reproduces at <x><against>; ..."
            let undecided = |x: &Candidate, against: &str| {
                row(
                    Verdict::Inconclusive,
                    String::new(),
                    at_default == Outcome::Straddles,
                    format!(
                        "undecided at the defaults ({}: {}); reproduces at {}{against}; {tried} settings tried; swept {range}",
                        setting_text(&mm.setting),
                        undecided_text(at_default, c, mm),
                        setting_text(&x.own)
                    ),
                )
            };
            if let Some(k) = chosen[i] {
                let x = &cands[i][k];
                // Undecided at the study's setup: more trials may reproduce
                // it there, so no assumption is needed yet.
                if at_default != Outcome::Outside {
                    return undecided(x, "");
                }
                return row(
                    Verdict::ReproducedWithAssumption,
                    setting_text(&x.own),
                    false,
                    format!(
                        "not at the defaults ({}); reproduces at {}; {tried} settings tried; swept {range}",
                        setting_text(&mm.setting),
                        setting_text(&x.own)
                    ),
                );
            }
            // Every setting that reproduces the claim, the simplest first
            // (the judge tries them in this order).
            let mut reproducing: Vec<String> = Vec::new();
            for x in &cands[i] {
                let t = setting_text(&x.own);
                if !reproducing.contains(&t) {
                    reproducing.push(t);
                }
            }
            if !pending[i].is_empty() {
                let at = if at_default == Outcome::Outside {
                    String::new()
                } else {
                    format!("{}; ", undecided_text(at_default, c, mm))
                };
                return row(
                    Verdict::Inconclusive,
                    String::new(),
                    false,
                    format!(
                        "{at}reproduces at {}, but one value per detail serves every claim that shares it and each is measured there ({}); a claim no setting reproduces does not veto the value, but it must be measured at it; swept {range}",
                        reproducing.join(" or "),
                        pending[i].join("; ")
                    ),
                );
            }
            // A stated detail that must change to reproduce it: a finding.
            if cands[i].is_empty()
                && let Some(x) = &stated_finding[i]
            {
                let stated: Vec<String> = x
                    .own
                    .iter()
                    .filter(|(d, _)| c.stated_details.contains(d))
                    .map(|(d, _)| {
                        let v = mm.setting.iter().find(|(k, _)| k == d).map(|x| x.1.as_str()).unwrap_or("?");
                        format!("{d}={v}")
                    })
                    .collect();
                let against = format!(", which changes what the study states ({}), so it is inconsistent with the study's setup as stated, not a setting to adopt", stated.join(", "));
                if at_default != Outcome::Outside {
                    return undecided(x, &against);
                }
                return row(
                    Verdict::NotReproduced,
                    String::new(),
                    false,
                    format!(
                        "not reproduced as stated ({}); finding: it reproduces at {}{against}; {tried} settings tried; swept {range}",
                        setting_text(&mm.setting),
                        setting_text(&x.own),
                    ),
                );
            }
            let conflict = cands[i].first().map(|x| {
                // Which claims' settings this claim's reproducing settings clash with.
                let others: Vec<String> = (0..claims.len())
                    .filter(|&j| j != i)
                    .filter_map(|j| {
                        // The other claim's chosen setting, else its simplest.
                        let y = cands[j].get(chosen[j].unwrap_or(0))?;
                        let sh = &shared[i][j];
                        (!sh.is_empty() && !agree(x, y, sh)).then(|| {
                            let vals: Vec<String> = sh
                                .iter()
                                .map(|d| format!("{d}={}", y.full.get(d).map(String::as_str).unwrap_or("?")))
                                .collect();
                            format!("{} needs {}", claims[j].id, vals.join(", "))
                        })
                    })
                    .collect();
                format!(
                    "reproduces only at {}, but one value per detail must serve every claim that has it (at {}: {}); swept {range}",
                    reproducing.join(" or "),
                    setting_text(&x.own),
                    if others.is_empty() { "no setting fits the others".to_string() } else { others.join("; ") }
                )
            });
            if at_default != Outcome::Outside {
                let why = format!(
                    "{}{}",
                    undecided_text(at_default, c, mm),
                    conflict.map(|c| format!("; {c}")).unwrap_or_default()
                );
                // Borderline: an interval across an edge, not a clause that
                // cannot be tested (B3.3's counter).
                let across = at_default == Outcome::Straddles
                    && mm
                        .undecided
                        .iter()
                        .all(|u| u.starts_with(super::super::measured::ACROSS_BAND));
                return row(Verdict::Inconclusive, String::new(), across, why);
            }
            // A swept setting that would reproduce the claim but whose own
            // validity checks failed: the sweep is not done, so no finding.
            let invalid_there: Vec<String> = mm
                .sweep
                .iter()
                .filter(|a| !a.invalid.is_empty())
                .filter(|a| {
                    outcome(c, &a.values, &a.intervals, &a.conditions, None) == Outcome::Inside
                })
                .map(|a| format!("{} ({})", setting_text(&a.own(&mm.setting)), a.invalid.join("; ")))
                .collect();
            if conflict.is_none() && !invalid_there.is_empty() {
                return row(
                    Verdict::Inconclusive,
                    String::new(),
                    false,
                    format!(
                        "not at the defaults ({}); it would reproduce at {}, where the measurement is invalid: measure it there again",
                        setting_text(&mm.setting),
                        invalid_there.join(" or ")
                    ),
                );
            }
            // Each claim reproduces somewhere, but no measured value serves
            // them all: the setup is not identified, which is no finding
            // against the study (the unstated details span the published
            // values, and a setting no sweep measured may serve them all).
            if let Some(c) = conflict {
                return row(
                    Verdict::Inconclusive,
                    String::new(),
                    false,
                    format!(
                        "setup not identified: {c}; no finding against the study: its unstated details span the published value, and a setting of them not measured (several changed together) may serve every claim"
                    ),
                );
            }
            let why = if range.is_empty() {
                "no unstated detail swept: measured at the study's setup only".to_string()
            } else {
                format!("no swept value reproduces; {tried} settings tried; swept {range}")
            };
            row(Verdict::NotReproduced, String::new(), false, why)
        })
        .collect()
}

/// The one-value rule's assumption, when an interval of `m`'s main values
/// is exactly its value +-[`crate::confseq::ONE_VALUE_RESOLUTION`] of
/// itself (what `confseq::mean_interval` gives a sample whose trials all
/// read one value; a sequence over spread trials never lands on it).
fn one_value_rule(m: &Measured) -> Option<String> {
    let r = crate::confseq::ONE_VALUE_RESOLUTION;
    let hit = m.values.iter().zip(&m.intervals).any(|(v, (lo, hi))| {
        let step = r * v.abs();
        *v != 0.0
            && ((v - step) - lo).abs() <= 1e-9 * v.abs()
            && ((v + step) - hi).abs() <= 1e-9 * v.abs()
    });
    hit.then(|| {
        format!(
            "every trial read one value, taken as known to +-{}% of itself (no sequence has a spread to use)",
            r * 100.0
        )
    })
}
