//! `limitbench merge`: join the folders of a sharded run's shards into one
//! run folder (`limitbench::run::merge` checks they are parts of one run).

use std::path::PathBuf;

use anyhow::Result;

use limitbench::experiments;

#[derive(clap::Args)]
pub struct MergeArgs {
    /// The merged run's folder (new, or empty).
    out: PathBuf,
    /// Every shard's run folder.
    #[arg(required = true, num_args = 2..)]
    runs: Vec<PathBuf>,
}

pub fn run(a: MergeArgs) -> Result<i32> {
    let names: Vec<&str> = experiments::REGISTRY.iter().map(|d| d.name).collect();
    let merged = limitbench::run::merge::merge(&a.out, &a.runs, &names)?;
    for (table, rows) in &merged.tables {
        eprintln!("limitbench: {table}: {rows} rows");
    }
    eprintln!(
        "limitbench: claims, report and figures: limitbench analyze {}",
        merged.dir.path.display()
    );
    println!("{}", merged.dir.path.display());
    Ok(0)
}
