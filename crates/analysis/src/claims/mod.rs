//! The claims table and the verdicts.
//!
//! `analysis/claims.toml` holds, per claim ID, the published value, the unit,
//! the check and its tolerance. Analyzers return `Measured` values computed
//! from raw rows; `judge` applies the check. A claim nobody measured is
//! `not-run`.

use std::path::Path;

use serde::Deserialize;

use limitbench_base::error::{Error, Result};

mod judge;
mod measured;
mod region;
mod table;
pub use judge::{
    Judged, MIN_TRIALS, Outcome, Verdict, cells_to_decide, judge, main_outcome, outcome,
    outcome_with, swept_range, value_passes, verdict,
};
pub use measured::{
    Alternative, BandValue, Explanation, Measured, Setting, setting_text, trials_in, value_text,
    values_of,
};
pub use region::pass_region;
pub use table::{interval_text, reproduced, short, sweep_text, write_csv};

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
    /// Sizes at which the claim is measured (default: every size). A claim
    /// about the full run (trial counts, run time) is `not-run` at the others.
    #[serde(default)]
    pub sizes: Option<Vec<String>>,
    /// What the claim is: `reproduction` (default) counts in the tally;
    /// `study` (describes the study, e.g. its trial count) and `policy` (the
    /// harness's own choice) are reported apart from it.
    #[serde(default = "default_tally")]
    pub tally: String,
    /// Why the tolerance is what it is, fixed before looking at our data:
    /// the study's stated precision, its rounding, or a fraction of the
    /// effect. Required (checked at load).
    #[serde(default)]
    pub tolerance_basis: String,
    /// What the claim's interval is and what it needs to be valid: a
    /// confidence sequence and the assumption it rests on (the asymptotic
    /// one: finite variance and its normal limit at the trials a cell runs),
    /// a bounded one and its bounds, or no interval and why (a count over
    /// every trial, a behaviour). Required for every `reproduction` claim
    /// (checked at load); shown in claims.csv and the report.
    #[serde(default)]
    pub interval_basis: String,
    /// Details the study states (e.g. the bucket's capacity): a sweep value
    /// other than the stated one that reproduces is a finding, and the claim
    /// is `not-reproduced` as stated.
    #[serde(default)]
    pub stated_details: Vec<String>,
    /// Details whose default we chose because it reproduces (the study does
    /// not state them): reproduced there is `reproduced-with-assumption`.
    #[serde(default)]
    pub assumed: Vec<String>,
    /// A reading of the study's sentence the verdict rests on that the study
    /// does not state and no sweep can settle (which decision rate a loop
    /// ran at, how two stated ranges pair): reproduced under it is
    /// `reproduced-with-assumption`, the reading named in the verdict.
    #[serde(default)]
    pub reading: Option<String>,
    /// What a system without the claimed effect measures (an ideal limiter:
    /// exact counts, no jump, no drift), per value: the claim must be
    /// `not-reproduced` there (the ideal-limiter test).
    #[serde(default)]
    pub no_effect: Option<Num>,
    /// A machine claim's own figures from the authors' machine (rates,
    /// microseconds, the absolute ratio), shown and drawn beside ours and
    /// never judged: what is judged is the part that travels (`published`).
    /// Kept here so that every published value lives in claims.toml.
    #[serde(default)]
    pub authors_machine: Option<Num>,
    /// How a disturbed trial (its schedule late, others on the cores) bears
    /// on this claim: absent, the claim decides nothing on a cell holding
    /// one (`disturbance::Disturbances::apply`); `still-valid`, a disturbed
    /// trial is still a test of what the claim asserts (a safety property
    /// a late schedule can neither create nor hide), so the claim is judged
    /// with the disturbed trials counted and says how many. The basis is
    /// `disturbance_basis`.
    #[serde(default)]
    pub disturbance: Option<String>,
    #[serde(default)]
    pub disturbance_basis: String,
    /// The mechanism by which our value can differ from the published one,
    /// in a few words (the model the analysis tests, the unstated detail
    /// the value depends on), written once per claim and never a number of
    /// a run: the report's findings table shows it beside the verdict's own
    /// reason when the claim is not reproduced as stated.
    #[serde(default)]
    pub cause: Option<String>,
}

fn default_tally() -> String {
    "reproduction".into()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ClaimsFile {
    claim: Vec<ClaimSpec>,
}

/// Read the claims table; every claim must name one of `experiments`.
pub fn load(path: &Path, experiments: &[&str]) -> Result<Vec<ClaimSpec>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
    let f: ClaimsFile = toml::from_str(&text).map_err(|e| Error::Manifest {
        file: path.to_path_buf(),
        field: "(TOML syntax)".into(),
        problem: e.to_string(),
    })?;
    for c in &f.claim {
        if let Some(d) = &c.disturbance
            && (d != "still-valid" || c.disturbance_basis.trim().is_empty())
        {
            return Err(Error::Manifest {
                file: path.to_path_buf(),
                field: format!("claim {} disturbance", c.id),
                problem: format!(
                    "`{d}`: the only value is `still-valid`, and it needs a disturbance_basis saying why a disturbed trial still tests the claim"
                ),
            });
        }
        if !matches!(c.tally.as_str(), "reproduction" | "study" | "policy") {
            return Err(Error::Manifest {
                file: path.to_path_buf(),
                field: format!("claim {} tally", c.id),
                problem: format!("`{}` is not one of reproduction, study, policy", c.tally),
            });
        }
        if c.tolerance_basis.trim().is_empty() {
            return Err(Error::Manifest {
                file: path.to_path_buf(),
                field: format!("claim {} tolerance_basis", c.id),
                problem: "missing: every claim states why its tolerance is what it is (the study's precision, its rounding, or a fraction of the effect)".into(),
            });
        }
        if c.tally == "reproduction" && c.interval_basis.trim().is_empty() {
            return Err(Error::Manifest {
                file: path.to_path_buf(),
                field: format!("claim {} interval_basis", c.id),
                problem: "missing: every reproduction claim states what its interval is and what that needs to be valid (an asymptotic confidence sequence's assumption, a bounded one's bounds, or why there is no interval)".into(),
            });
        }
        if !experiments.contains(&c.experiment.as_str()) {
            return Err(Error::Manifest {
                file: path.to_path_buf(),
                field: format!("claim {} experiment", c.id),
                problem: format!("no experiment named `{}`", c.experiment),
            });
        }
    }
    Ok(f.claim)
}

/// A claim for unit tests: the given check and numbers, every other field
/// empty or the default (one builder for the claims, judge and report tests).
#[cfg(test)]
pub(crate) fn test_spec(
    id: &str,
    study: &str,
    experiment: &str,
    check: Check,
    published: Num,
    tolerance: Num,
) -> ClaimSpec {
    ClaimSpec {
        id: id.into(),
        study: study.into(),
        experiment: experiment.into(),
        statement: String::new(),
        kind: "portable".into(),
        unit: String::new(),
        published,
        published_text: String::new(),
        check,
        tolerance,
        metric: String::new(),
        sizes: None,
        tally: "reproduction".into(),
        tolerance_basis: "test".into(),
        interval_basis: "test".into(),
        stated_details: vec![],
        assumed: vec![],
        reading: None,
        no_effect: None,
        authors_machine: None,
        disturbance: None,
        disturbance_basis: String::new(),
        cause: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(check: Check, published: Num, tolerance: Num) -> ClaimSpec {
        test_spec("X", "A", "e", check, published, tolerance)
    }

    #[test]
    fn checks_compare_as_documented() {
        let m = |v: Vec<f64>| Measured::new("X", v, "", "");
        assert_eq!(
            verdict(
                &spec(Check::WithinAbs, Num::One(60.0), Num::One(10.0)),
                &m(vec![52.0])
            ),
            Verdict::Reproduced
        );
        assert_eq!(
            verdict(
                &spec(Check::WithinAbs, Num::One(60.0), Num::One(10.0)),
                &m(vec![49.0])
            ),
            Verdict::NotReproduced
        );
        assert_eq!(
            verdict(
                &spec(Check::InRange, Num::Many(vec![2.0, 3.0]), Num::One(0.2)),
                &m(vec![1.7, 3.5])
            ),
            Verdict::Reproduced
        );
        assert_eq!(
            verdict(
                &spec(Check::InRange, Num::Many(vec![2.0, 3.0]), Num::One(0.2)),
                &m(vec![1.5])
            ),
            Verdict::NotReproduced
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
            Verdict::Reproduced
        );
        assert_eq!(
            verdict(
                &spec(Check::Equals, Num::One(0.0), Num::One(0.0)),
                &m(vec![0.0]).condition("exact", false)
            ),
            Verdict::NotReproduced
        );
        assert_eq!(
            verdict(
                &spec(Check::Behaviour, Num::One(1.0), Num::One(0.0)),
                &m(vec![]).condition("NOSCRIPT", true)
            ),
            Verdict::Reproduced
        );
        assert_eq!(
            verdict(
                &spec(Check::Shape, Num::One(1.0), Num::One(0.0)),
                &m(vec![5.0])
            ),
            Verdict::NotReproduced
        );
        let rows = judge(
            &[spec(Check::Equals, Num::One(0.0), Num::One(0.0))],
            vec![],
            "full",
        );
        assert_eq!(rows[0].verdict, Verdict::NotRun);
    }
}
