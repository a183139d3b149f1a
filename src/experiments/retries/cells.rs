//! The cells of `retries`: the definition file lists `grids`, each a
//! cartesian product over the details it names (the others at their
//! defaults), so the sweep of every unstated detail runs where a claim reads
//! it and nowhere else (one detail at a time around the default setting,
//! not the full product, which would not fit the time budget).

use serde::Deserialize;

use super::super::testbed::ms_label;
use limitbench_base::error::{Error, Result};
use limitbench_core::strategy::Options;

pub const WATCH: &str = "watch-multi";
/// The default values of the unstated details (the claims' `setting`).
pub const DEFAULT_BACKOFF: &str = "fixed-0";
pub const DEFAULT_ATTEMPT: &str = "watch-get-multi";
pub const UNWATCH_ATTEMPT: &str = "watch-get-multi-unwatch";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Grid {
    /// `watch-multi` and/or `baseline` (the experiment's atomic baseline).
    pub strategies: Vec<String>,
    pub rtts_ms: Vec<f64>,
    #[serde(default = "ten")]
    pub retry_budgets: Vec<u32>,
    /// Backoff labels: `fixed-0`, `fixed-1ms`, `full-jitter-10ms` (base; cap 100 ms).
    #[serde(default = "default_backoff")]
    pub backoffs: Vec<String>,
    #[serde(default = "no")]
    pub budget_includes_first: Vec<bool>,
    /// 0: all L requests at once (closed loop); T: L arrivals uniform over T ms.
    #[serde(default = "zero")]
    pub arrivals_ms: Vec<f64>,
    #[serde(default = "default_attempt")]
    pub attempts: Vec<String>,
    /// Width of the proxy's uniform per-packet extra delay, per direction.
    #[serde(default = "zero")]
    pub rtt_jitters_ms: Vec<f64>,
    /// Overrides the experiment's worker count.
    pub workers: Option<Vec<usize>>,
    pub trials: Option<u64>,
}

fn ten() -> Vec<u32> {
    vec![10]
}
fn default_backoff() -> Vec<String> {
    vec![DEFAULT_BACKOFF.into()]
}
fn no() -> Vec<bool> {
    vec![false]
}
fn zero() -> Vec<f64> {
    vec![0.0]
}
fn default_attempt() -> Vec<String> {
    vec![DEFAULT_ATTEMPT.into()]
}

/// A backoff label as (kind for the strategy's `backoff` option, base us).
pub fn parse_backoff(label: &str) -> Result<(&'static str, u64)> {
    let (kind, rest) = if let Some(r) = label.strip_prefix("full-jitter-") {
        ("full-jitter", r)
    } else if let Some(r) = label.strip_prefix("fixed-") {
        ("fixed", r)
    } else {
        return Err(Error::Other(format!("retries: unknown backoff `{label}`")));
    };
    let us = if let Some(n) = rest.strip_suffix("ms") {
        n.parse::<f64>().ok().map(|v| (v * 1000.0).round() as u64)
    } else if let Some(n) = rest.strip_suffix("us") {
        n.parse::<u64>().ok()
    } else {
        rest.parse::<u64>().ok()
    };
    us.map(|u| (kind, u))
        .ok_or_else(|| Error::Other(format!("retries: cannot read backoff `{label}`")))
}

/// The label of a fixed backoff of `us` (rows written before the label column).
pub fn fixed_label(us: u64) -> String {
    match us {
        0 => DEFAULT_BACKOFF.into(),
        u if u % 1000 == 0 => format!("fixed-{}ms", u / 1000),
        u => format!("fixed-{u}us"),
    }
}

#[derive(Debug, Clone)]
pub struct Cell {
    pub strategy: String,
    /// Budget, backoff label, budget counts the first try, attempt (WATCH only).
    pub watch: Option<(u32, String, bool, String)>,
    pub rtt_ms: f64,
    pub jitter_ms: f64,
    pub arrival_ms: f64,
    pub workers: usize,
    pub trials: u64,
}

impl Cell {
    /// Defaults leave no trace in the id, so the default cells keep ids
    /// close to those of runs before the sweep.
    pub fn id(&self) -> String {
        let mut id = match &self.watch {
            Some((b, bo, f, att)) => format!(
                "{}/b{b}/{bo}/first{}{}",
                self.strategy,
                if *f { "-counted" } else { "-free" },
                if att == DEFAULT_ATTEMPT {
                    ""
                } else {
                    "/unwatch"
                }
            ),
            None => self.strategy.clone(),
        };
        id += &format!("/rtt{}", ms_label(self.rtt_ms));
        if self.jitter_ms > 0.0 {
            id += &format!("/jitter{}", ms_label(self.jitter_ms));
        }
        if self.arrival_ms > 0.0 {
            id += &format!("/spread{}", ms_label(self.arrival_ms));
        }
        id += &format!("/c{}", self.workers);
        id
    }

    pub fn options(&self) -> Result<Options> {
        Ok(match &self.watch {
            Some((b, bo, f, att)) => {
                let (kind, us) = parse_backoff(bo)?;
                Options::default()
                    .with("retry_budget", b)
                    .with("backoff", kind)
                    .with("backoff_us", us)
                    .with("budget_includes_first", f)
                    .with("unwatch", att == UNWATCH_ATTEMPT)
            }
            None => Options::default(),
        })
    }
}

/// Every cell of the grids (deduplicated), ordered by (round trip, jitter)
/// so that one calibrated proxy serves a run of cells.
pub fn cells(
    grids: &[Grid],
    wanted: &[String],
    baseline: &str,
    workers: usize,
    trials: u64,
) -> Result<Vec<Cell>> {
    let mut out: Vec<Cell> = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for g in grids {
        for att in &g.attempts {
            if att != DEFAULT_ATTEMPT && att != UNWATCH_ATTEMPT {
                return Err(Error::Other(format!("retries: unknown attempt `{att}`")));
            }
        }
        for bo in &g.backoffs {
            parse_backoff(bo)?;
        }
        for s in &g.strategies {
            let name = if s == "baseline" {
                baseline
            } else {
                s.as_str()
            };
            if !wanted.iter().any(|w| w == name) {
                continue;
            }
            let watch: Vec<Option<(u32, String, bool, String)>> = if name == WATCH {
                let mut v = Vec::new();
                for &b in &g.retry_budgets {
                    for bo in &g.backoffs {
                        for &f in &g.budget_includes_first {
                            for att in &g.attempts {
                                v.push(Some((b, bo.clone(), f, att.clone())));
                            }
                        }
                    }
                }
                v
            } else {
                vec![None]
            };
            for &rtt in &g.rtts_ms {
                for &j in &g.rtt_jitters_ms {
                    for &a in &g.arrivals_ms {
                        for &c in g.workers.as_deref().unwrap_or(&[workers]) {
                            for w in &watch {
                                let cell = Cell {
                                    strategy: name.to_string(),
                                    watch: w.clone(),
                                    rtt_ms: rtt,
                                    jitter_ms: j,
                                    arrival_ms: a,
                                    workers: c,
                                    trials: g.trials.unwrap_or(trials),
                                };
                                if seen.insert(cell.id()) {
                                    out.push(cell);
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    crate::experiments::testbed::by_round_trip(&mut out, |c| (c.rtt_ms, c.jitter_ms));
    Ok(out)
}
