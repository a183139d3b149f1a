//! The row of one measured window of a `cost` variant.

use super::{CostRow, Params, Variant};
use limitbench_base::stats::histogram_quantile_us;
use limitbench_core::load::replay::Window;

/// The row of one window: client counts, Redis CPU, the variant's
/// top-level commands' time, latency quantiles.
pub(super) fn cost_row(
    p: &Params,
    v: &Variant,
    trial: u64,
    seed: u64,
    load_cpu: Option<usize>,
    w: Window,
) -> CostRow {
    let decisions = w.counts.decisions;
    let (cmd_calls, cmd_usec) = v
        .cmds
        .first()
        .and_then(|c| w.cmdstats.get(c))
        .copied()
        .unwrap_or((0, 0.0));
    let all_usec: f64 = v
        .cmds
        .iter()
        .filter_map(|c| w.cmdstats.get(c))
        .map(|x| x.1)
        .sum();
    let per = |x: f64, n: u64| if n > 0 { x / n as f64 } else { f64::NAN };
    CostRow {
        cell: v.plan.cell.clone(),
        trial,
        variant: v.plan.cell.clone(),
        group: v.plan.group.clone(),
        strategy: v.strategy.clone(),
        invocation: v.invocation.clone(),
        traffic: v.plan.traffic.into(),
        conns: p.conns,
        keys: v.plan.keys,
        limit: v.plan.limit,
        window_ms: v.plan.window_ms,
        prefill_entries: v.plan.prefill_entries,
        seed,
        redis_cpu: Some(p.redis_cpu),
        load_cpu,
        wall_s: w.wall_s,
        decisions,
        admitted: w.counts.admitted,
        errors: w.counts.errors,
        decisions_per_s: decisions as f64 / w.wall_s,
        redis_cpu_us: w.cpu.cpu_us,
        redis_cpu_us_per_decision: w.cpu.cpu_us_per_decision,
        redis_busy_fraction: w.cpu.busy_fraction,
        redis_main_thread_busy_fraction: w.cpu.main_thread_busy_fraction,
        cmd: v.cmds.first().cloned().unwrap_or_default(),
        cmd_calls,
        cmd_usec_per_call: per(cmd_usec, cmd_calls),
        cmd_usec_per_decision: per(all_usec, decisions),
        p50_us: histogram_quantile_us(&w.latency, 0.5),
        p99_us: histogram_quantile_us(&w.latency, 0.99),
        p999_us: histogram_quantile_us(&w.latency, 0.999),
        max_us: if w.latency.is_empty() {
            f64::NAN
        } else {
            w.latency.max() as f64 / 1000.0
        },
        // NaN (no CPU data) counts as load-bound too.
        load_bound: w.cpu.busy_fraction.is_nan() || w.cpu.busy_fraction < 0.9,
        first_error: w.first_error.unwrap_or_default(),
        ..Default::default()
    }
}
