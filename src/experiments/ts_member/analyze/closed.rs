//! B5.2, "with 16 workers sending as fast as they could, a limit of 1,000
//! let through about 51,000 requests": what travels from the count.
//!
//! The model. With a millisecond as member every request of one Redis
//! millisecond writes the same entry, so the log holds one entry per
//! distinct millisecond among its admissions, and a log of limit L admits
//! until L milliseconds are occupied (nothing expires while the window is
//! longer than that). Workers flat out at D decisions/s put m = D / 1000
//! decisions in each millisecond, so, as in the open-loop model
//! (`model.rs`), the log fills in L / (1 - e^-m) ms (1.0 s for L = 1,000 at
//! any m of a few or more) and admits (L - 1) m / (1 - e^-m) + 1, about D
//! decisions/s times one second: the count is the server's rate times the
//! time the log takes to fill. So admitted / that model count, each run at
//! its own rate, is what travels from a machine of one speed to another.
//! The study's count against its own range of decision rates (B2.2, the
//! scripts on its machine) gives the published range (analysis/claims.toml).

use super::model;
use limitbench_analysis::claims::Alternative;
use limitbench_analysis::experiments::ts_member::rows::Row;
use limitbench_analysis::stats::{Summary, mean_cs, mean_cs_method};
use limitbench_analysis::table::f;
use limitbench_analysis::{ClaimSpec, Measured};

/// The model's count for a run at `rate` decisions/s: what a log of
/// `limit` millisecond entries admits (see the module).
pub fn model_count(limit: u64, rate: f64) -> f64 {
    model::expected_ratio(limit, rate, 0.0) * limit as f64
}

/// The time (ms) the model's log takes to fill at `rate`: `limit` occupied
/// milliseconds, each occupied with probability 1 - e^-m.
pub fn fill_ms(limit: u64, rate: f64) -> f64 {
    let m = rate / 1000.0;
    limit as f64 / (1.0 - (-m).exp())
}

/// admitted / the model's count at the trial's own decision rate.
pub fn per_model(r: &Row) -> f64 {
    r.admitted as f64 / model_count(r.limit, r.achieved_rate_per_s)
}

/// One duration's runs: the value, its interval, the display and the
/// validity checks that failed.
struct Runs {
    value: f64,
    interval: (f64, f64),
    n: usize,
    display: String,
    invalid: Vec<String>,
}

fn runs(rs: &[&Row]) -> Runs {
    let v: Vec<f64> = rs.iter().map(|r| per_model(r)).collect();
    let s = Summary::of(&v);
    let ci = mean_cs(&v);
    let counts: Vec<f64> = rs.iter().map(|r| r.admitted as f64).collect();
    let c = Summary::of(&counts);
    let cci = mean_cs(&counts);
    let rate = Summary::of(&rs.iter().map(|r| r.achieved_rate_per_s).collect::<Vec<_>>()).mean;
    let (limit, window, dur) = (rs[0].limit, rs[0].window_ms, rs[0].duration_s);
    let fill = fill_ms(limit, rate);
    let display = format!(
        "{} of the model's count (95% CI {}..{}, n={}); beside it the count: {} admitted (95% CI {}..{}), {}x the limit of {}, {} s runs at {} decisions/s, where the model's log fills in {} ms and admits {}",
        f(s.mean, 3),
        f(ci.0, 3),
        f(ci.1, 3),
        s.n,
        f(c.mean, 0),
        f(cci.0, 0),
        f(cci.1, 0),
        f(c.mean / limit as f64, 1),
        limit,
        f(dur, 1),
        f(rate, 0),
        f(fill, 0),
        f(model_count(limit, rate), 0)
    );
    let mut invalid = Vec::new();
    if rs.iter().any(|r| r.zcard_end < r.limit as i64) {
        invalid.push(format!(
            "a run ended before its log filled to the limit ({} entries): the count is the run's length, not the bug's",
            limit
        ));
    }
    if (window as f64) < fill || dur * 1000.0 < fill {
        invalid.push(format!(
            "the model needs the window ({window} ms) and the run ({} ms) to outlast the log's fill time ({} ms): entries would expire or the run stop first",
            f(dur * 1000.0, 0),
            f(fill, 0)
        ));
    }
    Runs {
        value: s.mean,
        interval: ci,
        n: s.n,
        display,
        invalid,
    }
}

/// B5.2: admitted / the model's count of the timestamp member in the
/// closed-loop run closest to the study's 2 s (the run length is unstated:
/// the closest to B5.1's 2 s); other durations as alternatives.
pub fn b52(closed: &[&Row], spec: Option<&ClaimSpec>) -> Option<Measured> {
    let rs: Vec<&Row> = closed
        .iter()
        .copied()
        .filter(|r| r.member == "redis-ms")
        .collect();
    let best = rs
        .iter()
        .map(|r| r.duration_s)
        .min_by(|a, b| (a - 2.0).abs().partial_cmp(&(b - 2.0).abs()).unwrap())?;
    let at = |d: f64| -> Vec<&Row> { rs.iter().copied().filter(|r| r.duration_s == d).collect() };
    let main = runs(&at(best));
    let limit = rs[0].limit;
    let mut m = Measured::new("B5.2", vec![main.value], main.display, "ts-member.csv mode=closed member=redis-ms: admitted / model count at achieved_rate_per_s; model: analyze/closed.rs")
        .intervals(vec![main.interval], mean_cs_method(main.n))
        .setting(&[("closed_duration_s", &format!("{}", best))])
        .model(format!(
            "a log of millisecond members fills after {limit} occupied Redis milliseconds; flat out at D decisions/s every millisecond is occupied, so it fills in about {limit} ms and admits (L - 1) m / (1 - e^-m) + 1 (m = D / 1000), about D x {} s: the count is the server's rate times the fill time{}",
            f(limit as f64 / 1000.0, 1),
            spec.map(|c| format!(". The study's figure, so read: {}", c.published_text))
            .unwrap_or_default()
        ))
        .note("machine claim: the count scales with the decision rate Redis sustains (ours beside the study's 51,000); judged on the count over the model's count at the run's own rate. Below 1 here: a likely cause is that the fill period, in which every decision writes (ZADD), runs slower than the run's mean, which includes the cheaper refusals after the log filled");
    for why in main.invalid {
        m = m.invalid(why);
    }
    let mut others: Vec<f64> = rs.iter().map(|r| r.duration_s).collect();
    others.sort_by(|a, b| a.partial_cmp(b).unwrap());
    others.dedup();
    for d in others.into_iter().filter(|d| *d != best) {
        let r = runs(&at(d));
        let mut a = Alternative::new(
            &[("closed_duration_s", &format!("{d}"))],
            vec![r.value],
            r.display,
        )
        .intervals(vec![r.interval])
        .trials(r.n);
        for why in r.invalid {
            a = a.invalid(why);
        }
        m = m.alternative(a);
    }
    Some(m)
}
