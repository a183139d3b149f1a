//! The scorecard's files: `scorecard.csv` (one row per cell), `scorecard.md`
//! (strategies as rows, properties as columns, value + verdict; then every
//! cell's threshold and detail), `scorecard.svg` (the table coloured by
//! verdict) and `scorecard.json` (the header: size, target, times; and
//! every cell, for CI).

use std::path::Path;

use limitbench_plot::figure::num;
use limitbench_plot::grid::{Grid, GridCell, GridRow, write_grid_svg};

use super::{PROPERTIES, Scorecard, ScorecardCell};
use limitbench_analysis::scorecard::CellVerdict;
use limitbench_base::error::{Error, Result};

fn io(what: &Path, e: impl std::fmt::Display) -> Error {
    Error::Other(format!("writing {}: {e}", what.display()))
}

/// A cell as the table shows it: `1 pass`, `not-run`, `error`.
pub fn short(c: &ScorecardCell) -> String {
    match (c.verdict, c.value) {
        (CellVerdict::NotRun, _) => "not-run".into(),
        (CellVerdict::Error, _) => "error".into(),
        (v, Some(x)) => format!("{} {}", num(x), v.as_str()),
        (v, None) => v.as_str().into(),
    }
}

/// What a strategy's seconds are, said in scorecard.json and .md.
pub const SECONDS_ARE: &str = "the sum of the strategy's parts (its start and each probe); with lanes its lane probes ran beside other strategies', so the strategies' seconds add to more than the total";

/// How the strategies were scheduled, for the header.
fn schedule_line(sc: &Scorecard) -> String {
    if sc.lanes > 1 {
        format!(
            "{} lanes: each strategy's `works` first, alone; then its probes that wait on windows or fill a server, {} strategies at a time on servers of their own; then, one strategy at a time with nothing beside, the probes that time CPU or throughput (results[].probes in scorecard.json: which ran beside which)",
            sc.lanes, sc.lanes
        )
    } else {
        "one strategy after another".into()
    }
}

pub fn write_all(dir: &Path, sc: &Scorecard) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    let p = dir.join("scorecard.csv");
    let mut w = csv::Writer::from_path(&p).map_err(|e| io(&p, e))?;
    w.write_record([
        "strategy",
        "property",
        "value",
        "unit",
        "threshold",
        "verdict",
        "detail",
    ])
    .map_err(|e| io(&p, e))?;
    for r in &sc.results {
        for c in &r.cells {
            w.write_record([
                c.strategy.as_str(),
                c.property,
                &c.value.map(|v| v.to_string()).unwrap_or_default(),
                c.unit,
                &c.threshold,
                c.verdict.as_str(),
                &c.detail,
            ])
            .map_err(|e| io(&p, e))?;
        }
    }
    w.flush().map_err(|e| io(&p, e))?;
    let p = dir.join("scorecard.md");
    std::fs::write(&p, markdown(sc)).map_err(|e| io(&p, e))?;
    // The header (size, target, times, clocks) and, for CI, every cell as
    // scorecard.csv has it (`results`: per strategy its clock, seconds and cells).
    let p = dir.join("scorecard.json");
    let header = serde_json::json!({
        "size": sc.size,
        "target": sc.target,
        "total_seconds": sc.total_seconds,
        "lanes": sc.lanes,
        "seconds_per_strategy_are": SECONDS_ARE,
        "seconds_per_strategy": sc.results.iter().map(|r| (r.strategy.clone(), r.seconds)).collect::<std::collections::BTreeMap<_, _>>(),
        "clock_per_strategy": sc.results.iter().map(|r| (r.strategy.clone(), r.clock.clone())).collect::<std::collections::BTreeMap<_, _>>(),
        "results": sc.results,
    });
    std::fs::write(
        &p,
        serde_json::to_string_pretty(&header).unwrap_or_default(),
    )
    .map_err(|e| io(&p, e))?;
    svg(&dir.join("scorecard.svg"), sc)
}

pub fn markdown(sc: &Scorecard) -> String {
    let mut s = String::new();
    s.push_str(&format!(
        "# Scorecard\n\nSize {}, {:.0} s in all, {}. ScorecardServer: `{}`. Time (s) per strategy: {}.\n\nEach cell is the measured value and its verdict; `not-run` and `error` cells say why below. Columns:\n\n",
        sc.size,
        sc.total_seconds,
        schedule_line(sc),
        sc.target,
        SECONDS_ARE
    ));
    for (p, what) in PROPERTIES {
        s.push_str(&format!("- `{p}`: {what}\n"));
    }
    s.push('\n');
    let mut head = vec!["strategy".to_string(), "clock".into(), "time (s)".into()];
    head.extend(PROPERTIES.iter().map(|(p, _)| p.to_string()));
    s.push_str(&format!("| {} |\n", head.join(" | ")));
    s.push_str(&format!("|{}\n", "---|".repeat(head.len())));
    for r in &sc.results {
        let mut row = vec![
            r.strategy.clone(),
            r.clock.clone(),
            format!("{:.1}", r.seconds),
        ];
        for (p, _) in PROPERTIES {
            row.push(
                r.cells
                    .iter()
                    .find(|c| c.property == *p)
                    .map(short)
                    .unwrap_or_else(|| "-".into()),
            );
        }
        s.push_str(&format!("| {} |\n", row.join(" | ")));
    }
    s.push_str("\n## Every cell: threshold and detail\n\n");
    for r in &sc.results {
        s.push_str(&format!(
            "### {} (clock: {}, {:.1} s)\n\n",
            r.strategy, r.clock, r.seconds
        ));
        for c in &r.cells {
            s.push_str(&format!(
                "- `{}` **{}**{}{}: {}\n",
                c.property,
                short(c),
                if c.unit.is_empty() {
                    String::new()
                } else {
                    format!(" {}", c.unit)
                },
                if c.threshold.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", c.threshold)
                },
                c.detail
            ));
        }
        s.push('\n');
    }
    s
}

fn colour(v: CellVerdict) -> (u8, u8, u8) {
    match v {
        CellVerdict::Pass => (120, 200, 120),
        CellVerdict::Warn => (240, 200, 90),
        CellVerdict::Fail => (230, 110, 100),
        CellVerdict::NotRun => (220, 220, 220),
        CellVerdict::Error => (150, 120, 200),
    }
}

/// The table as an SVG heatmap: one row per strategy, one column per property.
pub fn svg(path: &Path, sc: &Scorecard) -> Result<()> {
    let grid = Grid {
        title: format!(
            "limitbench scorecard (size {}): green pass, yellow warn, red fail, grey not-run, purple error",
            sc.size
        ),
        columns: PROPERTIES.iter().map(|(p, _)| p.to_string()).collect(),
        rows: sc
            .results
            .iter()
            .map(|r| GridRow {
                label: format!("{} ({})", r.strategy, r.clock),
                cells: PROPERTIES
                    .iter()
                    .map(|(p, _)| {
                        r.cells.iter().find(|c| c.property == *p).map(|c| GridCell {
                            text: match (c.verdict, c.value) {
                                (CellVerdict::NotRun, _) => "not-run".to_string(),
                                (CellVerdict::Error, _) => "error".to_string(),
                                (_, Some(v)) => num(v),
                                _ => String::new(),
                            },
                            rgb: colour(c.verdict),
                        })
                    })
                    .collect(),
            })
            .collect(),
    };
    write_grid_svg(path, &grid)
}
