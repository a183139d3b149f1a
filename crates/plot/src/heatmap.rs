//! A heatmap: a table of cells, each filled with the colour of its category
//! (one of a short list with a legend), its text written in it, some cells
//! hatched and some outlined, drawn as SVG and palette PNG with the cells as
//! CSV (the numbers drawn). The caller says what a category, a hatch and an
//! outline mean; this draws them and knows nothing of claims or servers.
//!
//! Layout, top to bottom: the title; the column headings (wrapped, or
//! rotated for many narrow columns); one row per item, its label (and a
//! grey note under it) left of its cells; the legend (a swatch per
//! category, then the hatch and the outline where any cell has one); the
//! caption. Cell and label widths follow the text they hold, measured with
//! [`text_width`], so nothing is cut.
//!
//! [`tint`] holds light colour-blind-aware fills (Okabe and Ito's hues,
//! lightened so black text reads on them, and differing in lightness too).

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::images::{Drawing, write_svg_png};
use crate::style::{SMALL, TEXT, TITLE_SIZE, err, font, register_font, text, title};
use crate::text::{text_width, wrap};
use limitbench_base::error::{Error, Result};

/// Light fills for categories: Okabe and Ito's hues lightened (black text
/// reads on each), apart in lightness as well as hue.
pub mod tint {
    /// Bluish green, lightened: a pass.
    pub const GREEN: (u8, u8, u8) = (128, 205, 178);
    /// Sky blue, lightened: a pass with a condition.
    pub const BLUE: (u8, u8, u8) = (175, 218, 244);
    /// Vermillion, lightened: a failure.
    pub const VERMILLION: (u8, u8, u8) = (236, 150, 100);
    /// Yellow, lightened: undecided, a warning.
    pub const YELLOW: (u8, u8, u8) = (246, 232, 130);
    /// Reddish purple, lightened: an error.
    pub const PURPLE: (u8, u8, u8) = (214, 160, 196);
    /// Light grey: nothing measured.
    pub const GREY: (u8, u8, u8) = (226, 226, 226);
}

/// One cell: its category (an index into [`Heatmap::categories`]), its
/// text (one string per line), the number it shows (for the CSV), and
/// whether it is hatched or outlined.
#[derive(Debug, Clone, Default)]
pub struct HeatCell {
    pub category: usize,
    pub lines: Vec<String>,
    pub value: Option<f64>,
    pub hatched: bool,
    pub outlined: bool,
}

/// One row: its label, a note under it (grey, may be empty) and one
/// optional cell per column (None: blank).
#[derive(Debug, Clone, Default)]
pub struct HeatRow {
    pub label: String,
    pub note: String,
    pub cells: Vec<Option<HeatCell>>,
}

/// A category's name (in the legend and the CSV) and fill.
#[derive(Debug, Clone)]
pub struct Category {
    pub name: String,
    pub rgb: (u8, u8, u8),
}

#[derive(Debug, Clone, Default)]
pub struct Heatmap {
    /// File stem: `<name>.svg`, `.png`, `.csv`.
    pub name: String,
    pub title: String,
    pub caption: String,
    pub columns: Vec<String>,
    /// Column headings written upwards (for many narrow columns).
    pub rotate_columns: bool,
    pub categories: Vec<Category>,
    /// What a hatched cell means (its legend entry, shown when a cell is hatched).
    pub hatch_label: String,
    /// What an outlined cell means (its legend entry, shown when a cell is outlined).
    pub outline_label: String,
    pub rows: Vec<HeatRow>,
}

const W_MIN: i32 = 640;
const MARGIN: i32 = 15;
const CELL_TEXT: f64 = 13.0;
const LINE_H: i32 = 16;
const HATCH_STEP: i32 = 7;

/// Where everything goes, from the text it holds.
struct Layout {
    w: i32,
    h: i32,
    title: Vec<String>,
    caption: Vec<String>,
    heads: Vec<Vec<String>>,
    grid_x: i32,
    grid_y: i32,
    cell_w: i32,
    row_h: i32,
    legend: Vec<(i32, i32, usize)>,
    legend_y: i32,
}

/// The legend's entries: (kind, text): 0 a category swatch (its index in
/// `n`), 1 the hatch, 2 the outline.
fn legend_entries(m: &Heatmap) -> Vec<(usize, usize, String)> {
    let cells = || m.rows.iter().flat_map(|r| r.cells.iter().flatten());
    let mut out: Vec<(usize, usize, String)> = m
        .categories
        .iter()
        .enumerate()
        .map(|(i, c)| (0, i, c.name.clone()))
        .collect();
    if cells().any(|c| c.hatched) && !m.hatch_label.is_empty() {
        out.push((1, 0, m.hatch_label.clone()));
    }
    if cells().any(|c| c.outlined) && !m.outline_label.is_empty() {
        out.push((2, 0, m.outline_label.clone()));
    }
    out
}

const SWATCH: i32 = 26;

impl Layout {
    fn of(m: &Heatmap) -> Layout {
        let label_w = m
            .rows
            .iter()
            .map(|r| text_width(&r.label, TEXT).max(text_width(&r.note, SMALL)))
            .fold(80.0, f64::max)
            .ceil() as i32
            + 16;
        let max_lines = m
            .rows
            .iter()
            .flat_map(|r| r.cells.iter().flatten())
            .map(|c| c.lines.len())
            .max()
            .unwrap_or(1)
            .max(1) as i32;
        let noted = m.rows.iter().any(|r| !r.note.is_empty());
        let row_h = (max_lines * LINE_H + 10).max(if noted { 40 } else { 26 });
        let text_w = m
            .rows
            .iter()
            .flat_map(|r| r.cells.iter().flatten())
            .flat_map(|c| c.lines.iter())
            .map(|l| text_width(l, CELL_TEXT))
            .fold(0.0, f64::max);
        let longest_word = m
            .columns
            .iter()
            .flat_map(|c| c.split([' ', '\n']))
            .map(|w| text_width(w, SMALL))
            .fold(0.0, f64::max);
        let cell_w = if m.rotate_columns {
            text_w + 12.0
        } else {
            (text_w + 12.0).max(longest_word + 10.0)
        }
        .max(48.0)
        .ceil() as i32;
        let heads: Vec<Vec<String>> = m
            .columns
            .iter()
            .map(|c| {
                if m.rotate_columns {
                    vec![c.clone()]
                } else {
                    c.split('\n')
                        .flat_map(|p| wrap(p, (cell_w - 8) as f64, SMALL))
                        .collect()
                }
            })
            .collect();
        let head_h = if m.rotate_columns {
            m.columns
                .iter()
                .map(|c| text_width(c, SMALL))
                .fold(0.0, f64::max)
                .ceil() as i32
                + 12
        } else {
            heads.iter().map(|h| h.len() as i32).max().unwrap_or(1) * LINE_H + 8
        };
        let grid_x = MARGIN + label_w;
        let w = (grid_x + cell_w * m.columns.len() as i32 + MARGIN).max(W_MIN);
        let title = wrap(&m.title, (w - 2 * MARGIN) as f64, TITLE_SIZE);
        let grid_y = 12 + title.len() as i32 * 24 + 10 + head_h;
        // The legend flows left to right, wrapping at the canvas's width.
        let legend_y = grid_y + row_h * m.rows.len() as i32 + 16;
        let mut legend = Vec::new();
        let (mut x, mut line) = (MARGIN, 0);
        for (i, (_, _, name)) in legend_entries(m).iter().enumerate() {
            let ew = SWATCH + 6 + text_width(name, SMALL).ceil() as i32 + 18;
            if x > MARGIN && x + ew > w - MARGIN {
                x = MARGIN;
                line += 1;
            }
            legend.push((x, legend_y + line * 24, i));
            x += ew;
        }
        let legend_h = if legend.is_empty() {
            0
        } else {
            (line + 1) * 24
        };
        let caption = wrap(&m.caption, (w - 2 * MARGIN) as f64, SMALL);
        let h = legend_y + legend_h + 8 + caption.len() as i32 * 18 + 10;
        Layout {
            w,
            h,
            title,
            caption,
            heads,
            grid_x,
            grid_y,
            cell_w,
            row_h,
            legend,
            legend_y,
        }
    }
}

/// Diagonal hatch lines (slope -1 in pixels) clipped to a rectangle.
fn hatch<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    (x0, y0): (i32, i32),
    (x1, y1): (i32, i32),
) -> Result<()> {
    let st = RGBColor(40, 40, 40).stroke_width(1);
    // Lines x + y = c, for c across the rectangle.
    let mut c = x0 + y0 + HATCH_STEP / 2;
    while c < x1 + y1 {
        let (ax, bx) = ((c - y1).max(x0), (c - y0).min(x1));
        if ax < bx {
            area.draw(&PathElement::new(vec![(ax, c - ax), (bx, c - bx)], st))
                .map_err(err)?;
        }
        c += HATCH_STEP;
    }
    Ok(())
}

fn rgb((r, g, b): (u8, u8, u8)) -> RGBColor {
    RGBColor(r, g, b)
}

impl Heatmap {
    fn cells(&self) -> usize {
        self.rows
            .iter()
            .map(|r| r.cells.iter().flatten().count())
            .sum()
    }

    /// The cells drawn, one CSV row each: the row's label, the column (its
    /// heading on one line), the
    /// category's name, the text (lines joined by ` / `), the value, hatched
    /// and outlined.
    pub fn csv(&self) -> String {
        let mut w = csv::Writer::from_writer(vec![]);
        let _ = w.write_record([
            "row", "column", "category", "text", "value", "hatched", "outlined",
        ]);
        for r in &self.rows {
            for (j, c) in r.cells.iter().enumerate() {
                let Some(c) = c else { continue };
                let _ = w.write_record([
                    r.label.clone(),
                    self.columns
                        .get(j)
                        .map(|c| c.replace('\n', " "))
                        .unwrap_or_default(),
                    self.categories
                        .get(c.category)
                        .map(|k| k.name.clone())
                        .unwrap_or_default(),
                    c.lines.join(" / "),
                    c.value.map(|v| format!("{v}")).unwrap_or_default(),
                    c.hatched.to_string(),
                    c.outlined.to_string(),
                ]);
            }
        }
        String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
    }

    /// Write `<name>.svg`, `<name>.png` and `<name>.csv` into `dir`.
    pub fn write_to(&self, dir: &Path) -> Result<()> {
        register_font();
        if self.cells() == 0 {
            return Err(Error::Other(format!("heatmap {}: no cells", self.name)));
        }
        if let Some(c) = self
            .rows
            .iter()
            .flat_map(|r| r.cells.iter().flatten())
            .find(|c| c.category >= self.categories.len())
        {
            return Err(Error::Other(format!(
                "heatmap {}: a cell's category {} is not one of its {} categories",
                self.name,
                c.category,
                self.categories.len()
            )));
        }
        let l = Layout::of(self);
        let (w, h) = (l.w as u32, l.h as u32);
        write_svg_png(dir, &self.name, (w, h), &Laid { map: self, l: &l })?;
        std::fs::write(dir.join(format!("{}.csv", self.name)), self.csv())
            .map_err(|e| Error::io(format!("writing {}.csv", self.name), e))
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>, l: &Layout) -> Result<()> {
        root.fill(&WHITE).map_err(err)?;
        let top_left = Pos::new(HPos::Left, VPos::Top);
        title(root, &l.title, (MARGIN, 12))?;
        // Column headings, bottom-aligned above their columns.
        for (j, head) in l.heads.iter().enumerate() {
            let cx = l.grid_x + l.cell_w * j as i32 + l.cell_w / 2;
            if self.rotate_columns {
                text(
                    root,
                    &head[0],
                    (cx, l.grid_y - 6),
                    &font(SMALL)
                        .pos(Pos::new(HPos::Left, VPos::Center))
                        .transform(FontTransform::Rotate270),
                )?;
                continue;
            }
            let n = head.len() as i32;
            for (k, line) in head.iter().enumerate() {
                text(
                    root,
                    line,
                    (cx, l.grid_y - 6 - (n - k as i32) * LINE_H),
                    &font(SMALL).pos(Pos::new(HPos::Center, VPos::Top)),
                )?;
            }
        }
        let grey = RGBColor(90, 90, 90);
        for (i, r) in self.rows.iter().enumerate() {
            let y0 = l.grid_y + l.row_h * i as i32;
            let mid = y0 + l.row_h / 2;
            if r.note.is_empty() {
                text(
                    root,
                    &r.label,
                    (MARGIN, mid),
                    &font(TEXT).pos(Pos::new(HPos::Left, VPos::Center)),
                )?;
            } else {
                text(
                    root,
                    &r.label,
                    (MARGIN, mid - 1),
                    &font(TEXT).pos(Pos::new(HPos::Left, VPos::Bottom)),
                )?;
                text(
                    root,
                    &r.note,
                    (MARGIN, mid + 2),
                    &font(SMALL).color(&grey).pos(top_left),
                )?;
            }
            for (j, c) in r.cells.iter().enumerate() {
                let Some(c) = c else { continue };
                self.draw_cell(root, l, c, (l.grid_x + l.cell_w * j as i32, y0))?;
            }
        }
        for &(x, y, i) in &l.legend {
            let (kind, k, name) = &legend_entries(self)[i];
            let (a, b) = ((x, y), (x + SWATCH, y + 16));
            let fill = if *kind == 0 {
                rgb(self.categories[*k].rgb)
            } else {
                WHITE
            };
            root.draw(&Rectangle::new([a, b], fill.filled()))
                .map_err(err)?;
            match kind {
                1 => hatch(root, a, b)?,
                2 => root
                    .draw(&Rectangle::new([a, b], BLACK.stroke_width(3)))
                    .map_err(err)?,
                _ => root
                    .draw(&Rectangle::new([a, b], grey.stroke_width(1)))
                    .map_err(err)?,
            }
            text(
                root,
                name,
                (x + SWATCH + 6, y + 8),
                &font(SMALL).pos(Pos::new(HPos::Left, VPos::Center)),
            )?;
        }
        let mut y = l.h - 10 - l.caption.len() as i32 * 18;
        debug_assert!(y >= l.legend_y);
        for c in &l.caption {
            text(
                root,
                c,
                (MARGIN, y),
                &font(SMALL).color(&RGBColor(60, 60, 60)).pos(top_left),
            )?;
            y += 18;
        }
        Ok(())
    }

    fn draw_cell<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        l: &Layout,
        c: &HeatCell,
        (x, y): (i32, i32),
    ) -> Result<()> {
        let fill = rgb(self.categories[c.category].rgb);
        let (a, b) = ((x + 1, y + 1), (x + l.cell_w - 1, y + l.row_h - 1));
        root.draw(&Rectangle::new([a, b], fill.filled()))
            .map_err(err)?;
        let n = c.lines.len() as i32;
        let text_top = y + (l.row_h - n * LINE_H) / 2;
        if c.hatched {
            hatch(root, a, b)?;
            // The text keeps a plain ground of the cell's colour.
            let tw = c
                .lines
                .iter()
                .map(|s| text_width(s, CELL_TEXT))
                .fold(0.0, f64::max)
                .ceil() as i32;
            let cx = x + l.cell_w / 2;
            root.draw(&Rectangle::new(
                [
                    (cx - tw / 2 - 3, text_top - 1),
                    (cx + tw / 2 + 3, text_top + n * LINE_H + 1),
                ],
                fill.filled(),
            ))
            .map_err(err)?;
        }
        if c.outlined {
            root.draw(&Rectangle::new(
                [(a.0 + 1, a.1 + 1), (b.0 - 1, b.1 - 1)],
                BLACK.stroke_width(3),
            ))
            .map_err(err)?;
        }
        for (k, s) in c.lines.iter().enumerate() {
            text(
                root,
                s,
                (x + l.cell_w / 2, text_top + k as i32 * LINE_H + LINE_H / 2),
                &font(CELL_TEXT).pos(Pos::new(HPos::Center, VPos::Center)),
            )?;
        }
        Ok(())
    }
}

/// A heatmap with its layout: drawn alike on either backend.
struct Laid<'a> {
    map: &'a Heatmap,
    l: &'a Layout,
}

impl Drawing for Laid<'_> {
    fn draw_on<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<()> {
        self.map.draw(root, self.l)
    }
}

#[cfg(test)]
mod tests;
