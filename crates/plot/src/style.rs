//! The look shared by every part of a figure: the bundled font, the
//! colour-blind-safe palette with its markers and dashes, the looks of
//! reference lines and shaded phases, text sizes, and the few drawing
//! helpers (text at a point, plotters' errors as ours) that the layout
//! (`draw`), one panel's parts (`panel`), the axes and the markers share.

use std::sync::Once;

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::figure::RefKind;
use limitbench_base::error::{Error, Result};

/// The bundled font (DejaVu Sans, Bitstream Vera license: see
/// `crates/plot/assets/fonts/DejaVuSans-LICENSE.txt`).
pub(crate) static FONT: &[u8] = include_bytes!("../assets/fonts/DejaVuSans.ttf");
pub(crate) const FAMILY: &str = "sans-serif";

/// Register the bundled font once per process for every text plotters draws.
pub fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if plotters::style::register_font(FAMILY, FontStyle::Normal, FONT).is_err() {
            panic!("the bundled font crates/plot/assets/fonts/DejaVuSans.ttf does not parse");
        }
    });
}

/// Okabe and Ito's colour-blind-safe palette without its yellow (too pale
/// on white) and without black (the published value's colour), with a
/// dark grey and Tol's wine in their places: eight colours, so the eight
/// strategies most figures compare each have their own.
const PALETTE: [RGBColor; COLOURS] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(230, 159, 0),
    RGBColor(90, 90, 90),
    RGBColor(136, 34, 85),
];
/// How many colours the looks cycle through: looks `i` and `i + COLOURS`
/// share a colour (and differ in marker).
pub const COLOURS: usize = 8;
const MARKERS: usize = 6;
const MARKER_NAMES: [&str; MARKERS] = ["circle", "square", "triangle", "diamond", "plus", "cross"];
/// (dash, gap) in pixels; (0, 0) is solid.
const DASHES: [(u32, u32); 3] = [(0, 0), (9, 5), (2, 4)];
/// How many distinct looks there are: look `i` has colour `i % COLOURS`
/// and, in its `i / COLOURS`-th variant (0..6), the marker and dash after
/// the colour's own, so every look differs from every other in colour or
/// marker, and looks `i`, `i + COLOURS`, ... are one colour's six variants.
pub const LOOKS: usize = COLOURS * MARKERS;

#[derive(Clone, Copy)]
pub(crate) struct Look {
    pub color: RGBColor,
    pub marker: usize,
    pub dash: (u32, u32),
}

pub(crate) fn look(i: usize) -> Look {
    let i = i % LOOKS;
    let (c, k) = (i % COLOURS, i / COLOURS);
    Look {
        color: PALETTE[c],
        marker: (c + k) % MARKERS,
        dash: DASHES[(c + k) % DASHES.len()],
    }
}

/// Look `i` in words, as the figure CSV's `look` column writes it
/// (`#0072b2 circle`): the figure tests compare strategies' looks by it.
pub fn look_name(i: usize) -> String {
    let l = look(i);
    format!(
        "#{:02x}{:02x}{:02x} {}",
        l.color.0, l.color.1, l.color.2, MARKER_NAMES[l.marker]
    )
}

/// The drawn look of every series name of a figure, in first-seen order:
/// a series with a fixed look keeps it; the others take, in order, the
/// looks no fixed series of the figure uses.
pub(crate) fn resolve_looks(
    f: &crate::figure::Figure,
) -> Vec<(String, crate::figure::Draw, usize)> {
    let fixed: Vec<usize> = f
        .panels
        .iter()
        .flat_map(|p| p.series.iter().filter_map(|s| s.look))
        .collect();
    // A free look of a colour no fixed series of the figure has comes first,
    // so a series that is no strategy is not drawn in the colour of a
    // strategy beside it; the others only when those run out.
    let order = || (f.free_looks_from..LOOKS).chain(0..f.free_looks_from);
    let taken = |i: usize| fixed.iter().any(|k| k % COLOURS == i % COLOURS);
    let mut free = order()
        .filter(|i| !fixed.contains(i) && !taken(*i))
        .chain(order().filter(|i| !fixed.contains(i) && taken(*i)));
    let mut out: Vec<(String, crate::figure::Draw, usize)> = Vec::new();
    for p in &f.panels {
        for s in &p.series {
            if out.iter().any(|n| n.0 == s.name) {
                continue;
            }
            let i = s.look.unwrap_or_else(|| free.next().unwrap_or(0));
            out.push((s.name.clone(), s.draw, i));
        }
    }
    out
}

pub(crate) fn ref_look(k: RefKind) -> (RGBColor, (u32, u32), f64) {
    match k {
        RefKind::Published => (RGBColor(0, 0, 0), (14, 4), 0.10),
        RefKind::Expected => (RGBColor(110, 110, 110), (6, 4), 0.0),
        RefKind::Limit => (RGBColor(170, 0, 0), (2, 3), 0.0),
    }
}

pub(crate) const SHADE_TONES: [RGBColor; 4] = [
    RGBColor(255, 196, 120),
    RGBColor(240, 120, 120),
    RGBColor(140, 210, 140),
    RGBColor(170, 170, 220),
];

pub(crate) const TEXT: f64 = 14.0;
pub(crate) const SMALL: f64 = 13.0;

pub(crate) fn err<T: std::fmt::Display>(e: T) -> Error {
    Error::Other(format!("drawing figure: {e}"))
}

pub(crate) fn font(size: f64) -> TextStyle<'static> {
    TextStyle::from((FAMILY, size).into_font()).color(&BLACK)
}

pub(crate) fn text<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    s: &str,
    at: (i32, i32),
    style: &TextStyle,
) -> Result<()> {
    if s.is_empty() {
        return Ok(());
    }
    area.draw(&Text::new(s.to_string(), at, style.clone()))
        .map_err(err)
}
