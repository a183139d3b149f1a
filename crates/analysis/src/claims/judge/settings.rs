//! The settings that reproduce a claim (our defaults, the swept
//! alternatives), the details each claim sweeps, and the rule that one value
//! of each detail serves every claim that has it (`assign`).

use std::collections::{BTreeMap, BTreeSet};

use super::super::{Alternative, ClaimSpec, Measured, Setting};
use super::outcome::{Outcome, main_outcome, outcome};

/// A setting that reproduces one claim: the defaults overlaid with the
/// swept values (`full`), the swept values alone (`own`, the assumption's
/// text).
pub(super) struct Candidate {
    pub(super) full: BTreeMap<String, String>,
    pub(super) own: Setting,
    pub(super) is_default: bool,
}

/// Trials behind an alternative: its own count, else the main value's.
fn alt_trials(m: &Measured, a: &Alternative) -> Option<usize> {
    a.trials.or_else(|| m.trial_count())
}

/// The settings at which the claim is reproduced (whole interval inside),
/// the defaults first.
pub(super) fn candidates(spec: &ClaimSpec, m: &Measured) -> Vec<Candidate> {
    let defaults: BTreeMap<String, String> = m.setting.iter().cloned().collect();
    let mut out = Vec::new();
    // A claim whose own measurement failed its validity checks proposes no
    // value for any detail: whether its default would reproduce is unknown,
    // so a swept value that does is no evidence for that value over the
    // default, and must not bind the claims that share the detail (A1.2's
    // sessions disagreeing at jitter 0 does not make jitter 1 A2.1's).
    if !m.invalid.is_empty() {
        return out;
    }
    // A setting whose own validity checks failed decides nothing.
    if main_outcome(spec, m) == Outcome::Inside {
        out.push(Candidate {
            full: defaults.clone(),
            own: vec![],
            is_default: true,
        });
    }
    for a in m.sweep.iter().filter(|a| a.invalid.is_empty()) {
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
pub(super) fn swept(m: &Measured) -> BTreeSet<String> {
    m.sweep
        .iter()
        .flat_map(|a| a.setting.iter())
        .filter(|(k, v)| !m.setting.iter().any(|(dk, dv)| dk == k && dv == v))
        .map(|(k, _)| k.clone())
        .collect()
}

/// Two claims' settings agree on every detail in `shared`.
pub(super) fn agree(a: &Candidate, b: &Candidate, shared: &BTreeSet<String>) -> bool {
    shared.iter().all(|d| a.full.get(d) == b.full.get(d))
}

/// Whether claim `i`'s setting `k` agrees, on every detail they share, with
/// the setting chosen for each other claim (one not chosen binds nothing).
pub(super) fn fits(
    cands: &[Vec<Candidate>],
    shared: &[Vec<BTreeSet<String>>],
    chosen: &[Option<usize>],
    i: usize,
    k: usize,
) -> bool {
    chosen.iter().enumerate().all(|(j, c)| match c {
        Some(kj) if j != i => agree(&cands[i][k], &cands[j][*kj], &shared[i][j]),
        _ => true,
    })
}

/// One reproducing setting per claim such that claims sharing a detail
/// agree on its value: an exhaustive search (claims reproduced at our
/// defaults try the defaults first), else, past a step budget or when no
/// assignment serves every claim, a greedy pass that serves the claims
/// reproduced at our defaults first. `None`: no setting of this claim fits
/// the others.
pub(super) fn assign(
    cands: &[Vec<Candidate>],
    shared: &[Vec<BTreeSet<String>>],
) -> Vec<Option<usize>> {
    let mut order: Vec<usize> = (0..cands.len()).filter(|&i| !cands[i].is_empty()).collect();
    order.sort_by_key(|&i| !cands[i].iter().any(|c| c.is_default));
    let fits = |chosen: &[Option<usize>], i: usize, k: usize| fits(cands, shared, chosen, i, k);
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
pub(super) fn shared_details(
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
