//! Redis CPU accounting: `INFO cpu` and `INFO commandstats` snapshots before
//! and after a measurement window of a hot load, turned into CPU per
//! decision, busy fraction and per-command time. The arithmetic
//! (`CpuSample::from_info`, `cpu_cost`, `command_stats`) is pure and tested
//! on hand-written INFO text; `measure_window` runs the window.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::Serialize;

use super::hot_loop::{Counts, HotLoad, HotSpec};
use super::template::Template;
use crate::info::{self, InfoFields};
use crate::resp::Connection;
use limitbench_base::error::Result;

/// Redis's CPU counters from `INFO cpu` (seconds).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct CpuSample {
    pub user_s: f64,
    pub sys_s: f64,
    pub main_user_s: f64,
    pub main_sys_s: f64,
}

impl CpuSample {
    /// Read from parsed INFO fields; a missing counter reads as 0.
    pub fn from_info(f: &InfoFields) -> Self {
        let g = |k: &str| info::number(f, k).unwrap_or(0.0);
        CpuSample {
            user_s: g("used_cpu_user"),
            sys_s: g("used_cpu_sys"),
            main_user_s: g("used_cpu_user_main_thread"),
            main_sys_s: g("used_cpu_sys_main_thread"),
        }
    }
}

/// What a measurement window cost Redis.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CpuCost {
    /// user+sys of the whole process over the window, us.
    pub cpu_us: f64,
    pub cpu_us_per_decision: f64,
    /// cpu_us / wall: how busy Redis was (1.0 = one core all the time).
    pub busy_fraction: f64,
    /// The same for Redis's main (command) thread alone.
    pub main_thread_busy_fraction: f64,
}

/// INFO cpu deltas over a window of `wall_s` seconds with `decisions`
/// client-counted decisions -> CPU per decision and busy fraction.
pub fn cpu_cost(before: &CpuSample, after: &CpuSample, decisions: u64, wall_s: f64) -> CpuCost {
    let cpu_us = ((after.user_s - before.user_s) + (after.sys_s - before.sys_s)) * 1e6;
    let main_us =
        ((after.main_user_s - before.main_user_s) + (after.main_sys_s - before.main_sys_s)) * 1e6;
    let per = if decisions > 0 {
        cpu_us / decisions as f64
    } else {
        f64::NAN
    };
    let wall_us = wall_s * 1e6;
    let frac = |x: f64| if wall_us > 0.0 { x / wall_us } else { f64::NAN };
    CpuCost {
        cpu_us,
        cpu_us_per_decision: per,
        busy_fraction: frac(cpu_us),
        main_thread_busy_fraction: frac(main_us),
    }
}

/// Per command: (calls, usec).
pub type CommandStats = BTreeMap<String, (u64, f64)>;

/// `cmdstat_<name>` lines of INFO commandstats -> name -> (calls, usec).
pub fn command_stats(f: &InfoFields) -> CommandStats {
    let mut out = BTreeMap::new();
    for (k, v) in f {
        let Some(name) = k.strip_prefix("cmdstat_") else {
            continue;
        };
        let mut calls = 0u64;
        let mut usec = 0f64;
        for part in v.split(',') {
            if let Some((a, b)) = part.split_once('=') {
                match a {
                    "calls" => calls = b.parse().unwrap_or(0),
                    "usec" => usec = b.parse().unwrap_or(0.0),
                    _ => {}
                }
            }
        }
        out.insert(name.to_string(), (calls, usec));
    }
    out
}

/// One snapshot: INFO cpu + commandstats in one call.
pub async fn redis_snapshot(admin: &mut Connection) -> Result<(CpuSample, CommandStats)> {
    let f = info::read(admin, &["cpu", "commandstats"]).await?;
    Ok((CpuSample::from_info(&f), command_stats(&f)))
}

/// A measured window of a hot load: client counts, Redis CPU, commandstats.
#[derive(Debug, Clone)]
pub struct Window {
    pub counts: Counts,
    pub wall_s: f64,
    pub cpu: CpuCost,
    /// name -> (calls, usec) over the window (deltas of INFO commandstats).
    pub cmdstats: CommandStats,
    pub latency: Histogram<u64>,
    pub first_error: Option<String>,
}

/// Start a hot load, warm up, measure one window, stop. `admin` is a
/// separate connection to the same server (its INFO calls are in the window
/// but negligible: two calls).
pub async fn measure_window(
    admin: &mut Connection,
    tpl: Arc<Template>,
    spec: HotSpec,
    warmup: Duration,
    window: Duration,
) -> Result<Window> {
    measure_started(admin, HotLoad::start(tpl, spec).await?, warmup, window).await
}

/// [`measure_window`] of a hot load already started (a template's or a
/// strategy's own decisions, [`HotLoad::start_decide`]).
pub async fn measure_started(
    admin: &mut Connection,
    load: HotLoad,
    warmup: Duration,
    window: Duration,
) -> Result<Window> {
    tokio::time::sleep(warmup).await;
    admin.call(&crate::args!["CONFIG", "RESETSTAT"]).await?;
    // Commands between RESETSTAT and this snapshot are subtracted below, so
    // the window's commandstats match the window's client counts.
    let (cpu0, stats0) = redis_snapshot(admin).await?;
    let c0 = load.counts();
    let t0 = Instant::now();
    load.set_recording(true);
    tokio::time::sleep(window).await;
    load.set_recording(false);
    let c1 = load.counts();
    let wall_s = t0.elapsed().as_secs_f64();
    let (cpu1, stats) = redis_snapshot(admin).await?;
    let first_error = load.first_error();
    let latency = load.stop().await?;
    let counts = c1.since(&c0);
    let cmdstats = stats
        .into_iter()
        .map(|(k, (calls, usec))| {
            let (c0, u0) = stats0.get(&k).copied().unwrap_or((0, 0.0));
            (k, (calls.saturating_sub(c0), usec - u0))
        })
        .collect();
    Ok(Window {
        counts,
        wall_s,
        cpu: cpu_cost(&cpu0, &cpu1, counts.decisions, wall_s),
        cmdstats,
        latency,
        first_error,
    })
}
