//! Open-loop latency corrected for coordinated omission. An open-loop
//! sender has a schedule: request i is due at its intended time. When the
//! sender or its pool of connections falls behind (a slow reply holds a
//! connection; a burst queues behind the pool), a request goes out late,
//! and latency measured from the actual send leaves that wait out: the
//! slow moments are under-sampled, which HdrHistogram's documentation
//! calls coordinated omission. Measured from the intended time instead
//! (reply minus intended send), every request carries the wait the
//! schedule imposed on it: the latency a caller on that schedule saw.
//!
//! Only runs that record each request's intended time can be corrected:
//! the per-decision histories (`<experiment>-history.csv`: `intended_us`,
//! `sent_us`, `replied_us` per decision). No experiment or cell is named
//! here: every experiment with a history is read (fail-open's is drawn
//! against its deadline in `focus`), and where its sends ran late the
//! correction shows. Per experiment the panels are the [`PANELS`] cells
//! (a cell id's first part, the strategy or sender, is the line; the rest
//! the cell) whose correction is largest (p99 from the schedule over p99
//! from the send, at least [`MIN_GAP`]); each draws the two lines of its
//! cell with the largest correction, from the send and from the schedule.
//! A closed-loop history (each request sent as the last reply came back:
//! intended = sent) shows no correction and is not drawn.

use hdrhistogram::Histogram;

use crate::AnalysisCtx;
use crate::experiments::rows::HistoryRow;
use crate::figure::{Axis, Draw, Figure, Panel};
use crate::latency::closed::span;
use crate::latency::hist::{MergedLatency, figure_with_table, nines_series, of_values};
use limitbench_base::error::Result;

/// Panels per experiment.
pub const PANELS: usize = 2;

/// The least correction drawn: p99 from the schedule at least this many
/// times p99 from the send.
pub const MIN_GAP: f64 = 1.05;

/// A history's cell id split into its line (the first part: the strategy
/// or the sender) and the cell (the rest).
fn split_cell(id: &str) -> (&str, &str) {
    id.split_once('/').unwrap_or((id, ""))
}

/// p99 from the schedule over p99 from the send.
fn gap(sent: &Histogram<u64>, intended: &Histogram<u64>) -> f64 {
    intended.value_at_quantile(0.99) as f64 / sent.value_at_quantile(0.99).max(1) as f64
}

/// One line of a panel: its name, from the send and from the schedule,
/// the trials, and its correction.
type Line = (String, Histogram<u64>, Histogram<u64>, usize, f64);

/// The panels of one experiment's history: (cell, its two lines), the
/// cells with the largest correction first, at most [`PANELS`].
fn panels(history: &[HistoryRow]) -> Vec<(String, Vec<Line>)> {
    let mut by: std::collections::BTreeMap<&str, Vec<&HistoryRow>> = Default::default();
    for r in history {
        by.entry(r.cell.as_str()).or_default().push(r);
    }
    let mut cells: std::collections::BTreeMap<&str, Vec<Line>> = Default::default();
    for (id, rows) in by {
        let (line, cell) = split_cell(id);
        let (sent, intended, trials) = from_send_and_schedule(rows);
        if sent.is_empty() {
            continue;
        }
        let g = gap(&sent, &intended);
        cells
            .entry(cell)
            .or_default()
            .push((line.to_string(), sent, intended, trials, g));
    }
    let mut out: Vec<(String, Vec<Line>, f64)> = cells
        .into_iter()
        .filter_map(|(cell, mut lines)| {
            lines.sort_by(|a, b| b.4.total_cmp(&a.4).then(a.0.cmp(&b.0)));
            lines.truncate(2);
            let worst = lines.first()?.4;
            (worst >= MIN_GAP).then(|| (cell.to_string(), lines, worst))
        })
        .collect();
    out.sort_by(|a, b| b.2.total_cmp(&a.2).then(a.0.cmp(&b.0)));
    out.into_iter()
        .take(PANELS)
        .map(|(c, l, _)| (c, l))
        .collect()
}

/// Latency of each decision from its send and from its intended time
/// (µs): the service time and the latency a caller on the schedule saw.
pub fn from_send_and_schedule<'a>(
    rows: impl IntoIterator<Item = &'a HistoryRow>,
) -> (Histogram<u64>, Histogram<u64>, usize) {
    let rows: Vec<&HistoryRow> = rows.into_iter().filter(|r| !r.error).collect();
    let trials = {
        let mut t: Vec<u64> = rows.iter().map(|r| r.trial).collect();
        t.sort_unstable();
        t.dedup();
        t.len()
    };
    (
        of_values(rows.iter().map(|r| r.replied_us - r.sent_us)),
        of_values(rows.iter().map(|r| r.replied_us - r.intended_us)),
        trials,
    )
}

/// The open-loop figure from the runs' histories (empty without them).
pub fn figure(ctx: &AnalysisCtx, experiments: &[&str]) -> Result<String> {
    let mut fig = Figure::new(
        "latency-open-loop",
        &[],
        "Open-loop latency from the schedule (corrected for coordinated omission) and from the send",
        String::new(),
    )
    // One column: a panel's title names its experiment and whole cell.
    .columns(1);
    let mut kept: Vec<(String, MergedLatency)> = Vec::new();
    let mut drawn: Vec<String> = Vec::new();
    for exp in experiments.iter().filter(|e| **e != "fail-open") {
        let Some(history) = ctx.read_csv::<HistoryRow>(&format!("{exp}-history.csv"))? else {
            continue;
        };
        for (cell, lines) in panels(&history) {
            let mut p = Panel::new(
                format!("{exp}: {cell}"),
                Axis::nines("percentile"),
                Axis::log("latency (ms, log scale)"),
            )
            .label_ends();
            for (line, sent, intended, trials, g) in lines {
                // From the send: a line without markers (the line's second
                // look's dash), so the one marker a strategy shows is its
                // own, as in every other figure.
                let mut from_send = nines_series(format!("{line}, from send"), &sent);
                from_send.draw = Draw::Line;
                p = p
                    .series(nines_series(format!("{line}, from schedule"), &intended))
                    .series(from_send);
                let id = format!("{exp} {line}/{cell}");
                drawn.push(format!("{id} (p99 {g:.2}x)"));
                for (how, h) in [("from schedule", intended), ("from send", sent)] {
                    kept.push((format!("{id}, {how}"), MergedLatency { hist: h, trials }));
                }
            }
            fig = fig.panel(p);
        }
    }
    if fig.panels.is_empty() {
        return Ok(String::new());
    }
    let trials: Vec<usize> = kept.iter().map(|k| k.1.trials).collect();
    fig.caption = format!(
        "Per-decision latency of open-loop senders against its percentile on a nines axis, one cell a panel, for each experiment that kept a per-decision history the {PANELS} cells where the schedule's correction is largest (p99 from the schedule over p99 from the send, at least {MIN_GAP}x; a closed-loop history, where each request leaves as the last reply returns, has none and is not drawn), in each the two lines (strategies or senders) with the largest: {}. Each line from the request's intended send time on the schedule to its reply (corrected for coordinated omission: the wait for a late send is counted, as a caller on that schedule saw it), and from the actual send (what a closed-loop harness records; the send is late when the sender or its pool of connections falls behind, as in a burst). Every decision of the cell's {} trials, from the per-decision history (`<experiment>-history.csv`: intended_us, sent_us, replied_us); errors left out. The last point of each line is the maximum; markers on the line from the schedule (each strategy's own), none on the line from the send.",
        drawn.join("; "),
        span(&trials)
    );
    let rows: Vec<(String, &MergedLatency)> = kept.iter().map(|(n, m)| (n.clone(), m)).collect();
    figure_with_table(ctx, &fig, &rows)
}

#[cfg(test)]
mod tests {
    use crate::latency::open_loop::*;

    fn r(trial: u64, intended: i64, sent: i64, replied: i64, error: bool) -> HistoryRow {
        HistoryRow {
            cell: "c".into(),
            trial,
            worker: 0,
            intended_us: intended,
            sent_us: sent,
            replied_us: replied,
            redis_time_us: None,
            admitted: true,
            error,
        }
    }

    fn at(cell: &str, intended: i64, sent: i64, replied: i64) -> HistoryRow {
        HistoryRow {
            cell: cell.into(),
            ..r(0, intended, sent, replied, false)
        }
    }

    #[test]
    fn the_cells_drawn_are_those_the_schedule_corrects_most() {
        let mut rows = Vec::new();
        for i in 0..100 {
            let t = i * 1000;
            // Closed loop: sent when due; never drawn.
            rows.push(at("a/closed", t, t, t + 500));
            // Late by up to 9 ms, and by up to 2 ms: both corrected.
            rows.push(at(
                "a/late",
                t,
                t + (i % 10) * 1000,
                t + (i % 10) * 1000 + 500,
            ));
            rows.push(at(
                "b/late",
                t,
                t + (i % 3) * 1000,
                t + (i % 3) * 1000 + 500,
            ));
            rows.push(at("c/late", t, t + 1, t + 501));
            rows.push(at(
                "a/bit-late",
                t,
                t + (i % 2) * 100,
                t + (i % 2) * 100 + 500,
            ));
        }
        let p = panels(&rows);
        let cells: Vec<&str> = p.iter().map(|c| c.0.as_str()).collect();
        assert_eq!(cells, ["late", "bit-late"]);
        // The two lines corrected most, most first; c (1 µs late) left out.
        let lines: Vec<&str> = p[0].1.iter().map(|l| l.0.as_str()).collect();
        assert_eq!(lines, ["a", "b"]);
        assert!(p[0].1[0].4 > 10.0, "{}", p[0].1[0].4);
        assert_eq!(
            split_cell("token-bucket/poisson/x1.5"),
            ("token-bucket", "poisson/x1.5")
        );
    }

    #[test]
    fn latency_from_the_schedule_counts_the_wait_for_a_late_send() {
        // A burst of four due at 0 on two connections: the last two go out
        // when the first replies come back (1 ms later).
        let rows = vec![
            r(0, 0, 0, 1000, false),
            r(0, 0, 0, 1000, false),
            r(0, 0, 1000, 2000, false),
            r(1, 0, 1000, 2000, false),
            r(1, 0, 0, 99_000, true),
        ];
        let (sent, intended, trials) = from_send_and_schedule(&rows);
        assert_eq!(trials, 2);
        assert_eq!(sent.len(), 4, "the error is left out");
        // From the send every request took 1 ms; from the schedule half took 2.
        assert_eq!(sent.max(), sent.lowest_equivalent(1000));
        assert_eq!(
            intended.value_at_quantile(0.5),
            intended.lowest_equivalent(1000)
        );
        assert_eq!(intended.max(), intended.highest_equivalent(2000));
    }
}
