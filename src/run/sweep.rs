//! The sweep engine: cells x trials, resume, progress and committing rows,
//! written once for every experiment.
//!
//! An experiment implements [`Sweep`]: it says what its cells are (an id and
//! a trial count each), what it sets up once per cell (a proxy, a pool of
//! drivers, a fleet of servers) and what one trial does (run, measure, return
//! rows). [`run`] does the rest:
//!
//! - skips the trials a killed run already committed (`record::TrialLog`),
//!   and does not even set up a cell whose trials are all done;
//! - samples the CPU other processes take while each cell runs (`noise.csv`);
//! - shows progress (a bar on a terminal, a line every ~10% otherwise);
//! - commits a trial's side rows (e.g. an admission history) and then its
//!   main rows, only after the trial returned them, so a trial that fails
//!   leaves nothing behind and a resumed run redoes it.
//!
//! A trial may commit rows under several cell ids at once (bursts runs every
//! strategy of a pattern in one trial): [`Sweep::keys`] names them, and a
//! trial counts as done only when all of them are committed. On a redo only
//! the rows of keys not yet committed are written.

use std::collections::HashSet;

use serde::Serialize;

use super::context::RunContext;
use super::csv_append::CsvAppender;
use super::latency;
use super::noise::NoiseSampler;
use super::parallel;
use limitbench_analysis::experiments::rows::HistoryRow;
use limitbench_analysis::rows::{LatencyRow, TRIAL_TIMES_CSV, TrialTime};
use limitbench_base::error::{Error, Result};
use limitbench_core::fleet::reaper;

/// The side table of [`Sweep::HISTORY`] (`<experiment>-history.csv`).
pub const HISTORY_SIDE: &str = "history";

/// The run's record of other processes' CPU per cell (see `run::noise`).
pub const NOISE_CSV: &str = "noise.csv";

// Row types name their (cell, trial) through `Keyed`; the trait and its
// `keyed!` macro live with the row types in the analysis crate.
use limitbench_analysis::rows::Keyed;

/// The side table of an experiment that has none.
#[derive(Debug, Serialize)]
pub struct NoSide {
    cell: String,
}
limitbench_analysis::keyed!(NoSide);

/// What one trial gives back.
#[derive(Debug)]
pub struct TrialRows<R, S = NoSide> {
    /// Rows of `<experiment>.csv`; usually one.
    pub rows: Vec<R>,
    /// Rows of `<experiment>-<side>.csv` (see [`Sweep::SIDE`]).
    pub side: Vec<S>,
    /// Per-decision latency histograms (`<experiment>-latency.csv`), for
    /// experiments that time decisions (see [`Sweep::TIMED`]).
    pub latency: Vec<LatencyRow>,
    /// Every decision with its intended send time (`<experiment>-history.csv`),
    /// for experiments whose side table is another (see [`Sweep::HISTORY`]).
    pub history: Vec<HistoryRow>,
}

impl<R, S> TrialRows<R, S> {
    pub fn one(row: R) -> Self {
        TrialRows {
            rows: vec![row],
            side: Vec::new(),
            latency: Vec::new(),
            history: Vec::new(),
        }
    }

    pub fn with_side(rows: Vec<R>, side: Vec<S>) -> Self {
        TrialRows {
            rows,
            side,
            latency: Vec::new(),
            history: Vec::new(),
        }
    }

    /// Add the latency histogram of `strategy`'s decisions in this trial.
    pub fn with_latency(mut self, row: LatencyRow) -> Self {
        self.latency.push(row);
        self
    }

    /// Add the trial's per-decision history (see [`Sweep::HISTORY`]).
    pub fn with_history(mut self, rows: Vec<HistoryRow>) -> Self {
        self.history = rows;
        self
    }
}

/// An experiment as the sweep engine sees it.
#[allow(async_fn_in_trait)]
pub trait Sweep {
    /// One cell: a combination of parameters (strategy, workers, delay, ...).
    type Cell;
    /// What is built once per cell and reused by its trials.
    type Setup;
    type Row: Serialize + Keyed;
    type Side: Serialize + Keyed;
    /// The name of the side table (`<experiment>-<SIDE>.csv`), if any.
    const SIDE: Option<&'static str> = None;
    /// Does a trial time its decisions (and fill `TrialRows::latency`)?
    const TIMED: bool = false;
    /// Does a trial keep every decision's intended, sent and replied times
    /// (`TrialRows::history`, `<experiment>-history.csv`) beside its side
    /// table? (An experiment whose side table is the history says so with
    /// `SIDE = Some("history")` instead.)
    const HISTORY: bool = false;

    /// A stable id, unique within the experiment (the `cell` column).
    fn cell_id(&self, cell: &Self::Cell) -> String;
    fn trials(&self, cell: &Self::Cell) -> u64;
    /// The cell ids one trial of `cell` commits rows under (default: its own id).
    fn keys(&self, cell: &Self::Cell) -> Vec<String> {
        vec![self.cell_id(cell)]
    }
    /// Set up a cell that has trials left to run.
    async fn setup(&mut self, ctx: &RunContext, cell: &Self::Cell) -> Result<Self::Setup>;
    /// Run one trial.
    async fn trial(
        &mut self,
        ctx: &RunContext,
        cell: &Self::Cell,
        setup: &mut Self::Setup,
        trial: u64,
    ) -> Result<TrialRows<Self::Row, Self::Side>>;
    /// Why this trial's rows are not a measurement, if they are not: errors
    /// that are not what the experiment measures (a refused connection in a
    /// concurrency trial), or every decision failing. A rejected trial is not
    /// committed and stops the experiment with this reason; resume redoes it.
    /// Experiments where errors are the measurement (fail-open, cluster)
    /// keep the default, which rejects nothing.
    fn reject(
        &self,
        _cell: &Self::Cell,
        _rows: &TrialRows<Self::Row, Self::Side>,
    ) -> Option<String> {
        None
    }
    /// Why this trial stalled, if it did: its own schedule ran so late (the
    /// server or the harness stood still) that its rows measure the stall,
    /// not the limiter. A stalled trial is never committed, a cell's first
    /// trial included: it is redone on fresh keys (only experiments whose
    /// keys come from `RunContext::fresh_client` may say so), and one that
    /// stalls in every attempt stops the experiment (resume redoes it).
    /// Default: never (an experiment without a schedule of its own).
    fn stalled(
        &self,
        _cell: &Self::Cell,
        _rows: &TrialRows<Self::Row, Self::Side>,
    ) -> Option<String> {
        None
    }
    /// Tear a cell down after its last trial (default: drop the setup).
    async fn finish_cell(&mut self, _ctx: &RunContext, _setup: Self::Setup) -> Result<()> {
        Ok(())
    }
}

/// The error for servers that died during a trial or a cell's setup or
/// teardown: names them, says nothing of it was committed, and how to redo it.
fn died_error(ctx: &RunContext, died: &[String], when: &str, cause: Option<&Error>) -> Error {
    let cause = cause.map(|e| format!(" ({e})")).unwrap_or_default();
    Error::Other(format!(
        "{} died during {when} of `{}`{cause}; nothing of it was committed. Resume the run (--resume {}) to redo it",
        died.join(", "),
        ctx.experiment,
        ctx.run.run_id,
    ))
}

/// An error while a cell ran: if one of the harness's servers died, say so
/// (the connection error alone does not).
async fn server_death(ctx: &RunContext, id: &str, trial: Option<u64>, e: Error) -> Error {
    let died = servers_dead_after_failure().await;
    if died.is_empty() {
        return e;
    }
    let when = match trial {
        Some(t) => format!("trial {t} of cell `{id}`"),
        None => format!("cell `{id}`"),
    };
    died_error(ctx, &died, &when, Some(&e))
}

/// After a failure, the harness's servers that died. A killed server's
/// sockets close while the kernel tears the process down, a little before
/// it shows as a zombie, so a client can see "connection reset" first:
/// look again for up to half a second before concluding none died.
async fn servers_dead_after_failure() -> Vec<String> {
    for _ in 0..25 {
        let died = reaper::died_unexpectedly();
        if !died.is_empty() {
            return died;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    reaper::died_unexpectedly()
}

/// Attempts of a trial whose schedule slipped beside other cells; the last
/// one runs alone.
const MAX_ATTEMPTS: u64 = 3;

/// Run-level tables (noise.csv, schedule.csv) are written by every
/// experiment's sweep, and latency-bound experiments run side by side: one
/// writer at a time, so the header is written once and rows never interleave.
static SHARED_TABLES: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn append_shared<R: Serialize>(path: &std::path::Path, rows: &[R]) -> Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    let _one = SHARED_TABLES.lock().unwrap_or_else(|p| p.into_inner());
    CsvAppender::open(path)?.append(rows)
}

/// Rows of `noise.csv`, in the shape of its header (a run resumed from
/// before the lane columns keeps its table's shape).
fn append_noise(
    path: &std::path::Path,
    rows: &[limitbench_analysis::rows::NoiseRow],
) -> Result<()> {
    if super::noise::takes_lane_columns(path) {
        append_shared(path, rows)
    } else {
        append_shared(path, &super::noise::without_lanes(rows))
    }
}

/// Run every cell's unfinished trials, in order, committing as they finish.
pub async fn run<S: Sweep>(ctx: &RunContext, sweep: &mut S, cells: &[S::Cell]) -> Result<()> {
    let mut sides: Vec<&str> = S::SIDE.into_iter().collect();
    if S::TIMED {
        sides.push(latency::SIDE);
    }
    if S::HISTORY {
        sides.push(HISTORY_SIDE);
    }
    let mut log = ctx.trial_log(&sides)?;
    let mut seen = HashSet::new();
    for c in cells {
        for k in sweep.keys(c) {
            if !seen.insert(k.clone()) {
                return Err(Error::Other(format!(
                    "experiment `{}` has two cells with the id `{k}`",
                    ctx.experiment
                )));
            }
        }
    }
    // A shard runs its own cells only (ids were checked over all of them,
    // so every shard refuses the same duplicate).
    let cells: Vec<&S::Cell> = cells
        .iter()
        .enumerate()
        .filter(|(i, _)| ctx.shard.is_none_or(|s| s.owns(ctx.experiment, *i)))
        .map(|(_, c)| c)
        .collect();
    // The CPU-bound part of an experiment runs alone, the rest in lanes.
    let cells: Vec<&S::Cell> = cells
        .into_iter()
        .filter(|c| {
            ctx.part
                .is_none_or(|(part, is_cpu)| part.holds(is_cpu, &sweep.cell_id(c)))
        })
        .collect();
    // A lane (one of several concurrent runs of this experiment) takes its
    // round-robin part of the shard's cells, each lane with its own servers.
    let cells: Vec<&S::Cell> = cells
        .into_iter()
        .enumerate()
        .filter(|(i, _)| ctx.lane.is_none_or(|l| l.owns("", *i)))
        .map(|(_, c)| c)
        .collect();
    // A trial floor (`--until-decisive`: the experiment's, or the cell's
    // own) adds trials to cells with fewer.
    // A cell's floor is the most of its id's and of its keys' (the cell
    // ids its rows carry: cost's one cell of rounds writes a row per
    // variant, and a claim rests on those).
    let trials_of = |sweep: &S, c: &S::Cell| {
        let own = std::iter::once(sweep.cell_id(c))
            .chain(sweep.keys(c))
            .filter_map(|k| ctx.cell_floors.get(&k).copied())
            .max()
            .unwrap_or(0);
        sweep.trials(c).max(ctx.trial_floor).max(own)
    };
    let total: u64 = cells.iter().map(|c| trials_of(sweep, c)).sum();
    // Other processes' CPU while each cell ran (noise.csv, one row per cell),
    // from one sampler for the whole experiment, written as the sampler
    // sees each cell to its end, and the rest when the experiment ends or
    // fails.
    let noise_path = ctx.run.file(NOISE_CSV);
    let schedule_path = ctx.run.file(parallel::SCHEDULE_CSV);
    let noise = NoiseSampler::start();
    let probe = parallel::SlipProbe::start();
    let mut spans: Vec<(String, std::time::Instant, std::time::Instant)> = Vec::new();
    let mut progress = ctx.progress(total);
    // A stalled server fails the trial by a deadline (run::deadline).
    let mut deadlines = super::deadline::Deadlines::new(ctx);
    let mut times = CsvAppender::open(&ctx.run.file(TRIAL_TIMES_CSV))?;
    // Trials committed disturbed (named at the end).
    let mut disturbed: Vec<String> = Vec::new();
    // The cells run in a block so that its early returns (a server that
    // died, a trial that is not a measurement) still reach the noise rows
    // below: the cells that finished keep their record.
    let result: Result<()> = async {
    for &cell in &cells {
        let id = sweep.cell_id(cell);
        let keys = sweep.keys(cell);
        let trials = trials_of(sweep, cell);
        let todo: Vec<u64> = (0..trials)
            .filter(|&t| keys.iter().any(|k| !log.is_done(k, t)))
            .collect();
        progress.skip(trials - todo.len() as u64);
        if todo.is_empty() {
            continue;
        }
        let cell_started = std::time::Instant::now();
        let flight = parallel::InFlight::start(ctx.experiment, &id);
        let setup_what = format!("the setup of cell `{id}`");
        let setup = {
            // A setup (servers starting, a fill) is work beside other
            // cells' trials too: it takes a turn.
            let _turn = flight.turn(false).await;
            deadlines
                .within(ctx, &id, &setup_what, sweep.setup(ctx, cell))
                .await
        };
        let mut setup = match setup {
            Ok(s) => s,
            Err(e) => return Err(server_death(ctx, &id, None, e).await),
        };
        for trial in todo {
            let mut attempt = 0;
            let (out, took) = loop {
            ctx.attempt.store(attempt, std::sync::atomic::Ordering::Relaxed);
            let alone = attempt + 1 == MAX_ATTEMPTS;
            let turn = flight.turn(alone).await;
            flight.trial_begins();
            probe.take();
            let trial_started = std::time::Instant::now();
            let what = format!("trial {trial} of cell `{id}`");
            let out = deadlines
                .within(ctx, &id, &what, sweep.trial(ctx, cell, &mut setup, trial))
                .await;
            let took = trial_started.elapsed();
            let slip = probe.take();
            let beside = flight.trial_ends();
            drop(turn);
            // Others' CPU during the trial, where the run judges it (the
            // scorecard's probes and in-process contexts do not: no snapshot).
            let others = if ctx.others_max_cores.is_finite() {
                Some(noise.during(trial_started, std::time::Instant::now()).await)
            } else {
                None
            };
            // A server that died under the trial makes whatever it returned
            // (rows full of refused connections, or an error) not a measurement.
            let out = match out {
                Err(e) => return Err(server_death(ctx, &id, Some(trial), e).await),
                Ok(out) => {
                    let died = reaper::died_unexpectedly();
                    if !died.is_empty() {
                        let when = format!("trial {trial} of cell `{id}`");
                        return Err(died_error(ctx, &died, &when, None));
                    }
                    out
                }
            };
            if let Some(why) = sweep.reject(cell, &out) {
                // Failed decisions may be the first sign of a server dying.
                let died = servers_dead_after_failure().await;
                if !died.is_empty() {
                    let when = format!("trial {trial} of cell `{id}`");
                    let cause = Error::Other(why);
                    return Err(died_error(ctx, &died, &when, Some(&cause)));
                }
                return Err(Error::Other(format!(
                    "trial {trial} of cell `{id}` of `{}` is not a measurement: {why}; it was not committed",
                    ctx.experiment
                )));
            }
            // A trial disturbed (its schedule late past the experiment's
            // bound, or other processes on the cores past theirs) is no
            // measurement. Beside other cells it is redone on fresh keys,
            // the last attempt alone; a trial still disturbed then is
            // committed with the reason, and the analysis judges nothing on
            // its cell (`inconclusive (disturbed: ...)`).
            let why = disturbance(ctx, &slip, others.as_ref());
            // A trial whose own schedule stalled (the server or the harness
            // stood still) is never committed, a cell's first trial
            // included: redone on fresh keys, and an error if every attempt
            // stalls.
            let stalled = sweep.stalled(cell, &out);
            let redo = stalled.is_some()
                || (why.is_some()
                    && !beside.is_empty()
                    && !alone
                    && matches!(ctx.bound, parallel::Bound::Latency { .. }));
            let why_row = match (&stalled, &why) {
                (Some(s), Some(w)) => format!("stalled: {s}; {w}"),
                (Some(s), None) => format!("stalled: {s}"),
                (None, w) => w.clone().unwrap_or_default(),
            };
            let r3 = |x: f64| (x * 1000.0).round() / 1000.0;
            let row = parallel::ScheduleRow {
                experiment: ctx.experiment.to_string(),
                cell: id.clone(),
                trial,
                attempt,
                slip_max_us: slip.max_us,
                slip_p99_us: slip.p99_us,
                slip_bound_us: slip_bound_us(ctx),
                beside: beside.join(";"),
                committed: !redo,
                other_cpu_cores: others.as_ref().map(|o| r3(o.other_cores)),
                beside_lanes_cpu_cores: others.as_ref().map(|o| r3(o.beside_cores)),
                other_cpu_bound: ctx.others_max_cores.is_finite().then_some(ctx.others_max_cores),
                disturbed: why_row,
                steal_cores: others.as_ref().map(|o| r3(o.steal_cores)),
            };
            append_shared(&schedule_path, &[row])?;
            if let Some(s) = &stalled
                && attempt + 1 >= MAX_ATTEMPTS
            {
                return Err(Error::Other(format!(
                    "trial {trial} of cell `{id}` of `{}` stalled in all {MAX_ATTEMPTS} attempts ({s}); nothing of it was committed. Resume the run (--resume {}) to redo it",
                    ctx.experiment, ctx.run.run_id
                )));
            }
            if !redo {
                if let Some(why) = why {
                    disturbed.push(format!("{id} trial {trial}: {why}"));
                }
                break (out, took);
            }
            attempt += 1;
            };
            ctx.attempt.store(0, std::sync::atomic::Ordering::Relaxed);
            // On a redo of a multi-key trial, keep only what is not committed yet.
            let fresh = |k: &str| !log.is_done(k, trial);
            let side: Vec<&S::Side> = out.side.iter().filter(|r| fresh(r.cell())).collect();
            let rows: Vec<&S::Row> = out.rows.iter().filter(|r| fresh(r.cell())).collect();
            let lat: Vec<&LatencyRow> = out.latency.iter().filter(|r| fresh(r.cell())).collect();
            let hist: Vec<&HistoryRow> = out.history.iter().filter(|r| fresh(&r.cell)).collect();
            if let Some(name) = S::SIDE {
                log.side(name, &side)?;
            }
            if S::TIMED {
                log.side(latency::SIDE, &lat)?;
            }
            if S::HISTORY {
                log.side(HISTORY_SIDE, &hist)?;
            }
            let mut committed: Vec<&str> = rows.iter().map(|r| r.cell()).collect();
            committed.dedup();
            log.commit_keys(&committed, trial, &rows)?;
            deadlines.observed(&id, took);
            times.append(&[TrialTime {
                experiment: ctx.experiment.to_string(),
                cell: id.clone(),
                trial,
                wall_ms: took.as_secs_f64() * 1000.0,
            }])?;
            ctx.record_time()?;
            progress.inc(&id);
        }
        let finished = {
            let _turn = flight.turn(false).await;
            sweep.finish_cell(ctx, setup).await
        };
        if let Err(e) = finished {
            return Err(server_death(ctx, &id, None, e).await);
        }
        spans.push((id.clone(), cell_started, std::time::Instant::now()));
        // Rows of the cells the sampler has seen to their end, written now
        // so that a kill loses at most the last second's cells.
        append_noise(&noise_path, &noise.take_ready(ctx.experiment, &mut spans))?;
    }
    progress.finish();
    Ok(())
    }
    .await;
    append_noise(&noise_path, &noise.stop_spans(ctx.experiment, &spans))?;
    if !disturbed.is_empty() && !ctx.is_quiet() {
        eprintln!(
            "limitbench: {}: {} trial(s) disturbed, kept marked (schedule.csv; the analysis judges nothing on their cells): {}{}",
            ctx.experiment,
            disturbed.len(),
            disturbed
                .iter()
                .take(3)
                .cloned()
                .collect::<Vec<_>>()
                .join("; "),
            if disturbed.len() > 3 { "; ..." } else { "" }
        );
    }
    result
}

/// The experiment's bound on its schedule's slip (us; none if CPU-bound).
fn slip_bound_us(ctx: &RunContext) -> Option<u64> {
    match ctx.bound {
        parallel::Bound::Latency { max_slip_ms } => Some((max_slip_ms * 1000.0) as u64),
        parallel::Bound::Cpu => None,
    }
}

/// Why a trial is disturbed past its experiment's bounds, if it is: its
/// schedule late (latency-bound experiments), or other processes taking
/// more CPU than the experiment allows.
pub fn disturbance(
    ctx: &RunContext,
    slip: &parallel::Slip,
    others: Option<&super::noise::TrialNoise>,
) -> Option<String> {
    let mut why = Vec::new();
    if let Some(b) = slip_bound_us(ctx)
        && !slip.within(b)
    {
        why.push(format!(
            "schedule late: p99 slip {:.1} ms (max {:.1} ms) past the bound {:.1} ms",
            slip.p99_us as f64 / 1000.0,
            slip.max_us as f64 / 1000.0,
            b as f64 / 1000.0
        ));
    }
    // Time the hypervisor gave another guest is taken from the run as
    // surely as another process's CPU: both count against the bound.
    if let Some(others) = others
        && others.other_cores + others.steal_cores > ctx.others_max_cores
    {
        let stolen = if others.steal_cores > 0.0 {
            format!(" and the hypervisor stole {:.2}", others.steal_cores)
        } else {
            String::new()
        };
        why.push(format!(
            "other processes took {:.2} cores{stolen} over {:.1} s, past the bound {:.2} (busiest: {})",
            others.other_cores,
            others.seconds,
            ctx.others_max_cores,
            if others.busiest.is_empty() {
                "?"
            } else {
                &others.busiest
            }
        ));
    }
    (!why.is_empty()).then(|| why.join("; "))
}
