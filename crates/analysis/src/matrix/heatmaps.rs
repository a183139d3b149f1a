//! The matrix as pictures (the chart library's [`Heatmap`]):
//!
//! - [`claims_heatmap`] (`figures/matrix-claims-heatmap.*`): one row per
//!   claim row that counts in the tally (the rows that describe the study,
//!   A0's trial count and B0's time, are left out and the caption says
//!   why: a matrix runs part of the battery, so they are no finding about
//!   a server), one column per server, each cell coloured by its verdict
//!   ([`VERDICT_TINTS`]) with the value drawn and its change against the
//!   study's server written in it; framed where the difference survives the
//!   rerun of the study's server, hatched where the claim rests on
//!   disturbed trials;
//! - [`scorecard_heatmaps`] (`figures/matrix-scorecard-<server>.*`): per
//!   server, strategies by properties coloured by the scorecard's verdict
//!   ([`CARD_TINTS`]) with the value in the cell, framed where the verdict
//!   differs between servers.

use std::collections::BTreeMap;

use limitbench_plot::heatmap::{Category, HeatCell, HeatRow, Heatmap, tint};

use super::rows::{MatrixRow, default_differs};
use super::scorecard::Cards;
use super::servers::{Identity, STUDY_RERUN, STUDY_SERVER};
use crate::claims::Verdict;

/// The file stem of the claims' heatmap under `figures/`.
pub const CLAIMS_HEATMAP: &str = "matrix-claims-heatmap";

/// The file stem of `server`'s scorecard heatmap under `figures/`.
pub fn scorecard_heatmap_name(server: &str) -> String {
    format!("matrix-scorecard-{server}")
}

/// One fixed fill per claim verdict, in the judge's order ([`Verdict::all`]).
pub const VERDICT_TINTS: [(Verdict, (u8, u8, u8)); 5] = [
    (Verdict::Reproduced, tint::GREEN),
    (Verdict::ReproducedWithAssumption, tint::BLUE),
    (Verdict::NotReproduced, tint::VERMILLION),
    (Verdict::Inconclusive, tint::YELLOW),
    (Verdict::NotRun, tint::GREY),
];

/// One fixed fill per scorecard verdict.
pub const CARD_TINTS: [(&str, (u8, u8, u8)); 5] = [
    ("pass", tint::GREEN),
    ("warn", tint::YELLOW),
    ("fail", tint::VERMILLION),
    ("error", tint::PURPLE),
    ("not-run", tint::GREY),
];

/// A number with three significant digits (at most one decimal past 100).
fn short(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let digits = (2 - v.abs().log10().floor() as i32).max(0) as usize;
    format!("{v:.digits$}")
}

/// The change of `v` against `base` in brackets (` (-22%)`, ` (-0.4%)`
/// below 1%), or nothing when it is under 0.05% or `base` is 0.
pub fn change(v: f64, base: f64) -> String {
    if base.abs() <= 1e-12 {
        return String::new();
    }
    let pct = (v / base - 1.0) * 100.0;
    if pct.abs() < 0.05 {
        String::new()
    } else if pct.abs() < 1.0 {
        format!(" ({pct:+.1}%)")
    } else {
        format!(" ({pct:+.0}%)")
    }
}

/// A column's heading: the server's name, product and version, allocator.
fn server_heading(server: &str, identities: &BTreeMap<String, Identity>) -> String {
    let id = identities.get(server);
    let what = id
        .map(|i| format!("{} {}", i.product, i.version))
        .unwrap_or_default();
    let alloc = if server == STUDY_RERUN {
        "rerun, next seed".to_string()
    } else {
        id.map(|i| i.mem_allocator.clone()).unwrap_or_default()
    };
    [server.to_string(), what, alloc]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

/// A verdict in the few words a cell has room for.
fn verdict_words(base: &str, verdict: &str) -> String {
    let words = match base {
        "reproduced-with-assumption" => "with assumption",
        other => other,
    }
    .replace('-', " ");
    if verdict.contains("(disturbed)") {
        format!("{words}, disturbed")
    } else if verdict.contains("(borderline)") {
        format!("{words}, borderline")
    } else {
        words
    }
}

/// The claims by servers, coloured by verdict; None without rows. The
/// claims of `apart` (those that describe the study or our policy, not a
/// claim to reproduce: A0, B0) are not drawn; the caption names them.
pub fn claims_heatmap(
    rows: &[MatrixRow],
    servers: &[String],
    identities: &BTreeMap<String, Identity>,
    apart: &[String],
) -> Option<Heatmap> {
    let left_out: Vec<&str> = apart
        .iter()
        .filter(|id| rows.iter().any(|r| r.id == **id))
        .map(String::as_str)
        .collect();
    let rows: Vec<&MatrixRow> = rows.iter().filter(|r| !apart.contains(&r.id)).collect();
    if rows.is_empty() || servers.is_empty() {
        return None;
    }
    let apart_text = if left_out.is_empty() {
        String::new()
    } else {
        format!(
            " Not drawn: {} (the study's own trial count and time: they describe the study, not a claim to reproduce, and a matrix runs only part of the battery, so their verdict says nothing about a server; matrix-claims.md lists them).",
            left_out.join(", ")
        )
    };
    let category = |base: &str| {
        VERDICT_TINTS
            .iter()
            .position(|(v, _)| v.as_str() == base)
            .unwrap_or(VERDICT_TINTS.len() - 1)
    };
    let heat_rows = rows
        .iter()
        .map(|&r| {
            let mut label = r.id.clone();
            if !r.setting.is_empty() {
                label += &format!(" ({})", r.setting);
            }
            // The published value's first clause: the one the value drawn meets.
            let published = r.published_text.split(';').next().unwrap_or("").trim();
            if !published.is_empty() {
                label += &format!(", published {published}");
            }
            let mut note = r.value_unit.clone();
            if r.band.is_none() && r.unit != "behaviour" {
                note += ", not judged: its shape is";
            }
            let study = r.cells.get(STUDY_SERVER).and_then(|c| c.value);
            let cells = servers
                .iter()
                .map(|s| {
                    let c = r.cells.get(s)?;
                    let mut first = match c.value {
                        _ if r.unit == "behaviour" => {
                            format!("{} of {} hold", c.conditions.0, c.conditions.1)
                        }
                        Some(v) => short(v),
                        None => "no value".into(),
                    };
                    if let (Some(v), Some(b)) = (c.value, study)
                        && s != STUDY_SERVER
                        && r.unit != "behaviour"
                    {
                        first += &change(v, b);
                    }
                    if default_differs(&r.id, s, identities).is_some() {
                        first += " *";
                    }
                    Some(HeatCell {
                        category: category(&c.base),
                        lines: vec![first, verdict_words(&c.base, &c.verdict)],
                        value: c.value,
                        hatched: c.disturbed,
                        outlined: r.surviving().contains(s),
                    })
                })
                .collect();
            HeatRow { label, note, cells }
        })
        .collect();
    let rerun = servers.iter().any(|s| s == STUDY_RERUN);
    let hatched = rows
        .iter()
        .flat_map(|r| r.cells.values())
        .filter(|c| c.disturbed)
        .count();
    Some(Heatmap {
        name: CLAIMS_HEATMAP.into(),
        title: format!(
            "The claims on every server: the verdict (colour) and the value; framed where a server differs from {STUDY_SERVER}{}",
            if rerun {
                " past what its rerun moves"
            } else {
                ""
            }
        ),
        caption: format!(
            "Each cell: the claim's value on that server (its first, where it has several; for a behaviour, the conditions that hold), the change against {STUDY_SERVER} in brackets, and the verdict. {} Hatched ({hatched} cells here): the claim rests on trials that were disturbed (schedule.csv). *: this server's own default of the setting the claim depends on is not {STUDY_SERVER}'s (matrix-claims.md names it).{apart_text}",
            if rerun {
                format!(
                    "Framed: a different verdict (or side of the tolerance) than on {STUDY_SERVER} that survives its rerun ({STUDY_RERUN} kept the verdict and moved the value less)."
                )
            } else {
                format!(
                    "Framed: a different verdict (or side of the tolerance) than on {STUDY_SERVER} (no rerun to tell noise from a difference)."
                )
            }
        ),
        columns: servers
            .iter()
            .map(|s| server_heading(s, identities))
            .collect(),
        rotate_columns: false,
        categories: VERDICT_TINTS
            .iter()
            .map(|(v, rgb)| Category {
                name: v.as_str().into(),
                rgb: *rgb,
            })
            .collect(),
        hatch_label: "disturbed trials".into(),
        outline_label: "differs from redis-7.0, survives the rerun".into(),
        rows: heat_rows,
    })
}

/// One heatmap per server with a scorecard: strategies by properties.
pub fn scorecard_heatmaps(cards: &Cards, identities: &BTreeMap<String, Identity>) -> Vec<Heatmap> {
    let units: BTreeMap<&str, &str> = cards
        .cells
        .iter()
        .flat_map(|((_, p), per)| per.values().map(move |x| (p.as_str(), x.2.as_str())))
        .filter(|(_, u)| !u.is_empty())
        .collect();
    let columns: Vec<String> = cards
        .properties
        .iter()
        .map(|p| match units.get(p.as_str()) {
            Some(u) => format!("{p} ({u})"),
            None => p.clone(),
        })
        .collect();
    cards
        .servers
        .iter()
        .map(|server| {
            let rows = cards
                .strategies
                .iter()
                .map(|st| HeatRow {
                    label: st.clone(),
                    note: String::new(),
                    cells: cards
                        .properties
                        .iter()
                        .map(|p| {
                            let key = (st.clone(), p.clone());
                            let (verdict, value, _) = cards.cells.get(&key)?.get(server)?;
                            let category = CARD_TINTS.iter().position(|(v, _)| v == verdict)?;
                            let v = value.parse::<f64>().ok();
                            let text = match (verdict.as_str(), v) {
                                ("not-run" | "error", _) => verdict.clone(),
                                (_, Some(v)) => short(v),
                                (_, None) => value.clone(),
                            };
                            Some(HeatCell {
                                category,
                                lines: vec![text],
                                value: v,
                                hatched: false,
                                outlined: cards.servers.len() > 1 && cards.differs(&key),
                            })
                        })
                        .collect(),
                })
                .collect();
            let who = identities
                .get(server)
                .map(|i| format!("{server} ({})", i.label()))
                .unwrap_or_else(|| server.clone());
            Heatmap {
                name: scorecard_heatmap_name(server),
                title: format!(
                    "The scorecard on {who}: each strategy's verdict per property (colour) and value; framed where the verdict differs between servers"
                ),
                caption: format!(
                    "Rows: strategies; columns: the scorecard's properties (unit in brackets; each property's thresholds are in {server}/scorecard.md). Framed: the verdict of this cell is not the same on every server with a scorecard ({}).",
                    cards.servers.join(", ")
                ),
                columns: columns.clone(),
                rotate_columns: true,
                categories: CARD_TINTS
                    .iter()
                    .map(|(v, rgb)| Category {
                        name: v.to_string(),
                        rgb: *rgb,
                    })
                    .collect(),
                hatch_label: String::new(),
                outline_label: "verdict differs between servers".into(),
                rows,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::rows::MatrixCell;

    fn cell(base: &str, v: f64, disturbed: bool) -> MatrixCell {
        MatrixCell {
            verdict: base.into(),
            base: base.into(),
            point_inside: base == "reproduced",
            display: format!("{v}"),
            value: Some(v),
            interval: None,
            disturbed,
            conditions: (1, 1),
        }
    }

    fn row(id: &str, cells: &[(&str, MatrixCell)]) -> MatrixRow {
        MatrixRow {
            id: id.into(),
            setting: String::new(),
            unit: "x".into(),
            published: Some(3.6),
            published_text: "3.6x".into(),
            value_unit: "x".into(),
            band: Some((3.1, 4.1)),
            cells: cells
                .iter()
                .map(|(s, c)| (s.to_string(), c.clone()))
                .collect(),
        }
    }

    #[test]
    fn the_claims_heatmap_has_a_cell_per_claim_and_server_in_its_verdicts_colour() {
        let servers: Vec<String> = [STUDY_SERVER, "valkey-9.1", STUDY_RERUN]
            .map(String::from)
            .to_vec();
        let rows = vec![
            row(
                "B3.2",
                &[
                    (STUDY_SERVER, cell("reproduced", 3.64, false)),
                    ("valkey-9.1", cell("not-reproduced", 2.6, false)),
                    (STUDY_RERUN, cell("reproduced", 3.62, false)),
                ],
            ),
            row(
                "B7.1",
                &[
                    (STUDY_SERVER, cell("reproduced", 0.33, false)),
                    ("valkey-9.1", cell("inconclusive", 0.3, true)),
                    (STUDY_RERUN, cell("reproduced", 0.32, false)),
                ],
            ),
        ];
        let m = claims_heatmap(&rows, &servers, &BTreeMap::new(), &[]).unwrap();
        assert_eq!(m.rows.len(), 2);
        // A claim that describes the study is left out, and the caption says so.
        let apart = claims_heatmap(&rows, &servers, &BTreeMap::new(), &["B7.1".into()]).unwrap();
        assert_eq!(apart.rows.len(), 1);
        assert!(
            apart.rows[0].label.starts_with("B3.2"),
            "{}",
            apart.rows[0].label
        );
        assert!(
            apart.caption.contains("Not drawn: B7.1"),
            "{}",
            apart.caption
        );
        assert!(!m.caption.contains("Not drawn"), "{}", m.caption);
        assert!(m.rows.iter().all(|r| r.cells.len() == 3));
        let c = |i: usize, j: usize| m.rows[i].cells[j].clone().unwrap();
        let name = |k: usize| m.categories[k].name.clone();
        let rgb = |k: usize| m.categories[k].rgb;
        assert_eq!(name(c(0, 0).category), "reproduced");
        assert_eq!(rgb(c(0, 0).category), tint::GREEN);
        assert_eq!(name(c(0, 1).category), "not-reproduced");
        assert_eq!(rgb(c(0, 1).category), tint::VERMILLION);
        assert_eq!(rgb(c(1, 1).category), tint::YELLOW);
        // The value and its change against the study's server, in the cell.
        assert_eq!(c(0, 1).lines[0], "2.60 (-29%)");
        assert_eq!(c(0, 0).lines[0], "3.64");
        assert_eq!(c(0, 2).lines[0], "3.62 (-0.5%)");
        assert_eq!(change(3.6401, 3.64), "");
        // Valkey's differences lie further from Redis 7.0 than the rerun's
        // (B3.2 1.04 vs 0.02, B7.1 0.03 vs 0.01): framed; the study's
        // server and its rerun never are. B7.1 on Valkey rests on disturbed
        // trials: hatched.
        assert!(c(0, 1).outlined && !c(0, 0).outlined && !c(0, 2).outlined);
        assert!(c(1, 1).outlined);
        assert!(c(1, 1).hatched && !c(1, 0).hatched);
        // A rerun that moves as far as Valkey: no frame.
        let mut noisy = rows.clone();
        noisy[0]
            .cells
            .insert(STUDY_RERUN.into(), cell("reproduced", 2.5, false));
        noisy[0].cells.get_mut(STUDY_RERUN).unwrap().point_inside = true;
        let m2 = claims_heatmap(&noisy, &servers, &BTreeMap::new(), &[]).unwrap();
        assert!(!m2.rows[0].cells[1].as_ref().unwrap().outlined);
        // Every verdict has its own fill.
        let mut fills: Vec<_> = VERDICT_TINTS.iter().map(|t| t.1).collect();
        fills.dedup();
        assert_eq!(fills.len(), VERDICT_TINTS.len());
        // Written: one CSV row per claim and server.
        let dir = tempfile::tempdir().unwrap();
        m.write_to(dir.path()).unwrap();
        let csv =
            std::fs::read_to_string(dir.path().join(format!("{CLAIMS_HEATMAP}.csv"))).unwrap();
        assert_eq!(csv.lines().count(), 1 + 2 * 3, "{csv}");
        assert!(dir.path().join(format!("{CLAIMS_HEATMAP}.png")).exists());
    }
}
