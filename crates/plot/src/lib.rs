//! limitbench's chart library: a [`figure::Figure`] of panels (points with
//! whiskers, references and bands, shaded phases, category axes) drawn as
//! SVG and as a palette PNG, with the numbers drawn written as CSV.
//!
//! It draws what it is given and knows nothing of claims, verdicts or
//! experiments (the crate depends on neither): the analysis turns a claim
//! into a reference line and its passing band before it reaches a figure.
//!
//! - `figure`: the model (Figure, Panel, Series, Pt, Reference, Shade) and its CSV;
//!   `grid`: a table of coloured cells (the scorecard); `heatmap`: a table of
//!   cells coloured by category, with text, hatching and outlines (PNG, SVG, CSV).
//! - `forest`: one row per item on a log strip of ratios (with a slot for 0)
//!   or a strip of fractions, with text columns (the claims' summary figure).
//! - `draw`: the layout; `panel`: one panel's parts; `axes`: ticks and ranges;
//!   `ends`: series named at their lines' right ends (direct labels);
//!   `nines`: the percentile axis (p50, p90, p99, ...); `marks`: markers
//!   and dashes; `ring`: the judged value's ring, interval bar and label
//!   (`ring::place`: the one placer of those labels); `style`: font,
//!   palette, looks, text sizes;
//!   `colour_distance`: CIELAB, CIEDE2000 and colour-blind vision, the
//!   palette tests' yardstick;
//!   `text`: widths and wrapping without a font engine.
//! - `images`: the one writer of a drawing's SVG and PNG (both backends);
//!   `bitmap_text`: PNG glyphs on one baseline; `png_out`: palette PNGs;
//!   `svg_text`: a written SVG's text read back, for the figure tests.

pub mod axes;
pub mod bitmap_text;
pub mod colour_distance;
pub mod draw;
pub mod ends;
pub mod figure;
pub mod forest;
pub mod grid;
pub mod heatmap;
pub mod images;
pub mod marks;
pub mod nines;
pub mod panel;
pub mod png_out;
pub mod ring;
pub mod style;
pub mod svg_text;
pub mod text;
