//! Did a `straddle` trial straddle? A3.1 counts a trial only when its two
//! bursts fell on the two sides of the fixed window's edge: every request
//! of the first burst counted before the edge and every request of the
//! second after it. Decided from the history's times alone (when each
//! request was meant to leave, was sent, was answered, and Redis's TIME
//! where the script returns it), never from what was admitted or from the
//! ratio: a trial whose ratio is low is not thereby invalid, and one whose
//! bursts landed in one window is invalid whatever it reads.
//!
//! The edge. The schedule aims the bursts at `boundary_us`: Redis's next
//! window edge `b` (a multiple of the window on Redis's clock) mapped onto
//! the trial clock with the measured offset, `boundary_us = b - offset -
//! start` (`testbed::next_boundary`, `start` the trial's wall-clock start).
//! The fixed windows A3.1 reads (`fixed-window-multi`, `fixed-window-lua`)
//! do not count on that mapping: each request's counter is
//! `window_index(now)` of the caller's clock, read right after `sent_us`.
//! On the trial's time axis their edge is `b - start`, that is
//! `boundary_us + redis_clock_offset_us`, exactly, whatever error the
//! offset's estimate carries (the same estimate is added back). The same
//! holds on the axis of `redis_time_us` (Redis's TIME minus `start`), for a
//! fixed window that keys on Redis's TIME and returns it. An offset
//! measured a few ms off (one slow TIME round trip) moves the bursts, not
//! the edge: in the reference, trials whose first burst was aimed 5 ms
//! before `boundary_us` were sent wholly before it and still landed partly
//! after the caller's edge 3.9 ms earlier. Monotonic and wall clock are
//! taken to advance together over the trial's second (their drift is not
//! corrected).
//!
//! Which side a request is on, for certain. Its stamp lies between
//! `sent_us` (the caller's clock is read after it) and `replied_us` (the
//! decision is made before it), so a request of the first burst counts
//! before the edge for certain only if it was answered before the edge,
//! and one of the second after it only if it was sent at or after the edge
//! (windows are half open, `[kw, (k+1)w)`): the conservative bounds, so a
//! trial is valid only when the rule holds whatever the request's stamp
//! within its round trip. Where the row carries Redis's TIME, that is the
//! stamp, no bound needed. Every request counts, errors included (an error
//! may have counted).
//!
//! Which burst a request belongs to: the straddle schedule sends the first
//! burst at `boundary_us - lead` and the second at `boundary_us + after`
//! (`experiments/bursts.toml`'s `straddle_lead_ms`, `straddle_after_ms`),
//! so by `intended_us` before `boundary_us` or not; every request of a
//! burst has the same intended time.

use super::super::rows::{HistoryRow, Row};

/// Why a straddle trial does not count for A3.1. The first reason found,
/// in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Miss {
    /// No boundary recorded, or a burst with no request in the history.
    NoBursts,
    /// A request of the first burst may have been counted after the edge:
    /// the burst's last reply came at or after it.
    FirstAfter,
    /// A request of the second burst may have been counted before the
    /// edge: the burst's first send came before it.
    SecondBefore,
}

impl Miss {
    pub fn text(self) -> &'static str {
        match self {
            Miss::NoBursts => "no boundary or a burst missing from the history",
            Miss::FirstAfter => "first burst's last reply after the boundary",
            Miss::SecondBefore => "second burst's first send before the boundary",
        }
    }
}

/// The fixed window's edge on the trial's time axis (see the module).
pub fn edge_us(row: &Row) -> Option<i64> {
    row.boundary_us.map(|b| b + row.redis_clock_offset_us)
}

/// Whether the trial straddled the edge (`Ok`) or why not, from `history`'s
/// times (its `admitted` is never read).
pub fn straddled(row: &Row, history: &[HistoryRow]) -> Result<(), Miss> {
    let (Some(boundary), Some(edge)) = (row.boundary_us, edge_us(row)) else {
        return Err(Miss::NoBursts);
    };
    // A request's stamp on the edge's axis, as (earliest, latest).
    let stamp = |h: &HistoryRow| match h.redis_time_us {
        Some(t) => (t, t),
        None => (h.sent_us, h.replied_us),
    };
    let (first, second): (Vec<&HistoryRow>, Vec<&HistoryRow>) =
        history.iter().partition(|h| h.intended_us < boundary);
    if first.is_empty() || second.is_empty() {
        return Err(Miss::NoBursts);
    }
    if first.iter().any(|h| stamp(h).1 >= edge) {
        return Err(Miss::FirstAfter);
    }
    if second.iter().any(|h| stamp(h).0 < edge) {
        return Err(Miss::SecondBefore);
    }
    Ok(())
}
