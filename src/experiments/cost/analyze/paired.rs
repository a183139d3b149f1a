//! Per-run values of `cost` and their 95% intervals. Runs are interleaved
//! (run t of every variant back to back), so a ratio between two variants is
//! taken per run (paired by trial) and its interval is the confidence sequence
//! of the mean of those per-run ratios (`stats::mean_cs`).
//!
//! B2.1's split: each decision's Redis CPU (INFO cpu delta / decisions) is
//! the command's own time (INFO commandstats usec of the top-level command
//! per decision: the script for Lua, GET for GET) plus the rest (reading,
//! parsing, replying, syscalls, the event loop). Both parts are shown as
//! multiples of GET's whole CPU per decision in the same run.

use super::super::rows::CostRow;
use super::{Variant, Variants};
use limitbench_analysis::stats::mean_cs;

/// `f(a_t, b_t)` for every run t both variants have in the same group
/// (the same cell, server and machine: rows of different groups never pair).
pub(super) fn per_run(a: &Variant, b: &Variant, f: impl Fn(&CostRow, &CostRow) -> f64) -> Vec<f64> {
    a.rows
        .iter()
        .filter_map(|ra| {
            let rb = b
                .rows
                .iter()
                .find(|rb| rb.trial == ra.trial && rb.group == ra.group)?;
            Some(f(ra, rb))
        })
        .filter(|x| x.is_finite())
        .collect()
}

/// `f` of every run of one variant.
pub(super) fn each(a: &Variant, f: impl Fn(&CostRow) -> f64) -> Vec<f64> {
    a.rows
        .iter()
        .map(|r| f(r))
        .filter(|x| x.is_finite())
        .collect()
}

/// The 95% interval of the mean (NaN..NaN with no runs).
pub(super) fn ci(xs: &[f64]) -> (f64, f64) {
    if xs.is_empty() {
        (f64::NAN, f64::NAN)
    } else {
        mean_cs(xs)
    }
}

pub(super) fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Mean of `xs` with its interval: (mean, (lo, hi), n).
pub(crate) type Est = (f64, (f64, f64), usize);

pub(super) fn est(xs: &[f64]) -> Est {
    (mean(xs), ci(xs), xs.len())
}

/// The command's time and the rest of one decision's Redis CPU, µs.
fn cmd_us(r: &CostRow) -> f64 {
    r.cmd_usec_per_decision
}

fn rest_us(r: &CostRow) -> f64 {
    r.redis_cpu_us_per_decision - r.cmd_usec_per_decision
}

/// One variant's CPU per decision against GET's, split (B2.1).
#[derive(Debug, Clone)]
pub struct Split {
    pub cell: String,
    /// Whole CPU per decision / GET's whole CPU per decision, per run.
    pub total: Est,
    /// Command time / GET's whole CPU per decision.
    pub cmd: Est,
    /// The rest / GET's whole CPU per decision.
    pub rest: Est,
    /// The same in µs (means over runs).
    pub total_us: f64,
    pub cmd_us: f64,
    pub rest_us: f64,
}

fn split_of(cell: &str, x: &Variant, g: &Variant) -> Split {
    let g_cpu = |rg: &CostRow| rg.redis_cpu_us_per_decision;
    Split {
        cell: cell.to_string(),
        total: est(&per_run(x, g, |a, b| {
            a.redis_cpu_us_per_decision / g_cpu(b)
        })),
        cmd: est(&per_run(x, g, |a, b| cmd_us(a) / g_cpu(b))),
        rest: est(&per_run(x, g, |a, b| rest_us(a) / g_cpu(b))),
        total_us: mean(&each(x, |r| r.redis_cpu_us_per_decision)),
        cmd_us: mean(&each(x, cmd_us)),
        rest_us: mean(&each(x, rest_us)),
    }
}

/// B2.1: GET's own split (its parts as fractions of itself) and every Lua
/// variant's, each per run against GET's CPU in the same run.
pub fn b21_split(v: &Variants) -> Option<(Split, Vec<Split>)> {
    // GET's own split over every group's GET; each Lua variant against the
    // GET of its own group.
    let g = v.scale()?;
    let lua = v.lua();
    if lua.is_empty() || g.rows.is_empty() {
        return None;
    }
    let none = Variant { rows: vec![] };
    Some((
        split_of("get", &g, &g),
        lua.iter()
            .map(|(c, x)| split_of(c, x, v.get_of(x).map(|(_, g)| g).unwrap_or(&none)))
            .collect(),
    ))
}

/// `f(x_t) / f(GET_t)` of every run t of `x`, with GET the one of `x`'s
/// group in the same run: (trial, ratio).
pub(super) fn to_get(v: &Variants, x: &Variant, f: fn(&CostRow) -> f64) -> Vec<(u64, f64)> {
    let Some((_, g)) = v.get_of(x) else {
        return Vec::new();
    };
    x.rows
        .iter()
        .filter_map(|a| {
            let b = g.rows.iter().find(|b| b.trial == a.trial)?;
            Some((a.trial, f(a) / f(b)))
        })
        .filter(|(_, r)| r.is_finite())
        .collect()
}

/// `1.23 (95% 1.20-1.26)`.
pub(crate) fn show(e: &Est, digits: usize) -> String {
    format!(
        "{:.d$} (95% {:.d$}-{:.d$}, n={})",
        e.0,
        e.1.0,
        e.1.1,
        e.2,
        d = digits
    )
}
