//! Analysis of `failover` (beyond the studies, no published claim):
//! admissions above the limit across a primary kill + replica promotion, by
//! strategy, WAIT after each decision, and replication-link delay.
//!
//! Metrics (rows -> numbers): `cells` and `CellStats`; presentation:
//! `cell_table`, `figure` and `analyze`.
//!
//! Unit tests of the metrics: `tests.rs` in this folder.

use super::rows::Row;
use crate::analysis::chart::{Axes, Series, Style, xy_chart};
use crate::analysis::stats::Summary;
use crate::analysis::table::{distinct, f, md_table};
use crate::analysis::{AnalysisCtx, Measured, Section};
use crate::error::Result;

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

/// Over-admission against the replication delay, one line per strategy and WAIT.
fn figure(ctx: &AnalysisCtx, rows: &[Row], cells: &[CellKey]) -> Result<String> {
    let (path, link) = ctx.figure("failover-overadmission.svg");
    let mut series = Vec::new();
    for (s, w) in distinct(cells.iter().map(|c| (c.0.clone(), c.1))) {
        let mut pts = Vec::new();
        let mut rg = Vec::new();
        for d in distinct(cells.iter().filter(|c| c.0 == s && c.1 == w).map(|c| c.2)) {
            let sm = CellStats::of(rows, &(s.clone(), w, d)).over;
            let x = f64::from_bits(d);
            pts.push((x, sm.mean));
            rg.push((x, sm.min, sm.max));
        }
        series.push(
            Series::new(
                format!("{s}{}", if w { " + WAIT 1" } else { "" }),
                pts,
                if w { Style::Dashed } else { Style::LinePoints },
            )
            .with_ranges(rg),
        );
    }
    xy_chart(
        &path,
        &Axes {
            title: "Failover (beyond the studies): admitted above the limit vs replication delay"
                .into(),
            x_label: "replication link one-way delay (ms)".into(),
            y_label: "admitted - limit (mean, min..max)".into(),
            ..Default::default()
        },
        &series,
    )?;
    Ok(format!("\n![failover over-admission]({link})\n"))
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
         replica promoted at once; then the clients continue on it. Seed(s) {:?}.\n\n",
        joined(rows.iter().map(|r| r.workers)),
        joined(rows.iter().map(|r| r.limit)),
        distinct(rows.iter().map(|r| r.seed))
    );
    let cells = cells(&rows);
    md.push_str(&cell_table(&rows, &cells));
    md.push_str(&figure(ctx, &rows, &cells)?);
    Ok((vec![], Section::new("failover", md)))
}
