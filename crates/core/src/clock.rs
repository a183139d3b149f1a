//! Caller clocks: where "now" comes from for strategies that take the time
//! from the caller. One clock per worker, each with a fixed offset from the
//! machine's clock, which is how servers with skewed clocks look to Redis.

use std::time::{SystemTime, UNIX_EPOCH};

#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Clock {
    /// Added to the machine's clock, microseconds (negative: behind).
    pub offset_us: i64,
}

impl Clock {
    pub fn with_offset_us(offset_us: i64) -> Self {
        Clock { offset_us }
    }

    /// The machine's clock, unskewed, in microseconds since the epoch.
    pub fn system_now_us() -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_micros() as i64)
            .unwrap_or(0)
    }

    pub fn now_us(&self) -> i64 {
        Self::system_now_us() + self.offset_us
    }

    /// `n` clocks with offsets spread evenly over [-spread, +spread]
    /// (deterministic; with n = 1 the one clock is unskewed).
    pub fn spread(n: usize, spread_us: i64) -> Vec<Clock> {
        if n <= 1 {
            return vec![Clock::default(); n];
        }
        (0..n)
            .map(|i| Clock::with_offset_us(-spread_us + 2 * spread_us * i as i64 / (n as i64 - 1)))
            .collect()
    }

    /// `n` clocks split between -spread and +spread (alternating, so any two
    /// consecutive servers disagree by 2 x spread): the harshest skew.
    pub fn two_point(n: usize, spread_us: i64) -> Vec<Clock> {
        (0..n)
            .map(|i| Clock::with_offset_us(if i % 2 == 0 { -spread_us } else { spread_us }))
            .collect()
    }

    /// `n` clocks with offsets drawn uniformly from [-spread, +spread].
    pub fn random(n: usize, spread_us: i64, rng: &mut impl rand::RngExt) -> Vec<Clock> {
        (0..n)
            .map(|_| {
                Clock::with_offset_us(if spread_us == 0 {
                    0
                } else {
                    rng.random_range(-spread_us..=spread_us)
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_applied_and_spread() {
        let c = Clock::with_offset_us(-1_000_000);
        let d = Clock::system_now_us() - c.now_us();
        assert!(
            (999_000..=1_001_000).contains(&d),
            "offset not applied: {d}"
        );
        let s = Clock::spread(5, 100);
        assert_eq!(
            s.iter().map(|c| c.offset_us).collect::<Vec<_>>(),
            vec![-100, -50, 0, 50, 100]
        );
        assert_eq!(Clock::spread(1, 100)[0].offset_us, 0);
        let t = Clock::two_point(4, 100);
        assert_eq!(
            t.iter().map(|c| c.offset_us).collect::<Vec<_>>(),
            vec![-100, 100, -100, 100]
        );
    }
}
