//! The "nines" axis of a percentile plot (HdrHistogram's and wrk2's):
//! quantile `q` is drawn at `x = -log10(1 - q)`, so every further nine
//! takes the same room: p90 at 1, p99 at 2, p99.9 at 3, and p50 at
//! log10(2). Ticks are labelled with the percentile they stand for
//! (`p50`, `p90`, `p99`, `p99.9`, `p99.99`), never with the drawn number.
//! [`crate::figure::Axis::nines`] makes such an axis; the axes module asks
//! [`nines_label`] for its tick labels.

/// Where quantile `q` (0 <= q < 1) is drawn: `-log10(1 - q)`.
pub fn nines_x(q: f64) -> f64 {
    -(1.0 - q).log10()
}

/// Where the largest of `n` values is drawn: the quantile 1 - 1/n, so
/// the maximum of a million decisions sits at p99.9999 (x = 6).
pub fn nines_max_x(n: u64) -> f64 {
    (n.max(1) as f64).log10()
}

/// The ticks of a nines axis, drawn units: p50, p90, p99, ... p99.99999.
pub fn nines_ticks() -> Vec<f64> {
    std::iter::once(nines_x(0.5))
        .chain((1..=7).map(f64::from))
        .collect()
}

/// The percentile drawn at `x`, as a reader writes it: `p50`, `p90`,
/// `p99.9`; as many decimals as the nines need (p99.99 has two).
pub fn nines_label(x: f64) -> String {
    if x <= 1e-9 {
        return "p0".into();
    }
    let p = 100.0 * (1.0 - 10f64.powf(-x));
    let decimals = (x - 1e-6).ceil().max(2.0) as usize - 2;
    let s = format!("{p:.decimals$}");
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    format!("p{s}")
}

#[cfg(test)]
mod tests {
    use crate::nines::*;

    #[test]
    fn each_nine_takes_one_unit_and_is_labelled_as_a_percentile() {
        assert!((nines_x(0.9) - 1.0).abs() < 1e-12);
        assert!((nines_x(0.99) - 2.0).abs() < 1e-9);
        assert!((nines_x(0.999) - 3.0).abs() < 1e-9);
        assert!((nines_x(0.5) - 2f64.log10()).abs() < 1e-12);
        assert_eq!(nines_x(0.0), 0.0);
        assert_eq!(nines_max_x(1000), 3.0);
        let labels: Vec<String> = nines_ticks().iter().map(|x| nines_label(*x)).collect();
        assert_eq!(
            labels,
            [
                "p50",
                "p90",
                "p99",
                "p99.9",
                "p99.99",
                "p99.999",
                "p99.9999",
                "p99.99999"
            ]
        );
        // Ticks in drawn order, one unit per nine after p50.
        let t = nines_ticks();
        assert!(t.windows(2).all(|w| w[1] > w[0]));
        assert_eq!(&t[1..4], &[1.0, 2.0, 3.0]);
        // Points between the nines read as their percentile.
        assert_eq!(nines_label(nines_x(0.75)), "p75");
        assert_eq!(nines_label(nines_x(0.995)), "p99.5");
        assert_eq!(nines_label(0.0), "p0");
    }
}
