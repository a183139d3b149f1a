//! The parts of one panel of a [`Figure`](super::figure::Figure), drawn
//! in pixels after plotters has drawn its axes and grid: shaded phases,
//! reference values and bands, the series (whiskers, lines, markers) and
//! the category labels. `draw::panel` lays the panel out and calls them.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::axes::{range_of, tr};
use super::figure::{Draw, Panel, RefKind};
use super::marks::{dashed, marker, published_marker};
use super::style::{SHADE_TONES, SMALL, TEXT, err, font, ref_look, series_look, text};
use limitbench_base::error::Result;

/// A panel's plot as the parts below see it: its ranges in drawn units
/// (log10 on a log axis), which axes are logarithmic, and the pixel of a
/// point in drawn units.
pub(crate) struct Frame<'a> {
    pub x: (f64, f64),
    pub y: (f64, f64),
    pub log: (bool, bool),
    pub px: &'a dyn Fn(f64, f64) -> (i32, i32),
}

impl Frame<'_> {
    fn clampy(&self, v: f64) -> f64 {
        v.clamp(self.y.0, self.y.1)
    }
}

/// The x range in drawn units: the categories, or the points and shades
/// with a little room at both ends of a linear axis.
pub(super) fn x_range(p: &Panel, cat: bool) -> (f64, f64) {
    if cat {
        return (-0.5, p.categories.len() as f64 - 0.5);
    }
    let xs: Vec<f64> = p
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|q| q.x))
        .chain(p.shades.iter().flat_map(|s| [s.x0, s.x1]))
        .collect();
    let (a, b) = range_of(&xs, &p.x, false);
    if p.x.log {
        (a, b)
    } else {
        let pad = (b - a) * 0.03;
        (a - pad, b + pad)
    }
}

/// Every y the panel draws: points, their whiskers, reference values and bands.
pub(super) fn y_values(p: &Panel) -> Vec<f64> {
    p.series
        .iter()
        .flat_map(|s| {
            s.points
                .iter()
                .flat_map(|q| [Some(q.y), q.lo, q.hi])
                .flatten()
        })
        .chain(
            p.refs
                .iter()
                .flat_map(|r| {
                    [r.value, r.band.map(|b| b.0), r.band.map(|b| b.1)]
                        .into_iter()
                        .chain(r.lines.iter().map(|v| Some(*v)))
                })
                .flatten()
                .filter(|v| v.is_finite()),
        )
        .chain(
            p.marks
                .iter()
                .flat_map(|m| [Some(m.y), m.lo, m.hi])
                .flatten()
                .filter(|v| v.is_finite()),
        )
        .collect()
}
/// Shaded phases, with their labels at the top of the plot.
pub(super) fn shades<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    p: &Panel,
    fr: &Frame,
) -> Result<()> {
    let ((x0, x1), (y0, y1), xlog) = (fr.x, fr.y, fr.log.0);
    for (i, s) in p.shades.iter().enumerate() {
        let (a, b) = (tr(s.x0, xlog).max(x0), tr(s.x1, xlog).min(x1));
        if b <= a {
            continue;
        }
        let (l, t) = (fr.px)(a, y1);
        let (r, bottom) = (fr.px)(b, y0);
        root.draw(&Rectangle::new(
            [(l, t), (r, bottom)],
            SHADE_TONES[i % 4].mix(0.22).filled(),
        ))
        .map_err(err)?;
        text(
            root,
            &s.label,
            ((l + r) / 2, t + 4),
            &font(SMALL).pos(Pos::new(HPos::Center, VPos::Top)),
        )?;
    }
    Ok(())
}

/// Reference values and bands (published values, limits, models): bands
/// first, then lines.
pub(super) fn references<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    p: &Panel,
    fr: &Frame,
) -> Result<()> {
    let ((x0, x1), (y0, y1), (xlog, ylog)) = (fr.x, fr.y, fr.log);
    for r in &p.refs {
        let (c, dash, band) = ref_look(r.kind);
        let (a, b) =
            r.x.map(|(a, b)| (tr(a, xlog).max(x0), tr(b, xlog).min(x1)))
                .unwrap_or((x0, x1));
        if let (Some((lo, hi)), true) = (r.band, band > 0.0) {
            let (lo, hi) = (
                fr.clampy(tr(lo.max(if ylog { 1e-300 } else { f64::MIN }), ylog)),
                fr.clampy(tr(hi, ylog)),
            );
            if hi > lo {
                root.draw(&Rectangle::new(
                    [(fr.px)(a, hi), (fr.px)(b, lo)],
                    RGBAColor(0, 0, 0, band).filled(),
                ))
                .map_err(err)?;
            }
        }
        let lines: Vec<f64> = match (r.value, r.kind, r.band) {
            (Some(v), _, _) => vec![v],
            // A published range's ends, with or without a pass band (a
            // machine claim's published values are drawn, not judged).
            (None, RefKind::Published, _) => r.lines.clone(),
            _ => vec![],
        };
        for v in lines
            .into_iter()
            .filter(|v| v.is_finite() && (!ylog || *v > 0.0))
        {
            let v = tr(v, ylog);
            if v < y0 || v > y1 {
                continue;
            }
            dashed(
                root,
                &[(fr.px)(a, v), (fr.px)(b, v)],
                dash,
                c.stroke_width(2),
            )?;
            if r.kind == RefKind::Published {
                published_marker(root, (fr.px)(b, v))?;
            }
        }
    }
    Ok(())
}

/// The series: whiskers, then lines, then markers (on top, filled white
/// inside so a whisker does not run through them).
pub(super) fn series<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    p: &Panel,
    names: &[(String, Draw, usize)],
    cat: bool,
    fr: &Frame,
) -> Result<()> {
    let ((x0, x1), (xlog, ylog)) = (fr.x, fr.log);
    for (si, s) in p.series.iter().enumerate() {
        let lk = series_look(names, s, si);
        // Series side by side at a category (or, asked for, at an x).
        let dodge = super::axes::dodge(p, si, cat, (x0, x1));
        let kept: Vec<&super::figure::Pt> = s
            .points
            .iter()
            .filter(|q| q.y.is_finite() && (!xlog || q.x > 0.0))
            .collect();
        let pts: Vec<(f64, f64, Option<f64>, Option<f64>)> = kept
            .iter()
            .map(|q| {
                // On a log axis a value of 0 (or below) sits on the axis
                // floor, so a "none" is seen rather than dropped; the CSV
                // keeps the value.
                let ty = |v: f64| {
                    if ylog && v <= 0.0 {
                        fr.y.0
                    } else {
                        tr(v, ylog)
                    }
                };
                (tr(q.x, xlog) + dodge, ty(q.y), q.lo.map(ty), q.hi.map(ty))
            })
            .collect();
        for (x, _, lo, hi) in &pts {
            if let (Some(lo), Some(hi)) = (lo, hi)
                && lo.is_finite()
                && hi.is_finite()
                && hi > lo
            {
                let (a, b) = ((fr.px)(*x, fr.clampy(*lo)), (fr.px)(*x, fr.clampy(*hi)));
                let st = lk.color.stroke_width(1);
                root.draw(&PathElement::new(vec![a, b], st)).map_err(err)?;
                root.draw(&PathElement::new(vec![(a.0 - 4, a.1), (a.0 + 4, a.1)], st))
                    .map_err(err)?;
                root.draw(&PathElement::new(vec![(b.0 - 4, b.1), (b.0 + 4, b.1)], st))
                    .map_err(err)?;
            }
        }
        let pix: Vec<(i32, i32)> = pts
            .iter()
            .map(|(x, y, _, _)| (fr.px)(*x, fr.clampy(*y)))
            .collect();
        if s.draw != Draw::Points && pix.len() > 1 {
            // One stretch of line per run of points no farther apart than
            // `join_within` (all of them when it is None).
            let mut start = 0;
            for i in 1..=pix.len() {
                let breaks =
                    i == pix.len() || s.join_within.is_some_and(|w| kept[i].x - kept[i - 1].x > w);
                if breaks {
                    if i - start > 1 {
                        dashed(root, &pix[start..i], lk.dash, lk.color.stroke_width(2))?;
                    }
                    start = i;
                }
            }
        }
        if s.draw != Draw::Line {
            for q in &pix {
                marker(root, *q, lk.marker, lk.color)?;
            }
        }
    }
    Ok(())
}

/// Category labels (wrapped) and the x description below them.
pub(super) fn category_labels<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    p: &Panel,
    clines: &[Vec<String>],
    fr: &Frame,
) -> Result<()> {
    let ((x0, x1), (y0, _)) = (fr.x, fr.y);
    let (_, bottom) = (fr.px)(x0, y0);
    for (i, _) in p.categories.iter().enumerate() {
        let (cx, _) = (fr.px)(i as f64, y0);
        for (j, line) in clines.iter().enumerate() {
            text(
                root,
                &line[i],
                (cx, bottom + 8 + j as i32 * 16),
                &font(SMALL).pos(Pos::new(HPos::Center, VPos::Top)),
            )?;
        }
    }
    let (l, _) = (fr.px)(x0, y0);
    let (r, _) = (fr.px)(x1, y0);
    text(
        root,
        &p.x.label,
        ((l + r) / 2, bottom + 12 + clines.len() as i32 * 16),
        &font(TEXT).pos(Pos::new(HPos::Center, VPos::Top)),
    )
}
