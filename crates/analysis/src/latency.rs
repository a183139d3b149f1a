//! Per-decision latency from the HdrHistograms the run stored per trial
//! (`<experiment>-latency.csv`): histograms are merged across trials and
//! cells before any percentile is read (percentiles do not average), per
//! experiment and strategy. Writes the report's latency section and one CDF
//! figure.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;

use super::figure::{Axis, Figure, Panel, Pt, Series};
use super::table::md_table;
use super::{AnalysisCtx, Section};
use crate::figure::WriteFigure;
use crate::rows::LatencyRow;
use limitbench_base::error::{Error, Result};
use limitbench_base::hdr;

/// Merged latency histograms per strategy, with how many trials went in.
pub struct MergedLatency {
    pub hist: Histogram<u64>,
    pub trials: usize,
}

/// Merge the rows' histograms per strategy.
pub fn merge(rows: &[LatencyRow]) -> Result<BTreeMap<String, MergedLatency>> {
    let mut out: BTreeMap<String, MergedLatency> = BTreeMap::new();
    for (i, r) in rows.iter().enumerate() {
        // Line i + 2: the header is line 1 and rows are read in file order.
        let h = hdr::decode(&r.histogram_v2_deflate_base64).map_err(|e| {
            Error::Other(format!(
                "line {} (cell {} trial {}): a corrupt latency histogram: {e}",
                i + 2,
                r.cell,
                r.trial
            ))
        })?;
        let m = out
            .entry(r.strategy.clone())
            .or_insert_with(|| MergedLatency {
                hist: hdr::new_histogram(),
                trials: 0,
            });
        m.hist
            .add(&h)
            .map_err(|e| Error::Other(format!("merging latency histograms: {e:?}")))?;
        m.trials += 1;
    }
    Ok(out)
}

/// p50, p99, p99.9 and max in µs.
pub fn percentiles(h: &Histogram<u64>) -> [u64; 4] {
    [
        h.value_at_quantile(0.5),
        h.value_at_quantile(0.99),
        h.value_at_quantile(0.999),
        h.max(),
    ]
}

/// The CDF of a histogram as (latency µs, fraction at or below) points.
pub fn cdf(h: &Histogram<u64>) -> Vec<(f64, f64)> {
    let total = h.len().max(1) as f64;
    let mut seen = 0u64;
    h.iter_recorded()
        .map(|v| {
            seen += v.count_at_value();
            (v.value_iterated_to().max(1) as f64, seen as f64 / total)
        })
        .collect()
}

/// The quantiles at which the percentile plot reads each histogram (the
/// "nines" HdrHistogram's plotter and wrk2 draw), the maximum after them.
pub const PLOT_QUANTILES: [f64; 12] = [
    0.0, 0.5, 0.75, 0.9, 0.95, 0.99, 0.995, 0.999, 0.9995, 0.9999, 0.99995, 0.99999,
];

/// The percentile plot's points: (1 / (1 - q), latency at q in µs) for
/// each of [`PLOT_QUANTILES`] the histogram resolves (1 / (1 - q) no more
/// than its count), then the maximum at 1 / (1 - q) = the count. On a log
/// x axis 10 is p90, 100 p99, 1000 p99.9: each decade one more nine.
pub fn quantile_points(h: &Histogram<u64>) -> Vec<(f64, f64)> {
    if h.is_empty() {
        return vec![];
    }
    let n = h.len() as f64;
    let mut out: Vec<(f64, f64)> = PLOT_QUANTILES
        .iter()
        // Rounded so p99's 1/(1-q) is 100, not 99.99999999999991.
        .map(|q| (((1.0 / (1.0 - q)) * 1e6).round() / 1e6, *q))
        .filter(|(x, _)| *x < n)
        .map(|(x, q)| (x, h.value_at_quantile(q).max(1) as f64))
        .collect();
    out.push((n.max(1.0), h.max().max(1) as f64));
    out
}

/// A strategy key (`token-bucket|evalsha`, `sliding-window-log|L100|full`)
/// in words for a legend.
pub fn key_words(key: &str) -> String {
    let mut parts = key.split('|');
    let name = parts.next().unwrap_or(key).to_string();
    let rest: Vec<String> = parts
        .map(|p| match p {
            "evalsha" => "EVALSHA".to_string(),
            "eval" => "EVAL".to_string(),
            "fcall" => "FCALL".to_string(),
            "abusive" => "one abusive key".to_string(),
            "full" => "prefilled".to_string(),
            p if p.starts_with('L') => format!("L={}", &p[1..]),
            p => p.to_string(),
        })
        .collect();
    if rest.is_empty() {
        name
    } else {
        format!("{name} ({})", rest.join(", "))
    }
}

/// The cost experiment's strategies in two panels: the plain commands and
/// the Lua strategies as called by default (EVALSHA, uniform keys), then
/// the token bucket's other calls and the abusive-key and prefilled runs.
fn cost_panel(key: &str) -> usize {
    let parts: Vec<&str> = key.split('|').collect();
    match parts.as_slice() {
        // A group's own GET (`get|rounds-2`) is GET.
        [_] | [_, "evalsha"] | ["get", _] => 0,
        _ => 1,
    }
}

/// The latency section: a table per experiment, one percentile figure.
pub fn section(ctx: &AnalysisCtx, experiments: &[&str]) -> Result<Option<Section>> {
    let mut md = String::from(
        "## Decision latency\n\nPer-decision latency, from the request's send to its reply, recorded in \
         HdrHistograms per trial (`<experiment>-latency.csv`, V2 compressed) and merged across \
         trials and cells before reading percentiles. A strategy's row pools every cell it ran in \
         (worker counts, round trips and patterns), so compare strategies within an experiment, \
         not across experiments.\n\n",
    );
    let mut any = false;
    let mut cdf_source: Option<(String, BTreeMap<String, MergedLatency>)> = None;
    for name in experiments {
        let Some(rows) = ctx.read_csv::<LatencyRow>(&format!("{name}-latency.csv"))? else {
            continue;
        };
        let file = format!("{name}-latency.csv");
        let merged = merge(&rows).map_err(|e| Error::Other(format!("{file}: {e}")))?;
        if merged.is_empty() {
            continue;
        }
        any = true;
        let table: Vec<Vec<String>> = merged
            .iter()
            .map(|(s, m)| {
                let [p50, p99, p999, max] = percentiles(&m.hist);
                vec![
                    s.clone(),
                    m.trials.to_string(),
                    m.hist.len().to_string(),
                    p50.to_string(),
                    p99.to_string(),
                    p999.to_string(),
                    max.to_string(),
                ]
            })
            .collect();
        md += &format!("### {name}\n\n");
        md += &md_table(
            &[
                "strategy",
                "trials",
                "decisions",
                "p50 (µs)",
                "p99 (µs)",
                "p99.9 (µs)",
                "max (µs)",
            ],
            &table,
        );
        md += "\n";
        // The CDF compares strategies where they ran alike: the cost
        // experiment's saturated loopback runs, else concurrency's.
        if *name == "cost" || (*name == "concurrency" && cdf_source.is_none()) {
            cdf_source = Some((name.to_string(), merged));
        }
    }
    if !any {
        return Ok(None);
    }
    if let Some((exp, merged)) = cdf_source {
        md += &cdf_figure(ctx, &exp, &merged)?;
    }
    Ok(Some(Section::new("latency", md)))
}

/// The percentile figure (latency against percentile on a log "nines"
/// axis, as HdrHistogram's plotter and wrk2 draw it): for `cost`, two
/// panels (defaults; other calls and loads, with the token bucket's
/// EVALSHA repeated as the common line); otherwise one.
fn cdf_figure(
    ctx: &AnalysisCtx,
    exp: &str,
    merged: &BTreeMap<String, MergedLatency>,
) -> Result<String> {
    let y = || Axis::log("decision latency (µs, log scale)");
    let x = || {
        Axis::log(
            "percentile as 1/(1-q), log: 1 = p0, 10 = p90, 100 = p99, 1000 = p99.9, 10k = p99.99",
        )
        .ticks(vec![1.0, 2.0, 10.0, 100.0, 1000.0, 1e4, 1e5, 1e6, 1e7])
    };
    let mut panels: Vec<Panel> = if exp == "cost" {
        vec![
            Panel::new(
                "plain commands and Lua strategies (EVALSHA, uniform keys)",
                x(),
                y(),
            ),
            Panel::new(
                "token bucket called otherwise; abusive key; prefilled logs",
                x(),
                y(),
            ),
        ]
    } else {
        vec![Panel::new("every strategy", x(), y())]
    };
    for (s, m) in merged {
        let pts: Vec<Pt> = quantile_points(&m.hist)
            .into_iter()
            .map(|(x, y)| Pt::new(x, y))
            .collect();
        let series = Series::line(key_words(s), pts);
        if exp == "cost" {
            let i = cost_panel(s);
            panels[i] = std::mem::take(&mut panels[i]).series(series.clone());
            if s == "token-bucket|evalsha" {
                panels[1] = std::mem::take(&mut panels[1]).series(series);
            }
        } else {
            panels[0] = std::mem::take(&mut panels[0]).series(series);
        }
    }
    let trials: Vec<usize> = merged.values().map(|m| m.trials).collect();
    let n = match (trials.iter().min(), trials.iter().max()) {
        (Some(a), Some(b)) if a == b => format!("n = {a} trials per strategy"),
        (Some(a), Some(b)) => format!("n = {a} to {b} trials per strategy"),
        _ => String::new(),
    };
    let mut fig = Figure::new(
        "latency_percentiles",
        &[],
        format!("Decision latency by percentile ({exp}; beyond the studies)"),
        format!(
            "Per-decision latency (send to reply) in the {exp} experiment against its percentile on a log \"nines\" axis (HdrHistogram's percentile plot), from HdrHistograms merged over every trial of each strategy ({n}); the last point of each line is the maximum, drawn at 1/(1-q) = the number of decisions. Closed loop: each connection sends its next request when the previous reply arrives, so a slow reply delays the requests behind it instead of being measured by them (coordinated omission): these tails are lower bounds of what an open-loop client at the same rate would see. No spread is drawn: each line is the pooled decisions'."
        ),
    )
    .columns(1);
    for p in panels.into_iter().filter(|p| p.points() > 0) {
        fig = fig.panel(p);
    }
    fig.write(ctx)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(strategy: &str, trial: u64, values: &[u64]) -> LatencyRow {
        let mut h = hdr::new_histogram();
        for v in values {
            h.record(*v).unwrap();
        }
        LatencyRow {
            cell: format!("{strategy}/x"),
            trial,
            strategy: strategy.into(),
            decisions: h.len(),
            histogram_v2_deflate_base64: hdr::encode(&h).unwrap(),
        }
    }

    #[test]
    fn percentiles_come_from_merged_histograms_not_averaged_ones() {
        // Trial 0: 99 fast decisions; trial 1: one slow one. The merged p99
        // is fast; averaging per-trial p99s would say (10 + 10_000) / 2.
        let rows = vec![row("a", 0, &[10; 99]), row("a", 1, &[10_000])];
        let m = merge(&rows).unwrap();
        let a = &m["a"];
        assert_eq!(a.trials, 2);
        assert_eq!(a.hist.len(), 100);
        let [p50, p99, _, max] = percentiles(&a.hist);
        assert_eq!(p50, 10);
        assert_eq!(p99, 10);
        assert!((9_990..=10_010).contains(&max), "{max}");
        let c = cdf(&a.hist);
        assert_eq!(c.first().unwrap().1, 0.99);
        assert_eq!(c.last().unwrap().1, 1.0);
        // The percentile plot: quantiles the 100 decisions resolve (p0 to
        // p95: 1/(1-q) below 100), then the maximum at x = 100.
        let q = quantile_points(&a.hist);
        assert_eq!(q.len(), 6, "{q:?}");
        assert_eq!(q[0], (1.0, 10.0));
        assert_eq!(q[3], (10.0, 10.0));
        assert_eq!(q.last().unwrap().0, 100.0);
        assert!(q.last().unwrap().1 >= 9_990.0);
    }

    #[test]
    fn legend_labels_are_words_and_cost_panels_split_defaults_from_the_rest() {
        assert_eq!(key_words("token-bucket|evalsha"), "token-bucket (EVALSHA)");
        assert_eq!(
            key_words("sliding-window-log|L10000|full"),
            "sliding-window-log (L=10000, prefilled)"
        );
        assert_eq!(cost_panel("get"), 0);
        assert_eq!(cost_panel("gcra|evalsha"), 0);
        assert_eq!(cost_panel("gcra|abusive"), 1);
        assert_eq!(cost_panel("token-bucket|eval"), 1);
    }
}
