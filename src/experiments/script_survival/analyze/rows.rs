//! The rows of `script-survival.csv`: one per check or client, per scenario.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Row {
    pub cell: String,
    pub trial: u64,
    pub seed: u64,
    pub replica_read_only: String,
    pub scenario: String,
    pub target: String,
    /// `script_exists`, `evalsha`, `evalsha_ro`, `fcall`, `fcall_ro`,
    /// `function_list`, or `client:<invocation>`.
    pub check: String,
    pub script: String,
    pub ok: bool,
    /// `ok`, `true`/`false` (SCRIPT EXISTS), or the error's first word.
    pub outcome: String,
    /// The reply or error text, verbatim.
    pub reply: String,
    pub decisions: u64,
    pub succeeded: u64,
    pub failed_calls: u64,
    pub round_trips: u64,
    pub extra_round_trips: i64,
    pub noscript_fallbacks: u64,
}

limitbench_analysis::keyed!(Row);
