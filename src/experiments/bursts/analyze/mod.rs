//! Analysis of `bursts` (A3.1-A3.4): the most admitted in any sliding window
//! of one window length, recomputed exactly from `bursts-history.csv`
//! (`window::max_in_window`) on Redis's clock where the strategy's script
//! returns TIME, else on the reply time (the fixed windows, WATCH and
//! check-then-act read no clock in Redis), divided by L, per trial.
//!
//! Layout: the per-trial metric ([`trial`]), which trials each claim reads
//! and what it takes of them (unit-tested in `tests.rs` beside this file),
//! then the presentation (table, figure, markdown and one `Measured` per
//! claim), then [`analyze`].

pub mod scorecard;

mod a3_3;
mod figures;
pub mod straddle;

use std::collections::{BTreeMap, BTreeSet};

pub use a3_3::{a3_3_sweep, spill_text, spilled};
pub use straddle::Miss;

use super::rows::{HistoryRow, Row};
use limitbench_analysis::claims::value_text;
use limitbench_analysis::stats::{Summary, mean_cs, mean_cs_method};
use limitbench_analysis::table::{distinct, f, md_table};
use limitbench_analysis::window::{
    admission_times, bucket_excess, by_trial, max_in_window, min_span,
};
use limitbench_analysis::{AnalysisCtx, Measured, Section};
use limitbench_base::error::Result;

/// One trial of one strategy, measured from its history.
#[derive(Debug)]
pub struct Trial<'a> {
    pub row: &'a Row,
    /// Most admitted in any window / L (NaN without a history).
    pub ratio: f64,
    /// Shortest span holding 2L admissions (straddle), us.
    pub span_2l_us: Option<i64>,
    /// The clock the admission times are on: `redis` or `reply`.
    pub clock: &'static str,
    /// A bucket's promise as an arrival curve: the most admitted in any
    /// interval beyond rate x its length (+1 ms, the clock's resolution),
    /// over capacity (= L, refilling L per window; NaN without a history).
    pub bucket: f64,
    /// On the straddle pattern: whether the two bursts fell on the two
    /// sides of the fixed window's edge, from the times alone
    /// ([`straddle::straddled`]); None on other patterns.
    pub straddled: Option<std::result::Result<(), straddle::Miss>>,
}

/// The pattern variant of a row: its cell without the strategy.
pub fn variant(r: &Row) -> String {
    r.cell
        .split_once('/')
        .map(|x| x.1.to_string())
        .unwrap_or_default()
}

// ---- Metrics ----

/// The window metric of one trial from its history rows.
pub fn trial<'a>(row: &'a Row, history: &[HistoryRow]) -> Trial<'a> {
    let (times, clock) = admission_times(history, true);
    let (n, _) = max_in_window(&times, row.window_ms as i64 * 1000);
    Trial {
        row,
        ratio: if history.is_empty() {
            f64::NAN
        } else {
            n as f64 / row.limit as f64
        },
        span_2l_us: min_span(&times, 2 * row.limit as usize),
        clock,
        bucket: if history.is_empty() {
            f64::NAN
        } else {
            let rate_per_us = row.limit as f64 / (row.window_ms as f64 * 1000.0);
            bucket_excess(&times, row.limit as f64, rate_per_us, 1000)
        },
        straddled: (row.pattern == "straddle").then(|| straddle::straddled(row, history)),
    }
}

/// Every row's trial, its history looked up by (cell, trial).
/// Histories per (cell, trial).
type Hist = BTreeMap<(String, u64), Vec<HistoryRow>>;

pub fn trials<'a>(
    rows: &'a [Row],
    hist: &BTreeMap<(String, u64), Vec<HistoryRow>>,
) -> Vec<Trial<'a>> {
    rows.iter()
        .map(|r| {
            let h = hist.get(&(r.cell.clone(), r.trial));
            trial(r, h.map(Vec::as_slice).unwrap_or(&[]))
        })
        .collect()
}

/// The ratios per (variant, strategy), for the table.
pub fn ratio_table(trials: &[Trial]) -> BTreeMap<(String, String), Vec<f64>> {
    let mut cells: BTreeMap<(String, String), Vec<f64>> = BTreeMap::new();
    for t in trials {
        cells
            .entry((variant(t.row), t.row.strategy.clone()))
            .or_default()
            .push(t.ratio);
    }
    cells
}

/// The trials of `pattern` (every pattern if empty) and of the strategies
/// `strategy` accepts that have a ratio.
pub fn pick<'t, 'a>(
    trials: &'t [Trial<'a>],
    pattern: &str,
    strategy: fn(&str) -> bool,
) -> Vec<&'t Trial<'a>> {
    trials
        .iter()
        .filter(|t| {
            (pattern.is_empty() || t.row.pattern == pattern)
                && strategy(&t.row.strategy)
                && t.ratio.is_finite()
        })
        .collect()
}

/// A3.1 reads the fixed windows on the straddle pattern.
pub fn a3_1_trials<'t, 'a>(trials: &'t [Trial<'a>]) -> Vec<&'t Trial<'a>> {
    pick(trials, "straddle", |s| s.starts_with("fixed-window"))
}

/// A3.1's trials split by the straddle rule ([`straddle`]): those whose
/// bursts fell on the two sides of the fixed window's edge (the event the
/// study describes, judged), and those that did not, with why. Decided from
/// the bursts' times, never from the ratio.
pub fn a3_1_split<'t, 'a>(
    trials: &'t [Trial<'a>],
) -> (Vec<&'t Trial<'a>>, Vec<(&'t Trial<'a>, Miss)>) {
    let mut valid = Vec::new();
    let mut invalid = Vec::new();
    for t in a3_1_trials(trials) {
        match t.straddled {
            Some(Ok(())) => valid.push(t),
            Some(Err(m)) => invalid.push((t, m)),
            None => invalid.push((t, Miss::NoBursts)),
        }
    }
    (valid, invalid)
}

/// A3.2 reads the token bucket on quiet-then-burst.
pub fn a3_2_trials<'t, 'a>(trials: &'t [Trial<'a>]) -> Vec<&'t Trial<'a>> {
    pick(trials, "quiet-then-burst", |s| s == "token-bucket")
}

/// A3.3 reads the sliding-window counter on burst-then-sustained.
pub fn a3_3_trials<'t, 'a>(trials: &'t [Trial<'a>]) -> Vec<&'t Trial<'a>> {
    pick(trials, "burst-then-sustained", |s| {
        s == "sliding-window-counter"
    })
}

/// The patterns of the study; `anchored` (for windows anchored at a key's
/// first request) is the harness's own, and no claim reads it.
pub const STUDY_PATTERNS: [&str; 5] = [
    "straddle",
    "quiet-then-burst",
    "burst-then-sustained",
    "steady",
    "poisson",
];

/// A3.4 reads the sliding-window log on every pattern of the study.
pub fn a3_4_trials<'t, 'a>(trials: &'t [Trial<'a>]) -> Vec<&'t Trial<'a>> {
    pick(trials, "", |s| s == "sliding-window-log")
        .into_iter()
        .filter(|t| STUDY_PATTERNS.contains(&t.row.pattern.as_str()))
        .collect()
}

/// The interval A3.1 and A3.2 are judged on: the confidence sequence of
/// the mean per-trial ratio (each trial is one straddle, or one burst after
/// a quiet spell: the event the study's sentence describes), its sessions
/// kept apart (`limitbench_analysis::sessions`), and how it was computed.
/// Not the maximum over trials: no interval of a sample maximum is valid
/// for the population's (it only grows with the trials, and a bootstrap of
/// it never reaches above the sample's largest value).
fn mean_interval(
    what: &str,
    trials: &[&Trial],
    manifest: &serde_json::Value,
) -> ((f64, f64), String, Option<String>, bool) {
    use limitbench_analysis::sessions::{BySession, judged_mean_interval, session_of};
    let v: Vec<f64> = trials.iter().map(|t| t.ratio).collect();
    let mut by = BySession::new();
    for t in trials {
        by.entry(session_of(manifest, "bursts", t.row.trial))
            .or_default()
            .push(t.ratio);
    }
    let (iv, apart) = judged_mean_interval(what, &by, mean_cs(&v), 3);
    let disagree = limitbench_analysis::sessions::means_disagree(&by);
    (iv, mean_cs_method(v.len()), apart, disagree)
}

/// The distinct values of the trials' phase (lead) column, `a+b+c` (ms).
fn phases_text(trials: &[&Trial]) -> String {
    let mut p: Vec<i64> = trials
        .iter()
        .filter_map(|t| t.row.phase_ms.map(|x| x.round() as i64))
        .collect();
    p.sort();
    p.dedup();
    p.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join("+")
}

/// The ratios of some trials, summarised.
pub fn ratios(trials: &[&Trial]) -> Summary {
    Summary::of(&trials.iter().map(|t| t.ratio).collect::<Vec<_>>())
}

/// The ratios of some trials per pattern variant.
pub fn ratios_by_variant(trials: &[&Trial]) -> BTreeMap<String, Vec<f64>> {
    let mut m: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for t in trials {
        m.entry(variant(t.row)).or_default().push(t.ratio);
    }
    m
}

/// The shortest spans holding 2L admissions (ms) of the trials that reached 2L.
pub fn spans_2l_ms(trials: &[&Trial]) -> Vec<f64> {
    trials
        .iter()
        .filter_map(|t| t.span_2l_us)
        .map(|x| x as f64 / 1000.0)
        .collect()
}

// ---- Presentation ----

/// Which strategies' admission times are on which clock.
fn clocks_line(trials: &[Trial]) -> String {
    let mut c: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for t in trials {
        let v = c.entry(t.clock).or_default();
        if !v.contains(&t.row.strategy.as_str()) {
            v.push(&t.row.strategy);
        }
    }
    c.iter()
        .map(|(k, v)| format!("{k}: {}", v.join(", ")))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The table: strategy x pattern variant, mean and max ratio.
fn table(rows: &[Row], trials: &[Trial], strategies: &[String], md: &mut String) {
    let cells = ratio_table(trials);
    let variants = distinct(rows.iter().map(variant));
    *md += "Max admitted in any window / L, mean (max) over trials, per pattern variant (lead/phase in ms, rate x L per window):\n\n";
    let mut headers = vec!["pattern"];
    headers.extend(strategies.iter().map(|s| s.as_str()));
    *md += &md_table(
        &headers,
        &variants
            .iter()
            .map(|v| {
                let mut row = vec![v.clone()];
                for s in strategies {
                    let x = cells.get(&(v.clone(), s.clone())).map(|x| Summary::of(x));
                    row.push(
                        x.map(|x| format!("{} ({})", f(x.mean, 2), f(x.max, 2)))
                            .unwrap_or_default(),
                    );
                }
                row
            })
            .collect::<Vec<_>>(),
    );
    *md += "\n";
}

/// The sessions note of a claim whose sessions were kept apart (and
/// whether they disagree).
fn apart_note(m: Measured, apart: Option<String>, disagree: bool) -> Measured {
    match apart {
        Some(why) => {
            let note = format!(
                "{}{}",
                limitbench_analysis::sessions::kept_apart(std::slice::from_ref(&why)),
                m.note
            );
            Measured { note, ..m }
                .sessions_apart(true)
                .sessions_disagree(disagree)
        }
        None => m,
    }
}

/// What the straddle trials that did not straddle were: "k of n straddle
/// trials did not straddle (why: count; ...)", and per cell "cell k of n".
fn not_straddled_text(all: &[&Trial], invalid: &[(&Trial, Miss)]) -> (String, String) {
    let mut why: BTreeMap<Miss, usize> = BTreeMap::new();
    let mut cells: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for t in all {
        cells.entry(t.row.cell.as_str()).or_default().1 += 1;
    }
    for (t, m) in invalid {
        *why.entry(*m).or_default() += 1;
        cells.entry(t.row.cell.as_str()).or_default().0 += 1;
    }
    let head = format!(
        "{} of {} straddle trials did not straddle the fixed window's edge{}",
        invalid.len(),
        all.len(),
        if why.is_empty() {
            String::new()
        } else {
            format!(
                " ({})",
                why.iter()
                    .map(|(m, k)| format!("{}: {k}", m.text()))
                    .collect::<Vec<_>>()
                    .join("; ")
            )
        }
    );
    let per_cell = cells
        .iter()
        .filter(|(_, (bad, _))| *bad > 0)
        .map(|(c, (bad, n))| format!("{c} {bad} of {n}"))
        .collect::<Vec<_>>()
        .join(", ");
    (head, per_cell)
}

/// A3.1, judged on the straddle trials of the fixed windows that did
/// straddle the window's edge ([`a3_1_split`]); those that did not are
/// counted and named, never judged. With fewer than
/// `claims::MIN_TRIALS` valid trials left after some were set aside, the
/// claim is inconclusive and says so.
pub fn measured_a3_1(trials: &[Trial], manifest: &serde_json::Value) -> Option<Measured> {
    let all = a3_1_trials(trials);
    if all.is_empty() {
        return None;
    }
    let (fw, invalid) = a3_1_split(trials);
    let (not_straddled, per_cell) = not_straddled_text(&all, &invalid);
    let s = ratios(&fw);
    let spans = spans_2l_ms(&fw);
    let by_lead: BTreeMap<String, Summary> = ratios_by_variant(&fw)
        .into_iter()
        .map(|(k, v)| (k, Summary::of(&v)))
        .collect();
    let (iv, method, apart, disagree) =
        mean_interval("straddle, mean max-in-window / L", &fw, manifest);
    let mut m = Measured::new(
        "A3.1",
        vec![s.mean],
        format!(
            "mean {:.2}x per straddle (worst {:.2}x, min {:.2}, n={}); 2L admitted within {} ms (shortest span, {} trials reached 2L); {not_straddled}, not judged",
            s.mean,
            s.max,
            s.min,
            s.n,
            f(Summary::of(&spans).min, 1),
            spans.len()
        ),
        "bursts.csv+history pattern=straddle strategy=fixed-window-*, trials whose bursts straddled the edge (times only)",
    )
    .intervals(vec![iv], method)
    .setting(&[("straddle_lead_ms", phases_text(&fw).as_str())])
    .rests_on(all.iter().map(|t| t.row.cell.as_str()))
    .note(format!(
        "by lead before the boundary (straddled trials): {}{}",
        by_lead
            .iter()
            .map(|(k, v)| format!("{k}: mean {:.2}", v.mean))
            .collect::<Vec<_>>()
            .join(", "),
        if per_cell.is_empty() {
            String::new()
        } else {
            format!("; did not straddle, per cell: {per_cell}")
        }
    ));
    if let Some(text) = set_aside_text(&fw, &invalid) {
        m.note = format!("{text}. {}", m.note);
    }
    let min = limitbench_analysis::claims::MIN_TRIALS;
    if !invalid.is_empty() && fw.len() < min {
        m = m.invalid(format!(
            "{} of {} straddle trials straddled the fixed window's edge, fewer than the {min} A3.1 is judged on: {not_straddled}",
            fw.len(),
            all.len()
        ));
    }
    Some(apart_note(m, apart, disagree))
}

/// A3.1's trials set aside (they did not straddle the edge), computed:
/// how many, each one's cell, why (from its times: the lead before the
/// boundary, the latest send's lateness, the Redis clock's offset that
/// places the edge) and its ratio, and the mean had they been judged
/// beside the judged one. None when none was set aside.
fn set_aside_text(judged: &[&Trial], invalid: &[(&Trial, Miss)]) -> Option<String> {
    if invalid.is_empty() {
        return None;
    }
    let each: Vec<String> = invalid
        .iter()
        .map(|(t, miss)| {
            format!(
                "{} trial {} ({}; lead {} ms, latest send {} ms late, Redis clock offset {} ms): ratio {:.2}",
                t.row.cell,
                t.row.trial,
                miss.text(),
                t.row.phase_ms.map(|p| f(p, 0)).unwrap_or_else(|| "-".into()),
                f(t.row.lateness_max_us / 1000.0, 2),
                f(t.row.redis_clock_offset_us as f64 / 1000.0, 2),
                t.ratio
            )
        })
        .collect();
    let all: Vec<f64> = judged
        .iter()
        .map(|t| t.ratio)
        .chain(invalid.iter().map(|(t, _)| t.ratio))
        .collect();
    Some(format!(
        "set aside, not judged: {} of {} straddle trials did not straddle the fixed window's edge: {}; with them the mean would be {:.3} over {} trials (judged without them: {:.3} over {})",
        invalid.len(),
        all.len(),
        each.join("; "),
        all.iter().sum::<f64>() / all.len() as f64,
        all.len(),
        ratios(judged).mean,
        judged.len()
    ))
}

fn measured_a3_2(trials: &[Trial], manifest: &serde_json::Value) -> Option<Measured> {
    let tb = a3_2_trials(trials);
    if tb.is_empty() {
        return None;
    }
    let s = ratios(&tb);
    let (iv, method, apart, disagree) =
        mean_interval("quiet then burst, mean max-in-window / L", &tb, manifest);
    let m = Measured::new(
        "A3.2",
        vec![s.mean],
        format!(
            "mean {:.2}x per burst after a quiet spell (worst {:.2}x, min {:.2}, n={})",
            s.mean, s.max, s.min, s.n
        ),
        "bursts.csv+history pattern=quiet-then-burst strategy=token-bucket",
    )
    .intervals(vec![iv], method)
    .setting(&[("flood_phase_ms", phases_text(&tb).as_str())])
    .rests_on(tb.iter().map(|t| t.row.cell.as_str()));
    Some(apart_note(m, apart, disagree))
}

/// A3.4 says "never": one trial above the limit refutes it, so it is
/// judged on the largest value over every trial (no sampling interval: the
/// claim is about these trials), the rule-of-three bound on the rate of
/// trials above the limit beside it.
fn measured_a3_4(trials: &[Trial]) -> Option<Measured> {
    let swl = a3_4_trials(trials);
    if swl.is_empty() {
        return None;
    }
    let s = ratios(&swl);
    let above = swl.iter().filter(|t| t.ratio > 1.0).count();
    Some(
        Measured::new(
            "A3.4",
            vec![s.max],
            format!(
                "max {:.2}x over {} trials of {} patterns ({above} above 1.0x)",
                s.max,
                s.n,
                swl.iter()
                    .map(|t| &t.row.pattern)
                    .collect::<BTreeSet<_>>()
                    .len()
            ),
            "bursts.csv+history strategy=sliding-window-log, every pattern",
        )
        .intervals(
            vec![(s.max, s.max)],
            format!(
                "none: the largest over all {} trials (the claim is about every trial: one above the limit refutes it); with {above} above, the 95% upper bound on the rate of trials above is {} (rule of three when none)",
                s.n,
                if above == 0 {
                    format!("3/{}", s.n)
                } else {
                    "not computed".into()
                }
            ),
        )
        .trials(s.n)
        .setting(&[("patterns", "every pattern, phase and rate")])
        .rests_on(swl.iter().map(|t| t.row.cell.as_str())),
    )
}

pub fn analyze(ctx: &AnalysisCtx) -> Result<(Vec<Measured>, Section)> {
    let Some(rows) = ctx.read_csv::<Row>("bursts.csv")? else {
        return Ok((Vec::new(), Section::new("bursts", "Not run.\n")));
    };
    let hist = by_trial(
        ctx.read_csv::<HistoryRow>("bursts-history.csv")?
            .unwrap_or_default(),
    );
    let trials = trials(&rows, &hist);
    let limit = rows.first().map(|r| r.limit).unwrap_or(100);
    let window_ms = rows.first().map(|r| r.window_ms).unwrap_or(1000);
    let mut md = format!(
        "{} trials (strategy x pattern x phase x rep), limit L={limit} per {window_ms} ms; metric = max admitted in any {window_ms} ms window / L, from the history ({} decisions). Clock: {}. seed {}.\n\n",
        rows.len(),
        hist.values().map(|v| v.len()).sum::<usize>(),
        clocks_line(&trials),
        ctx.manifest["seed"]
    );
    let strategies = distinct(rows.iter().map(|r| r.strategy.clone()));
    figures::figure_a3_1(ctx, &rows, &trials, &hist, &mut md)?;
    figures::figure_a3_2_a3_3(ctx, &trials, &mut md)?;
    md += &a3_3::figure(ctx, &trials)?;
    figures::figure_a3_4(ctx, &rows, &trials, &strategies, &mut md)?;
    table(&rows, &trials, &strategies, &mut md);
    let out: Vec<Measured> = [
        measured_a3_1(&trials, &ctx.manifest),
        measured_a3_2(&trials, &ctx.manifest),
        a3_3::measured(&trials, &ctx.manifest, ctx.claim("A3.3")),
        measured_a3_4(&trials),
    ]
    .into_iter()
    .flatten()
    .collect();
    let late: Vec<f64> = rows.iter().map(|r| r.lateness_p99_us).collect();
    md += &format!(
        "Send lateness against the schedule, p99 per trial: {} µs (bursts queue behind the driver pool).\n",
        Summary::of(&late).show(0)
    );
    let finding = format!(
        "fixed windows admitted {}x L in some 1 s window when two bursts straddle the boundary; the token bucket {}x after a quiet spell; the sliding-window counter {}x on average (bursts at a phase drawn uniformly per trial, then traffic at the limit; its worst trial is in A3.3's row); the sliding-window log at most {}x under every pattern.",
        value_text(&out, "A3.1", 0, 2),
        value_text(&out, "A3.2", 0, 2),
        value_text(&out, "A3.3", 0, 2),
        value_text(&out, "A3.4", 0, 2),
    );
    Ok((out, Section::new("bursts", md).finding(finding)))
}
