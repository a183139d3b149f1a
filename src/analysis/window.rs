//! Window metrics over admission histories (study A), computed exactly from
//! the recorded timestamps, and the ideal token bucket the skew experiment
//! compares with.
//!
//! A window of length `w` is half open, `[t, t + w)`: two admissions exactly
//! `w` apart are never in one window. The sweep moves a right edge over the
//! sorted admission times and a left edge that drops times `w` or more
//! behind, so every window that could hold the maximum (one starting at an
//! admission) is looked at once: O(n) after sorting.

use std::collections::BTreeMap;

use serde::Deserialize;

/// One decision of a `<experiment>-history.csv` (the columns the analysis reads).
#[derive(Debug, Clone, Deserialize)]
pub struct History {
    pub cell: String,
    pub trial: u64,
    pub worker: u32,
    pub intended_us: i64,
    pub sent_us: i64,
    pub replied_us: i64,
    pub redis_time_us: Option<i64>,
    pub admitted: bool,
    pub error: bool,
}

/// History rows grouped by (cell, trial).
pub fn by_trial(rows: Vec<History>) -> BTreeMap<(String, u64), Vec<History>> {
    let mut m: BTreeMap<(String, u64), Vec<History>> = BTreeMap::new();
    for r in rows {
        m.entry((r.cell.clone(), r.trial)).or_default().push(r);
    }
    m
}

/// Sorted admission times of one trial: Redis's clock where every admitted
/// decision carries it and `prefer_redis`, else the reply time.
pub fn admission_times(rows: &[History], prefer_redis: bool) -> (Vec<i64>, &'static str) {
    let adm: Vec<&History> = rows.iter().filter(|r| r.admitted).collect();
    let redis = prefer_redis && adm.iter().all(|r| r.redis_time_us.is_some());
    let mut t: Vec<i64> = adm
        .iter()
        .map(|r| {
            if redis {
                r.redis_time_us.unwrap()
            } else {
                r.replied_us
            }
        })
        .collect();
    t.sort_unstable();
    (t, if redis { "redis" } else { "reply" })
}

/// The most timestamps in any half-open window of `window_us`, and where the
/// first such window starts. `times` must be sorted.
pub fn max_in_window(times: &[i64], window_us: i64) -> (usize, Option<i64>) {
    let mut best = (0, None);
    let mut left = 0;
    for right in 0..times.len() {
        while times[right] - times[left] >= window_us {
            left += 1;
        }
        let n = right - left + 1;
        if n > best.0 {
            best = (n, Some(times[left]));
        }
    }
    best
}

/// The shortest span (last - first, us) holding `k` timestamps. `times` sorted.
pub fn min_span(times: &[i64], k: usize) -> Option<i64> {
    if k == 0 || times.len() < k {
        return None;
    }
    (0..=times.len() - k)
        .map(|i| times[i + k - 1] - times[i])
        .min()
}

/// How many of `arrivals` (sorted, us) an ideal token bucket admits: it
/// starts full at `capacity`, refills continuously at `rate_per_s` up to
/// `capacity`, and each arrival takes one token if there is one.
pub fn ideal_bucket(arrivals: &[i64], capacity: f64, rate_per_s: f64) -> u64 {
    let mut level = capacity;
    let mut last = arrivals.first().copied().unwrap_or(0);
    let mut admitted = 0;
    for &t in arrivals {
        level = (level + (t - last) as f64 * rate_per_s / 1e6).min(capacity);
        last = t;
        if level >= 1.0 {
            level -= 1.0;
            admitted += 1;
        }
    }
    admitted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_edges_are_half_open() {
        assert_eq!(max_in_window(&[], 1000), (0, None));
        assert_eq!(max_in_window(&[0, 1000], 1000).0, 1);
        assert_eq!(max_in_window(&[0, 999], 1000).0, 2);
        assert_eq!(max_in_window(&[0, 1000, 1200, 1900], 1000), (3, Some(1000)));
        assert_eq!(
            max_in_window(&[0, 500, 999, 1499, 1500], 1000),
            (3, Some(0))
        );
    }

    #[test]
    fn ideal_bucket_refills_and_caps() {
        // 150 at once: 100 pass. 1 s later the bucket is full again.
        let mut t = vec![0; 150];
        t.extend(vec![1_000_000; 150]);
        assert_eq!(ideal_bucket(&t, 100.0, 100.0), 200);
        // Steady at the refill rate never runs dry.
        let s: Vec<i64> = (0..300).map(|i| i * 10_000).collect();
        assert_eq!(ideal_bucket(&s, 100.0, 100.0), 300);
        assert_eq!(min_span(&[0, 5, 9, 100], 3), Some(9));
    }
}
