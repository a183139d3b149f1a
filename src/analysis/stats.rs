//! Distribution summaries over trials: what every reported number carries.
//! The quantile itself is defined once, in `crate::stats`.

use serde::Serialize;

/// The one quantile definition (linear interpolation between closest ranks),
/// shared with the run side.
pub use crate::stats::quantile;

#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    pub min: f64,
    pub max: f64,
    pub sd: f64,
    pub median: f64,
}

impl Summary {
    pub fn of(values: &[f64]) -> Self {
        let v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return Summary {
                n: 0,
                mean: f64::NAN,
                min: f64::NAN,
                max: f64::NAN,
                sd: f64::NAN,
                median: f64::NAN,
            };
        }
        let n = v.len();
        let mean = v.iter().sum::<f64>() / n as f64;
        let sd = if n > 1 {
            (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        Summary {
            n,
            mean,
            min: v.iter().copied().fold(f64::MAX, f64::min),
            max: v.iter().copied().fold(f64::MIN, f64::max),
            sd,
            median: quantile(&v, 0.5),
        }
    }

    /// `mean (min..max, n=N)` with `digits` decimals.
    pub fn show(&self, digits: usize) -> String {
        if self.n == 0 {
            return "n/a".into();
        }
        format!(
            "{:.d$} (min {:.d$}, max {:.d$}, n={})",
            self.mean,
            self.min,
            self.max,
            self.n,
            d = digits
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_and_quantiles() {
        let s = Summary::of(&[1.0, 2.0, 3.0, 4.0]);
        assert_eq!(
            (s.n, s.mean, s.min, s.max, s.median),
            (4, 2.5, 1.0, 4.0, 2.5)
        );
        assert!((s.sd - 1.2909944).abs() < 1e-6);
        assert_eq!(quantile(&[5.0, 1.0, 3.0], 1.0), 5.0);
        assert!(Summary::of(&[]).mean.is_nan());
    }
}
