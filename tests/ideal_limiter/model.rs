//! The ideal limiter's small model: run-to-run noise, an exact sliding
//! log and token bucket, the most admissions in a window, Poisson arrivals.

use rand::RngExt;
use rand::rngs::ChaCha8Rng;

/// `x` times a factor uniform in [1 - rel, 1 + rel]: run-to-run noise.
pub(super) fn noisy(rng: &mut ChaCha8Rng, x: f64, rel: f64) -> f64 {
    x * (1.0 + rng.random_range(-rel..=rel))
}

/// An ideal sliding-window log: a request at `t` (us) is admitted when
/// fewer than `limit` admissions lie in (t - window, t]. `times` sorted.
pub(super) fn sliding_log(times: &[i64], limit: u64, window_us: i64) -> Vec<bool> {
    let mut admitted_at: Vec<i64> = Vec::new();
    let mut first = 0;
    times
        .iter()
        .map(|&t| {
            while first < admitted_at.len() && t - admitted_at[first] >= window_us {
                first += 1;
            }
            let ok = ((admitted_at.len() - first) as u64) < limit;
            if ok {
                admitted_at.push(t);
            }
            ok
        })
        .collect()
}

/// An ideal token bucket on one exact clock: starts full at `capacity`,
/// refills `rate_per_s` continuously, each request takes a whole token.
pub(super) fn token_bucket(times: &[i64], capacity: f64, rate_per_s: f64) -> Vec<bool> {
    let mut tokens = capacity;
    let mut last = times.first().copied().unwrap_or(0);
    times
        .iter()
        .map(|&t| {
            tokens = (tokens + (t - last) as f64 * rate_per_s / 1e6).min(capacity);
            last = t;
            let ok = tokens >= 1.0;
            if ok {
                tokens -= 1.0;
            }
            ok
        })
        .collect()
}

/// The most admissions in any window of `window_us` (times sorted).
pub(super) fn most_in_window(times: &[i64], window_us: i64) -> u64 {
    let mut best = 0;
    let mut left = 0;
    for right in 0..times.len() {
        while times[right] - times[left] >= window_us {
            left += 1;
        }
        best = best.max(right - left + 1);
    }
    best as u64
}

/// Poisson arrival times (us) at `rate_per_s` from `start` for `span_us`.
pub(super) fn poisson(rng: &mut ChaCha8Rng, rate_per_s: f64, start: i64, span_us: i64) -> Vec<i64> {
    let mut t = start as f64;
    let mut out = Vec::new();
    loop {
        let u: f64 = rng.random_range(f64::MIN_POSITIVE..1.0);
        t += -u.ln() * 1e6 / rate_per_s;
        if t >= (start + span_us) as f64 {
            return out;
        }
        out.push(t as i64);
    }
}
