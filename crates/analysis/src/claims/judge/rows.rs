//! One judged row per claim: its verdict, the assumption it needs, and the
//! note saying why (the range swept, a conflict between claims, the size).

use std::collections::BTreeSet;

use super::super::{ClaimSpec, Measured, Setting, setting_text};
use super::outcome::{MIN_TRIALS, Outcome, main_outcome};
use super::settings::{Candidate, agree, assign, candidates, shared_details, swept, swept_range};
use super::{Judged, Verdict};

/// Why the main values' outcome is not a decision, in words.
fn undecided_text(o: Outcome, m: &Measured) -> String {
    match o {
        Outcome::TooFew => format!(
            "{} trials, fewer than the {MIN_TRIALS} an interval needs to decide",
            m.trial_count().unwrap_or(0)
        ),
        _ if !m.undecided.is_empty() => format!(
            "undecided: the interval reaches across the band of {}",
            m.undecided.join("; ")
        ),
        _ => "the 95% interval reaches across the tolerance's edge".into(),
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
    let cands: Vec<Vec<Candidate>> = claims
        .iter()
        .zip(&found)
        .map(|(c, m)| match m {
            Some(m) if in_size(c) => candidates(c, m),
            _ => vec![],
        })
        .collect();
    let sweeps: Vec<BTreeSet<String>> = found
        .iter()
        .map(|m| m.as_ref().map(swept).unwrap_or_default())
        .collect();
    let shared = shared_details(claims, &found, &sweeps);
    let mut chosen = assign(&cands, &shared);
    // A fitted value binds the claims of its experiment that no setting
    // reproduces too: they were judged at our default of that detail, so an
    // assumption that changes it is unproven for them, and the conflict is
    // the finding (A2.1's spread arrival against A2.2, run all at once).
    // The claims of claim i's experiment that no setting reproduces and
    // that candidate x would move off the value they were judged at.
    let binds = |i: usize, x: &Candidate, chosen: &[Option<usize>]| -> Vec<String> {
        let mut out = Vec::new();
        for j in (0..claims.len()).filter(|&j| j != i && chosen[j].is_none() && in_size(&claims[j]))
        {
            let Some(mj) = &found[j] else { continue };
            for d in &shared[i][j] {
                let theirs = mj.setting.iter().find(|(k, _)| k == d).map(|(_, v)| v);
                if let Some(theirs) = theirs
                    && x.full.get(d) != Some(theirs)
                {
                    out.push(format!(
                        "{} is judged at {d}={theirs} and no setting reproduces it",
                        claims[j].id
                    ));
                }
            }
        }
        out
    };
    let mut bound: Vec<Vec<String>> = vec![vec![]; claims.len()];
    for i in 0..claims.len() {
        let Some(k) = chosen[i] else { continue };
        let x = &cands[i][k];
        if x.is_default {
            continue;
        }
        bound[i] = binds(i, x, &chosen);
        if !bound[i].is_empty() {
            chosen[i] = None;
        }
    }

    (0..claims.len())
        .map(|i| {
            let (c, m) = (&claims[i], found[i].clone());
            let row = |verdict, assumption: String, borderline, why: String| Judged {
                spec: c.clone(),
                measured: m.clone(),
                verdict,
                assumption,
                borderline,
                why,
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
            let tried = 1 + mm.sweep.len();
            let range = swept_range(mm);
            let at_default = main_outcome(c, mm);
            if cands[i].iter().any(|x| x.is_default) {
                if c.assumed.is_empty() {
                    return row(Verdict::Reproduced, String::new(), false, String::new());
                }
                // Our default of a detail the study leaves open, kept because
                // it reproduces: an assumption, counted as one.
                let a = assumed_text(c, mm);
                return row(
                    Verdict::ReproducedWithAssumption,
                    a.clone(),
                    false,
                    format!(
                        "reproduces at our default {a}, a value the study does not state, chosen because it reproduces; {tried} setting(s) tried{}",
                        if range.is_empty() { String::new() } else { format!("; swept {range}") }
                    ),
                );
            }
            if let Some(k) = chosen[i] {
                let x = &cands[i][k];
                let stated: Vec<String> = x
                    .own
                    .iter()
                    .filter(|(d, _)| c.stated_details.contains(d))
                    .map(|(d, _)| {
                        let v = mm.setting.iter().find(|(k, _)| k == d).map(|x| x.1.as_str()).unwrap_or("?");
                        format!("{d}={v}")
                    })
                    .collect();
                let against = if stated.is_empty() {
                    String::new()
                } else {
                    format!(", which contradicts the study's stated {}", stated.join(", "))
                };
                // Undecided at the study's setup: more trials may reproduce
                // it there, so no assumption (or finding) is needed yet.
                if at_default != Outcome::Outside {
                    return row(
                        Verdict::Inconclusive,
                        String::new(),
                        at_default == Outcome::Straddles,
                        format!(
                            "undecided at the defaults ({}: {}); reproduces at {}{against}; {tried} settings tried; swept {range}",
                            setting_text(&mm.setting),
                            undecided_text(at_default, mm),
                            setting_text(&x.own)
                        ),
                    );
                }
                if !stated.is_empty() {
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
            let conflict = if !bound[i].is_empty() {
                // Each reproducing setting with the claims it would move.
                let each: Vec<String> = cands[i]
                    .iter()
                    .map(|x| {
                        let b = binds(i, x, &chosen);
                        format!(
                            "at {}: {}",
                            setting_text(&x.own),
                            if b.is_empty() { "no such claim".to_string() } else { b.join("; ") }
                        )
                    })
                    .fold(Vec::<String>::new(), |mut v, t| {
                        if !v.contains(&t) {
                            v.push(t);
                        }
                        v
                    });
                Some(format!(
                    "reproduces only at {}, but the value must serve every claim of the experiment that has the detail ({}); swept {range}",
                    reproducing.join(" or "),
                    each.join("; ")
                ))
            } else {
                None
            };
            let conflict = conflict.or_else(|| cands[i].first().map(|x| {
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
            }));
            if at_default != Outcome::Outside {
                let why = format!(
                    "{}{}",
                    undecided_text(at_default, mm),
                    conflict.map(|c| format!("; {c}")).unwrap_or_default()
                );
                return row(
                    Verdict::Inconclusive,
                    String::new(),
                    at_default == Outcome::Straddles,
                    why,
                );
            }
            let why = if let Some(c) = conflict {
                c
            } else if range.is_empty() {
                "no unstated detail swept: measured at the study's setup only".to_string()
            } else {
                format!("no swept value reproduces; {tried} settings tried; swept {range}")
            };
            row(Verdict::NotReproduced, String::new(), false, why)
        })
        .collect()
}
