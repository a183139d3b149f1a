//! Marks drawn in pixels: series markers (one shape per series, hollow
//! or filled) and dashed polylines (plotters has no dash pattern for paths).

use plotters::coord::Shift;
use plotters::prelude::*;

use super::style::err;
use limitbench_base::error::Result;

pub(super) fn marker<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    at: (i32, i32),
    m: usize,
    c: RGBColor,
) -> Result<()> {
    let s = 5;
    let st = c.stroke_width(2);
    let (x, y) = at;
    let triangle = vec![
        (x, y - s - 1),
        (x + s + 1, y + s),
        (x - s - 1, y + s),
        (x, y - s - 1),
    ];
    let diamond = vec![
        (x, y - s - 1),
        (x + s + 1, y),
        (x, y + s + 1),
        (x - s - 1, y),
        (x, y - s - 1),
    ];
    let square = [(x - s + 1, y - s + 1), (x + s - 1, y + s - 1)];
    // Hollow shapes are filled white first, so a whisker or line behind the
    // marker does not run through it.
    let white = WHITE.filled();
    match m {
        0 => {
            area.draw(&Circle::new(at, s, white)).map_err(err)?;
            area.draw(&Circle::new(at, s, st)).map_err(err)
        }
        1 => {
            area.draw(&Rectangle::new(square, white)).map_err(err)?;
            area.draw(&Rectangle::new(square, st)).map_err(err)
        }
        2 => {
            area.draw(&Polygon::new(triangle.clone(), white))
                .map_err(err)?;
            area.draw(&PathElement::new(triangle, st)).map_err(err)
        }
        3 => {
            area.draw(&Polygon::new(diamond.clone(), white))
                .map_err(err)?;
            area.draw(&PathElement::new(diamond, st)).map_err(err)
        }
        4 => {
            area.draw(&PathElement::new(vec![(x - s, y), (x + s, y)], st))
                .map_err(err)?;
            area.draw(&PathElement::new(vec![(x, y - s), (x, y + s)], st))
                .map_err(err)
        }
        _ => {
            area.draw(&PathElement::new(vec![(x - s, y - s), (x + s, y + s)], st))
                .map_err(err)?;
            area.draw(&PathElement::new(vec![(x - s, y + s), (x + s, y - s)], st))
                .map_err(err)
        }
    }
}

/// A polyline in pixels with a dash pattern ((0, 0) = solid).
pub(super) fn dashed<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    pts: &[(i32, i32)],
    dash: (u32, u32),
    style: ShapeStyle,
) -> Result<()> {
    if dash.0 == 0 {
        return area
            .draw(&PathElement::new(pts.to_vec(), style))
            .map_err(err);
    }
    let (on, off) = (dash.0 as f64, dash.1 as f64);
    let mut phase = 0.0; // distance into the current on+off period
    for w in pts.windows(2) {
        let (a, b) = (
            (w[0].0 as f64, w[0].1 as f64),
            (w[1].0 as f64, w[1].1 as f64),
        );
        let len = ((b.0 - a.0).powi(2) + (b.1 - a.1).powi(2)).sqrt();
        if len == 0.0 {
            continue;
        }
        let mut d = 0.0;
        while d < len {
            let in_on = phase < on;
            let step = if in_on { on - phase } else { on + off - phase }.min(len - d);
            if in_on {
                let p = |t: f64| {
                    (
                        (a.0 + (b.0 - a.0) * t / len).round() as i32,
                        (a.1 + (b.1 - a.1) * t / len).round() as i32,
                    )
                };
                area.draw(&PathElement::new(vec![p(d), p(d + step)], style))
                    .map_err(err)?;
            }
            d += step;
            phase = (phase + step) % (on + off);
        }
    }
    Ok(())
}

/// The published value's own marker: a filled black diamond, larger than
/// any series marker (series markers are hollow or strokes), drawn at the
/// right end of a published line and in its legend swatch.
pub(crate) fn published_marker<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    at: (i32, i32),
) -> Result<()> {
    let (x, y) = at;
    let s = 7;
    let diamond = vec![(x, y - s), (x + s, y), (x, y + s), (x - s, y)];
    area.draw(&Polygon::new(diamond, BLACK.filled()))
        .map_err(err)
}
