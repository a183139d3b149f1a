//! The exact over-admission of the timestamp-member log under Poisson
//! arrivals, to set beside what was measured.
//!
//! Derivation. Arrivals form a Poisson stream of `rate` per second, so the
//! number landing in one millisecond is Poisson with mean `m = rate / 1000`,
//! independently from millisecond to millisecond. The log admits a request
//! while it holds fewer than `L` (the limit) entries, and an admitted
//! request adds its millisecond, which is a new entry only if no admitted
//! request of that millisecond came before it. Nothing expires within the
//! trial (it is shorter than the window). Walk the occupied milliseconds in
//! order, the i-th holding `k_i >= 1` requests:
//!
//! - while fewer than `L - 1` entries exist when the millisecond starts,
//!   its first request makes entry number at most `L - 1` and every other
//!   request of the millisecond still sees fewer than `L`: all `k_i` are
//!   admitted;
//! - in the `L`-th occupied millisecond the first request makes entry `L`,
//!   and the rest see a full log: 1 admitted;
//! - afterwards the log is full: none.
//!
//! So admitted = k_1 + ... + k_(L-1) + 1, where each `k_i` is a Poisson(m)
//! count conditioned on being at least 1 (zero-truncated), whose mean is
//! `m / (1 - e^-m)`. Hence
//!
//!   E[admitted] / L = ((L - 1) * m / (1 - e^-m) + 1) / L,
//!
//! provided the trial lasts long enough for `L` occupied milliseconds (each
//! millisecond is occupied with probability `1 - e^-m`).
//!
//! The same-millisecond share: of the requests, all but the first of each
//! occupied millisecond follow a request in their millisecond, so the share
//! is `s = 1 - (1 - e^-m) / m`, and `1 / (1 - s) = m / (1 - e^-m)`: a
//! measured share therefore implies an admitted / limit of
//! `((L - 1) / (1 - s) + 1) / L` whatever made the sends clump.
//!
//! A timer-tick sender (tick `T` >= 1 ms) releases every arrival at the next
//! tick, so a tick's group is Poisson with mean `m = rate * T / 1000`, the
//! groups are at least 1 ms apart (distinct milliseconds), and the formula
//! holds with that `m` as long as each group runs inside one millisecond.
//! The precise sender is `T` = 1 ms in this formula.

/// Requests per occupied millisecond (or tick group) at `rate` per second
/// with a sender tick of `tick_ms` (0: precise).
fn group_mean(rate: f64, tick_ms: f64) -> f64 {
    rate / 1000.0 * tick_ms.max(1.0)
}

/// Expected admitted / limit of the timestamp-member log (see the module).
pub fn expected_ratio(limit: u64, rate: f64, tick_ms: f64) -> f64 {
    let m = group_mean(rate, tick_ms);
    let per_ms = if m < 1e-9 {
        1.0
    } else {
        m / (1.0 - (-m).exp())
    };
    ratio_from_per_ms(limit, per_ms)
}

/// Expected share of sends in the millisecond of the send before them.
pub fn expected_share(rate: f64, tick_ms: f64) -> f64 {
    let m = group_mean(rate, tick_ms);
    if m < 1e-9 {
        0.0
    } else {
        1.0 - (1.0 - (-m).exp()) / m
    }
}

/// Admitted / limit implied by a measured same-millisecond share `s`.
pub fn ratio_from_share(limit: u64, s: f64) -> f64 {
    ratio_from_per_ms(limit, 1.0 / (1.0 - s))
}

/// The model inverted: the span (ms) over which a Poisson sender at `rate`
/// would have to group its requests into one millisecond stamp for the log
/// to admit `ratio` x the limit (NaN if `ratio` is at most 1).
pub fn implied_group_ms(limit: u64, rate: f64, ratio: f64) -> f64 {
    let l = limit as f64;
    let per_ms = (ratio * l - 1.0) / (l - 1.0);
    if per_ms.is_nan() || per_ms <= 1.0 {
        return f64::NAN;
    }
    // m / (1 - e^-m) rises from 1 (m = 0) without bound: bisect for m.
    let (mut lo, mut hi) = (0.0f64, per_ms + 1.0);
    for _ in 0..100 {
        let mid = (lo + hi) / 2.0;
        if mid / (1.0 - (-mid).exp()) < per_ms {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo + hi) / 2.0 / rate * 1000.0
}

fn ratio_from_per_ms(limit: u64, per_ms: f64) -> f64 {
    let l = limit as f64;
    ((l - 1.0) * per_ms + 1.0) / l
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_is_exact_at_the_ends_and_consistent_with_the_share() {
        // Sparse arrivals: nothing shares a millisecond, the limit exactly.
        assert!((expected_ratio(100, 0.001, 0.0) - 1.0).abs() < 1e-6);
        // Dense arrivals: m per millisecond, (L-1) m + 1.
        assert!((expected_ratio(100, 50_000.0, 0.0) - (99.0 * 50.0 + 1.0) / 100.0).abs() < 1e-9);
        // A 2 ms tick doubles the group.
        assert_eq!(
            expected_ratio(100, 1000.0, 2.0),
            expected_ratio(100, 2000.0, 0.0)
        );
        for rate in [100.0, 1000.0, 10_000.0] {
            let s = expected_share(rate, 0.0);
            assert!((ratio_from_share(100, s) - expected_ratio(100, rate, 0.0)).abs() < 1e-9);
        }
    }

    #[test]
    fn the_inverse_recovers_the_tick() {
        for (rate, tick) in [(100.0, 1.5), (1000.0, 1.2), (10_000.0, 1.0)] {
            let r = expected_ratio(100, rate, tick);
            assert!((implied_group_ms(100, rate, r) - tick).abs() < 1e-6);
        }
        assert!(implied_group_ms(100, 1000.0, 1.0).is_nan());
    }

    /// A simulation of the log over Poisson arrivals agrees with the formula.
    #[test]
    fn the_model_matches_a_simulated_log() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand::rngs::ChaCha8Rng::seed_from_u64(7);
        let (limit, rate) = (100usize, 1000.0);
        let mut total = 0.0;
        let trials = 400;
        for _ in 0..trials {
            let (mut t, mut admitted) = (0.0f64, 0usize);
            let mut log = std::collections::BTreeSet::new();
            while t < 2000.0 {
                let u: f64 = rng.random_range(f64::MIN_POSITIVE..1.0);
                t += -u.ln() * 1000.0 / rate;
                if log.len() < limit {
                    admitted += 1;
                    log.insert(t.floor() as i64);
                }
            }
            total += admitted as f64 / limit as f64;
        }
        let sim = total / trials as f64;
        let exact = expected_ratio(100, rate, 0.0);
        assert!((sim - exact).abs() < 0.02, "simulated {sim}, model {exact}");
    }
}
