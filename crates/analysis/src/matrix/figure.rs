//! The matrix's figure (`figures/matrix-differ.*`): the claims that differ
//! between servers, the judged value per server beside the published one.

use limitbench_plot::figure::{Axis, Figure, Panel, Pt, Reference, Series};

use super::rows::MatrixRow;

/// One panel per differing claim that has a value: the judged value on each
/// server (with its 95% interval where there is one), the published value
/// beside it.
pub fn differ_figure(rows: &[MatrixRow], servers: &[String]) -> Option<Figure> {
    let differing: Vec<&MatrixRow> = rows
        .iter()
        .filter(|r| r.differs() && r.cells.values().any(|c| c.value.is_some()))
        .collect();
    if differing.is_empty() {
        return None;
    }
    let ids: Vec<&str> = differing.iter().map(|r| r.id.as_str()).collect();
    let mut fig = Figure::new(
        "matrix-differ",
        &ids,
        "claims that differ between servers (verdict, or point value against the tolerance)",
        "the claim's judged value per server (whiskers: its 95% interval where the claim has one); dashed: the published value",
    )
    .columns(differing.len().min(3));
    for r in differing {
        let pts: Vec<Pt> = servers
            .iter()
            .enumerate()
            .filter_map(|(i, s)| {
                let c = r.cells.get(s)?;
                let v = c.value?;
                Some(match c.interval {
                    Some((lo, hi)) => Pt::spread(i as f64, v, lo, hi, 0),
                    None => Pt::new(i as f64, v),
                })
            })
            .collect();
        let title = if r.setting.is_empty() {
            r.id.clone()
        } else {
            format!("{} ({})", r.id, r.setting)
        };
        let mut p = Panel::new(title, Axis::new("server"), Axis::new(r.unit.clone()))
            .categories(servers.to_vec())
            .series(Series::points("measured", pts));
        if let Some(v) = r.published {
            // One legend entry for every panel: the published text is in the tables.
            p = p.reference(Reference::expected(
                "published (the claim's first value)",
                v,
            ));
        }
        fig = fig.panel(p.y_from_zero(1.15));
    }
    Some(fig)
}
