//! The summary figure that opens the report and the README's results: one
//! row per claim, ours / published on a log axis with our 95% interval and
//! the band where the claim's check passes, grouped by verdict (in the
//! judge's order, [`Verdict::all`]), the number of settings tried beside
//! each row. Rows are built from the judged claims only; the figure reads
//! no CSV of its own.

use limitbench_plot::forest::{Forest, ForestGroup, ForestRow};

use crate::claims::{Check, Judged, MIN_TRIALS, Verdict};
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
            "reproduced with an assumption (named at the right: a setting the study leaves unstated, or every trial reading one value)".into()
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
        "inconclusive" => look_with(colour::ORANGE, marker::DIAMOND),
        _ => look_with(colour::GREY, marker::PLUS),
    }
}

/// The row of one claim: the value that decides (the one with the least
/// margin to its band, when the claim compares several: farthest outside,
/// or nearest the edge when all are inside) as a ratio to its published
/// value.
fn row(j: &Judged) -> ForestRow {
    let c = &j.spec;
    let settings = j.measured.as_ref().map(|m| 1 + m.sweep.len()).unwrap_or(0);
    let mut note = match settings {
        0 => "not measured".to_string(),
        1 => "1 setting".to_string(),
        n => format!("{n} settings"),
    };
    if !j.assumption.is_empty() {
        note += &format!("; at {}", j.assumption);
    }
    // A claim resting on disturbed trials decides nothing: say why at once.
    if j.measured.as_ref().is_some_and(|m| {
        m.invalid
            .iter()
            .any(|w| w.starts_with(crate::disturbance::DISTURBED))
    }) {
        note += "; disturbed trials";
    }
    // An inconclusive row says when it is so for too few trials: then the
    // data do not decide, whatever the drawn interval looks like.
    if let Some(n) = j
        .measured
        .as_ref()
        .and_then(|m| m.trial_count())
        .filter(|n| j.verdict == Verdict::Inconclusive && *n < MIN_TRIALS)
    {
        note += &format!("; n={n} <{MIN_TRIALS}");
    }
    let label = format!("{} {}", c.id, crate::table::micro(&c.statement));
    let (values, intervals) = judged_values(j);
    let Some(m) = &j.measured else {
        return ForestRow {
            label,
            note,
            placeholder: "not run at this size".into(),
            ..Default::default()
        };
    };
    if matches!(c.check, Check::Behaviour | Check::Shape) || values.is_empty() {
        let held = m.conditions.iter().filter(|c| c.1).count();
        // An invalid measurement's conditions are no finding: say so first.
        let invalid = if m.invalid.is_empty() {
            ""
        } else {
            "invalid measurement (no finding); "
        };
        return ForestRow {
            label,
            note,
            placeholder: format!(
                "{} claim: {invalid}{held} of {} conditions hold (no ratio)",
                c.check.as_str(),
                m.conditions.len()
            ),
            ..Default::default()
        };
    }
    // A range's published value is its middle; a value of 0 has no ratio.
    let published = |i: usize| {
        if c.check == Check::InRange {
            (c.published.at(0) + c.published.at(1)) / 2.0
        } else {
            c.published.at(i)
        }
    };
    // The value that decides: the least margin between its 95% interval and
    // its band (negative outside): the one farthest outside for a claim not
    // reproduced, the one nearest an edge for one reproduced. Margins of
    // different values compare as fractions of what they are measured
    // against: the published value (a range's middle, from its band edges),
    // else the band's half-width, so every margin is finite.
    let margin = |i: usize| {
        crate::figure::pass_region(c, i)
            .1
            .map(|(lo, hi)| {
                let (a, b) = intervals.get(i).copied().unwrap_or((values[i], values[i]));
                let (a, b) = (a.min(values[i]), b.max(values[i]));
                let half = (hi - lo) / 2.0;
                let scale = [published(i).abs(), half]
                    .into_iter()
                    .find(|s| s.is_finite() && *s > 0.0)
                    .unwrap_or(1.0);
                let m = (a - lo).min(hi - b) / scale;
                if m.is_nan() { f64::INFINITY } else { m }
            })
            .unwrap_or(f64::INFINITY)
    };
    let i = (0..values.len())
        .min_by(|a, b| margin(*a).total_cmp(&margin(*b)))
        .unwrap_or(0);
    if values.len() > 1 {
        note += &format!("; value {}/{}", i + 1, values.len());
    }
    let p = published(i);
    let v = values[i];
    if !(p.is_finite() && p > 0.0) {
        return ForestRow {
            label,
            note,
            placeholder: match crate::figure::pass_region(c, i).1 {
                Some((lo, hi)) if lo == hi => format!(
                    "ours {} = published {} exactly (no ratio to 0)",
                    num(v),
                    num(p)
                ),
                _ => format!(
                    "ours {} against published {}; passes {} (no ratio to 0)",
                    num(v),
                    num(p),
                    crate::figure::pass_region(c, i).2
                ),
            },
            ..Default::default()
        };
    }
    let band = crate::figure::pass_region(c, i)
        .1
        .map(|(lo, hi)| (lo / p, hi / p));
    ForestRow {
        label,
        value: Some(v / p),
        interval: intervals.get(i).map(|(a, b)| (a / p, b / p)),
        band,
        note,
        placeholder: String::new(),
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
        title: format!("Every claim at a glance: ours / published, {n} claims, run `{run}`"),
        caption: "One row per claim, grouped by verdict. Marker: our value divided by the published \
                  value (the middle of a published range); bar: our 95% interval over trials, divided \
                  alike; grey: where the claim's check passes (a band open to one side reaches the axis \
                  edge). A claim that compares several values is drawn at the one that decides its verdict (value k/n at the right): \
                  the one farthest outside its band when one is wholly outside, else the one whose interval comes nearest its band's edge \
                  or reaches farthest across it. \
                  Right: how many settings of the details the study leaves unstated were measured (our \
                  defaults and the sweep), the assumed setting of a claim reproduced only there, and n=k <10 where an \
                  inconclusive claim rests on k trials, fewer than the 10 an interval needs to decide. Shape \
                  and behaviour claims have no ratio: their conditions are counted instead. A value \
                  outside the axis is an arrow with its ratio."
            .into(),
        x_label: "ours / published (log scale)".into(),
        one_label: "published".into(),
        note_heading: "settings tried".into(),
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
mod tests {
    use super::*;
    use crate::claims::{ClaimSpec, Measured, Num};

    fn in_range(values: &[f64], intervals: &[(f64, f64)]) -> Judged {
        let spec = ClaimSpec {
            kind: "machine".into(),
            ..crate::claims::test_spec(
                "R",
                "B",
                "cost",
                Check::InRange,
                Num::Many(vec![2.5, 3.5]),
                Num::One(0.02),
            )
        };
        let m = Measured::new("R", values.to_vec(), "", "")
            .intervals(intervals.to_vec(), "over 10 trials");
        crate::claims::judge(&[spec], vec![m], "full").remove(0)
    }

    #[test]
    fn a_range_claim_is_drawn_at_the_value_farthest_outside_whatever_its_place() {
        // Six values against a range of two published numbers: the third to
        // sixth have no published value of their own.
        let values = [2.03, 2.73, 2.76, 2.65, 2.24, 2.27];
        let iv: Vec<(f64, f64)> = values.iter().map(|v| (v - 0.07, v + 0.07)).collect();
        let j = in_range(&values, &iv);
        assert_eq!(j.verdict, Verdict::NotReproduced);
        let r = row(&j);
        assert!(r.note.contains("value 1/6"), "{}", r.note);
        assert!((r.value.unwrap() - 2.03 / 3.0).abs() < 1e-9, "{r:?}");
        // All inside: the one nearest an edge (3.5 against 2.45..3.57).
        let values = [3.0, 2.9, 3.5, 3.1];
        let iv: Vec<(f64, f64)> = values.iter().map(|v| (v - 0.01, v + 0.01)).collect();
        let j = in_range(&values, &iv);
        assert_eq!(j.verdict, Verdict::Reproduced);
        assert!(row(&j).note.contains("value 3/4"), "{}", row(&j).note);
    }

    #[test]
    fn the_summary_names_the_claims_the_budget_stopped_and_the_decisive_command() {
        let mut open = in_range(&[1.0], &[(0.5, 1.5)]);
        open.verdict = Verdict::Inconclusive;
        let mut done = in_range(&[1.0], &[(0.9, 1.1)]);
        done.spec.id = "D".into();
        done.verdict = Verdict::Reproduced;
        let m = serde_json::json!({
            "size": "full",
            "until_decisive": {
                "unfunded_claims": ["R", "D"],
                "capped_claims": [],
                "cap_per_cell": 30,
                "budget_basis": "the whole run in 1800 s"
            }
        });
        let t = budget_text(&m, &[open.clone(), done]);
        assert!(t.contains("1 claim(s)") && t.contains(": R"), "{t}");
        assert!(!t.contains("R, D"), "a decided claim is not listed: {t}");
        assert!(
            t.contains("--round-budget 0") && t.contains("1800 s"),
            "{t}"
        );
        let none = serde_json::json!({"size": "full"});
        assert!(budget_text(&none, &[open]).is_empty());
    }
}
