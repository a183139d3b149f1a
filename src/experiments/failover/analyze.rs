//! Analysis of `failover` (beyond the studies, no published claim):
//! admissions above the limit across a primary kill + replica promotion, by
//! strategy, WAIT after each decision, and replication-link delay.

use crate::analysis::chart::{Axes, Series, Style, xy_chart};
use crate::analysis::table::{distinct, f, md_table};
use crate::analysis::{AnalysisCtx, Measured, Section};
use crate::analysis::stats::Summary;
use crate::error::Result;
use super::Row;

pub fn analyze(ctx: &AnalysisCtx) -> Result<(Vec<Measured>, Section)> {
    let Some(rows) = ctx.read_csv::<Row>("failover.csv")? else {
        return Ok((vec![], Section::new("failover", "Not run.\n")));
    };
    let mut md = format!(
        "Per trial a fresh primary + replica (replication link through a delay proxy when the delay is > 0), {} workers on one \
         client's limiter (limit {}), the primary SIGKILLed when it had admitted the limit and the \
         replica promoted at once; then the clients continue on it. Seed(s) {:?}.\n\n",
        distinct(rows.iter().map(|r| r.workers))
            .iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join("/"),
        distinct(rows.iter().map(|r| r.limit))
            .iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join("/"),
        distinct(rows.iter().map(|r| r.seed))
    );
    let cells = distinct(
        rows.iter()
            .map(|r| (r.strategy.clone(), r.wait, r.repl_delay_ms.to_bits())),
    );
    let mut t = Vec::new();
    for (s, w, d) in &cells {
        let rs: Vec<&Row> = rows
            .iter()
            .filter(|r| &r.strategy == s && r.wait == *w && r.repl_delay_ms.to_bits() == *d)
            .collect();
        let col =
            |g: &dyn Fn(&Row) -> f64| Summary::of(&rs.iter().map(|r| g(r)).collect::<Vec<_>>());
        t.push(vec![
            s.clone(),
            w.to_string(),
            f(f64::from_bits(*d), 1),
            f(col(&|r| r.repl_rtt_ms).mean, 2),
            col(&|r| r.over_admitted as f64).show(1),
            format!(
                "{}/{}",
                rs.iter().filter(|r| r.over_admitted > 0).count(),
                rs.len()
            ),
            col(&|r| r.replica_used_at_promotion).show(1),
            col(&|r| r.unconfirmed_pre as f64).show(1),
            col(&|r| r.failover_ms).show(2),
            f(col(&|r| r.decision_rtt_mean_ms).mean, 3),
        ]);
    }
    md.push_str(&md_table(
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
    ));
    let (path, link) = ctx.figure("failover-overadmission.svg");
    let mut series = Vec::new();
    for (s, w) in distinct(cells.iter().map(|c| (c.0.clone(), c.1))) {
        let mut pts = Vec::new();
        let mut rg = Vec::new();
        for d in distinct(cells.iter().filter(|c| c.0 == s && c.1 == w).map(|c| c.2)) {
            let v: Vec<f64> = rows
                .iter()
                .filter(|r| r.strategy == s && r.wait == w && r.repl_delay_ms.to_bits() == d)
                .map(|r| r.over_admitted as f64)
                .collect();
            let sm = Summary::of(&v);
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
    md.push_str(&format!("\n![failover over-admission]({link})\n"));
    Ok((vec![], Section::new("failover", md)))
}
