//! Quantiles, defined once for the whole harness: the run side (round trips,
//! schedule lateness, latency histograms) and the analysis use these, so a
//! "p99" means the same thing in every CSV column and every claim.
//!
//! The definition for samples is linear interpolation between the closest
//! ranks (Hyndman & Fan type 7, the default of R and NumPy): for n sorted
//! values and q in [0, 1], position h = q * (n - 1), and the quantile is
//! v[floor h] + (h - floor h) * (v[ceil h] - v[floor h]). Non-finite values
//! are left out; no values give NaN.

use hdrhistogram::Histogram;

/// The q-quantile of unsorted values (linear interpolation between closest ranks).
pub fn quantile(values: &[f64], q: f64) -> f64 {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    quantile_sorted(&v, q)
}

/// [`quantile`] of values already sorted ascending and all finite (no copy).
pub fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let pos = q.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

/// The q-quantile of a latency histogram recorded in nanoseconds, in
/// microseconds (NaN if empty). This is HdrHistogram's own
/// `value_at_quantile` (the smallest recorded value, at the histogram's
/// precision, with at least a fraction q of the samples at or below it), not
/// the interpolation above: the samples themselves are not kept.
pub fn histogram_quantile_us(h: &Histogram<u64>, q: f64) -> f64 {
    if h.is_empty() {
        f64::NAN
    } else {
        h.value_at_quantile(q) as f64 / 1000.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_interpolate_between_closest_ranks() {
        assert_eq!(quantile(&[5.0, 1.0, 3.0], 1.0), 5.0);
        assert_eq!(quantile(&[5.0, 1.0, 3.0], 0.0), 1.0);
        assert_eq!(quantile(&[1.0, 2.0, 3.0, 4.0], 0.5), 2.5);
        // h = 0.99 * 3 = 2.97: 3 + 0.97 * (10 - 3).
        assert!((quantile(&[1.0, 2.0, 3.0, 10.0], 0.99) - 9.79).abs() < 1e-12);
        assert_eq!(quantile(&[f64::NAN, 2.0], 0.5), 2.0);
        assert!(quantile(&[], 0.5).is_nan());
        assert_eq!(quantile_sorted(&[1.0, 2.0, 3.0, 4.0], 0.25), 1.75);
    }

    #[test]
    fn histogram_quantiles_are_hdrhistograms_own() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).unwrap();
        assert!(histogram_quantile_us(&h, 0.5).is_nan());
        // Below 2048 ns a 3-digit histogram holds every value exactly.
        for ns in [1_000u64, 1_200, 1_400, 1_600] {
            h.record(ns).unwrap();
        }
        // No interpolation: the 2nd of 4 samples, not the 1.3 us of `quantile`.
        assert_eq!(histogram_quantile_us(&h, 0.5), 1.2);
        assert_eq!(histogram_quantile_us(&h, 1.0), 1.6);
        assert!((quantile(&[1.0, 1.2, 1.4, 1.6], 0.5) - 1.3).abs() < 1e-12);
    }
}
