//! The figures of `script-survival`: a pass/fail grid of what each check
//! answered (rows: the scenarios under each `replica-read-only` setting;
//! columns: the checks and clients; each cell coloured by whether the
//! outcome is the one B6.2-B6.5 expect, its text the outcome and the trials
//! that succeeded), drawn with the chart library's heatmap; and B6.5's cost
//! of the client that falls back to EVAL, a chart of calls per trial.

use super::{Rows, check_words, expected};
use limitbench_analysis::figure::{Axis, Figure, Panel, Pt, Reference, Series};
use limitbench_analysis::figure::{ClaimReference, SummaryPoint, WriteFigure};
use limitbench_analysis::stats::Summary;
use limitbench_analysis::table::distinct;
use limitbench_analysis::{AnalysisCtx, FigureInfo};
use limitbench_base::error::Result;
use limitbench_plot::heatmap::{Category, HeatCell, HeatRow, Heatmap, tint};

/// The grid's file stem.
pub const GRID: &str = "b6_2-b6_5-script-survival";

/// The grid's categories, in legend order.
const AS_EXPECTED_OK: usize = 0;
const AS_EXPECTED_FAILS: usize = 1;
const NOT_AS_EXPECTED: usize = 2;
const NO_EXPECTATION: usize = 3;

/// A scenario in words.
fn scenario_words(s: &str) -> String {
    match s {
        "primary" => "primary, untouched".into(),
        "restart" => "primary after a restart".into(),
        "replica" => "on the replica".into(),
        "promoted" => "replica after promotion".into(),
        x => x.replace('_', " "),
    }
}

/// One cell: the outcome of `v` (the trials of one check in one scenario)
/// against the expected one (1: succeeds, 0: fails; None: no expectation).
fn cell(v: &[&super::Row], want: Option<f64>) -> HeatCell {
    let ok = v.iter().filter(|r| r.ok).count();
    let share = ok as f64 / v.len() as f64;
    // What a failing trial answered (NOSCRIPT, READONLY, false, ...).
    let fails = distinct(
        v.iter()
            .filter(|r| !r.ok)
            .map(|r| r.outcome.clone())
            .collect::<Vec<_>>(),
    );
    let outcome = if ok == v.len() {
        "ok".to_string()
    } else {
        fails.join(" / ")
    };
    let category = match want {
        None => NO_EXPECTATION,
        Some(w) if (share - w).abs() > 1e-9 => NOT_AS_EXPECTED,
        Some(w) if w > 0.5 => AS_EXPECTED_OK,
        Some(_) => AS_EXPECTED_FAILS,
    };
    HeatCell {
        category,
        lines: vec![outcome, format!("{ok}/{} ok", v.len())],
        value: Some(share),
        hatched: false,
        outlined: category == NOT_AS_EXPECTED,
    }
}

/// B6.2-B6.5 as a grid of checks by scenario, and B6.5's client cost.
pub(super) fn figure(ctx: &AnalysisCtx, rows: &Rows) -> Result<String> {
    let checks = distinct(rows.0.iter().map(|r| r.check.clone()));
    let scenarios = distinct(rows.0.iter().map(|r| r.scenario.clone()));
    let ids = ["B6.2", "B6.3", "B6.4", "B6.5"];
    let published = ids
        .iter()
        .filter_map(|id| {
            ctx.claim(id)
                .map(|c| format!("{} {}", c.id, c.published_text))
        })
        .collect::<Vec<_>>()
        .join("; ");
    let mut heat_rows = Vec::new();
    for ro in distinct(rows.0.iter().map(|r| r.replica_read_only.clone())) {
        for sc in &scenarios {
            let cells: Vec<Option<HeatCell>> = checks
                .iter()
                .map(|c| {
                    let v = rows.sel(Some(&ro), sc, c);
                    (!v.is_empty()).then(|| cell(&v, expected(&ro, sc, c)))
                })
                .collect();
            if cells.iter().any(Option::is_some) {
                heat_rows.push(HeatRow {
                    label: scenario_words(sc),
                    note: format!("replica-read-only {ro}"),
                    cells,
                });
            }
        }
    }
    let title = format!(
        "{}: what survives a restart, a replica, a promotion: scripts and functions",
        ids.join(", ")
    );
    let grid = Heatmap {
        name: GRID.into(),
        title: title.clone(),
        caption: format!(
            "Each cell: what the check answered in every trial of that scenario (ok, or the failing trials' reply: NOSCRIPT, READONLY, SCRIPT EXISTS false) and how many trials succeeded; coloured by whether that is the outcome the claims lead one to expect (behaviour claims, published: {published}), framed where it is not. On a read-only replica (replica-read-only yes, Redis's default) every write is refused with READONLY: FCALL of the writing token-bucket function and the writing clients fail there although the library is present (FUNCTION LIST, FCALL_RO), so B6.4's \"works on the replica\" is judged with FCALL_RO and on a writable replica. Clients ran only where the node or its cache changed (no primary cell); blank: not run. Every reply's text is in the appendix."
        ),
        columns: checks.iter().map(|c| check_words(c)).collect(),
        rotate_columns: false,
        categories: vec![
            Category {
                name: "as expected: succeeds".into(),
                rgb: tint::GREEN,
            },
            Category {
                name: "as expected: fails (the cache is gone, or a write is refused)".into(),
                rgb: tint::BLUE,
            },
            Category {
                name: "not as the claims expect".into(),
                rgb: tint::VERMILLION,
            },
            Category {
                name: "no expectation".into(),
                rgb: tint::GREY,
            },
        ],
        hatch_label: String::new(),
        outline_label: "not as the claims expect".into(),
        rows: heat_rows,
    };
    let mut md = String::new();
    if grid.rows.is_empty() {
        ctx.warnings
            .borrow_mut()
            .push(format!("figure {GRID} has no cells in this run; not drawn"));
    } else {
        grid.write_to(&ctx.figures_dir)?;
        ctx.figures.borrow_mut().push(FigureInfo {
            file: format!("figures/{GRID}.png"),
            claims: ids.iter().map(|s| s.to_string()).collect(),
            title: title.clone(),
        });
        md += &format!(
            "![{t}](figures/{GRID}.png)\n\n*Figure {GRID}.* {} ([SVG](figures/{GRID}.svg), [cells drawn](figures/{GRID}.csv))\n\n",
            grid.caption,
            t = title.replace(['[', ']'], "")
        );
    }
    let fig = Figure::new(
        "b6_5-fallback-client",
        &["B6.5"],
        "the client that resends with EVAL on NOSCRIPT: what the fallback costs",
        "The fallback client's failed calls and extra round trips per trial after a restart or promotion, mean with min-max whiskers ({n}).",
    )
    .panel(b65_panel(ctx, rows));
    md += &fig.write_if_any(ctx)?;
    Ok(md)
}

/// B6.5's quantity: the fallback client's failed calls and extra round
/// trips per trial, after a restart and after promotion.
fn b65_panel(ctx: &AnalysisCtx, rows: &Rows) -> Panel {
    let scen = ["restart", "promoted"];
    let fb: Vec<Vec<&super::Row>> = scen
        .iter()
        .map(|s| rows.sel(None, s, "client:evalsha-fallback"))
        .collect();
    let pts = |f: &dyn Fn(&super::Row) -> f64| -> Vec<Pt> {
        fb.iter()
            .enumerate()
            .filter(|(_, v)| !v.is_empty())
            .map(|(i, v)| {
                let xs: Vec<f64> = v.iter().map(|r| f(r)).collect();
                Pt::summary(i as f64, &Summary::of(&xs))
            })
            .collect()
    };
    let mut p = Panel::new(
        "B6.5: the client that resends with EVAL on NOSCRIPT",
        Axis::new("scenario (both replica-read-only settings)"),
        Axis::new("per client per trial (calls)")
            .range(0.0, 2.0)
            .ticks(vec![0.0, 1.0, 2.0]),
    )
    .categories(vec!["after a restart".into(), "after promotion".into()])
    // Two quantities of one client, not strategies: the neutral looks.
    .series(Series::points("failed calls (NOSCRIPT)", pts(&|r| r.failed_calls as f64)).neutral(0))
    .series(Series::points("extra round trips", pts(&|r| r.extra_round_trips as f64)).neutral(1));
    if let Some(c) = ctx.claim("B6.5") {
        let r = Reference::published(c, 0).labelled(format!(
            "B6.5 published: {} (behaviour claim)",
            c.published_text
        ));
        // One line across the panel: the markers, drawn over it and white
        // inside, stay readable.
        p = p.reference(r);
    }
    p
}
