//! The summary figure that opens the report and the README's results: one
//! row per claim, grouped by verdict (in the judge's order,
//! [`Verdict::all`]). Each row: a short label with the claim's ID, the
//! published value and ours as judged ("A2.1 58 -> 22"); a mark on the
//! ratio strip (ours / published on a log axis, with a slot for 0, our 95%
//! interval and the band where the claim's check passes) or, for a shape or
//! behaviour claim, on the conditions strip (the fraction of its conditions
//! that hold); the settings tried; and for a claim not reproduced or
//! inconclusive a short cause ([`cause`]). An inconclusive claim's mark has
//! a `?` beside it; one whose measurement is invalid has no mark. Rows are built from the judged claims only; the
//! figure reads no CSV of its own.

use limitbench_plot::forest::{COLUMNS, Forest, ForestGroup, ForestRow, ROW_TEXT};
use limitbench_plot::text::text_width;

use crate::claims::{
    Check, Judged, MIN_TRIALS, Measured, Outcome, Verdict, outcome, pass_region, setting_text,
};
use crate::figure::num;
use limitbench_base::error::Result;

/// The file stem of the summary figure under `figures/`.
pub const SUMMARY_FIGURE: &str = "summary-claims";

/// The values and 95% intervals a claim's verdict was judged on: at the
/// assumed setting for a claim that reproduces only there, else at our
/// defaults.
pub fn judged_values(j: &Judged) -> (Vec<f64>, Vec<(f64, f64)>) {
    let Some(m) = &j.measured else {
        return (vec![], vec![]);
    };
    if !j.assumption.is_empty()
        && let Some(a) = m
            .sweep
            .iter()
            .find(|a| crate::claims::setting_text(&a.own(&m.setting)) == j.assumption)
    {
        return (a.values.clone(), a.intervals.clone());
    }
    (m.values.clone(), m.intervals.clone())
}

/// A verdict's heading in the figure.
fn heading(v: Verdict) -> String {
    match v.as_str() {
        "pass" | "reproduced" => "reproduced as stated".into(),
        "pass-inferred" | "reproduced-with-assumption" => {
            "reproduced with an assumption (named under settings: a setting the study leaves unstated, or every trial reading one value)".into()
        }
        "fail" | "not-reproduced" => "not reproduced".into(),
        other => other.replace('-', " "),
    }
}

/// Look of a verdict's group (the chart library's palette: green circle,
/// blue triangle, vermillion cross, orange diamond, grey plus).
fn group_look(v: Verdict) -> usize {
    use limitbench_plot::style::{colour, look_with, marker};
    match v.as_str() {
        "pass" | "reproduced" => look_with(colour::BLUISH_GREEN, marker::CIRCLE),
        "pass-inferred" | "reproduced-with-assumption" => look_with(colour::BLUE, marker::TRIANGLE),
        "fail" | "not-reproduced" => look_with(colour::VERMILLION, marker::CROSS),
        "inconclusive" => look_with(colour::GOLD, marker::DIAMOND),
        _ => look_with(colour::GREY, marker::PLUS),
    }
}

/// The published value a ratio divides by: a range's middle, else value `i`.
fn published_at(j: &Judged, i: usize) -> f64 {
    let c = &j.spec;
    if c.check == Check::InRange {
        (c.published.at(0) + c.published.at(1)) / 2.0
    } else {
        c.published.at(i)
    }
}

/// The published value `i` as the label shows it: a range `lo-hi`, a
/// bound `≤p` or `≥p`, else the number.
fn published_label(j: &Judged, i: usize) -> String {
    let c = &j.spec;
    let p = c.published.at(i);
    match c.check {
        Check::InRange => format!("{}-{}", num(c.published.at(0)), num(c.published.at(1))),
        Check::AtMost => format!("≤{}", num(p)),
        Check::AtLeast => format!("≥{}", num(p)),
        _ => num(p),
    }
}

/// The index of the value that decides a claim comparing several: the
/// least margin between its 95% interval and its band (negative outside):
/// the one farthest outside for a claim not reproduced, the one nearest an
/// edge for one reproduced. Margins of different values compare as
/// fractions of what they are measured against: the published value (a
/// range's middle, from its band edges), else the band's half-width, so
/// every margin is finite.
fn decisive(j: &Judged, values: &[f64], intervals: &[(f64, f64)]) -> usize {
    let margin = |i: usize| {
        pass_region(&j.spec, i)
            .1
            .map(|(lo, hi)| {
                let (a, b) = intervals.get(i).copied().unwrap_or((values[i], values[i]));
                let (a, b) = (a.min(values[i]), b.max(values[i]));
                let half = (hi - lo) / 2.0;
                let scale = [published_at(j, i).abs(), half]
                    .into_iter()
                    .find(|s| s.is_finite() && *s > 0.0)
                    .unwrap_or(1.0);
                let m = (a - lo).min(hi - b) / scale;
                if m.is_nan() { f64::INFINITY } else { m }
            })
            .unwrap_or(f64::INFINITY)
    };
    (0..values.len())
        .min_by(|a, b| margin(*a).total_cmp(&margin(*b)))
        .unwrap_or(0)
}

/// The first of `texts` that fits the figure's cause column whole.
fn first_fitting(texts: Vec<String>) -> String {
    // Two lines of the cause column (the forest wraps a cause).
    let room = 2.0 * (COLUMNS.cause.1 - COLUMNS.cause.0) as f64;
    texts
        .iter()
        .find(|t| text_width(t, ROW_TEXT) <= room)
        .or(texts.last())
        .cloned()
        .unwrap_or_default()
}

/// A `not-reproduced` claim's cause in a few words, from what the judge
/// used: the simplest swept setting that reproduces it (a stated detail
/// changed, so a finding, not a setting to adopt: the report's "What did
/// not reproduce" says so in full), else where ours lies against the band
/// at every setting tried, or how many of its conditions fail. An
/// `inconclusive` claim's: why its data do not decide ([`undecided_cause`]).
/// Empty for any other verdict.
pub fn cause(j: &Judged) -> String {
    let (c, Some(m)) = (&j.spec, &j.measured) else {
        return String::new();
    };
    if j.verdict == Verdict::Inconclusive {
        return undecided_cause(j, m);
    }
    if j.verdict != Verdict::NotReproduced {
        return String::new();
    }
    let trials = |a: Option<usize>| a.or_else(|| m.trial_count());
    // The simplest: the fewest details changed from our defaults.
    if let Some(a) = m
        .sweep
        .iter()
        .filter(|a| {
            a.invalid.is_empty()
                && outcome(c, &a.values, &a.intervals, &a.conditions, trials(a.trials))
                    == Outcome::Inside
        })
        .min_by_key(|a| a.own(&m.setting).len())
    {
        let own = a.own(&m.setting);
        let stated: Vec<String> = own
            .iter()
            .filter(|(d, _)| c.stated_details.contains(d))
            .filter_map(|(d, _)| m.setting.iter().find(|(k, _)| k == d))
            .map(|(_, v)| v.clone())
            .collect();
        let at = setting_text(&own);
        let mut texts = Vec::new();
        if !stated.is_empty() {
            texts.push(format!("only at {at} (stated: {})", stated.join(", ")));
        }
        texts.push(format!("only at {at}"));
        texts.push("only at another setting (see report)".into());
        return first_fitting(texts);
    }
    let settings = 1 + m.sweep.len();
    let failing = m.conditions.iter().filter(|x| !x.1).count();
    if matches!(c.check, Check::Behaviour | Check::Shape) || failing > 0 {
        return first_fitting(vec![format!(
            "{failing} of {} conditions fail",
            m.conditions.len()
        )]);
    }
    let (values, intervals) = judged_values(j);
    if values.is_empty() {
        return String::new();
    }
    let i = decisive(j, &values, &intervals);
    let side = match pass_region(c, i).1 {
        Some((_, hi)) if values[i] > hi => "above",
        Some((lo, _)) if values[i] < lo => "below",
        _ => "outside",
    };
    let all = if settings == 1 {
        "(nothing swept)".to_string()
    } else {
        format!("at all {settings} settings")
    };
    first_fitting(vec![
        format!("{side} the band {all}"),
        format!("{side} the band"),
    ])
}

/// The first clause of a reason (up to ` (`, `: ` or `; `): what it says
/// before its numbers and details.
fn head(reason: &str) -> &str {
    let end = [" (", ": ", "; "]
        .iter()
        .filter_map(|p| reason.find(p))
        .min()
        .unwrap_or(reason.len());
    reason[..end].trim()
}

/// The first validity check that failed, not a disturbance (Redis not
/// saturated, the probe's baseline too noisy, sessions that disagree): the
/// claim's values are then no finding and its row has no mark.
pub fn invalid_reason(m: &Measured) -> Option<&str> {
    let disturbed = crate::disturbance::DISTURBED;
    m.invalid
        .iter()
        .find(|w| !w.starts_with(disturbed))
        .map(|w| head(w))
}

/// Why an `inconclusive` claim's data do not decide, in a few words, from
/// what the judge recorded, first that applies: an invalid measurement
/// (its reason), disturbed trials (how many), too few trials (n=k), an
/// interval across the band's edge (borderline), else the first condition
/// the data leave undecided.
fn undecided_cause(j: &Judged, m: &Measured) -> String {
    // In the Findings' order (report/findings.rs `class`): an invalid
    // measurement first (its row has no mark), then disturbed cells,
    // then sessions that disagree.
    if let Some(reason) = invalid_reason(m) {
        return format!("invalid: {reason}");
    }
    let disturbed = crate::disturbance::DISTURBED;
    if let Some(w) = m.invalid.iter().find(|w| w.starts_with(disturbed)) {
        let k = w[disturbed.len()..].split(' ').next().unwrap_or("");
        return match k.parse::<usize>() {
            Ok(k) => format!("disturbed: {k} trial(s) kept"),
            Err(_) => "disturbed trials".into(),
        };
    }
    if m.sessions_disagree {
        return "measuring sessions disagree".into();
    }
    if let Some(n) = m.trial_count().filter(|n| *n < MIN_TRIALS) {
        return format!("too few trials: n={n} <{MIN_TRIALS}");
    }
    if j.borderline {
        return "borderline: interval across the band's edge".into();
    }
    let why = m.undecided.first().map(|w| head(w)).unwrap_or("");
    let mut texts = Vec::new();
    if !why.is_empty() {
        texts.push(format!("undecided: {why}"));
    }
    texts.push("undecided (the report says why)".into());
    first_fitting(texts)
}

/// An assumed setting in its first words (its setting, or its reading
/// before the numbers): the report's claims table has it whole.
fn assumption_head(a: &str) -> &str {
    let end = [": ", ", ", " ("]
        .iter()
        .filter_map(|p| a.find(p))
        .min()
        .unwrap_or(a.len());
    a[..end].trim()
}

/// The notes column of a claim: settings tried, the assumed setting (its
/// first words); the cause column says why an inconclusive claim's data
/// decide nothing.
fn settings_note(j: &Judged) -> String {
    let settings = j.measured.as_ref().map(|m| 1 + m.sweep.len()).unwrap_or(0);
    let mut note = match settings {
        0 => "not measured".to_string(),
        1 => "1 setting".to_string(),
        n => format!("{n} settings"),
    };
    if !j.assumption.is_empty() {
        note += &format!("; at {}", assumption_head(&j.assumption));
    }
    note
}

/// A shape or behaviour claim's row: the fraction of its conditions that
/// hold, on the conditions strip (all must hold to pass); its label shows
/// the published numbers and ours when the claim has both (up to two),
/// else `all -> k/n held`.
fn conditions_row(j: &Judged, m: &Measured, note: String) -> ForestRow {
    let c = &j.spec;
    let held = m.conditions.iter().filter(|x| x.1).count();
    let n = m.conditions.len();
    let published = c.published.values();
    let numbers = c.check == Check::Shape
        && !m.values.is_empty()
        && m.values.len() == published.len()
        && published.len() <= 2
        && published.iter().all(|p| *p != 0.0);
    let join = |v: &[f64]| v.iter().map(|x| num(*x)).collect::<Vec<_>>().join(", ");
    let label = if numbers {
        format!("{} {} -> {}", c.id, join(&published), join(&m.values))
    } else {
        format!("{} all -> {held}/{n} held", c.id)
    };
    ForestRow {
        label,
        fraction: (n > 0).then(|| held as f64 / n as f64),
        fraction_band: Some((1.0, 1.0)),
        note,
        cause: cause(j),
        placeholder: if n == 0 {
            "no conditions measured".into()
        } else {
            String::new()
        },
        ..Default::default()
    }
}

/// What an invalid claim's strip says (after `invalid: `); its cause
/// column names the check that failed.
pub const INVALID_MARK: &str = "no finding, no mark (the check that failed: at right)";

/// The row of one claim ([`marked_row`]); an `inconclusive` claim's mark
/// is drawn undecided (a `?` beside it, wherever it lies), or, when its
/// measurement is invalid ([`invalid_reason`]), not at all: its values are
/// no finding, so the strip says `invalid: ` [`INVALID_MARK`] and the cause
/// `invalid: <reason>`.
fn row(j: &Judged) -> ForestRow {
    let mut r = marked_row(j);
    if j.verdict == Verdict::Inconclusive {
        match j.measured.as_ref().and_then(invalid_reason) {
            Some(_) => {
                (r.value, r.interval, r.band) = (None, None, None);
                (r.fraction, r.fraction_band) = (None, None);
                r.placeholder = format!("invalid: {}", INVALID_MARK);
            }
            None => r.undecided = true,
        }
    }
    r
}

/// The marks of one claim: the value that decides ([`decisive`]) as a ratio
/// to its published value; a published value of 0 (no ratio) as
/// (ours - published + s) / s with s the band's half-width, or 1 when the
/// band is a point or open: ours equal to it lies at 1, a band edge at 2.
fn marked_row(j: &Judged) -> ForestRow {
    let c = &j.spec;
    let mut note = settings_note(j);
    let Some(m) = &j.measured else {
        return ForestRow {
            label: format!("{} not measured", c.id),
            note,
            placeholder: "not run at this size".into(),
            ..Default::default()
        };
    };
    let (values, intervals) = judged_values(j);
    if matches!(c.check, Check::Behaviour | Check::Shape) || values.is_empty() {
        return conditions_row(j, m, note);
    }
    let i = decisive(j, &values, &intervals);
    if values.len() > 1 {
        note += &format!("; value {}/{}", i + 1, values.len());
    }
    let (p, v) = (published_at(j, i), values[i]);
    let band = pass_region(c, i).1;
    let (shift, scale) = if p.is_finite() && p > 0.0 {
        (0.0, p)
    } else {
        let s = band
            .map(|(lo, hi)| [hi - p, p - lo])
            .into_iter()
            .flatten()
            .filter(|s| s.is_finite() && *s > 0.0)
            .fold(f64::NAN, f64::max);
        let s = if s.is_nan() { 1.0 } else { s };
        (s - p, s)
    };
    let drawn = |x: f64| (x + shift) / scale;
    ForestRow {
        label: format!("{} {} -> {}", c.id, published_label(j, i), num(v)),
        value: Some(drawn(v)),
        interval: intervals.get(i).map(|(a, b)| (drawn(*a), drawn(*b))),
        band: band.map(|(lo, hi)| (drawn(lo), drawn(hi))),
        note,
        cause: cause(j),
        ..Default::default()
    }
}

/// The summary figure of `rows`: the reproduction claims by verdict, then
/// those counted apart (the study's own description, the harness's policy).
pub fn summary_forest(rows: &[Judged], run: &str) -> Forest {
    let mut groups: Vec<ForestGroup> = Verdict::all()
        .iter()
        .map(|v| {
            let mine: Vec<ForestRow> = rows
                .iter()
                .filter(|j| j.verdict == *v && j.spec.tally == "reproduction")
                .map(row)
                .collect();
            ForestGroup {
                label: format!("{} ({})", heading(*v), mine.len()),
                look: group_look(*v),
                rows: mine,
            }
        })
        .filter(|g| !g.rows.is_empty())
        .collect();
    let apart: Vec<ForestRow> = rows
        .iter()
        .filter(|j| j.spec.tally != "reproduction")
        .map(|j| {
            let mut r = row(j);
            r.note = format!("{}; {}", j.verdict.as_str(), r.note);
            r
        })
        .collect();
    if !apart.is_empty() {
        groups.push(ForestGroup {
            label: format!(
                "apart from the tally: the study's description, our policy ({})",
                apart.len()
            ),
            look: {
                use limitbench_plot::style::{colour, look_with, marker};
                look_with(colour::GREY, marker::PLUS)
            },
            rows: apart,
        });
    }
    let n: usize = groups.iter().map(|g| g.rows.len()).sum();
    Forest {
        name: SUMMARY_FIGURE.into(),
        title: format!("Every claim at a glance: ours against published, {n} claims, run `{run}`"),
        caption: "One row per claim, grouped by verdict. Left: the claim, the published value and ours as judged \
                  (a-b: a range; ≤, ≥: a bound). Ratio strip (log): ours / published (a range's middle), our 95% \
                  interval over trials divided alike, and in grey where the claim's check passes (a band open to one \
                  side reaches the axis edge); a ratio of 0 is drawn in the slot at 0, left of the break. A published \
                  0 has no ratio: its row draws (ours + s) / s, s the band's half-width (1 for a band that \
                  ends at 0), so ours equal to it lies on the line at 1 and the band's edge at 2. A claim that compares several \
                  values is drawn at the one that decides its verdict (value k/n under settings): the one farthest \
                  outside its band when one is wholly outside, else the one whose interval comes nearest its band's \
                  edge. Conditions strip (0..1): shape and behaviour claims, judged on their conditions, at the \
                  fraction that holds (grey at 1: all must). Inconclusive: a ? beside the mark (the data do not decide, \
                  even where the mark lies in the band); no mark where the measurement is invalid (its values are no \
                  finding), the cause names the check that failed. Settings: how many settings of the details the \
                  study leaves unstated were measured, and the assumed setting of a claim reproduced only there (its \
                  first words; the claims table has it whole). Cause: for a claim not reproduced, the setting that \
                  would reproduce it, or where ours lies at every setting tried (the report's \"What did not \
                  reproduce\" has the whole reasoning); for an inconclusive one, why its data do not decide (invalid, \
                  disturbed trials, too few trials, an interval across the band's edge). A positive value outside \
                  the axis is an arrow with its ratio."
            .into(),
        x_label: "ours / published (log scale)".into(),
        one_label: "published".into(),
        fraction_label: "conditions held".into(),
        label_heading: "claim: published -> ours".into(),
        note_heading: "settings tried".into(),
        cause_heading: "cause (not reproduced; inconclusive)".into(),
        groups,
    }
}

/// Write the summary figure into the run's figures/ and return its markdown.
pub fn write_summary(rows: &[Judged], run: &str, figures_dir: &std::path::Path) -> Result<String> {
    let f = summary_forest(rows, run);
    f.write_to(figures_dir)?;
    let n = SUMMARY_FIGURE;
    Ok(format!(
        "![{}](figures/{n}.png)\n\n*Figure {n}.* {} ([SVG](figures/{n}.svg), [numbers drawn](figures/{n}.csv))\n\n",
        f.title.replace(['[', ']', '`'], ""),
        f.caption
    ))
}

/// The executive summary's line on the claims the run's time stopped, not
/// its data: those of `until_decisive.unfunded_claims` (their next look did
/// not fit in the rounds' budget) and `capped_claims` (at the cap per
/// cell) still `inconclusive`, with the command of a decisive run. Empty
/// when the rounds stopped no claim (or did not run).
pub fn budget_text(manifest: &serde_json::Value, rows: &[Judged]) -> String {
    let u = &manifest["until_decisive"];
    let still = |key: &str| -> Vec<String> {
        u[key]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str())
            .filter(|id| {
                rows.iter()
                    .any(|j| j.spec.id == *id && j.verdict == Verdict::Inconclusive)
            })
            .map(str::to_string)
            .collect()
    };
    let (unfunded, capped) = (still("unfunded_claims"), still("capped_claims"));
    if unfunded.is_empty() && capped.is_empty() {
        return String::new();
    }
    let mut parts = Vec::new();
    if !unfunded.is_empty() {
        parts.push(format!(
            "{} whose next look did not fit in the rounds' budget ({}): {}",
            unfunded.len(),
            u["budget_basis"].as_str().unwrap_or("?"),
            unfunded.join(", ")
        ));
    }
    if !capped.is_empty() {
        parts.push(format!(
            "{} at the cap of {} trials per cell: {}",
            capped.len(),
            u["cap_per_cell"],
            capped.join(", ")
        ));
    }
    format!(
        "**Stopped by the run's time or cap, not by its data:** {} claim(s) stay `inconclusive`, {}. A run without the \
         time budget gives every judged cell its looks up to the cap: \
         `limitbench run all --size {} --until-decisive --round-budget 0`, with `--max-trials N` for claims whose \
         power asks for more (docs/running.md); a claim whose note says disturbed or invalid needs a clean or valid \
         measurement, which more trials of the same cells may not give.\n\n",
        unfunded.len() + capped.len(),
        parts.join("; "),
        manifest["size"].as_str().unwrap_or("full")
    )
}

#[cfg(test)]
mod tests;
