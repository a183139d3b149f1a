//! Analysis of `skew` (A4.1-A4.3): the caller-clock token bucket and the
//! Redis-clock bucket on the same arrivals. A4.2 compares the caller clock
//! with an ideal bucket computed here from the recorded send times
//! (`window::ideal_bucket`: starts full, refills continuously, one token per
//! request); A4.3 compares the Redis-clock bucket with the script's own
//! bucket replayed on the Redis times it read (`replay.rs`).
//!
//! Layout: metric functions (rows and histories -> numbers, unit-tested in
//! `tests.rs` beside this file), then the presentation (table, figure,
//! markdown and one `Measured` per claim), then [`analyze`].

pub mod scorecard;

mod replay;
mod sweep;

use std::collections::BTreeMap;

pub use replay::{TrialReplay, a4_3, measured_a4_3, replay, replays, script_bucket};
pub use sweep::{a4_1_sweep, a4_2_sweep, capacity_s, measured_a4_1, measured_a4_2};

use super::rows::{HistoryRow, Row};
use limitbench_analysis::claims::value_text;
use limitbench_analysis::figure::{Anchor, Axis, Figure, Panel, Pt, Reference, Series, num};
use limitbench_analysis::figure::{ClaimReference, SummaryPoint, WriteFigure};
use limitbench_analysis::stats::Summary;
use limitbench_analysis::table::{f, md_table};
use limitbench_analysis::window::{by_trial, ideal_bucket};
use limitbench_analysis::{AnalysisCtx, Measured, Section};
use limitbench_base::error::Result;

pub(crate) const CALLER: &str = "token-bucket-caller-clock";
pub(crate) const REDIS: &str = "token-bucket";

/// Is the row's bucket at the default capacity, one second of refill (the
/// study's A3 bucket: 100 at 100/s)? The overview tables and figures stay
/// at it; the capacity sweep has its own figure.
fn default_capacity(r: &Row) -> bool {
    (sweep::capacity_s(r) - 1.0).abs() < 1e-9
}

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

// ---- Presentation ----

/// A setting in words.
pub fn words(r: &Row) -> String {
    format!(
        "skew ±{} ms, {} servers ({} clocks), load {}x, {} arrivals{}, {} s",
        num(r.skew_ms),
        r.servers,
        r.clocks,
        num(r.load_x),
        r.arrivals,
        if r.assign == "round-robin" {
            ", round-robin"
        } else {
            ""
        },
        num(r.duration_ms / 1000.0)
    )
}

fn skew_label(ms: f64) -> String {
    if ms == 0.0 {
        "none".into()
    } else {
        format!("±{} ms", num(ms))
    }
}

/// The full table (appendix), the pivot (section) and the three figures.
// Longer than 120 lines: one pass over the per-setting summary feeds the appendix table, the pivot and two figures in the order the report shows them; each block is marked and reads alone.
fn tables_and_figures(
    ctx: &AnalysisCtx,
    rows: &[Row],
    ideal: &[f64],
    replays: &[Option<TrialReplay>],
    pairs: &BTreeMap<(String, u64), Pair>,
    md: &mut String,
    appendix: &mut String,
) -> Result<()> {
    let by_setting = per_setting(pairs);
    *appendix += "Per setting, mean (min, max, n) over trials:\n\n";
    *appendix += &md_table(
        &[
            "setting",
            "caller clock % of ideal",
            "Redis clock % of ideal",
            "max |caller - Redis| / Redis %",
        ],
        &by_setting
            .values()
            .map(|e| {
                vec![
                    words(&rows[e.row]),
                    Summary::of(&e.caller_pct).show(1),
                    Summary::of(&e.redis_pct).show(2),
                    f(Summary::of(&e.difference_pct).max, 1),
                ]
            })
            .collect::<Vec<_>>(),
    );
    *appendix += "\n";
    let skews: Vec<f64> = {
        let mut v: Vec<f64> = rows.iter().map(|r| r.skew_ms).collect();
        v.sort_by(f64::total_cmp);
        v.dedup();
        v
    };
    let loads: Vec<f64> = {
        let mut v: Vec<f64> = rows.iter().map(|r| r.load_x).collect();
        v.sort_by(f64::total_cmp);
        v.dedup();
        v
    };
    let cats: Vec<String> = skews.iter().map(|s| skew_label(*s)).collect();
    let sk = |x: f64| skews.iter().position(|s| *s == x).unwrap_or(0) as f64;
    // Pivot: caller clock % of ideal per skew and load.
    let mut header = vec!["clock skew".to_string()];
    header.extend(
        loads
            .iter()
            .map(|l| format!("load {}x: caller clock % of ideal", num(*l))),
    );
    let pivot: Vec<Vec<String>> = skews
        .iter()
        .map(|s| {
            let mut row = vec![skew_label(*s)];
            row.extend(loads.iter().map(|l| {
                let v: Vec<f64> = rows
                    .iter()
                    .enumerate()
                    .filter(|(_, r)| {
                        r.strategy == CALLER
                            && r.skew_ms == *s
                            && r.load_x == *l
                            && default_capacity(r)
                    })
                    .map(|(i, r)| 100.0 * r.admitted as f64 / ideal[i])
                    .collect();
                f(Summary::of(&v).mean, 1)
            }));
            row
        })
        .collect();
    *md += "Caller-clock bucket at the default capacity (1 s of refill), % of the ideal bucket, mean over every server count, clock draw, arrival process and run length (the capacity sweep is in A4.2's figure):\n\n";
    *md += &md_table(
        &header.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
        &pivot,
    );
    *md += "\n";
    // A4.1: overload, per skew, a series per load and run length (and per
    // server count and offsets where more than one ran), so no series pools
    // settings the verdict tells apart; log y, since the pass band (at most
    // 1.35%) would be a sliver of a linear axis that reaches the worst pair.
    let over = |r: &Row| r.load_x >= 2.0 && default_capacity(r);
    let mut groups: Vec<(String, String, u64, String)> = rows
        .iter()
        .filter(|r| over(r))
        .map(|r| {
            (
                num(r.load_x),
                num(r.duration_ms / 1000.0),
                r.servers,
                r.clocks.clone(),
            )
        })
        .collect();
    groups.sort_by(|a, b| {
        let n = |v: &str| v.parse::<f64>().unwrap_or(f64::NAN);
        n(&a.0)
            .total_cmp(&n(&b.0))
            .then(n(&a.1).total_cmp(&n(&b.1)))
            .then(a.2.cmp(&b.2))
            .then(a.3.cmp(&b.3))
    });
    groups.dedup();
    let one_fleet = groups
        .iter()
        .all(|g| (g.2, &g.3) == (groups[0].2, &groups[0].3));
    let mut by_group: Vec<(String, BTreeMap<i64, Vec<f64>>)> = Vec::new();
    let mut anchors: Vec<Anchor> = Vec::new();
    for (l, run, w, c) in &groups {
        let name = if one_fleet {
            format!("load {l}x, {run} s runs")
        } else {
            format!("load {l}x, {run} s runs, {w} servers, {c} clocks")
        };
        let mut by: BTreeMap<i64, Vec<f64>> = BTreeMap::new();
        for pr in pairs.values().filter(|p| {
            let r = &rows[p.row];
            over(r)
                && num(r.load_x) == *l
                && num(r.duration_ms / 1000.0) == *run
                && r.servers == *w
                && r.clocks == *c
        }) {
            if let Some(d) = pr.difference_pct() {
                by.entry(sk(rows[pr.row].skew_ms) as i64)
                    .or_default()
                    .push(d);
            }
        }
        if let Some(k) = skews.iter().position(|s| (*s - 1000.0).abs() < 1e-9) {
            anchors.push(
                Anchor::new("A4.1", 0, k as f64)
                    .at("load_x", l)
                    .at("run_s", run)
                    .at("capacity_s", "1")
                    .at("servers", &w.to_string())
                    .at("offset_draw", c)
                    .on(&name),
            );
        }
        by_group.push((name, by));
    }
    let positive: Vec<f64> = by_group
        .iter()
        .flat_map(|(_, by)| by.values().flatten().copied())
        .filter(|v| *v > 0.0)
        .collect();
    let floor = positive
        .iter()
        .copied()
        .reduce(f64::min)
        .map(|v| 10f64.powf(v.log10().floor()))
        .unwrap_or(0.01);
    let top = positive.iter().copied().fold(1.35f64, f64::max) * 1.6;
    let mut p1 = Panel::new(
        "",
        Axis::new("clock skew between the callers"),
        Axis::log("|caller - Redis clock| / Redis clock admitted (%)").range(floor, top),
    )
    .categories(cats.clone());
    // Ordered by load, then run length: one hue, light to dark.
    let k = by_group.len();
    for (i, (name, by)) in by_group.into_iter().enumerate() {
        p1 = p1.series(
            Series::points(
                name,
                by.iter()
                    .map(|(k, v)| {
                        let s = Summary::of(v);
                        Pt::spread(*k as f64, s.mean.max(floor), s.min.max(floor), s.max, s.n)
                    })
                    .collect(),
            )
            .ramp(i, k),
        );
    }
    if let Some(c) = ctx.claim("A4.1") {
        p1 = p1.reference(Reference::published(c, 0));
    }
    *md += &Figure::new(
        "a4_1-caller-clock-under-overload",
        &["A4.1"],
        "token bucket on the caller's clock under overload (load >= 2x the refill), against the same bucket on Redis's clock",
        "|admitted(caller clock) - admitted(Redis clock)| / admitted(Redis clock) per trial pair (same arrivals), mean with min-max whiskers over the pairs of a load and run length at the default capacity (1 s of refill; {n} pairs per point); log scale, a value or whisker of 0 ends at the axis floor; ringed: the value A4.1 is judged on (its setting), with its 95% interval; its sweep over run length and load is in its sweep figure.",
    )
    .panel(p1)
    .write_anchored(ctx, anchors)?;
    // A4.3: the Redis clock against the script's bucket replayed.
    let mut p3 = Panel::new(
        "",
        Axis::new("clock skew between the callers"),
        Axis::new("|Redis-clock bucket - replayed script bucket| (requests)"),
    )
    .categories(cats);
    let off = a4_3(rows, replays);
    // Loads are ordered: one hue, light to dark.
    for (step, l) in loads.iter().enumerate() {
        let mut by: BTreeMap<i64, Vec<f64>> = BTreeMap::new();
        for (i, d) in off.iter().filter(|(i, _)| rows[*i].load_x == *l) {
            by.entry(sk(rows[*i].skew_ms) as i64).or_default().push(*d);
        }
        p3 = p3.series(
            Series::points(
                format!("load {}x", num(*l)),
                by.iter()
                    .map(|(k, v)| Pt::summary(*k as f64, &Summary::of(v)))
                    .collect(),
            )
            .ramp(step, loads.len()),
        );
    }
    if let Some(c) = ctx.claim("A4.3") {
        // Between the categories, not through the markers that sit on it.
        let r = Reference::published(c, 0);
        // The pass region across the panel; the line only between categories.
        let mut band = r.clone();
        band.value = None;
        band.lines = vec![];
        p3 = p3.reference(band);
        let mut line = r;
        line.band = None;
        let k = p3.categories.len() as f64;
        for i in 0..=p3.categories.len() {
            let x = i as f64 - 0.5;
            p3 = p3.reference(
                line.clone()
                    .over((x - 0.13).max(-0.5), (x + 0.13).min(k - 0.5)),
            );
        }
    }
    // Loads that ran at some skews only, said in the caption.
    let partial: Vec<String> = loads
        .iter()
        .filter_map(|l| {
            let at: Vec<String> = p3
                .series
                .iter()
                .find(|s| s.name == format!("load {}x", num(*l)))
                .map(|s| {
                    s.points
                        .iter()
                        .filter_map(|q| p3.categories.get(q.x as usize).cloned())
                        .collect()
                })
                .unwrap_or_default();
            (at.len() < p3.categories.len())
                .then(|| format!("load {}x only at {}", num(*l), at.join(", ")))
        })
        .collect();
    *md += &Figure::new(
        "a4_3-redis-clock-exact",
        &["A4.3"],
        "the same bucket on Redis's TIME against the script's own bucket replayed",
        format!(
            "|admitted - admitted by lua/token-bucket.lua's bucket replayed on the Redis times it read (execution order, ms truncation, doubles)| per trial of the Redis-clock bucket, mean with min-max whiskers over every server count, clock draw, arrival process and run length of a skew and load ({{n}} per point); A4.3 counts the trials off it, judged \"exact\" as stated (tolerance 0: one trial off is outside): {} of {} trials drawn here are off (a count over the trials, not one drawn point, so no ring){}.",
            off.iter().filter(|(_, d)| *d > 0.0).count(),
            off.len(),
            if partial.is_empty() {
                String::new()
            } else {
                format!("; {} (the sweep's other loads)", partial.join("; "))
            }
        ),
    )
    .panel(p3)
    .write(ctx)?;
    Ok(())
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
    let replayed = replays(&rows, &hist);
    let mut md = format!(
        "{} trials; bucket capacity {}, refill {}/s; open-loop arrivals for T ms (in the setting); ideal = offline bucket on the send times (A4.2); A4.3 compares the Redis-clock bucket with the script's own bucket replayed on Redis's readings. seed {}.\n\n",
        rows.len(),
        rows.first().map(|r| r.capacity).unwrap_or(0),
        rows.first().map(|r| r.rate_per_s).unwrap_or(0.0),
        ctx.manifest["seed"]
    );
    let pairs = pairs(&rows, &ideal);
    let mut appendix = String::new();
    tables_and_figures(
        ctx,
        &rows,
        &ideal,
        &replayed,
        &pairs,
        &mut md,
        &mut appendix,
    )?;
    md += &sweep::figure_a4_1(ctx, &rows, &pairs)?;
    md += &sweep::figure_a4_2(ctx, &rows, &ideal)?;
    let out: Vec<Measured> = [
        sweep::measured_a4_1(&rows, &pairs),
        sweep::measured_a4_2(&rows, &ideal),
        replay::measured_a4_3(&rows, &replayed, &ideal),
    ]
    .into_iter()
    .flatten()
    .collect();
    let finding = format!(
        "at ±1 s skew and our default setting, the caller-clock bucket was within {}% of the Redis-clock bucket under overload and admitted {}% of what it should near the limit (the sweeps show how both move with the capacity, server count, offsets, load and run length); on Redis's clock {} trials were off the script's own bucket replayed on Redis's readings.",
        value_text(&out, "A4.1", 0, 1),
        value_text(&out, "A4.2", 0, 1),
        value_text(&out, "A4.3", 0, 0),
    );
    Ok((
        out,
        Section::new("skew", md).finding(finding).appendix(appendix),
    ))
}
