//! Deadlines for a cell's setup and each trial: a stalled server (a
//! SIGSTOPped redis-server, a network that drops packets) makes a trial
//! fail with a named timeout instead of hanging the run, and a trial that
//! hit its deadline is not committed (resume redoes it).
//!
//! The limit comes from the experiment itself: ten times the slowest trial
//! of the same cell so far in this session, at least 60 s; a cell's first
//! trial and its setup get 600 s (cells of one experiment differ by orders
//! of magnitude; the longest whole experiment of the full reference run
//! took under 400 s). `--stall-after` overrides it. While a trial runs
//! past a tenth of its limit (at least 5 s), a line every 10 s says so.
//!
//! Every trial's wall time goes to `trial-times.csv` (experiment, cell,
//! trial, wall_ms; the row type is the analysis crate's
//! `rows::TrialTime`), which `analyze` reads to flag trials that took far
//! longer than the others of their cell (`limitbench_analysis::trial_times`).

use std::time::{Duration, Instant};

use super::context::RunContext;
use limitbench_base::error::{Error, Result};

const FIRST_LIMIT: Duration = Duration::from_secs(600);
const FLOOR: Duration = Duration::from_secs(60);
const SLOWEST_FACTOR: u32 = 10;

/// The deadlines of one experiment's sweep.
pub struct Deadlines {
    fixed: Option<Duration>,
    /// The slowest trial of each cell so far.
    slowest: std::collections::HashMap<String, Duration>,
}

impl Deadlines {
    pub fn new(ctx: &RunContext) -> Self {
        Deadlines {
            fixed: ctx.stall_after,
            slowest: Default::default(),
        }
    }

    /// The limit the next trial of `cell` (or its setup) gets.
    pub fn limit(&self, cell: &str) -> Duration {
        if let Some(f) = self.fixed {
            return f;
        }
        match self.slowest.get(cell) {
            None => FIRST_LIMIT,
            Some(s) => (*s * SLOWEST_FACTOR).max(FLOOR),
        }
    }

    /// Remember a trial's duration (the cell's next limits follow its slowest).
    pub fn observed(&mut self, cell: &str, took: Duration) {
        let s = self.slowest.entry(cell.to_string()).or_insert(took);
        *s = (*s).max(took);
    }

    /// Run `work` of `cell` (`what`: "trial 3 of cell `x`") within the limit, with a
    /// progress line while it waits. On timeout the work is dropped (its
    /// connections close) and the error says nothing was committed.
    pub async fn within<T>(
        &self,
        ctx: &RunContext,
        cell: &str,
        what: &str,
        work: impl std::future::Future<Output = Result<T>>,
    ) -> Result<T> {
        let limit = self.limit(cell);
        let started = Instant::now();
        let quiet_for = (limit / 10).max(Duration::from_secs(5));
        tokio::pin!(work);
        let mut tick = tokio::time::interval_at(
            tokio::time::Instant::now() + quiet_for,
            Duration::from_secs(10),
        );
        let deadline = tokio::time::sleep(limit);
        tokio::pin!(deadline);
        loop {
            tokio::select! {
                out = &mut work => return out,
                _ = &mut deadline => {
                    return Err(Error::Timeout(format!(
                        "{what} of `{}` did not finish within {:.0} s (a server stopped answering: stalled or SIGSTOPped?); nothing of it was committed. Resume the run (--resume {}) to redo it; --stall-after sets the limit",
                        ctx.experiment,
                        limit.as_secs_f64(),
                        ctx.run.run_id
                    )));
                }
                _ = tick.tick() => {
                    eprintln!(
                        "[{}] {what}: still waiting after {:.0} s (gives up at {:.0} s)",
                        ctx.experiment,
                        started.elapsed().as_secs_f64(),
                        limit.as_secs_f64()
                    );
                }
            }
        }
    }
}

/// Parse `--stall-after`: a number with a unit (`30s`, `500ms`, `2m`).
pub fn parse_duration(s: &str) -> std::result::Result<Duration, String> {
    let s = s.trim();
    let (num, unit) = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .map(|i| s.split_at(i))
        .unwrap_or((s, "s"));
    let v: f64 = num
        .parse()
        .map_err(|_| format!("`{s}` is not a duration (e.g. 30s, 500ms, 2m)"))?;
    let secs = match unit {
        "ms" => v / 1000.0,
        "s" | "" => v,
        "m" | "min" => v * 60.0,
        other => return Err(format!("`{s}`: unknown unit `{other}` (ms, s, m)")),
    };
    if secs <= 0.0 {
        return Err(format!("`{s}` must be greater than 0"));
    }
    Ok(Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_their_unit() {
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert!(parse_duration("0s").is_err() && parse_duration("3h").is_err());
    }
}
