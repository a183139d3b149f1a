//! What the matrix knows of each server: the study's server
//! ([`STUDY_SERVER`]), a server's [`Identity`] as read from the server
//! itself, its column ([`ServerColumn`]: status and time), and the table of
//! the servers with the noise and time of each server's run, read from its
//! sub-run folder.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::rows::{NoiseRow, ScheduleRow};

/// The studies' server: the column whose rows are judged against the publication.
pub const STUDY_SERVER: &str = "redis-7.0";

/// The study's server run a second time (`limitbench matrix --rerun`,
/// another seed): how far the same server moves between two runs, which a
/// difference between servers must pass to count.
pub const STUDY_RERUN: &str = "redis-7.0-rerun";

/// What a server is, read from the server itself (`limitbench matrix`
/// probes it before the run; the application's `servers::identity`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Identity {
    /// "Redis" or "Valkey", from INFO (`server_name` / `valkey_version`).
    pub product: String,
    /// The product's own version (`valkey_version` on Valkey).
    pub version: String,
    /// INFO's `redis_version` (7.2.4 on every Valkey).
    pub redis_version: String,
    pub mem_allocator: String,
    /// INFO's `redis_build_id` (absent in identities read before it).
    #[serde(default)]
    pub build_id: String,
    /// INFO's `redis_git_sha1` (`00000000` for a build from a tarball).
    #[serde(default)]
    pub git_sha1: String,
    /// `malloc=` of `--version`.
    pub version_malloc: String,
    pub binary: String,
    /// `CONFIG GET` of every setting limitbench sets, on a server started
    /// bare; a setting the server does not know is absent.
    pub defaults: BTreeMap<String, String>,
}

impl Identity {
    /// "Valkey 9.1.2 (libc)": what a report names.
    pub fn label(&self) -> String {
        format!("{} {} ({})", self.product, self.version, self.mem_allocator)
    }

    /// The fields as JSON for the manifest's `redis_server`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }
}

/// One server's column: what it is and how its run went.
#[derive(Debug, Clone, Default)]
pub struct ServerColumn {
    pub name: String,
    pub status: String,
    pub reason: Option<String>,
    pub identity: Option<Identity>,
    pub run_seconds: f64,
    pub scorecard_seconds: f64,
}

/// The noise sampler's view of a server's run: the other processes' CPU
/// (cores) during its cells, the median of the cells' means and the
/// largest one-interval value, and the cell count.
pub fn noise_of(sub: &Path) -> Option<(f64, f64, usize)> {
    // A noise.csv that does not parse shows no noise, as a missing one.
    let (_, rows, _) = crate::read_table::<NoiseRow>(sub, "noise.csv").ok()??;
    let mut means: Vec<f64> = rows.iter().map(|r| r.other_cpu_cores_mean).collect();
    let worst = rows
        .iter()
        .map(|r| r.other_cpu_cores_max)
        .fold(0.0, f64::max);
    means.sort_by(f64::total_cmp);
    let n = means.len();
    (n > 0).then(|| {
        (
            limitbench_base::stats::quantile_sorted(&means, 0.5),
            worst,
            n,
        )
    })
}

/// The committed trials of a server's run that were disturbed past their
/// experiment's bounds (`schedule.csv`), and the committed trials.
pub fn disturbed_of(sub: &Path) -> Option<(usize, usize)> {
    let (_, rows, _) = crate::read_table::<ScheduleRow>(sub, "schedule.csv").ok()??;
    let committed: Vec<&ScheduleRow> = rows.iter().filter(|r| r.committed).collect();
    let bad = committed
        .iter()
        .filter(|r| r.disturbance().is_some())
        .count();
    Some((bad, committed.len()))
}

/// The seconds a server's experiments took, summed over the sessions of a
/// resumed run (the manifest keeps them), or `fallback` without a manifest.
pub fn run_seconds_of(sub: &Path, fallback: f64) -> f64 {
    std::fs::read_to_string(sub.join("manifest.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|m| {
            m["experiments"]
                .as_object()
                .map(|e| e.values().filter_map(|x| x["seconds"].as_f64()).sum())
        })
        .unwrap_or(fallback)
}

/// The servers' identities, the time each took and the skipped ones.
pub fn servers_table(run_dir: &Path, columns: &[ServerColumn]) -> String {
    let mut md = String::from(
        "| server | product | version | INFO redis_version | mem_allocator | --version malloc | lazyfree-lazy-expire default | zset-max-listpack-entries default | status | run s | scorecard s | other processes' CPU, cores (median of cells' means / max) | disturbed trials |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for c in columns {
        let id = c.identity.clone().unwrap_or_default();
        let d = |k: &str| id.defaults.get(k).cloned().unwrap_or_else(|| "-".into());
        let status = match &c.reason {
            Some(r) => format!("{}: {r}", c.status),
            None => c.status.clone(),
        };
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.0} | {:.0} | {} | {} |",
            c.name,
            id.product,
            id.version,
            id.redis_version,
            id.mem_allocator,
            id.version_malloc,
            d("lazyfree-lazy-expire"),
            d("zset-max-listpack-entries"),
            status.replace('|', "/"),
            run_seconds_of(&run_dir.join(&c.name), c.run_seconds),
            c.scorecard_seconds,
            noise_of(&run_dir.join(&c.name))
                .map(|(m, x, n)| format!("{m:.2} / {x:.2} ({n} cells)"))
                .unwrap_or_else(|| "-".into()),
            disturbed_of(&run_dir.join(&c.name))
                .map(|(b, n)| format!("{b} of {n}"))
                .unwrap_or_else(|| "-".into())
        );
    }
    md
}
