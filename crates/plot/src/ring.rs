//! The judged value of a claim, ringed ([`Mark`](super::figure::Mark)):
//! a black ring around the point the verdict was judged on, its 95%
//! interval as a thick black bar just right of the ring, and a label in a
//! white box beside it (right or left of the ring, above or below it: the
//! first of those places inside the panel that covers the fewest of its
//! points, moved up or down off an earlier ring's label in the same
//! panel). Drawn last, over the series, so it is never hidden.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::axes::{dodge, tr};
use super::figure::Panel;
use super::panel::Frame;
use super::style::{SMALL, err, font, text};
use super::text::text_width;
use limitbench_base::error::Result;

/// The ring's radius in pixels (a series marker is 5).
pub const RING: i32 = 11;

pub(super) fn marks<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    p: &Panel,
    cat: bool,
    fr: &Frame,
) -> Result<()> {
    let ((x0, x1), (y0, y1), (xlog, ylog)) = (fr.x, fr.y, fr.log);
    let ty = |v: f64| {
        if ylog && v <= 0.0 {
            y0
        } else {
            tr(v, ylog).clamp(y0, y1)
        }
    };
    let black = RGBColor(0, 0, 0);
    let drawn = |m: &&super::figure::Mark| m.y.is_finite() && !(xlog && m.x <= 0.0);
    // Where a mark's ring goes (x in axis units, the ring's pixel).
    let spot = |m: &super::figure::Mark| {
        let off = m
            .series
            .as_ref()
            .and_then(|n| p.series.iter().position(|s| &s.name == n))
            .map(|si| dodge(p, si, cat, (x0, x1)))
            .unwrap_or(0.0);
        let x = tr(m.x, xlog) + off;
        (x, (fr.px)(x, ty(m.y)))
    };
    // What a label must not cover: every ring of the panel, and the label
    // boxes drawn so far (several rings in one panel, e.g. one per
    // category).
    let mut placed: Vec<(i32, i32, i32, i32)> = p
        .marks
        .iter()
        .filter(drawn)
        .map(|m| {
            let at = spot(m).1;
            (at.0 - RING, at.1 - RING, at.0 + RING, at.1 + RING)
        })
        .collect();
    for m in p.marks.iter().filter(drawn) {
        let (x, at) = spot(m);
        root.draw(&Circle::new(at, RING, black.stroke_width(2)))
            .map_err(err)?;
        let bar_x = at.0 + RING + 5;
        if let (Some(lo), Some(hi)) = (m.lo, m.hi)
            && lo.is_finite()
            && hi.is_finite()
        {
            let (a, b) = ((fr.px)(x, ty(lo)).1, (fr.px)(x, ty(hi)).1);
            let (a, b) = (a.max(b), a.min(b));
            let st = black.stroke_width(3);
            root.draw(&PathElement::new(vec![(bar_x, a), (bar_x, b)], st))
                .map_err(err)?;
            for y in [a, b] {
                root.draw(&PathElement::new(vec![(bar_x - 4, y), (bar_x + 4, y)], st))
                    .map_err(err)?;
            }
        }
        if m.label.is_empty() {
            continue;
        }
        let (left_edge, top) = (fr.px)(x0, y1);
        let (right_edge, bottom) = (fr.px)(x1, y0);
        // One line where the panel has room for it, else the value and its
        // interval on two.
        let one = text_width(&m.label, SMALL) as i32 + 8;
        let lines: Vec<String> = match m.label.split_once(" [") {
            Some((a, b)) if one > right_edge - left_edge - 4 => {
                vec![a.to_string(), format!("[{b}")]
            }
            _ => vec![m.label.clone()],
        };
        let w = lines
            .iter()
            .map(|l| text_width(l, SMALL) as i32 + 8)
            .max()
            .unwrap_or(0);
        let h = 16 * lines.len() as i32 + 4;
        // Right of the ring and its bar, or left of the ring (else as far
        // right as the panel allows); above the ring, or below it (clamped
        // to the panel): never past the panel's edges. Of these places the
        // first that covers the fewest of the panel's points, so the label
        // hides no measurement where it can help it.
        let mut xs: Vec<i32> = [bar_x + 8, at.0 - RING - 8 - w]
            .into_iter()
            .filter(|lx| *lx >= left_edge && lx + w <= right_edge)
            .collect();
        if xs.is_empty() {
            xs.push((right_edge - w - 2).max(left_edge + 2));
        }
        let mut ys: Vec<i32> = Vec::new();
        if at.1 - RING - 6 - h >= top {
            ys.push(at.1 - RING - 6 - h);
        }
        ys.push((at.1 + RING + 6).min(bottom - h - 2));
        let points = point_pixels(p, cat, fr, &ty);
        let covered = |lx: i32, ly: i32| {
            points
                .iter()
                .filter(|(x, y)| {
                    *x + 6 >= lx && *x - 6 <= lx + w && *y + 6 >= ly && *y - 6 <= ly + h
                })
                .count()
        };
        let want = ys
            .iter()
            .flat_map(|ly| xs.iter().map(move |lx| (*lx, *ly)))
            .min_by_key(|(lx, ly)| covered(*lx, *ly))
            .unwrap_or((xs[0], ys[0]));
        let (lx, ly) = free_spot(&placed, want, (w, h), (left_edge, right_edge, top, bottom));
        placed.push((lx, ly, lx + w, ly + h));
        root.draw(&Rectangle::new(
            [(lx, ly), (lx + w, ly + h)],
            RGBAColor(255, 255, 255, 0.85).filled(),
        ))
        .map_err(err)?;
        root.draw(&Rectangle::new(
            [(lx, ly), (lx + w, ly + h)],
            black.stroke_width(1),
        ))
        .map_err(err)?;
        for (k, l) in lines.iter().enumerate() {
            text(
                root,
                l,
                (lx + 4, ly + 2 + 16 * k as i32),
                &font(SMALL).pos(Pos::new(HPos::Left, VPos::Top)),
            )?;
        }
    }
    Ok(())
}

/// Where the panel's points are drawn (pixels), each series at its offset.
fn point_pixels(p: &Panel, cat: bool, fr: &Frame, ty: &dyn Fn(f64) -> f64) -> Vec<(i32, i32)> {
    let (x0, x1) = fr.x;
    let xlog = fr.log.0;
    p.series
        .iter()
        .enumerate()
        .flat_map(|(si, s)| {
            let off = dodge(p, si, cat, (x0, x1));
            s.points
                .iter()
                .filter(move |q| q.y.is_finite() && (!xlog || q.x > 0.0))
                .map(move |q| (fr.px)(tr(q.x, xlog) + off, ty(q.y)))
        })
        .collect()
}

/// Where a label box of size `wh` goes: at `want` unless it overlaps a box
/// already `placed`; else the nearest height (stepping a box's height up
/// and down) inside the panel's `edges` (left, right, top, bottom) where it
/// overlaps none; `want` if there is none.
fn free_spot(
    placed: &[(i32, i32, i32, i32)],
    want: (i32, i32),
    wh: (i32, i32),
    edges: (i32, i32, i32, i32),
) -> (i32, i32) {
    let (w, h) = wh;
    let clear = |x: i32, y: i32| {
        placed
            .iter()
            .all(|b| x + w + 2 <= b.0 || b.2 + 2 <= x || y + h + 2 <= b.1 || b.3 + 2 <= y)
    };
    let (x, y) = want;
    for k in 0..12 {
        for dy in [k * (h + 3), -k * (h + 3)] {
            let yy = y + dy;
            if yy >= edges.2 && yy + h <= edges.3 && clear(x, yy) {
                return (x, yy);
            }
        }
    }
    want
}
