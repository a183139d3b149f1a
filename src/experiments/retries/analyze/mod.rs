//! Analysis of `retries` (A2.1-A2.3): WATCH/MULTI admitted vs retry budget
//! per round trip, and at A2.1's point (budget 10, the longest round trip)
//! per setting of the details the study leaves unstated (backoff, budget
//! counting, arrival, attempt, round-trip jitter); the slowdown against the
//! Lua fixed window per worker count and round trip (A2.2); over-admission
//! (never, over the retries and concurrency trials, A2.3).
//!
//! Layout: metric functions here (rows -> numbers, unit-tested in
//! `tests.rs`), the figures in `figures.rs`, one `Measured` per claim in
//! `claims.rs`, and [`analyze`], which reads the CSV and calls them.

mod claims;
mod figures;

use std::collections::BTreeMap;

use super::rows::Row;
use limitbench_analysis::experiments::concurrency::rows::Row as ConcurrencyRow;
use limitbench_analysis::stats::Summary;
use limitbench_analysis::{AnalysisCtx, Measured, Section};
use limitbench_base::error::Result;

const WATCH: &str = "watch-multi";

/// The retry budget A2.1 reads (at the longest round trip).
pub const A2_1_BUDGET: u32 = 10;
/// The retry budget A2.2 expects to be exact and measures the slowdown of.
pub const A2_2_BUDGET: u32 = 1000;
/// The worker count A2.1 states (and A2.2's default).
pub const WORKERS: u64 = 64;

/// A round trip in ms as whole us (a map key).
pub fn rtt_key(ms: f64) -> i64 {
    (ms * 1000.0).round() as i64
}

/// A value in ms as the claims' settings spell it: `0`, `0.5`, `1`, `6.7`.
pub fn ms_text(ms: f64) -> String {
    format!("{}", (ms * 1000.0).round() / 1000.0)
}

/// The unstated details one WATCH/MULTI trial ran with, as the claims'
/// settings spell them (one spelling for every claim that shares a detail).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Details {
    pub backoff: String,
    pub budget_counts: String,
    pub arrival: String,
    pub attempt: String,
    pub rtt_jitter_ms: String,
    pub workers: u64,
}

impl Details {
    /// Rows written before a detail had a column read as its default.
    pub fn of(r: &Row) -> Self {
        let backoff = if !r.backoff.is_empty() {
            r.backoff.clone()
        } else {
            match r.backoff_us.unwrap_or(0) {
                0 => "fixed-0".into(),
                u if u % 1000 == 0 => format!("fixed-{}ms", u / 1000),
                u => format!("fixed-{u}us"),
            }
        };
        Details {
            backoff,
            budget_counts: if r.budget_includes_first == Some(true) {
                "first-try-counted".into()
            } else {
                "retries-only".into()
            },
            arrival: if r.arrival_ms > 0.0 {
                format!("spread-{}ms", ms_text(r.arrival_ms))
            } else {
                "all-at-once".into()
            },
            attempt: if r.attempt.is_empty() {
                "watch-get-multi".into()
            } else {
                r.attempt.clone()
            },
            rtt_jitter_ms: ms_text(r.rtt_jitter_ms),
            workers: r.workers,
        }
    }

    /// Our defaults of the details the study does not state.
    pub fn default_setting() -> Self {
        Details {
            backoff: "fixed-0".into(),
            budget_counts: "retries-only".into(),
            arrival: "all-at-once".into(),
            attempt: "watch-get-multi".into(),
            rtt_jitter_ms: "0".into(),
            workers: WORKERS,
        }
    }

    /// Every detail but the worker count (stated by A2.1).
    pub fn pairs(&self) -> Vec<(&'static str, String)> {
        vec![
            ("backoff", self.backoff.clone()),
            ("budget_counts", self.budget_counts.clone()),
            ("arrival", self.arrival.clone()),
            ("attempt", self.attempt.clone()),
            ("rtt_jitter_ms", self.rtt_jitter_ms.clone()),
        ]
    }

    /// The details that differ from the default, in words ("default" if none).
    pub fn label(&self) -> String {
        let d = Details::default_setting();
        let diff: Vec<String> = self
            .pairs()
            .into_iter()
            .zip(d.pairs())
            .filter(|(a, b)| a.1 != b.1)
            .map(|(a, _)| format!("{}={}", a.0, a.1))
            .chain((self.workers != d.workers).then(|| format!("workers={}", self.workers)))
            .collect();
        if diff.is_empty() {
            "default".into()
        } else {
            diff.join(", ")
        }
    }
}

/// One WATCH/MULTI cell: (details, round trip us, retry budget).
pub type Key = (Details, i64, u32);

// ---- Metrics ----

/// The trials by setting: WATCH/MULTI per [`Key`], the baseline per
/// [`BaseKey`].
#[derive(Debug, Default)]
pub struct Groups<'a> {
    pub watch: BTreeMap<Key, Vec<&'a Row>>,
    pub baseline: BTreeMap<BaseKey, Vec<&'a Row>>,
}

/// One baseline cell: (round trip us, workers, arrival as `Details::arrival`
/// names it).
pub type BaseKey = (i64, u64, String);

/// The baseline cell a WATCH cell is compared with: the same round trip,
/// workers and arrival.
pub fn base_key(d: &Details, rtt: i64) -> BaseKey {
    (rtt, d.workers, d.arrival.clone())
}

pub fn groups(rows: &[Row]) -> Groups<'_> {
    let mut g = Groups::default();
    for r in rows {
        match r.retry_budget {
            Some(b) => g
                .watch
                .entry((Details::of(r), rtt_key(r.target_rtt_ms), b))
                .or_default()
                .push(r),
            None => g
                .baseline
                .entry(base_key(&Details::of(r), rtt_key(r.target_rtt_ms)))
                .or_default()
                .push(r),
        }
    }
    g
}

/// One field over a group of trials.
pub fn values(v: &[&Row], field: fn(&Row) -> f64) -> Vec<f64> {
    v.iter().map(|r| field(r)).collect()
}

/// A summary of one field over a group of trials.
pub fn summary(v: &[&Row], field: fn(&Row) -> f64) -> Summary {
    Summary::of(&values(v, field))
}

/// The longest round trip WATCH/MULTI ran at (us).
pub fn longest(g: &Groups) -> Option<i64> {
    g.watch.keys().map(|k| k.1).max()
}

/// Trials' values per setting of the unstated details.
pub type PerSetting = Vec<(Details, Vec<f64>)>;

/// A2.1: admitted per trial at budget 10, the longest round trip and A2.1's
/// 64 workers, per setting of the other details (default first, then key order).
pub fn a2_1(g: &Groups) -> Option<(i64, PerSetting)> {
    let rtt = longest(g)?;
    let mut at: Vec<(Details, Vec<f64>)> = g
        .watch
        .iter()
        .filter(|(k, _)| k.1 == rtt && k.2 == A2_1_BUDGET && k.0.workers == WORKERS)
        .map(|(k, v)| (k.0.clone(), values(v, |r| r.admitted as f64)))
        .collect();
    if at.is_empty() {
        return None;
    }
    let d = Details::default_setting();
    at.sort_by_key(|(k, _)| *k != d);
    Some((rtt, at))
}

/// A2.2 at one worker count: per round trip with both, the slowdown
/// (mean wall of WATCH/MULTI at budget 1000, default details but workers, /
/// mean wall of the baseline at the same round trip and workers) with the
/// 95% interval of the WATCH mean over the same Lua mean; and how many of
/// those WATCH trials admitted exactly the limit, of how many.
#[derive(Debug, PartialEq)]
pub struct Slowdown {
    pub workers: u64,
    /// The unstated details of the WATCH cells (the baseline runs at the
    /// same arrival; backoff, budget counting and attempt do not apply to it).
    pub details: Details,
    /// (round trip us, ratio, lo, hi, n).
    pub ratios: Vec<(i64, f64, f64, f64, usize)>,
    pub exact: usize,
    pub trials: usize,
}

pub fn a2_2(g: &Groups) -> Vec<Slowdown> {
    let mut by: BTreeMap<Details, Slowdown> = BTreeMap::new();
    let default = Details::default_setting();
    for ((d, rtt, b), v) in &g.watch {
        // The default details at any worker count (the worker sweep), and
        // A2.2's 64 workers at any other setting of the unstated details
        // (one value per detail serves A2.1 and A2.2 alike).
        let mut dd = d.clone();
        dd.workers = WORKERS;
        if *b != A2_2_BUDGET || (dd != default && d.workers != WORKERS) {
            continue;
        }
        let s = by.entry(d.clone()).or_insert(Slowdown {
            workers: d.workers,
            details: d.clone(),
            ratios: Vec::new(),
            exact: 0,
            trials: 0,
        });
        s.exact += v.iter().filter(|r| r.admitted == r.limit).count();
        s.trials += v.len();
        if let Some(l) = g.baseline.get(&base_key(d, *rtt)) {
            let lua = summary(l, |r| r.wall_ms).mean;
            let w = values(v, |r| r.wall_ms);
            let (lo, hi) = limitbench_analysis::stats::mean_cs(&w);
            s.ratios.push((
                *rtt,
                Summary::of(&w).mean / lua,
                lo / lua,
                hi / lua,
                w.len(),
            ));
        }
    }
    // The worker sweep first, by workers, then the other settings.
    let mut out: Vec<Slowdown> = by.into_values().collect();
    out.sort_by_key(|s| (!s.is_worker_sweep(), s.workers, s.details.label()));
    out
}

impl Slowdown {
    /// At the default details, only the worker count varied.
    pub fn is_worker_sweep(&self) -> bool {
        let mut d = self.details.clone();
        d.workers = WORKERS;
        d == Details::default_setting()
    }
}

/// A2.3: WATCH/MULTI's over-admission per trial, retries then concurrency.
pub fn a2_3(rows: &[Row], concurrency: &[ConcurrencyRow]) -> Vec<i64> {
    let mut over: Vec<i64> = rows
        .iter()
        .filter(|r| r.strategy == WATCH)
        .map(|r| r.admitted as i64 - r.limit as i64)
        .collect();
    over.extend(
        concurrency
            .iter()
            .filter(|r| r.strategy == WATCH)
            .map(|r| r.over_admitted),
    );
    over
}

/// The cells A2.3's maximum rests on: every WATCH/MULTI trial's, those of
/// concurrency named as its (`disturbance::OTHER`).
pub fn a2_3_cells(rows: &[Row], concurrency: &[ConcurrencyRow]) -> Vec<String> {
    let other = limitbench_analysis::disturbance::OTHER;
    rows.iter()
        .filter(|r| r.strategy == WATCH)
        .map(|r| r.cell.clone())
        .chain(
            concurrency
                .iter()
                .filter(|r| r.strategy == WATCH)
                .map(|r| format!("concurrency{other}{}", r.cell)),
        )
        .collect()
}

/// The lockstep model of WATCH/MULTI on one key: every active worker starts
/// an attempt at the same moment (a wave), exactly one EXEC per wave
/// succeeds, the others abort; a request that has made `attempts` attempts
/// is refused, and a worker whose request ended takes the next of the
/// `limit` requests. Returns how many are admitted. Which worker wins a wave
/// does not change the count: every wave admits one, and the waves end when
/// the requests (each lasting at most `attempts` waves) run out.
pub fn lockstep_admitted(workers: u64, limit: u64, attempts: u32) -> u64 {
    let mut pool = limit;
    let first = workers.min(pool);
    pool -= first;
    let mut active: Vec<u32> = vec![0; first as usize];
    let mut admitted = 0;
    while !active.is_empty() {
        for a in active.iter_mut() {
            *a += 1;
        }
        active.remove(0);
        admitted += 1;
        active.retain(|a| *a < attempts);
        let take = (workers - active.len() as u64).min(pool);
        pool -= take;
        active.extend(std::iter::repeat_n(0, take as usize));
    }
    admitted
}

/// The lockstep model of A2.2's slowdown at a long round trip: WATCH/MULTI
/// admits one request per wave of three round trips (WATCH, GET,
/// MULTI..EXEC), so L requests take 3L round trips; the script decides c
/// at a time in one round trip, ceil(L/c) round trips. Ratio 3L / ceil(L/c).
pub fn lockstep_slowdown(workers: u64, limit: u64) -> f64 {
    3.0 * limit as f64 / limit.div_ceil(workers.max(1)) as f64
}

pub fn analyze(ctx: &AnalysisCtx) -> Result<(Vec<Measured>, Section)> {
    let mut out = Vec::new();
    let Some(rows) = ctx.read_csv::<Row>("retries.csv")? else {
        return Ok((out, Section::new("retries", "Not run.\n")));
    };
    let limit = rows.first().map(|r| r.limit).unwrap_or(100);
    let mut md = format!(
        "{} trials; the workers share exactly L={limit} requests per trial; seed {}.\n\n",
        rows.len(),
        ctx.manifest["seed"]
    );
    let mut appendix = String::new();
    let g = groups(&rows);
    let concurrency = ctx
        .read_csv::<ConcurrencyRow>("concurrency.csv")?
        .unwrap_or_default();
    figures::budgets(ctx, &g, limit, &mut md)?;
    figures::a2_1_settings(ctx, &g, limit, &mut md)?;
    figures::a2_1_jitter(ctx, &g, limit, &mut md)?;
    figures::a2_2_workers(ctx, &g, limit, &mut md)?;
    figures::a2_2_arrivals(ctx, &g, &mut md)?;
    figures::a2_3(ctx, &g, &concurrency, &mut md)?;
    figures::table(&g, &mut appendix);
    let m1 = claims::a2_1(ctx, &g, limit);
    let m2 = claims::a2_2(ctx, &g, limit);
    let over = a2_3(&rows, &concurrency);
    let finding = claims::finding(&g, m1.as_ref(), m2.as_ref(), &over, limit);
    out.extend(m1);
    out.extend(m2);
    out.extend(claims::a2_3(&over).map(|m| m.rests_on(a2_3_cells(&rows, &concurrency))));
    Ok((
        out,
        Section::new("retries", md)
            .finding(finding)
            .appendix(appendix),
    ))
}

/// A2.2's series names of the round trips `rtts`, in order: the steps of a
/// ramp (round trips are ordered values, drawn light to dark).
pub fn rtt_steps(rtts: impl Iterator<Item = i64>) -> Vec<String> {
    let ms = |r: i64| limitbench_analysis::figure::num(r as f64 / 1000.0);
    rtts.map(|r| format!("{} ms added round trip", ms(r)))
        .collect()
}
