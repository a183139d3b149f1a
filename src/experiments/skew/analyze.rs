//! Analysis of `skew` (A4.1-A4.3): the caller-clock token bucket and the
//! Redis-clock bucket on the same arrivals, each against an ideal bucket
//! computed here from the recorded send times (`window::ideal_bucket`:
//! starts full, refills continuously, one token per request).
//!
//! Layout: metric functions (rows and histories -> numbers, unit-tested in
//! `tests.rs` beside this file), then the presentation (table, figure,
//! markdown and one `Measured` per claim), then [`analyze`].

use std::collections::BTreeMap;

use super::rows::{HistoryRow, Row};
use crate::analysis::chart::{Axes, BarGroup, bar_chart};
use crate::analysis::stats::Summary;
use crate::analysis::table::{f, md_table};
use crate::analysis::window::{by_trial, ideal_bucket};
use crate::analysis::{AnalysisCtx, Measured, Section};
use crate::error::Result;

const CALLER: &str = "token-bucket-caller-clock";
const REDIS: &str = "token-bucket";

/// The setting of a row: its cell without the strategy.
pub fn setting(r: &Row) -> String {
    r.cell
        .split_once('/')
        .map(|x| x.1.to_string())
        .unwrap_or_default()
}

// ---- Metrics ----

/// What the ideal bucket admits of one trial's sends (errored sends do not
/// count); NaN without any.
pub fn ideal(r: &Row, history: &[HistoryRow]) -> f64 {
    let mut t: Vec<i64> = history
        .iter()
        .filter(|x| !x.error)
        .map(|x| x.sent_us)
        .collect();
    t.sort_unstable();
    if t.is_empty() {
        f64::NAN
    } else {
        ideal_bucket(&t, r.capacity as f64, r.rate_per_s) as f64
    }
}

/// The ideal of every row, its history looked up by (cell, trial).
pub fn ideals(rows: &[Row], hist: &BTreeMap<(String, u64), Vec<HistoryRow>>) -> Vec<f64> {
    rows.iter()
        .map(|r| {
            let h = hist.get(&(r.cell.clone(), r.trial));
            ideal(r, h.map(Vec::as_slice).unwrap_or(&[]))
        })
        .collect()
}

/// The two strategies of one (setting, trial): (admitted, ideal) each.
#[derive(Debug, PartialEq)]
pub struct Pair {
    pub caller: Option<(f64, f64)>,
    pub redis: Option<(f64, f64)>,
    /// The first row of the pair (for its setting's parameters).
    pub row: usize,
}

impl Pair {
    /// |caller - Redis| / Redis admitted, %, when both ran.
    pub fn difference_pct(&self) -> Option<f64> {
        match (self.caller, self.redis) {
            (Some(c), Some(r)) => Some(100.0 * (c.0 - r.0).abs() / r.0),
            _ => None,
        }
    }
}

pub fn pairs(rows: &[Row], ideal: &[f64]) -> BTreeMap<(String, u64), Pair> {
    let mut pairs: BTreeMap<(String, u64), Pair> = BTreeMap::new();
    for (i, r) in rows.iter().enumerate() {
        let p = pairs.entry((setting(r), r.trial)).or_insert(Pair {
            caller: None,
            redis: None,
            row: i,
        });
        let v = Some((r.admitted as f64, ideal[i]));
        if r.strategy == CALLER {
            p.caller = v;
        } else if r.strategy == REDIS {
            p.redis = v;
        }
    }
    pairs
}

/// One setting over its trials: caller % of ideal, Redis % of ideal,
/// |caller - Redis| / Redis %, and a row of the setting.
#[derive(Debug, PartialEq)]
pub struct PerSetting {
    pub caller_pct: Vec<f64>,
    pub redis_pct: Vec<f64>,
    pub difference_pct: Vec<f64>,
    pub row: usize,
}

pub fn per_setting(pairs: &BTreeMap<(String, u64), Pair>) -> BTreeMap<String, PerSetting> {
    let mut by_setting: BTreeMap<String, PerSetting> = BTreeMap::new();
    for ((s, _), p) in pairs {
        let e = by_setting.entry(s.clone()).or_insert(PerSetting {
            caller_pct: vec![],
            redis_pct: vec![],
            difference_pct: vec![],
            row: p.row,
        });
        if let Some((a, i)) = p.caller {
            e.caller_pct.push(100.0 * a / i);
        }
        if let Some((a, i)) = p.redis {
            e.redis_pct.push(100.0 * a / i);
        }
        e.difference_pct.extend(p.difference_pct());
    }
    by_setting
}

/// A4.1: |caller - Redis| / Redis % of every trial pair under overload
/// (load >= 2x the refill rate), with its setting.
pub fn a4_1(rows: &[Row], pairs: &BTreeMap<(String, u64), Pair>) -> Vec<(String, f64)> {
    pairs
        .iter()
        .filter(|(_, p)| rows[p.row].load_x >= 2.0)
        .filter_map(|((s, _), p)| p.difference_pct().map(|d| (s.clone(), d)))
        .collect()
}

/// The worst difference per skew (the setting's first part).
pub fn worst_by_skew(over: &[(String, f64)]) -> BTreeMap<String, f64> {
    let mut by_skew: BTreeMap<String, f64> = BTreeMap::new();
    for (setting, pct) in over {
        let skew = setting.split('/').next().unwrap_or("").to_string();
        let e = by_skew.entry(skew).or_insert(0.0);
        *e = e.max(*pct);
    }
    by_skew
}

/// A4.2's trials: the caller clock at a skew of 1 s, near the limit.
fn near_limit_at_1s(r: &Row) -> bool {
    r.strategy == CALLER && (r.skew_ms - 1000.0).abs() < 1e-9 && r.load_x < 2.0
}

/// A4.2: caller clock % of ideal at a skew of 1 s near the limit, per run
/// length (ms) and per setting, and the longest run length.
#[derive(Debug, PartialEq)]
pub struct NearLimit {
    pub longest_ms: f64,
    pub per_duration: BTreeMap<i64, Vec<f64>>,
    pub per_setting: BTreeMap<String, Vec<f64>>,
}

pub fn a4_2(rows: &[Row], ideal: &[f64]) -> Option<NearLimit> {
    let longest_ms = rows
        .iter()
        .filter(|r| near_limit_at_1s(r))
        .map(|r| r.duration_ms)
        .fold(f64::NAN, f64::max);
    if !longest_ms.is_finite() {
        return None;
    }
    let mut per_duration: BTreeMap<i64, Vec<f64>> = BTreeMap::new();
    let mut per_setting: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for (i, r) in rows.iter().enumerate().filter(|(_, r)| near_limit_at_1s(r)) {
        let pct = 100.0 * r.admitted as f64 / ideal[i];
        per_duration
            .entry(r.duration_ms as i64)
            .or_default()
            .push(pct);
        per_setting.entry(setting(r)).or_default().push(pct);
    }
    Some(NearLimit {
        longest_ms,
        per_duration,
        per_setting,
    })
}

/// A4.3: |Redis clock - ideal| / ideal % of every Redis-clock trial.
pub fn a4_3(rows: &[Row], ideal: &[f64]) -> Vec<f64> {
    rows.iter()
        .enumerate()
        .filter(|(_, r)| r.strategy == REDIS)
        .map(|(i, r)| 100.0 * (r.admitted as f64 - ideal[i]).abs() / ideal[i])
        .collect()
}

// ---- Presentation ----

/// The table per setting, and the figure per (skew, load).
fn table_and_figure(
    ctx: &AnalysisCtx,
    rows: &[Row],
    by_setting: &BTreeMap<String, PerSetting>,
    md: &mut String,
) -> Result<()> {
    *md += &md_table(
        &[
            "skew / servers / clocks / load / arrivals",
            "caller clock % of ideal",
            "Redis clock % of ideal",
            "|caller - Redis| / Redis %",
        ],
        &by_setting
            .iter()
            .map(|(s, e)| {
                vec![
                    s.clone(),
                    Summary::of(&e.caller_pct).show(1),
                    Summary::of(&e.redis_pct).show(2),
                    f(Summary::of(&e.difference_pct).max, 1),
                ]
            })
            .collect::<Vec<_>>(),
    );
    *md += "\n";
    // Mean % of ideal per (skew, load), caller vs Redis clock.
    let mut groups: BTreeMap<(i64, i64), (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    for e in by_setting.values() {
        let r = &rows[e.row];
        let g = groups
            .entry(((r.skew_ms * 1000.0) as i64, (r.load_x * 100.0) as i64))
            .or_default();
        g.0.extend(&e.caller_pct);
        g.1.extend(&e.redis_pct);
    }
    let (path, link) = ctx.figure("a4_skew_admitted_vs_ideal.svg");
    bar_chart(
        &path,
        &Axes {
            title: "A4.1-A4.3 token bucket admitted, % of the ideal bucket (mean, min-max)".into(),
            x_label: "clock skew +/-S ms, load x refill rate".into(),
            y_label: "% of ideal admitted".into(),
            ..Default::default()
        },
        &["caller clock".to_string(), "Redis clock".to_string()],
        &groups
            .iter()
            .map(|((s, l), (c, r))| {
                let (c, r) = (Summary::of(c), Summary::of(r));
                BarGroup {
                    category: format!("S={}ms x{}", *s as f64 / 1000.0, *l as f64 / 100.0),
                    values: vec![c.mean, r.mean],
                    ranges: vec![Some((c.min, c.max)), Some((r.min, r.max))],
                }
            })
            .collect::<Vec<_>>(),
        Some((100.0, "ideal")),
    )?;
    *md += &format!("![A4 skew]({link})\n\n");
    Ok(())
}

fn measured_a4_1(rows: &[Row], pairs: &BTreeMap<(String, u64), Pair>) -> Option<Measured> {
    let over = a4_1(rows, pairs);
    if over.is_empty() {
        return None;
    }
    let worst = over.iter().cloned().fold(
        (String::new(), f64::MIN),
        |a, b| if b.1 > a.1 { b } else { a },
    );
    Some(
        Measured::new(
            "A4.1",
            vec![worst.1],
            format!("max {:.1}% ({}), over {} trial pairs", worst.1, worst.0, over.len()),
            "skew.csv load_x>=2: |admitted(caller clock) - admitted(Redis clock)| / Redis, per trial pair",
        )
        .note(format!(
            "worst difference per skew (S in ms): {}; under overload the bucket is empty most of \
             the time, so the clock error only matters at the largest skew, where refills computed \
             from clocks up to 2S apart add or remove whole seconds of tokens",
            worst_by_skew(&over)
                .iter()
                .map(|(k, v)| format!("{k}: {v:.1}%"))
                .collect::<Vec<_>>()
                .join(", ")
        )),
    )
}

/// A4.2: the bucket starts full, so the first `capacity` requests pass
/// whatever the clocks; the value is taken from the longest runs (the least
/// weight on that start), and every run length is listed.
fn measured_a4_2(rows: &[Row], ideal: &[f64]) -> Option<Measured> {
    let n = a4_2(rows, ideal)?;
    let s = Summary::of(&n.per_duration[&(n.longest_ms as i64)]);
    Some(
        Measured::new(
            "A4.2",
            vec![s.mean],
            format!(
                "{} % of ideal in {} s runs; by run length: {}",
                s.show(1),
                n.longest_ms / 1000.0,
                n.per_duration
                    .iter()
                    .map(|(t, v)| format!("{} s: {:.1}%", *t as f64 / 1000.0, Summary::of(v).mean))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            "skew.csv strategy=token-bucket-caller-clock skew_ms=1000 load_x<2, longest duration_ms; ideal from skew-history.csv",
        )
        .note(format!(
            "run lengths are listed because the bucket starts full (its first capacity requests pass whatever the clocks); per setting: {}",
            n.per_setting
                .iter()
                .map(|(k, v)| format!("{k}: {:.1}%", Summary::of(v).mean))
                .collect::<Vec<_>>()
                .join(", ")
        )),
    )
}

fn measured_a4_3(rows: &[Row], ideal: &[f64]) -> Option<Measured> {
    let redis = a4_3(rows, ideal);
    if redis.is_empty() {
        return None;
    }
    let s = Summary::of(&redis);
    Some(Measured::new(
        "A4.3",
        vec![s.max],
        format!(
            "max {:.2}% off ideal (mean {:.2}%, n={})",
            s.max, s.mean, s.n
        ),
        "skew.csv strategy=token-bucket vs the offline ideal bucket on its send times",
    ))
}

pub fn analyze(ctx: &AnalysisCtx) -> Result<(Vec<Measured>, Section)> {
    let Some(rows) = ctx.read_csv::<Row>("skew.csv")? else {
        return Ok((Vec::new(), Section::new("skew", "Not run.\n")));
    };
    let hist = by_trial(
        ctx.read_csv::<HistoryRow>("skew-history.csv")?
            .unwrap_or_default(),
    );
    let ideal = ideals(&rows, &hist);
    let mut md = format!(
        "{} trials; bucket capacity {}, refill {}/s; open-loop arrivals for T ms (in the setting); ideal = offline bucket on the send times. seed {}.\n\n",
        rows.len(),
        rows.first().map(|r| r.capacity).unwrap_or(0),
        rows.first().map(|r| r.rate_per_s).unwrap_or(0.0),
        ctx.manifest["seed"]
    );
    let pairs = pairs(&rows, &ideal);
    table_and_figure(ctx, &rows, &per_setting(&pairs), &mut md)?;
    let out: Vec<Measured> = [
        measured_a4_1(&rows, &pairs),
        measured_a4_2(&rows, &ideal),
        measured_a4_3(&rows, &ideal),
    ]
    .into_iter()
    .flatten()
    .collect();
    Ok((out, Section::new("skew", md)))
}
