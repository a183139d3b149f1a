//! The one writer of a drawing's two images: `<name>.svg` through plotters'
//! SVG backend, then `<name>.png` through a bitmap backend (with the glyph
//! fix of [`crate::bitmap_text`]) written as a palette PNG by
//! [`crate::png_out`]. A figure, the claims' forest and a heatmap each say
//! how to draw themselves once, generic over the backend ([`Drawing`]);
//! this runs that drawing on both backends.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::style::{FONT, err, register_font};
use limitbench_base::error::{Error, Result};

/// Something drawn the same way on any plotters backend.
pub trait Drawing {
    /// Draw onto `root` (the whole image, already sized).
    fn draw_on<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<()>;
}

/// Write `<name>.svg` and `<name>.png` of `drawing`, `w` x `h` px, into `dir`.
pub fn write_svg_png(
    dir: &Path,
    name: &str,
    (w, h): (u32, u32),
    drawing: &impl Drawing,
) -> Result<()> {
    register_font();
    let svg = dir.join(format!("{name}.svg"));
    {
        let root = SVGBackend::new(&svg, (w, h)).into_drawing_area();
        drawing.draw_on(&root)?;
        root.present().map_err(err)?;
    }
    let mut rgb = vec![0u8; w as usize * h as usize * 3];
    {
        let backend = crate::bitmap_text::GlyphFix {
            inner: BitMapBackend::with_buffer(&mut rgb, (w, h)),
            font: ab_glyph::FontRef::try_from_slice(FONT)
                .map_err(|e| Error::Other(e.to_string()))?,
        };
        let root = backend.into_drawing_area();
        drawing.draw_on(&root)?;
        root.present().map_err(err)?;
    }
    crate::png_out::write_palette_png(&dir.join(format!("{name}.png")), w, h, &rgb)
}
