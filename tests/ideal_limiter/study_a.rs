//! The rows of study A's experiments as an ideal limiter leaves them:
//! concurrency, retries, bursts (with its history) and skew.

use std::path::Path;

use limitbench_analysis::experiments as ex;
use rand::RngExt;
use rand::rngs::ChaCha8Rng;

use super::model::{most_in_window, noisy, poisson, sliding_log, token_bucket};
use super::{LIMIT, TRIALS, write_csv};

// ---- concurrency (A1.1, A1.2, A3.0) ----

pub(super) fn concurrency(dir: &Path, rng: &mut ChaCha8Rng) {
    use ex::concurrency::rows::Row;
    // (strategy, atomic, workers, round trip ms, jitter ms): the full grid's
    // cells that the claims read (experiments/concurrency.toml).
    let mut cells: Vec<(&str, bool, u64, f64, f64)> = Vec::new();
    for c in [1, 2, 4, 8, 16, 32, 64] {
        cells.push(("check-then-act", false, c, 0.0, 0.0));
        cells.push(("fixed-window-lua", true, c, 0.0, 0.0));
        cells.push(("token-bucket", true, c, 0.0, 0.0));
    }
    for rtt in [1.0, 2.0, 5.0, 6.7] {
        for c in [8, 16, 32, 64] {
            cells.push(("check-then-act", false, c, rtt, 0.0));
        }
    }
    for j in [0.5, 1.0, 2.0] {
        for c in [8, 16, 32, 64] {
            cells.push(("check-then-act", false, c, 6.7, j));
        }
    }
    let mut rows = Vec::new();
    for (strategy, atomic, workers, rtt, jitter) in cells {
        let cell = if jitter > 0.0 {
            format!("{strategy}/c{workers}/rtt{rtt}/jitter{jitter}")
        } else {
            format!("{strategy}/c{workers}/rtt{rtt}")
        };
        for trial in 0..TRIALS {
            // Workers offer until L + 2c are offered; the ideal limiter
            // admits exactly L of them, whatever races between its read and
            // its write (it has none).
            let offered = LIMIT + 2 * workers;
            let admitted = offered.min(LIMIT);
            let rtt_us = rtt * 1000.0 + noisy(rng, 70.0, 0.1);
            rows.push(Row {
                cell: cell.clone(),
                trial,
                seed: rng.random(),
                strategy: strategy.into(),
                kind: if atomic { "script" } else { "client-side" }.into(),
                atomic_design: atomic,
                workers,
                target_rtt_ms: rtt,
                rtt_median_us: rtt_us,
                rtt_p99_us: rtt_us * 1.2,
                rtt_sd_us: 5.0,
                rtt_jitter_ms: jitter,
                one_way_delay_us: rtt * 500.0,
                limit: LIMIT,
                window_ms: 3_600_000,
                offered,
                admitted,
                over_admitted: admitted as i64 - LIMIT as i64,
                errors: 0,
                aborts: 0,
                retries_exhausted: 0,
                round_trips: 2 * offered,
                wall_ms: noisy(
                    rng,
                    offered.div_ceil(workers) as f64 * rtt_us / 1000.0,
                    0.05,
                ),
                first_error: String::new(),
            });
        }
    }
    write_csv(dir, "concurrency.csv", &rows);
}

// ---- retries (A2.1, A2.2) ----

pub(super) fn retries(dir: &Path, rng: &mut ChaCha8Rng) {
    use ex::retries::rows::Row;
    let workers = 64;
    let mut rows = Vec::new();
    for rtt in [0.0, 1.0, 6.7] {
        // Every decision takes one round trip for both: an optimistic lock
        // that never loses a conflict is as fast as the script.
        let rtt_us = rtt * 1000.0 + noisy(rng, 75.0, 0.1);
        let wall = |rng: &mut ChaCha8Rng| {
            noisy(
                rng,
                LIMIT.div_ceil(workers) as f64 * (rtt_us + 40.0) / 1000.0,
                0.03,
            )
        };
        let push = |rows: &mut Vec<Row>, rng: &mut ChaCha8Rng, budget: Option<u32>| {
            let (strategy, cell) = match budget {
                Some(b) => (
                    "watch-multi",
                    format!("watch-multi/b{b}/fixed-0/first-free/rtt{rtt}/c{workers}"),
                ),
                None => (
                    "fixed-window-lua",
                    format!("fixed-window-lua/rtt{rtt}/c{workers}"),
                ),
            };
            for trial in 0..TRIALS {
                rows.push(Row {
                    cell: cell.clone(),
                    trial,
                    seed: rng.random(),
                    strategy: strategy.into(),
                    retry_budget: budget,
                    backoff_us: budget.map(|_| 0),
                    budget_includes_first: budget.map(|_| false),
                    backoff: if budget.is_some() { "fixed-0" } else { "" }.into(),
                    attempt: if budget.is_some() {
                        "watch-get-multi"
                    } else {
                        ""
                    }
                    .into(),
                    arrival_ms: 0.0,
                    rtt_jitter_ms: 0.0,
                    workers,
                    target_rtt_ms: rtt,
                    rtt_median_us: rtt_us,
                    rtt_p99_us: rtt_us * 1.3,
                    rtt_sd_us: 8.0,
                    limit: LIMIT,
                    offered: LIMIT,
                    admitted: LIMIT,
                    refused_by_limit: 0,
                    refused_by_retries: 0,
                    aborts: 0,
                    errors: 0,
                    round_trips: LIMIT * if budget.is_some() { 3 } else { 1 },
                    wall_ms: wall(rng),
                    first_error: String::new(),
                });
            }
        };
        push(&mut rows, rng, Some(10));
        push(&mut rows, rng, Some(1000));
        push(&mut rows, rng, None);
    }
    write_csv(dir, "retries.csv", &rows);
}

// ---- bursts (A3.1, A3.2, A3.3, A3.4) ----

/// One bursts trial: its row and its history, the limiter an ideal sliding
/// log deciding at the reply time (the clock the analysis reads for
/// strategies that return no Redis TIME).
#[allow(clippy::too_many_arguments)]
fn bursts_trial(
    rng: &mut ChaCha8Rng,
    strategy: &str,
    pattern: &str,
    variant: &str,
    phase_ms: Option<f64>,
    rate_x: Option<f64>,
    boundary_us: i64,
    sends: Vec<i64>,
    trial: u64,
    rows: &mut Vec<ex::bursts::rows::Row>,
    history: &mut Vec<ex::bursts::rows::HistoryRow>,
) {
    let cell = format!("{strategy}/{variant}");
    let mut decided: Vec<(i64, i64, u32)> = sends
        .iter()
        .map(|&s| (s, s + rng.random_range(150..900), rng.random_range(0..16)))
        .collect();
    decided.sort_by_key(|d| d.1);
    let replies: Vec<i64> = decided.iter().map(|d| d.1).collect();
    let admitted = sliding_log(&replies, LIMIT, 1_000_000);
    let times: Vec<i64> = replies
        .iter()
        .zip(&admitted)
        .filter(|x| *x.1)
        .map(|x| *x.0)
        .collect();
    for ((sent, replied, worker), ok) in decided.iter().zip(&admitted) {
        history.push(ex::bursts::rows::HistoryRow {
            cell: cell.clone(),
            trial,
            worker: *worker,
            intended_us: *sent,
            sent_us: *sent,
            replied_us: *replied,
            redis_time_us: None,
            admitted: *ok,
            error: false,
        });
    }
    rows.push(ex::bursts::rows::Row {
        cell,
        trial,
        seed: rng.random(),
        strategy: strategy.into(),
        pattern: pattern.into(),
        phase_ms,
        phase_draw: "fixed".into(),
        rate_x,
        limit: LIMIT,
        window_ms: 1000,
        boundary_us: Some(boundary_us),
        redis_clock_offset_us: 0,
        offered: sends.len() as u64,
        admitted: times.len() as u64,
        errors: 0,
        clock: "reply".into(),
        lateness_p99_us: 300.0,
        lateness_max_us: 900.0,
        drivers: 16,
        parallel_strategies: 1,
        first_error: String::new(),
        max_in_window: Some(most_in_window(&times, 1_000_000)),
    });
}

/// `n` sends from `at`, a few us apart (a burst).
fn burst(rng: &mut ChaCha8Rng, n: u64, at: i64) -> Vec<i64> {
    (0..n as i64)
        .map(|i| at + 10 * i + rng.random_range(0..10))
        .collect()
}

/// Sends at `per_s` from `from` for `span_us`, evenly spaced.
fn steady(per_s: f64, from: i64, span_us: i64) -> Vec<i64> {
    let gap = 1e6 / per_s;
    (0..)
        .map(|i| from + (i as f64 * gap) as i64)
        .take_while(|t| *t < from + span_us)
        .collect()
}

pub(super) fn bursts(dir: &Path, rng: &mut ChaCha8Rng) {
    let (mut rows, mut history) = (Vec::new(), Vec::new());
    let per_s = LIMIT as f64;
    for trial in 0..TRIALS {
        // A window boundary somewhere in the trial's second second.
        let b = 1_000_000 + rng.random_range(0..1_000_000);
        for lead in [5.0, 20.0, 200.0] {
            for strategy in [
                "fixed-window-multi",
                "fixed-window-lua",
                "sliding-window-log",
            ] {
                let lead_us = (lead * 1000.0) as i64;
                let mut sends = burst(rng, LIMIT, b - lead_us);
                sends.extend(burst(rng, LIMIT, b + 1000));
                sends.sort();
                bursts_trial(
                    rng,
                    strategy,
                    "straddle",
                    &format!("straddle/lead{lead}"),
                    Some(lead),
                    None,
                    b,
                    sends,
                    trial,
                    &mut rows,
                    &mut history,
                );
            }
        }
        // Traffic at the limit for 1 s, 1 s quiet, then 3x the limit for 2 s.
        for phase in [0.0, 500.0] {
            let at = b + 2_000_000 + (phase * 1000.0) as i64;
            let mut sends = steady(per_s, b, 1_000_000);
            sends.extend(steady(3.0 * per_s, at, 2_000_000));
            bursts_trial(
                rng,
                "token-bucket",
                "quiet-then-burst",
                &format!("quiet-then-burst/phase{phase}/x3"),
                Some(phase),
                Some(3.0),
                b,
                sends,
                trial,
                &mut rows,
                &mut history,
            );
        }
        // A burst of L at a phase, then traffic at the limit for 2 s.
        for phase in [0.0, 250.0, 500.0, 750.0] {
            let at = b + (phase * 1000.0) as i64;
            let gap = (1e6 / per_s) as i64;
            let mut sends = burst(rng, LIMIT, at);
            sends.extend(steady(per_s, at + gap, 2_000_000));
            sends.sort();
            bursts_trial(
                rng,
                "sliding-window-counter",
                "burst-then-sustained",
                &format!("burst-then-sustained/phase{phase}/x1"),
                Some(phase),
                Some(1.0),
                b,
                sends,
                trial,
                &mut rows,
                &mut history,
            );
        }
    }
    // A3.3's default: the burst at a phase drawn uniformly per trial, then
    // traffic at the limit for 2 s.
    for trial in 0..TRIALS {
        let b = 1_000_000 + rng.random_range(0..1_000_000);
        let phase_us: i64 = rng.random_range(0..1_000_000);
        let at = b + phase_us;
        let gap = (1e6 / per_s) as i64;
        let mut sends = burst(rng, LIMIT, at);
        sends.extend(steady(per_s, at + gap, 2_000_000));
        sends.sort();
        bursts_trial(
            rng,
            "sliding-window-counter",
            "burst-then-sustained",
            "burst-then-sustained/phase-uniform/x1",
            Some(phase_us as f64 / 1000.0),
            Some(1.0),
            b,
            sends,
            trial,
            &mut rows,
            &mut history,
        );
        rows.last_mut().expect("a row").phase_draw = "uniform".into();
    }
    write_csv(dir, "bursts.csv", &rows);
    write_csv(dir, "bursts-history.csv", &history);
}

// ---- skew (A4.1, A4.2, A4.3) ----

pub(super) fn skew(dir: &Path, rng: &mut ChaCha8Rng) {
    use ex::skew::rows::{HistoryRow, Row};
    let (mut rows, mut history) = (Vec::new(), Vec::new());
    let servers = 8u64;
    // Offsets of 8 servers spread evenly over +-1 s: with ideal clocks they
    // change nothing, so the caller's clock admits what the ideal bucket does.
    let offsets: Vec<String> = (0..servers)
        .map(|i| (-1_000_000 + i as i64 * 2_000_000 / (servers as i64 - 1)).to_string())
        .collect();
    // (load x the refill rate, run ms): near the limit (A4.2) and overload (A4.1).
    for (load_x, duration_ms) in [(1.0, 2500.0), (5.0, 5000.0)] {
        for trial in 0..TRIALS {
            let seed: u64 = rng.random();
            let sends = poisson(rng, load_x * 100.0, 50_000, (duration_ms * 1000.0) as i64);
            let admitted = token_bucket(&sends, 100.0, 100.0);
            let n_admitted = admitted.iter().filter(|a| **a).count() as u64;
            for strategy in ["token-bucket-caller-clock", "token-bucket"] {
                let cell =
                    format!("{strategy}/S1000/W{servers}/spread/x{load_x}/poisson/T{duration_ms}");
                for (s, ok) in sends.iter().zip(&admitted) {
                    let replied = s + rng.random_range(300..900);
                    history.push(HistoryRow {
                        cell: cell.clone(),
                        trial,
                        worker: rng.random_range(0..servers as u32),
                        intended_us: *s,
                        sent_us: *s,
                        replied_us: replied,
                        redis_time_us: (strategy == "token-bucket").then_some(replied - 100),
                        admitted: *ok,
                        error: false,
                    });
                }
                rows.push(Row {
                    cell,
                    trial,
                    seed,
                    strategy: strategy.into(),
                    skew_ms: 1000.0,
                    servers,
                    clocks: "spread".into(),
                    offsets_us: offsets.join(";"),
                    load_x,
                    arrivals: "poisson".into(),
                    assign: "random".into(),
                    capacity: 100,
                    rate_per_s: 100.0,
                    duration_ms,
                    offered: sends.len() as u64,
                    admitted: n_admitted,
                    errors: 0,
                    achieved_rate_per_s: sends.len() as f64 / (duration_ms / 1000.0),
                    lateness_p99_us: 600.0,
                    first_error: String::new(),
                    start_unix_us: None,
                });
            }
        }
    }
    write_csv(dir, "skew.csv", &rows);
    write_csv(dir, "skew-history.csv", &history);
}
