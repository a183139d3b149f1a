//! What a limiter promises about bursts: plain data shared by the
//! strategies (which declare it), the scorecard's judges (which hold a
//! strategy to it) and the manifests (which name it).

use serde::{Deserialize, Serialize};

/// What a limiter promises about how much it admits in a short time, so
/// that it is judged against its own promise rather than one ideal. Each
/// promise has its own metric (`metric`), kept when its value is at most 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Promise {
    /// At most `limit` in any window of `window_ms`, wherever the window is
    /// placed (a sliding log): the most admitted in any sliding window of
    /// one window length / limit (the bursts experiment's ratio).
    AtMostLimitInAnyWindow,
    /// A bucket of `capacity` (= limit) refilling at `rate_per_s`: at most
    /// capacity + rate x t in any interval of length t (an arrival curve),
    /// read as the most any interval holds beyond rate x t, over capacity.
    /// (The older reading, at most 2 x capacity in a window, let a bucket
    /// that refills in whole seconds pass: 2 x capacity in ~0.1 s.)
    BurstOfCapacity,
}

impl Promise {
    pub const ALL: [Promise; 2] = [Promise::AtMostLimitInAnyWindow, Promise::BurstOfCapacity];

    pub fn as_str(&self) -> &'static str {
        match self {
            Promise::AtMostLimitInAnyWindow => "at-most-limit-in-any-window",
            Promise::BurstOfCapacity => "burst-of-capacity",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.as_str() == s)
    }

    /// The promise's metric, in words (its value passes at most 1).
    pub fn metric(&self) -> &'static str {
        match self {
            Promise::AtMostLimitInAnyWindow => "most admitted in any window / limit",
            Promise::BurstOfCapacity => {
                "most admitted in any interval beyond rate x its length / capacity"
            }
        }
    }
}
