//! B5.1-B5.4 from the rows: each claim's value with the main sender, its 95%
//! interval, and the same quantity with every other sender swept
//! (`sender_tick_ms`, `connections`: the same spelling in B5.1 and B5.3, so
//! one setting must serve both).

use super::{OpenRows, Sender, fill_share, filled, mean_some, model, pct, ratios};
use limitbench_analysis::claims::Alternative;
use limitbench_analysis::experiments::ts_member::rows::Row;
use limitbench_analysis::stats::{Summary, mean_cs, mean_cs_method};
use limitbench_analysis::table::f;
use limitbench_analysis::{ClaimSpec, Measured};

/// The rates B5.1 reports, in its order.
pub const B51_RATES: [f64; 3] = [100.0, 1000.0, 10000.0];

/// The setting pairs of a sender, borrowed for `Measured::setting`.
pub fn pairs<'a>(s: &'a [(&'static str, String); 2]) -> [(&'static str, &'a str); 2] {
    [(s[0].0, s[0].1.as_str()), (s[1].0, s[1].1.as_str())]
}

/// B5.1's quantity with one sender: per rate the mean admitted / limit of
/// redis-ms, its 95% interval (a confidence sequence), and a display with the model and the
/// achieved same-ms shares beside it. None if a B5.1 rate is missing.
pub(super) struct PerRate {
    pub values: Vec<f64>,
    pub intervals: Vec<(f64, f64)>,
    display: String,
    filled: bool,
    pub n_min: usize,
    /// Rates whose measuring sessions were kept apart, judged on their hull.
    kept_apart: Vec<String>,
    /// Per rate: is its interval such a hull?
    pub apart: Vec<bool>,
    /// Some rate's sessions disagree (disjoint 95% intervals), not only
    /// kept apart.
    pub disagree: bool,
}

/// The interval a rate's mean is judged on: pooled over its trials when
/// their measuring sessions agree, else the hull of the sessions' intervals
/// (`limitbench_analysis::sessions::judged_interval`), with the reason,
/// and whether the sessions disagree (disjoint 95% intervals).
pub fn sessions_interval(
    o: &OpenRows,
    rows: &[&Row],
    what: &str,
    pooled: (f64, f64),
) -> ((f64, f64), Option<String>, bool) {
    use limitbench_analysis::sessions::{BySession, judged_mean_interval, means_disagree};
    let mut by = BySession::new();
    for r in rows {
        by.entry(o.session(r))
            .or_default()
            .push(r.admitted_per_limit);
    }
    let (iv, why) = judged_mean_interval(what, &by, pooled, 3);
    (iv, why, means_disagree(&by))
}

pub(super) fn b51_at(o: &OpenRows, s: Sender) -> Option<PerRate> {
    let mut p = PerRate {
        values: vec![],
        intervals: vec![],
        display: String::new(),
        filled: true,
        n_min: usize::MAX,
        kept_apart: vec![],
        apart: vec![],
        disagree: false,
    };
    let mut disp = Vec::new();
    for &rate in &B51_RATES {
        let rs = o.at("redis-ms", rate, s);
        if rs.is_empty() {
            return None;
        }
        let v = ratios(&rs);
        let sum = Summary::of(&v);
        let what = format!("{}/s, admitted / limit", f(rate, 0));
        let ((lo, hi), apart, disagree) = sessions_interval(o, &rs, &what, mean_cs(&v));
        p.disagree |= disagree;
        p.apart.push(apart.is_some());
        p.kept_apart.extend(apart);
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
            "{}/s: {} ({} {}..{}, n={}; Poisson model {}{})",
            f(rate, 0),
            f(sum.mean, 2),
            if p.apart.last() == Some(&true) {
                "sessions' hull"
            } else {
                "95% CI"
            },
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

/// How one value stands against its own tolerance band (value `i` of the
/// claim): the verdict it alone would get, and the trials that would decide
/// it if it is undecided. The equivalence test of the judge, per value:
/// inside when the whole interval (widened to hold the point) is inside the
/// band, not reproduced when wholly outside, else undecided; then
/// `n_needed = n (h / d)^2`, h the interval's half-width, d the point's
/// distance to the nearest band edge (docs/claims-review.md, "Power").
pub struct ValueStatus {
    pub verdict: &'static str,
    pub band: (f64, f64),
    /// Trials that would decide an undecided value (None: decided; infinite:
    /// the point sits on the edge).
    pub n_needed: Option<f64>,
}

pub fn value_status(spec: &ClaimSpec, i: usize, v: f64, iv: (f64, f64), n: usize) -> ValueStatus {
    let (_, region, _) = limitbench_analysis::claims::pass_region(spec, i);
    let (a, b) = region.unwrap_or((f64::NAN, f64::NAN));
    let (lo, hi) = (iv.0.min(v), iv.1.max(v));
    let eps = 1e-9;
    let (verdict, n_needed) = if !(v.is_finite() && lo.is_finite() && hi.is_finite()) {
        ("not measured", None)
    } else if n < limitbench_analysis::claims::MIN_TRIALS {
        ("too few trials", None)
    } else if lo >= a - eps && hi <= b + eps {
        ("reproduced", None)
    } else if hi < a - eps || lo > b + eps {
        ("not-reproduced", None)
    } else {
        let h = (hi - lo) / 2.0;
        let d = (v - a).abs().min((v - b).abs());
        ("undecided", Some(n as f64 * (h / d).powi(2)))
    };
    ValueStatus {
        verdict,
        band: (a, b),
        n_needed,
    }
}

impl ValueStatus {
    /// An undecided value whose interval is the hull of sessions kept
    /// apart (`apart`): no number of pooled trials decides it (NaN).
    pub fn kept_apart(mut self, apart: bool) -> Self {
        if apart && self.verdict == "undecided" {
            self.n_needed = Some(f64::NAN);
        }
        self
    }

    /// "undecided: the point is 0.007 from the band's edge, about 70 trials
    /// would decide it" / "not-reproduced (wholly outside)".
    pub fn text(&self, digits: usize) -> String {
        match (self.verdict, self.n_needed) {
            ("reproduced", _) => "reproduced (wholly inside the band)".into(),
            ("not-reproduced", _) => "not-reproduced (wholly outside the band)".into(),
            ("undecided", Some(n)) if n.is_nan() => format!(
                "undecided: the hull of the measuring sessions kept apart crosses the band's edge ({}..{}); more trials in one session do not narrow another's interval",
                f(self.band.0, digits),
                f(self.band.1, digits)
            ),
            ("undecided", Some(n)) if !n.is_finite() || n > 10_000.0 => format!(
                "undecidable as defined: the point sits on the band's edge ({}..{}), no affordable number of trials decides it",
                f(self.band.0, digits),
                f(self.band.1, digits)
            ),
            ("undecided", Some(n)) => format!(
                "undecided: the interval crosses the band's edge ({}..{}); about {} trials would decide it at this spread",
                f(self.band.0, digits),
                f(self.band.1, digits),
                n.ceil()
            ),
            (v, _) => v.into(),
        }
    }
}

/// B5.1 per rate at the main sender: each rate's verdict on its own and
/// which rates decide the claim (the conjunction). Empty without the spec.
pub fn b51_per_rate(
    spec: &ClaimSpec,
    values: &[f64],
    iv: &[(f64, f64)],
    n: usize,
    apart: &[bool],
) -> (Vec<ValueStatus>, String) {
    let st: Vec<ValueStatus> = (0..B51_RATES.len())
        .map(|i| {
            value_status(
                spec,
                i,
                values.get(i).copied().unwrap_or(f64::NAN),
                iv.get(i).copied().unwrap_or((f64::NAN, f64::NAN)),
                n,
            )
            .kept_apart(apart.get(i) == Some(&true))
        })
        .collect();
    let rates_with = |v: &str| -> Vec<String> {
        st.iter()
            .zip(B51_RATES)
            .filter(|(s, _)| s.verdict == v)
            .map(|(_, r)| format!("{}/s", f(r, 0)))
            .collect()
    };
    let (out, inside, open) = (
        rates_with("not-reproduced"),
        rates_with("reproduced"),
        rates_with("undecided"),
    );
    let decides = if !out.is_empty() {
        format!(
            "the claim (all three rates, as published) is decided by {}: wholly outside its band there, whatever the other rates give",
            out.join(" and ")
        )
    } else if open.is_empty() {
        "every rate is inside its band: the claim is reproduced at all three".into()
    } else {
        format!(
            "no rate is wholly outside its band; {} undecided, so the claim is undecided{}",
            open.join(" and "),
            if inside.is_empty() {
                String::new()
            } else {
                format!(" ({} inside)", inside.join(" and "))
            }
        )
    };
    let digits = [3, 3, 2];
    let per: Vec<String> = st
        .iter()
        .zip(B51_RATES)
        .enumerate()
        .map(|(i, (s, r))| format!("{}/s: {}", f(r, 0), s.text(digits[i])))
        .collect();
    let text = format!("per rate (main sender): {}; {}", per.join("; "), decides);
    (st, text)
}

/// B5.1: admitted / limit of the timestamp member (redis-ms) at each of
/// `B51_RATES` with the main sender, every other sender as an alternative;
/// with the spec, the note gives each rate's verdict and which decides.
/// A trial whose log did not fill to the limit was too short to settle its
/// admissions: a failed validity check (inconclusive), not a finding.
pub fn b51(o: &OpenRows, spec: Option<&ClaimSpec>) -> Option<Measured> {
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
    let per_rate = spec
        .map(|c| b51_per_rate(c, &p.values, &p.intervals, p.n_min, &p.apart).1)
        .map(|t| format!("{t}. "))
        .unwrap_or_default();
    let mut m = Measured::new(
        "B5.1",
        p.values,
        format!("{}: {}", main.text(), p.display),
        "ts-member.csv mode=open pacing=poisson member=redis-ms, per sender_tick_ms and drivers; model: analyze/model.rs",
    )
    .intervals(p.intervals, mean_cs_method(p.n_min))
    .setting(&pairs(&main.setting()))
    .sessions_apart(!p.kept_apart.is_empty())
    .sessions_disagree(p.disagree)
    .sweep_figure("b5_1-sender-sweep")
    .model(format!(
        "a precise Poisson sender puts Poisson(rate x 1 ms) requests in each millisecond, so the log admits (limit - 1) x m / (1 - e^-m) + 1: {} x the limit at 100, 1,000 and 10,000/s; a sender on a timer tick T groups Poisson(rate x T) requests (m = rate x T)",
        B51_RATES
            .iter()
            .map(|r| f(model::expected_ratio(limit, *r, 0.0), 2))
            .collect::<Vec<_>>()
            .join(", ")
    ))
    .note(format!("{}{per_rate}same-ms share: the share of sends (of Redis runs) in the millisecond of the send (run) before, measured per trial from the send times (Redis's TIME); over the fill period (up to the last admission) it implies admitted / limit = ((limit - 1) / (1 - share) + 1) / limit whatever made the sends clump", limitbench_analysis::sessions::kept_apart(&p.kept_apart)));
    if !p.filled {
        m = m.invalid(UNFILLED);
    }
    for s in o.senders("redis-ms") {
        if s == main {
            continue;
        }
        if let Some(a) = b51_at(o, s) {
            let mut alt =
                Alternative::new(&pairs(&s.setting()), a.values, a.display).intervals(a.intervals);
            if !a.filled {
                alt = alt.invalid(UNFILLED);
            }
            m = m.alternative(alt);
        }
    }
    Some(m)
}

/// The validity check of every open-loop value: a trial whose log did not
/// fill was too short to settle its admissions.
pub const UNFILLED: &str = "a trial ended before its log filled to the limit: its admissions were not settled (the run was too short), so the value is no measurement of the bug";

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
