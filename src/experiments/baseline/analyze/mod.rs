//! The baseline section: round trips per target, mean of the per-trial
//! medians and the spread over trials.

pub mod scorecard;

use std::collections::BTreeMap;

use super::rows::Row;
use limitbench_analysis::table::{f, md_table};
use limitbench_analysis::{AnalysisCtx, Measured, Section};
use limitbench_base::error::Result;

/// Per target: (trials, mean of medians, min of medians, max of medians).
pub fn per_target(rows: &[Row]) -> BTreeMap<String, (usize, f64, f64, f64)> {
    let mut by: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for r in rows {
        by.entry(r.target.clone())
            .or_default()
            .push(r.round_trip_median_us);
    }
    by.into_iter()
        .map(|(t, v)| {
            let mean = v.iter().sum::<f64>() / v.len() as f64;
            let min = v.iter().copied().fold(f64::INFINITY, f64::min);
            let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            (t, (v.len(), mean, min, max))
        })
        .collect()
}

/// When a target's trial medians differ by more than 2x (two modes rather
/// than noise), a paragraph saying which, and what it means for reading.
fn modes_note(rows: &[Row]) -> String {
    let split: Vec<String> = per_target(rows)
        .into_iter()
        .filter(|(_, (_, _, min, max))| *min > 0.0 && max / min > 2.0)
        .map(|(t, (_, _, min, max))| format!("{t} {} to {} µs", f(min, 1), f(max, 1)))
        .collect();
    if split.is_empty() {
        return String::new();
    }
    format!(
        "\n**The trial medians are bimodal**, not noisy: {}. Each trial sits in one mode for all its samples, so the \
         cause is a state that lasts a trial, not single slow calls; this run does not record which (on this shared \
         2-core machine, whether client and server share a core, or wake from idle, are the likely candidates; the \
         strategies' medians are whole µs from their histograms, PING's interpolated). A strategy's trial below PING's fastest \
         median (a decision does at least a PING's wire work) is in the fast mode while no PING trial was. Compare targets within one mode only; no claim is judged on this table, and every timing claim is a \
         ratio within one run.\n",
        split.join("; ")
    )
}

pub fn analyze(ctx: &AnalysisCtx) -> Result<(Vec<Measured>, Section)> {
    let Some(rows) = ctx.read_csv::<Row>("baseline.csv")? else {
        return Ok((vec![], Section::new("baseline", "")));
    };
    let table: Vec<Vec<String>> = per_target(&rows)
        .into_iter()
        .map(|(t, (n, mean, min, max))| vec![t, n.to_string(), f(mean, 1), f(min, 1), f(max, 1)])
        .collect();
    let md = format!(
        "No claims. The round trip of one call on one loopback connection, \
         no contention: a bare PING (the wire alone) and one decision per strategy. \
         Every other latency in this report includes this much.\n\n{}",
        md_table(
            &[
                "target",
                "trials",
                "median round trip, mean over trials (µs)",
                "min (µs)",
                "max (µs)"
            ],
            &table
        )
    );
    // The per-trial medians are far from one mode in some runs (the
    // reference run: 26-30 µs against 90-124 µs for the same target): say
    // so where the table is, with the numbers of this run.
    let md = md + &modes_note(&rows);
    Ok((vec![], Section::new("baseline", md)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_target_averages_the_trial_medians() {
        let row = |t: &str, m: f64| Row {
            cell: t.into(),
            trial: 0,
            seed: 0,
            target: t.into(),
            samples: 10,
            round_trip_median_us: m,
            round_trip_p99_us: m,
            errors: 0,
            first_error: String::new(),
        };
        let p = per_target(&[row("PING", 10.0), row("PING", 20.0), row("gcra", 40.0)]);
        assert_eq!(p["PING"], (2, 15.0, 10.0, 20.0));
        assert_eq!(p["gcra"].0, 1);
    }
}
