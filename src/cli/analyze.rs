//! `limitbench analyze`: every claim recomputed from a run folder's CSVs
//! (`limitbench::app::analyze`, no Redis needed): claims.csv, report.md,
//! figures/; prints the report's path and the tally. A matrix folder
//! (`servers.json`, `limitbench matrix`) is analysed as the matrix does:
//! every server's folder, then the matrix's tables and figures.

use std::path::{Path, PathBuf};

use anyhow::Result;

use limitbench::app;
use limitbench_analysis::report::{tally, verdict_text};

#[derive(clap::Args)]
pub struct AnalyzeArgs {
    /// The run folder, e.g. data/latest (or a matrix folder, e.g. data/servers).
    run_dir: PathBuf,
    /// The claims table; default: analysis/claims.toml in the project.
    #[arg(long)]
    claims: Option<PathBuf>,
    /// An independent rerun of the same experiments (its folder, analysed
    /// first: only its claims.csv is read); the report's findings then say
    /// how many verdicts agree and name the others
    /// (e.g. `limitbench analyze data/reference --rerun data/reference-rerun`).
    #[arg(long)]
    rerun: Option<PathBuf>,
}

pub fn run(a: AnalyzeArgs, root: &Path) -> Result<i32> {
    let run_dir = a.run_dir;
    let claims = a
        .claims
        .unwrap_or_else(|| root.join("analysis/claims.toml"));
    if !run_dir.is_dir() {
        anyhow::bail!("{} is not a run folder", run_dir.display());
    }
    // Not while a run, a resume or a merge writes the folder.
    let _lock = limitbench::run::lock::RunLock::take(&run_dir, "analyze")?;
    if super::matrix::is_matrix_folder(&run_dir) {
        super::matrix::reanalyze(&run_dir, &claims)?;
        println!("{}", run_dir.join("matrix-claims.md").display());
        return Ok(0);
    }
    let rows = app::analyze_with_rerun(&run_dir, &claims, a.rerun.as_deref())?;
    let repro: Vec<_> = rows
        .iter()
        .filter(|j| j.spec.tally == "reproduction")
        .collect();
    let apart: Vec<String> = rows
        .iter()
        .filter(|j| j.spec.tally != "reproduction")
        .map(|j| format!("{} {}", j.spec.id, verdict_text(j)))
        .collect();
    println!("{}", run_dir.join("report.md").display());
    println!("claims: {} (apart: {})", tally(&repro), apart.join(", "));
    Ok(0)
}
