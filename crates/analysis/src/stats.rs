//! Distribution summaries over trials: what every reported number carries.
//! The quantile itself is defined once, in `limitbench_base::stats`.

use serde::Serialize;

/// The one quantile definition (linear interpolation between closest ranks),
/// shared with the run side.
pub use limitbench_base::stats::quantile;

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

/// Percentile-bootstrap 95% interval of `stat` over `values` (2,000
/// resamples from a fixed-seed ChaCha8, so a rerun of the analysis gives the
/// same interval). One value gives (v, v); none gives NaNs.
pub fn bootstrap_ci(values: &[f64], stat: impl Fn(&[f64]) -> f64) -> (f64, f64) {
    bootstrap_ci_at(values, stat, 0.95)
}

/// [`bootstrap_ci`] at another two-sided `level` (a Bonferroni share of
/// 95%, when several intervals must hold at once).
pub fn bootstrap_ci_at(values: &[f64], stat: impl Fn(&[f64]) -> f64, level: f64) -> (f64, f64) {
    use rand::{RngExt, SeedableRng};
    let v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    match v.len() {
        0 => return (f64::NAN, f64::NAN),
        1 => return (v[0], v[0]),
        _ => {}
    }
    let mut rng = rand::rngs::ChaCha8Rng::seed_from_u64(0x6c69_6d69_7462_656e);
    let mut sample = vec![0.0; v.len()];
    let mut stats: Vec<f64> = (0..2000)
        .map(|_| {
            for s in sample.iter_mut() {
                *s = v[rng.random_range(0..v.len())];
            }
            stat(&sample)
        })
        .collect();
    stats.sort_by(|a, b| a.total_cmp(b));
    let tail = (1.0 - level) / 2.0;
    (quantile(&stats, tail), quantile(&stats, 1.0 - tail))
}

/// The 95% interval of the mean a verdict reads: a confidence sequence
/// (`confseq::mean_interval`), valid however often the cell is looked at
/// and extended. The fixed-n bootstrap below is for what no verdict reads.
pub fn mean_cs(values: &[f64]) -> (f64, f64) {
    crate::confseq::mean_interval(values, 0.95)
}

/// [`mean_cs`] at another two-sided `level` (a Bonferroni share of 95%).
pub fn mean_cs_at(values: &[f64], level: f64) -> (f64, f64) {
    crate::confseq::mean_interval(values, level)
}

/// The interval of mean(a) - mean(b) for two independent samples: each
/// mean's confidence sequence at half the error (Bonferroni), the
/// difference of their ends; as valid at every look as each of them.
pub fn mean_diff_cs_at(a: &[f64], b: &[f64], level: f64) -> (f64, f64) {
    let share = 1.0 - (1.0 - level) / 2.0;
    let ((alo, ahi), (blo, bhi)) = (mean_cs_at(a, share), mean_cs_at(b, share));
    (alo - bhi, ahi - blo)
}

/// How `mean_cs` intervals are described in claims.csv.
pub fn mean_cs_method(n: usize) -> String {
    crate::confseq::method(n)
}

/// Bootstrap 95% interval of the mean.
pub fn mean_ci(values: &[f64]) -> (f64, f64) {
    mean_ci_at(values, 0.95)
}

/// Bootstrap interval of the mean at `level`.
pub fn mean_ci_at(values: &[f64], level: f64) -> (f64, f64) {
    bootstrap_ci_at(values, |s| s.iter().sum::<f64>() / s.len() as f64, level)
}

/// How `mean_ci` intervals are described in claims.csv.
pub fn mean_ci_method(n: usize) -> String {
    format!("bootstrap 95% interval of the mean over {n} trials")
}

#[cfg(test)]
mod tests {
    #[test]
    fn bootstrap_interval_brackets_the_mean_and_narrows_with_n() {
        let few = [1.0, 2.0, 3.0, 4.0];
        let (lo, hi) = mean_ci(&few);
        assert!(lo < 2.5 && 2.5 < hi && lo >= 1.0 && hi <= 4.0, "{lo} {hi}");
        let many: Vec<f64> = (0..100).map(|i| (i % 4 + 1) as f64).collect();
        let (lo2, hi2) = mean_ci(&many);
        assert!(hi2 - lo2 < hi - lo, "{lo2} {hi2}");
        assert_eq!(mean_ci(&[7.0]), (7.0, 7.0));
        assert_eq!(mean_ci(&few), (lo, hi), "deterministic");
    }

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
