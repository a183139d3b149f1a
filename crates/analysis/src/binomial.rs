//! The exact (Clopper-Pearson) interval of a binomial proportion: `k`
//! successes of `n` independent draws. It inverts the two binomial tails
//! (Clopper and Pearson 1934): the lower end is the `p` at which seeing `k`
//! or more has probability `alpha/2`, the upper end the `p` at which seeing
//! `k` or fewer has probability `alpha/2`. Valid at any `n` with no
//! normal approximation, for an `n` fixed before the draws (it is a
//! fixed-n interval: never for a count extended until it looks decisive).
//!
//! The tails are summed term by term in log space (each term's log binomial
//! coefficient from the previous one's), and each end found by bisection,
//! which the tails' monotonicity in `p` makes exact to 1e-12.

/// P(X <= k) for X ~ Binomial(n, p), 0 < p < 1.
fn cdf(k: u64, n: u64, p: f64) -> f64 {
    let (lp, lq) = (p.ln(), (1.0 - p).ln());
    // log C(n, i) p^i q^(n-i), i = 0..=k, summed with log-sum-exp.
    let mut log_c = 0.0_f64;
    let mut terms = Vec::with_capacity(k as usize + 1);
    for i in 0..=k.min(n) {
        if i > 0 {
            log_c += ((n - i + 1) as f64).ln() - (i as f64).ln();
        }
        terms.push(log_c + i as f64 * lp + (n - i) as f64 * lq);
    }
    let m = terms.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !m.is_finite() {
        return 0.0;
    }
    (m + terms.iter().map(|t| (t - m).exp()).sum::<f64>().ln())
        .exp()
        .min(1.0)
}

/// The `p` in (0, 1) where the decreasing `f(p)` crosses `target`.
fn solve_decreasing(f: impl Fn(f64) -> f64, target: f64) -> f64 {
    let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if f(mid) > target {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo < 1e-12 {
            break;
        }
    }
    0.5 * (lo + hi)
}

/// The two-sided `1 - alpha` Clopper-Pearson interval of `k` of `n`.
/// `n = 0`: the whole [0, 1].
pub fn clopper_pearson(k: u64, n: u64, alpha: f64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let k = k.min(n);
    let half = alpha / 2.0;
    // Lower: P(X >= k | p) = half; P(X >= k) = 1 - cdf(k - 1) rises with p.
    let lo = if k == 0 {
        0.0
    } else {
        solve_decreasing(|p| cdf(k - 1, n, p), 1.0 - half)
    };
    // Upper: P(X <= k | p) = half; cdf(k) falls with p.
    let hi = if k == n {
        1.0
    } else {
        solve_decreasing(|p| cdf(k, n, p), half)
    };
    (lo, hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        // None of 10: the upper end solves (1 - p)^10 = 0.025.
        let (lo, hi) = clopper_pearson(0, 10, 0.05);
        assert_eq!(lo, 0.0);
        assert!((hi - (1.0 - 0.025_f64.powf(0.1))).abs() < 1e-9, "{hi}");
        // All of 10: the mirror image.
        let (lo, hi) = clopper_pearson(10, 10, 0.05);
        assert!((lo - 0.025_f64.powf(0.1)).abs() < 1e-9, "{lo}");
        assert_eq!(hi, 1.0);
        // 5 of 10: symmetric about 1/2, the textbook 0.1871..0.8129.
        let (lo, hi) = clopper_pearson(5, 10, 0.05);
        assert!(
            (lo - 0.187086).abs() < 1e-5 && (hi - 0.812914).abs() < 1e-5,
            "{lo} {hi}"
        );
        assert!((lo + hi - 1.0).abs() < 1e-9);
        // 1 of 1000 is not 0 of 1000: its lower end is above 0.
        assert!(clopper_pearson(1, 1000, 0.05).0 > 0.0);
    }

    #[test]
    fn the_ends_are_where_the_tails_say() {
        // At each end the tail the end was solved from has probability alpha/2.
        for (k, n) in [(336, 1000), (3, 40), (97, 100)] {
            let (lo, hi) = clopper_pearson(k, n, 0.05);
            let f = k as f64 / n as f64;
            assert!(lo < f && f < hi);
            assert!(
                ((1.0 - cdf(k - 1, n, lo)) - 0.025).abs() < 1e-6,
                "{k}/{n} lo {lo}"
            );
            assert!((cdf(k, n, hi) - 0.025).abs() < 1e-6, "{k}/{n} hi {hi}");
        }
    }

    #[test]
    fn coverage_is_at_least_the_level() {
        // Exact coverage at a few p: the sum over k of P(k) where the
        // interval of k holds p is at least 0.95 (the method is conservative).
        for (n, p) in [(20_u64, 0.1), (50, 1.0 / 3.0), (100, 0.5)] {
            let mut covered = 0.0;
            for k in 0..=n {
                let pk = cdf(k, n, p) - if k == 0 { 0.0 } else { cdf(k - 1, n, p) };
                let (lo, hi) = clopper_pearson(k, n, 0.05);
                if lo <= p && p <= hi {
                    covered += pk;
                }
            }
            assert!(covered >= 0.95 - 1e-9, "n {n} p {p}: {covered}");
        }
    }
}
