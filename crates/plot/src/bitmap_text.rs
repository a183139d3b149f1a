//! A drawing backend for the PNGs that places each glyph of a text on one
//! baseline.
//!
//! plotters 0.3.7 draws a glyph of an `ab_glyph` font at
//! `(size / 2 + top) as i32`, where `top` is the glyph's whole-pixel top
//! edge. `as` rounds towards zero, so glyphs whose top lies above that middle
//! line (digits, capitals) are rounded down and small glyphs below it (`.`,
//! `,`) up: at the 11-13 px of our labels a full stop sits one pixel higher
//! than the digits beside it and reads as a middle dot (`B4·1`), and a comma
//! as a full stop. [`GlyphFix`] wraps a backend and draws text the same way
//! but rounds every glyph down alike. Everything else goes to the wrapped
//! backend unchanged; the SVG is not affected (its text is text).

use ab_glyph::{Font, FontRef, ScaleFont};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};
use plotters_backend::{
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingErrorKind,
};

/// `inner` with its text drawn from `font` on a common baseline.
pub struct GlyphFix<'f, B> {
    pub inner: B,
    pub font: FontRef<'f>,
}

impl<B: DrawingBackend> GlyphFix<'_, B> {
    /// Call `pixel(x, y, coverage)` for every pixel of `text` at `size`,
    /// relative to the top left of its layout box (plotters' convention:
    /// the baseline `size / 2` below the box's top edge).
    fn glyph_pixels(&self, size: f64, text: &str, mut pixel: impl FnMut(i32, i32, f32)) {
        let font = self.font.as_scaled(size as f32);
        let mut x = 0f32;
        let mut prev = None;
        for c in text.chars() {
            let id = font.glyph_id(c);
            if let Some(p) = prev {
                x += font.kern(p, id);
            }
            prev = Some(id);
            if let Some(outline) = font.outline_glyph(font.scaled_glyph(c)) {
                let b = outline.px_bounds();
                // floor, not `as`: the same rounding for every glyph.
                let dy = (size as f32 / 2.0 + b.min.y).floor() as i32;
                let dx = x as i32;
                outline.draw(|gx, gy, cov| pixel(gx as i32 + dx, gy as i32 + dy, cov));
            }
            x += font.h_advance(id);
        }
    }
}

impl<B: DrawingBackend> DrawingBackend for GlyphFix<'_, B> {
    type ErrorType = B::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        self.inner.get_size()
    }
    fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.inner.ensure_prepared()
    }
    fn present(&mut self) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.inner.present()
    }
    fn draw_pixel(
        &mut self,
        p: BackendCoord,
        c: BackendColor,
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.inner.draw_pixel(p, c)
    }
    fn draw_line<S: BackendStyle>(
        &mut self,
        a: BackendCoord,
        b: BackendCoord,
        s: &S,
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.inner.draw_line(a, b, s)
    }
    fn draw_rect<S: BackendStyle>(
        &mut self,
        a: BackendCoord,
        b: BackendCoord,
        s: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.inner.draw_rect(a, b, s, fill)
    }
    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        s: &S,
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.inner.draw_path(path, s)
    }
    fn draw_circle<S: BackendStyle>(
        &mut self,
        c: BackendCoord,
        r: u32,
        s: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.inner.draw_circle(c, r, s, fill)
    }
    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        s: &S,
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.inner.fill_polygon(vert, s)
    }
    fn blit_bitmap(
        &mut self,
        pos: BackendCoord,
        (w, h): (u32, u32),
        src: &[u8],
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.inner.blit_bitmap(pos, (w, h), src)
    }

    /// plotters' own text placement (layout box, anchor, rotation), with the
    /// glyphs from [`GlyphFix::glyph_pixels`].
    fn draw_text<S: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &S,
        pos: BackendCoord,
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        let color = style.color();
        if color.alpha == 0.0 {
            return Ok(());
        }
        let ((min_x, min_y), (max_x, max_y)) = style
            .layout_box(text)
            .map_err(|e| DrawingErrorKind::FontError(Box::new(e)))?;
        let (width, height) = (max_x - min_x, max_y - min_y);
        let dx = match style.anchor().h_pos {
            HPos::Left => 0,
            HPos::Right => -width,
            HPos::Center => -width / 2,
        };
        let dy = match style.anchor().v_pos {
            VPos::Top => 0,
            VPos::Center => -height / 2,
            VPos::Bottom => -height,
        };
        let trans = style.transform();
        let (w, h) = self.get_size();
        let mut pixels = Vec::new();
        self.glyph_pixels(style.size(), text, |x, y, cov| {
            let (x, y) = trans.transform(x + dx - min_x, y + dy - min_y);
            let (x, y) = (pos.0 + x, pos.1 + y);
            if x >= 0 && x < w as i32 && y >= 0 && y < h as i32 {
                pixels.push(((x, y), cov));
            }
        });
        for (p, cov) in pixels {
            let c = BackendColor {
                alpha: color.alpha * f64::from(cov),
                rgb: color.rgb,
            };
            self.inner.draw_pixel(p, c)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lowest inked row of each character of `text` drawn at `size`.
    fn bottoms(text: &str, size: f64) -> Vec<i32> {
        let fix = GlyphFix {
            inner: NoBackend,
            font: FontRef::try_from_slice(crate::style::FONT).unwrap(),
        };
        text.chars()
            .map(|c| {
                let mut bottom = i32::MIN;
                fix.glyph_pixels(size, &c.to_string(), |_, y, cov| {
                    if cov > 0.5 {
                        bottom = bottom.max(y);
                    }
                });
                bottom
            })
            .collect()
    }

    struct NoBackend;
    impl DrawingBackend for NoBackend {
        type ErrorType = std::io::Error;
        fn get_size(&self) -> (u32, u32) {
            (0, 0)
        }
        fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<std::io::Error>> {
            Ok(())
        }
        fn present(&mut self) -> Result<(), DrawingErrorKind<std::io::Error>> {
            Ok(())
        }
        fn draw_pixel(
            &mut self,
            _: BackendCoord,
            _: BackendColor,
        ) -> Result<(), DrawingErrorKind<std::io::Error>> {
            Ok(())
        }
    }

    #[test]
    fn a_full_stop_sits_on_the_digits_baseline_at_label_sizes() {
        for size in [11.0, 12.0, 13.0, 14.0, 15.0] {
            let b = bottoms("1.0", size);
            assert_eq!(
                b[0], b[1],
                "size {size}: digit {} vs full stop {}",
                b[0], b[1]
            );
            assert_eq!(b[0], b[2], "size {size}");
        }
    }
}
