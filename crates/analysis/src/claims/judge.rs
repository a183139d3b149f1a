//! Verdicts: `reproduced`, `reproduced-with-assumption`, `not-reproduced`,
//! `inconclusive`, `not-run`.
//!
//! A value passes when its 95% interval over trials reaches the region where
//! the claim's check holds (so a claim does not flip between runs on noise);
//! it is *borderline* when that interval also reaches outside the region.
//! A claim passes at the setup as the study states it (our defaults for what
//! it leaves unstated); failing that, it is `pass-inferred` when one of the
//! swept settings of its unstated details passes, provided one value of
//! each detail serves every claim that sweeps that detail (the member
//! length that gives one memory claim must give the others); otherwise it
//! fails, and the reason names the range swept.

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
    /// For `pass-inferred`: the setting of the unstated details it needs.
    pub assumption: String,
    /// The interval reaches across the check's threshold: another run of the
    /// same size may judge the other way.
    pub borderline: bool,
    /// Why this verdict: the range swept, a conflict between claims, the size.
    pub why: String,
}

const EPS: f64 = 1e-9;

/// Where value `i` passes the claim's check (None: shape/behaviour claims,
/// which the analyzer's conditions decide): the region figures shade too.
fn region(spec: &ClaimSpec, i: usize) -> Option<(f64, f64)> {
    super::pass_region(spec, i).1
}

/// Whether values (with their intervals, where given) and conditions pass
/// the claim's check, and whether that is borderline.
pub fn value_passes(
    spec: &ClaimSpec,
    values: &[f64],
    intervals: &[(f64, f64)],
    conditions: &[(String, bool)],
) -> (bool, bool) {
    let conditions_hold = conditions.iter().all(|c| c.1);
    if matches!(spec.check, Check::Shape | Check::Behaviour) {
        return (!conditions.is_empty() && conditions_hold, false);
    }
    if values.is_empty() {
        return (false, false);
    }
    let mut pass = conditions_hold;
    let mut borderline = false;
    for (i, v) in values.iter().enumerate() {
        if !v.is_finite() {
            return (false, false);
        }
        let (lo, hi) = match intervals.get(i) {
            Some(&(lo, hi)) if lo.is_finite() && hi.is_finite() => (lo.min(*v), hi.max(*v)),
            _ => (*v, *v),
        };
        let (a, b) = region(spec, i).expect("numeric check");
        let reaches = hi >= a - EPS && lo <= b + EPS;
        let inside = lo >= a - EPS && hi <= b + EPS;
        pass &= reaches;
        borderline |= reaches && !inside;
    }
    (pass, pass && borderline)
}

/// The claim's check at its main values alone (no sweep, no consistency).
pub fn verdict(spec: &ClaimSpec, m: &Measured) -> Verdict {
    if value_passes(spec, &m.values, &m.intervals, &m.conditions).0 {
        Verdict::Reproduced
    } else {
        Verdict::NotReproduced
    }
}

/// A setting that passes one claim: the defaults overlaid with the swept
/// values (`full`), the swept values alone (`own`, the assumption's text).
struct Candidate {
    full: BTreeMap<String, String>,
    own: Setting,
    is_default: bool,
    borderline: bool,
}

fn candidates(spec: &ClaimSpec, m: &Measured) -> Vec<Candidate> {
    let defaults: BTreeMap<String, String> = m.setting.iter().cloned().collect();
    let mut out = Vec::new();
    let (ok, borderline) = value_passes(spec, &m.values, &m.intervals, &m.conditions);
    if ok {
        out.push(Candidate {
            full: defaults.clone(),
            own: vec![],
            is_default: true,
            borderline,
        });
    }
    for a in &m.sweep {
        let (ok, borderline) = value_passes(spec, &a.values, &a.intervals, &a.conditions);
        if ok {
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
                borderline,
            });
        }
    }
    // The simplest assumption first: fewest details away from our defaults,
    // then a setting whose interval lies wholly inside the passing region
    // before a borderline one (stable, so the analyzer's order breaks ties).
    out.sort_by_key(|c| (!c.is_default, c.own.len(), c.borderline));
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

/// Two claims' settings agree on every detail both sweep.
fn agree(a: &Candidate, sa: &BTreeSet<String>, b: &Candidate, sb: &BTreeSet<String>) -> bool {
    sa.intersection(sb).all(|d| a.full.get(d) == b.full.get(d))
}

/// One passing setting per claim such that claims sweeping the same detail
/// agree on its value: an exhaustive search (claims passing at our defaults
/// try the defaults first), else, past a step budget or when no assignment
/// serves every claim, a greedy pass that serves the claims passing at our
/// defaults first. `None`: no setting of this claim fits the others.
fn assign(cands: &[Vec<Candidate>], swept: &[BTreeSet<String>]) -> Vec<Option<usize>> {
    let mut order: Vec<usize> = (0..cands.len()).filter(|&i| !cands[i].is_empty()).collect();
    order.sort_by_key(|&i| !cands[i].iter().any(|c| c.is_default));
    let fits = |chosen: &[Option<usize>], i: usize, k: usize| {
        order.iter().all(|&j| match chosen[j] {
            Some(kj) if j != i => agree(&cands[i][k], &swept[i], &cands[j][kj], &swept[j]),
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
            if !cands[i][k].is_default && unserved.iter().any(|&j| !swept[i].is_disjoint(&swept[j]))
            {
                chosen[i] = None;
            }
        }
    }
    chosen
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
    let chosen = assign(&cands, &sweeps);

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
            if let Some(x) = cands[i].iter().find(|x| x.is_default) {
                return row(Verdict::Reproduced, String::new(), x.borderline, String::new());
            }
            let range = swept_range(mm);
            if let Some(k) = chosen[i] {
                let x = &cands[i][k];
                return row(
                    Verdict::ReproducedWithAssumption,
                    setting_text(&x.own),
                    x.borderline,
                    format!(
                        "not at the defaults ({}); reproduces at {}; swept {range}",
                        setting_text(&mm.setting),
                        setting_text(&x.own)
                    ),
                );
            }
            let why = if let Some(x) = cands[i].first() {
                // Which claims' settings this claim's passing settings clash with.
                let others: Vec<String> = (0..claims.len())
                    .filter(|&j| j != i)
                    .filter_map(|j| {
                        let y = &cands[j][chosen[j]?];
                        let shared: Vec<&String> = sweeps[i].intersection(&sweeps[j]).collect();
                        (!shared.is_empty() && !agree(x, &sweeps[i], y, &sweeps[j])).then(|| {
                            let vals: Vec<String> = shared
                                .iter()
                                .map(|d| format!("{d}={}", y.full.get(*d).map(String::as_str).unwrap_or("?")))
                                .collect();
                            format!("{} needs {}", claims[j].id, vals.join(", "))
                        })
                    })
                    .collect();
                format!(
                    "reproduces only at {}, but one value per detail must serve every claim that sweeps it ({}); swept {range}",
                    setting_text(&x.own),
                    if others.is_empty() { "no setting fits the others".to_string() } else { others.join("; ") }
                )
            } else if range.is_empty() {
                "no unstated detail swept: measured at the study's setup only".to_string()
            } else {
                format!("no swept value reproduces; swept {range}")
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
        ClaimSpec {
            id: id.into(),
            study: "B".into(),
            experiment: "memory".into(),
            statement: String::new(),
            kind: "portable".into(),
            unit: String::new(),
            published: Num::One(published),
            published_text: String::new(),
            check: Check::WithinAbs,
            tolerance: Num::One(tolerance),
            metric: String::new(),
            sizes: None,
            tally: "reproduction".into(),
        }
    }

    /// A claim measured at member_len=26 with `v26`, and swept at 16 and 24.
    fn member(id: &str, v26: f64, v16: f64, v24: f64) -> Measured {
        Measured::new(id, vec![v26], "", "")
            .setting(&[("member_len", "26")])
            .alternative(Alternative::new(&[("member_len", "16")], vec![v16], ""))
            .alternative(Alternative::new(&[("member_len", "24")], vec![v24], ""))
    }

    #[test]
    fn the_interval_decides_and_marks_borderline() {
        let s = spec("X", 10.0, 1.0);
        assert_eq!(value_passes(&s, &[12.0], &[], &[]), (false, false));
        assert_eq!(
            value_passes(&s, &[12.0], &[(10.5, 13.0)], &[]),
            (true, true)
        );
        assert_eq!(
            value_passes(&s, &[10.2], &[(9.8, 10.4)], &[]),
            (true, false)
        );
        assert_eq!(value_passes(&s, &[10.2], &[(9.8, 11.4)], &[]), (true, true));
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
        assert!(rows.iter().all(|j| j.verdict == Verdict::NotReproduced), "{rows:#?}");
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
    fn a_detail_only_stated_at_its_default_does_not_bind_the_others() {
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
        let rows = judge(
            &[spec("W1", 50.0, 10.0), spec("W2", 20.0, 5.0)],
            vec![a, b],
            "full",
        );
        assert_eq!(rows[0].verdict, Verdict::ReproducedWithAssumption, "{}", rows[0].why);
        assert_eq!(rows[0].assumption, "backoff=full-jitter-10ms");
        assert_eq!(
            (rows[1].verdict, rows[1].assumption.as_str()),
            (Verdict::ReproducedWithAssumption, "workers=4")
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
}
