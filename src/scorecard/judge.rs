//! Judging: an experiment's probe rows (its own row types, read back from
//! the strategy's probe folder) -> each of its columns' value, verdict and
//! detail. The values come from the experiment's rows and, where the
//! experiment's analysis has the metric, from that (`bursts`' window
//! metric, `skew`'s ideal bucket, `cost`'s ratio to GET); what is the
//! scorecard's own is the threshold beside each.

use std::path::Path;

use limitbench_plot::figure::num;
use serde::de::DeserializeOwned;

use super::{Outcome, Verdict};
use super::properties::PROMISE_PATTERNS;
use crate::error::{Error, Result};
use crate::experiments::{
    bursts, cluster, concurrency, cost, fail_open, failover, memory, replication,
    script_survival, skew,
};
use crate::strategy::Info;

/// A column and its outcome.
pub type Judged = (&'static str, Result<Outcome>);

/// What a judge reads: one strategy's probe folder.
pub struct Rows<'a> {
    dir: &'a Path,
    pub strategy: &'a str,
    pub info: &'a Info,
}

impl<'a> Rows<'a> {
    pub fn new(dir: &'a Path, strategy: &'a str, info: &'a Info) -> Self {
        Rows {
            dir,
            strategy,
            info,
        }
    }

    /// Every row of `table` (e.g. `concurrency.csv`).
    pub fn read<T: DeserializeOwned>(&self, table: &str) -> Result<Vec<T>> {
        let p = crate::files::find_table(self.dir, table).ok_or_else(|| {
            Error::Other(format!("the probe wrote no {table} in {}", self.dir.display()))
        })?;
        let bytes = crate::files::read_maybe_compressed(&p)?;
        limitbench_analysis::parse_csv_rows(&bytes)
            .map(|(rows, _)| rows)
            .map_err(|e| Error::Other(format!("{}: {e}", p.display())))
    }
}

/// The one row `pick` chooses, or an error naming what is missing.
fn one<'r, T>(rows: &'r [T], what: &str, pick: impl Fn(&T) -> bool) -> Result<&'r T> {
    rows.iter()
        .find(|r| pick(r))
        .ok_or_else(|| Error::Other(format!("the probe wrote no row {what}")))
}

/// Every column of a judge with the same error (its table did not read).
fn failed(columns: &[&'static str], e: Error) -> Vec<Judged> {
    let text = e.to_string();
    columns
        .iter()
        .map(|c| (*c, Err(Error::Other(text.clone()))))
        .collect()
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or("").chars().take(120).collect()
}

// ---- study A ----

/// `exact-0ms`, `exact-6.7ms`: admitted / limit of the 64 workers' trial:
/// pass at exactly the limit, warn below it, fail above it. (A trial with
/// failed decisions is not a measurement: the experiment rejects it, and
/// the cell is an error.)
pub fn concurrency(r: &Rows) -> Vec<Judged> {
    let columns = ["exact-0ms", "exact-6.7ms"];
    let rows: Vec<concurrency::Row> = match r.read("concurrency.csv") {
        Ok(v) => v,
        Err(e) => return failed(&columns, e),
    };
    let exact = |rtt_ms: f64| -> Result<Outcome> {
        let w = one(&rows, &format!("at a {rtt_ms} ms round trip"), |x| {
            (x.target_rtt_ms - rtt_ms).abs() < 1e-9 && x.rtt_jitter_ms == 0.0
        })?;
        let verdict = if w.admitted > w.limit {
            Verdict::Fail
        } else if w.admitted == w.limit && w.errors == 0 {
            Verdict::Pass
        } else {
            Verdict::Warn
        };
        Ok(Outcome::Measured {
            value: w.admitted as f64 / w.limit as f64,
            unit: "x limit",
            threshold: "pass = 1 (exactly the limit); warn < 1 (under-admits); fail > 1".into(),
            verdict,
            detail: format!(
                "limit {}, {} workers, {} offered, round trip {} ms (median PING): {} admitted, {} WATCH aborts, {} refused for retries exhausted",
                w.limit,
                w.workers,
                w.offered,
                num(w.rtt_median_us / 1000.0),
                w.admitted,
                w.aborts,
                w.retries_exhausted
            ),
        })
    };
    vec![(columns[0], exact(0.0)), (columns[1], exact(6.7))]
}

/// The promise columns: the most admitted in any window of one window
/// length / L (`bursts`' own metric over the admission history), at most 1
/// to pass, 1.1 to warn.
pub fn bursts(r: &Rows) -> Vec<Judged> {
    let columns: Vec<&'static str> = PROMISE_PATTERNS.iter().map(|(c, _)| *c).collect();
    let read = || -> Result<(Vec<bursts::Row>, Vec<bursts::HistoryRow>)> {
        Ok((r.read("bursts.csv")?, r.read("bursts-history.csv")?))
    };
    let (rows, history) = match read() {
        Ok(v) => v,
        Err(e) => return failed(&columns, e),
    };
    let hist = limitbench_analysis::window::by_trial(history);
    let trials = bursts::analyze::trials(&rows, &hist);
    PROMISE_PATTERNS
        .iter()
        .map(|(column, pattern)| {
            let out = one(&trials, &format!("of pattern `{pattern}`"), |t| {
                t.row.pattern == *pattern
            })
            .map(|t| {
                let w = t.row;
                Outcome::at_most(
                    t.ratio,
                    "x limit",
                    1.0,
                    1.1,
                    format!(
                        "limit {} per {} ms ({}), {} offered, {} admitted; most in any window {} (times: {}); latest send {} ms behind schedule",
                        w.limit,
                        w.window_ms,
                        bursts::analyze::variant(w),
                        w.offered,
                        w.admitted,
                        num(t.ratio * w.limit as f64),
                        if t.clock == "redis" {
                            "Redis's clock"
                        } else {
                            "reply times"
                        },
                        num(w.lateness_max_us / 1000.0)
                    ),
                )
            });
            (*column, out)
        })
        .collect()
}

/// The clock columns: admitted % of the ideal bucket (`skew`'s own ideal,
/// from the send times) at +/-S minus the same at no skew, in points: at
/// most 2 to pass, 5 to warn. A skew the probe did not run at this size is
/// `not-run`.
pub fn skew(r: &Rows) -> Vec<Judged> {
    let columns = [("clock-10ms", 10.0), ("clock-100ms", 100.0), ("clock-1s", 1000.0)];
    let read = || -> Result<(Vec<skew::Row>, Vec<skew::HistoryRow>)> {
        Ok((r.read("skew.csv")?, r.read("skew-history.csv")?))
    };
    let (rows, history) = match read() {
        Ok(v) => v,
        Err(e) => return failed(&columns.map(|c| c.0), e),
    };
    let hist = limitbench_analysis::window::by_trial(history);
    // NaN (and so a fail) without a history to compute the ideal from.
    let pct = |w: &skew::Row| {
        let h = hist.get(&(w.cell.clone(), w.trial));
        let ideal = skew::analyze::ideal(w, h.map(Vec::as_slice).unwrap_or(&[]));
        let pct = if ideal.is_nan() {
            f64::NAN
        } else {
            100.0 * w.admitted as f64 / ideal.max(1.0)
        };
        (pct, ideal)
    };
    let base = one(&rows, "without skew", |w| w.skew_ms == 0.0);
    columns
        .iter()
        .map(|&(column, skew_ms)| {
            let Some(w) = rows.iter().find(|w| w.skew_ms == skew_ms) else {
                let why = "not run at this size (not in the skew probe table)";
                return (column, Ok(Outcome::NotRun(why.into())));
            };
            let out = base.as_ref().map_err(|e| Error::Other(e.to_string())).map(|b| {
                let ((p, i), (p0, i0)) = (pct(w), pct(*b));
                let drift = p - p0;
                Outcome::at_most(
                    drift.abs(),
                    "points",
                    2.0,
                    5.0,
                    format!(
                        "clock {} (Info.clock); bucket {} refilling {}/s, {} callers at +/-{} ms ({} clocks), {}x the rate for {} ms: admitted {} of ideal {} ({} %), unskewed {} of {} ({} %): {} points",
                        r.info.clock.as_str(),
                        w.capacity,
                        num(w.rate_per_s),
                        w.servers,
                        num(skew_ms),
                        w.clocks,
                        num(w.load_x),
                        num(w.duration_ms),
                        w.admitted,
                        num(i),
                        num(p),
                        b.admitted,
                        num(i0),
                        num(p0),
                        num(drift)
                    ),
                )
            });
            (column, out)
        })
        .collect()
}

// ---- study B and beyond ----

/// `cost-x-get`: Redis CPU per decision / GET's (`cost`'s ratio, the
/// replay loop, Redis and the load pinned), at most 3 to pass, 10 to warn;
/// `decisions-per-s`: decisions/s / GETs/s, at least 0.5 to pass, 0.2 to
/// warn.
pub fn cost(r: &Rows) -> Vec<Judged> {
    let columns = ["cost-x-get", "decisions-per-s"];
    let rows: Vec<cost::CostRow> = match r.read("cost.csv") {
        Ok(v) => v,
        Err(e) => return failed(&columns, e),
    };
    let read = || -> Result<(&cost::CostRow, &cost::CostRow, (f64, f64))> {
        let get = one(&rows, "for GET", |x| x.cell == "get")?;
        let mine = one(&rows, &format!("for `{}`", r.strategy), |x| {
            x.strategy == r.strategy && x.traffic == "uniform" && x.prefill_entries == 0
        })?;
        let v = cost::analyze::Variants::of(&rows);
        let ratios = cost::analyze::against_get(&v, &mine.cell)
            .ok_or_else(|| Error::Other("no ratio to GET".into()))?;
        Ok((get, mine, ratios))
    };
    match read() {
        Err(e) => failed(&columns, e),
        Ok((get, mine, (x_cpu, x_rate))) => vec![
            (
                columns[0],
                Ok(Outcome::at_most(
                    x_cpu,
                    "x GET",
                    3.0,
                    10.0,
                    format!(
                        "{} us Redis CPU per decision ({} by {}, {} decisions, Redis {} % busy) vs {} us per GET ({} GETs, {} % busy); {} connections replaying, {} s windows, Redis on CPU {} and the load on CPU {}",
                        num(mine.redis_cpu_us_per_decision),
                        mine.strategy,
                        mine.invocation,
                        mine.decisions,
                        num(100.0 * mine.redis_busy_fraction),
                        num(get.redis_cpu_us_per_decision),
                        get.decisions,
                        num(100.0 * get.redis_busy_fraction),
                        mine.conns,
                        num(mine.wall_s),
                        mine.redis_cpu.map(|c| c.to_string()).unwrap_or("-".into()),
                        mine.load_cpu.map(|c| c.to_string()).unwrap_or("-".into()),
                    ),
                )),
            ),
            (
                columns[1],
                Ok(Outcome::at_least(
                    x_rate,
                    "x GET/s",
                    0.5,
                    0.2,
                    format!(
                        "{} decisions/s vs {} GETs/s ({} connections, closed loop, one process on this machine)",
                        num(mine.decisions_per_s.round()),
                        num(get.decisions_per_s.round()),
                        mine.conns
                    ),
                )),
            ),
        ],
    }
}

/// `memory`: bytes per busy client (`memory`'s used_memory growth over
/// clients taken to their limit), at most 1 KiB to pass, 16 KiB to warn.
pub fn memory(r: &Rows) -> Vec<Judged> {
    let out = r.read::<memory::MemoryRow>("memory.csv").and_then(|rows| {
        let w = one(&rows, &format!("for `{}`", r.strategy), |x| {
            x.strategy == r.strategy && x.kind == "bytes"
        })?;
        Ok(Outcome::at_most(
            w.bytes_per_client,
            "B",
            1024.0,
            16384.0,
            format!(
                "{} clients at their limit of {} ({} decisions each, filled by {}): {} B per client (used_memory growth); sample keys: {} B each (MEMORY USAGE), encoding {}",
                w.clients,
                w.limit,
                w.fill_per_client,
                if w.fill == "strategy" {
                    "its decisions, one at a time"
                } else {
                    "its own requests, pipelined"
                },
                num(w.bytes_per_client.round()),
                w.memory_usage_mean
                    .map(|m| num(m.round()))
                    .unwrap_or("-".into()),
                w.encoding
            ),
        ))
    });
    vec![("memory", out)]
}

/// `replication`: the fraction of the clients' keys whose replica state
/// equals the primary's; anything below 1 fails.
pub fn replication(r: &Rows) -> Vec<Judged> {
    let out = r.read::<replication::Row>("replication.csv").and_then(|rows| {
        let w = one(&rows, &format!("for `{}`", r.strategy), |x| {
            x.strategy == r.strategy
        })?;
        let keys = w.matches + w.mismatches;
        if keys == 0 {
            return Err(Error::Other(format!(
                "no key of the clients found on the primary after {} decisions ({} errors)",
                w.decisions, w.errors
            )));
        }
        Ok(Outcome::at_least(
            w.matches as f64 / keys as f64,
            "fraction",
            1.0,
            1.0,
            format!(
                "{} decisions ({} errors) on {} clients; replica caught up: {} (offset {} of {}); {keys} keys, {} differ{}",
                w.decisions,
                w.errors,
                w.buckets,
                w.caught_up,
                w.replica_offset,
                w.master_offset,
                w.mismatches,
                if w.mismatched_fields.is_empty() {
                    String::new()
                } else {
                    format!(" (fields: {})", w.mismatched_fields)
                }
            ),
        ))
    });
    vec![("replication", out)]
}

/// `failover`: admitted above the limit across the failover / limit, 0 to
/// pass, 0.05 to warn.
pub fn failover(r: &Rows) -> Vec<Judged> {
    let out = r.read::<failover::Row>("failover.csv").and_then(|rows| {
        let w = one(&rows, &format!("for `{}`", r.strategy), |x| {
            x.strategy == r.strategy
        })?;
        let over = w.admitted_total.saturating_sub(w.limit) as f64 / w.limit as f64;
        Ok(Outcome::at_most(
            over,
            "x limit over",
            0.0,
            0.05,
            format!(
                "limit {} per hour, {} workers, replication link {} ms each way (PING {} ms): {} admitted on the primary ({} replies, {} calls lost at the kill), killed and the replica promoted in {} ms, {} of {} admitted on it ({} errors): {} in all",
                w.limit,
                w.workers,
                num(w.repl_delay_ms),
                num(w.repl_rtt_ms),
                w.admitted_pre,
                w.replies_pre,
                w.lost_calls,
                num(w.failover_ms),
                w.admitted_post,
                w.post_sent,
                w.errors_post,
                w.admitted_total
            ),
        ))
    });
    vec![("failover", out)]
}

/// `cluster`: the fraction of users whose decisions all returned on the
/// cluster; anything below 1 fails.
pub fn cluster(r: &Rows) -> Vec<Judged> {
    let out = r.read::<cluster::Row>("cluster.csv").and_then(|rows| {
        let w = one(&rows, &format!("for `{}`", r.strategy), |x| {
            x.kind == "strategy" && x.strategy == r.strategy
        })?;
        Ok(Outcome::at_least(
            w.fraction_ok,
            "fraction",
            1.0,
            1.0,
            format!(
                "{} of {} users work on {} masters; errors: {}",
                w.ok,
                w.users,
                w.nodes,
                if w.errors.is_empty() {
                    "none"
                } else {
                    &w.errors
                }
            ),
        ))
    });
    vec![("cluster", out)]
}

/// `survive-restart`, `survive-promotion`: the fraction of the strategy's
/// invocation modes whose client decided after the restart / on the
/// promoted replica: 1 to pass, above 0 to warn.
pub fn script_survival(r: &Rows) -> Vec<Judged> {
    let columns = [
        ("survive-restart", "restart", "after SHUTDOWN SAVE and a restart"),
        (
            "survive-promotion",
            "promoted",
            "on the replica promoted after its primary was killed",
        ),
    ];
    let rows: Vec<script_survival::Row> = match r.read("script-survival.csv") {
        Ok(v) => v,
        Err(e) => return failed(&columns.map(|c| c.0), e),
    };
    columns
        .iter()
        .map(|&(column, scenario, what)| {
            let clients: Vec<&script_survival::Row> = rows
                .iter()
                .filter(|x| {
                    x.scenario == scenario
                        && x.script == r.strategy
                        && x.check.starts_with("client:")
                })
                .collect();
            if clients.is_empty() {
                let e = format!("the probe wrote no client row of scenario `{scenario}`");
                return (column, Err(Error::Other(e)));
            }
            let ok = clients.iter().filter(|x| x.ok).count();
            let detail = clients
                .iter()
                .map(|x| {
                    let mode = x.check.trim_start_matches("client:");
                    if x.ok {
                        format!("{mode}: ok")
                    } else {
                        format!("{mode}: {}", first_line(&x.reply))
                    }
                })
                .collect::<Vec<_>>()
                .join("; ");
            (
                column,
                Ok(Outcome::at_least(
                    ok as f64 / clients.len() as f64,
                    "fraction of modes",
                    1.0,
                    0.01,
                    format!("{what}: {detail}"),
                )),
            )
        })
        .collect()
}

/// `slow-redis`: the fraction of the slow phase's decisions that Redis made
/// (a design of several round trips misses the deadline), at least 0.99 to
/// pass, 0.5 to warn; `gone-redis`: the fraction of the gone phase's
/// decisions that the policy made in time (fail-open admits, fail-closed
/// refuses), 1 to pass, 0.9 to warn.
pub fn fail_open(r: &Rows) -> Vec<Judged> {
    let columns = ["slow-redis", "gone-redis"];
    let read = || -> Result<(Vec<fail_open::BinRow>, Vec<fail_open::SummaryRow>)> {
        Ok((r.read("fail-open.csv")?, r.read("fail-open-summary.csv")?))
    };
    let (bins, summary) = match read() {
        Ok(v) => v,
        Err(e) => return failed(&columns, e),
    };
    let Some(s) = summary.first() else {
        return failed(&columns, Error::Other("the probe wrote no summary row".into()));
    };
    let phase = |name: &'static str| bins.iter().filter(move |b| b.phase == name);
    let sum = |name: &'static str, f: fn(&fail_open::BinRow) -> u64| phase(name).map(f).sum::<u64>();
    let slow_n = sum("slow", |b| b.offered);
    let slow = (slow_n > 0)
        .then(|| {
            let by_redis = sum("slow", |b| b.by_redis);
            Outcome::at_least(
                by_redis as f64 / slow_n as f64,
                "fraction",
                0.99,
                0.5,
                format!(
                    "{slow_n} decisions (both policies) through a delay proxy (PING {} ms) with a {} ms deadline: {by_redis} decided by Redis, {} timed out",
                    num(s.slow_rtt_ms),
                    s.timeout_ms,
                    sum("slow", |b| b.timeouts)
                ),
            )
        })
        .ok_or_else(|| Error::Other("the probe's slow phase had no decision".into()));
    let gone_n = sum("gone", |b| b.offered);
    let gone = (gone_n > 0)
        .then(|| {
            let by_policy = sum("gone", |b| b.admitted_open + b.refused_closed);
            let late = sum("gone", |b| b.late_misses);
            let slowest = phase("gone").map(|b| b.latency_max_ms).fold(0.0, f64::max);
            Outcome::at_least(
                (by_policy - late.min(by_policy)) as f64 / gone_n as f64,
                "fraction",
                1.0,
                0.9,
                format!(
                    "server killed; {gone_n} decisions ({} fail-open, {} fail-closed, {} ms deadline): {by_policy} decided by the policy, {late} of them late (beyond the deadline + the margin); slowest {} ms",
                    phase("gone").filter(|b| b.policy == "fail-open").map(|b| b.offered).sum::<u64>(),
                    phase("gone").filter(|b| b.policy == "fail-closed").map(|b| b.offered).sum::<u64>(),
                    s.timeout_ms,
                    num(slowest)
                ),
            )
        })
        .ok_or_else(|| Error::Other("the probe's gone phase had no decision".into()));
    vec![(columns[0], slow), (columns[1], gone)]
}
