//! A forest plot: one row per item, grouped, each row a value with its
//! interval on a shared log axis of ratios, the band where the row passes
//! shaded behind it, and a note at the right (systems and medical papers'
//! summary figure). The caller gives ratios (ours / published, say); this
//! draws them, a vertical reference line at 1, and writes the numbers
//! drawn as CSV. It knows nothing of what a row means.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::axes::{thin, ticks};
use crate::figure::{Axis, num};
use crate::marks::{dashed, marker, published_marker};
use crate::style::{FONT, SMALL, TEXT, err, font, look, register_font, text};
use crate::text::{text_width, wrap};
use limitbench_base::error::{Error, Result};

/// One row: its label, its value and interval (ratios; None: nothing to
/// draw, `placeholder` is written in the plot instead), the band where it
/// passes (either end may be infinite), and a note at the right.
#[derive(Debug, Clone, Default)]
pub struct ForestRow {
    pub label: String,
    pub value: Option<f64>,
    pub interval: Option<(f64, f64)>,
    pub band: Option<(f64, f64)>,
    pub note: String,
    pub placeholder: String,
}

/// A group of rows under a heading, drawn in one look (colour and marker).
#[derive(Debug, Clone, Default)]
pub struct ForestGroup {
    pub label: String,
    pub look: usize,
    pub rows: Vec<ForestRow>,
}

#[derive(Debug, Clone, Default)]
pub struct Forest {
    /// File stem: `<name>.svg`, `.png`, `.csv`.
    pub name: String,
    pub title: String,
    pub caption: String,
    /// What the axis shows (e.g. `ours / published`).
    pub x_label: String,
    /// The label of the line at 1 (e.g. `published`).
    pub one_label: String,
    /// The heading of the notes column.
    pub note_heading: String,
    pub groups: Vec<ForestGroup>,
}

// Wide enough that the notes column holds an assumed setting in full
// ("1 setting; at replica_call=fcall_ro-or-writable-replica").
const W: u32 = 1360;
const LABEL_W: i32 = 390;
const PLOT_X0: i32 = LABEL_W + 20;
const PLOT_X1: i32 = 900;
const NOTE_X: i32 = PLOT_X1 + 20;
const ROW_H: i32 = 21;
const GROUP_H: i32 = 30;
const TITLE_SIZE: f64 = 19.0;
/// The axis never reaches beyond these ratios; a value outside is drawn
/// as an arrow at the edge with its number beside it.
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

impl Forest {
    fn rows(&self) -> usize {
        self.groups.iter().map(|g| g.rows.len()).sum()
    }

    /// The log10 range of the axis: every value, interval end and finite
    /// band end, with 1 always inside, clamped to [`CLAMP`].
    fn range(&self) -> (f64, f64) {
        let mut lo = 1.0f64;
        let mut hi = 1.0f64;
        for r in self.groups.iter().flat_map(|g| &g.rows) {
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

    /// The numbers drawn: one row per row.
    pub fn csv(&self) -> String {
        let mut w = csv::Writer::from_writer(vec![]);
        let _ = w.write_record([
            "group",
            "kind",
            "label",
            "value",
            "low",
            "high",
            "band_low",
            "band_high",
            "note",
            "placeholder",
        ]);
        let o = |v: Option<f64>| v.map(|v| format!("{v}")).unwrap_or_default();
        for g in &self.groups {
            for r in &g.rows {
                // `kind` as in a figure's CSV: `data` for a drawn value.
                let kind = if r.value.is_some() { "data" } else { "text" };
                let _ = w.write_record([
                    g.label.clone(),
                    kind.into(),
                    r.label.clone(),
                    o(r.value),
                    o(r.interval.map(|i| i.0)),
                    o(r.interval.map(|i| i.1)),
                    o(r.band.map(|b| b.0)),
                    o(r.band.map(|b| b.1)),
                    r.note.clone(),
                    r.placeholder.clone(),
                ]);
            }
        }
        String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
    }

    /// Write `<name>.svg`, `<name>.png` and `<name>.csv` into `dir`.
    pub fn write_to(&self, dir: &Path) -> Result<()> {
        register_font();
        if self.rows() == 0 {
            return Err(Error::Other(format!("forest {}: no rows", self.name)));
        }
        let title = wrap(&self.title, (W - 30) as f64, TITLE_SIZE);
        let caption = wrap(&self.caption, (W - 30) as f64, SMALL);
        let top = 14 + title.len() as i32 * 24 + 26;
        let body = self.rows() as i32 * ROW_H + self.groups.len() as i32 * GROUP_H;
        let h = (top + body + 70 + caption.len() as i32 * 18 + 8) as u32;
        let svg = dir.join(format!("{}.svg", self.name));
        {
            let root = SVGBackend::new(&svg, (W, h)).into_drawing_area();
            self.draw(&root, &title, &caption, top)?;
            root.present().map_err(err)?;
        }
        let mut rgb = vec![0u8; W as usize * h as usize * 3];
        {
            let backend = crate::bitmap_text::GlyphFix {
                inner: BitMapBackend::with_buffer(&mut rgb, (W, h)),
                font: ab_glyph::FontRef::try_from_slice(FONT)
                    .map_err(|e| Error::Other(e.to_string()))?,
            };
            let root = backend.into_drawing_area();
            self.draw(&root, &title, &caption, top)?;
            root.present().map_err(err)?;
        }
        crate::png_out::write_palette_png(&dir.join(format!("{}.png", self.name)), W, h, &rgb)?;
        std::fs::write(dir.join(format!("{}.csv", self.name)), self.csv())
            .map_err(|e| Error::io(format!("writing {}.csv", self.name), e))
    }

    fn draw<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        title: &[String],
        caption: &[String],
        top: i32,
    ) -> Result<()> {
        root.fill(&WHITE).map_err(err)?;
        let left = Pos::new(HPos::Left, VPos::Center);
        let mut y = 10;
        for t in title {
            text(
                root,
                t,
                (15, y),
                &font(TITLE_SIZE).pos(Pos::new(HPos::Left, VPos::Top)),
            )?;
            y += 24;
        }
        let (r0, r1) = self.range();
        let px = |v: f64| {
            let t = (v.log10().clamp(r0, r1) - r0) / (r1 - r0);
            PLOT_X0 + (t * (PLOT_X1 - PLOT_X0) as f64).round() as i32
        };
        let body = self.rows() as i32 * ROW_H + self.groups.len() as i32 * GROUP_H;
        let bottom = top + body;
        // Ticks and their grid lines.
        let axis = Axis::log("");
        let tk = thin(
            ticks((r0, r1), &axis, 9),
            (r0, r1),
            (PLOT_X1 - PLOT_X0) as f64,
            true,
        );
        let grid = RGBColor(225, 225, 225).stroke_width(1);
        for t in &tk {
            let x = px(10f64.powf(*t));
            root.draw(&PathElement::new(vec![(x, top), (x, bottom)], grid))
                .map_err(err)?;
            text(
                root,
                &num(10f64.powf(*t)),
                (x, bottom + 6),
                &font(SMALL).pos(Pos::new(HPos::Center, VPos::Top)),
            )?;
        }
        root.draw(&PathElement::new(
            vec![(PLOT_X0, bottom), (PLOT_X1, bottom)],
            BLACK.stroke_width(1),
        ))
        .map_err(err)?;
        text(
            root,
            &self.x_label,
            ((PLOT_X0 + PLOT_X1) / 2, bottom + 28),
            &font(TEXT).pos(Pos::new(HPos::Center, VPos::Top)),
        )?;
        // The line at 1 (the published value), its marker and label on top.
        // Drawn row by row (below), only where no text lies under it.
        let one = px(1.0);
        let one_line = |y0: i32, y1: i32| {
            dashed(
                root,
                &[(one, y0), (one, y1)],
                (14, 4),
                BLACK.stroke_width(2),
            )
        };
        one_line(top - 4, top)?;
        published_marker(root, (one, top - 12))?;
        text(
            root,
            &self.one_label,
            (one + 12, top - 12),
            &font(SMALL).pos(left),
        )?;
        text(
            root,
            &self.note_heading,
            (NOTE_X, top - 12),
            &font(SMALL).pos(left),
        )?;
        let mut y = top;
        for g in &self.groups {
            let lk = look(g.look);
            let mid = y + GROUP_H / 2 + 2;
            marker(root, (22, mid), lk.marker, lk.color)?;
            text(root, &g.label, (36, mid), &font(15.0).pos(left))?;
            if 36.0 + text_width(&g.label, 15.0) < (one - 6) as f64 {
                one_line(y, y + GROUP_H)?;
            }
            y += GROUP_H;
            for (i, r) in g.rows.iter().enumerate() {
                let y = y + i as i32 * ROW_H;
                let mid = y + ROW_H / 2;
                if i % 2 == 0 {
                    root.draw(&Rectangle::new(
                        [(10, y), (W as i32 - 10, y + ROW_H)],
                        RGBColor(246, 246, 246).filled(),
                    ))
                    .map_err(err)?;
                }
                text(
                    root,
                    &fit(&r.label, (LABEL_W - 30) as f64, SMALL),
                    (36, mid),
                    &font(SMALL).pos(left),
                )?;
                text(
                    root,
                    &fit(&r.note, (W as i32 - NOTE_X - 14) as f64, SMALL),
                    (NOTE_X, mid),
                    &font(SMALL).pos(left),
                )?;
                if let Some((a, b)) = r.band {
                    let a = if a > 0.0 { px(a) } else { PLOT_X0 };
                    let b = if b.is_finite() { px(b) } else { PLOT_X1 };
                    if b > a {
                        root.draw(&Rectangle::new(
                            [(a, mid - 7), (b, mid + 7)],
                            RGBAColor(0, 0, 0, 0.16).filled(),
                        ))
                        .map_err(err)?;
                    }
                }
                let Some(v) = r.value.filter(|v| v.is_finite()) else {
                    let placeholder = fit(&r.placeholder, (PLOT_X1 - PLOT_X0 - 20) as f64, SMALL);
                    if ((PLOT_X0 + 10) as f64 + text_width(&placeholder, SMALL)) < (one - 6) as f64
                    {
                        one_line(y, y + ROW_H)?;
                    }
                    text(
                        root,
                        &placeholder,
                        (PLOT_X0 + 10, mid),
                        &font(SMALL).color(&RGBColor(90, 90, 90)).pos(left),
                    )?;
                    continue;
                };
                one_line(y, y + ROW_H)?;
                if let Some((a, b)) = r.interval
                    && b > a
                {
                    let (a, b) = (px(a.max(1e-300)), px(b));
                    let st = lk.color.stroke_width(2);
                    root.draw(&PathElement::new(vec![(a, mid), (b, mid)], st))
                        .map_err(err)?;
                    for x in [a, b] {
                        root.draw(&PathElement::new(vec![(x, mid - 5), (x, mid + 5)], st))
                            .map_err(err)?;
                    }
                }
                // A ratio of 0 (or below) lies left of every log axis.
                let lv = if v > 0.0 {
                    v.log10()
                } else {
                    f64::NEG_INFINITY
                };
                if lv < r0 || lv > r1 {
                    // Outside the axis: an arrow at the edge and the value.
                    let (x, d) = if lv < r0 {
                        (PLOT_X0 + 6, -1)
                    } else {
                        (PLOT_X1 - 6, 1)
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
                    )?;
                } else {
                    marker(root, (px(v), mid), lk.marker, lk.color)?;
                }
            }
            y += g.rows.len() as i32 * ROW_H;
        }
        let mut y = bottom + 54;
        for c in caption {
            text(
                root,
                c,
                (15, y),
                &font(SMALL)
                    .color(&RGBColor(60, 60, 60))
                    .pos(Pos::new(HPos::Left, VPos::Top)),
            )?;
            y += 18;
        }
        Ok(())
    }
}
