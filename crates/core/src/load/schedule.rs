//! Arrival schedules for open-loop load, and a precise wait.
//!
//! tokio's timer fires on a ~1 ms grid, too coarse for 10,000 requests/s. So
//! `wait_until` sleeps with the timer only until ~1.5 ms before the deadline,
//! then yields in a loop until the deadline passes: sub-millisecond accuracy
//! at the price of one busy core while waiting.

use std::time::{Duration, Instant};

use rand::RngExt;

#[derive(Debug, Clone, serde::Serialize)]
pub struct Arrival {
    /// Microseconds after the trial start.
    pub at_us: i64,
    pub client: String,
    pub cost: u64,
}

/// Wait until `deadline` with sub-millisecond precision.
pub async fn wait_until(deadline: Instant) {
    let coarse = Duration::from_micros(1500);
    let now = Instant::now();
    if deadline > now + coarse {
        tokio::time::sleep_until((deadline - coarse).into()).await;
    }
    while Instant::now() < deadline {
        tokio::task::yield_now().await;
    }
}

/// Evenly spaced arrivals: `rate` per second for `duration_us`, starting at `start_us`.
pub fn steady(rate: f64, start_us: i64, duration_us: i64, client: &str) -> Vec<Arrival> {
    let gap = 1e6 / rate;
    let n = (duration_us as f64 / gap).floor() as i64;
    (0..n)
        .map(|i| Arrival {
            at_us: start_us + (i as f64 * gap) as i64,
            client: client.into(),
            cost: 1,
        })
        .collect()
}

/// Poisson arrivals (exponential gaps) at `rate` per second.
pub fn poisson(
    rate: f64,
    start_us: i64,
    duration_us: i64,
    client: &str,
    rng: &mut impl RngExt,
) -> Vec<Arrival> {
    let mut out = Vec::new();
    let mut t = start_us as f64;
    loop {
        let u: f64 = rng.random_range(f64::MIN_POSITIVE..1.0);
        t += -u.ln() * 1e6 / rate;
        if t >= (start_us + duration_us) as f64 {
            break;
        }
        out.push(Arrival {
            at_us: t as i64,
            client: client.into(),
            cost: 1,
        });
    }
    out
}

/// A sender whose sends fall on a timer tick: every arrival is released at
/// the next multiple of `tick_us` at or after its scheduled time, so the
/// arrivals of one tick leave together. The grid is the trial clock's, so
/// its phase against the wall-clock millisecond is arbitrary, as a real
/// timer's is. `tick_us` 0: unchanged (the precise sender).
pub fn on_tick(mut arrivals: Vec<Arrival>, tick_us: i64) -> Vec<Arrival> {
    if tick_us > 0 {
        for a in &mut arrivals {
            a.at_us = (a.at_us + tick_us - 1).div_euclid(tick_us) * tick_us;
        }
    }
    arrivals
}

/// The share of `times_us` (microseconds on the wall clock, any order) that
/// fall in the same millisecond as the time before them, sorted: what a
/// millisecond timestamp member collapses. `None` with fewer than two.
pub fn same_ms_share(times_us: &[i64]) -> Option<f64> {
    if times_us.len() < 2 {
        return None;
    }
    let mut ms: Vec<i64> = times_us.iter().map(|t| t.div_euclid(1000)).collect();
    ms.sort_unstable();
    let same = ms.windows(2).filter(|w| w[0] == w[1]).count();
    Some(same as f64 / (ms.len() - 1) as f64)
}

/// A burst: `n` arrivals spread evenly over `spread_us` starting at `at_us`
/// (spread 0: all at once).
pub fn burst(n: u64, at_us: i64, spread_us: i64, client: &str) -> Vec<Arrival> {
    (0..n)
        .map(|i| Arrival {
            at_us: at_us
                + if n > 1 {
                    spread_us * i as i64 / (n as i64 - 1)
                } else {
                    0
                },
            client: client.into(),
            cost: 1,
        })
        .collect()
}

/// The same schedule, every arrival for `client` (one schedule, several
/// strategies each on a fresh key).
pub fn for_client(times: &[Arrival], client: &str) -> Vec<Arrival> {
    times
        .iter()
        .map(|a| Arrival {
            client: client.to_string(),
            ..a.clone()
        })
        .collect()
}

/// Merge schedules into one, sorted by time.
pub fn merge(parts: Vec<Vec<Arrival>>) -> Vec<Arrival> {
    let mut all: Vec<Arrival> = parts.into_iter().flatten().collect();
    all.sort_by_key(|a| a.at_us);
    all
}

/// Achieved rate and inter-arrival spread of what was actually sent.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct Achieved {
    pub sent: u64,
    pub achieved_rate_per_s: f64,
    /// Mean and standard deviation of the gaps between sends, us.
    pub gap_mean_us: f64,
    pub gap_sd_us: f64,
    /// How late sends were against the schedule: mean, p99, max (us).
    pub lateness_mean_us: f64,
    pub lateness_p99_us: f64,
    pub lateness_max_us: f64,
}

/// Measure `Achieved` from the events of a run.
pub fn achieved_by(events: &[super::Event]) -> Achieved {
    achieved(
        &events
            .iter()
            .map(|e| (e.intended_us, e.sent_us))
            .collect::<Vec<_>>(),
    )
}

/// Measure `Achieved` from (intended, sent) pairs.
pub fn achieved(pairs: &[(i64, i64)]) -> Achieved {
    if pairs.len() < 2 {
        return Achieved {
            sent: pairs.len() as u64,
            ..Default::default()
        };
    }
    let mut sent: Vec<i64> = pairs.iter().map(|p| p.1).collect();
    sent.sort_unstable();
    let span = (sent[sent.len() - 1] - sent[0]).max(1) as f64;
    let gaps: Vec<f64> = sent.windows(2).map(|w| (w[1] - w[0]) as f64).collect();
    let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
    let sd = (gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64).sqrt();
    let mut late: Vec<f64> = pairs.iter().map(|p| (p.1 - p.0) as f64).collect();
    late.sort_by(|a, b| a.partial_cmp(b).unwrap());
    Achieved {
        sent: pairs.len() as u64,
        achieved_rate_per_s: (pairs.len() - 1) as f64 * 1e6 / span,
        gap_mean_us: mean,
        gap_sd_us: sd,
        lateness_mean_us: late.iter().sum::<f64>() / late.len() as f64,
        lateness_p99_us: limitbench_base::stats::quantile_sorted(&late, 0.99),
        lateness_max_us: late[late.len() - 1],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tick_sender_releases_on_the_next_multiple_of_the_tick() {
        let a = burst(4, 0, 3000, "c"); // 0, 1000, 2000, 3000 us
        let t: Vec<i64> = on_tick(a.clone(), 1200).iter().map(|x| x.at_us).collect();
        assert_eq!(t, vec![0, 1200, 2400, 3600]);
        let same: Vec<i64> = on_tick(a, 0).iter().map(|x| x.at_us).collect();
        assert_eq!(same, vec![0, 1000, 2000, 3000]);
    }

    #[test]
    fn same_ms_share_counts_sends_in_the_previous_sends_millisecond() {
        // Milliseconds 5, 5, 5, 6, 8: two of the four gaps stay in one millisecond.
        let t = [5_000, 5_999, 5_500, 6_000, 8_100];
        assert_eq!(same_ms_share(&t), Some(0.5));
        assert_eq!(same_ms_share(&t[..1]), None);
    }
}
