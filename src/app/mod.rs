//! What the commands do, above the layers: the only place the experiment
//! list ([`crate::experiments::REGISTRY`]) is walked, for runs and for the
//! analysis (`limitbench-analysis` takes the analyzers as an argument and
//! knows no registry).

use std::path::Path;

use crate::experiments::REGISTRY;
use limitbench_analysis::{ExperimentAnalysis, Judged};
use limitbench_base::error::Result;

pub mod adaptive;
pub mod budget;
pub mod matrix;
pub mod run;
pub mod session;

/// Every experiment's analyzer, in report order.
pub fn analyzers() -> Vec<ExperimentAnalysis> {
    REGISTRY
        .iter()
        .map(|e| ExperimentAnalysis {
            name: e.name,
            analyze: e.analyze,
        })
        .collect()
}

/// Analyze a run folder (claims.csv, report.md, figures/) with every
/// experiment's analyzer.
pub fn analyze(run_dir: &Path, claims_file: &Path) -> Result<Vec<Judged>> {
    analyze_with_rerun(run_dir, claims_file, None)
}

/// [`analyze`], the report's findings naming how far an independent rerun
/// (its folder; only its `claims.csv` is read) agrees.
pub fn analyze_with_rerun(
    run_dir: &Path,
    claims_file: &Path,
    rerun: Option<&Path>,
) -> Result<Vec<Judged>> {
    let started = std::time::SystemTime::now();
    let out = limitbench_analysis::analyze_with_rerun(run_dir, claims_file, &analyzers(), rerun);
    if out.is_err() {
        remove_written_since(&run_dir.join("figures"), started);
    }
    out
}

/// A failed analysis leaves no partial figures: the files of `dir` written
/// since `since` go (older ones, from an earlier analysis, stay).
fn remove_written_since(dir: &Path, since: std::time::SystemTime) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        let fresh = e
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|t| t >= since);
        if p.is_file() && fresh {
            let _ = std::fs::remove_file(&p);
        }
    }
    // An empty folder this analysis made goes too.
    let _ = std::fs::remove_dir(dir);
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use limitbench_analysis::claims;

    fn shipped_claims() -> Vec<limitbench_analysis::ClaimSpec> {
        let names: Vec<&str> = REGISTRY.iter().map(|e| e.name).collect();
        claims::load(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("analysis/claims.toml"),
            &names,
        )
        .unwrap()
    }

    #[test]
    fn the_shipped_claims_table_loads_and_covers_every_id() {
        let claims = shipped_claims();
        assert_eq!(claims.len(), 41);
        for id in [
            "A0", "A1.1", "A3.0", "A4.3", "B1", "B3.3", "B6.5", "B7.2", "B8",
        ] {
            assert!(claims.iter().any(|c| c.id == id), "{id} missing");
        }
    }

    /// The effect claims (over-admission, slowdown, a jump, a cost): each
    /// names in claims.toml what a system without the effect measures.
    const EFFECT_CLAIMS: &[&str] = &[
        "A1.1", "A1.2", "A2.1", "A2.2", "A3.1", "A3.2", "A3.3", "A4.2", "B2.1", "B2.4", "B2.6",
        "B3.2", "B5.1", "B5.2", "B6.1", "B7.1",
    ];

    /// An ideal limiter (exact counts, no jump, no drift, no extra cost)
    /// measured perfectly, with ten trials: every effect claim must be
    /// `not-reproduced` on it. A tolerance widened past the effect fails here.
    /// This feeds the judge the `no_effect` values; `tests/ideal_limiter.rs`
    /// feeds each analyzer an ideal limiter's CSV rows (the same list of claims).
    #[test]
    fn every_effect_claim_is_not_reproduced_on_an_ideal_limiter() {
        let claims = shipped_claims();
        for id in EFFECT_CLAIMS {
            let c = claims.iter().find(|c| c.id == *id).unwrap();
            let ideal = c
                .no_effect
                .as_ref()
                .unwrap_or_else(|| panic!("{id}: an effect claim names its no_effect value"));
            let n = match c.check {
                claims::Check::InRange => 1,
                _ => c.published.values().len(),
            };
            let values: Vec<f64> = (0..n).map(|i| ideal.at(i)).collect();
            // Every value asserts its own effect (B5.1 at each rate): each
            // ideal value lies outside its own tolerance region.
            for (i, v) in values.iter().enumerate() {
                let (_, region, rule) = claims::pass_region(c, i);
                let (lo, hi) = region.unwrap();
                assert!(
                    *v < lo || *v > hi,
                    "{id} value {i}: the ideal limiter's {v} is inside the tolerance ({rule})"
                );
            }
            let m = limitbench_analysis::Measured::new(id, values.clone(), "", "")
                .intervals(values.iter().map(|v| (*v, *v)).collect(), "ideal")
                .trials(10);
            let j = claims::judge(std::slice::from_ref(c), vec![m], "full");
            assert_eq!(
                j[0].verdict,
                limitbench_analysis::Verdict::NotReproduced,
                "{id} at its no-effect value {values:?}: {}",
                j[0].why
            );
        }
    }

    #[test]
    fn a_claim_without_a_tolerance_basis_is_refused_at_load() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("claims.toml");
        let text = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("analysis/claims.toml"),
        )
        .unwrap();
        let cut = text.find("tolerance_basis = ").unwrap();
        let end = cut + text[cut..].find('\n').unwrap() + 1;
        std::fs::write(&p, format!("{}{}", &text[..cut], &text[end..])).unwrap();
        let names: Vec<&str> = REGISTRY.iter().map(|e| e.name).collect();
        let e = claims::load(&p, &names).unwrap_err().to_string();
        assert!(e.contains("A0 tolerance_basis"), "{e}");
    }

    #[test]
    fn a_reproduction_claim_without_an_interval_basis_is_refused_at_load() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("claims.toml");
        let text = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("analysis/claims.toml"),
        )
        .unwrap();
        // A0 is a `study` claim (no interval); the first basis is A1.1's.
        let cut = text.find("interval_basis = ").unwrap();
        let end = cut + text[cut..].find('\n').unwrap() + 1;
        std::fs::write(&p, format!("{}{}", &text[..cut], &text[end..])).unwrap();
        let names: Vec<&str> = REGISTRY.iter().map(|e| e.name).collect();
        let e = claims::load(&p, &names).unwrap_err().to_string();
        assert!(e.contains("A1.1 interval_basis"), "{e}");
        // Every reproduction claim of the table has one.
        claims::load(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("analysis/claims.toml"),
            &names,
        )
        .unwrap();
    }

    #[test]
    fn a_claim_naming_no_experiment_is_refused_at_load() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("claims.toml");
        let text = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("analysis/claims.toml"),
        )
        .unwrap()
        .replacen("experiment = \"bursts\"", "experiment = \"burst\"", 1);
        std::fs::write(&p, text).unwrap();
        let names: Vec<&str> = REGISTRY.iter().map(|e| e.name).collect();
        let e = claims::load(&p, &names).unwrap_err().to_string();
        assert!(e.contains("no experiment named `burst`"), "{e}");
    }

    #[test]
    fn every_registered_experiment_has_an_analyzer_and_claims() {
        let claims = shipped_claims();
        let listed: Vec<&str> = analyzers().iter().map(|a| a.name).collect();
        assert_eq!(
            listed,
            REGISTRY.iter().map(|e| e.name).collect::<Vec<_>>(),
            "the analyzers follow the registry's order"
        );
        for e in REGISTRY {
            // Experiments beyond the studies (baseline, failover) are
            // evidence for no published claim; every study experiment is.
            let has = claims.iter().any(|c| c.experiment == e.name);
            assert_eq!(
                has,
                e.study != "beyond",
                "experiment {} (study {}): in analysis/claims.toml = {has}",
                e.name,
                e.study
            );
        }
    }
}
