//! The rows of `cost.csv`: one per (variant, run).

use serde::{Deserialize, Serialize};

/// One measured window of one variant.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct CostRow {
    pub cell: String,
    pub trial: u64,
    pub variant: String,
    /// The cell the variant ran in (`rounds`, `rounds-k`, `swl-fill`): its
    /// ratios are to the GET of the same group and trial. Empty in runs
    /// made before the groups (one `rounds` cell with GET `get`).
    #[serde(default)]
    pub group: String,
    /// `get`, `incr` or the strategy's name.
    pub strategy: String,
    pub invocation: String,
    /// `uniform` over `keys` clients, or `single-key` (the abusive client).
    pub traffic: String,
    pub conns: usize,
    pub keys: u64,
    pub limit: u64,
    pub window_ms: u64,
    /// Entries per sliding log before the run (0: none).
    pub prefill_entries: u64,
    pub seed: u64,
    pub redis_cpu: Option<usize>,
    pub load_cpu: Option<usize>,
    pub wall_s: f64,
    pub decisions: u64,
    pub admitted: u64,
    pub errors: u64,
    pub decisions_per_s: f64,
    pub redis_cpu_us: f64,
    pub redis_cpu_us_per_decision: f64,
    pub redis_busy_fraction: f64,
    pub redis_main_thread_busy_fraction: f64,
    /// The top-level command Redis ran per decision (evalsha, fcall, exec, get ...).
    pub cmd: String,
    pub cmd_calls: u64,
    /// INFO commandstats usec_per_call of `cmd` (the script's own time for Lua).
    pub cmd_usec_per_call: f64,
    /// All top-level commands of a decision (MULTI+EXEC for the transaction), usec / decision.
    pub cmd_usec_per_decision: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
    /// Redis less than 90% busy: the load generator may be the bottleneck.
    pub load_bound: bool,
    pub first_error: String,
    /// redis-benchmark in the same run (GET only).
    pub bench_rps: Option<f64>,
    pub bench_redis_cpu_us_per_request: Option<f64>,
    pub bench_busy_fraction: Option<f64>,
    pub harness_over_bench: Option<f64>,
}

limitbench_analysis::keyed!(CostRow);
