//! The preflight of a run: before a quick or full run (or a resumed one)
//! measures anything, the machine is measured for a few seconds. If other
//! processes take more CPU than the run's experiments tolerate (the
//! smallest `others_max_cores` among them), the run stops with the busiest
//! process named, unless `--allow-busy` is given; then the manifest records
//! it (`preflight`) and the report's first lines say so. A smoke run (a
//! check that the artifact works, judged on nothing) skips it.
//!
//! A server the user runs (`--redis-url`) on this machine is another
//! process here: if it serves other clients, the preflight sees it busy.

use std::time::Duration;

use anyhow::Result;

use super::request::RunRequest;
use crate::experiments::{self, Size};

/// How long the machine is watched.
pub const SECONDS: f64 = 3.0;

/// Measure the machine before the run of `names`; an error if it is busy
/// and `--allow-busy` was not given. The record for the manifest (None:
/// not measured, a smoke run).
pub async fn check(a: &RunRequest, names: &[&'static str]) -> Result<Option<serde_json::Value>> {
    if a.size == Size::Smoke {
        return Ok(None);
    }
    let bound = names
        .iter()
        .filter_map(|n| experiments::find(n).ok())
        .map(|d| d.others_max_cores)
        .fold(f64::INFINITY, f64::min);
    if !bound.is_finite() {
        return Ok(None);
    }
    let (cores, busiest) = crate::run::noise::others_now(Duration::from_secs_f64(SECONDS)).await;
    let busy = cores > bound;
    if busy && !a.allow_busy {
        anyhow::bail!(
            "the machine is busy: other processes took {cores:.2} cores over {SECONDS} s (busiest: {}), more than the {bound:.2} the run's experiments tolerate during a trial (their others_max_cores). Stop them and run again, or pass --allow-busy to measure anyway (the manifest and the report then say so, and trials disturbed past their bounds are marked and judged on nothing)",
            if busiest.is_empty() { "?" } else { &busiest }
        );
    }
    if busy {
        eprintln!(
            "limitbench: warning: the machine is busy (others took {cores:.2} cores, busiest: {busiest}); going on because of --allow-busy"
        );
    }
    Ok(Some(serde_json::json!({
        "other_cpu_cores": (cores * 1000.0).round() / 1000.0,
        "busiest_other": busiest,
        "bound_cores": bound,
        "seconds": SECONDS,
        "busy": busy,
        "allowed_busy": busy && a.allow_busy,
    })))
}

/// The manifest's record after this session's preflight: the busiest
/// session's, with the number of sessions measured.
pub fn merge(old: Option<&serde_json::Value>, new: serde_json::Value) -> serde_json::Value {
    let cores = |v: &serde_json::Value| v["other_cpu_cores"].as_f64().unwrap_or(0.0);
    let sessions = old.and_then(|o| o["sessions"].as_u64()).unwrap_or(0) + 1;
    let mut keep = match old {
        Some(o) if cores(o) >= cores(&new) => o.clone(),
        _ => new,
    };
    keep["sessions"] = sessions.into();
    keep
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resumed_run_keeps_its_busiest_session() {
        let quiet = serde_json::json!({"other_cpu_cores": 0.01, "allowed_busy": false});
        let busy = serde_json::json!({"other_cpu_cores": 0.9, "allowed_busy": true});
        let m = merge(None, quiet.clone());
        assert_eq!(m["sessions"], 1);
        let m = merge(Some(&m), busy);
        assert_eq!(
            (m["sessions"].as_u64(), m["allowed_busy"].as_bool()),
            (Some(2), Some(true))
        );
        let m = merge(Some(&m), quiet);
        assert_eq!(
            (m["sessions"].as_u64(), m["allowed_busy"].as_bool()),
            (Some(3), Some(true))
        );
    }
}
