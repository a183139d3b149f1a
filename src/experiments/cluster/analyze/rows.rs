//! The rows of `cluster.csv` (one per trial: a `users` trial's counts or a
//! `concurrency` trial's admissions) and of `cluster-users.csv` (one per user
//! of a `users` trial).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Row {
    pub cell: String,
    pub trial: u64,
    pub seed: u64,
    /// `users` (one decision per user) or `concurrency`.
    pub kind: String,
    pub nodes: u64,
    pub variant: String,
    pub flags: String,
    pub users: u64,
    pub ok: u64,
    pub failed: u64,
    pub fraction_ok: f64,
    /// Users whose derived key is on the same node as the base key.
    pub same_node: u64,
    pub ok_same_node: u64,
    pub ok_other_node: u64,
    /// Distinct error texts with counts: `text (xN) | ...`.
    pub errors: String,
    pub strategy: String,
    pub workers: u64,
    pub limit: u64,
    pub offered: u64,
    pub admitted: u64,
    pub exact: bool,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct UserRow {
    pub cell: String,
    pub trial: u64,
    pub user: String,
    pub base_key: String,
    pub base_slot: u16,
    pub base_node: String,
    pub derived_key: String,
    pub derived_slot: u16,
    pub derived_node: String,
    pub ok: bool,
    pub error: String,
}

limitbench_analysis::keyed!(Row, UserRow);
