//! The rows of `replication.csv` (one per trial) and of
//! `replication-mismatches.csv` (one per field that differed).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Row {
    pub cell: String,
    pub trial: u64,
    pub seed: u64,
    pub strategy: String,
    pub buckets: u64,
    pub decisions: u64,
    pub admitted: u64,
    pub errors: u64,
    pub achieved_rate_per_s: f64,
    pub caught_up: bool,
    pub catch_up_ms: f64,
    pub master_offset: u64,
    pub replica_offset: u64,
    pub keys_primary: u64,
    pub keys_replica: u64,
    pub matches: u64,
    pub mismatches: u64,
    /// `field:count` for every field that differed somewhere (empty: none).
    pub mismatched_fields: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MismatchRow {
    pub cell: String,
    pub trial: u64,
    pub key: String,
    pub field: String,
    pub primary: String,
    pub replica: String,
}

limitbench_analysis::keyed!(Row, MismatchRow);
