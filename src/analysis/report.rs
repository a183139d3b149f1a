//! The report a reader meets: `report.md` (the claims table with statement,
//! kind, published value, ours, check, margin, verdict and figure; each
//! experiment's section with its claims and finding first, its long tables
//! in an appendix) and the README's `claims-table.md`.

use std::path::Path;

use super::claims::{Check, ClaimSpec, Measured, Verdict};
use super::{AnalysisCtx, Section};
use crate::error::{Error, Result};

/// The value(s) a claim's check compares, as a reader writes them.
/// More than three values read as their range; a behaviour claim (whose
/// value is a placeholder) reads as its conditions.
pub fn headline(c: &ClaimSpec, m: &Measured) -> String {
    let n = super::figure::num;
    if c.check == Check::Behaviour {
        let held = m.conditions.iter().filter(|c| c.1).count();
        return format!("{held} of {} conditions hold", m.conditions.len());
    }
    if m.values.len() > 3 {
        let lo = m.values.iter().copied().fold(f64::MAX, f64::min);
        let hi = m.values.iter().copied().fold(f64::MIN, f64::max);
        return format!("{} to {} ({} values)", n(lo), n(hi), m.values.len());
    }
    m.values
        .iter()
        .map(|v| n(*v))
        .collect::<Vec<_>>()
        .join(" / ")
}

/// The check in words: `within ±T of P`, `at most P`, `LO..HI` (values
/// from the claims table).
pub fn check_text(c: &ClaimSpec) -> String {
    let n = c.published.values().len().max(1);
    let one = |i: usize| {
        let (_, _, rule) = super::figure::pass_region(c, i);
        match c.check {
            Check::Equals | Check::WithinAbs if c.tolerance.at(i) == 0.0 => {
                format!("exactly {}", super::figure::num(c.published.at(i)))
            }
            Check::Equals | Check::WithinAbs | Check::WithinRel => {
                format!("{rule} of {}", super::figure::num(c.published.at(i)))
            }
            _ => rule,
        }
    };
    match c.check {
        Check::Shape => {
            "shape: the analyzer's conditions decide; the value is this machine's".into()
        }
        Check::Behaviour => "behaviour: every checked condition must hold".into(),
        Check::InRange => format!("every value in {}", one(0)),
        _ if n > 1 => (0..n).map(one).collect::<Vec<_>>().join("; "),
        _ => one(0),
    }
}

/// How far the value lies inside (+) or outside (-) the region its check
/// passes, per value, in the claim's unit (None for shape/behaviour).
pub fn margins(c: &ClaimSpec, m: &Measured) -> Vec<f64> {
    if matches!(c.check, Check::Shape | Check::Behaviour) {
        return vec![];
    }
    m.values
        .iter()
        .enumerate()
        .filter_map(|(i, v)| {
            let (lo, hi) = super::figure::pass_region(c, i).1?;
            Some((v - lo).min(hi - v))
        })
        .collect()
}

/// The margin to the threshold in words, and the conditions.
pub fn margin_text(c: &ClaimSpec, m: &Measured) -> String {
    let failed: Vec<&str> = m
        .conditions
        .iter()
        .filter(|c| !c.1)
        .map(|c| c.0.as_str())
        .collect();
    let mut out = match margins(c, m).iter().copied().reduce(f64::min) {
        Some(x) if x >= -1e-9 => format!("inside by {}", super::figure::num(x.max(0.0))),
        Some(x) => format!("outside by {}", super::figure::num(-x)),
        None if m.conditions.is_empty() || c.check == Check::Behaviour => "-".into(),
        None => format!(
            "{} of {} conditions hold",
            m.conditions.len() - failed.len(),
            m.conditions.len()
        ),
    };
    if !failed.is_empty() && !matches!(c.check, Check::Shape | Check::Behaviour) {
        out += &format!("; failed: {}", failed.join("; "));
    } else if !failed.is_empty() {
        out += &format!(" (failed: {})", failed.join("; "));
    }
    out
}

/// The figure a claim is drawn in: the first whose claims include it.
pub fn figure_of<'a>(figures: &'a [super::FigureInfo], id: &str) -> Option<&'a super::FigureInfo> {
    figures.iter().find(|f| f.claims.iter().any(|c| c == id))
}

/// The README's claims table: claim, what the study says, experiment, the
/// command that reproduces it, our value, verdict, figure, time.
pub fn readme_table(
    rows: &[(ClaimSpec, Option<Measured>, Verdict)],
    manifest: &serde_json::Value,
    run_rel: &str,
    figures: &[super::FigureInfo],
) -> String {
    let mut out = String::from(
        "| claim | the study says | published | reference run | check | verdict | figure | command | experiment time (full) |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    for (c, m, v) in rows {
        let secs = manifest["experiments"][c.experiment.as_str()]["seconds"].as_f64();
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | `limitbench run {} --size full` | {} |\n",
            c.id,
            md_escape(&c.statement),
            md_escape(&c.published_text),
            md_escape(
                &m.as_ref()
                    .map(|m| format!("{} {}", headline(c, m), unit_short(c))
                        .trim()
                        .to_string())
                    .unwrap_or_else(|| "-".into())
            ),
            md_escape(&check_text(c)),
            v.as_str(),
            figure_of(figures, &c.id)
                .map(|f| format!(
                    "[{}]({run_rel}/{})",
                    f.file
                        .trim_start_matches("figures/")
                        .trim_end_matches(".png"),
                    f.file
                ))
                .unwrap_or_else(|| "-".into()),
            c.experiment,
            secs.map(|s| format!("{s:.0} s"))
                .unwrap_or_else(|| "-".into()),
        ));
    }
    out
}

/// The unit without the metric's explanation in parentheses.
pub fn unit_short(c: &ClaimSpec) -> String {
    let u = c.unit.split(" (").next().unwrap_or(&c.unit).trim();
    if matches!(u, "behaviour" | "shape") {
        String::new()
    } else {
        u.to_string()
    }
}

fn md_escape(s: &str) -> String {
    micro(s).replace('|', "\\|").replace('\n', " ")
}

/// The claims table writes microseconds as `us`; a reader gets `µs`.
pub fn micro(s: &str) -> String {
    s.split(' ')
        .map(|w| {
            let core = w.trim_end_matches([';', ',', '.', ')']);
            if core == "us" {
                format!("µs{}", &w[2..])
            } else {
                w.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

const HOW_TO_READ: &str = "How to read this report. Every claim of the two studies has a row below: what the study \
says, its kind (`portable`: should hold on any machine; `portable-ish`: depends on scheduling; `machine`: an absolute \
time or rate of the authors' machine, judged on its shape only; `behaviour`: yes/no behaviour), the published value, \
ours (the value the check compares, in the claim's unit, computed from this run's CSVs), the check with its tolerance \
(from `analysis/claims.toml`, where the published values live), the margin (how far ours lies inside or outside the \
region where the check passes, in the claim's unit) and the verdict. Each claim links to its figure; every figure \
draws the published value as a black dash-dot line with the region where the check passes shaded grey, our values \
as means over trials with whiskers (min to max over trials unless the caption says otherwise), and writes the numbers \
it draws to a CSV beside it. Each experiment's section opens with its claims and a one-line finding, then the figure, \
then a compact table; long tables are in the appendix at the end.\n\n";

pub fn write_report(
    path: &Path,
    ctx: &AnalysisCtx,
    rows: &[(ClaimSpec, Option<Measured>, Verdict)],
    sections: &[Section],
) -> Result<()> {
    let m = &ctx.manifest;
    let figures = ctx.figures.borrow();
    let count = |v: Verdict| rows.iter().filter(|r| r.2 == v).count();
    let mut out = String::new();
    out.push_str(&format!(
        "# limitbench report: run `{}`\n\n",
        m["run_id"].as_str().unwrap_or("?")
    ));
    out.push_str(&format!(
        "**{} claims: {} pass, {} fail, {} not-run.**\n\n",
        rows.len(),
        count(Verdict::Pass),
        count(Verdict::Fail),
        count(Verdict::NotRun)
    ));
    out.push_str(HOW_TO_READ);
    out.push_str("## Claims\n\n");
    out.push_str("| claim | the study says | kind | published | ours | unit | check | margin | verdict | figure |\n|---|---|---|---|---|---|---|---|---|---|\n");
    for (c, me, v) in rows {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | **{}** | {} |\n",
            c.id,
            md_escape(&c.statement),
            c.kind,
            md_escape(&c.published_text),
            md_escape(
                &me.as_ref()
                    .map(|m| headline(c, m))
                    .filter(|h| !h.is_empty())
                    .unwrap_or_else(|| "-".into())
            ),
            md_escape(&unit_short(c)),
            md_escape(&check_text(c)),
            md_escape(
                &me.as_ref()
                    .map(|m| margin_text(c, m))
                    .unwrap_or_else(|| "-".into())
            ),
            v.as_str(),
            figure_of(&figures, &c.id)
                .map(|f| format!("[figure]({})", f.file))
                .unwrap_or_else(|| "-".into()),
        ));
    }
    let fails: Vec<_> = rows.iter().filter(|r| r.2 == Verdict::Fail).collect();
    if !fails.is_empty() {
        out.push_str("\n### Claims that did not reproduce\n\n");
        for (c, me, _) in fails {
            let me = me.as_ref().unwrap();
            out.push_str(&format!(
                "- **{}** ({}): ours {}; {}. {}\n",
                c.id,
                micro(&c.statement),
                me.display,
                margin_text(c, me),
                me.note,
            ));
        }
    }
    out.push_str("\n## Environment\n\n");
    out.push_str(&format!(
        "- size `{}`, seed `{}`, git `{}`{}\n- machine: {} ({} cores), kernel {}, {}\n- redis-server {}\n- started {}, ended {}\n\n",
        m["size"].as_str().unwrap_or("?"),
        m["seed"],
        m["git_commit"].as_str().unwrap_or("?"),
        if m["git_dirty"].as_bool().unwrap_or(false) { " (uncommitted changes)" } else { "" },
        m["machine"]["cpu_model"].as_str().unwrap_or("?"),
        m["machine"]["cores"],
        m["machine"]["kernel"].as_str().unwrap_or("?"),
        m["machine"]["os"].as_str().unwrap_or(""),
        m["redis_server"]["version"].as_str().unwrap_or("?"),
        m["started"].as_str().unwrap_or("?"),
        m["ended"].as_str().unwrap_or("(not finished)"),
    ));
    if let Some(exps) = m["experiments"].as_object() {
        out.push_str("| experiment | seconds | outcome |\n|---|---|---|\n");
        for (name, e) in exps {
            out.push_str(&format!(
                "| {name} | {} | {} |\n",
                e["seconds"]
                    .as_f64()
                    .map(|s| format!("{s:.1}"))
                    .unwrap_or_else(|| "-".into()),
                md_escape(e["outcome"].as_str().unwrap_or("?"))
            ));
        }
        out.push('\n');
    }
    for s in sections {
        let mine: Vec<_> = rows
            .iter()
            .filter(|r| r.0.experiment == s.experiment)
            .collect();
        out.push_str(&format!("\n## {}\n\n", s.experiment));
        for (c, me, v) in &mine {
            let Some(me) = me else {
                out.push_str(&format!(
                    "- **{} {}**: {}\n",
                    c.id,
                    v.as_str(),
                    micro(&c.statement)
                ));
                continue;
            };
            out.push_str(&format!(
                "- **{} {}** ({}): ours {} against published {}; {} ({}).\n",
                c.id,
                v.as_str(),
                micro(&c.statement),
                me.display,
                micro(&c.published_text),
                margin_text(c, me),
                check_text(c),
            ));
        }
        if !mine.is_empty() {
            out.push('\n');
        }
        if !s.finding.is_empty() {
            out.push_str(&format!("**Finding:** {}\n\n", s.finding));
        }
        out.push_str(&s.markdown);
        out.push('\n');
    }
    let appendix: Vec<&Section> = sections.iter().filter(|s| !s.appendix.is_empty()).collect();
    if !appendix.is_empty() {
        out.push_str("\n## Appendix: full tables\n");
        for s in appendix {
            out.push_str(&format!("\n### {}\n\n{}\n", s.experiment, s.appendix));
        }
    }
    std::fs::write(path, out).map_err(|e| Error::io("writing report.md", e))
}
