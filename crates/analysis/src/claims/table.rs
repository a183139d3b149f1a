//! `claims.csv`: one row per claim ID with the published value, ours, its
//! 95% interval, the check, the verdict with the assumption it needs, the
//! sweep it rests on, and the evidence (file and filter).

use std::path::Path;

use super::judge::swept_range;
use super::{Judged, Measured, Num, setting_text};
use limitbench_base::error::{Error, Result};

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

/// A number as a reader writes it: up to four significant decimals, no
/// trailing zeros.
pub fn short(v: f64) -> String {
    if !v.is_finite() {
        return "n/a".into();
    }
    let s = if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else if v.abs() >= 1.0 {
        format!("{v:.3}")
    } else {
        format!("{v:.4}")
    };
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    if s == "-0" { "0".into() } else { s }
}

/// "lo..hi" per value, joined with "; ".
pub fn interval_text(m: &Measured) -> String {
    m.intervals
        .iter()
        .map(|(lo, hi)| format!("{}..{}", short(*lo), short(*hi)))
        .collect::<Vec<_>>()
        .join("; ")
}

/// "setting: value" per swept point, joined with "; ".
pub fn sweep_text(m: &Measured) -> String {
    m.sweep
        .iter()
        .map(|a| {
            let v = if a.display.is_empty() {
                a.values
                    .iter()
                    .map(|x| short(*x))
                    .collect::<Vec<_>>()
                    .join("/")
            } else {
                a.display.clone()
            };
            let own = a.own(&m.setting);
            format!("{}: {v}", setting_text(&own))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The reproduced value as shown: the analyzer's display, else the values.
pub fn reproduced(m: &Measured) -> String {
    if m.display.is_empty() {
        m.values
            .iter()
            .map(|x| format!("{x:.4}"))
            .collect::<Vec<_>>()
            .join("; ")
    } else {
        m.display.clone()
    }
}

pub const HEADER: [&str; 19] = [
    "claim",
    "kind",
    "tally",
    "published",
    "reproduced",
    "interval_95",
    "interval_method",
    "interval_basis",
    "unit",
    "tolerance",
    "check",
    "verdict",
    "assumption",
    "borderline",
    "setting",
    "sweep",
    "evidence",
    "experiment",
    "note",
];

pub fn write_csv(path: &Path, rows: &[Judged]) -> Result<()> {
    let mut w = csv::Writer::from_path(path)
        .map_err(|e| Error::Other(format!("writing {}: {e}", path.display())))?;
    let err = |e: csv::Error| Error::Other(format!("writing {}: {e}", path.display()));
    w.write_record(HEADER).map_err(err)?;
    for j in rows {
        let (c, m) = (&j.spec, j.measured.as_ref());
        let mut note = m.map(|m| m.note.clone()).unwrap_or_default();
        if let Some(m) = m {
            let failed = m.failed_conditions();
            if !failed.is_empty() {
                note = format!("{note} failed conditions: {}", failed.join("; "))
                    .trim()
                    .to_string();
            }
            if !m.model.is_empty() {
                note = format!("{note} model: {}", m.model).trim().to_string();
            }
        }
        if !j.why.is_empty() {
            note = format!("{}. {note}", j.why).trim().to_string();
        }
        let sweep = m
            .map(|m| {
                let r = swept_range(m);
                if r.is_empty() {
                    String::new()
                } else {
                    sweep_text(m)
                }
            })
            .unwrap_or_default();
        w.write_record([
            c.id.as_str(),
            c.kind.as_str(),
            c.tally.as_str(),
            c.published_text.as_str(),
            m.map(reproduced).unwrap_or_default().as_str(),
            m.map(interval_text).unwrap_or_default().as_str(),
            m.map(|m| m.interval_method.clone())
                .unwrap_or_default()
                .as_str(),
            c.interval_basis.as_str(),
            c.unit.as_str(),
            num_text(&c.tolerance).as_str(),
            c.check.as_str(),
            j.verdict.as_str(),
            j.assumption.as_str(),
            if j.borderline { "yes" } else { "no" },
            m.map(|m| setting_text(&m.setting))
                .unwrap_or_default()
                .as_str(),
            sweep.as_str(),
            m.map(|m| m.evidence.as_str()).unwrap_or(""),
            c.experiment.as_str(),
            note.as_str(),
        ])
        .map_err(err)?;
    }
    w.flush()?;
    Ok(())
}
