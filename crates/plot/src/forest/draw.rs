//! Drawing a [`Forest`]: the title, the column headings, each group's
//! heading and rows (label; band, interval and mark on the ratio strip or
//! the fraction strip; note; cause), the two strips' axes and the caption,
//! once as SVG and once as a palette PNG.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{COLUMNS, Forest, ForestRow, ROW_TEXT};
use crate::axes::{thin, ticks};
use crate::figure::{Axis, num};
use crate::images::{Drawing, write_svg_png};
use crate::marks::{dashed, marker, published_marker};
use crate::style::{
    SMALL, TEXT, TITLE_SIZE, err, font, look, register_font, text, title as draw_title,
};
use crate::text::{text_width, wrap};
use limitbench_base::error::Result;

const ROW_H: i32 = 21;
/// Each further line of a wrapped note or cause adds this to its row.
const NOTE_LINE: i32 = 15;
const GROUP_H: i32 = 30;
const GROUP_SIZE: f64 = 15.0;
/// The log axis never reaches beyond these ratios; a positive value
/// outside is drawn as an arrow at the edge with its number beside it.
const CLAMP: (f64, f64) = (0.02, 50.0);

/// `s` cut to `width` px at `size`, with an ellipsis when cut.
fn fit(s: &str, width: f64, size: f64) -> String {
    if text_width(s, size) <= width {
        return s.to_string();
    }
    let mut out = String::new();
    for c in s.chars() {
        if text_width(&format!("{out}{c}..."), size) > width {
            break;
        }
        out.push(c);
    }
    format!("{}...", out.trim_end())
}

/// A row's height: one line, and a line more for each further line of its
/// note or cause (whichever wraps onto more).
fn row_h(r: &ForestRow) -> i32 {
    let lines = super::note_lines(&r.note)
        .len()
        .max(super::cause_lines(&r.cause).len());
    ROW_H + (lines as i32 - 1) * NOTE_LINE
}

/// The height of every group's heading and rows.
fn body_h(f: &Forest) -> i32 {
    f.groups
        .iter()
        .map(|g| GROUP_H + g.rows.iter().map(row_h).sum::<i32>())
        .sum()
}

/// The log10 range of the ratio axis: every positive value, interval end
/// and finite band end, with 1 always inside, clamped to [`CLAMP`].
fn range(f: &Forest) -> (f64, f64) {
    let mut lo = 1.0f64;
    let mut hi = 1.0f64;
    for r in f.groups.iter().flat_map(|g| &g.rows) {
        let vals = [
            r.value,
            r.interval.map(|i| i.0),
            r.interval.map(|i| i.1),
            r.band.map(|b| b.0),
            r.band.map(|b| b.1),
        ];
        for v in vals.into_iter().flatten() {
            if v.is_finite() && v > 0.0 {
                lo = lo.min(v);
                hi = hi.max(v);
            }
        }
    }
    let (a, b) = (lo.max(CLAMP.0).log10(), hi.min(CLAMP.1).log10());
    let pad = ((b - a) * 0.05).max(0.05);
    (a - pad, b + pad)
}

/// Write `<name>.svg` and `<name>.png` of `f` into `dir`.
pub(super) fn write_images(f: &Forest, dir: &Path) -> Result<()> {
    register_font();
    let w = COLUMNS.width;
    let title = wrap(&f.title, (w - 30) as f64, TITLE_SIZE);
    let caption = wrap(&f.caption, (w - 30) as f64, SMALL);
    let top = 14 + title.len() as i32 * 24 + 30;
    let body = body_h(f);
    let h = (top + body + 70 + caption.len() as i32 * 18 + 8) as u32;
    let laid = Laid {
        f,
        title: &title,
        caption: &caption,
        top,
    };
    write_svg_png(dir, &f.name, (w, h), &laid)
}

/// A forest with its wrapped title and caption: drawn alike on either backend.
struct Laid<'a> {
    f: &'a Forest,
    title: &'a [String],
    caption: &'a [String],
    top: i32,
}

impl Drawing for Laid<'_> {
    fn draw_on<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<()> {
        draw(self.f, root, self.title, self.caption, self.top)
    }
}

/// Pixel positions on the two strips.
struct Scale {
    r: (f64, f64),
}

impl Scale {
    /// x of a ratio: the 0 slot for 0 or below, else on the log axis
    /// (clamped to its ends).
    fn ratio(&self, v: f64) -> i32 {
        let (x0, x1) = COLUMNS.log;
        if v <= 0.0 {
            return COLUMNS.zero;
        }
        let t = (v.log10().clamp(self.r.0, self.r.1) - self.r.0) / (self.r.1 - self.r.0);
        x0 + (t * (x1 - x0) as f64).round() as i32
    }
    /// x of a fraction (0..=1).
    fn fraction(&self, v: f64) -> i32 {
        let (x0, x1) = COLUMNS.fraction;
        x0 + (v.clamp(0.0, 1.0) * (x1 - x0) as f64).round() as i32
    }
}

fn draw<DB: DrawingBackend>(
    f: &Forest,
    root: &DrawingArea<DB, Shift>,
    title: &[String],
    caption: &[String],
    top: i32,
) -> Result<()> {
    let c = COLUMNS;
    root.fill(&WHITE).map_err(err)?;
    let left = Pos::new(HPos::Left, VPos::Center);
    draw_title(root, title, (15, 10))?;
    let s = Scale { r: range(f) };
    let bottom = top + body_h(f);
    axes(f, root, &s, top, bottom)?;
    // Column headings.
    for (t, x) in [
        (&f.label_heading, c.label.0),
        (&f.note_heading, c.note.0),
        (&f.cause_heading, c.cause.0),
    ] {
        text(root, t, (x, top - 12), &font(SMALL).pos(left))?;
    }
    let has_fraction = f.has_fraction();
    if has_fraction {
        text(
            root,
            &f.fraction_label,
            ((c.fraction.0 + c.fraction.1) / 2, top - 12),
            &font(SMALL).pos(Pos::new(HPos::Center, VPos::Center)),
        )?;
    }
    let one = s.ratio(1.0);
    let mut y = top;
    for g in &f.groups {
        let lk = look(g.look);
        let mid = y + GROUP_H / 2 + 2;
        marker(root, (22, mid), lk.marker, lk.color)?;
        text(root, &g.label, (36, mid), &font(GROUP_SIZE).pos(left))?;
        if 36.0 + text_width(&g.label, GROUP_SIZE) < (one - 6) as f64 {
            one_line(root, one, y, y + GROUP_H)?;
        }
        y += GROUP_H;
        for (i, r) in g.rows.iter().enumerate() {
            if i % 2 == 0 {
                root.draw(&Rectangle::new(
                    [(10, y), (c.width as i32 - 10, y + row_h(r))],
                    RGBColor(246, 246, 246).filled(),
                ))
                .map_err(err)?;
            }
            draw_row(root, &s, r, lk, y)?;
            y += row_h(r);
        }
    }
    let mut y = bottom + 54;
    for line in caption {
        text(
            root,
            line,
            (15, y),
            &font(SMALL)
                .color(&RGBColor(60, 60, 60))
                .pos(Pos::new(HPos::Left, VPos::Top)),
        )?;
        y += 18;
    }
    Ok(())
}

/// The dashed line at 1 between `y0` and `y1`.
fn one_line<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    one: i32,
    y0: i32,
    y1: i32,
) -> Result<()> {
    dashed(
        root,
        &[(one, y0), (one, y1)],
        (14, 4),
        BLACK.stroke_width(2),
    )
}

/// Both strips' ticks, grid lines, axis lines and labels, the 0 slot and
/// its break, and the line at 1 with its marker and label on top.
fn axes<DB: DrawingBackend>(
    f: &Forest,
    root: &DrawingArea<DB, Shift>,
    s: &Scale,
    top: i32,
    bottom: i32,
) -> Result<()> {
    let c = COLUMNS;
    let (r0, r1) = s.r;
    let grid = RGBColor(225, 225, 225).stroke_width(1);
    let below = Pos::new(HPos::Center, VPos::Top);
    let tk = thin(
        ticks((r0, r1), &Axis::log(""), 9),
        (r0, r1),
        (c.log.1 - c.log.0) as f64,
        &Axis::log(""),
    );
    let mut xs: Vec<(i32, String)> = tk
        .iter()
        .map(|t| (s.ratio(10f64.powf(*t)), num(10f64.powf(*t))))
        .collect();
    xs.push((c.zero, "0".into()));
    let has_fraction = f.has_fraction();
    if has_fraction {
        for v in [0.0, 0.5, 1.0] {
            xs.push((s.fraction(v), num(v)));
        }
    }
    for (x, label) in &xs {
        root.draw(&PathElement::new(vec![(*x, top), (*x, bottom)], grid))
            .map_err(err)?;
        text(root, label, (*x, bottom + 6), &font(SMALL).pos(below))?;
    }
    let axis_line = |a: i32, b: i32| {
        root.draw(&PathElement::new(
            vec![(a, bottom), (b, bottom)],
            BLACK.stroke_width(1),
        ))
        .map_err(err)
    };
    axis_line(c.zero - 12, c.zero + 10)?;
    axis_line(c.log.0 - 10, c.log.1)?;
    // The break between the 0 slot and the log axis: two slashes.
    for dx in [-3, 3] {
        let x = (c.zero + c.log.0) / 2 + dx;
        root.draw(&PathElement::new(
            vec![(x - 3, bottom + 5), (x + 3, bottom - 5)],
            BLACK.stroke_width(1),
        ))
        .map_err(err)?;
    }
    text(
        root,
        &f.x_label,
        ((c.zero + c.log.1) / 2, bottom + 28),
        &font(TEXT).pos(below),
    )?;
    if has_fraction {
        axis_line(c.fraction.0, c.fraction.1)?;
        text(
            root,
            &f.fraction_label,
            ((c.fraction.0 + c.fraction.1) / 2, bottom + 28),
            &font(TEXT).pos(below),
        )?;
    }
    let one = s.ratio(1.0);
    one_line(root, one, top - 4, top)?;
    published_marker(root, (one, top - 12))?;
    text(
        root,
        &f.one_label,
        (one + 12, top - 12),
        &font(SMALL).pos(Pos::new(HPos::Left, VPos::Center)),
    )
}

/// One row at `y`: its texts, and its band, interval and mark on its strip.
fn draw_row<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    s: &Scale,
    r: &ForestRow,
    lk: crate::style::Look,
    y: i32,
) -> Result<()> {
    let c = COLUMNS;
    let left = Pos::new(HPos::Left, VPos::Center);
    let mid = y + ROW_H / 2;
    let h = row_h(r);
    // Labels whole (the figure test checks they fit: see
    // `Forest::clipped`); notes and causes wrapped, a line under the other.
    let (key, rest, at) = super::split_label(&r.label);
    text(root, key, (c.label.0, mid), &font(ROW_TEXT).pos(left))?;
    if !rest.is_empty() {
        text(root, rest, (c.label.0 + at, mid), &font(ROW_TEXT).pos(left))?;
    }
    for (k, line) in super::note_lines(&r.note).iter().enumerate() {
        let at = (c.note.0, mid + k as i32 * NOTE_LINE);
        text(root, line, at, &font(ROW_TEXT).pos(left))?;
    }
    for (k, line) in super::cause_lines(&r.cause).iter().enumerate() {
        let at = (c.cause.0, mid + k as i32 * NOTE_LINE);
        text(root, line, at, &font(ROW_TEXT).pos(left))?;
    }
    let shade = |a: i32, b: i32| {
        root.draw(&Rectangle::new(
            [(a, mid - 7), (b.max(a + 4), mid + 7)],
            RGBAColor(0, 0, 0, 0.16).filled(),
        ))
        .map_err(err)
    };
    let one = s.ratio(1.0);
    match r.strip() {
        "fraction" => {
            let v = r.fraction.unwrap_or(0.0);
            one_line(root, one, y, y + h)?;
            if let Some((a, b)) = r.fraction_band {
                let (a, b) = (s.fraction(a), s.fraction(b));
                shade(a - 2, b + 2)?;
            }
            marker(root, (s.fraction(v), mid), lk.marker, lk.color)?;
            undecided(root, r, (s.fraction(v), mid), lk)
        }
        "ratio" => {
            let v = r.value.unwrap_or(1.0);
            if let Some((a, b)) = r.band {
                let a = if a > 0.0 { s.ratio(a) } else { c.zero - 10 };
                let b = if b.is_finite() { s.ratio(b) } else { c.log.1 };
                if b >= a {
                    shade(a, b)?;
                }
            }
            one_line(root, one, y, y + h)?;
            if let Some((a, b)) = r.interval
                && b > a
            {
                let (a, b) = (s.ratio(a), s.ratio(b));
                let st = lk.color.stroke_width(2);
                root.draw(&PathElement::new(vec![(a, mid), (b, mid)], st))
                    .map_err(err)?;
                for x in [a, b] {
                    root.draw(&PathElement::new(vec![(x, mid - 5), (x, mid + 5)], st))
                        .map_err(err)?;
                }
            }
            let lv = if v > 0.0 { v.log10() } else { f64::NAN };
            if lv < s.r.0 || lv > s.r.1 {
                // A positive value outside the axis: an arrow at the edge
                // and the value.
                let (x, d) = if lv < s.r.0 {
                    (c.log.0 + 6, -1)
                } else {
                    (c.log.1 - 6, 1)
                };
                root.draw(&Polygon::new(
                    vec![(x + 6 * d, mid), (x - 4 * d, mid - 6), (x - 4 * d, mid + 6)],
                    lk.color.filled(),
                ))
                .map_err(err)?;
                let anchor = if d < 0 { HPos::Left } else { HPos::Right };
                text(
                    root,
                    &format!("{}x", num(v)),
                    (x - 12 * d, mid),
                    &font(SMALL).pos(Pos::new(anchor, VPos::Center)),
                )
            } else {
                marker(root, (s.ratio(v), mid), lk.marker, lk.color)?;
                undecided(root, r, (s.ratio(v), mid), lk)
            }
        }
        _ => {
            let room = (c.fraction.1 - c.zero) as f64;
            let placeholder = fit(&r.placeholder, room, SMALL);
            if ((c.zero + 10) as f64 + text_width(&placeholder, SMALL)) < (one - 6) as f64 {
                one_line(root, one, y, y + h)?;
            }
            text(
                root,
                &placeholder,
                (c.zero, mid),
                &font(SMALL).color(&RGBColor(90, 90, 90)).pos(left),
            )
        }
    }
}

/// The `?` beside an undecided row's mark at `at`, in the mark's colour.
fn undecided<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    r: &ForestRow,
    at: (i32, i32),
    lk: crate::style::Look,
) -> Result<()> {
    if !r.undecided {
        return Ok(());
    }
    text(
        root,
        "?",
        (at.0 + 8, at.1),
        &font(TEXT)
            .color(&lk.color)
            .pos(Pos::new(HPos::Left, VPos::Center)),
    )
}
