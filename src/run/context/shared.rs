//! Servers the scorecard's probes share across strategies.
//!
//! A probe starts the servers its experiment needs for each strategy, as a
//! run does. Where that setup dwarfs what the probe measures and the
//! strategies cannot touch each other's state, the scorecard starts it once
//! and lends it to every strategy's probe: the `cluster` probe's 3-master
//! cluster (about 2.7 s to start and form for a 10 ms trial, 2026-12-03).
//! Each strategy's users still write keys of their own (the cell id names
//! the strategy) and load their own scripts; nothing is flushed. The
//! servers stop when the last holder drops them (the scorecard's end), or
//! with every other server on Ctrl-C (`fleet::reaper`).

use std::collections::BTreeMap;
use std::sync::Arc;

use limitbench_base::error::Result;
use limitbench_core::fleet::{Fleet, RedisBinary, ServerConfig};

/// Clusters by master count, started on first use.
#[derive(Default)]
pub struct SharedFleets {
    clusters: tokio::sync::Mutex<BTreeMap<usize, Arc<Fleet>>>,
}

impl SharedFleets {
    /// The shared cluster of `masters` masters, started (default server
    /// config, as the experiment starts its own) the first time it is asked
    /// for; and whether this call started it.
    pub async fn cluster(&self, bin: &RedisBinary, masters: usize) -> Result<(Arc<Fleet>, bool)> {
        let mut g = self.clusters.lock().await;
        if let Some(f) = g.get(&masters) {
            return Ok((f.clone(), false));
        }
        let f = Arc::new(Fleet::cluster(bin, ServerConfig::default(), masters).await?);
        g.insert(masters, f.clone());
        Ok((f, true))
    }
}
