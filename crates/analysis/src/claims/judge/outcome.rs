//! The equivalence test: how one setting's values, with their 95%
//! intervals and trial counts, stand against the claim's tolerance region,
//! and the verdict at the claim's main values alone.

use super::super::{Check, ClaimSpec, Measured};
use super::Verdict;

const EPS: f64 = 1e-9;

/// No interval from fewer trials decides a verdict: below this the claim is
/// `inconclusive` whatever its interval.
pub const MIN_TRIALS: usize = 10;

/// Where value `i` passes the claim's check (None: shape/behaviour claims,
/// which the analyzer's conditions decide): the region figures shade too.
fn region(spec: &ClaimSpec, i: usize) -> Option<(f64, f64)> {
    super::super::pass_region(spec, i).1
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
            // An interval without an end (a confidence sequence over one
            // trial) is kept as it is: it decides nothing.
            Some(&(lo, hi)) if !lo.is_nan() && !hi.is_nan() => (lo.min(*v), hi.max(*v)),
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
    if !m.invalid.is_empty() {
        return Verdict::Inconclusive;
    }
    match main_outcome(spec, m) {
        Outcome::Inside => Verdict::Reproduced,
        Outcome::Outside => Verdict::NotReproduced,
        Outcome::Straddles | Outcome::TooFew => Verdict::Inconclusive,
    }
}

/// The power calculation for a claim the interval does not decide: how many
/// trials per cell would make the interval decide it at the spread seen so
/// far. For each value whose interval reaches across its region's edge,
/// with half-width `h` at `n` trials and its point a distance `d` from the
/// nearest edge, the half-width at `n'` trials is about `h*sqrt(n/n')` for
/// a fixed-n interval, so it decides once `n' > n*(h/d)^2`; for a
/// confidence sequence the boundary's own shrinkage at the same plug-in sd
/// (`confseq::trials_for_half_width`, a few more trials than the square
/// root rule); the largest over the values. `None`:
/// nothing to compute (no interval, no trial count, a shape check);
/// `Some(None)`: a point on the edge, which no number of trials decides.
pub fn trials_to_decide(spec: &ClaimSpec, m: &Measured) -> Option<Option<usize>> {
    if matches!(spec.check, Check::Shape | Check::Behaviour) {
        return None;
    }
    let n = m.trial_count()? as f64;
    let mut need: Option<Option<usize>> = None;
    for (i, v) in m.values.iter().enumerate() {
        let Some(&(lo, hi)) = m.intervals.get(i) else {
            continue;
        };
        let Some((a, b)) = region(spec, i) else {
            continue;
        };
        if !(lo.is_finite() && hi.is_finite() && v.is_finite()) {
            continue;
        }
        let (lo, hi) = (lo.min(*v), hi.max(*v));
        let inside = lo >= a - EPS && hi <= b + EPS;
        let outside = hi < a - EPS || lo > b + EPS;
        if inside || outside {
            continue;
        }
        let h = (hi - lo) / 2.0;
        let d = if *v < a {
            a - v
        } else if *v > b {
            v - b
        } else {
            (v - a).min(b - v)
        };
        let this = if d <= EPS * (1.0 + v.abs()) {
            None
        } else {
            let sqrt_n = (n * (h / d).powi(2)).ceil();
            let need = if m.interval_method.contains("confidence sequence") {
                crate::confseq::trials_for_half_width(h, n as usize, d, 100_000)
                    .map(|x| x as f64)
                    .unwrap_or(sqrt_n)
            } else {
                sqrt_n
            };
            Some(need.max(MIN_TRIALS as f64) as usize)
        };
        need = Some(match (need, this) {
            (None, t) => t,
            (Some(None), _) | (_, None) => None,
            (Some(Some(x)), Some(y)) => Some(x.max(y)),
        });
    }
    need
}

/// The cells whose trials could still decide an `inconclusive` claim: the
/// cells of every setting whose interval straddles the region's edge or
/// rests on too few trials (the main setting's `rests_on`, and each swept
/// setting's, which falls back to the main cells when it names none).
/// Settings already inside or outside, or invalid, need no trials. When no
/// setting is undecided (a conflict between claims' settings), the main
/// cells; empty only when the claim names no cells at all (the caller then
/// raises the whole experiment).
pub fn cells_to_decide(spec: &ClaimSpec, m: &Measured) -> Vec<String> {
    let undecided = |o: Outcome| matches!(o, Outcome::Straddles | Outcome::TooFew);
    let mut cells: Vec<String> = Vec::new();
    let add = |cells: &mut Vec<String>, from: &[String]| {
        for c in from {
            if !cells.contains(c) {
                cells.push(c.clone());
            }
        }
    };
    if m.invalid.is_empty() && undecided(main_outcome(spec, m)) {
        add(&mut cells, &m.rests_on);
    }
    for alt in m.sweep.iter().filter(|a| a.invalid.is_empty()) {
        let o = outcome(
            spec,
            &alt.values,
            &alt.intervals,
            &alt.conditions,
            alt.trials.or(m.trial_count()),
        );
        if undecided(o) {
            add(
                &mut cells,
                if alt.rests_on.is_empty() {
                    &m.rests_on
                } else {
                    &alt.rests_on
                },
            );
        }
    }
    if cells.is_empty() {
        add(&mut cells, &m.rests_on);
    }
    cells
}
