//! The matrix's analysis, above the layers: every finished server's
//! sub-run folder analysed as any run is ([`super::analyze`]), then the
//! judged claims handed to the analysis crate's matrix
//! (`limitbench_analysis::matrix`), which writes the tables and the figure.

use std::path::{Path, PathBuf};

use limitbench_analysis::matrix::ServerColumn;

use limitbench_base::error::Result;

/// Analyse every finished server's folder and write the matrix's tables
/// (`matrix-claims.md`, `matrix-claims.csv`) and figure
/// (`figures/matrix-differ.*`) into `run_dir`; returns the files written.
pub fn analyze_matrix(
    run_dir: &Path,
    claims_file: &Path,
    columns: &[ServerColumn],
) -> Result<Vec<PathBuf>> {
    let mut per_server = Vec::new();
    for c in columns {
        let sub = run_dir.join(&c.name);
        if !sub.join("manifest.json").exists() || c.status == "skipped" {
            continue;
        }
        let judged = super::analyze(&sub, claims_file)?;
        per_server.push((c.name.clone(), judged));
    }
    limitbench_analysis::matrix::write_matrix(run_dir, &per_server, columns)
}
