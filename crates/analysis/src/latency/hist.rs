//! Latency histograms as the run stores them (`<experiment>-latency.csv`:
//! one HdrHistogram per cell and trial) merged before any percentile is
//! read (percentiles do not average), and read for a percentile plot on a
//! nines axis, for a table, and for a legend.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;

use crate::AnalysisCtx;
use crate::figure::{Pt, Series, WriteFigure};
use crate::rows::LatencyRow;
use crate::table::md_table;
use limitbench_base::error::{Error, Result};
use limitbench_base::hdr;
use limitbench_plot::nines::{nines_max_x, nines_x};

/// Merged latency histograms of one key, with how many trials went in.
pub struct MergedLatency {
    pub hist: Histogram<u64>,
    pub trials: usize,
}

impl MergedLatency {
    pub fn new() -> Self {
        MergedLatency {
            hist: hdr::new_histogram(),
            trials: 0,
        }
    }
}

impl Default for MergedLatency {
    fn default() -> Self {
        Self::new()
    }
}

/// Merge the rows' histograms per strategy.
pub fn merge(rows: &[LatencyRow]) -> Result<BTreeMap<String, MergedLatency>> {
    merge_by(rows, |r| Some(r.strategy.clone()))
}

/// Merge the rows' histograms per `key` (rows it gives None are left out):
/// per cell, to compare like with like.
pub fn merge_by(
    rows: &[LatencyRow],
    key: impl Fn(&LatencyRow) -> Option<String>,
) -> Result<BTreeMap<String, MergedLatency>> {
    let mut out: BTreeMap<String, MergedLatency> = BTreeMap::new();
    for (i, r) in rows.iter().enumerate() {
        let Some(k) = key(r) else { continue };
        // Line i + 2: the header is line 1 and rows are read in file order.
        let h = hdr::decode(&r.histogram_v2_deflate_base64).map_err(|e| {
            Error::Other(format!(
                "line {} (cell {} trial {}): a corrupt latency histogram: {e}",
                i + 2,
                r.cell,
                r.trial
            ))
        })?;
        let m = out.entry(k).or_default();
        m.hist
            .add(&h)
            .map_err(|e| Error::Other(format!("merging latency histograms: {e:?}")))?;
        m.trials += 1;
    }
    Ok(out)
}

/// A histogram of `values` (µs; below 1 recorded as 1, above the
/// histogram's range as its top).
pub fn of_values(values: impl IntoIterator<Item = i64>) -> Histogram<u64> {
    let mut h = hdr::new_histogram();
    for v in values {
        h.saturating_record(v.max(1) as u64);
    }
    h
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
/// (From p25: the minimum, often far below, would stretch the latency
/// axis for one point.)
pub const PLOT_QUANTILES: [f64; 13] = [
    0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.995, 0.999, 0.9995, 0.9999, 0.99995, 0.99999, 0.999995,
];

/// The percentile plot's points: (q on the nines axis, `-log10(1 - q)`,
/// latency at q in µs) for each of [`PLOT_QUANTILES`] the histogram
/// resolves (1 / (1 - q) below its count; p25 onwards), then the maximum at the
/// quantile 1 - 1/count.
pub fn quantile_points(h: &Histogram<u64>) -> Vec<(f64, f64)> {
    if h.is_empty() {
        return vec![];
    }
    let n = h.len();
    let mut out: Vec<(f64, f64)> = PLOT_QUANTILES
        .iter()
        .filter(|q| 1.0 / (1.0 - **q) < n as f64 * (1.0 - 1e-9))
        .map(|q| (nines_x(*q), h.value_at_quantile(*q).max(1) as f64))
        .collect();
    out.push((nines_max_x(n), h.max().max(1) as f64));
    out
}

/// A percentile line of `h` in ms (the nines axis' points), named `name`.
pub fn nines_series(name: impl Into<String>, h: &Histogram<u64>) -> Series {
    let pts = quantile_points(h)
        .into_iter()
        .map(|(x, us)| Pt::new(x, us / 1000.0))
        .collect();
    Series::line(name, pts)
}

/// A latency figure written, then the table of the lines it draws (each
/// line's percentiles), as every latency figure of the report shows them.
pub fn figure_with_table(
    ctx: &AnalysisCtx,
    fig: &impl WriteFigure,
    rows: &[(String, &MergedLatency)],
) -> Result<String> {
    let mut md = fig.write(ctx)?;
    md += &table(rows);
    md += "\n";
    Ok(md)
}

/// A markdown table of merged histograms, one row per (label, histogram):
/// trials, decisions and the percentiles in ms.
pub fn table(rows: &[(String, &MergedLatency)]) -> String {
    let ms = |us: u64| format!("{:.2}", us as f64 / 1000.0);
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|(label, m)| {
            let [p50, p99, p999, max] = percentiles(&m.hist);
            vec![
                label.clone(),
                m.trials.to_string(),
                m.hist.len().to_string(),
                ms(p50),
                ms(p99),
                ms(p999),
                ms(max),
            ]
        })
        .collect();
    md_table(
        &[
            "series (one cell)",
            "trials",
            "decisions",
            "p50 (ms)",
            "p99 (ms)",
            "p99.9 (ms)",
            "max (ms)",
        ],
        &body,
    )
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

#[cfg(test)]
mod tests {
    use crate::latency::hist::*;

    pub(crate) fn row(strategy: &str, trial: u64, values: &[u64]) -> LatencyRow {
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
        // The percentile plot: quantiles the 100 decisions resolve (p25 to
        // p95: 1/(1-q) below 100), then the maximum at p99 (x = 2).
        let q = quantile_points(&a.hist);
        assert_eq!(q.len(), 6, "{q:?}");
        assert_eq!(q[0].1, 10.0);
        assert!((q[3].0 - 1.0).abs() < 1e-9, "p90 at x = 1: {q:?}");
        assert!((q.last().unwrap().0 - 2.0).abs() < 1e-9);
        assert!(q.last().unwrap().1 >= 9_990.0);
        // Per cell: two keys.
        let by_cell = merge_by(&rows, |r| Some(format!("{}#{}", r.cell, r.trial))).unwrap();
        assert_eq!(by_cell.len(), 2);
    }

    #[test]
    fn legend_labels_are_words() {
        assert_eq!(key_words("token-bucket|evalsha"), "token-bucket (EVALSHA)");
        assert_eq!(
            key_words("sliding-window-log|L10000|full"),
            "sliding-window-log (L=10000, prefilled)"
        );
    }
}
