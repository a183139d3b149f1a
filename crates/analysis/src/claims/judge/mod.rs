//! Verdicts: `reproduced`, `reproduced-with-assumption`, `not-reproduced`,
//! `inconclusive`, `not-run`.
//!
//! An equivalence test: a setting reproduces a claim only when the whole 95%
//! interval of every value lies inside the tolerance region (`region.rs`);
//! it does not when one lies wholly outside; anything else, and any value
//! resting on fewer than `MIN_TRIALS` trials, is undecided, so noise and
//! small samples give `inconclusive`, never a pass. A claim is `reproduced`
//! at the setup as the study states it (our defaults for what it leaves
//! unstated), unless a default is marked `assumed` (kept because it
//! reproduces); failing that, `reproduced-with-assumption` when one swept
//! setting reproduces, provided one value of each detail serves every claim
//! of the experiment that has the detail and every claim that sweeps it;
//! a setting that changes a detail the study states is a finding and the
//! claim is `not-reproduced` as stated.
//!
//! The parts: the equivalence test and its outcome (`outcome.rs`), the
//! settings that reproduce a claim and the one-value-per-detail rule
//! (`settings.rs`), and one judged row per claim with the note saying why
//! (`rows.rs`); this file holds the verdict and the judged row.

use super::{ClaimSpec, Measured};

mod outcome;
mod rows;
mod settings;
#[cfg(test)]
mod tests;

pub use outcome::{
    MIN_TRIALS, Outcome, cells_to_decide, main_outcome, outcome, outcome_with, value_passes,
    verdict,
};
pub use rows::judge;
pub use settings::swept_range;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Verdict {
    /// The whole 95% interval lies inside the tolerance region, at the setup
    /// as the study states it (our defaults for what it leaves unstated).
    Reproduced,
    /// Reproduced only at a setting of an unstated detail chosen because it
    /// reproduces: an assumption, shown as one.
    ReproducedWithAssumption,
    /// The whole 95% interval lies outside the tolerance region (or a
    /// condition the claim rests on does not hold).
    NotReproduced,
    /// The interval straddles the region's edge, or rests on fewer than
    /// `MIN_TRIALS` trials: the data do not decide. Not a pass.
    Inconclusive,
    NotRun,
}

impl Verdict {
    pub fn as_str(&self) -> &'static str {
        match self {
            Verdict::Reproduced => "reproduced",
            Verdict::ReproducedWithAssumption => "reproduced-with-assumption",
            Verdict::NotReproduced => "not-reproduced",
            Verdict::Inconclusive => "inconclusive",
            Verdict::NotRun => "not-run",
        }
    }
    pub fn all() -> [Verdict; 5] {
        [
            Verdict::Reproduced,
            Verdict::ReproducedWithAssumption,
            Verdict::NotReproduced,
            Verdict::Inconclusive,
            Verdict::NotRun,
        ]
    }
    /// A verdict by its name in a claims.csv, also the names before issue
    /// 24 (`pass`, `pass-inferred`, `fail`), so old run folders compare.
    pub fn parse(name: &str) -> Option<Verdict> {
        Some(match name.trim() {
            "reproduced" | "pass" => Verdict::Reproduced,
            "reproduced-with-assumption" | "pass-inferred" => Verdict::ReproducedWithAssumption,
            "not-reproduced" | "fail" => Verdict::NotReproduced,
            "inconclusive" => Verdict::Inconclusive,
            "not-run" => Verdict::NotRun,
            _ => return None,
        })
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One row of the claims table after judging.
#[derive(Debug, Clone)]
pub struct Judged {
    pub spec: ClaimSpec,
    pub measured: Option<Measured>,
    pub verdict: Verdict,
    /// For `reproduced-with-assumption`: the setting of the unstated details it needs.
    pub assumption: String,
    /// `inconclusive` because the interval reaches across the tolerance's
    /// edge (not for too few trials): more trials may decide it.
    pub borderline: bool,
    /// Why this verdict: the range swept, a conflict between claims, the size.
    pub why: String,
}
