//! Analysis of `failover` (beyond the studies, no published claim):
//! admissions above the limit across a primary kill + replica promotion, by
//! strategy, WAIT after each decision, and replication-link delay.
//!
//! Metrics (rows -> numbers): `cells` and `CellStats`; presentation:
//! `cell_table`, `figure` and `analyze`.
//!
//! Unit tests of the metrics: `tests.rs` in this folder.

pub mod scorecard;

use super::rows::Row;
use limitbench_analysis::figure::{Axis, Figure, Panel, Pt, Reference, Series};
use limitbench_analysis::figure::{SummaryPoint, WriteFigure};
use limitbench_analysis::stats::Summary;
use limitbench_analysis::table::{distinct, f, md_table};
use limitbench_analysis::{AnalysisCtx, Measured, Section};
use limitbench_base::error::Result;

/// A cell: (strategy, WAIT after each decision, replication delay as f64 bits).
pub type CellKey = (String, bool, u64);

/// The cells in first-seen order.
pub fn cells(rows: &[Row]) -> Vec<CellKey> {
    distinct(
        rows.iter()
            .map(|r| (r.strategy.clone(), r.wait, r.repl_delay_ms.to_bits())),
    )
}

/// One cell's numbers over its trials.
pub struct CellStats {
    pub trials: usize,
    /// Admitted over the limit.
    pub over: Summary,
    /// Trials that admitted more than the limit.
    pub trials_over: usize,
    pub link_rtt_ms: Summary,
    pub replica_used: Summary,
    pub unconfirmed: Summary,
    pub failover_ms: Summary,
    pub decision_ms: Summary,
}

impl CellStats {
    pub fn of(rows: &[Row], (s, w, d): &CellKey) -> Self {
        let rs: Vec<&Row> = rows
            .iter()
            .filter(|r| &r.strategy == s && r.wait == *w && r.repl_delay_ms.to_bits() == *d)
            .collect();
        let col =
            |g: &dyn Fn(&Row) -> f64| Summary::of(&rs.iter().map(|r| g(r)).collect::<Vec<_>>());
        CellStats {
            trials: rs.len(),
            over: col(&|r| r.over_admitted as f64),
            trials_over: rs.iter().filter(|r| r.over_admitted > 0).count(),
            link_rtt_ms: col(&|r| r.repl_rtt_ms),
            replica_used: col(&|r| r.replica_used_at_promotion),
            unconfirmed: col(&|r| r.unconfirmed_pre as f64),
            failover_ms: col(&|r| r.failover_ms),
            decision_ms: col(&|r| r.decision_rtt_mean_ms),
        }
    }
}

fn cell_table(rows: &[Row], cells: &[CellKey]) -> String {
    let t: Vec<Vec<String>> = cells
        .iter()
        .map(|c| {
            let st = CellStats::of(rows, c);
            vec![
                c.0.clone(),
                c.1.to_string(),
                f(f64::from_bits(c.2), 1),
                f(st.link_rtt_ms.mean, 2),
                st.over.show(1),
                format!("{}/{}", st.trials_over, st.trials),
                st.replica_used.show(1),
                st.unconfirmed.show(1),
                st.failover_ms.show(2),
                f(st.decision_ms.mean, 3),
            ]
        })
        .collect();
    md_table(
        &[
            "strategy",
            "WAIT 1 after each decision",
            "replication delay one-way ms",
            "link RTT ms (measured)",
            "admitted over the limit",
            "trials over",
            "use the promoted replica saw",
            "admissions unconfirmed by WAIT",
            "kill+promote ms",
            "decision ms (mean)",
        ],
        &t,
    )
}

/// Over-admission against the replication delay: a panel per strategy, a
/// series with and without WAIT.
fn figure(ctx: &AnalysisCtx, rows: &[Row], cells: &[CellKey]) -> Result<String> {
    let mut fig = Figure::new(
        "failover-overadmission",
        &[],
        "failover (beyond the studies): admitted above the limit when the primary dies and its replica takes over",
        format!(
            "Admitted - limit per trial (negative: fewer than the limit admitted), mean with min-max whiskers over n = {} trials per point.",
            cells.iter().map(|c| CellStats::of(rows, c).trials).max().unwrap_or(0)
        ),
    )
    .columns(2);
    for s in distinct(cells.iter().map(|c| c.0.clone())) {
        let mut p = Panel::new(
            s.clone(),
            Axis::new("replication link one-way delay (ms)").ticks(
                distinct(cells.iter().map(|c| f64::from_bits(c.2).to_bits()))
                    .into_iter()
                    .map(f64::from_bits)
                    .collect(),
            ),
            Axis::new("admitted - limit (requests)"),
        )
        .dodge()
        .reference(Reference::limit("the limit (0 over)", 0.0));
        for w in [false, true] {
            let pts: Vec<Pt> = cells
                .iter()
                .filter(|c| c.0 == s && c.1 == w)
                .map(|c| Pt::summary(f64::from_bits(c.2), &CellStats::of(rows, c).over))
                .collect();
            if !pts.is_empty() {
                p = p.series(Series::line(
                    if w {
                        "WAIT 1 after each decision"
                    } else {
                        "no WAIT"
                    },
                    pts,
                ));
            }
        }
        fig = fig.panel(p);
    }
    fig.write(ctx)
}

/// Distinct values of a column joined with `/`.
fn joined(v: impl IntoIterator<Item = u64>) -> String {
    distinct(v)
        .iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join("/")
}

pub fn analyze(ctx: &AnalysisCtx) -> Result<(Vec<Measured>, Section)> {
    let Some(rows) = ctx.read_csv::<Row>("failover.csv")? else {
        return Ok((vec![], Section::new("failover", "Not run.\n")));
    };
    let mut md = format!(
        "Per trial a fresh primary + replica (replication link through a delay proxy when the delay is > 0), {} workers on one \
         client's limiter (limit {}), the primary SIGKILLed when it had admitted the limit and the \
         replica promoted at once; then the clients continue on it. Seed(s) {}.\n\n",
        joined(rows.iter().map(|r| r.workers)),
        joined(rows.iter().map(|r| r.limit)),
        joined(rows.iter().map(|r| r.seed))
    );
    let cells = cells(&rows);
    md = figure(ctx, &rows, &cells)? + &md;
    md.push_str(&cell_table(&rows, &cells));
    let lost = Summary::of(&rows.iter().map(|r| r.lost_calls as f64).collect::<Vec<_>>());
    md.push_str(&format!(
        "\nNegative values mean fewer than the limit were admitted in all: calls in flight when the primary was killed ({} per trial on average, at most {}) got no reply, so no client counted them, while a decision the primary took and replicated before dying still counts against the limit on the promoted replica.\n",
        f(lost.mean, 1),
        f(lost.max, 0)
    ));
    let worst = cells
        .iter()
        .map(|c| (c, CellStats::of(&rows, c)))
        .max_by(|a, b| a.1.over.mean.total_cmp(&b.1.over.mean));
    let finding = worst
        .map(|(c, st)| {
            format!(
                "the most over-admission was {} requests on average ({} of {} trials over the limit) with {} and a {} ms one-way replication delay{}; with WAIT 1 after each decision no trial went over the limit in {} of {} settings.",
                f(st.over.mean, 1),
                st.trials_over,
                st.trials,
                c.0,
                f(f64::from_bits(c.2), 1),
                if c.1 { ", WAIT 1 after each decision" } else { ", no WAIT" },
                cells.iter().filter(|c| c.1 && CellStats::of(&rows, c).trials_over == 0).count(),
                cells.iter().filter(|c| c.1).count(),
            )
        })
        .unwrap_or_default();
    Ok((vec![], Section::new("failover", md).finding(finding)))
}
