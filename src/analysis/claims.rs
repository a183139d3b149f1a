//! The claims table and the verdicts.
//!
//! `analysis/claims.toml` holds, per claim ID, the published value, the unit,
//! the check and its tolerance. Analyzers return `Measured` values computed
//! from raw rows; `judge` applies the check. A claim nobody measured is
//! `not-run`.

use std::path::Path;

use serde::Deserialize;

use super::{AnalysisCtx, Section};
use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Check {
    Equals,
    WithinAbs,
    WithinRel,
    InRange,
    AtMost,
    AtLeast,
    Shape,
    Behaviour,
}

impl Check {
    pub fn as_str(&self) -> &'static str {
        match self {
            Check::Equals => "equals",
            Check::WithinAbs => "within_abs",
            Check::WithinRel => "within_rel",
            Check::InRange => "in_range",
            Check::AtMost => "at_most",
            Check::AtLeast => "at_least",
            Check::Shape => "shape",
            Check::Behaviour => "behaviour",
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Num {
    One(f64),
    Many(Vec<f64>),
}

impl Num {
    pub fn values(&self) -> Vec<f64> {
        match self {
            Num::One(v) => vec![*v],
            Num::Many(v) => v.clone(),
        }
    }
    pub fn at(&self, i: usize) -> f64 {
        match self {
            Num::One(v) => *v,
            Num::Many(v) => v.get(i).copied().unwrap_or(f64::NAN),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimSpec {
    pub id: String,
    pub study: String,
    pub experiment: String,
    pub statement: String,
    pub kind: String,
    pub unit: String,
    pub published: Num,
    pub published_text: String,
    pub check: Check,
    pub tolerance: Num,
    pub metric: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ClaimsFile {
    claim: Vec<ClaimSpec>,
}

pub fn load(path: &Path) -> Result<Vec<ClaimSpec>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
    let f: ClaimsFile = toml::from_str(&text).map_err(|e| Error::Manifest {
        file: path.to_path_buf(),
        field: "(TOML syntax)".into(),
        problem: e.to_string(),
    })?;
    for c in &f.claim {
        if crate::experiments::find(&c.experiment).is_err() {
            return Err(Error::Manifest {
                file: path.to_path_buf(),
                field: format!("claim {} experiment", c.id),
                problem: format!("no experiment named `{}`", c.experiment),
            });
        }
    }
    Ok(f.claim)
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
    /// What differs and the likely reason, for the report (esp. on a fail).
    pub note: String,
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
    pub fn note(mut self, n: impl Into<String>) -> Self {
        self.note = n.into();
        self
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    Fail,
    NotRun,
}

impl Verdict {
    pub fn as_str(&self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::NotRun => "not-run",
        }
    }
}

/// Apply a claim's check to a measurement.
pub fn verdict(spec: &ClaimSpec, m: &Measured) -> Verdict {
    let conditions_hold = m.conditions.iter().all(|c| c.1);
    let numeric = |f: &dyn Fn(f64, f64, f64) -> bool| -> bool {
        !m.values.is_empty()
            && m.values
                .iter()
                .enumerate()
                .all(|(i, v)| v.is_finite() && f(*v, spec.published.at(i), spec.tolerance.at(i)))
    };
    let ok = match spec.check {
        Check::Equals | Check::WithinAbs => numeric(&|v, p, t| (v - p).abs() <= t + 1e-9),
        Check::WithinRel => numeric(&|v, p, t| (v - p).abs() <= t * p.abs() + 1e-9),
        Check::AtMost => numeric(&|v, p, t| v <= p + t + 1e-9),
        Check::AtLeast => numeric(&|v, p, t| v >= p - t - 1e-9),
        Check::InRange => {
            let (lo, hi, t) = (
                spec.published.at(0),
                spec.published.at(1),
                spec.tolerance.at(0),
            );
            !m.values.is_empty()
                && m.values
                    .iter()
                    .all(|v| *v >= lo * (1.0 - t) - 1e-9 && *v <= hi * (1.0 + t) + 1e-9)
        }
        Check::Shape | Check::Behaviour => !m.conditions.is_empty(),
    };
    if ok && conditions_hold {
        Verdict::Pass
    } else {
        Verdict::Fail
    }
}

/// One row per claim in the table, measured or not.
pub fn judge(
    claims: &[ClaimSpec],
    measured: Vec<Measured>,
) -> Vec<(ClaimSpec, Option<Measured>, Verdict)> {
    claims
        .iter()
        .map(|c| {
            let m = measured.iter().find(|m| m.id == c.id).cloned();
            let v = match &m {
                None => Verdict::NotRun,
                Some(m) if m.values.is_empty() && m.conditions.is_empty() => Verdict::NotRun,
                Some(m) => verdict(c, m),
            };
            (c.clone(), m, v)
        })
        .collect()
}

fn num_text(n: &Num) -> String {
    match n {
        Num::One(v) => format!("{v}"),
        Num::Many(v) => v
            .iter()
            .map(|x| format!("{x}"))
            .collect::<Vec<_>>()
            .join("; "),
    }
}

pub fn write_csv(path: &Path, rows: &[(ClaimSpec, Option<Measured>, Verdict)]) -> Result<()> {
    let mut w = csv::Writer::from_path(path)
        .map_err(|e| Error::Other(format!("writing {}: {e}", path.display())))?;
    w.write_record([
        "claim",
        "kind",
        "published",
        "reproduced",
        "unit",
        "tolerance",
        "check",
        "verdict",
        "evidence",
        "experiment",
        "note",
    ])
    .map_err(|e| Error::Other(e.to_string()))?;
    for (c, m, v) in rows {
        let reproduced = m
            .as_ref()
            .map(|m| {
                if m.display.is_empty() {
                    m.values
                        .iter()
                        .map(|x| format!("{x:.4}"))
                        .collect::<Vec<_>>()
                        .join("; ")
                } else {
                    m.display.clone()
                }
            })
            .unwrap_or_default();
        let mut note = m.as_ref().map(|m| m.note.clone()).unwrap_or_default();
        if let Some(m) = m {
            let failed: Vec<&str> = m
                .conditions
                .iter()
                .filter(|c| !c.1)
                .map(|c| c.0.as_str())
                .collect();
            if !failed.is_empty() {
                note = format!("{note} failed conditions: {}", failed.join("; "))
                    .trim()
                    .to_string();
            }
        }
        w.write_record([
            c.id.as_str(),
            c.kind.as_str(),
            c.published_text.as_str(),
            reproduced.as_str(),
            c.unit.as_str(),
            num_text(&c.tolerance).as_str(),
            c.check.as_str(),
            v.as_str(),
            m.as_ref().map(|m| m.evidence.as_str()).unwrap_or(""),
            c.experiment.as_str(),
            note.as_str(),
        ])
        .map_err(|e| Error::Other(e.to_string()))?;
    }
    w.flush()?;
    Ok(())
}

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
    m.values.iter().map(|v| n(*v)).collect::<Vec<_>>().join(" / ")
}

/// The check in words: `within ±10 of 128.7`, `at most 2.3`, `2..4.2`.
pub fn check_text(c: &ClaimSpec) -> String {
    let n = c.published.values().len().max(1);
    let one = |i: usize| {
        let (_, _, rule) = super::figure::pass_region(c, i);
        match c.check {
            Check::Equals | Check::WithinAbs if c.tolerance.at(i) == 0.0 => format!("exactly {}", super::figure::num(c.published.at(i))),
            Check::Equals | Check::WithinAbs | Check::WithinRel => format!("{rule} of {}", super::figure::num(c.published.at(i))),
            _ => rule,
        }
    };
    match c.check {
        Check::Shape => "shape: the analyzer's conditions decide; the value is this machine's".into(),
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
    let failed: Vec<&str> = m.conditions.iter().filter(|c| !c.1).map(|c| c.0.as_str()).collect();
    let mut out = match margins(c, m).iter().copied().reduce(f64::min) {
        Some(x) if x >= -1e-9 => format!("inside by {}", super::figure::num(x.max(0.0))),
        Some(x) => format!("outside by {}", super::figure::num(-x)),
        None if m.conditions.is_empty() || c.check == Check::Behaviour => "-".into(),
        None => format!("{} of {} conditions hold", m.conditions.len() - failed.len(), m.conditions.len()),
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
            md_escape(&m.as_ref().map(|m| format!("{} {}", headline(c, m), unit_short(c)).trim().to_string()).unwrap_or_else(|| "-".into())),
            md_escape(&check_text(c)),
            v.as_str(),
            figure_of(figures, &c.id)
                .map(|f| format!("[{}]({run_rel}/{})", f.file.trim_start_matches("figures/").trim_end_matches(".png"), f.file))
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
    if matches!(u, "behaviour" | "shape") { String::new() } else { u.to_string() }
}

fn md_escape(s: &str) -> String {
    micro(s).replace('|', "\\|").replace('\n', " ")
}

/// The claims table writes microseconds as `us`; a reader gets `µs`.
pub fn micro(s: &str) -> String {
    s.split(' ')
        .map(|w| {
            let core = w.trim_end_matches([';', ',', '.', ')']);
            if core == "us" { format!("µs{}", &w[2..]) } else { w.to_string() }
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
            md_escape(&me.as_ref().map(|m| headline(c, m)).filter(|h| !h.is_empty()).unwrap_or_else(|| "-".into())),
            md_escape(&unit_short(c)),
            md_escape(&check_text(c)),
            md_escape(&me.as_ref().map(|m| margin_text(c, m)).unwrap_or_else(|| "-".into())),
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
                e["seconds"].as_f64().map(|s| format!("{s:.1}")).unwrap_or_else(|| "-".into()),
                md_escape(e["outcome"].as_str().unwrap_or("?"))
            ));
        }
        out.push('\n');
    }
    for s in sections {
        let mine: Vec<_> = rows.iter().filter(|r| r.0.experiment == s.experiment).collect();
        out.push_str(&format!("\n## {}\n\n", s.experiment));
        for (c, me, v) in &mine {
            let Some(me) = me else {
                out.push_str(&format!("- **{} {}**: {}\n", c.id, v.as_str(), micro(&c.statement)));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(check: Check, published: Num, tolerance: Num) -> ClaimSpec {
        ClaimSpec {
            id: "X".into(),
            study: "A".into(),
            experiment: "e".into(),
            statement: String::new(),
            kind: "portable".into(),
            unit: String::new(),
            published,
            published_text: String::new(),
            check,
            tolerance,
            metric: String::new(),
        }
    }

    #[test]
    fn checks_compare_as_documented() {
        let m = |v: Vec<f64>| Measured::new("X", v, "", "");
        assert_eq!(
            verdict(
                &spec(Check::WithinAbs, Num::One(58.0), Num::One(10.0)),
                &m(vec![50.0])
            ),
            Verdict::Pass
        );
        assert_eq!(
            verdict(
                &spec(Check::WithinAbs, Num::One(58.0), Num::One(10.0)),
                &m(vec![47.0])
            ),
            Verdict::Fail
        );
        assert_eq!(
            verdict(
                &spec(Check::InRange, Num::Many(vec![2.5, 3.5]), Num::One(0.2)),
                &m(vec![2.1, 4.1])
            ),
            Verdict::Pass
        );
        assert_eq!(
            verdict(
                &spec(Check::InRange, Num::Many(vec![2.5, 3.5]), Num::One(0.2)),
                &m(vec![1.9])
            ),
            Verdict::Fail
        );
        assert_eq!(
            verdict(
                &spec(
                    Check::WithinRel,
                    Num::Many(vec![1.0, 10.0]),
                    Num::Many(vec![0.1, 0.3])
                ),
                &m(vec![1.05, 12.5])
            ),
            Verdict::Pass
        );
        assert_eq!(
            verdict(
                &spec(Check::Equals, Num::One(0.0), Num::One(0.0)),
                &m(vec![0.0]).condition("exact", false)
            ),
            Verdict::Fail
        );
        assert_eq!(
            verdict(
                &spec(Check::Behaviour, Num::One(1.0), Num::One(0.0)),
                &m(vec![]).condition("NOSCRIPT", true)
            ),
            Verdict::Pass
        );
        assert_eq!(
            verdict(
                &spec(Check::Shape, Num::One(1.0), Num::One(0.0)),
                &m(vec![5.0])
            ),
            Verdict::Fail
        );
        let rows = judge(&[spec(Check::Equals, Num::One(0.0), Num::One(0.0))], vec![]);
        assert_eq!(rows[0].2, Verdict::NotRun);
    }

    #[test]
    fn the_shipped_claims_table_loads_and_covers_every_id() {
        let claims = load(Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/analysis/claims.toml"
        )))
        .unwrap();
        assert_eq!(claims.len(), 41);
        for id in [
            "A0", "A1.1", "A3.0", "A4.3", "B1", "B3.3", "B6.5", "B7.2", "B8",
        ] {
            assert!(claims.iter().any(|c| c.id == id), "{id} missing");
        }
    }
}
