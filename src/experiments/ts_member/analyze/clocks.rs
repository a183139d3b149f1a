//! B5.3, "whose clock it was made no difference": per rate, the difference
//! of the mean admitted / limit between the millisecond member stamped by
//! Redis (`redis-ms`) and by the caller (`caller-ms`), with the difference
//! of the two means' confidence sequences; judged per rate against the precision at which the
//! study reports that rate's figure (B5.1's tolerances), every rate inside
//! for `reproduced`.

use super::claims::{B51_RATES, UNFILLED, pairs};
use super::{OpenRows, Sender, fill_share, filled, mean_some, pct, ratios};
use limitbench_analysis::Measured;
use limitbench_analysis::claims::Alternative;
use limitbench_analysis::experiments::ts_member::rows::Row;
use limitbench_analysis::table::f;

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// The 95% interval of mean(a) - mean(b) a verdict reads: each mean's
/// confidence sequence at half the error, the difference of their ends
/// (`stats::mean_diff_cs_at`), valid however often the cells are looked at.
pub fn diff_cs(a: &[f64], b: &[f64]) -> (f64, f64) {
    diff_cs_at(a, b, 0.95)
}

/// [`diff_cs`] at another two-sided `level`.
pub fn diff_cs_at(a: &[f64], b: &[f64], level: f64) -> (f64, f64) {
    limitbench_analysis::stats::mean_diff_cs_at(a, b, level)
}

/// The interval a rate's clock difference is judged on: pooled when the
/// measuring sessions agree on it, else the hull of the sessions' own
/// differences (both members measured in each), with the reason.
fn sessions_diff_interval(
    o: &OpenRows,
    ra: &[&Row],
    rb: &[&Row],
    what: &str,
    pooled: (f64, f64),
) -> ((f64, f64), Option<String>, bool) {
    use limitbench_analysis::sessions::{Estimate, judged_interval};
    use std::collections::BTreeMap;
    let mut by: BTreeMap<usize, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    for r in ra {
        by.entry(o.session(r))
            .or_default()
            .0
            .push(r.admitted_per_limit);
    }
    for r in rb {
        by.entry(o.session(r))
            .or_default()
            .1
            .push(r.admitted_per_limit);
    }
    let est: Vec<Estimate> = by
        .iter()
        .filter(|(_, (a, b))| a.len() >= 2 && b.len() >= 2)
        .map(|(s, (a, b))| (*s, mean(a) - mean(b), diff_cs(a, b), a.len() + b.len()))
        .collect();
    // The same rows disagreeing on either member's level (B5.1's ruling on
    // redis-ms) measured different things in each session: keep the
    // sessions apart then too, whatever their differences read.
    let level = |pick: fn(&(Vec<f64>, Vec<f64>)) -> &Vec<f64>| -> Vec<Estimate> {
        by.iter()
            .filter(|(_, ab)| pick(ab).len() >= 2)
            .map(|(s, ab)| {
                let v = pick(ab);
                (*s, mean(v), limitbench_analysis::stats::mean_cs(v), v.len())
            })
            .collect()
    };
    use limitbench_analysis::sessions::estimates_disagree;
    let levels: Vec<String> = [
        ("redis-ms", level(|ab| &ab.0)),
        ("caller-ms", level(|ab| &ab.1)),
    ]
    .iter()
    .filter_map(|(m, e)| estimates_disagree(&format!("{m} admitted / limit"), e, 3))
    .collect();
    let (iv, why) = judged_interval(
        what,
        &est,
        |s, lv| diff_cs_at(&by[&s].0, &by[&s].1, lv),
        pooled,
        3,
    );
    if why.is_some() || levels.is_empty() {
        let disagree = estimates_disagree(what, &est, 3).is_some() || !levels.is_empty();
        return (iv, why, disagree);
    }
    // The difference agrees but a level does not: the hull, with that reason.
    let lv = limitbench_analysis::sessions::level(est.len());
    let hull = est.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |h, e| {
        let iv = diff_cs_at(&by[&e.0].0, &by[&e.0].1, lv);
        (h.0.min(iv.0), h.1.max(iv.1))
    });
    (
        hull,
        Some(format!(
            "{what}: the sessions' rows disagree ({}); judged on the hull of the sessions' {:.1}% intervals of the difference, {:.3}..{:.3}",
            levels.join("; "),
            100.0 * lv,
            hull.0,
            hull.1
        )),
        true,
    )
}

/// B5.3's quantity with one sender: per B5.1 rate, mean admitted / limit of
/// redis-ms minus caller-ms (NaN where a member did not run), its interval.
pub struct ClockDiff {
    pub values: Vec<f64>,
    pub intervals: Vec<(f64, f64)>,
    pub display: String,
    /// Rates at which caller-ms admitted less than redis-ms, of those run.
    pub caller_less: usize,
    pub rates: usize,
    /// Fewest trials of either member at a rate.
    pub n_min: usize,
    pub filled: bool,
    /// Rates whose measuring sessions disagree, judged on their hull.
    pub kept_apart: Vec<String>,
    /// Per rate: is its interval such a hull?
    pub apart: Vec<bool>,
    /// Some rate's sessions disagree (disjoint 95% intervals of the
    /// difference or of a member's level), not only kept apart.
    pub disagree: bool,
}

pub fn clock_diff(o: &OpenRows, s: Sender) -> Option<ClockDiff> {
    let mut d = ClockDiff {
        values: vec![],
        intervals: vec![],
        display: String::new(),
        caller_less: 0,
        rates: 0,
        n_min: usize::MAX,
        filled: true,
        kept_apart: vec![],
        apart: vec![],
        disagree: false,
    };
    let mut shown = Vec::new();
    for rate in B51_RATES {
        let (ra, rb) = (o.at("redis-ms", rate, s), o.at("caller-ms", rate, s));
        if ra.is_empty() || rb.is_empty() {
            d.values.push(f64::NAN);
            d.intervals.push((f64::NAN, f64::NAN));
            d.apart.push(false);
            continue;
        }
        let (a, b) = (ratios(&ra), ratios(&rb));
        let v = mean(&a) - mean(&b);
        let what = format!("{}/s, redis-ms minus caller-ms", f(rate, 0));
        let (iv, apart, disagree) = sessions_diff_interval(o, &ra, &rb, &what, diff_cs(&a, &b));
        d.disagree |= disagree;
        let label = if apart.is_some() {
            "sessions' hull"
        } else {
            "95% CI"
        };
        d.apart.push(apart.is_some());
        d.kept_apart.extend(apart);
        d.rates += 1;
        d.caller_less += usize::from(mean(&b) < mean(&a));
        d.n_min = d.n_min.min(a.len()).min(b.len());
        d.filled &= filled(&ra) && filled(&rb);
        shown.push(format!(
            "{}/s: {} - {} = {} ({label} {}..{}, n={}+{})",
            f(rate, 0),
            f(mean(&a), 3),
            f(mean(&b), 3),
            f(v, 3),
            f(iv.0, 3),
            f(iv.1, 3),
            a.len(),
            b.len()
        ));
        d.values.push(v);
        d.intervals.push(iv);
    }
    if d.rates == 0 {
        return None;
    }
    d.display = format!(
        "admitted / limit, redis-ms minus caller-ms: {}",
        shown.join("; ")
    );
    Some(d)
}

/// B5.3: the clocks' difference per rate with the main sender, every other
/// sender both members ran with as an alternative (the same detail names
/// as B5.1, so one sender serves both).
pub fn b53(o: &OpenRows, spec: Option<&limitbench_analysis::ClaimSpec>) -> Option<Measured> {
    let main = o.main?;
    let d = clock_diff(o, main)?;
    let per_rate = spec
        .map(|c| {
            let t: Vec<String> = B51_RATES
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    let st =
                        super::claims::value_status(c, i, d.values[i], d.intervals[i], d.n_min)
                            .kept_apart(d.apart[i]);
                    format!("{}/s: {}", f(*r, 0), st.text(3))
                })
                .collect();
            format!("per rate (main sender): {}. ", t.join("; "))
        })
        .unwrap_or_default();
    let mut m = Measured::new(
        "B5.3",
        d.values,
        d.display,
        "ts-member.csv mode=open pacing=poisson: mean admitted_per_limit, member=redis-ms minus caller-ms, per rate, per sender_tick_ms and drivers",
    )
    .intervals(
        d.intervals,
        format!(
            "95% confidence sequences of the two means at half the error each (asymptotic, Waudby-Smith et al. 2024; for repeated looks), their difference, over {} trials or more per member and rate",
            d.n_min
        ),
    )
    .trials(d.n_min)
    .setting(&pairs(&main.setting()))
    .sessions_apart(!d.kept_apart.is_empty())
    .sessions_disagree(d.disagree)
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
        "{}{per_rate}caller-ms over-admitted less than redis-ms at {} of {} rates; a likely cause: requests that queue at Redis run back to back inside one Redis millisecond, while the caller stamps them when it sends",
        limitbench_analysis::sessions::kept_apart(&d.kept_apart),
        d.caller_less,
        d.rates
    ));
    if !d.filled {
        m = m.invalid(UNFILLED);
    }
    for s in o.senders("redis-ms") {
        if s == main {
            continue;
        }
        if let Some(a) = clock_diff(o, s) {
            let mut alt = Alternative::new(&pairs(&s.setting()), a.values, a.display)
                .intervals(a.intervals)
                .trials(a.n_min);
            if !a.filled {
                alt = alt.invalid(UNFILLED);
            }
            m = m.alternative(alt);
        }
    }
    Some(m)
}
