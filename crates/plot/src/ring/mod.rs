//! The judged value of a claim, ringed ([`Mark`](crate::figure::Mark)):
//! a black ring around the point the verdict was judged on, its 95%
//! interval as a thick black bar just right of the ring, and a label in a
//! white box near it, joined to the ring by a short leader when it does
//! not touch it. Drawn last, over the series, so it is never hidden.
//!
//! - this file: the panel's rings, bars and labels in pixels, and what the
//!   panel draws that a label must not hide ([`scene`]);
//! - `place`: where each label goes (one placer: candidates around the
//!   ring, scored by what they cover and how far they are).

pub mod place;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::axes::{dodge, tr};
use crate::figure::{Draw, Mark, Panel, RefKind};
use crate::panel::Frame;
use crate::style::{SMALL, err, font, text};
use crate::text::text_width;
use limitbench_base::error::Result;
pub use place::RING;
use place::{Label, Scene};

/// A line of a label is this high (px); a box adds this much padding.
const LINE_H: i32 = 16;
const PAD: i32 = 4;

/// The y of value `v` in drawn units, on the panel (a log axis's floor for
/// a value of 0 or below).
fn ty(fr: &Frame, v: f64) -> f64 {
    let ((y0, y1), ylog) = (fr.y, fr.log.1);
    if ylog && v <= 0.0 {
        y0
    } else {
        tr(v, ylog).clamp(y0, y1)
    }
}

/// Draw the panel's rings, their interval bars and their labels.
pub(crate) fn marks<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    p: &Panel,
    cat: bool,
    fr: &Frame,
) -> Result<()> {
    let black = RGBColor(0, 0, 0);
    let xlog = fr.log.0;
    let drawn: Vec<&Mark> = p
        .marks
        .iter()
        .filter(|m| m.y.is_finite() && !(xlog && m.x <= 0.0))
        .collect();
    if drawn.is_empty() {
        return Ok(());
    }
    let mut scene = scene(p, cat, fr);
    for m in &drawn {
        let (x, at) = spot(p, cat, fr, m);
        root.draw(&Circle::new(at, RING, black.stroke_width(2)))
            .map_err(err)?;
        scene.rings.push(at);
        if let Some((a, b)) = bar(fr, m, x) {
            let bx = at.0 + RING + 5;
            let st = black.stroke_width(3);
            root.draw(&PathElement::new(vec![(bx, a), (bx, b)], st))
                .map_err(err)?;
            for y in [a, b] {
                root.draw(&PathElement::new(vec![(bx - 4, y), (bx + 4, y)], st))
                    .map_err(err)?;
            }
            scene.segments.push(((bx, a), (bx, b)));
        }
    }
    // Each label's layouts: one line, or (when it has an interval) the
    // value and its interval on two.
    let texts: Vec<(usize, Vec<Vec<String>>)> = drawn
        .iter()
        .enumerate()
        .filter(|(_, m)| !m.label.is_empty())
        .map(|(i, m)| {
            let mut ls = vec![vec![m.label.clone()]];
            if let Some((a, b)) = m.label.split_once(" [") {
                ls.push(vec![a.to_string(), format!("[{b}")]);
            }
            (i, ls)
        })
        .collect();
    let size = |lines: &[String]| {
        let w = lines
            .iter()
            .map(|l| text_width(l, SMALL).ceil() as i32 + 2 * PAD)
            .max()
            .unwrap_or(0);
        (w, LINE_H * lines.len() as i32 + PAD)
    };
    let labels: Vec<Label> = texts
        .iter()
        .map(|(i, ls)| Label {
            ring: *i,
            layouts: ls.iter().map(|l| size(l)).collect(),
        })
        .collect();
    for ((_, ls), pl) in texts.iter().zip(place::place(&scene, &labels)) {
        let (l, t, r, b) = pl.rect();
        if let Some((from, to)) = pl.leader {
            root.draw(&PathElement::new(vec![from, to], black.stroke_width(1)))
                .map_err(err)?;
        }
        root.draw(&Rectangle::new(
            [(l, t), (r, b)],
            RGBAColor(255, 255, 255, 0.85).filled(),
        ))
        .map_err(err)?;
        root.draw(&Rectangle::new([(l, t), (r, b)], black.stroke_width(1)))
            .map_err(err)?;
        for (k, line) in ls[pl.layout].iter().enumerate() {
            text(
                root,
                line,
                (l + PAD, t + 2 + LINE_H * k as i32),
                &font(SMALL).pos(Pos::new(HPos::Left, VPos::Top)),
            )?;
        }
    }
    Ok(())
}

/// Where a mark's ring goes: its x in drawn units (at its series' offset)
/// and its pixel.
fn spot(p: &Panel, cat: bool, fr: &Frame, m: &Mark) -> (f64, (i32, i32)) {
    let off = m
        .series
        .as_ref()
        .and_then(|n| p.series.iter().position(|s| &s.name == n))
        .map(|si| dodge(p, si, cat, fr.x))
        .unwrap_or(0.0);
    let x = tr(m.x, fr.log.0) + off;
    (x, (fr.px)(x, ty(fr, m.y)))
}

/// A mark's interval bar (bottom and top pixel), if it has an interval.
fn bar(fr: &Frame, m: &Mark, x: f64) -> Option<(i32, i32)> {
    let (lo, hi) = (m.lo?, m.hi?);
    if !(lo.is_finite() && hi.is_finite()) {
        return None;
    }
    let (a, b) = ((fr.px)(x, ty(fr, lo)).1, (fr.px)(x, ty(fr, hi)).1);
    Some((a.max(b), a.min(b)))
}

/// What the panel draws under its rings, in pixels: the plot area, every
/// series' markers, lines and whiskers, and every reference line and band
/// edge (with the published value's marker at its right end).
fn scene(p: &Panel, cat: bool, fr: &Frame) -> Scene {
    let ((x0, x1), (y0, y1), xlog) = (fr.x, fr.y, fr.log.0);
    let (left, top) = (fr.px)(x0, y1);
    let (right, bottom) = (fr.px)(x1, y0);
    let mut s = Scene {
        area: (left, top, right, bottom),
        ..Default::default()
    };
    for (si, se) in p.series.iter().enumerate() {
        let off = dodge(p, si, cat, (x0, x1));
        let mut pix = Vec::new();
        for q in se
            .points
            .iter()
            .filter(|q| q.y.is_finite() && (!xlog || q.x > 0.0))
        {
            let x = tr(q.x, xlog) + off;
            let at = (fr.px)(x, ty(fr, q.y));
            if let (Some(lo), Some(hi)) = (q.lo, q.hi)
                && lo.is_finite()
                && hi.is_finite()
                && hi > lo
            {
                let (a, b) = ((fr.px)(x, ty(fr, lo)), (fr.px)(x, ty(fr, hi)));
                s.segments.push((a, b));
            }
            pix.push(at);
        }
        if se.draw != Draw::Points {
            s.segments.extend(pix.windows(2).map(|w| (w[0], w[1])));
        }
        if se.draw != Draw::Line {
            s.points.extend(pix);
        }
    }
    for r in &p.refs {
        let (a, b) =
            r.x.map(|(a, b)| (tr(a, xlog).max(x0), tr(b, xlog).min(x1)))
                .unwrap_or((x0, x1));
        let ys = r
            .value
            .into_iter()
            .chain(r.lines.iter().copied())
            .chain(r.band.into_iter().flat_map(|(lo, hi)| [lo, hi]));
        for v in ys.filter(|v| v.is_finite() && (!fr.log.1 || *v > 0.0)) {
            let v = tr(v, fr.log.1);
            if v < y0 || v > y1 {
                continue;
            }
            let (pa, pb) = ((fr.px)(a, v), (fr.px)(b, v));
            s.segments.push((pa, pb));
            if r.kind == RefKind::Published {
                s.points.push(pb);
            }
        }
    }
    s
}
