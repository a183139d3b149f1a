//! `limitbench experiments`: each experiment of the registry, its study and
//! the claims its rows are evidence for.

use std::path::{Path, PathBuf};

use anyhow::Result;

use limitbench::experiments;

#[derive(clap::Args)]
pub struct ExperimentsArgs {
    /// The claims table (which experiment each claim comes from);
    /// default: analysis/claims.toml in the project.
    #[arg(long)]
    claims: Option<PathBuf>,
}

pub fn run(a: ExperimentsArgs, root: &Path) -> Result<i32> {
    let claims = a
        .claims
        .unwrap_or_else(|| root.join("analysis/claims.toml"));
    let names: Vec<&str> = experiments::REGISTRY.iter().map(|e| e.name).collect();
    let claims = limitbench_analysis::claims::load(&claims, &names)?;
    for d in experiments::REGISTRY {
        let ids: Vec<&str> = claims
            .iter()
            .filter(|c| c.experiment == d.name)
            .map(|c| c.id.as_str())
            .collect();
        println!(
            "{:<16} study {:<7} claims {}",
            d.name,
            d.study,
            ids.join(" ")
        );
    }
    Ok(0)
}
