//! Analysis of `skew` (A4.1-A4.3): the caller-clock token bucket and the
//! Redis-clock bucket on the same arrivals, each against an ideal bucket
//! computed here from the recorded send times (`window::ideal_bucket`:
//! starts full, refills continuously, one token per request).

use std::collections::BTreeMap;

use crate::analysis::chart::{Axes, BarGroup, bar_chart};
use crate::analysis::stats::Summary;
use crate::analysis::table::{f, md_table};
use crate::analysis::window::{by_trial, ideal_bucket};
use crate::analysis::{AnalysisCtx, Measured, Section};
use crate::error::Result;
use super::rows::{HistoryRow, Row};

const CALLER: &str = "token-bucket-caller-clock";
const REDIS: &str = "token-bucket";

fn setting(r: &Row) -> String {
    r.cell
        .split_once('/')
        .map(|x| x.1.to_string())
        .unwrap_or_default()
}

pub fn analyze(ctx: &AnalysisCtx) -> Result<(Vec<Measured>, Section)> {
    let mut out = Vec::new();
    let Some(rows) = ctx.read_csv::<Row>("skew.csv")? else {
        return Ok((out, Section::new("skew", "Not run.\n")));
    };
    let hist = by_trial(
        ctx.read_csv::<HistoryRow>("skew-history.csv")?
            .unwrap_or_default(),
    );
    // ideal admitted per row, from its own send times.
    let ideal: Vec<f64> = rows
        .iter()
        .map(|r| {
            let mut t: Vec<i64> = hist
                .get(&(r.cell.clone(), r.trial))
                .map(|h| h.iter().filter(|x| !x.error).map(|x| x.sent_us).collect())
                .unwrap_or_default();
            t.sort_unstable();
            if t.is_empty() {
                f64::NAN
            } else {
                ideal_bucket(&t, r.capacity as f64, r.rate_per_s) as f64
            }
        })
        .collect();
    let mut md = format!(
        "{} trials; bucket capacity {}, refill {}/s; open-loop arrivals for T ms (in the setting); ideal = offline bucket on the send times. seed {}.\n\n",
        rows.len(),
        rows.first().map(|r| r.capacity).unwrap_or(0),
        rows.first().map(|r| r.rate_per_s).unwrap_or(0.0),
        ctx.manifest["seed"]
    );
    // Pair the two strategies per (setting, trial).
    struct Pair {
        caller: Option<(f64, f64)>,
        redis: Option<(f64, f64)>,
        row: usize,
    }
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
    // Table per setting: % of ideal for each, and caller vs redis.
    // setting -> (caller % of ideal, Redis % of ideal, |caller - Redis| %, a row index)
    type PerSetting = (Vec<f64>, Vec<f64>, Vec<f64>, usize);
    let mut by_setting: BTreeMap<String, PerSetting> = BTreeMap::new();
    for ((s, _), p) in &pairs {
        let e = by_setting
            .entry(s.clone())
            .or_insert((vec![], vec![], vec![], p.row));
        if let Some((a, i)) = p.caller {
            e.0.push(100.0 * a / i);
        }
        if let Some((a, i)) = p.redis {
            e.1.push(100.0 * a / i);
        }
        if let (Some(c), Some(r)) = (p.caller, p.redis) {
            e.2.push(100.0 * (c.0 - r.0).abs() / r.0);
        }
    }
    md += &md_table(
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
                    Summary::of(&e.0).show(1),
                    Summary::of(&e.1).show(2),
                    f(Summary::of(&e.2).max, 1),
                ]
            })
            .collect::<Vec<_>>(),
    );
    md += "\n";
    // Figure: mean % of ideal per (skew, load), caller vs Redis clock.
    let mut groups: BTreeMap<(i64, i64), (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    for e in by_setting.values() {
        let r = &rows[e.3];
        let g = groups
            .entry(((r.skew_ms * 1000.0) as i64, (r.load_x * 100.0) as i64))
            .or_default();
        g.0.extend(&e.0);
        g.1.extend(&e.1);
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
    md += &format!("![A4 skew]({link})\n\n");

    // A4.1: overload, caller vs Redis, max over trials.
    let over: Vec<(String, f64)> = pairs
        .iter()
        .filter(|(_, p)| rows[p.row].load_x >= 2.0)
        .filter_map(|((s, _), p)| match (p.caller, p.redis) {
            (Some(c), Some(r)) => Some((s.clone(), 100.0 * (c.0 - r.0).abs() / r.0)),
            _ => None,
        })
        .collect();
    if !over.is_empty() {
        let worst =
            over.iter().cloned().fold(
                (String::new(), f64::MIN),
                |a, b| if b.1 > a.1 { b } else { a },
            );
        // The worst difference per skew, to show where the bound breaks.
        let mut by_skew: BTreeMap<String, f64> = BTreeMap::new();
        for (setting, pct) in &over {
            let skew = setting.split('/').next().unwrap_or("").to_string();
            let e = by_skew.entry(skew).or_insert(0.0);
            *e = e.max(*pct);
        }
        out.push(
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
                by_skew.iter().map(|(k, v)| format!("{k}: {v:.1}%")).collect::<Vec<_>>().join(", ")
            )),
        );
    }
    // A4.2: skew 1 s near the limit, caller clock % of ideal. The bucket
    // starts full, so the first `capacity` requests pass whatever the clocks;
    // the value is taken from the longest runs (the least weight on that
    // start), and every run length is listed.
    let near =
        |r: &Row| r.strategy == CALLER && (r.skew_ms - 1000.0).abs() < 1e-9 && r.load_x < 2.0;
    let longest = rows
        .iter()
        .filter(|r| near(r))
        .map(|r| r.duration_ms)
        .fold(f64::NAN, f64::max);
    if longest.is_finite() {
        let mut per_t: BTreeMap<i64, Vec<f64>> = BTreeMap::new();
        let mut per: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        for (i, r) in rows.iter().enumerate().filter(|(_, r)| near(r)) {
            let pct = 100.0 * r.admitted as f64 / ideal[i];
            per_t.entry(r.duration_ms as i64).or_default().push(pct);
            per.entry(setting(r)).or_default().push(pct);
        }
        let s = Summary::of(&per_t[&(longest as i64)]);
        out.push(
            Measured::new(
                "A4.2",
                vec![s.mean],
                format!(
                    "{} % of ideal in {} s runs; by run length: {}",
                    s.show(1),
                    longest / 1000.0,
                    per_t
                        .iter()
                        .map(|(t, v)| format!("{} s: {:.1}%", *t as f64 / 1000.0, Summary::of(v).mean))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                "skew.csv strategy=token-bucket-caller-clock skew_ms=1000 load_x<2, longest duration_ms; ideal from skew-history.csv",
            )
            .note(format!(
                "run lengths are listed because the bucket starts full (its first capacity requests pass whatever the clocks); per setting: {}",
                per.iter().map(|(k, v)| format!("{k}: {:.1}%", Summary::of(v).mean)).collect::<Vec<_>>().join(", ")
            )),
        );
    }
    // A4.3: Redis clock vs ideal everywhere.
    let redis: Vec<f64> = rows
        .iter()
        .enumerate()
        .filter(|(_, r)| r.strategy == REDIS)
        .map(|(i, r)| 100.0 * (r.admitted as f64 - ideal[i]).abs() / ideal[i])
        .collect();
    if !redis.is_empty() {
        let s = Summary::of(&redis);
        out.push(Measured::new(
            "A4.3",
            vec![s.max],
            format!(
                "max {:.2}% off ideal (mean {:.2}%, n={})",
                s.max, s.mean, s.n
            ),
            "skew.csv strategy=token-bucket vs the offline ideal bucket on its send times",
        ));
    }
    Ok((out, Section::new("skew", md)))
}
