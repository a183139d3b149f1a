//! What an analyzer hands the judge for one claim: the value at the setup as
//! the study states it (our defaults for what it leaves unstated), its 95%
//! interval over trials, and the same quantity at other values of the
//! unstated details it depends on (the sensitivity sweep), so the judge can
//! say `reproduced`, `reproduced-with-assumption` (with the detail named),
//! `not-reproduced` or `inconclusive` (with the range tried).

/// Values of unstated details, e.g. `[("member_len", "26")]`.
pub type Setting = Vec<(String, String)>;

/// Build a `Setting` from string pairs.
pub fn setting(pairs: &[(&str, &str)]) -> Setting {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A claim's explanation as the analysis computes it from the run: a
/// `cause` of a few words (the findings table's cause cell) and the `text`,
/// the computed sentence with its numbers (printed first in the claim's
/// note). Set by the analyzer that computes it ([`Measured::explained`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Explanation {
    pub cause: String,
    pub text: String,
}

/// A value an analyzer computed for one claim, with its evidence.
#[derive(Debug, Clone, Default)]
pub struct Measured {
    pub id: String,
    /// The value(s) the check compares with the published one(s), elementwise.
    pub values: Vec<f64>,
    /// How to show it: e.g. `128.4 (min 119, max 139, n=20)`.
    pub display: String,
    /// File and filter the value comes from.
    pub evidence: String,
    /// Conditions that must hold too (for shape/behaviour claims, they decide).
    pub conditions: Vec<(String, bool)>,
    /// Conditions the data neither confirm nor refute (an interval across
    /// a shape check's band): the claim is at best `inconclusive`.
    pub undecided: Vec<String>,
    /// What differs and the likely reason, for the report (esp. on a fail).
    pub note: String,
    /// 95% interval of each value over trials (same order as `values`);
    /// empty: the check is applied to the point value alone.
    pub intervals: Vec<(f64, f64)>,
    /// How the intervals were computed, e.g. "bootstrap 95% of the mean, n=20".
    pub interval_method: String,
    /// The unstated details `values` were measured at (our defaults).
    pub setting: Setting,
    /// The same quantity at other values of those details.
    pub sweep: Vec<Alternative>,
    /// File stem under `figures/` of the figure that draws the sweep.
    pub sweep_figure: Option<String>,
    /// Why no swept value reproduces, if none does: a short model.
    pub model: String,
    /// Trials behind `intervals` (None: read from `interval_method`, e.g.
    /// "over 20 trials"; none there either: the value is no sample).
    pub trials: Option<usize>,
    /// Validity checks of the measurement that failed for the cells these
    /// values rest on (Redis not saturated, the schedule late past its
    /// bound, other processes on the cores): the values are no finding, so
    /// the claim is `inconclusive` with these reasons, whatever they read.
    pub invalid: Vec<String>,
    /// Some values' intervals are the hull of measuring sessions kept
    /// apart (`sessions::judged_interval`), whether or not they disagree:
    /// more trials in one session do not narrow another's interval.
    pub sessions_apart: bool,
    /// Some of those sessions truly disagree: their own 95% intervals are
    /// disjoint (`sessions::estimates_disagree`). Only then do the verdict
    /// and the findings say "the measuring sessions disagree".
    pub sessions_disagree: bool,
    /// What the analysis computed to explain this claim's value or verdict
    /// (see [`Explanation`]); `None` where it computes nothing, and the
    /// report falls back to the claim's static `cause` in claims.toml.
    pub explanation: Option<Explanation>,
    /// The cells these values rest on: the schedule's cell ids
    /// (`Sweep::cell_id`, `schedule.csv`'s `cell`), or row cell ids that
    /// carry a strategy before one (`<strategy>/<schedule cell>`: bursts,
    /// skew), or `<experiment>::<cell>` for another experiment's cell. Most
    /// analyzers name their rows' cells, which are the schedule's; where
    /// rows name finer cells (cost's variants, stalls' sizes) they name the
    /// schedule cell the row ran in. The disturbance step
    /// (`crate::disturbance`) marks the claim invalid when one of them has
    /// disturbed committed trials; empty: every cell of the experiment
    /// counts (conservative, and said so).
    pub rests_on: Vec<String>,
    /// The value is no measurement of any cell (a count of trials, a run
    /// time: the informational A0, B0): no disturbance of a cell touches it.
    pub no_cells: bool,
    /// An assumption the intervals rest on that the judge cannot see in
    /// them (a value mapped from intervals that took the one-value rule,
    /// as A1.2's |mean - formula| at 0): carried onto the verdict as its
    /// assumption, like the one-value rule the judge detects itself.
    pub interval_assumption: Option<String>,
    /// The quantities band conditions judged, where recorded
    /// ([`Measured::band_value`]): a figure rings one where it, not
    /// `values`, decides the verdict (B6.1's throughput identity).
    pub band_values: Vec<BandValue>,
}

/// A quantity a band condition judged: its value and 95% interval, the
/// band it had to lie in, and its unit (the claim's is `values`').
#[derive(Debug, Clone)]
pub struct BandValue {
    pub value: f64,
    pub interval: (f64, f64),
    pub band: (f64, f64),
    pub unit: String,
}

impl Measured {
    pub fn new(
        id: &str,
        values: Vec<f64>,
        display: impl Into<String>,
        evidence: impl Into<String>,
    ) -> Self {
        Measured {
            id: id.into(),
            values,
            display: display.into(),
            evidence: evidence.into(),
            ..Default::default()
        }
    }
    pub fn condition(mut self, what: impl Into<String>, holds: bool) -> Self {
        self.conditions.push((what.into(), holds));
        self
    }
    /// A condition judged on an interval against a band: holds when the
    /// whole interval is inside, fails when it is wholly outside, undecided
    /// otherwise (a shape check near its edge is not a pass).
    pub fn band_condition(
        mut self,
        what: impl Into<String>,
        iv: (f64, f64),
        band: (f64, f64),
    ) -> Self {
        let what = what.into();
        let (lo, hi) = (iv.0.min(iv.1), iv.0.max(iv.1));
        if !(lo.is_finite() && hi.is_finite()) || hi < band.0 || lo > band.1 {
            self.conditions.push((what, false));
        } else if lo >= band.0 && hi <= band.1 {
            self.conditions.push((what, true));
        } else {
            self.undecided.push(format!("{ACROSS_BAND} {what}"));
        }
        self
    }
    /// [`Measured::band_condition`] on a quantity whose value is kept
    /// (in `band_values`, for the figures), in `unit`.
    pub fn band_value(
        mut self,
        what: impl Into<String>,
        value: f64,
        iv: (f64, f64),
        band: (f64, f64),
        unit: &str,
    ) -> Self {
        self.band_values.push(BandValue {
            value,
            interval: iv,
            band,
            unit: unit.into(),
        });
        self.band_condition(what, iv, band)
    }
    /// The note; an explanation set before stays first in it.
    pub fn note(mut self, n: impl Into<String>) -> Self {
        self.note = n.into();
        if let Some(e) = &self.explanation {
            self.note = join_note(&e.text, &self.note);
        }
        self
    }
    /// The computed explanation ([`Explanation`]): kept on the claim for
    /// the findings and printed first in its note (before a note set
    /// earlier or later).
    pub fn explained(mut self, cause: impl Into<String>, text: impl Into<String>) -> Self {
        let e = Explanation {
            cause: cause.into(),
            text: text.into(),
        };
        self.note = join_note(&e.text, &self.note);
        self.explanation = Some(e);
        self
    }
    /// The 95% intervals of `values`, in order, and how they were computed.
    pub fn intervals(mut self, iv: Vec<(f64, f64)>, method: impl Into<String>) -> Self {
        self.intervals = iv;
        self.interval_method = method.into();
        self
    }
    /// An assumption the intervals rest on (see the field).
    pub fn interval_assumption(mut self, a: Option<String>) -> Self {
        self.interval_assumption = a;
        self
    }
    /// The unstated details the main values were measured at.
    pub fn setting(mut self, pairs: &[(&str, &str)]) -> Self {
        self.setting = setting(pairs);
        self
    }
    /// One more point of the sensitivity sweep.
    pub fn alternative(mut self, a: Alternative) -> Self {
        self.sweep.push(a);
        self
    }
    pub fn sweep_figure(mut self, stem: impl Into<String>) -> Self {
        self.sweep_figure = Some(stem.into());
        self
    }
    pub fn model(mut self, why: impl Into<String>) -> Self {
        self.model = why.into();
        self
    }
    /// The number of trials behind the intervals.
    pub fn trials(mut self, n: usize) -> Self {
        self.trials = Some(n);
        self
    }
    /// A validity check of the measurement failed: `inconclusive`, with
    /// `why` as the reason, never a finding (`Measured::invalid`).
    pub fn invalid(mut self, why: impl Into<String>) -> Self {
        self.invalid.push(why.into());
        self
    }
    /// Mark the intervals as resting on sessions kept apart (when `apart`).
    pub fn sessions_apart(mut self, apart: bool) -> Self {
        self.sessions_apart |= apart;
        self
    }
    /// Mark some of those sessions as disagreeing (disjoint 95% intervals).
    pub fn sessions_disagree(mut self, disagree: bool) -> Self {
        self.sessions_apart |= disagree;
        self.sessions_disagree |= disagree;
        self
    }
    /// The cells the values rest on (`rests_on`), deduplicated, in order.
    pub fn rests_on<S: AsRef<str>>(mut self, cells: impl IntoIterator<Item = S>) -> Self {
        add_cells(&mut self.rests_on, cells);
        self
    }
    /// The value rests on no cell (`no_cells`).
    pub fn no_cells(mut self) -> Self {
        self.no_cells = true;
        self
    }
    /// Trials behind the intervals: as set, else as `interval_method` says.
    pub fn trial_count(&self) -> Option<usize> {
        self.trials.or_else(|| trials_in(&self.interval_method))
    }
    /// The conditions that do not hold, in order.
    pub fn failed_conditions(&self) -> Vec<&str> {
        self.conditions
            .iter()
            .filter(|c| !c.1)
            .map(|c| c.0.as_str())
            .collect()
    }
}

/// `first` then `rest` as one note, a sentence each.
fn join_note(first: &str, rest: &str) -> String {
    match (first.trim().is_empty(), rest.trim().is_empty()) {
        (true, _) => rest.to_string(),
        (false, true) => first.to_string(),
        (false, false) => format!("{}. {rest}", first.trim_end_matches('.')),
    }
}

/// The trial count an interval's description gives: the first number after
/// "over", "over all", "of" or "about", or written "n=N" ("bootstrap 95%
/// interval of the mean over 5 trials" -> 5). None when it names none.
pub fn trials_in(method: &str) -> Option<usize> {
    let words: Vec<&str> = method.split_whitespace().collect();
    for (i, w) in words.iter().enumerate() {
        let w = w.trim_matches(|c: char| !c.is_ascii_alphanumeric() && c != '=');
        if let Some(n) = w.strip_prefix("n=").and_then(|x| x.parse().ok()) {
            return Some(n);
        }
        let prev = if i > 0 {
            words[i - 1].trim_matches(|c: char| !c.is_ascii_alphanumeric())
        } else {
            ""
        };
        if matches!(prev, "over" | "all" | "of" | "about") {
            if let Ok(n) = w.parse() {
                return Some(n);
            }
        }
    }
    None
}

/// The values measured for claim `id` among `out` (empty: not measured).
pub fn values_of(out: &[Measured], id: &str) -> Vec<f64> {
    out.iter()
        .find(|m| m.id == id)
        .map(|m| m.values.clone())
        .unwrap_or_default()
}

/// Value `i` measured for claim `id` with `d` decimals, as a finding quotes
/// it (`n/a`: not measured).
pub fn value_text(out: &[Measured], id: &str, i: usize, d: usize) -> String {
    values_of(out, id)
        .get(i)
        .map(|v| crate::table::f(*v, d))
        .unwrap_or_else(|| "n/a".into())
}

/// The claim's quantity at one other setting of the unstated details.
#[derive(Debug, Clone, Default)]
pub struct Alternative {
    pub setting: Setting,
    pub values: Vec<f64>,
    /// 95% intervals of `values` (empty: point values).
    pub intervals: Vec<(f64, f64)>,
    pub display: String,
    /// Conditions that must hold at this setting too.
    pub conditions: Vec<(String, bool)>,
    /// Trials behind `intervals` (None: as many as the main value's).
    pub trials: Option<usize>,
    /// Validity checks that failed at this setting: it neither reproduces
    /// the claim nor counts as a finding (`Measured::invalid`).
    pub invalid: Vec<String>,
    /// The cells this setting's values rest on (as `Measured::rests_on`);
    /// empty: the claim's main cells decide for it.
    pub rests_on: Vec<String>,
}

/// Append cells not yet listed.
fn add_cells<S: AsRef<str>>(to: &mut Vec<String>, cells: impl IntoIterator<Item = S>) {
    for c in cells {
        let c = c.as_ref();
        if !to.iter().any(|x| x == c) {
            to.push(c.to_string());
        }
    }
}

impl Alternative {
    pub fn new(pairs: &[(&str, &str)], values: Vec<f64>, display: impl Into<String>) -> Self {
        Alternative {
            setting: setting(pairs),
            values,
            display: display.into(),
            ..Default::default()
        }
    }
    pub fn intervals(mut self, iv: Vec<(f64, f64)>) -> Self {
        self.intervals = iv;
        self
    }
    pub fn condition(mut self, what: impl Into<String>, holds: bool) -> Self {
        self.conditions.push((what.into(), holds));
        self
    }
    pub fn trials(mut self, n: usize) -> Self {
        self.trials = Some(n);
        self
    }
    /// The cells this setting's values rest on.
    pub fn rests_on<S: AsRef<str>>(mut self, cells: impl IntoIterator<Item = S>) -> Self {
        add_cells(&mut self.rests_on, cells);
        self
    }
    /// A validity check failed at this setting.
    pub fn invalid(mut self, why: impl Into<String>) -> Self {
        self.invalid.push(why.into());
        self
    }
    /// The details this setting changes from `defaults` (an alternative may
    /// restate our defaults beside what it varies).
    pub fn own(&self, defaults: &Setting) -> Setting {
        self.setting
            .iter()
            .filter(|kv| !defaults.contains(kv))
            .cloned()
            .collect()
    }
}

/// "member_len=26, backoff=full-jitter".
pub fn setting_text(s: &Setting) -> String {
    s.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// How `band_condition` words an interval across a band's edge (the
/// judge tells such an undecided clause from one that cannot be tested).
pub const ACROSS_BAND: &str = "the interval reaches across the band of";

#[cfg(test)]
mod tests {
    use super::trials_in;

    #[test]
    fn the_trial_count_is_read_from_the_interval_description() {
        assert_eq!(
            trials_in("bootstrap 95% interval of the mean over 20 trials"),
            Some(20)
        );
        assert_eq!(
            trials_in("mean: bootstrap; worst: interval of the max (over 12 trials)"),
            Some(12)
        );
        assert_eq!(
            trials_in("the maximum over all 395 trials of every setting"),
            Some(395)
        );
        assert_eq!(
            trials_in("the worst of 3 runs (no interval is taken)"),
            Some(3)
        );
        assert_eq!(
            trials_in("largest difference, about 4 trials per member"),
            Some(4)
        );
        assert_eq!(trials_in("41.0 (95% 41.0-41.0, n=3)"), Some(3));
        assert_eq!(trials_in("none: a count over every trial"), None);
    }
}
