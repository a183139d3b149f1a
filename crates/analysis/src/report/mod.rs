//! The report a reader meets: `report.md` (the claims table with statement,
//! kind, published value, ours, check, margin, verdict and figure; each
//! experiment's section with its claims and finding first, its long tables
//! in an appendix) and `claims-table.md`, the table of docs/results.md.

use std::path::Path;

pub mod fidelity;

use crate::claims::{Check, ClaimSpec, Judged, Measured, Verdict, interval_text};
use crate::error::{Error, Result};
pub use crate::table::micro;
use crate::{AnalysisCtx, Section};

/// The value(s) a claim's check compares, as a reader writes them.
/// More than three values read as their range; a behaviour claim (whose
/// value is a placeholder) reads as its conditions.
pub fn headline(c: &ClaimSpec, m: &Measured) -> String {
    let n = crate::figure::num;
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
        let (_, _, rule) = crate::figure::pass_region(c, i);
        match c.check {
            Check::Equals | Check::WithinAbs if c.tolerance.at(i) == 0.0 => {
                format!("exactly {}", crate::figure::num(c.published.at(i)))
            }
            Check::Equals | Check::WithinAbs | Check::WithinRel => {
                format!("{rule} of {}", crate::figure::num(c.published.at(i)))
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
            let (lo, hi) = crate::figure::pass_region(c, i).1?;
            Some((v - lo).min(hi - v))
        })
        .collect()
}

/// The margin to the threshold in words, and the conditions.
pub fn margin_text(c: &ClaimSpec, m: &Measured) -> String {
    let failed = m.failed_conditions();
    let mut out = match margins(c, m).iter().copied().reduce(f64::min) {
        Some(x) if x >= -1e-9 => format!("inside by {}", crate::figure::num(x.max(0.0))),
        Some(x) => format!("outside by {}", crate::figure::num(-x)),
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

/// A claim's kind; a `machine` claim (an absolute time or rate) whose
/// experiment's rows came from more than one machine (a merged sharded run:
/// `experiments.<name>.machines` in the manifest) says so, since its value
/// then mixes machines.
pub fn kind_text(c: &ClaimSpec, manifest: &serde_json::Value) -> String {
    let machines = manifest["experiments"][c.experiment.as_str()]["machines"]
        .as_array()
        .map(|a| a.len())
        .unwrap_or(0);
    if c.kind == "machine" && machines > 1 {
        format!("{} (rows from {machines} machines)", c.kind)
    } else {
        c.kind.to_string()
    }
}

/// The figure a claim is drawn in: the first whose claims include it.
pub fn figure_of<'a>(figures: &'a [crate::FigureInfo], id: &str) -> Option<&'a crate::FigureInfo> {
    figures.iter().find(|f| f.claims.iter().any(|c| c == id))
}

/// The claims table of docs/results.md (`claims-table.md`): claim, what the
/// study says, experiment, the command that reproduces it, our value, verdict,
/// figure (linked relative to docs/), time.
pub fn results_table(
    rows: &[Judged],
    manifest: &serde_json::Value,
    run_rel: &str,
    figures: &[crate::FigureInfo],
) -> String {
    let mut out = String::from(
        "| claim | the study says | published | reference run | check | verdict | figure | command | experiment time (full) |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    for j in rows {
        let (c, m) = (&j.spec, &j.measured);
        let secs = manifest["experiments"][c.experiment.as_str()]["seconds"].as_f64();
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | `limitbench run {} --size full` | {} |\n",
            c.id,
            md_escape(&c.statement),
            md_escape(&c.published_text),
            md_escape(
                &m.as_ref()
                    .map(|m| {
                        let v = format!("{} {}", headline(c, m), unit_short(c));
                        match inferred_value(j) {
                            Some(at) => format!("{} at our defaults; {at}", v.trim()),
                            None => v.trim().to_string(),
                        }
                    })
                    .unwrap_or_else(|| "-".into())
            ),
            md_escape(&check_text(c)),
            md_escape(&verdict_text(j)),
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

pub fn md_escape(s: &str) -> String {
    micro(s).replace('|', "\\|").replace('\n', " ")
}

const HOW_TO_READ: &str = "How to read this report. Every claim of the two studies has a row below: what the study \
says, its kind (`portable`: should hold on any machine; `portable-ish`: depends on scheduling; `machine`: an absolute \
time or rate of the authors' machine, judged on its shape only; `behaviour`: yes/no behaviour), the published value, \
ours (the value the check compares, in the claim's unit, computed from this run's CSVs) with its 95% interval over \
trials, the check with its tolerance (from `analysis/claims.toml`, where the published values live), the margin (how \
far ours lies inside or outside the region where the check passes, in the claim's unit) and the verdict, an \
equivalence test against a tolerance fixed in advance (its basis in `analysis/claims.toml`). `reproduced`: the whole \
95% interval lies inside the tolerance at the setup as the study states it (our defaults for what it leaves \
unstated); `reproduced-with-assumption`: only at the named setting of a detail the study does not state (a swept \
value, or a default we kept because it reproduces), one value per detail serving every claim that has it, with the \
number of settings tried; `not-reproduced`: the whole interval lies outside (or the claim reproduces only by \
changing a parameter the study states, reported as a finding); `inconclusive`: the interval reaches across the \
tolerance's edge (`(borderline)`) or rests on fewer than 10 trials, not a pass; `not-run`: this size did not \
measure it. Claims that describe the study (its trial count, its \
run time) and the harness's own policies are counted apart from the reproduction tally. Each claim links to its \
figure; every figure draws the published value as a black dash-dot line with the region where the check passes \
shaded grey, our values as means over trials with whiskers (min to max over trials unless the caption says \
otherwise), and writes the numbers it draws to a CSV beside it.\n\n";

/// The verdict as the tables show it: `reproduced-with-assumption
/// (member_len=26)`, `inconclusive (borderline)`.
pub fn verdict_text(j: &Judged) -> String {
    let mut s = j.verdict.as_str().to_string();
    if !j.assumption.is_empty() {
        s += &format!(" ({})", j.assumption);
    }
    if j.borderline {
        s += " (borderline)";
    }
    s
}

/// For a `reproduced-with-assumption` claim: the value at the assumed setting, as
/// `60.5 at arrival=spread-750ms`.
pub fn inferred_value(j: &Judged) -> Option<String> {
    let m = j.measured.as_ref()?;
    if j.assumption.is_empty() {
        return None;
    }
    let a = m
        .sweep
        .iter()
        .find(|a| crate::claims::setting_text(&a.own(&m.setting)) == j.assumption)?;
    let v = a
        .values
        .iter()
        .map(|x| crate::figure::num(*x))
        .collect::<Vec<_>>()
        .join(" / ");
    Some(format!("{v} at {}", j.assumption))
}

/// "12 reproduced, 3 reproduced-with-assumption, 2 not-reproduced, 5
/// inconclusive, 0 not-run" over `rows`.
pub fn tally(rows: &[&Judged]) -> String {
    Verdict::all()
        .iter()
        .map(|v| {
            format!(
                "{} {}",
                rows.iter().filter(|j| j.verdict == *v).count(),
                v.as_str()
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Ours with its interval: `131.6 (min 122, ...) [95%: 129.8..133.4]`.
pub fn ours_text(c: &ClaimSpec, m: &Measured) -> String {
    let h = headline(c, m);
    let iv = interval_text(m);
    match (h.is_empty(), iv.is_empty()) {
        (true, _) => "-".into(),
        (false, true) => h,
        (false, false) => format!("{h} [95%: {iv}]"),
    }
}

// Longer than 120 lines: the report's sections in reading order (summary, claims table, per-experiment sections, fidelity, noise, appendix); each step is one call or one short block.
pub fn write_report(
    path: &Path,
    ctx: &AnalysisCtx,
    rows: &[Judged],
    sections: &[Section],
) -> Result<()> {
    let m = &ctx.manifest;
    let figures = ctx.figures.borrow();
    let mut out = String::new();
    out.push_str(&format!(
        "# limitbench report: run `{}`\n\n",
        m["run_id"].as_str().unwrap_or("?")
    ));
    let repro: Vec<&Judged> = rows
        .iter()
        .filter(|j| j.spec.tally == "reproduction")
        .collect();
    let apart: Vec<&Judged> = rows
        .iter()
        .filter(|j| j.spec.tally != "reproduction")
        .collect();
    let borderline: Vec<&str> = rows
        .iter()
        .filter(|j| j.borderline)
        .map(|j| j.spec.id.as_str())
        .collect();
    out.push_str(&format!(
        "**{} claims reproduced or not: {}.** Apart from the tally: {}.{}\n\n",
        repro.len(),
        tally(&repro),
        apart
            .iter()
            .map(|j| format!("{} ({}) {}", j.spec.id, j.spec.tally, verdict_text(j)))
            .collect::<Vec<_>>()
            .join("; "),
        if borderline.is_empty() {
            String::new()
        } else {
            format!(
                " Borderline (the 95% interval reaches across the threshold): {}.",
                borderline.join(", ")
            )
        }
    ));
    out.push_str(HOW_TO_READ);
    out.push_str("## Claims\n\n");
    out.push_str("| claim | the study says | kind | published | ours [95% interval] | unit | check | margin | verdict | figure |\n|---|---|---|---|---|---|---|---|---|---|\n");
    for j in rows {
        let (c, me) = (&j.spec, &j.measured);
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | **{}** | {} |\n",
            c.id,
            md_escape(&c.statement),
            kind_text(c, m),
            md_escape(&c.published_text),
            md_escape(
                &me.as_ref()
                    .map(|m| match inferred_value(j) {
                        Some(at) => format!("{} at our defaults; {at}", ours_text(c, m)),
                        None => ours_text(c, m),
                    })
                    .unwrap_or_else(|| "-".into())
            ),
            md_escape(&unit_short(c)),
            md_escape(&check_text(c)),
            md_escape(
                &me.as_ref()
                    .map(|m| margin_text(c, m))
                    .unwrap_or_else(|| "-".into())
            ),
            md_escape(&verdict_text(j)),
            figure_of(&figures, &c.id)
                .map(|f| format!("[figure]({})", f.file))
                .unwrap_or_else(|| "-".into()),
        ));
    }
    out.push_str(&fidelity::not_reproduced(rows, &figures, &ctx.figures_dir));
    out.push_str(&fidelity::sweeps(rows));
    out.push_str("\n## Environment\n\n");
    out.push_str(&format!(
        "- size `{}`, seed `{}`, git `{}`{}\n- machine: {} ({} cores), kernel {}, {}\n- server: {}\n- started {}, ended {}\n\n",
        m["size"].as_str().unwrap_or("?"),
        m["seed"],
        m["git_commit"].as_str().unwrap_or("?"),
        if m["git_dirty"].as_bool().unwrap_or(false) { " (uncommitted changes)" } else { "" },
        m["machine"]["cpu_model"].as_str().unwrap_or("?"),
        m["machine"]["cores"],
        m["machine"]["kernel"].as_str().unwrap_or("?"),
        m["machine"]["os"].as_str().unwrap_or(""),
        server_text(&m["redis_server"]),
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
        let mine: Vec<&Judged> = rows
            .iter()
            .filter(|j| j.spec.experiment == s.experiment)
            .collect();
        out.push_str(&format!("\n## {}\n\n", s.experiment));
        for j in &mine {
            let c = &j.spec;
            let Some(me) = &j.measured else {
                out.push_str(&format!(
                    "- **{} {}**: {}{}\n",
                    c.id,
                    verdict_text(j),
                    micro(&c.statement),
                    if j.why.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", j.why)
                    }
                ));
                continue;
            };
            out.push_str(&format!(
                "- **{} {}** ({}): ours {} against published {}; {} ({}).\n",
                c.id,
                verdict_text(j),
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

/// The server as the report names it: the product (Valkey reports
/// `redis_version:7.2.4`, so the version alone would mislead) and its
/// allocator, where `limitbench matrix` recorded them.
fn server_text(s: &serde_json::Value) -> String {
    let version = s["version"].as_str().unwrap_or("?");
    match s["product"].as_str() {
        Some(product) => format!(
            "{product} {version} (INFO redis_version {}, mem_allocator {}, --version malloc {}; {})",
            s["redis_version"].as_str().unwrap_or("?"),
            s["mem_allocator"].as_str().unwrap_or("?"),
            s["version_malloc"].as_str().unwrap_or("?"),
            s["binary"].as_str().unwrap_or("?"),
        ),
        None => format!("redis-server {version}"),
    }
}
