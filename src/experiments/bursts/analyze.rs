//! Analysis of `bursts` (A3.1-A3.4): the most admitted in any sliding window
//! of one window length, recomputed exactly from `bursts-history.csv`
//! (`window::max_in_window`) on Redis's clock where the strategy's script
//! returns TIME, else on the reply time (the fixed windows, WATCH and
//! check-then-act read no clock in Redis), divided by L, per trial.

use std::collections::BTreeMap;

use crate::analysis::chart::{Axes, BarGroup, bar_chart};
use crate::analysis::stats::Summary;
use crate::analysis::table::{f, md_table};
use crate::analysis::window::{admission_times, by_trial, max_in_window, min_span};
use crate::analysis::{AnalysisCtx, Measured, Section};
use crate::error::Result;
use super::rows::{HistoryRow, Row};

struct Trial<'a> {
    row: &'a Row,
    ratio: f64,
    /// Shortest span holding 2L admissions (straddle), us.
    span_2l_us: Option<i64>,
    clock: &'static str,
}

fn variant(r: &Row) -> String {
    r.cell
        .split_once('/')
        .map(|x| x.1.to_string())
        .unwrap_or_default()
}

pub fn analyze(ctx: &AnalysisCtx) -> Result<(Vec<Measured>, Section)> {
    let mut out = Vec::new();
    let Some(rows) = ctx.read_csv::<Row>("bursts.csv")? else {
        return Ok((out, Section::new("bursts", "Not run.\n")));
    };
    let hist = by_trial(
        ctx.read_csv::<HistoryRow>("bursts-history.csv")?
            .unwrap_or_default(),
    );
    let trials: Vec<Trial> = rows
        .iter()
        .map(|r| {
            let empty = Vec::new();
            let h = hist.get(&(r.cell.clone(), r.trial)).unwrap_or(&empty);
            let (times, clock) = admission_times(h, true);
            let (n, _) = max_in_window(&times, r.window_ms as i64 * 1000);
            Trial {
                row: r,
                ratio: if h.is_empty() {
                    f64::NAN
                } else {
                    n as f64 / r.limit as f64
                },
                span_2l_us: min_span(&times, 2 * r.limit as usize),
                clock,
            }
        })
        .collect();
    let limit = rows.first().map(|r| r.limit).unwrap_or(100);
    let window_ms = rows.first().map(|r| r.window_ms).unwrap_or(1000);
    let mut md = format!(
        "{} trials (strategy x pattern x phase x rep), limit L={limit} per {window_ms} ms; metric = max admitted in any {window_ms} ms window / L, from the history ({} decisions). Clock: {}. seed {}.\n\n",
        rows.len(),
        hist.values().map(|v| v.len()).sum::<usize>(),
        {
            let mut c: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
            for t in &trials {
                let v = c.entry(t.clock).or_default();
                if !v.contains(&t.row.strategy.as_str()) {
                    v.push(&t.row.strategy);
                }
            }
            c.iter()
                .map(|(k, v)| format!("{k}: {}", v.join(", ")))
                .collect::<Vec<_>>()
                .join("; ")
        },
        ctx.manifest["seed"]
    );
    // Table: strategy x pattern variant, mean and max ratio.
    let mut cells: BTreeMap<(String, String), Vec<f64>> = BTreeMap::new();
    for t in &trials {
        cells
            .entry((variant(t.row), t.row.strategy.clone()))
            .or_default()
            .push(t.ratio);
    }
    let strategies: Vec<String> = {
        let mut v: Vec<String> = Vec::new();
        for r in &rows {
            if !v.contains(&r.strategy) {
                v.push(r.strategy.clone());
            }
        }
        v
    };
    let variants: Vec<String> = {
        let mut v: Vec<String> = Vec::new();
        for r in &rows {
            let x = variant(r);
            if !v.contains(&x) {
                v.push(x);
            }
        }
        v
    };
    md += "Max admitted in any window / L, mean (max) over trials, per pattern variant (lead/phase in ms, rate x L per window):\n\n";
    let mut headers = vec!["pattern"];
    headers.extend(strategies.iter().map(|s| s.as_str()));
    md += &md_table(
        &headers,
        &variants
            .iter()
            .map(|v| {
                let mut row = vec![v.clone()];
                for s in &strategies {
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
    md += "\n";
    // Figure: max over trials per strategy, grouped by pattern.
    let patterns: Vec<String> = {
        let mut v: Vec<String> = Vec::new();
        for r in &rows {
            if !v.contains(&r.pattern) {
                v.push(r.pattern.clone());
            }
        }
        v
    };
    let (path, link) = ctx.figure("a3_max_in_any_window.svg");
    bar_chart(
        &path,
        &Axes {
            title: "A3.1-A3.4 max admitted in any 1-window / L (max over trials and phases)".into(),
            x_label: "traffic pattern".into(),
            y_label: "max in any window / L".into(),
            ..Default::default()
        },
        &strategies,
        &patterns
            .iter()
            .map(|p| BarGroup {
                category: p.clone(),
                values: strategies
                    .iter()
                    .map(|s| {
                        let v: Vec<f64> = trials
                            .iter()
                            .filter(|t| &t.row.pattern == p && &t.row.strategy == s)
                            .map(|t| t.ratio)
                            .collect();
                        Summary::of(&v).max
                    })
                    .collect(),
                ranges: strategies.iter().map(|_| None).collect(),
            })
            .collect::<Vec<_>>(),
        Some((1.0, "the limit")),
    )?;
    md += &format!("![A3 max in any window]({link})\n\n");

    let pick = |pattern: &str, strat: &dyn Fn(&str) -> bool| -> Vec<&Trial> {
        trials
            .iter()
            .filter(|t| {
                (pattern.is_empty() || t.row.pattern == pattern)
                    && strat(&t.row.strategy)
                    && t.ratio.is_finite()
            })
            .collect()
    };
    // A3.1
    let fw = pick("straddle", &|s| s.starts_with("fixed-window"));
    if !fw.is_empty() {
        let s = Summary::of(&fw.iter().map(|t| t.ratio).collect::<Vec<_>>());
        let spans: Vec<f64> = fw
            .iter()
            .filter_map(|t| t.span_2l_us)
            .map(|x| x as f64 / 1000.0)
            .collect();
        let by_lead: BTreeMap<String, Summary> = {
            let mut m: BTreeMap<String, Vec<f64>> = BTreeMap::new();
            for t in &fw {
                m.entry(variant(t.row)).or_default().push(t.ratio);
            }
            m.into_iter().map(|(k, v)| (k, Summary::of(&v))).collect()
        };
        out.push(
            Measured::new(
                "A3.1",
                vec![s.max],
                format!(
                    "max {:.2}x (mean {:.2}, n={}); 2L admitted within {} ms (shortest span, {} trials reached 2L)",
                    s.max,
                    s.mean,
                    s.n,
                    f(Summary::of(&spans).min, 1),
                    spans.len()
                ),
                "bursts.csv+history pattern=straddle strategy=fixed-window-*",
            )
            .note(format!(
                "by lead before the boundary: {}",
                by_lead.iter().map(|(k, v)| format!("{k}: mean {:.2}", v.mean)).collect::<Vec<_>>().join(", ")
            )),
        );
    }
    // A3.2
    let tb = pick("quiet-then-burst", &|s| s == "token-bucket");
    if !tb.is_empty() {
        let s = Summary::of(&tb.iter().map(|t| t.ratio).collect::<Vec<_>>());
        out.push(Measured::new(
            "A3.2",
            vec![s.max],
            format!(
                "max {:.2}x (mean {:.2}, min {:.2}, n={})",
                s.max, s.mean, s.min, s.n
            ),
            "bursts.csv+history pattern=quiet-then-burst strategy=token-bucket",
        ));
    }
    // A3.3
    let swc = pick("burst-then-sustained", &|s| s == "sliding-window-counter");
    if !swc.is_empty() {
        let s = Summary::of(&swc.iter().map(|t| t.ratio).collect::<Vec<_>>());
        let mut m: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        for t in &swc {
            m.entry(variant(t.row)).or_default().push(t.ratio);
        }
        out.push(
            Measured::new(
                "A3.3",
                vec![s.mean, s.max],
                format!("mean {:.2}x, worst {:.2}x (n={})", s.mean, s.max, s.n),
                "bursts.csv+history pattern=burst-then-sustained strategy=sliding-window-counter (all rates and phases)",
            )
            .note(format!(
                "per variant mean/max: {}",
                m.iter().map(|(k, v)| { let s = Summary::of(v); format!("{k}: {:.2}/{:.2}", s.mean, s.max) }).collect::<Vec<_>>().join(", ")
            )),
        );
    }
    // A3.4
    let swl = pick("", &|s| s == "sliding-window-log");
    if !swl.is_empty() {
        let s = Summary::of(&swl.iter().map(|t| t.ratio).collect::<Vec<_>>());
        out.push(Measured::new(
            "A3.4",
            vec![s.max],
            format!(
                "max {:.2}x over {} trials of {} patterns",
                s.max,
                s.n,
                swl.iter()
                    .map(|t| &t.row.pattern)
                    .collect::<std::collections::BTreeSet<_>>()
                    .len()
            ),
            "bursts.csv+history strategy=sliding-window-log, every pattern",
        ));
    }
    let late: Vec<f64> = rows.iter().map(|r| r.lateness_p99_us).collect();
    md += &format!(
        "Send lateness against the schedule, p99 per trial: {} us (bursts queue behind the driver pool).\n",
        Summary::of(&late).show(0)
    );
    Ok((out, Section::new("bursts", md)))
}
