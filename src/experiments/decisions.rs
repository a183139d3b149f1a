//! Recording decisions: a trial's events as admission-history rows
//! ([`history_rows`], the `<experiment>-history.csv` side table of `bursts`
//! and `skew`), and the two facts about a strategy that rows record beside
//! its decisions: whether its design promises exactly the limit
//! ([`atomic_design`]); whether its decisions carry Redis's clock is its
//! `Info::reports_redis_time`.

use super::rows::HistoryRow;
use limitbench_core::load::Event;
use limitbench_core::strategy::Strategy;

/// Whether a strategy's design promises exactly the limit under concurrency:
/// atomic and without a known bug (check-then-act, the caller-clock bucket,
/// the timestamp-member log and the derived-key window are not counted).
pub fn atomic_design(s: &dyn Strategy) -> bool {
    s.info().atomic && s.info().known_bug.is_none()
}

/// Why a trial with failed decisions is not a measurement (for
/// `Sweep::reject`): in experiments that count admissions, a failed decision
/// (a refused connection, a script error, a reply the strategy cannot read)
/// is not an outcome of the limiter. Names the strategy and Redis's answer.
pub fn reject_failed(
    strategy: &str,
    errors: u64,
    offered: u64,
    first_error: &str,
) -> Option<String> {
    (errors > 0).then(|| {
        format!("{errors} of {offered} decisions of strategy `{strategy}` failed; the first: {first_error}")
    })
}

/// A Redis time this far (us) before the trial start is a script's -1
/// ("no clock read"), which lands ~55 years before the trial.
const NO_REDIS_TIME_BEFORE_US: i64 = -86_400_000_000;

/// The admission-history rows of one trial under `cell`. Redis's time is
/// kept only where the strategy reports Redis's clock (`redis_clock`, from
/// its `Info::reports_redis_time`); an errored decision is never admitted.
pub fn history_rows(
    cell: &str,
    trial: u64,
    redis_clock: bool,
    events: &[Event],
) -> Vec<HistoryRow> {
    events
        .iter()
        .map(|e| HistoryRow {
            cell: cell.to_string(),
            trial,
            worker: e.worker,
            intended_us: e.intended_us,
            sent_us: e.sent_us,
            replied_us: e.replied_us,
            redis_time_us: e
                .redis_time_us
                .filter(|t| redis_clock && *t > NO_REDIS_TIME_BEFORE_US),
            admitted: e.admitted && e.error.is_none(),
            error: e.error.is_some(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_keeps_only_real_redis_times_and_never_admits_an_error() {
        let events = vec![
            Event {
                worker: 3,
                intended_us: 1,
                sent_us: 2,
                replied_us: 5,
                admitted: true,
                redis_time_us: Some(4),
                ..Default::default()
            },
            // A script that read no clock returned -1 (Unix time).
            Event {
                admitted: true,
                redis_time_us: Some(-1_700_000_000_000_000),
                ..Default::default()
            },
            Event {
                admitted: true,
                error: Some("down".into()),
                ..Default::default()
            },
        ];
        let h = history_rows("s/x", 7, true, &events);
        assert_eq!(h.len(), 3);
        assert_eq!((h[0].cell.as_str(), h[0].trial, h[0].worker), ("s/x", 7, 3));
        assert_eq!((h[0].intended_us, h[0].sent_us, h[0].replied_us), (1, 2, 5));
        assert_eq!(h[0].redis_time_us, Some(4));
        assert_eq!(h[1].redis_time_us, None);
        assert!(h[0].admitted && h[1].admitted && !h[2].admitted && h[2].error);
        // The caller-clock bucket's time slot is the caller's clock.
        let c = history_rows("s/x", 7, false, &events);
        assert_eq!(c[0].redis_time_us, None);
    }
}

/// A trial's sends ran this late at the 99th percentile: a stall (the
/// server or the harness stood still), not a limiter's behaviour. The
/// committed reference's worst was 0.25 s (bursts, whose bursts queue
/// behind the driver pool by design); skew's and ts-member's under 0.02 s.
pub const STALL_LATENESS_US: f64 = 1_000_000.0;

/// Why a trial whose sends ran `lateness_p99_us` late stalled, if it did
/// (`run::sweep::Sweep::stalled`).
pub fn stalled(strategy: &str, lateness_p99_us: f64) -> Option<String> {
    (lateness_p99_us > STALL_LATENESS_US).then(|| {
        format!(
            "{strategy}'s sends ran {:.1} s late at the 99th percentile (past {:.0} s: the server or the harness stood still)",
            lateness_p99_us / 1e6,
            STALL_LATENESS_US / 1e6
        )
    })
}
