//! `limitbench compare`: a run's claims beside a reference run's (both
//! analysed); exits 1 when a claim measured in both has different verdicts.

use std::path::{Path, PathBuf};

use anyhow::Result;

use limitbench_analysis::compare;

#[derive(clap::Args)]
pub struct CompareArgs {
    /// The run to check, e.g. data/latest.
    run_dir: PathBuf,
    /// The run to compare with; default data/reference in the project.
    reference: Option<PathBuf>,
}

pub fn run(a: CompareArgs, root: &Path) -> Result<i32> {
    let run_dir = a.run_dir;
    let reference = a.reference.unwrap_or_else(|| root.join("data/reference"));
    let pairs = compare::pair(
        &compare::read_claims(&run_dir)?,
        &compare::read_claims(&reference)?,
    );
    println!("{} against {}:\n", run_dir.display(), reference.display());
    print!("{}", compare::table(&pairs));
    let differ = pairs.iter().filter(|p| p.differs()).count();
    print!("\n{}", compare::summary(&pairs));
    Ok(if differ > 0 { 1 } else { 0 })
}
