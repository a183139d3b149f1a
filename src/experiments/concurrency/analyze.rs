//! Analysis of `concurrency` (A0, A1.1, A1.2, A3.0): check-then-act's
//! overshoot against the lockstep formula c*ceil(L/c) - L per worker count and
//! round trip, its distribution at 64 workers without added delay, and the
//! exactness of every atomic strategy. A0 counts the trials of study A's four
//! CSVs and reads their times from the manifest.

use std::collections::BTreeMap;

use crate::analysis::chart::{Axes, BarGroup, Series, Style, bar_chart, xy_chart};
use crate::analysis::stats::Summary;
use crate::analysis::table::{f, md_table};
use crate::analysis::{AnalysisCtx, Measured, Section};
use crate::error::Result;
use super::rows::Row;

const CTA: &str = "check-then-act";

/// c*ceil(L/c) - L: what lockstep waves of c workers over-admit.
pub fn lockstep_overshoot(workers: u64, limit: u64) -> u64 {
    workers * limit.div_ceil(workers) - limit
}

fn count_rows(ctx: &AnalysisCtx, name: &str) -> usize {
    csv::Reader::from_path(ctx.csv_path(name))
        .map(|mut r| r.records().count())
        .unwrap_or(0)
}

pub fn analyze(ctx: &AnalysisCtx) -> Result<(Vec<Measured>, Section)> {
    let mut md = String::new();
    let mut out = Vec::new();
    // A0: trials over study A's four experiments.
    let exps = ["concurrency", "retries", "bursts", "skew"];
    let counts: Vec<(String, usize, f64)> = exps
        .iter()
        .map(|e| {
            (
                e.to_string(),
                count_rows(ctx, &format!("{e}.csv")),
                ctx.manifest["experiments"][e]["seconds"]
                    .as_f64()
                    .unwrap_or(f64::NAN),
            )
        })
        .collect();
    let total: usize = counts.iter().map(|c| c.1).sum();
    let secs: f64 = counts.iter().map(|c| c.2).filter(|s| s.is_finite()).sum();
    if total > 0 {
        md += "Study A trials and times (rows of each CSV; seconds from manifest.json):\n\n";
        md += &md_table(
            &["experiment", "trials", "seconds"],
            &counts
                .iter()
                .map(|c| vec![c.0.clone(), c.1.to_string(), f(c.2, 1)])
                .collect::<Vec<_>>(),
        );
        md += "\n";
        out.push(
            Measured::new(
                "A0",
                vec![total as f64],
                format!("{total} trials in {:.1} min", secs / 60.0),
                "rows of concurrency/retries/bursts/skew.csv; manifest.json experiments.*.seconds",
            )
            .note(format!(
                "size {}; time is this machine's, not comparable with the authors'",
                ctx.manifest["size"].as_str().unwrap_or("?")
            )),
        );
    }
    let Some(rows) = ctx.read_csv::<Row>("concurrency.csv")? else {
        return Ok((out, Section::new("concurrency", md + "Not run.\n")));
    };
    let limit = rows.first().map(|r| r.limit).unwrap_or(100);
    md += &format!(
        "{} trials, {} cells, limit L={limit}, fresh key per trial; workers offer until L+2c are offered. seed {}.\n\n",
        rows.len(),
        rows.iter()
            .map(|r| &r.cell)
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
        ctx.manifest["seed"]
    );
    let errors: u64 = rows.iter().map(|r| r.errors).sum();
    if errors > 0 {
        md += &format!("**{errors} decisions failed with errors** (counted as not admitted).\n\n");
    }

    // A1.1: distribution at 64 workers, no added delay.
    let c64: Vec<f64> = rows
        .iter()
        .filter(|r| r.strategy == CTA && r.workers == 64 && r.target_rtt_ms == 0.0)
        .map(|r| r.admitted as f64)
        .collect();
    let s64 = Summary::of(&c64);
    if s64.n > 0 {
        out.push(
            Measured::new(
                "A1.1",
                vec![s64.mean],
                format!(
                    "mean {:.1}, worst {:.0} (min {:.0}, n={})",
                    s64.mean, s64.max, s64.min, s64.n
                ),
                "concurrency.csv strategy=check-then-act workers=64 target_rtt_ms=0",
            )
            .note(format!(
                "mean over-admission {:.1}% (scheduling-dependent)",
                (s64.mean / limit as f64 - 1.0) * 100.0
            )),
        );
        let mut hist: BTreeMap<i64, usize> = BTreeMap::new();
        for v in &c64 {
            *hist.entry(*v as i64).or_default() += 1;
        }
        let (path, link) = ctx.figure("a1_1_check_then_act_64_workers.svg");
        bar_chart(
            &path,
            &Axes {
                title: "A1.1 check-then-act, 64 workers, no added delay: admitted per trial".into(),
                x_label: "admitted in the trial (limit 100)".into(),
                y_label: "trials".into(),
                ..Default::default()
            },
            &["trials".to_string()],
            &hist
                .iter()
                .map(|(k, n)| BarGroup {
                    category: k.to_string(),
                    values: vec![*n as f64],
                    ranges: vec![None],
                })
                .collect::<Vec<_>>(),
            None,
        )?;
        md += &format!(
            "**A1.1** check-then-act, 64 workers, no added delay: admitted {} ![A1.1]({link})\n\n",
            s64.show(1)
        );
    }

    // A1.2: overshoot vs formula per workers and round trip.
    let mut by: BTreeMap<(i64, u64), Vec<f64>> = BTreeMap::new();
    let mut rtt_measured: BTreeMap<i64, Vec<f64>> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.strategy == CTA) {
        let key = ((r.target_rtt_ms * 1000.0).round() as i64, r.workers);
        by.entry(key).or_default().push(r.over_admitted as f64);
        rtt_measured.entry(key.0).or_default().push(r.rtt_median_us);
    }
    let rtts: Vec<i64> = rtt_measured.keys().copied().collect();
    let mut table = Vec::new();
    let mut series = Vec::new();
    for &rtt in &rtts {
        let mut pts = Vec::new();
        let mut ranges = Vec::new();
        for ((r2, c), v) in &by {
            if *r2 != rtt {
                continue;
            }
            let s = Summary::of(v);
            let formula = lockstep_overshoot(*c, limit) as f64;
            pts.push((*c as f64, s.mean));
            ranges.push((*c as f64, s.min, s.max));
            table.push(vec![
                f(rtt as f64 / 1000.0, 1),
                f(Summary::of(&rtt_measured[&rtt]).median / 1000.0, 2),
                c.to_string(),
                f(s.mean, 2),
                f(s.min, 0),
                f(s.max, 0),
                s.n.to_string(),
                f(formula, 0),
                f(s.mean - formula, 2),
            ]);
        }
        series.push(
            Series::new(
                format!("measured, {} ms round trip", rtt as f64 / 1000.0),
                pts,
                Style::LinePoints,
            )
            .with_ranges(ranges),
        );
    }
    if !by.is_empty() {
        let ws: Vec<u64> = by
            .keys()
            .map(|k| k.1)
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        series.push(Series::new(
            "c*ceil(L/c) - L",
            ws.iter()
                .map(|c| (*c as f64, lockstep_overshoot(*c, limit) as f64))
                .collect(),
            Style::Dashed,
        ));
        let (path, link) = ctx.figure("a1_2_overshoot_vs_workers.svg");
        xy_chart(
            &path,
            &Axes {
                title: "A1.2 check-then-act overshoot vs workers (mean, min-max over trials)"
                    .into(),
                x_label: "concurrent workers c".into(),
                y_label: "admitted - L (requests)".into(),
                x_log: true,
                ..Default::default()
            },
            &series,
        )?;
        md += &format!(
            "**A1.2** check-then-act overshoot per worker count and round trip, against c*ceil(L/c)-L:\n\n![A1.2]({link})\n\n"
        );
        md += &md_table(
            &[
                "target rtt ms",
                "measured rtt ms (median)",
                "workers",
                "mean over",
                "min",
                "max",
                "n",
                "formula",
                "mean - formula",
            ],
            &table,
        );
        md += "\n";
        let longest = *rtts.last().unwrap();
        let devs: Vec<(u64, f64)> = [8u64, 16, 32, 64]
            .iter()
            .filter_map(|c| {
                by.get(&(longest, *c)).map(|v| {
                    (
                        *c,
                        (Summary::of(v).mean - lockstep_overshoot(*c, limit) as f64).abs(),
                    )
                })
            })
            .collect();
        if longest > 0 && !devs.is_empty() {
            let worst = devs.iter().map(|d| d.1).fold(0.0, f64::max);
            out.push(
                Measured::new(
                    "A1.2",
                    vec![worst],
                    format!(
                        "max |mean - formula| = {worst:.2} at {} ms ({})",
                        longest as f64 / 1000.0,
                        devs.iter().map(|d| format!("c={}: {:.2}", d.0, d.1)).collect::<Vec<_>>().join(", ")
                    ),
                    format!("concurrency.csv strategy=check-then-act target_rtt_ms={} workers in 8,16,32,64", longest as f64 / 1000.0),
                )
                .condition("all four worker counts ran at the longest round trip", devs.len() == 4),
            );
        }
    }

    // A3.0: atomic strategies exact.
    let mut per: BTreeMap<String, (usize, usize, f64, f64)> = BTreeMap::new();
    for r in &rows {
        let e = per
            .entry(r.strategy.clone())
            .or_insert((0, 0, f64::MAX, f64::MIN));
        e.0 += 1;
        e.1 += usize::from(r.admitted != r.limit || r.errors > 0);
        e.2 = e.2.min(r.admitted as f64);
        e.3 = e.3.max(r.admitted as f64);
    }
    let atomic: Vec<&Row> = rows.iter().filter(|r| r.atomic_design).collect();
    let not_exact = atomic
        .iter()
        .filter(|r| r.admitted != r.limit || r.errors > 0)
        .count();
    md += "Admitted per strategy (all worker counts and round trips; `atomic` = design promises exactness):\n\n";
    md += &md_table(
        &[
            "strategy",
            "atomic",
            "trials",
            "trials not exactly L",
            "min admitted",
            "max admitted",
        ],
        &per.iter()
            .map(|(s, e)| {
                vec![
                    s.clone(),
                    rows.iter()
                        .any(|r| &r.strategy == s && r.atomic_design)
                        .to_string(),
                    e.0.to_string(),
                    e.1.to_string(),
                    f(e.2, 0),
                    f(e.3, 0),
                ]
            })
            .collect::<Vec<_>>(),
    );
    if !atomic.is_empty() {
        out.push(Measured::new(
            "A3.0",
            vec![not_exact as f64],
            format!("{not_exact} of {} trials not exact", atomic.len()),
            "concurrency.csv atomic_design=true: admitted != limit or errors > 0",
        ));
    }
    Ok((out, Section::new("concurrency", md)))
}
