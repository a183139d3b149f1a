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
use crate::error::{Error, Result};
use crate::hdr;
use crate::run::rows::LatencyRow;

/// Merged histograms per strategy, with how many trials went in.
pub struct Merged {
    pub hist: Histogram<u64>,
    pub trials: usize,
}

/// Merge the rows' histograms per strategy.
pub fn merge(rows: &[LatencyRow]) -> Result<BTreeMap<String, Merged>> {
    let mut out: BTreeMap<String, Merged> = BTreeMap::new();
    for r in rows {
        let h = hdr::decode(&r.histogram_v2_deflate_base64)
            .map_err(|e| Error::Other(format!("cell {} trial {}: {e}", r.cell, r.trial)))?;
        let m = out.entry(r.strategy.clone()).or_insert_with(|| Merged {
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

/// The CDF points a figure needs: a point where the fraction has risen by
/// 0.1% or the latency by 2% since the last one kept, and the last. A full
/// run's merged histograms hold thousands of distinct values each; drawn
/// all, the SVG weighs megabytes and looks the same.
pub fn thin(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut out: Vec<(f64, f64)> = Vec::new();
    for (i, &(x, y)) in points.iter().enumerate() {
        let keep = match out.last() {
            None => true,
            Some(&(lx, ly)) => y - ly >= 0.001 || x >= lx * 1.02 || i + 1 == points.len(),
        };
        if keep {
            out.push((x, y));
        }
    }
    out
}

/// The latency section: a table per experiment, one CDF figure.
pub fn section(ctx: &AnalysisCtx) -> Result<Option<Section>> {
    let mut md = String::from(
        "## Decision latency\n\nPer-decision latency, from the request's send to its reply, recorded in \
         HdrHistograms per trial (`<experiment>-latency.csv`, V2 compressed) and merged across \
         trials and cells before reading percentiles. A strategy's row pools every cell it ran in \
         (worker counts, round trips and patterns), so compare strategies within an experiment, \
         not across experiments.\n\n",
    );
    let mut any = false;
    let mut cdf_source: Option<(String, BTreeMap<String, Merged>)> = None;
    for e in crate::experiments::REGISTRY {
        let Some(rows) = ctx.read_csv::<LatencyRow>(&format!("{}-latency.csv", e.name))? else {
            continue;
        };
        let merged = merge(&rows)?;
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
        md += &format!("### {}\n\n", e.name);
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
        if e.name == "cost" || (e.name == "concurrency" && cdf_source.is_none()) {
            cdf_source = Some((e.name.to_string(), merged));
        }
    }
    if !any {
        return Ok(None);
    }
    if let Some((exp, merged)) = cdf_source {
        let mut panel = Panel::new(
            format!("{exp}: every trial's histogram merged, one line per strategy"),
            Axis::log("decision latency (µs, log scale)"),
            Axis::new("fraction of decisions at or below").range(0.0, 1.0),
        );
        for (s, m) in &merged {
            let pts: Vec<Pt> = thin(&cdf(&m.hist))
                .into_iter()
                .map(|(x, y)| Pt::new(x, y))
                .collect();
            panel = panel.series(Series::line(s.clone(), pts));
        }
        let fig = Figure::new(
            "latency_cdf",
            &[],
            format!("Decision latency CDF ({exp}; beyond the studies)"),
            format!(
                "Cumulative distribution of per-decision latency (send to reply) in `{exp}`, from HdrHistograms merged over every trial of each strategy; {{n}}."
            ),
        )
        .panel(panel);
        md += &fig.write(ctx)?;
    }
    Ok(Some(Section::new("latency", md)))
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
    }
}
