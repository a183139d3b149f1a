//! The look shared by every part of a figure: the bundled font, the
//! colour-blind-aware palette with its markers and dashes, the looks of
//! reference lines and shaded phases, text sizes, and the few drawing
//! helpers (text at a point, plotters' errors as ours) that the layout
//! (`draw`), one panel's parts (`panel`), the axes and the markers share.
//!
//! A look is an index ([`look_name`] says it in words):
//! - `0..LOOKS`: the palette's, a colour (`PALETTE`'s 18) with one of six
//!   markers; colours `0..NAMED_COLOURS` are keyed by the caller (the
//!   analysis: one per strategy), the others are spare: series without a
//!   fixed look take them first ([`resolve_looks`]), and [`spare_look`]
//!   picks one from a key (the analysis: a stable hash of a manifest
//!   strategy's name);
//! - `LOOKS..MODEL_LOOK`: ramps ([`ramp_look`]), for series that are steps
//!   of one ordered value (round trip, workers, load, servers): one hue,
//!   light to dark, never a named colour;
//! - [`MODEL_LOOK`]: a model's line (grey, short dashes);
//! - then the neutral looks ([`neutral_look`]): near-black, a marker and
//!   dash each, for a second parameter beside a ramp.
//!
//! A parameter (round trip, backoff, load) is drawn on a ramp or in the
//! neutral looks, never in a palette colour: those say "a strategy".

use std::sync::Once;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::figure::{Draw, RefKind, Series};
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

/// The series colours, chosen for colour-blind readers and for white paper
/// (none paler than CIELAB L* 72, none close to the published value's
/// black or the greys). Their places:
///
/// - 0..5: Okabe and Ito's palette ("Color Universal Design", 2008):
///   blue, vermillion, bluish green, reddish purple, sky blue;
/// - 5..12: gold, dark green, crimson, olive, indigo, lavender, brown:
///   picked from the sRGB cube (steps of 17) to keep every pair of the
///   twelve at least as far apart as Okabe-Ito's closest pair (blue and
///   sky blue, CIEDE2000 22.3; Okabe-Ito's orange and yellow, Tol's red,
///   wine and purple were at 15 to 22 from a colour beside them);
/// - 12..14: two neutral greys;
/// - 14..18 ([`SPARE_COLOURS`]): red, lime, violet and salmon, the colours
///   farthest from the fourteen above, for series the caller does not
///   name (and, in the analysis, strategies added from manifests).
///
/// Colours 0..[`NAMED_COLOURS`] are the caller's to key by name: the
/// analysis gives its twelve built-in strategies 0..12, one colour each,
/// and GET and INCR the greys. Any two of the twelve differ by a CIEDE2000
/// distance of at least 22.3 for normal vision, any two of the 18 by 21.3,
/// each is at least 21.6 from black and the greys (`colour_distance`'s
/// tests); no 12 colours stay that far apart for every colour-vision
/// deficiency, so each colour also has its own marker ([`OWN_MARKER`]).
pub(crate) const PALETTE: [RGBColor; COLOURS] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(204, 170, 0),
    RGBColor(0, 85, 34),
    RGBColor(153, 0, 68),
    RGBColor(119, 102, 0),
    RGBColor(68, 34, 153),
    RGBColor(153, 136, 255),
    RGBColor(102, 51, 17),
    RGBColor(80, 80, 80),
    RGBColor(150, 150, 150),
    RGBColor(255, 0, 68),
    RGBColor(119, 187, 17),
    RGBColor(187, 0, 238),
    RGBColor(238, 153, 136),
];
/// How many colours the palette looks cycle through: looks `i` and
/// `i + COLOURS` share a colour (and differ in marker).
pub const COLOURS: usize = 18;
/// Colours `0..NAMED_COLOURS` are keyed by the caller (one per name);
/// the rest are spare.
pub const NAMED_COLOURS: usize = 14;
/// Colours `NAMED_COLOURS..COLOURS`: for series without a fixed look
/// first, and for looks chosen by [`spare_look`].
pub const SPARE_COLOURS: usize = COLOURS - NAMED_COLOURS;
const MARKERS: usize = 6;
const MARKER_NAMES: [&str; MARKERS] = ["circle", "square", "triangle", "diamond", "plus", "cross"];
/// Marker indices (into the marker names), for [`look_with`].
pub mod marker {
    pub const CIRCLE: usize = 0;
    pub const SQUARE: usize = 1;
    pub const TRIANGLE: usize = 2;
    pub const DIAMOND: usize = 3;
    pub const PLUS: usize = 4;
    pub const CROSS: usize = 5;
}
/// Palette indices by name, for callers that pick a colour for what it
/// says (a verdict's group) rather than for a name.
pub mod colour {
    pub const BLUE: usize = 0;
    pub const VERMILLION: usize = 1;
    pub const BLUISH_GREEN: usize = 2;
    pub const GOLD: usize = 5;
    pub const GREY: usize = 12;
}
/// Each colour's own marker (its first look's): two colours that share a
/// marker differ by a CIEDE2000 distance of at least 25 for normal vision
/// and for simulated protanopia, deuteranopia and tritanopia (Machado,
/// Oliveira and Fernandes 2009, severity 1; `colour_distance`'s tests),
/// so a colour-blind reader who cannot tell two colours apart can tell
/// their markers apart.
pub(crate) const OWN_MARKER: [usize; COLOURS] =
    [2, 4, 1, 5, 0, 0, 5, 0, 2, 3, 3, 1, 4, 4, 3, 5, 1, 2];
/// (dash, gap) in pixels; (0, 0) is solid.
const DASHES: [(u32, u32); 3] = [(0, 0), (9, 5), (2, 4)];
/// How many palette looks there are: look `i` has colour `i % COLOURS`
/// and, in its `i / COLOURS`-th variant (0..6), the marker after the
/// colour's own (and a dash), so every palette look differs from every
/// other in colour or marker, and looks `i`, `i + COLOURS`, ... are one
/// colour's six variants.
pub const LOOKS: usize = COLOURS * MARKERS;
/// How many looks [`spare_look`] chooses from.
pub const SPARE_LOOKS: usize = SPARE_COLOURS * MARKERS;
/// The longest ramp [`ramp_look`] draws with steps of their own colour.
pub const RAMP_STEPS: usize = 12;
/// The ramps' looks, after the palette's (one ramp for each length 1..=12).
const RAMP_LOOKS: usize = RAMP_STEPS * (RAMP_STEPS + 1) / 2;
/// The look of a model's line ([`MODEL_LOOK`]): the grey and dash of an
/// expected value's reference line, so a model never reads as a strategy
/// or as the published value (black, long dashes, a diamond at its end).
pub const MODEL_LOOK: usize = LOOKS + RAMP_LOOKS;
/// Every look: the palette's, the ramps', the model's, then the neutral
/// looks ([`neutral_look`]).
pub const ALL_LOOKS: usize = MODEL_LOOK + 1 + MARKERS;
/// The colour of the neutral looks: near-black, no palette colour.
const NEUTRAL: RGBColor = RGBColor(40, 40, 40);
/// The ramp of ordered values: ColorBrewer's single-hue "Blues" (Harrower
/// and Brewer 2003), its five darkest classes, light to dark (the lighter
/// ones fade on white).
const RAMP: [RGBColor; 5] = [
    RGBColor(107, 174, 214),
    RGBColor(66, 146, 198),
    RGBColor(33, 113, 181),
    RGBColor(8, 81, 156),
    RGBColor(8, 48, 107),
];

#[derive(Clone, Copy)]
pub(crate) struct Look {
    pub color: RGBColor,
    pub marker: usize,
    pub dash: (u32, u32),
}

/// Look `i`: a palette look below [`LOOKS`], a ramp's step above.
pub(crate) fn look(i: usize) -> Look {
    let i = i % ALL_LOOKS;
    if i == MODEL_LOOK {
        let (color, dash, _) = ref_look(RefKind::Expected);
        return Look {
            color,
            marker: marker::DIAMOND,
            dash,
        };
    }
    if i > MODEL_LOOK {
        let k = i - MODEL_LOOK - 1;
        return Look {
            color: NEUTRAL,
            marker: k,
            dash: DASHES[k % DASHES.len()],
        };
    }
    if i >= LOOKS {
        return ramp(i - LOOKS);
    }
    let (c, k) = (i % COLOURS, i / COLOURS);
    Look {
        color: PALETTE[c],
        marker: (OWN_MARKER[c] + k) % MARKERS,
        dash: DASHES[(c + k) % DASHES.len()],
    }
}

/// The palette look of colour `colour` (a palette index) with marker
/// `marker` (see [`marker`]).
pub fn look_with(colour: usize, marker: usize) -> usize {
    let c = colour % COLOURS;
    let k = (marker % MARKERS + MARKERS - OWN_MARKER[c]) % MARKERS;
    c + COLOURS * k
}

/// The palette look of colour `colour`'s variant `k` (its own marker for
/// 0, the next for 1, ...): a name's look and its variants'.
pub fn variant_look(colour: usize, k: usize) -> usize {
    colour % COLOURS + COLOURS * (k % MARKERS)
}

/// Spare look `slot` (taken modulo [`SPARE_LOOKS`]): slots go through the
/// spare colours first, then their markers, so consecutive slots differ
/// in colour. A caller that keys looks by a hash of a name takes
/// `hash % SPARE_LOOKS`.
pub fn spare_look(slot: usize) -> usize {
    let j = slot % SPARE_LOOKS;
    variant_look(NAMED_COLOURS + j % SPARE_COLOURS, j / SPARE_COLOURS)
}

/// Step `step` (0-based, light to dark) of a ramp of `of` ordered values
/// (round trips, worker counts, loads): one hue from light to dark, the
/// marker and dash changing with the step too, so the steps stay apart in
/// grey. A ramp longer than [`RAMP_STEPS`] repeats its last step.
pub fn ramp_look(step: usize, of: usize) -> usize {
    let of = of.clamp(1, RAMP_STEPS);
    LOOKS + of * (of - 1) / 2 + step.min(of - 1)
}

/// Neutral look `k` (0..6, taken modulo 6): near-black with marker `k`
/// and its own dash, for the values of a second parameter in a figure whose
/// first is on the ramp (the backoffs beside the round trips), never a
/// palette colour.
pub fn neutral_look(k: usize) -> usize {
    MODEL_LOOK + 1 + k % MARKERS
}

impl crate::figure::Series {
    /// The same series drawn as a model's line ([`MODEL_LOOK`]).
    pub fn model(self) -> Self {
        self.with_look(MODEL_LOOK)
    }
    /// The same series as value `k` of a second parameter ([`neutral_look`]).
    pub fn neutral(self, k: usize) -> Self {
        self.with_look(neutral_look(k))
    }
    /// The same series as step `step` (0-based) of `of` ordered values (a
    /// round trip, a worker count): a look of a single-hue ramp, light to
    /// dark ([`ramp_look`]), instead of a palette colour.
    pub fn ramp(self, step: usize, of: usize) -> Self {
        self.with_look(ramp_look(step, of))
    }
}

impl crate::figure::Figure {
    /// Series named `steps[i]` (in any panel) drawn as step `i` of a ramp of
    /// `steps.len()` ordered values ([`crate::figure::Series::ramp`]); other
    /// series keep their looks.
    pub fn ramp(mut self, steps: &[String]) -> Self {
        for s in self.panels.iter_mut().flat_map(|p| p.series.iter_mut()) {
            if let Some(i) = steps.iter().position(|n| *n == s.name) {
                s.look = Some(ramp_look(i, steps.len()));
            }
        }
        self
    }
}

fn ramp(r: usize) -> Look {
    // r = of * (of - 1) / 2 + step
    let mut of = 1;
    while of * (of + 1) / 2 <= r {
        of += 1;
    }
    let step = r - of * (of - 1) / 2;
    // One value is drawn in the ramp's middle; more spread over it.
    let t = if of == 1 {
        0.5
    } else {
        step as f64 / (of - 1) as f64
    };
    let x = t * (RAMP.len() - 1) as f64;
    let (a, b) = (x.floor() as usize, (x.ceil() as usize).min(RAMP.len() - 1));
    let f = x - a as f64;
    let mix = |p: u8, q: u8| (p as f64 + (q as f64 - p as f64) * f).round() as u8;
    Look {
        color: RGBColor(
            mix(RAMP[a].0, RAMP[b].0),
            mix(RAMP[a].1, RAMP[b].1),
            mix(RAMP[a].2, RAMP[b].2),
        ),
        marker: step % MARKERS,
        dash: DASHES[step % DASHES.len()],
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

/// The named colours in the order series without a fixed look take them
/// once the spare colours are drawn: the blues (nearest the ramp) and the
/// greys last.
const FREE_ORDER: [usize; NAMED_COLOURS] = [1, 2, 3, 5, 7, 8, 9, 10, 11, 6, 4, 0, 12, 13];

/// The drawn look of every series name of a figure, in first-seen order:
/// a series with a fixed look keeps it; each other (a quantity, a model,
/// a parameter: no strategy) takes the first free look of, in order, the
/// spare colours and the neutral looks ([`neutral_look`]), preferring a
/// colour the figure does not draw yet, then another marker of one; only
/// past those 30 looks the named colours' ([`FREE_ORDER`], other markers
/// first: looks below [`crate::figure::Figure::free_looks_from`], a
/// name's own, come last), so a series that is no strategy is not drawn
/// in a strategy's colour.
pub(crate) fn resolve_looks(
    f: &crate::figure::Figure,
) -> Vec<(String, crate::figure::Draw, usize)> {
    let fixed: Vec<usize> = f
        .panels
        .iter()
        .flat_map(|p| p.series.iter().filter_map(|s| s.look))
        .collect();
    let safe: Vec<usize> = (0..SPARE_LOOKS)
        .map(spare_look)
        .chain((0..MARKERS).map(neutral_look))
        .collect();
    let named = (0..MARKERS).flat_map(|k| FREE_ORDER.iter().map(move |c| variant_look(*c, k)));
    let named: Vec<usize> = named
        .clone()
        .filter(|i| *i >= f.free_looks_from)
        .chain(named.filter(|i| *i < f.free_looks_from))
        .collect();
    let rgb = |i: usize| {
        let c = look(i).color;
        (c.0, c.1, c.2)
    };
    let mut used = fixed.clone();
    let mut out: Vec<(String, crate::figure::Draw, usize)> = Vec::new();
    for p in &f.panels {
        for s in &p.series {
            if out.iter().any(|n| n.0 == s.name) {
                continue;
            }
            let i = s.look.unwrap_or_else(|| {
                let new_colour = |order: &[usize]| {
                    order
                        .iter()
                        .find(|i| !used.iter().any(|u| rgb(*u) == rgb(**i)))
                        .copied()
                };
                let free = |order: &[usize]| order.iter().find(|i| !used.contains(i)).copied();
                new_colour(&safe)
                    .or_else(|| free(&safe))
                    .or_else(|| new_colour(&named))
                    .or_else(|| free(&named))
                    .unwrap_or(0)
            });
            used.push(i);
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

#[cfg(test)]
mod tests {
    use crate::style::*;

    #[test]
    fn a_ramp_goes_light_to_dark_in_colours_of_its_own() {
        let palette: Vec<String> = (0..LOOKS).map(|i| look_name(i)[..7].to_string()).collect();
        for of in 1..=RAMP_STEPS {
            let steps: Vec<Look> = (0..of).map(|s| look(ramp_look(s, of))).collect();
            let light = |l: &Look| l.color.0 as u32 + l.color.1 as u32 + l.color.2 as u32;
            for w in steps.windows(2) {
                assert!(
                    light(&w[0]) > light(&w[1]),
                    "ramp of {of} not light to dark"
                );
            }
            for s in 0..of {
                let name = look_name(ramp_look(s, of));
                assert!(!palette.contains(&name[..7].to_string()), "{name}");
            }
        }
        // Distinct looks for every step of every ramp, none a palette look.
        let all: Vec<usize> = (1..=RAMP_STEPS)
            .flat_map(|of| (0..of).map(move |s| ramp_look(s, of)))
            .collect();
        assert!(all.iter().all(|i| (LOOKS..MODEL_LOOK).contains(i)));
        let mut d = all.clone();
        d.sort();
        d.dedup();
        assert_eq!(d.len(), all.len());
    }

    #[test]
    fn looks_by_colour_and_marker_are_distinct_and_named() {
        let mut names: Vec<String> = (0..LOOKS).map(look_name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), LOOKS);
        assert_eq!(
            look_name(look_with(colour::BLUISH_GREEN, marker::CIRCLE)),
            "#009e73 circle"
        );
        assert_eq!(
            look_name(look_with(colour::GREY, marker::PLUS)),
            "#505050 plus"
        );
        // The model's and the neutral looks: no palette colour, each its own.
        let palette: Vec<String> = (0..LOOKS).map(|i| look_name(i)[..7].to_string()).collect();
        let others: Vec<String> = (0..MARKERS)
            .map(neutral_look)
            .chain([MODEL_LOOK])
            .map(look_name)
            .collect();
        for n in &others {
            assert!(!palette.contains(&n[..7].to_string()), "{n}");
        }
        let mut d = others.clone();
        d.sort();
        d.dedup();
        assert_eq!(d.len(), others.len());
        assert_eq!(look_name(MODEL_LOOK), "#6e6e6e diamond");
        // Spare looks: consecutive slots in other colours, never a named one.
        for j in 0..SPARE_LOOKS {
            assert!(spare_look(j) % COLOURS >= NAMED_COLOURS);
            assert_ne!(spare_look(j) % COLOURS, spare_look(j + 1) % COLOURS);
        }
    }
}

/// The size of every figure's title.
pub(crate) const TITLE_SIZE: f64 = 19.0;

/// A figure's title, its wrapped `lines` from `(x, y)` down, 24 px apart.
pub(crate) fn title<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    lines: &[String],
    (x, y): (i32, i32),
) -> Result<()> {
    let top_left = font(TITLE_SIZE).pos(Pos::new(HPos::Left, VPos::Top));
    for (k, t) in lines.iter().enumerate() {
        text(area, t, (x, y + 24 * k as i32), &top_left)?;
    }
    Ok(())
}

/// The look of series `s` (the `si`-th of its panel): the one its name was
/// given among the figure's `names` (name, draw, look), else its index's.
pub(crate) fn series_look(names: &[(String, Draw, usize)], s: &Series, si: usize) -> Look {
    let idx = names
        .iter()
        .find(|n| n.0 == s.name)
        .map(|n| n.2)
        .unwrap_or(si);
    look(idx)
}
