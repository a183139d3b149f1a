//! B5.1-B5.4 from the rows: each claim's value with the main sender, its 95%
//! interval, and the same quantity with every other sender swept
//! (`sender_tick_ms`, `connections`: the same spelling in B5.1 and B5.3, so
//! one setting must serve both).

use rand::{RngExt, SeedableRng};

use super::{OpenRows, Sender, fill_share, filled, mean_some, model, pct, ratios};
use limitbench_analysis::claims::Alternative;
use limitbench_analysis::experiments::ts_member::rows::Row;
use limitbench_analysis::stats::{Summary, mean_ci, mean_ci_method};
use limitbench_analysis::table::f;
use limitbench_analysis::{ClaimSpec, Measured};

/// The rates B5.1 reports, in its order.
pub const B51_RATES: [f64; 3] = [100.0, 1000.0, 10000.0];

/// The setting pairs of a sender, borrowed for `Measured::setting`.
fn pairs<'a>(s: &'a [(&'static str, String); 2]) -> [(&'static str, &'a str); 2] {
    [(s[0].0, s[0].1.as_str()), (s[1].0, s[1].1.as_str())]
}

/// B5.1's quantity with one sender: per rate the mean admitted / limit of
/// redis-ms, its bootstrap interval, and a display with the model and the
/// achieved same-ms shares beside it. None if a B5.1 rate is missing.
struct PerRate {
    values: Vec<f64>,
    intervals: Vec<(f64, f64)>,
    display: String,
    filled: bool,
    n_min: usize,
}

fn b51_at(o: &OpenRows, s: Sender) -> Option<PerRate> {
    let mut p = PerRate {
        values: vec![],
        intervals: vec![],
        display: String::new(),
        filled: true,
        n_min: usize::MAX,
    };
    let mut disp = Vec::new();
    for &rate in &B51_RATES {
        let rs = o.at("redis-ms", rate, s);
        if rs.is_empty() {
            return None;
        }
        let v = ratios(&rs);
        let sum = Summary::of(&v);
        let (lo, hi) = mean_ci(&v);
        p.values.push(sum.mean);
        p.intervals.push((lo, hi));
        p.filled &= filled(&rs);
        p.n_min = p.n_min.min(sum.n);
        let (trial, fill, redis) = (
            mean_some(&rs, |r| r.send_same_ms_share),
            mean_some(&rs, |r| fill_share(r, false)),
            mean_some(&rs, |r| fill_share(r, true)),
        );
        // Runs from before the shares were recorded: say nothing of them.
        let shares = if trial.is_finite() {
            format!(
                "; same-ms share of sends {} over the trial, {} until the log filled; of Redis runs {} until filled",
                pct(trial),
                pct(fill),
                pct(redis)
            )
        } else {
            String::new()
        };
        disp.push(format!(
            "{}/s: {} (95% CI {}..{}, n={}; Poisson model {}{})",
            f(rate, 0),
            f(sum.mean, 2),
            f(lo, 2),
            f(hi, 2),
            sum.n,
            f(model::expected_ratio(rs[0].limit, rate, s.tick_ms()), 2),
            shares
        ));
    }
    p.display = disp.join("; ");
    Some(p)
}

/// B5.1: admitted / limit of the timestamp member (redis-ms) at each of
/// `B51_RATES` with the main sender, every other sender as an alternative.
pub fn b51(o: &OpenRows) -> Option<Measured> {
    let main = o.main?;
    let Some(p) = b51_at(o, main) else {
        // A size without every rate: the means where they ran, NaN elsewhere.
        let values = B51_RATES
            .iter()
            .map(|r| Summary::of(&ratios(&o.main("redis-ms", *r))).mean)
            .collect();
        return Some(Measured::new(
            "B5.1",
            values,
            "not every B5.1 rate ran at this size",
            "ts-member.csv mode=open member=redis-ms, main sender",
        ));
    };
    let limit = o.rows[0].limit;
    let mut m = Measured::new(
        "B5.1",
        p.values,
        format!("{}: {}", main.text(), p.display),
        "ts-member.csv mode=open pacing=poisson member=redis-ms, per sender_tick_ms and drivers; model: analyze/model.rs",
    )
    .intervals(p.intervals, mean_ci_method(p.n_min))
    .setting(&pairs(&main.setting()))
    .condition("the log filled to the limit in every trial", p.filled)
    .sweep_figure("b5_1-sender-sweep")
    .model(format!(
        "a precise Poisson sender puts Poisson(rate x 1 ms) requests in each millisecond, so the log admits (limit - 1) x m / (1 - e^-m) + 1: {} x the limit at 100, 1,000 and 10,000/s; a sender on a timer tick T groups Poisson(rate x T) requests (m = rate x T)",
        B51_RATES
            .iter()
            .map(|r| f(model::expected_ratio(limit, *r, 0.0), 2))
            .collect::<Vec<_>>()
            .join(", ")
    ))
    .note("same-ms share: the share of sends (of Redis runs) in the millisecond of the send (run) before, measured per trial from the send times (Redis's TIME); over the fill period (up to the last admission) it implies admitted / limit = ((limit - 1) / (1 - share) + 1) / limit whatever made the sends clump");
    for s in o.senders("redis-ms") {
        if s == main {
            continue;
        }
        if let Some(a) = b51_at(o, s) {
            m = m.alternative(
                Alternative::new(&pairs(&s.setting()), a.values, a.display)
                    .intervals(a.intervals)
                    .condition("the log filled to the limit in every trial", a.filled),
            );
        }
    }
    Some(m)
}

/// Whether `mean` at `rate` lies within B5.1's tolerance of the published
/// value there (`None`: not a B5.1 rate).
pub fn b51_band(spec: &ClaimSpec, rate: f64, mean: f64) -> Option<&'static str> {
    let i = B51_RATES.iter().position(|x| *x == rate)?;
    let (p, tol) = (spec.published.at(i), spec.tolerance.at(i));
    Some(if (mean - p).abs() <= tol * p {
        "within"
    } else {
        "outside"
    })
}

/// B5.2: admissions of the timestamp member in the closed-loop run closest
/// to the study's 2 s; other durations as alternatives.
pub fn b52(closed: &[&Row]) -> Option<Measured> {
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
    let show = |rs: &[&Row]| {
        let v: Vec<f64> = rs.iter().map(|r| r.admitted as f64).collect();
        let s = Summary::of(&v);
        let lim = rs[0].limit as f64;
        let ci = mean_ci(&v);
        let text = format!(
            "{} admitted (95% CI {}..{}, n={}), {}x the limit, {} s runs at {} decisions/s",
            f(s.mean, 0),
            f(ci.0, 0),
            f(ci.1, 0),
            s.n,
            f(s.mean / lim, 1),
            f(rs[0].duration_s, 1),
            f(super::mean_of(rs, |r| r.achieved_rate_per_s), 0)
        );
        let over = rs.iter().all(|r| r.admitted as f64 > 10.0 * lim);
        (s, ci, text, over)
    };
    let main = at(best);
    let (s, ci, text, over) = show(&main);
    let mut m = Measured::new(
        "B5.2",
        vec![s.mean],
        text,
        "ts-member.csv mode=closed member=redis-ms",
    )
    .intervals(vec![ci], mean_ci_method(s.n))
    .setting(&[("closed_duration_s", &format!("{}", best))])
    .condition("over 10x the limit in every trial", over)
    .note("machine claim: the count scales with the decision rate Redis sustains here");
    let mut others: Vec<f64> = rs.iter().map(|r| r.duration_s).collect();
    others.sort_by(|a, b| a.partial_cmp(b).unwrap());
    others.dedup();
    for d in others.into_iter().filter(|d| *d != best) {
        let (s, ci, text, over) = show(&at(d));
        m = m.alternative(
            Alternative::new(
                &[("closed_duration_s", &format!("{d}"))],
                vec![s.mean],
                text,
            )
            .intervals(vec![ci])
            .condition("over 10x the limit in every trial", over),
        );
    }
    Some(m)
}

/// B5.3's quantity with one sender: the largest relative difference (%)
/// over the rates between the mean over-admission of redis-ms and caller-ms,
/// with a two-sample bootstrap interval, and the per-rate display.
pub struct ClockDiff {
    pub value: f64,
    pub interval: (f64, f64),
    display: String,
    caller_less: usize,
    rates: usize,
}

fn over_of(rs: &[&Row]) -> Vec<f64> {
    rs.iter().map(|r| r.over_limit as f64).collect()
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// |mean(a) - mean(b)| / mean(a) x 100, the largest over the rates' pairs.
fn largest_diff(pairs: &[(Vec<f64>, Vec<f64>)]) -> f64 {
    pairs
        .iter()
        .map(|(a, b)| (mean(a) - mean(b)).abs() / mean(a) * 100.0)
        .fold(f64::MIN, f64::max)
}

pub fn clock_diff(o: &OpenRows, s: Sender) -> Option<ClockDiff> {
    clock_diff_at(o, s, &o.rates)
}

/// `clock_diff` over the given rates only (one rate: that rate's difference).
pub fn clock_diff_at(o: &OpenRows, s: Sender, rates: &[f64]) -> Option<ClockDiff> {
    let mut pairs = Vec::new();
    let mut shown = Vec::new();
    let mut caller_less = 0;
    for &rate in rates {
        let (a, b) = (
            over_of(&o.at("redis-ms", rate, s)),
            over_of(&o.at("caller-ms", rate, s)),
        );
        if a.is_empty() || b.is_empty() || mean(&a) <= 0.0 {
            continue;
        }
        let d = (mean(&a) - mean(&b)).abs() / mean(&a) * 100.0;
        caller_less += (mean(&b) < mean(&a)) as usize;
        shown.push(format!(
            "{}/s: {} vs {} over ({}%)",
            f(rate, 0),
            f(mean(&a), 1),
            f(mean(&b), 1),
            f(d, 1)
        ));
        pairs.push((a, b));
    }
    if pairs.is_empty() {
        return None;
    }
    let value = largest_diff(&pairs);
    // Resample each member's trials at each rate independently (a fixed seed,
    // so a rerun of the analysis gives the same interval).
    let mut rng = rand::rngs::ChaCha8Rng::seed_from_u64(0x6235_3362_6f6f_7473);
    let mut stats: Vec<f64> = (0..2000)
        .map(|_| {
            let re: Vec<(Vec<f64>, Vec<f64>)> = pairs
                .iter()
                .map(|(a, b)| {
                    let pick = |v: &Vec<f64>, rng: &mut rand::rngs::ChaCha8Rng| -> Vec<f64> {
                        (0..v.len())
                            .map(|_| v[rng.random_range(0..v.len())])
                            .collect()
                    };
                    (pick(a, &mut rng), pick(b, &mut rng))
                })
                .collect();
            largest_diff(&re)
        })
        .filter(|x| x.is_finite())
        .collect();
    stats.sort_by(|a, b| a.total_cmp(b));
    let q = |p: f64| limitbench_analysis::stats::quantile(&stats, p);
    Some(ClockDiff {
        value,
        interval: (q(0.025), q(0.975)),
        display: format!("largest {}%: {}", f(value, 1), shown.join("; ")),
        caller_less,
        rates: pairs.len(),
    })
}

/// B5.3: the clocks' difference with the main sender, every other sender
/// both members ran with as an alternative.
pub fn b53(o: &OpenRows) -> Option<Measured> {
    let main = o.main?;
    let d = clock_diff(o, main)?;
    let n = o.main("redis-ms", o.rates[0]).len();
    let mut m = Measured::new(
        "B5.3",
        vec![d.value],
        d.display,
        "ts-member.csv mode=open pacing=poisson: mean over_limit, member=redis-ms vs caller-ms, per sender_tick_ms and drivers",
    )
    .intervals(
        vec![d.interval],
        format!("two-sample percentile bootstrap (2,000 resamples) of the largest difference, about {n} trials per member and rate"),
    )
    .setting(&pairs(&main.setting()))
    .sweep_figure("b5_3-clock-sweep")
    .model(format!(
        "the caller stamps a request when it sends it; Redis when it runs it, and requests that queue at Redis run back to back, so more of them share a Redis millisecond than shared a send millisecond (fill period, main sender, redis-ms: {})",
        o.rates
            .iter()
            .map(|r| {
                let rs = o.main("redis-ms", *r);
                format!(
                    "{}/s: {} of Redis runs vs {} of sends",
                    f(*r, 0),
                    pct(mean_some(&rs, |x| fill_share(x, true))),
                    pct(mean_some(&rs, |x| fill_share(x, false)))
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    ))
    .note(format!(
        "caller-ms over-admitted less than redis-ms at {} of {} rates; a likely cause: requests that queue at Redis run back to back inside one Redis millisecond, while the caller stamps them when it sends, so a sender whose sends already share a millisecond (a timer tick) leaves less for the queue to add",
        d.caller_less, d.rates
    ));
    for s in o.senders("redis-ms") {
        if s == main {
            continue;
        }
        if let Some(a) = clock_diff(o, s) {
            m = m.alternative(
                Alternative::new(&pairs(&s.setting()), vec![a.value], a.display)
                    .intervals(vec![a.interval]),
            );
        }
    }
    Some(m)
}

/// B5.4: the worst over-admission of the exact members (microsecond
/// timestamp, request id), every mode and cell.
pub fn b54(rows: &[Row]) -> Option<Measured> {
    let exact: Vec<&Row> = rows
        .iter()
        .filter(|r| r.member == "redis-us" || r.member == "request-id")
        .collect();
    let worst = exact.iter().map(|r| r.over_limit).max()?;
    let worst_of = |m: &str| {
        exact
            .iter()
            .filter(|r| r.member == m)
            .map(|r| r.over_limit)
            .max()
            .map(|v| v.to_string())
            .unwrap_or_else(|| "n/a".into())
    };
    let w = worst.max(0) as f64;
    let main = OpenRows::of(rows).main;
    let setting = main.map(|s| s.setting());
    let mut m = Measured::new(
        "B5.4",
        vec![w],
        format!(
            "max over limit: redis-us {}, request-id {} ({} trials)",
            worst_of("redis-us"),
            worst_of("request-id"),
            exact.len()
        ),
        "ts-member.csv member in {redis-us, request-id}, every mode and cell",
    )
    .intervals(
        vec![(w, w)],
        format!(
            "the maximum over all {} trials (a count; no sampling interval)",
            exact.len()
        ),
    )
    .condition(
        "no errors in those trials",
        exact.iter().all(|r| r.errors == 0),
    );
    if let Some(s) = &setting {
        m = m.setting(&pairs(s));
    }
    Some(m)
}
