//! The scorecard's judging, the part every experiment's columns share.
//!
//! A scorecard column is filled by one experiment's probe (the app runs it
//! for one strategy into a probe folder); the experiment's analysis half
//! judges it, in `src/experiments/<name>/analyze/scorecard.rs`: its rows,
//! read back from that folder with the crate's one CSV reader
//! ([`crate::read_table`]), -> each of its columns' value, verdict and
//! detail. The values come from the experiment's rows and, where the
//! experiment's analysis has the metric, from that (`bursts`' window
//! metric, `skew`'s ideal bucket, `cost`'s ratio to GET); what is the
//! scorecard's own is the threshold beside each.
//!
//! Here: a cell's verdict and outcome, what a judge reads
//! ([`ProbeRows`]), the helpers the judges share, the promise patterns and
//! the sliding log's ideal the promise columns show beside a strategy.

use std::path::Path;

use limitbench_base::promise::Promise;
use limitbench_plot::figure::num;
use serde::Serialize;
use serde::de::DeserializeOwned;

use limitbench_base::error::{Error, Result};

/// How a cell was judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CellVerdict {
    Pass,
    Warn,
    Fail,
    NotRun,
    Error,
}

impl CellVerdict {
    pub fn as_str(&self) -> &'static str {
        match self {
            CellVerdict::Pass => "pass",
            CellVerdict::Warn => "warn",
            CellVerdict::Fail => "fail",
            CellVerdict::NotRun => "not-run",
            CellVerdict::Error => "error",
        }
    }
}

/// What judging a property gives.
#[derive(Debug, Clone)]
pub enum CellOutcome {
    Measured {
        value: f64,
        unit: &'static str,
        threshold: String,
        verdict: CellVerdict,
        detail: String,
    },
    NotRun(String),
}

impl CellOutcome {
    /// Judge `value` "lower is better": pass at or below `pass`, warn at or
    /// below `warn`, else fail.
    pub fn at_most(value: f64, unit: &'static str, pass: f64, warn: f64, detail: String) -> Self {
        Self::judged(value, unit, ("<=", |v, t| v <= t), pass, warn, detail)
    }

    /// Judge `value` "higher is better".
    pub fn at_least(value: f64, unit: &'static str, pass: f64, warn: f64, detail: String) -> Self {
        Self::judged(value, unit, (">=", |v, t| v >= t), pass, warn, detail)
    }

    /// Pass if `value` is within `pass` by the comparison `within` (named
    /// `op`), warn if within `warn`, else (or NaN) fail.
    fn judged(
        value: f64,
        unit: &'static str,
        (op, within): (&str, fn(f64, f64) -> bool),
        pass: f64,
        warn: f64,
        detail: String,
    ) -> Self {
        let verdict = if value.is_nan() {
            CellVerdict::Fail
        } else if within(value, pass) {
            CellVerdict::Pass
        } else if within(value, warn) {
            CellVerdict::Warn
        } else {
            CellVerdict::Fail
        };
        CellOutcome::Measured {
            value,
            unit,
            threshold: format!("pass {op} {}, warn {op} {}", num(pass), num(warn)),
            verdict,
            detail,
        }
    }
}

/// A column and its outcome.
pub type ColumnOutcome = (&'static str, Result<CellOutcome>);

/// What a strategy declares that its cells are judged against.
#[derive(Debug, Clone)]
pub struct Declared {
    /// Its promise about bursts (`None`: not declared, and a judge picks
    /// its own ideal).
    pub promise: Option<Promise>,
    /// Whose clock its decisions run on (`redis`, `caller`, ...).
    pub clock: String,
    /// Whether each decision returns Redis's time as the script read it.
    pub reports_redis_time: bool,
}

/// What a judge reads: one strategy's probe folder.
pub struct ProbeRows<'a> {
    dir: &'a Path,
    pub strategy: &'a str,
    pub declared: &'a Declared,
}

impl<'a> ProbeRows<'a> {
    pub fn new(dir: &'a Path, strategy: &'a str, declared: &'a Declared) -> Self {
        ProbeRows {
            dir,
            strategy,
            declared,
        }
    }

    /// Every row of `table` (e.g. `concurrency.csv`).
    pub fn read<T: DeserializeOwned>(&self, table: &str) -> Result<Vec<T>> {
        match crate::read_table(self.dir, table)? {
            Some((_, rows, _torn)) => Ok(rows),
            None => Err(Error::Other(format!(
                "the probe wrote no {table} in {}",
                self.dir.display()
            ))),
        }
    }
}

/// The promise columns and the `bursts` pattern whose probe variant fills
/// each (one row per pattern in the probe table).
pub const PROMISE_PATTERNS: &[(&str, &str)] = &[
    ("straddle", "straddle"),
    ("quiet-burst", "quiet-then-burst"),
    ("burst-sustained", "burst-then-sustained"),
    ("anchored", "anchored"),
];

/// The one row `pick` chooses, or an error naming what is missing.
pub fn one<'r, T>(rows: &'r [T], what: &str, pick: impl Fn(&T) -> bool) -> Result<&'r T> {
    rows.iter()
        .find(|r| pick(r))
        .ok_or_else(|| Error::Other(format!("the probe wrote no row {what}")))
}

/// Every column of a judge with the same error (its table did not read).
pub fn failed(columns: &[&'static str], e: Error) -> Vec<ColumnOutcome> {
    let text = e.to_string();
    columns
        .iter()
        .map(|c| (*c, Err(Error::Other(text.clone()))))
        .collect()
}

pub fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or("").chars().take(120).collect()
}

/// The worse of two verdicts (pass < warn < fail < error).
pub fn worse(a: CellVerdict, b: CellVerdict) -> CellVerdict {
    let rank = |v: CellVerdict| match v {
        CellVerdict::Pass => 0,
        CellVerdict::Warn => 1,
        CellVerdict::Fail => 2,
        CellVerdict::NotRun => 3,
        CellVerdict::Error => 4,
    };
    if rank(b) > rank(a) { b } else { a }
}

/// How many of `sent` (sorted, us) a sliding log of `limit` per `window_us`
/// admits (each arrival is admitted when fewer than `limit` admissions lie
/// in the window before it), and the admission times: the ideal every
/// promise column shows beside the strategy.
pub fn sliding_log_ideal(sent: &[i64], limit: u64, window_us: i64) -> Vec<i64> {
    let mut admitted: Vec<i64> = Vec::new();
    let mut left = 0;
    for &t in sent {
        while left < admitted.len() && t - admitted[left] >= window_us {
            left += 1;
        }
        if ((admitted.len() - left) as u64) < limit {
            admitted.push(t);
        }
    }
    admitted
}

/// Under-admission: the strategy's admissions / the sliding log's on the
/// same arrivals, at least 0.9 to pass, 0.5 to warn. Every design the
/// scorecard knows admits at least what a sliding log admits on these
/// patterns (a fixed window or a bucket admits more); one that admits
/// less is refusing traffic it promised.
pub const UNDER_PASS: f64 = 0.9;
pub const UNDER_WARN: f64 = 0.5;

pub fn under_verdict(fraction: f64) -> CellVerdict {
    if fraction >= UNDER_PASS {
        CellVerdict::Pass
    } else if fraction >= UNDER_WARN {
        CellVerdict::Warn
    } else {
        CellVerdict::Fail
    }
}
