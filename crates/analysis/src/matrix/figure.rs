//! The matrix's figure (`figures/matrix-differ.*`): the claims that differ
//! between servers, the value drawn (the claim's first) per server beside
//! the published one, with the band where the claim's check passes; a
//! claim judged on its shape says that the value drawn is not what is judged.

use limitbench_plot::figure::{Axis, Figure, Panel, Pt, RefKind, Reference, Series};

use super::rows::MatrixRow;

/// A server's name as a category label: words that wrap at their spaces
/// (`redis-7.0-rerun` -> `Redis 7.0 rerun`).
pub fn server_label(server: &str) -> String {
    let mut parts = server.split('-');
    let product = parts.next().unwrap_or(server);
    let mut out = String::new();
    let mut chars = product.chars();
    if let Some(c) = chars.next() {
        out.extend(c.to_uppercase());
        out.push_str(chars.as_str());
    }
    for p in parts {
        out.push(' ');
        out.push_str(p);
    }
    out
}

/// One panel per differing claim that has a value: the value drawn on each
/// server (with its 95% interval where there is one), the published value
/// beside it and the band where the claim's check passes.
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
        "The claim's value per server (its first, where it has several; whiskers: its 95% interval where the claim has one); a claim judged on its shape has no band: its value is drawn, not judged.",
    )
    .columns(differing.len().min(2));
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
        let mut title = if r.setting.is_empty() {
            r.id.clone()
        } else {
            format!("{} ({})", r.id, r.setting)
        };
        if r.band.is_none() {
            title += ": not judged on this value";
        }
        let mut p = Panel::new(title, Axis::new("server"), Axis::new(r.value_unit.clone()))
            .categories(servers.iter().map(|s| server_label(s)).collect())
            .series(Series::points("measured", pts));
        if r.published.is_some() || r.band.is_some() {
            // One legend entry for every panel: the published text is in the tables.
            p = p.reference(Reference {
                kind: RefKind::Published,
                label: "published (the claim's first value); shaded: where its check passes".into(),
                value: r.published,
                band: r.band,
                x: None,
                lines: vec![],
            });
        }
        fig = fig.panel(p.y_from_zero(1.15));
    }
    Some(fig)
}
