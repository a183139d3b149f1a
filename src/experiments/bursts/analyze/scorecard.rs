//! `bursts`'s scorecard columns: its probe's rows, read back from a
//! strategy's probe folder, -> each column's value, verdict and detail
//! (the judge's threshold beside each). Shared pieces: `limitbench_analysis::scorecard`.

use limitbench_base::promise::Promise;
use limitbench_plot::figure::num;

use super::super::rows;
use limitbench_analysis::scorecard::{
    CellOutcome, CellVerdict, ColumnOutcome, PROMISE_PATTERNS, ProbeRows, UNDER_PASS, UNDER_WARN,
    failed, first_line, one, sliding_log_ideal, under_verdict, worse,
};
use limitbench_base::error::Result;

/// The scorecard columns this experiment's probe fills, in the table's order.
pub const COLUMNS: &[&str] = &["straddle", "quiet-burst", "burst-sustained", "anchored"];

/// The promise columns: each judged against the promise the strategy
/// declares (`Info.promise`; a strategy that declares none is held to at
/// most the limit in any window), on that promise's metric: the most
/// admitted in any window of one window length / L (`bursts`' own metric),
/// or for a bucket the arrival curve (most admitted in any interval beyond
/// rate x its length, over capacity); at most 1 to pass, 1.1 to warn. Beside it the sliding
/// log's ideal on the same arrivals; a cell that admitted less than
/// [`UNDER_PASS`] of that ideal warns, less than [`UNDER_WARN`] fails
/// (under-admission), and any error makes the cell `error`.
pub fn judge(r: &ProbeRows) -> Vec<ColumnOutcome> {
    let columns = COLUMNS;
    let read = || -> Result<(Vec<rows::Row>, Vec<rows::HistoryRow>)> {
        Ok((r.read("bursts.csv")?, r.read("bursts-history.csv")?))
    };
    let (rows, history) = match read() {
        Ok(v) => v,
        Err(e) => return failed(columns, e),
    };
    let hist = limitbench_analysis::window::by_trial(history);
    let trials = super::trials(&rows, &hist);
    let declared = r.declared.promise;
    let promise = declared.unwrap_or(Promise::AtMostLimitInAnyWindow);
    PROMISE_PATTERNS
        .iter()
        .map(|(column, pattern)| {
            let of: Vec<&super::Trial<'_>> = trials
                .iter()
                .filter(|t| t.row.pattern == *pattern)
                .collect();
            if of.is_empty() {
                let e = one(&trials, &format!("of pattern `{pattern}`"), |_| false).err();
                return (*column, Err(e.expect("no trial matched")));
            }
            let mut cells: Vec<(String, CellOutcome)> = of
                .iter()
                .map(|t| {
                    (
                        super::variant(t.row),
                        cell(t, &hist, promise, declared.is_some()),
                    )
                })
                .collect();
            // Several variants (the anchored first-hit offsets): the column
            // is the worst of them, the others named beside it.
            cells.sort_by(|a, b| {
                rank(&b.1)
                    .partial_cmp(&rank(&a.1))
                    .unwrap_or(std::cmp::Ordering::Equal)
            });
            let others: Vec<String> = cells[1..]
                .iter()
                .map(|(v, c)| match c {
                    CellOutcome::Measured { value, verdict, .. } => {
                        format!("{v}: {} {}", num(*value), verdict.as_str())
                    }
                    CellOutcome::NotRun(why) => format!("{v}: not-run ({why})"),
                })
                .collect();
            let mut out = cells.swap_remove(0).1;
            if let (CellOutcome::Measured { detail, .. }, false) = (&mut out, others.is_empty()) {
                *detail = format!(
                    "the worst of {} variants; the others: {}. This one: {detail}",
                    others.len() + 1,
                    others.join("; ")
                );
            }
            (*column, Ok(out))
        })
        .collect()
}

/// A cell's order among variants: its verdict first (pass < warn < fail <
/// error), then its value.
fn rank(c: &CellOutcome) -> (u8, f64) {
    match c {
        CellOutcome::Measured { value, verdict, .. } => (
            match verdict {
                CellVerdict::Pass => 0,
                CellVerdict::Warn => 1,
                CellVerdict::Fail => 2,
                CellVerdict::NotRun => 3,
                CellVerdict::Error => 4,
            },
            if value.is_nan() {
                f64::INFINITY
            } else {
                *value
            },
        ),
        CellOutcome::NotRun(_) => (3, 0.0),
    }
}

/// One trial of a promise pattern, judged.
fn cell(
    t: &super::Trial<'_>,
    hist: &std::collections::BTreeMap<(String, u64), Vec<rows::HistoryRow>>,
    promise: Promise,
    declared: bool,
) -> CellOutcome {
    let max = 1.0;
    let w = t.row;
    let h = hist
        .get(&(w.cell.clone(), w.trial))
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let mut sent: Vec<i64> = h.iter().map(|x| x.sent_us).collect();
    sent.sort_unstable();
    let window_us = w.window_ms as i64 * 1000;
    let ideal = sliding_log_ideal(&sent, w.limit, window_us);
    let (ideal_max, _) = limitbench_analysis::window::max_in_window(&ideal, window_us);
    let ideal_ratio = ideal_max as f64 / w.limit as f64;
    let under = w.admitted as f64 / (ideal.len() as f64).max(1.0);
    // The promise's own metric: the window ratio, or a
    // bucket's arrival curve.
    // A strategy that reports no Redis time is placed by its replies: its
    // decision happened somewhere between its send and its reply, so a
    // window is counted over only where that is certain (a correct limiter
    // read 21 of 20 on reply times, its replies' jitter across the edge).
    let provable =
        (t.clock != "redis").then(|| provable_max_in_window(h, window_us) as f64 / w.limit as f64);
    let value = match promise {
        Promise::AtMostLimitInAnyWindow => provable.unwrap_or(t.ratio),
        Promise::BurstOfCapacity => t.bucket,
    };
    let over = if value.is_nan() {
        CellVerdict::Fail
    } else if value <= max + 1e-9 {
        CellVerdict::Pass
    } else if value <= max + 0.1 {
        CellVerdict::Warn
    } else {
        CellVerdict::Fail
    };
    let verdict = if w.errors > 0 {
        CellVerdict::Error
    } else {
        worse(over, under_verdict(under))
    };
    let mut detail = format!(
        "limit {} per {} ms ({}), {} offered, {} admitted, {} errors{}; most in any window {} (times: {}); promise {}{}: {} {} (allows {}); sliding-log ideal on the same arrivals: {} admitted, most in any window {} ({} x limit); admitted / ideal {}{}; latest send {} ms behind schedule",
        w.limit,
        w.window_ms,
        super::variant(w),
        w.offered,
        w.admitted,
        w.errors,
        if w.errors > 0 {
            format!(" (first: {})", first_line(&w.first_error))
        } else {
            String::new()
        },
        num(t.ratio * w.limit as f64),
        if t.clock == "redis" {
            "Redis's clock".to_string()
        } else {
            format!(
                "reply times; certainly in one window, each decision between its send and its reply: {}",
                num(provable.unwrap_or(f64::NAN) * w.limit as f64)
            )
        },
        promise.as_str(),
        if declared {
            ""
        } else {
            " (not declared: the default)"
        },
        promise.metric(),
        num(value),
        num(max),
        ideal.len(),
        ideal_max,
        num(ideal_ratio),
        num(under),
        if under < UNDER_PASS {
            format!(" (under-admits: below {})", num(UNDER_PASS))
        } else {
            String::new()
        },
        num(w.lateness_max_us / 1000.0)
    );
    if w.errors > 0 {
        detail = format!("{} of {} decisions errored: {detail}", w.errors, w.offered);
    }
    CellOutcome::Measured {
        value,
        unit: match promise {
            Promise::AtMostLimitInAnyWindow => "x limit",
            Promise::BurstOfCapacity => "x capacity beyond rate x t",
        },
        threshold: format!(
            "promise {} ({}): pass <= {}, warn <= {}; admitted >= {} x the sliding-log ideal (warn >= {}); no errors",
            promise.as_str(),
            promise.metric(),
            num(max),
            num(max + 0.1),
            num(UNDER_PASS),
            num(UNDER_WARN)
        ),
        verdict,
        detail,
    }
}

/// The most admissions certainly in one window of `window_us` when each
/// decision is known only to lie between its send and its reply: the
/// largest set whose latest reply is less than a window after its earliest
/// send. A lower bound of the true most (equal when replies are instant).
fn provable_max_in_window(history: &[rows::HistoryRow], window_us: i64) -> usize {
    let mut adm: Vec<(i64, i64)> = history
        .iter()
        .filter(|r| r.admitted)
        .map(|r| (r.sent_us, r.replied_us.max(r.sent_us)))
        .collect();
    adm.sort_unstable();
    (0..adm.len())
        .map(|i| {
            let start = adm[i].0;
            adm[i..]
                .iter()
                .filter(|(_, replied)| *replied - start < window_us)
                .count()
        })
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn adm(sent: i64, replied: i64) -> rows::HistoryRow {
        rows::HistoryRow {
            cell: "c".into(),
            trial: 0,
            worker: 0,
            intended_us: sent,
            sent_us: sent,
            replied_us: replied,
            redis_time_us: None,
            admitted: true,
            error: false,
        }
    }

    #[test]
    fn only_admissions_certainly_inside_one_window_are_counted() {
        // The second reply came 1000.55 ms after the first send: the two
        // are not certainly in one window of 1000 ms.
        let h = [adm(0, 600), adm(1_000_500, 1_000_550)];
        assert_eq!(provable_max_in_window(&h, 1_000_000), 1);
        // Replies inside the window after the first send: certain.
        let h = [adm(0, 100), adm(500, 900), adm(999_000, 999_900)];
        assert_eq!(provable_max_in_window(&h, 1_000_000), 3);
        // A refusal is not counted.
        let mut r = adm(10, 20);
        r.admitted = false;
        assert_eq!(provable_max_in_window(&[adm(0, 5), r], 1_000_000), 1);
    }
}
