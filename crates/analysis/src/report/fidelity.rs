//! The report's fidelity sections: per claim that did not reproduce at our
//! defaults, what was found (the assumption, or the range tried and a model
//! of why none reproduces), and every sensitivity sweep as a table with the
//! settings that reproduce the published value and those that do not.

use std::path::Path;

use super::{check_text, figure_of, md_escape, micro, ours_text, verdict_text};
use crate::FigureInfo;
use crate::claims::{Judged, Outcome, Verdict, main_outcome, outcome, setting_text, short};

/// Every number a figure's CSV holds in its numeric columns.
fn drawn_numbers(dir: &Path, stem: &str) -> Vec<f64> {
    let Ok(text) = std::fs::read_to_string(dir.join(format!("{stem}.csv"))) else {
        return vec![];
    };
    let mut r = csv::Reader::from_reader(text.as_bytes());
    r.records()
        .flatten()
        .flat_map(|rec| {
            crate::figure::CSV_NUMBER_COLUMNS
                .iter()
                .filter_map(|i| rec.get(*i).and_then(|v| v.parse::<f64>().ok()))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Whether `v` is among the numbers drawn (to 0.1%), or drawn in %.
fn is_drawn(v: f64, nums: &[f64]) -> bool {
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-3 * a.abs().max(b.abs()).max(1e-9);
    nums.iter().any(|n| close(v, *n) || close(v * 100.0, *n))
}

/// The figure a claim links to: the first that draws every value its
/// verdict was judged on (for a claim reproduced at an assumed setting,
/// its sweep figure first), among the figures that name it and its sweep
/// figure; if none draws them all, the first that names it.
pub fn figure_link(j: &Judged, figures: &[FigureInfo], dir: &Path) -> Option<String> {
    let sweep = j
        .measured
        .as_ref()
        .and_then(|m| m.sweep_figure.clone())
        .filter(|stem| dir.join(format!("{stem}.png")).exists());
    let named = figures
        .iter()
        .filter(|f| f.claims.iter().any(|c| *c == j.spec.id))
        .map(|f| {
            f.file
                .trim_start_matches("figures/")
                .trim_end_matches(".png")
                .to_string()
        });
    let mut candidates: Vec<String> = Vec::new();
    if !j.assumption.is_empty() {
        candidates.extend(sweep.clone());
    }
    candidates.extend(named);
    candidates.extend(sweep);
    let (values, _) = super::summary::judged_values(j);
    let shows = |stem: &String| {
        let nums = drawn_numbers(dir, stem);
        values
            .iter()
            .filter(|v| v.is_finite())
            .all(|v| is_drawn(*v, &nums))
    };
    let pick = candidates
        .iter()
        .find(|s| shows(s))
        .or(figure_of(figures, &j.spec.id)
            .map(|f| {
                f.file
                    .trim_start_matches("figures/")
                    .trim_end_matches(".png")
                    .to_string()
            })
            .as_ref()
            .and_then(|first| candidates.iter().find(|c| *c == first)))
        .or(candidates.first())?;
    Some(format!("figures/{pick}.png"))
}

/// "What did not reproduce": every `not-reproduced`, `inconclusive` and
/// `reproduced-with-assumption` claim with the
/// published value, ours, the assumption or the reason, and its sweep figure.
pub fn not_reproduced(rows: &[Judged], figures: &[FigureInfo], dir: &Path) -> String {
    let picked: Vec<&Judged> = rows
        .iter()
        .filter(|j| {
            matches!(
                j.verdict,
                Verdict::NotReproduced | Verdict::Inconclusive | Verdict::ReproducedWithAssumption
            )
        })
        .collect();
    if picked.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "\n### What did not reproduce at our defaults\n\nPer claim: the published value, ours at the setup as the study states it, \
         what the sweep of the unstated details found (the setting that reproduces, or the range tried), and the model of why, where one exists.\n\n",
    );
    for j in picked {
        let c = &j.spec;
        let Some(m) = &j.measured else { continue };
        let mut line = format!(
            "- **{}** {} ({}): published {}; ours {}",
            c.id,
            verdict_text(j),
            micro(&c.statement),
            micro(&c.published_text),
            ours_text(c, m),
        );
        if !m.setting.is_empty() {
            line += &format!(" at {}", setting_text(&m.setting));
        }
        line += &format!(". {}.", j.why.trim_end_matches('.'));
        if !m.model.is_empty() {
            line += &format!(" Model: {}", m.model.trim());
        }
        if !m.note.is_empty() && j.verdict == Verdict::NotReproduced {
            line += &format!(" {}", m.note.trim());
        }
        if let Some(f) = figure_link(j, figures, dir) {
            line += &format!(" [figure]({f})");
        }
        out.push_str(&md_escape(&line));
        out.push('\n');
    }
    out
}

/// "Sensitivity sweeps": for every claim with a sweep, one row per setting
/// with our value, its interval and whether it reproduces.
pub fn sweeps(rows: &[Judged]) -> String {
    let with: Vec<&Judged> = rows
        .iter()
        .filter(|j| j.measured.as_ref().is_some_and(|m| !m.sweep.is_empty()))
        .collect();
    if with.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "\n## Sensitivity sweeps\n\nEvery detail the studies leave unstated that a claim depends on, swept: one row per setting, \
         our value with its 95% interval, and whether it reproduces the published value under the claim's check. \
         The first row is our default.\n",
    );
    for j in with {
        let (c, m) = (&j.spec, j.measured.as_ref().unwrap());
        out.push_str(&format!(
            "\n### {}: {}\n\nPublished {}; check: {}; verdict **{}**.\n\n| setting | ours | 95% interval | reproduces |\n|---|---|---|---|\n",
            c.id,
            md_escape(&micro(&c.statement)),
            md_escape(&c.published_text),
            md_escape(&check_text(c)),
            md_escape(&verdict_text(j)),
        ));
        let yes = |o: Outcome| match o {
            Outcome::Inside => "yes",
            Outcome::Outside => "no",
            Outcome::Straddles => "undecided (interval across the edge)",
            Outcome::TooFew => "undecided (fewer than 10 trials)",
        };
        let iv = |v: &[(f64, f64)]| {
            v.iter()
                .map(|(a, b)| format!("{}..{}", short(*a), short(*b)))
                .collect::<Vec<_>>()
                .join("; ")
        };
        out.push_str(&format!(
            "| {} (default) | {} | {} | {} |\n",
            md_escape(&setting_text(&m.setting)),
            md_escape(&m.display),
            iv(&m.intervals),
            yes(main_outcome(c, m))
        ));
        for a in &m.sweep {
            let o = outcome(
                c,
                &a.values,
                &a.intervals,
                &a.conditions,
                a.trials.or_else(|| m.trial_count()),
            );
            let shown = if a.display.is_empty() {
                a.values
                    .iter()
                    .map(|x| short(*x))
                    .collect::<Vec<_>>()
                    .join(" / ")
            } else {
                a.display.clone()
            };
            // Only what differs from our defaults (an alternative may restate them).
            let own = a.own(&m.setting);
            out.push_str(&format!(
                "| {} | {} | {} | {} |\n",
                md_escape(&setting_text(&own)),
                md_escape(&shown),
                iv(&a.intervals),
                yes(o)
            ));
        }
        if !m.model.is_empty() {
            out.push_str(&format!("\nModel: {}\n", md_escape(&m.model)));
        }
    }
    out
}
