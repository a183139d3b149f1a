//! What a trial's decisions add up to: offered, admitted, errors, the retry
//! and round-trip counters, and the first error. It sits beside [`Event`],
//! the decision it counts, so every experiment counts the same way (an
//! errored decision is never admitted).

use super::Event;

/// The totals of a trial's events.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counts {
    pub offered: u64,
    pub admitted: u64,
    pub errors: u64,
    pub aborts: u64,
    pub retries_exhausted: u64,
    pub round_trips: u64,
    /// From the first send to the last reply, us.
    pub span_us: i64,
    pub first_error: Option<String>,
}

/// Add up `events` (in any order; the first error is the first in the slice).
pub fn count(events: &[Event]) -> Counts {
    let mut c = Counts {
        offered: events.len() as u64,
        ..Default::default()
    };
    for e in events {
        if let Some(err) = &e.error {
            c.errors += 1;
            if c.first_error.is_none() {
                c.first_error = Some(err.clone());
            }
        } else if e.admitted {
            c.admitted += 1;
        }
        c.aborts += e.aborts as u64;
        c.retries_exhausted += e.retries_exhausted as u64;
        c.round_trips += e.round_trips as u64;
    }
    let first = events.iter().map(|e| e.sent_us).min().unwrap_or(0);
    let last = events.iter().map(|e| e.replied_us).max().unwrap_or(0);
    c.span_us = last - first;
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(sent: i64, replied: i64, admitted: bool, error: Option<&str>) -> Event {
        Event {
            sent_us: sent,
            replied_us: replied,
            admitted,
            error: error.map(str::to_string),
            aborts: 2,
            round_trips: 3,
            ..Default::default()
        }
    }

    #[test]
    fn an_errored_decision_is_counted_as_an_error_not_an_admission() {
        let mut events = vec![
            ev(10, 50, true, None),
            ev(20, 40, false, None),
            // `admitted` set together with an error must not count.
            ev(5, 90, true, Some("first")),
            ev(30, 60, false, Some("second")),
        ];
        events[1].retries_exhausted = true;
        let c = count(&events);
        assert_eq!(
            c,
            Counts {
                offered: 4,
                admitted: 1,
                errors: 2,
                aborts: 8,
                retries_exhausted: 1,
                round_trips: 12,
                span_us: 85,
                first_error: Some("first".into()),
            }
        );
        assert_eq!(count(&[]), Counts::default());
    }
}
