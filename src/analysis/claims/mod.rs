//! The claims table and the verdicts.
//!
//! `analysis/claims.toml` holds, per claim ID, the published value, the unit,
//! the check and its tolerance. Analyzers return `Measured` values computed
//! from raw rows; `judge` applies the check. A claim nobody measured is
//! `not-run`.

use std::path::Path;

use serde::Deserialize;

use crate::error::{Error, Result};

mod measured;
pub use measured::{Alternative, Measured, Setting, setting_text};

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
