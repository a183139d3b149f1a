//! Measuring sessions inside one run folder. A run resumed later
//! (`--resume`) adds trials measured at another time, perhaps from another
//! build or on a machine in another state; pooling them under one interval
//! is only sound when the sessions agree. The manifest names the later
//! sessions: each entry of `supplements` may carry `trials_from`, per
//! experiment the first trial index that session added (the trials of every
//! cell it grew). A claim whose cells span sessions checks agreement before
//! it is judged: two sessions whose 95% intervals of the mean are disjoint
//! disagree, and the claim is no finding until one clean session decides it
//! (`Measured::invalid`).

use std::collections::BTreeMap;

use crate::Measured;
use crate::stats::mean_ci;

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
                mean_ci(v),
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

/// [`estimates_disagree`] on the sessions' means of `groups` (each
/// session with at least two trials).
pub fn disagreement(what: &str, groups: &BySession, digits: usize) -> Option<String> {
    estimates_disagree(what, &estimates(groups), digits)
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
    fn disjoint_session_intervals_disagree_and_overlapping_ones_do_not() {
        let mut g = BySession::new();
        g.insert(0, vec![0.0; 20]);
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
        // One session alone never disagrees.
        let mut one = BySession::new();
        one.insert(0, vec![1.0, 5.0]);
        assert_eq!(disagreement("x", &one, 2), None);
    }
}
