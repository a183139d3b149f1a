//! What a limiter promises about bursts: plain data shared by the
//! strategies (which declare it), the scorecard's judges (which hold a
//! strategy to it) and the manifests (which name it).

use serde::{Deserialize, Serialize};

/// What a limiter promises about how much it admits in a short time, so
/// that it is judged against its own promise rather than one ideal. Both
/// are read with the same metric: the most admitted in any sliding window
/// of the limit's window length, divided by the limit (the bursts
/// experiment's ratio).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Promise {
    /// At most `limit` in any window of `window_ms`, wherever the window is
    /// placed (a sliding log): ratio at most 1.
    AtMostLimitInAnyWindow,
    /// A bucket of `capacity` (= limit) refilling at `rate_per_s`: a full
    /// bucket may go at once, and what refills during the window after it,
    /// so at most 2 x capacity in any window of capacity / rate: ratio at most 2.
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

    /// The most admitted in any window / limit that the promise allows
    /// (before any tolerance for timing, which is the judge's).
    pub fn max_window_ratio(&self) -> f64 {
        match self {
            Promise::AtMostLimitInAnyWindow => 1.0,
            Promise::BurstOfCapacity => 2.0,
        }
    }
}
