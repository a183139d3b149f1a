//! The report a reader meets: `report.md` (the findings first, [`findings`]:
//! what reproduced and a table of every claim not reproduced as stated, and
//! the rerun's agreement; then the executive summary and its figure; each
//! experiment's section with its claims and finding first; the claims table
//! with statement, kind, published value, ours, check, margin, verdict and
//! figure; its long tables in an appendix) and `claims-table.md`, the table
//! of docs/results.md.

use std::path::Path;

mod bases;
pub mod fidelity;
pub mod findings;
pub mod summary;

use crate::claims::{Check, ClaimSpec, Judged, Measured, Verdict, interval_text};
pub use crate::table::micro;
use crate::{AnalysisCtx, Section};
use limitbench_base::error::{Error, Result};

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
/// figure (linked relative to the run folder: docs/results.md, which shows
/// the reference's, prefixes `../data/reference/`), time.
pub fn results_table(
    rows: &[Judged],
    manifest: &serde_json::Value,
    figures: &[crate::FigureInfo],
    dir: &Path,
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
            fidelity::figure_link(j, figures, dir)
                .map(|f| format!(
                    "[{}]({f})",
                    f.trim_start_matches("figures/").trim_end_matches(".png"),
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

const HOW_TO_READ: &str = "How to read this report. The figure above has one row per claim (`A2.1 58 -> 22`: published, then ours): our value divided by \
the published one on a log axis (1 is the published value, 0 in a slot at its left), our 95% interval over trials as a bar, and the region \
where the claim's check passes shaded grey, or for a shape or behaviour claim the fraction of its conditions held; rows are grouped by verdict, a claim not reproduced names its cause. A verdict is an equivalence test against a \
tolerance fixed in advance (checks, tolerances, their basis and the published values live in `analysis/claims.toml`). \
`reproduced`: the whole 95% interval lies inside the tolerance at the setup as the study states it (our defaults for \
what it leaves unstated); `reproduced-with-assumption`: only at the named setting of a detail the study does not state \
(a swept value, or a default we kept because it reproduces), one value per detail serving every claim that has it, \
with the number of settings tried; `not-reproduced`: the whole interval lies outside (or the claim reproduces only by \
changing a parameter the study states, reported as a finding); `inconclusive`: the interval reaches across the \
tolerance's edge (`(borderline)`) or rests on fewer than 10 trials, not a pass; `not-run`: this size did not measure \
it. Claims that describe the study (its trial count, its run time) and the harness's own policies are counted apart \
from the reproduction tally. Then one section per experiment: its claims, the finding in one sentence, its figures, \
then its tables. In every figure the published value is a black dashed line ending in a black diamond, with the \
region where its check passes shaded grey; our values are means over trials with whiskers (min to max over trials \
unless the caption says otherwise), each strategy in one colour and marker in every figure; every figure writes the \
numbers it draws to a CSV beside it. The full claims table, the environment, and debug-level detail (the \
sensitivity sweeps setting by setting, full tables) follow the sections; the appendix is for checking, not for \
reading.\n\n";

/// One study's executive summary: its claims' verdicts in a sentence and
/// the borderline ones (the findings table names every claim not
/// reproduced as stated).
fn study_summary(study: &str, rows: &[&Judged]) -> String {
    let repro: Vec<&&Judged> = rows
        .iter()
        .filter(|j| j.spec.tally == "reproduction")
        .collect();
    if repro.is_empty() {
        return String::new();
    }
    let counts: Vec<String> = Verdict::all()
        .iter()
        .filter_map(|v| {
            let n = repro.iter().filter(|j| j.verdict == *v).count();
            (n > 0).then(|| format!("{n} {}", v.as_str()))
        })
        .collect();
    let mut out = format!(
        "**Study {study}** ({} claims): {}.",
        repro.len(),
        counts.join(", ")
    );
    let borderline: Vec<&str> = repro
        .iter()
        .filter(|j| j.borderline)
        .map(|j| j.spec.id.as_str())
        .collect();
    if !borderline.is_empty() {
        out += &format!(
            " Borderline (the 95% interval reaches across the region's edge): {}.",
            borderline.join(", ")
        );
    }
    out + "\n\n"
}

/// The full claims table (statement, kind, published, ours with its
/// interval, unit, check, margin, verdict, figure).
fn claims_table(
    rows: &[Judged],
    figures: &[crate::FigureInfo],
    dir: &Path,
    manifest: &serde_json::Value,
) -> String {
    let mut out = String::from(
        "| claim | the study says | kind | published | ours [95% interval] | unit | check | margin | verdict | figure |\n|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for j in rows {
        let (c, me) = (&j.spec, &j.measured);
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | **{}** | {} |\n",
            c.id,
            md_escape(&c.statement),
            kind_text(c, manifest),
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
            fidelity::figure_link(j, figures, dir)
                .map(|f| format!("[figure]({f})"))
                .unwrap_or_else(|| "-".into()),
        ));
    }
    out
}

/// One claim as a section opens with it: verdict, statement, the judged
/// value against the published one, the margin.
fn claim_line(j: &Judged) -> String {
    let c = &j.spec;
    let Some(me) = &j.measured else {
        return format!(
            "- {}**{} {}**: {}{}\n",
            findings::anchor_tag(&c.id),
            c.id,
            verdict_text(j),
            micro(&c.statement),
            if j.why.is_empty() {
                String::new()
            } else {
                format!(" ({})", j.why)
            }
        );
    };
    let ours = match inferred_value(j) {
        Some(at) => format!("{} (judged at the assumed setting: {at})", ours_text(c, me)),
        None => ours_text(c, me),
    };
    // Why the verdict is what it is (an invalid measurement, a named
    // reading, the setting it needed) before the analyzer's note.
    let why = if j.why.is_empty() || j.verdict == Verdict::Reproduced {
        String::new()
    } else {
        format!(" *Why:* {}", micro(j.why.trim()))
    };
    format!(
        "- {}**{} {}** ({}): ours {} {} against published {}; {} ({}).{why}{}\n",
        findings::anchor_tag(&c.id),
        c.id,
        verdict_text(j),
        micro(&c.statement),
        ours,
        unit_short(c),
        micro(&c.published_text),
        margin_text(c, me),
        check_text(c),
        if me.note.is_empty() {
            String::new()
        } else {
            format!(" *Note:* {}", micro(me.note.trim()))
        }
    )
}

/// A section's markdown split at its first table: figures and text
/// before, tables after (so a section reads claims, finding, figure,
/// then tables).
fn figures_then_tables(md: &str) -> String {
    let mut prose = String::new();
    let mut tables = String::new();
    let mut in_table = false;
    let mut seen_table = false;
    for line in md.lines() {
        let is_table = line.trim_start().starts_with('|');
        if is_table {
            in_table = true;
            seen_table = true;
        } else if in_table && line.trim().is_empty() {
            in_table = false;
        }
        // Figures (and their captions) move up; the rest keeps its place
        // after the first table.
        let figure = line.starts_with("![") || line.starts_with("*Figure ");
        if is_table || (seen_table && !figure) {
            tables.push_str(line);
            tables.push('\n');
        } else {
            prose.push_str(line);
            prose.push('\n');
        }
    }
    format!("{prose}\n{tables}")
}

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
    if j.why.starts_with("inconclusive (disturbed") {
        s += " (disturbed)";
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
/// A claim judged on an exact count or extreme over every trial carries
/// its value as a zero-width interval (no sampling interval: the method
/// says which bound stands for it); it is shown as such, never as a 95%
/// interval `0..0`.
pub fn ours_text(c: &ClaimSpec, m: &Measured) -> String {
    let h = headline(c, m);
    let iv = interval_text(m);
    let exact = !m.intervals.is_empty() && m.intervals.iter().all(|(lo, hi)| lo == hi);
    match (h.is_empty(), iv.is_empty()) {
        (true, _) => "-".into(),
        (false, true) => h,
        (false, false) if exact => format!("{h} [no sampling interval]"),
        (false, false) => format!("{h} [95%: {iv}]"),
    }
}

// The report's parts in reading order: the findings (with the rerun's
// agreement when `rerun` is given), executive summary and the summary
// figure, how to read, one section per experiment, the claims table, the
// environment, the sections without claims, the appendix.
pub fn write_report(
    path: &Path,
    ctx: &AnalysisCtx,
    rows: &[Judged],
    sections: &[Section],
    rerun: Option<&findings::Rerun>,
) -> Result<()> {
    let m = &ctx.manifest;
    let run = m["run_id"].as_str().unwrap_or("?");
    let mut out = format!(
        "# limitbench report: run `{run}` (size `{}`)\n\n",
        m["size"].as_str().unwrap_or("?")
    );
    out.push_str(&findings::section(rows, m, rerun));
    out.push_str("## Executive summary\n\n");
    let disturbed = crate::disturbance::Disturbances::read(&ctx.run_dir)?;
    out.push_str(&crate::disturbance::summary_text(m, &disturbed, rows));
    out.push_str(&summary::budget_text(m, rows));
    let mut studies: Vec<&str> = rows.iter().map(|j| j.spec.study.as_str()).collect();
    studies.dedup();
    for st in studies {
        let mine: Vec<&Judged> = rows.iter().filter(|j| j.spec.study == st).collect();
        out.push_str(&study_summary(st, &mine));
    }
    let apart: Vec<&Judged> = rows
        .iter()
        .filter(|j| j.spec.tally != "reproduction")
        .collect();
    if !apart.is_empty() {
        out.push_str(&format!(
            "Apart from the tally (the studies' own description and the harness's policy): {}.\n\n",
            apart
                .iter()
                .map(|j| format!("{} ({}) {}", j.spec.id, j.spec.tally, verdict_text(j)))
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    out.push_str(&summary::write_summary(rows, run, &ctx.figures_dir)?);
    out.push_str(HOW_TO_READ);
    let figures = ctx.figures.borrow();
    let (with_claims, without): (Vec<&Section>, Vec<&Section>) = sections
        .iter()
        .partition(|s| rows.iter().any(|j| j.spec.experiment == s.experiment));
    for s in with_claims {
        let mine: Vec<&Judged> = rows
            .iter()
            .filter(|j| j.spec.experiment == s.experiment)
            .collect();
        let ids: Vec<&str> = mine.iter().map(|j| j.spec.id.as_str()).collect();
        out.push_str(&format!("\n## {} ({})\n\n", s.experiment, ids.join(", ")));
        for j in &mine {
            out.push_str(&claim_line(j));
        }
        out.push('\n');
        if !s.finding.is_empty() {
            out.push_str(&format!("**Finding:** {}\n\n", s.finding));
        }
        out.push_str(&figures_then_tables(&s.markdown));
        out.push('\n');
    }
    out.push_str("\n## All claims\n\n");
    out.push_str(&claims_table(rows, &figures, &ctx.figures_dir, m));
    out.push_str(&bases::interval_bases(rows));
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
    // Sections without claims (latency, scorecard link, noise, warnings)
    // carry their own heading.
    for s in without {
        if !s.markdown.trim_start().starts_with("## ") {
            out.push_str(&format!("\n## {}\n\n", s.experiment));
        } else {
            out.push('\n');
        }
        out.push_str(&s.markdown);
        out.push('\n');
    }
    out.push_str("\n## Appendix: debug-level detail\n\nFor checking, not for reading: every claim that did not reproduce at our defaults, every sensitivity sweep setting by setting, and each experiment's full tables.\n");
    out.push_str(
        &fidelity::not_reproduced(rows, &figures, &ctx.figures_dir)
            .replace("\n### ", "\n### Appendix: "),
    );
    out.push_str(
        &fidelity::sweeps(rows).replace("\n### ", "\n#### ").replace(
            "\n## Sensitivity sweeps",
            "\n### Appendix: sensitivity sweeps",
        ),
    );
    for s in sections.iter().filter(|s| !s.appendix.is_empty()) {
        out.push_str(&format!(
            "\n### Appendix: {} tables\n\n{}\n",
            s.experiment, s.appendix
        ));
    }
    std::fs::write(path, out).map_err(|e| Error::io("writing report.md", e))
}

/// The server as the report names it: the product (Valkey reports
/// `redis_version:7.2.4`, so the version alone would mislead) and its
/// allocator, where `limitbench matrix` recorded them.
fn server_text(s: &serde_json::Value) -> String {
    let version = s["version"].as_str().unwrap_or("?");
    let field = |k: &str| s[k].as_str().unwrap_or("?");
    match s["product"].as_str() {
        Some(product) => {
            // The binary (the matrix's `binary`, a run's `path`) or the
            // external server's URL; then how it was chosen, if recorded.
            let at = ["binary", "path", "external"]
                .iter()
                .find_map(|k| s[*k].as_str())
                .unwrap_or("?");
            let build = s["build_id"]
                .as_str()
                .map(|b| format!(", build id {b}"))
                .unwrap_or_default();
            let source = s["source"]
                .as_str()
                .map(|x| format!(", from {x}"))
                .unwrap_or_default();
            format!(
                "{product} {version} (INFO redis_version {}, mem_allocator {}{build}, --version malloc {}; {at}{source})",
                field("redis_version"),
                field("mem_allocator"),
                field("version_malloc"),
            )
        }
        None => format!("redis-server {version}"),
    }
}
