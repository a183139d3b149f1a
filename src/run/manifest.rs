//! `manifest.json`: what ran, where, with what. Written at the start of a
//! run and updated as experiments start and finish, so a killed run still
//! says what it did.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::run::record::{RunDir, now_rfc3339};

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RunManifest {
    pub run_id: String,
    pub git_commit: String,
    pub git_dirty: bool,
    pub seed: u64,
    pub size: String,
    pub command: String,
    pub machine: serde_json::Value,
    pub redis_server: serde_json::Value,
    pub started: String,
    pub ended: Option<String>,
    /// Per experiment: started, ended, seconds, parameters and notes.
    pub experiments: BTreeMap<String, serde_json::Map<String, serde_json::Value>>,
}

impl RunManifest {
    pub fn load(run: &RunDir) -> Result<Option<Self>> {
        let p = run.file("manifest.json");
        if !p.exists() {
            return Ok(None);
        }
        let text =
            std::fs::read_to_string(&p).map_err(|e| Error::io("reading manifest.json", e))?;
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| Error::Other(format!("{}: {e}", p.display())))
    }

    pub fn save(&self, run: &RunDir) -> Result<()> {
        let p = run.file("manifest.json");
        let tmp = run.file("manifest.json.tmp");
        let text = serde_json::to_string_pretty(self).map_err(|e| Error::Other(e.to_string()))?;
        std::fs::write(&tmp, text).map_err(|e| Error::io("writing manifest.json", e))?;
        std::fs::rename(&tmp, &p).map_err(|e| Error::io("writing manifest.json", e))
    }

    pub fn note(&mut self, experiment: &str, key: &str, value: serde_json::Value) {
        self.experiments
            .entry(experiment.to_string())
            .or_default()
            .insert(key.to_string(), value);
    }

    pub fn started_experiment(&mut self, experiment: &str, params: &toml::Table) {
        let e = self.experiments.entry(experiment.to_string()).or_default();
        e.insert("started".into(), now_rfc3339().into());
        e.insert(
            "parameters".into(),
            serde_json::to_value(params).unwrap_or_default(),
        );
        e.remove("ended");
    }

    pub fn ended_experiment(&mut self, experiment: &str, seconds: f64, outcome: &str) {
        let e = self.experiments.entry(experiment.to_string()).or_default();
        e.insert("ended".into(), now_rfc3339().into());
        // A resumed experiment adds its seconds to those of earlier attempts.
        let before = e.get("seconds").and_then(|v| v.as_f64()).unwrap_or(0.0);
        e.insert(
            "seconds".into(),
            (((before + seconds) * 10.0).round() / 10.0).into(),
        );
        e.insert("outcome".into(), outcome.into());
    }
}

/// The machine: CPU model, cores, kernel, OS, memory.
pub fn machine_info() -> serde_json::Value {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .and_then(|r| r.split(':').nth(1))
        })
        .unwrap_or("unknown")
        .trim();
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .unwrap_or_default()
        .trim()
        .to_string();
    let os = std::fs::read_to_string("/etc/os-release")
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            l.strip_prefix("PRETTY_NAME=")
                .map(|v| v.trim_matches('"').to_string())
        })
        .unwrap_or_default();
    let mem_kb = std::fs::read_to_string("/proc/meminfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            l.strip_prefix("MemTotal:").map(|v| {
                v.trim()
                    .trim_end_matches(" kB")
                    .trim()
                    .parse::<u64>()
                    .unwrap_or(0)
            })
        })
        .unwrap_or(0);
    serde_json::json!({
        "cpu_model": model,
        "cores": crate::pin::num_cpus(),
        "kernel": kernel,
        "os": os,
        "memory_mib": mem_kb / 1024,
        "harness_cpus_allowed": crate::pin::allowed_cpus(std::process::id()),
    })
}

/// `git rev-parse HEAD` and whether the tree has uncommitted changes.
pub fn git_state() -> (String, bool) {
    let run = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
    };
    let commit = run(&["rev-parse", "HEAD"])
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    let dirty = run(&["status", "--porcelain", "--untracked-files=no"])
        .map(|o| !o.stdout.is_empty())
        .unwrap_or(false);
    (commit, dirty)
}
