//! The rows of `memory.csv`: one per cell (each cell is measured once).

use serde::{Deserialize, Serialize};

/// One measurement (bytes) or one CPU window (cpu).
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct MemoryRow {
    pub cell: String,
    pub trial: u64,
    /// `bytes` or `cpu`.
    pub kind: String,
    pub strategy: String,
    /// `direct` (ZADD pipelines), `strategy` (EVALSHA one decision at a
    /// time), `strategy-pipelined` (the strategy's request bytes, pipelined).
    pub fill: String,
    pub limit: u64,
    pub member_len: usize,
    /// The member length is the run's default (what the claims are judged
    /// at). Absent in older runs: there the smallest measured is the default.
    #[serde(default)]
    pub default_member: bool,
    pub id_base: u64,
    pub zset_max_listpack_entries: u64,
    pub clients: u64,
    /// Decisions (or entries) written per client.
    pub fill_per_client: u64,
    pub seed: u64,
    pub used_before: f64,
    pub used_after: f64,
    pub bytes_per_client: f64,
    pub bytes_per_entry: Option<f64>,
    /// Mean MEMORY USAGE (SAMPLES 0) of sample keys.
    pub memory_usage_mean: Option<f64>,
    /// Mean size of sample keys (ZCARD / HLEN / STRLEN).
    pub sample_size_mean: Option<f64>,
    pub encoding: String,
    pub fill_s: f64,
    /// Requests the strategy refused while a fill took its clients to (not
    /// past) their limit: it under-admits, and the state measured is not a
    /// busy client's. Only the scorecard's probe stores such a row (its
    /// judge fails or warns it); the study's cells stop with an error.
    /// Absent in older runs.
    #[serde(default)]
    pub fill_refused: Option<u64>,
    // kind = cpu
    pub decisions: Option<u64>,
    pub decisions_per_s: Option<f64>,
    pub redis_cpu_us_per_decision: Option<f64>,
    pub redis_busy_fraction: Option<f64>,
    pub encoding_after: String,
    pub sample_size_after: Option<f64>,
    pub redis_cpu: Option<usize>,
    pub load_cpu: Option<usize>,
    // kind = cpu, the window's instruments (absent in runs before issue 30's B3.4 fix)
    /// Redis's main (command) thread's CPU over the window / wall time.
    #[serde(default)]
    pub redis_main_thread_busy_fraction: Option<f64>,
    /// EVALSHA calls Redis counted over the window (INFO commandstats delta).
    #[serde(default)]
    pub cmd_calls: Option<u64>,
    /// EVALSHA's own time per call over the window (commandstats usec / calls).
    #[serde(default)]
    pub cmd_usec_per_call: Option<f64>,
    /// Redis CPU (user+sys, µs) from before the window's FLUSHALL to the load's
    /// start: the setup (CONFIG SET, FLUSHALL, script load, prefill, sampling),
    /// outside the window's delta; recorded to show its size.
    #[serde(default)]
    pub setup_redis_cpu_us: Option<f64>,
    /// Redis CPU (µs) over the window's delta (the numerator of
    /// `redis_cpu_us_per_decision`).
    #[serde(default)]
    pub window_redis_cpu_us: Option<f64>,
}

limitbench_analysis::keyed!(MemoryRow);
