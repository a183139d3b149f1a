//! Measuring sessions inside one run folder. A run resumed later
//! (`--resume`) adds trials measured at another time, perhaps from another
//! build or on a machine in another state; pooling them under one interval
//! is only sound when the sessions agree. The manifest names the later
//! sessions: each entry of `supplements` may carry `trials_from`, per
//! experiment the first trial index that session added (the trials of every
//! cell it grew). A claim whose cells span sessions checks agreement before
//! it is judged: two sessions whose 95% intervals of the mean are disjoint
//! disagree. A claim judged cell by cell keeps such sessions apart
//! ([`judged_interval`]): the cell's interval is the hull of its sessions'
//! intervals, each at a Bonferroni share of 95%, so the cell is decided
//! only where every session decides it the same way, and a cell whose
//! sessions agree keeps its pooled interval. A claim whose one value pools
//! every cell (A1.2's worst deviation) is no finding instead
//! ([`checked`], `Measured::invalid`).

use std::collections::BTreeMap;

use crate::Measured;
use crate::stats::mean_cs;

/// The session a trial of `experiment` belongs to: 0 for the run's own, `i`
/// for the i-th later session whose `trials_from` for the experiment is at
/// or below `trial` (the latest such).
pub fn session_of(manifest: &serde_json::Value, experiment: &str, trial: u64) -> usize {
    let Some(sups) = manifest["supplements"].as_array() else {
        return 0;
    };
    let mut s = 0;
    for (i, sup) in sups.iter().enumerate() {
        if let Some(from) = sup["trials_from"][experiment].as_u64()
            && trial >= from
        {
            s = i + 1;
        }
    }
    s
}

/// The sessions' values grouped by session, in session order.
pub type BySession = BTreeMap<usize, Vec<f64>>;

/// One session's estimate of a judged quantity: (session, point, 95%
/// interval, trials).
pub type Estimate = (usize, f64, (f64, f64), usize);

/// The sessions' estimates of a mean (sessions with at least two trials).
fn estimates(groups: &BySession) -> Vec<Estimate> {
    groups
        .iter()
        .filter(|(_, v)| v.len() >= 2)
        .map(|(s, v)| {
            (
                *s,
                v.iter().sum::<f64>() / v.len() as f64,
                mean_cs(v),
                v.len(),
            )
        })
        .collect()
}

/// Each session's estimate as text ("the run's session: 0.00 (95%
/// 0.00..0.00, n=20) vs later session 2 (supplements[1]): ..."), for notes.
pub fn describe(est: &[Estimate], digits: usize) -> String {
    est.iter()
        .map(|(s, m, (lo, hi), n)| {
            let who = if *s == 0 {
                "the run's session".to_string()
            } else {
                format!("later session {s} (supplements[{}])", s - 1)
            };
            format!("{who}: {m:.digits$} (95% {lo:.digits$}..{hi:.digits$}, n={n})")
        })
        .collect::<Vec<_>>()
        .join(" vs ")
}

/// `Some(why)` when two sessions' 95% intervals are disjoint; `None` when
/// one session ran or every pair overlaps. Disjoint 95% intervals are a
/// conservative test of a difference (a two-sided level well below 1%), so
/// a disagreement flagged here is not noise of the usual size.
pub fn estimates_disagree(what: &str, est: &[Estimate], digits: usize) -> Option<String> {
    let disjoint = est
        .iter()
        .enumerate()
        .any(|(i, a)| est[i + 1..].iter().any(|b| a.2.1 < b.2.0 || b.2.1 < a.2.0));
    disjoint.then(|| format!("{what}: {}", describe(est, digits)))
}

/// [`judged_interval`] of a mean: `groups`' sessions' means, their
/// intervals at another level (confidence sequences), `pooled` when they agree.
pub fn judged_mean_interval(
    what: &str,
    groups: &BySession,
    pooled: (f64, f64),
    digits: usize,
) -> ((f64, f64), Option<String>) {
    judged_interval(
        what,
        &estimates(groups),
        |s, lv| crate::stats::mean_cs_at(&groups[&s], lv),
        pooled,
        digits,
    )
}

/// [`estimates_disagree`] on the sessions' means of `groups` (each
/// session with at least two trials).
pub fn disagreement(what: &str, groups: &BySession, digits: usize) -> Option<String> {
    estimates_disagree(what, &estimates(groups), digits)
}

/// Whether `groups`' sessions disagree: two of their own 95% intervals of
/// the mean are disjoint ([`estimates_disagree`]). Sessions kept apart
/// ([`judged_interval`]) whose intervals overlap agree: their hull is wide
/// because one of them is, not because they measured different things.
pub fn means_disagree(groups: &BySession) -> bool {
    disagreement("", groups, 0).is_some()
}

/// Every disagreement of `cells` (what, values by session) in one reason,
/// or `None` when every cell's sessions agree.
pub fn disagreements<'a>(
    cells: impl IntoIterator<Item = (String, &'a BySession)>,
    digits: usize,
) -> Option<String> {
    joined(
        cells
            .into_iter()
            .filter_map(|(what, g)| disagreement(&what, g, digits))
            .collect(),
    )
}

/// The reasons of the judged cells whose sessions disagree, as one.
pub fn joined(whys: Vec<String>) -> Option<String> {
    (!whys.is_empty()).then(|| {
        format!(
            "the measuring sessions disagree ({} of the judged cells): {}",
            whys.len(),
            whys.join("; ")
        )
    })
}

/// Each session's interval level when `k` sessions are kept apart: all
/// of them cover at once with probability at least 95% (Bonferroni).
pub fn level(k: usize) -> f64 {
    1.0 - 0.05 / k.max(1) as f64
}

/// The interval a cell is judged on. `est` are its sessions' estimates at
/// 95% (sessions with at least two trials), `at(session, level)` a
/// session's interval at another level, `pooled` the interval over every
/// trial. One session: `pooled`. Sessions measured apart are always kept
/// apart: the hull of their intervals at [`level`]`(k)`, with the reason
/// (`what` and each session's 95% estimate; whether their intervals are
/// disjoint) for the note. Pooling only sessions whose intervals overlap
/// is no test of agreement: with confidence sequences, wide at few trials,
/// overlap hid a shift of 2.4 tolerances in B5.3 (the claim review of
/// issue 32).
pub fn judged_interval(
    what: &str,
    est: &[Estimate],
    at: impl Fn(usize, f64) -> (f64, f64),
    pooled: (f64, f64),
    digits: usize,
) -> ((f64, f64), Option<String>) {
    let apart = (est.len() >= 2).then(|| {
        estimates_disagree(what, est, digits).unwrap_or_else(|| {
            format!(
                "{what}: sessions measured apart ({})",
                describe(est, digits)
            )
        })
    });
    match apart {
        None => (pooled, None),
        Some(why) => {
            let lv = level(est.len());
            let hull = est.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |h, e| {
                let iv = at(e.0, lv);
                (h.0.min(iv.0), h.1.max(iv.1))
            });
            (
                hull,
                Some(format!(
                    "{why}; judged on the hull of the sessions' {:.1}% intervals, {:.digits$}..{:.digits$}",
                    100.0 * lv,
                    hull.0,
                    hull.1
                )),
            )
        }
    }
}

/// The note of a claim some of whose cells were judged on their sessions'
/// hull ([`judged_interval`]); empty when none was.
pub fn kept_apart(whys: &[String]) -> String {
    if whys.is_empty() {
        return String::new();
    }
    format!(
        "{} judged cell(s) span measuring sessions, each session kept apart there (a cell is decided only where every session decides it the same way): {}. ",
        whys.len(),
        whys.join("; ")
    )
}

/// A claim whose sessions disagree (`why`) is no finding: invalid, its
/// note saying the values shown are pooled over those sessions.
pub fn checked(m: Measured, why: Option<String>) -> Measured {
    match why {
        None => m,
        Some(why) => {
            let mut m = m.invalid(why);
            m.note = format!(
                "pooled over the disagreeing sessions, shown for reference only: {}",
                m.note
            );
            m
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trial_belongs_to_the_latest_session_that_added_it() {
        let m: serde_json::Value = serde_json::json!({
            "supplements": [
                {"what": "cells only"},
                {"trials_from": {"concurrency": 20, "ts-member": 10}},
            ]
        });
        assert_eq!(session_of(&m, "concurrency", 19), 0);
        assert_eq!(session_of(&m, "concurrency", 20), 2);
        assert_eq!(session_of(&m, "ts-member", 10), 2);
        assert_eq!(session_of(&m, "bursts", 500), 0);
        assert_eq!(session_of(&serde_json::json!({}), "concurrency", 99), 0);
    }

    #[test]
    fn sessions_that_disagree_are_judged_on_the_hull_of_their_wider_intervals() {
        let est: Vec<Estimate> = vec![(0, 0.03, (-0.04, 0.11), 20), (2, 0.19, (0.15, 0.22), 160)];
        let at = |s: usize, lv: f64| {
            assert!((lv - 0.975).abs() < 1e-12, "two sessions: 97.5% each");
            if s == 0 { (-0.05, 0.12) } else { (0.14, 0.23) }
        };
        let (iv, why) = judged_interval("1000/s", &est, at, (0.10, 0.20), 3);
        assert_eq!(iv, (-0.05, 0.23));
        assert!(
            why.unwrap()
                .contains("hull of the sessions' 97.5% intervals")
        );
        // Overlapping sessions are kept apart too (overlap is no test of
        // agreement); one session keeps the pooled interval.
        let agree: Vec<Estimate> = vec![(0, 0.1, (0.0, 0.2), 20), (2, 0.15, (0.1, 0.2), 20)];
        let at = |s: usize, _: f64| if s == 0 { (-0.01, 0.21) } else { (0.09, 0.22) };
        let (iv, why) = judged_interval("x", &agree, at, (0.05, 0.18), 3);
        assert_eq!(iv, (-0.01, 0.22));
        assert!(why.unwrap().starts_with("x: sessions measured apart"));
        let (iv, why) = judged_interval("x", &agree[..1], at, (0.05, 0.18), 3);
        assert_eq!((iv, why), ((0.05, 0.18), None));
    }

    #[test]
    fn disjoint_session_intervals_disagree_and_overlapping_ones_do_not() {
        let mut g = BySession::new();
        g.insert(0, (0..20).map(|i| [-0.1, 0.0, 0.1, 0.0][i % 4]).collect());
        g.insert(2, vec![-4.0, -5.0, -4.0, -4.5, -4.0, -3.5, -5.0, -4.0]);
        let why = disagreement("c=32", &g, 2).expect("disjoint");
        assert!(
            why.contains("run's session: 0.00")
                && why.contains("session 2 (supplements[1]): -4.25"),
            "{why}"
        );
        let mut same = BySession::new();
        same.insert(0, vec![1.0, 2.0, 3.0, 2.0]);
        same.insert(1, vec![2.0, 3.0, 1.0, 2.5]);
        assert_eq!(disagreement("x", &same, 2), None);
        // Kept apart is not disagreeing: only disjoint intervals disagree.
        assert!(means_disagree(&g));
        assert!(!means_disagree(&same));
        // One session alone never disagrees.
        let mut one = BySession::new();
        one.insert(0, vec![1.0, 5.0]);
        assert_eq!(disagreement("x", &one, 2), None);
    }
}
