//! A grid of coloured, labelled cells (a table drawn as a heatmap): one row
//! per item, one column per property. The caller chooses each cell's text
//! and colour; this draws them, with the column names rotated above.

use std::path::Path;

use plotters::prelude::*;

use limitbench_base::error::{Error, Result};

/// One cell: its text and its fill colour (RGB).
#[derive(Debug, Clone)]
pub struct GridCell {
    pub text: String,
    pub rgb: (u8, u8, u8),
}

/// One row: its label and one optional cell per column (None: left blank).
#[derive(Debug, Clone)]
pub struct GridRow {
    pub label: String,
    pub cells: Vec<Option<GridCell>>,
}

#[derive(Debug, Clone)]
pub struct Grid {
    /// One line above the grid (what the colours mean, the size).
    pub title: String,
    pub columns: Vec<String>,
    pub rows: Vec<GridRow>,
}

/// Write `grid` as an SVG.
pub fn write_grid_svg(path: &Path, grid: &Grid) -> Result<()> {
    let (lw, cw, rh, top) = (230i32, 92i32, 26i32, 120i32);
    let w = lw + cw * grid.columns.len() as i32 + 10;
    let h = top + rh * grid.rows.len() as i32 + 40;
    let root = SVGBackend::new(path, (w as u32, h as u32)).into_drawing_area();
    let e = |x: &dyn std::fmt::Display| Error::Other(format!("writing {}: {x}", path.display()));
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let font = ("sans-serif", 12).into_font();
    let small = ("sans-serif", 11).into_font();
    root.draw(&Text::new(grid.title.clone(), (5, 5), font.clone()))
        .map_err(|x| e(&x))?;
    for (j, p) in grid.columns.iter().enumerate() {
        let x = lw + cw * j as i32 + 4;
        root.draw(&Text::new(
            p.clone(),
            (x, top - 12),
            small.clone().transform(FontTransform::Rotate270),
        ))
        .map_err(|x| e(&x))?;
    }
    for (i, r) in grid.rows.iter().enumerate() {
        let y = top + rh * i as i32;
        root.draw(&Text::new(r.label.clone(), (5, y + 7), font.clone()))
            .map_err(|x| e(&x))?;
        for (j, c) in r.cells.iter().enumerate() {
            let Some(c) = c else { continue };
            let x = lw + cw * j as i32;
            let (cr, cg, cb) = c.rgb;
            root.draw(&Rectangle::new(
                [(x, y), (x + cw - 2, y + rh - 2)],
                RGBColor(cr, cg, cb).filled(),
            ))
            .map_err(|x| e(&x))?;
            root.draw(&Text::new(c.text.clone(), (x + 4, y + 7), small.clone()))
                .map_err(|x| e(&x))?;
        }
    }
    root.present().map_err(|x| e(&x))?;
    Ok(())
}
