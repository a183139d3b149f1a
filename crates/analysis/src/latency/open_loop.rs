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
//! the admission histories (`<experiment>-history.csv`: `intended_us`,
//! `sent_us`, `replied_us` per decision) of `bursts` and `skew`, which
//! keep every decision. Each panel draws one cell ([`CELLS`]) and two
//! strategies, each from its send and from its schedule.

use hdrhistogram::Histogram;

use crate::AnalysisCtx;
use crate::experiments::rows::HistoryRow;
use crate::figure::{Axis, Draw, Figure, Panel, WriteFigure};
use crate::latency::closed::span;
use crate::latency::hist::{MergedLatency, nines_series, of_values, table};
use limitbench_base::error::Result;

/// The cells drawn: (experiment, cell setting after the strategy, the
/// two strategies, what the cell is). A cell a run lacks is left out.
pub const CELLS: &[(&str, &str, [&str; 2], &str)] = &[
    (
        "bursts",
        "burst-then-sustained/phase-uniform/x1",
        ["token-bucket", "watch-multi"],
        "bursts: a burst of L, then L per window",
    ),
    (
        "bursts",
        "poisson/x1.5",
        ["token-bucket", "watch-multi"],
        "bursts: Poisson arrivals at 1.5x the limit",
    ),
    (
        "skew",
        "S1000/W8/spread/x10/poisson/T5000",
        ["token-bucket", "token-bucket-caller-clock"],
        "skew: 8 servers, Poisson at 10x the limit",
    ),
];

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
    .columns(2);
    let mut kept: Vec<(String, MergedLatency)> = Vec::new();
    let mut drawn: Vec<String> = Vec::new();
    for exp in ["bursts", "skew"] {
        if !experiments.contains(&exp) {
            continue;
        }
        let Some(history) = ctx.read_csv::<HistoryRow>(&format!("{exp}-history.csv"))? else {
            continue;
        };
        for (_, cell, strategies, title) in CELLS.iter().filter(|c| c.0 == exp) {
            let mut p = Panel::new(
                *title,
                Axis::nines("percentile"),
                Axis::log("latency (ms, log scale)"),
            )
            .label_ends();
            for s in strategies {
                let id = format!("{s}/{cell}");
                let (sent, intended, trials) =
                    from_send_and_schedule(history.iter().filter(|r| r.cell == id));
                if sent.is_empty() {
                    continue;
                }
                // From the send: a line without markers (the strategy's
                // second look's dash), so the one marker a strategy shows
                // is its own, as in every other figure.
                let mut from_send = nines_series(format!("{s}, from send"), &sent);
                from_send.draw = Draw::Line;
                p = p
                    .series(nines_series(format!("{s}, from schedule"), &intended))
                    .series(from_send);
                for (how, h) in [("from schedule", intended), ("from send", sent)] {
                    kept.push((format!("{id}, {how}"), MergedLatency { hist: h, trials }));
                }
            }
            if p.points() > 0 {
                drawn.push(format!("{exp} `{cell}`"));
                fig = fig.panel(p);
            }
        }
    }
    if fig.panels.is_empty() {
        return Ok(String::new());
    }
    let trials: Vec<usize> = kept.iter().map(|k| k.1.trials).collect();
    fig.caption = format!(
        "Per-decision latency of open-loop senders against its percentile on a nines axis, one cell a panel ({}), two strategies each: from the request's intended send time on the schedule to its reply (corrected for coordinated omission: the wait for a late send is counted, as a caller on that schedule saw it), and from the actual send (what a closed-loop harness records; the send is late when the sender or its pool of connections falls behind, as in a burst). Every decision of the cell's {} trials, from the per-decision history (`<experiment>-history.csv`: intended_us, sent_us, replied_us); errors left out. The last point of each line is the maximum; markers on the line from the schedule (each strategy's own), none on the line from the send.",
        drawn.join("; "),
        span(&trials)
    );
    let mut md = fig.write(ctx)?;
    let rows: Vec<(String, &MergedLatency)> = kept.iter().map(|(n, m)| (n.clone(), m)).collect();
    md += &table(&rows);
    md += "\n";
    Ok(md)
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
