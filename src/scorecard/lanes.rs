//! The scorecard's strategies side by side (`--parallel N`, issue 32).
//!
//! Most of a strategy's battery waits on wall-clock windows (bursts,
//! skew, script-survival, replication) or on a server it fills (memory's
//! bytes): those probes run in lanes, N strategies at a time, each
//! strategy on its own servers and in its own probe folder as when they
//! run one after another. The probes that time CPU or throughput (cost),
//! race workers on the CPU (concurrency), time a kill against a
//! replication stream (failover) or against steady decisions (fail-open)
//! or name keys from a process-wide counter (cluster) run alone: one strategy at a time, with no other strategy's
//! probe beside them, after the lanes ([`super::properties::Probe::alone`]).
//! `works` (baseline) runs first for every strategy, alone, so a strategy
//! that cannot decide is not probed further.
//!
//! A probe in lanes keeps the validity checks it has alone and gains the
//! run's: the sweep checks each trial's slip against the experiment's bound
//! (`run::parallel`), redoes a trial past it that had another strategy's
//! cell beside it (its last attempt alone), and keeps one still past it
//! marked; the scorecard names such trials in the cells' detail. What ran
//! beside each probe is recorded ([`Schedule`]): in the probe folder's
//! manifest (`experiments.<name>.scorecard`) and in `scorecard.json`.
//!
//! A Redis you run (`--redis-url`) is scored one strategy at a time: the
//! battery's keys and clean-up are per run, and nothing here shows that
//! two strategies' probes on one user's server keep apart.

use std::sync::Mutex;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use serde::Serialize;

/// One probe's run for one strategy: how it was scheduled and what ran
/// beside it.
#[derive(Debug, Clone, Serialize)]
pub struct ProbeTime {
    pub experiment: String,
    /// `alone` (nothing of another strategy may run beside it) or `lanes`
    /// (may run beside other strategies' lane probes).
    pub part: &'static str,
    pub seconds: f64,
    /// Wall clock, ms since the Unix epoch.
    pub started_ms: u64,
    pub ended_ms: u64,
    /// The other strategies' probes (`strategy/experiment`) that ran at
    /// some time during it.
    pub beside: Vec<String>,
    /// Its trials committed past its experiment's bounds (`schedule.csv`).
    pub disturbed: Vec<String>,
    /// Its attempts redone (disturbed beside another strategy's probe).
    pub redone: u64,
}

/// Which probe ran when, for one scorecard.
#[derive(Default)]
pub struct Schedule {
    spans: Mutex<Vec<Span>>,
}

struct Span {
    label: String,
    start: Instant,
    end: Option<Instant>,
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

impl Schedule {
    fn spans(&self) -> std::sync::MutexGuard<'_, Vec<Span>> {
        self.spans.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `strategy`'s probe of `experiment` begins; it ends when the guard
    /// is ended or dropped.
    pub fn begin(&self, strategy: &str, experiment: &str) -> Running<'_> {
        let mut v = self.spans();
        v.push(Span {
            label: format!("{strategy}/{experiment}"),
            start: Instant::now(),
            end: None,
        });
        Running {
            schedule: self,
            index: v.len() - 1,
            experiment: experiment.to_string(),
            started: Instant::now(),
            started_ms: unix_ms(),
        }
    }

    /// The spans other than `index` that were running at some time in it.
    fn beside(&self, index: usize) -> Vec<String> {
        let v = self.spans();
        let me = &v[index];
        let end = me.end.unwrap_or_else(Instant::now);
        v.iter()
            .enumerate()
            .filter(|(i, s)| *i != index && s.start < end && s.end.is_none_or(|e| e > me.start))
            .map(|(_, s)| s.label.clone())
            .collect()
    }
}

/// A probe running (see [`Schedule::begin`]).
pub struct Running<'a> {
    schedule: &'a Schedule,
    index: usize,
    experiment: String,
    started: Instant,
    started_ms: u64,
}

impl Running<'_> {
    /// The probe ended: its record (no disturbed trials yet).
    pub fn end(self, alone: bool) -> ProbeTime {
        self.close();
        ProbeTime {
            experiment: self.experiment.clone(),
            part: if alone { "alone" } else { "lanes" },
            seconds: self.started.elapsed().as_secs_f64(),
            started_ms: self.started_ms,
            ended_ms: unix_ms(),
            beside: self.schedule.beside(self.index),
            disturbed: Vec::new(),
            redone: 0,
        }
    }

    fn close(&self) {
        let mut v = self.schedule.spans();
        if v[self.index].end.is_none() {
            v[self.index].end = Some(Instant::now());
        }
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_probe_is_beside_those_that_overlap_it_only() {
        let s = Schedule::default();
        let a = s.begin("a", "bursts");
        let b = s.begin("b", "skew");
        let b = b.end(false);
        let a = a.end(false);
        let c = s.begin("c", "cost").end(true);
        assert_eq!(a.beside, ["b/skew"]);
        assert_eq!(b.beside, ["a/bursts"]);
        assert!(c.beside.is_empty(), "{c:?}");
        assert_eq!(c.part, "alone");
        // A probe dropped (its time limit) still ends.
        drop(s.begin("d", "memory"));
        assert!(s.begin("e", "cost").end(true).beside.is_empty());
    }
}
