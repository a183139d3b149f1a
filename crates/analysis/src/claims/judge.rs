//! Verdicts: `reproduced`, `reproduced-with-assumption`, `not-reproduced`,
//! `inconclusive`, `not-run`.
//!
//! An equivalence test: a setting reproduces a claim only when the whole 95%
//! interval of every value lies inside the tolerance region (`region.rs`);
//! it does not when one lies wholly outside; anything else, and any value
//! resting on fewer than `MIN_TRIALS` trials, is undecided, so noise and
//! small samples give `inconclusive`, never a pass. A claim is `reproduced`
//! at the setup as the study states it (our defaults for what it leaves
//! unstated), unless a default is marked `assumed` (kept because it
//! reproduces); failing that, `reproduced-with-assumption` when one swept
//! setting reproduces, provided one value of each detail serves every claim
//! of the experiment that has the detail and every claim that sweeps it;
//! a setting that changes a detail the study states is a finding and the
//! claim is `not-reproduced` as stated.

use std::collections::{BTreeMap, BTreeSet};

use super::{Check, ClaimSpec, Measured, Setting, setting_text};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Verdict {
    /// The whole 95% interval lies inside the tolerance region, at the setup
    /// as the study states it (our defaults for what it leaves unstated).
    Reproduced,
    /// Reproduced only at a setting of an unstated detail chosen because it
    /// reproduces: an assumption, shown as one.
    ReproducedWithAssumption,
    /// The whole 95% interval lies outside the tolerance region (or a
    /// condition the claim rests on does not hold).
    NotReproduced,
    /// The interval straddles the region's edge, or rests on fewer than
    /// `MIN_TRIALS` trials: the data do not decide. Not a pass.
    Inconclusive,
    NotRun,
}

impl Verdict {
    pub fn as_str(&self) -> &'static str {
        match self {
            Verdict::Reproduced => "reproduced",
            Verdict::ReproducedWithAssumption => "reproduced-with-assumption",
            Verdict::NotReproduced => "not-reproduced",
            Verdict::Inconclusive => "inconclusive",
            Verdict::NotRun => "not-run",
        }
    }
    pub fn all() -> [Verdict; 5] {
        [
            Verdict::Reproduced,
            Verdict::ReproducedWithAssumption,
            Verdict::NotReproduced,
            Verdict::Inconclusive,
            Verdict::NotRun,
        ]
    }
    /// A verdict by its name in a claims.csv, also the names before issue
    /// 24 (`pass`, `pass-inferred`, `fail`), so old run folders compare.
    pub fn parse(name: &str) -> Option<Verdict> {
        Some(match name.trim() {
            "reproduced" | "pass" => Verdict::Reproduced,
            "reproduced-with-assumption" | "pass-inferred" => Verdict::ReproducedWithAssumption,
            "not-reproduced" | "fail" => Verdict::NotReproduced,
            "inconclusive" => Verdict::Inconclusive,
            "not-run" => Verdict::NotRun,
            _ => return None,
        })
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One row of the claims table after judging.
#[derive(Debug, Clone)]
pub struct Judged {
    pub spec: ClaimSpec,
    pub measured: Option<Measured>,
    pub verdict: Verdict,
    /// For `reproduced-with-assumption`: the setting of the unstated details it needs.
    pub assumption: String,
    /// `inconclusive` because the interval reaches across the tolerance's
    /// edge (not for too few trials): more trials may decide it.
    pub borderline: bool,
    /// Why this verdict: the range swept, a conflict between claims, the size.
    pub why: String,
}

const EPS: f64 = 1e-9;

/// No interval from fewer trials decides a verdict: below this the claim is
/// `inconclusive` whatever its interval.
pub const MIN_TRIALS: usize = 10;

/// Where value `i` passes the claim's check (None: shape/behaviour claims,
/// which the analyzer's conditions decide): the region figures shade too.
fn region(spec: &ClaimSpec, i: usize) -> Option<(f64, f64)> {
    super::pass_region(spec, i).1
}

/// How one setting's values stand against the tolerance region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Every value's whole interval inside the region, every condition holds.
    Inside,
    /// Some value's whole interval outside the region, or a condition fails.
    Outside,
    /// Neither: some interval reaches across the region's edge.
    Straddles,
    /// The interval rests on fewer than `MIN_TRIALS` trials.
    TooFew,
}

/// The equivalence test: `Inside` only when the whole 95% interval of every
/// value (widened to hold its point value, so a point outside its own
/// interval cannot pass) lies inside the tolerance region; `Outside` when
/// one lies wholly outside; `TooFew` when the values rest on fewer than
/// `MIN_TRIALS` trials (`trials` None: a value that is no sample, e.g. a
/// count over the whole run, or a behaviour observed once and for all).
pub fn outcome(
    spec: &ClaimSpec,
    values: &[f64],
    intervals: &[(f64, f64)],
    conditions: &[(String, bool)],
    trials: Option<usize>,
) -> Outcome {
    outcome_with(spec, values, intervals, conditions, false, trials)
}

/// `outcome`, with `undecided`: some condition the data neither confirm nor
/// refute (`Measured::band_condition`), so at best `Straddles`.
pub fn outcome_with(
    spec: &ClaimSpec,
    values: &[f64],
    intervals: &[(f64, f64)],
    conditions: &[(String, bool)],
    undecided: bool,
    trials: Option<usize>,
) -> Outcome {
    let few = trials.is_some_and(|n| n < MIN_TRIALS);
    let conditions_hold = conditions.iter().all(|c| c.1);
    if matches!(spec.check, Check::Shape | Check::Behaviour) {
        if conditions.is_empty() && !undecided {
            return Outcome::Outside;
        }
        if few {
            return Outcome::TooFew;
        }
        return if !conditions_hold {
            Outcome::Outside
        } else if undecided {
            Outcome::Straddles
        } else {
            Outcome::Inside
        };
    }
    if values.is_empty() {
        return Outcome::Outside;
    }
    // A value this run did not measure (NaN: a rate that did not run at
    // this size) rests on no trial at all: it decides nothing.
    if values.iter().any(|v| !v.is_finite()) {
        return Outcome::TooFew;
    }
    if few {
        return Outcome::TooFew;
    }
    let mut all_inside = conditions_hold;
    let mut any_outside = !conditions_hold;
    for (i, v) in values.iter().enumerate() {
        let (lo, hi) = match intervals.get(i) {
            Some(&(lo, hi)) if lo.is_finite() && hi.is_finite() => (lo.min(*v), hi.max(*v)),
            _ => (*v, *v),
        };
        let (a, b) = region(spec, i).expect("numeric check");
        let inside = lo >= a - EPS && hi <= b + EPS;
        let outside = hi < a - EPS || lo > b + EPS;
        all_inside &= inside;
        any_outside |= outside;
    }
    if any_outside {
        Outcome::Outside
    } else if all_inside && !undecided {
        Outcome::Inside
    } else {
        Outcome::Straddles
    }
}

/// The outcome at the claim's main values (our defaults).
pub fn main_outcome(spec: &ClaimSpec, m: &Measured) -> Outcome {
    outcome_with(
        spec,
        &m.values,
        &m.intervals,
        &m.conditions,
        !m.undecided.is_empty(),
        m.trial_count(),
    )
}

/// Whether values (with their intervals) are reproduced, and whether they
/// are undecided (interval across the edge): `outcome` without a trial count.
pub fn value_passes(
    spec: &ClaimSpec,
    values: &[f64],
    intervals: &[(f64, f64)],
    conditions: &[(String, bool)],
) -> (bool, bool) {
    match outcome(spec, values, intervals, conditions, None) {
        Outcome::Inside => (true, false),
        Outcome::Straddles | Outcome::TooFew => (false, true),
        Outcome::Outside => (false, false),
    }
}

/// The claim's check at its main values alone (no sweep, no consistency).
pub fn verdict(spec: &ClaimSpec, m: &Measured) -> Verdict {
    match main_outcome(spec, m) {
        Outcome::Inside => Verdict::Reproduced,
        Outcome::Outside => Verdict::NotReproduced,
        Outcome::Straddles | Outcome::TooFew => Verdict::Inconclusive,
    }
}

/// A setting that reproduces one claim: the defaults overlaid with the
/// swept values (`full`), the swept values alone (`own`, the assumption's
/// text).
struct Candidate {
    full: BTreeMap<String, String>,
    own: Setting,
    is_default: bool,
}

/// Trials behind an alternative: its own count, else the main value's.
fn alt_trials(m: &Measured, a: &super::Alternative) -> Option<usize> {
    a.trials.or_else(|| m.trial_count())
}

/// The settings at which the claim is reproduced (whole interval inside),
/// the defaults first.
fn candidates(spec: &ClaimSpec, m: &Measured) -> Vec<Candidate> {
    let defaults: BTreeMap<String, String> = m.setting.iter().cloned().collect();
    let mut out = Vec::new();
    if main_outcome(spec, m) == Outcome::Inside {
        out.push(Candidate {
            full: defaults.clone(),
            own: vec![],
            is_default: true,
        });
    }
    for a in &m.sweep {
        if outcome(
            spec,
            &a.values,
            &a.intervals,
            &a.conditions,
            alt_trials(m, a),
        ) == Outcome::Inside
        {
            let mut full = defaults.clone();
            full.extend(a.setting.iter().cloned());
            // The assumption names what differs from our defaults.
            let own = a
                .setting
                .iter()
                .filter(|(k, v)| defaults.get(k) != Some(v))
                .cloned()
                .collect();
            out.push(Candidate {
                full,
                own,
                is_default: false,
            });
        }
    }
    // The simplest assumption first: fewest details away from our defaults
    // (stable, so the analyzer's order breaks ties).
    out.sort_by_key(|c| (!c.is_default, c.own.len()));
    out
}

/// "member_len: 26 (default), 8, 16, 24, 36; runs: ..." for a claim's sweep.
pub fn swept_range(m: &Measured) -> String {
    let mut order: Vec<String> = Vec::new();
    let mut vals: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for a in &m.sweep {
        for (k, v) in &a.setting {
            if !order.contains(k) {
                order.push(k.clone());
            }
            let list = vals.entry(k.clone()).or_default();
            if !list.contains(v) {
                list.push(v.clone());
            }
        }
    }
    let varied = swept(m);
    order
        .iter()
        .filter(|k| varied.contains(*k))
        .map(|k| {
            let mut list: Vec<String> = Vec::new();
            if let Some((_, d)) = m.setting.iter().find(|(dk, _)| dk == k) {
                list.push(format!("{d} (default)"));
            }
            for v in &vals[k] {
                if !m.setting.iter().any(|(dk, dv)| dk == k && dv == v) {
                    list.push(v.clone());
                }
            }
            format!("{k}: {}", list.join(", "))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The details a claim sweeps: those that at least one alternative sets to
/// a value other than our default (an alternative may restate defaults).
fn swept(m: &Measured) -> BTreeSet<String> {
    m.sweep
        .iter()
        .flat_map(|a| a.setting.iter())
        .filter(|(k, v)| !m.setting.iter().any(|(dk, dv)| dk == k && dv == v))
        .map(|(k, _)| k.clone())
        .collect()
}

/// Two claims' settings agree on every detail in `shared`.
fn agree(a: &Candidate, b: &Candidate, shared: &BTreeSet<String>) -> bool {
    shared.iter().all(|d| a.full.get(d) == b.full.get(d))
}

/// One reproducing setting per claim such that claims sharing a detail
/// agree on its value: an exhaustive search (claims reproduced at our
/// defaults try the defaults first), else, past a step budget or when no
/// assignment serves every claim, a greedy pass that serves the claims
/// reproduced at our defaults first. `None`: no setting of this claim fits
/// the others.
fn assign(cands: &[Vec<Candidate>], shared: &[Vec<BTreeSet<String>>]) -> Vec<Option<usize>> {
    let mut order: Vec<usize> = (0..cands.len()).filter(|&i| !cands[i].is_empty()).collect();
    order.sort_by_key(|&i| !cands[i].iter().any(|c| c.is_default));
    let fits = |chosen: &[Option<usize>], i: usize, k: usize| {
        order.iter().all(|&j| match chosen[j] {
            Some(kj) if j != i => agree(&cands[i][k], &cands[j][kj], &shared[i][j]),
            _ => true,
        })
    };
    fn dfs(
        pos: usize,
        order: &[usize],
        cands: &[Vec<Candidate>],
        chosen: &mut Vec<Option<usize>>,
        steps: &mut u32,
        fits: &dyn Fn(&[Option<usize>], usize, usize) -> bool,
    ) -> bool {
        if pos == order.len() {
            return true;
        }
        let i = order[pos];
        for k in 0..cands[i].len() {
            *steps += 1;
            if *steps > 200_000 {
                return false;
            }
            if fits(chosen, i, k) {
                chosen[i] = Some(k);
                if dfs(pos + 1, order, cands, chosen, steps, fits) {
                    return true;
                }
                chosen[i] = None;
            }
        }
        false
    }
    let mut chosen = vec![None; cands.len()];
    let mut steps = 0;
    if dfs(0, &order, cands, &mut chosen, &mut steps, &fits) {
        return chosen;
    }
    let mut chosen = vec![None; cands.len()];
    for &i in &order {
        chosen[i] = (0..cands[i].len()).find(|&k| fits(&chosen, i, k));
    }
    // No value serves every claim: a claim left out makes the inferred
    // settings of the claims it shares a detail with unproven too.
    let unserved: Vec<usize> = order
        .iter()
        .copied()
        .filter(|&i| chosen[i].is_none())
        .collect();
    for &i in &order {
        if let Some(k) = chosen[i] {
            if !cands[i][k].is_default && unserved.iter().any(|&j| !shared[i][j].is_empty()) {
                chosen[i] = None;
            }
        }
    }
    chosen
}

/// The details two claims must agree on: those either sweeps that both are
/// measured at, when they belong to one experiment (A2.1's arrival binds
/// A2.2, which runs at the default arrival); across experiments, those both
/// sweep (a detail of one name may mean another thing elsewhere).
fn shared_details(
    claims: &[ClaimSpec],
    found: &[Option<Measured>],
    sweeps: &[BTreeSet<String>],
) -> Vec<Vec<BTreeSet<String>>> {
    let keys: Vec<BTreeSet<String>> = found
        .iter()
        .zip(sweeps)
        .map(|(m, sw)| {
            let mut k: BTreeSet<String> = sw.clone();
            if let Some(m) = m {
                k.extend(m.setting.iter().map(|(d, _)| d.clone()));
            }
            k
        })
        .collect();
    (0..claims.len())
        .map(|i| {
            (0..claims.len())
                .map(|j| {
                    if i == j {
                        BTreeSet::new()
                    } else if claims[i].experiment == claims[j].experiment {
                        sweeps[i]
                            .union(&sweeps[j])
                            .filter(|d| keys[i].contains(*d) && keys[j].contains(*d))
                            .cloned()
                            .collect()
                    } else {
                        sweeps[i].intersection(&sweeps[j]).cloned().collect()
                    }
                })
                .collect()
        })
        .collect()
}

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

#[cfg(test)]
mod tests {
    use super::super::{Alternative, Num};
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
        let m =
            Measured::new("X", vec![10.0], "", "").intervals(vec![(9.9, 10.1)], "over 5 trials");
        assert_eq!(
            judge(&[s.clone()], vec![m], "full")[0].verdict,
            Verdict::Inconclusive
        );
        let m =
            Measured::new("X", vec![10.0], "", "").intervals(vec![(9.9, 10.1)], "over 12 trials");
        assert_eq!(judge(&[s], vec![m], "full")[0].verdict, Verdict::Reproduced);
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
                .contains("contradicts the study's stated capacity_s=1"),
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
    fn one_value_per_detail_serves_every_claim_or_the_claim_fails() {
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
        let rows = judge(
            &claims[..2],
            vec![member("M1", 20.0, 30.5, 20.0), member("M2", 7.0, 8.0, 4.1)],
            "full",
        );
        assert!(
            rows.iter().all(|j| j.verdict == Verdict::NotReproduced),
            "{rows:#?}"
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
        // conflicts with it and the conflict is the finding.
        let rows = judge(
            &[spec("W1", 50.0, 10.0), spec("W2", 20.0, 5.0)],
            vec![a.clone(), b.clone()],
            "full",
        );
        assert_eq!(rows[0].verdict, Verdict::NotReproduced, "{}", rows[0].why);
        assert!(
            rows[0].why.contains("W2 needs backoff=fixed-0"),
            "{}",
            rows[0].why
        );
        // A claim of the experiment that no setting reproduces binds too: it
        // was judged at backoff=fixed-0.
        let c = Measured::new("W3", vec![1.0], "", "").setting(&[("backoff", "fixed-0")]);
        let rows = judge(
            &[spec("W1", 50.0, 10.0), spec("W3", 20.0, 5.0)],
            vec![a.clone(), c],
            "full",
        );
        assert_eq!(rows[0].verdict, Verdict::NotReproduced, "{}", rows[0].why);
        assert!(
            rows[0].why.contains("W3 is judged at backoff=fixed-0"),
            "{}",
            rows[0].why
        );
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
    fn a_claim_bound_by_another_names_every_setting_that_reproduces_it() {
        // W1 reproduces at a spread arrival and at a jittered backoff; W3,
        // reproduced nowhere, is judged at the defaults of both.
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
            .setting(&[("backoff", "fixed-0"), ("arrival", "all-at-once")]);
        let rows = judge(
            &[spec("W1", 50.0, 10.0), spec("W3", 20.0, 5.0)],
            vec![a, c],
            "full",
        );
        let why = &rows[0].why;
        assert_eq!(rows[0].verdict, Verdict::NotReproduced, "{why}");
        assert!(
            why.contains("reproduces only at arrival=spread-750ms or backoff=full-jitter-10ms"),
            "{why}"
        );
        assert!(
            why.contains("at backoff=full-jitter-10ms: W3 is judged at backoff=fixed-0"),
            "{why}"
        );
        assert!(!why.contains("at backoff=fixed-10ms:"), "{why}");
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
}
