//! `limitbench servers`: the servers of the matrix
//! (`limitbench::servers::SERVERS`), one line each: name, product, version,
//! allocator, licence, and whether it is ready, fetchable or unavailable.

use anyhow::Result;

use limitbench::servers::{self, Availability, identity};

#[derive(clap::Args)]
pub struct ServersArgs {
    /// Download the wheels that are not cached yet.
    #[arg(long)]
    fetch: bool,
    /// Only these servers (comma-separated, or `all`).
    #[arg(long, value_delimiter = ',')]
    server: Vec<String>,
}

/// One line per server: name, product, version, allocator, licence, status.
pub async fn run(a: ServersArgs) -> Result<i32> {
    let cache = servers::cache_dir();
    println!("cache: {}", cache.display());
    println!(
        "{:<11} {:<7} {:<8} {:<31} {:<11} licence",
        "name", "product", "version", "allocator (INFO / --version)", "status"
    );
    for spec in servers::select(&a.server)? {
        let avail = if a.fetch {
            spec.fetch(&cache)
        } else {
            spec.availability(&cache)
        };
        let (version, alloc, status, why) = match &avail {
            Availability::Ready(bin) => match identity::probe(bin).await {
                Ok(id) => (
                    format!("{} {}", id.product, id.version),
                    format!("{} / {}", id.mem_allocator, id.version_malloc),
                    "ready".to_string(),
                    None,
                ),
                Err(e) => (
                    spec.version.to_string(),
                    "?".into(),
                    "broken".into(),
                    Some(format!("does not start: {e}")),
                ),
            },
            Availability::Fetchable => (
                spec.version.to_string(),
                "?".into(),
                "fetchable".into(),
                None,
            ),
            Availability::Unavailable(why) => (
                spec.version.to_string(),
                "?".into(),
                "unavailable".into(),
                Some(why.clone()),
            ),
        };
        let version = version.split(' ').next_back().unwrap_or("").to_string();
        println!(
            "{:<11} {:<7} {:<8} {:<31} {:<11} {}",
            spec.name, spec.product, version, alloc, status, spec.licence
        );
        if let Some(w) = why {
            println!("  reason: {w}");
        }
    }
    Ok(0)
}
