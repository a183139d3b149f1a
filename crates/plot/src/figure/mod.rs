//! Figures: one model, three outputs. A [`Figure`] is drawn twice from the
//! same code, as SVG (text left to the viewer's fonts) and as PNG (text
//! rendered with the bundled DejaVu Sans through `ab_glyph`, so no system
//! font is needed), and its numbers are written as `<name>.csv`: every point,
//! whisker and reference line exactly as drawn.
//!
//! Conventions every figure follows:
//! - the title starts with the claim IDs it supports;
//! - a reference (a published value, the region where a check holds) is
//!   drawn as the caller gives it: this crate knows no claims (the analysis
//!   builds published references from the claims table, never typed in);
//! - our value is the mean over trials with whiskers (the caption says which:
//!   min-max over trials unless stated) and n;
//! - each series has its own colour, dash and marker, and the legend (right
//!   of the panels, never over data) shows the same line, dash and marker;
//! - log scales are drawn on log10 of the values, with decade ticks.
//!
//! The drawing (layout, axes, legend, markers) is in `draw.rs`; reading a
//! written SVG's text back for the figure test ([`text_boxes`],
//! [`text_problems`]) in `svg_text.rs`.

pub use super::svg_text::{TextBox, text_boxes, text_problems};
pub use super::text::{text_width, wrap};

// ---- The model ----

/// One plotted value: the mean (`y`) with its spread (`lo`..`hi`) over `n` trials.
#[derive(Debug, Clone, PartialEq)]
pub struct Pt {
    pub x: f64,
    pub y: f64,
    pub lo: Option<f64>,
    pub hi: Option<f64>,
    pub n: Option<usize>,
}

impl Pt {
    pub fn new(x: f64, y: f64) -> Self {
        Pt {
            x,
            y,
            lo: None,
            hi: None,
            n: None,
        }
    }
    /// A point with its min-max (or interval) whisker and trial count.
    pub fn spread(x: f64, y: f64, lo: f64, hi: f64, n: usize) -> Self {
        Pt {
            x,
            y,
            lo: Some(lo),
            hi: Some(hi),
            n: Some(n),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Draw {
    /// Markers joined by a line.
    LinePoints,
    /// Markers only.
    Points,
    /// A line only (many points, e.g. a timeline).
    Line,
}

#[derive(Debug, Clone)]
pub struct Series {
    pub name: String,
    pub points: Vec<Pt>,
    pub draw: Draw,
    /// A fixed look (index into the palette's looks, [`crate::style::LOOKS`]) that the
    /// caller keeps for this series in every figure (the analysis keys one
    /// per strategy); None: the next look no fixed series of the figure uses.
    pub look: Option<usize>,
    /// Join two consecutive points by the line only when their x differ
    /// by at most this (data units): a line across a step the measured
    /// grid does not have would show values nobody measured. None: join all.
    pub join_within: Option<f64>,
    /// Drawn this fraction of the x axis's width to the right (negative:
    /// left), so a series whose points equal another's stays visible; the
    /// CSV keeps the true x.
    pub offset: f64,
}

impl Series {
    /// The same series with a fixed look (see [`Series::look`]).
    pub fn with_look(mut self, look: usize) -> Self {
        self.look = Some(look);
        self
    }
    /// The line broken wherever consecutive x differ by more than `step`
    /// ([`Series::join_within`]).
    pub fn join_within(mut self, step: f64) -> Self {
        self.join_within = Some(step);
        self
    }
    /// The series drawn `fraction` of the x axis to the side ([`Series::offset`]).
    pub fn offset(mut self, fraction: f64) -> Self {
        self.offset = fraction;
        self
    }
    pub fn line(name: impl Into<String>, points: Vec<Pt>) -> Self {
        Series {
            name: name.into(),
            points,
            draw: Draw::LinePoints,
            look: None,
            join_within: None,
            offset: 0.0,
        }
    }
    pub fn points(name: impl Into<String>, points: Vec<Pt>) -> Self {
        Series {
            name: name.into(),
            points,
            draw: Draw::Points,
            look: None,
            join_within: None,
            offset: 0.0,
        }
    }
    pub fn plain(name: impl Into<String>, points: Vec<Pt>) -> Self {
        Series {
            name: name.into(),
            points,
            draw: Draw::Line,
            look: None,
            join_within: None,
            offset: 0.0,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RefKind {
    /// The study's value (line) and where the check passes (shaded band).
    Published,
    /// What a formula or a design predicts.
    Expected,
    /// A configured limit.
    Limit,
}

/// A horizontal reference: a line at `value` and/or a shaded `band`,
/// across the panel or only over `x` (data coordinates).
#[derive(Debug, Clone)]
pub struct Reference {
    pub kind: RefKind,
    pub label: String,
    pub value: Option<f64>,
    pub band: Option<(f64, f64)>,
    pub x: Option<(f64, f64)>,
    /// Lines drawn when there is no single value (a published range's ends).
    pub lines: Vec<f64>,
}

impl Reference {
    pub fn limit(label: impl Into<String>, value: f64) -> Self {
        Reference {
            kind: RefKind::Limit,
            label: label.into(),
            value: Some(value),
            band: None,
            x: None,
            lines: vec![],
        }
    }
    pub fn expected(label: impl Into<String>, value: f64) -> Self {
        Reference {
            kind: RefKind::Expected,
            label: label.into(),
            value: Some(value),
            band: None,
            x: None,
            lines: vec![],
        }
    }
    /// Only over `x0..x1`.
    pub fn over(mut self, x0: f64, x1: f64) -> Self {
        self.x = Some((x0, x1));
        self
    }
    /// A short label instead of the default one.
    pub fn labelled(mut self, label: impl Into<String>) -> Self {
        self.label = label.into();
        self
    }
}

/// The value a claim's verdict was judged on, ringed where it is drawn:
/// a black ring around (`x`, `y`), its 95% interval (`lo`..`hi`, when it
/// has one) as a thick black bar beside the ring, and `label` written next
/// to it (`A4.1 judged: 4.34% [3.83, 4.85]`). The analysis places it at the
/// setting the verdict was judged at; this crate only draws it.
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    pub x: f64,
    pub y: f64,
    pub lo: Option<f64>,
    pub hi: Option<f64>,
    pub label: String,
    /// The series the judged value is a point of: the ring follows that
    /// series' sideways offset at a category (or a dodged x).
    pub series: Option<String>,
}

impl Mark {
    /// A judged value `y` at `x` with its 95% interval, if any.
    pub fn new(x: f64, y: f64, interval: Option<(f64, f64)>, label: impl Into<String>) -> Self {
        Mark {
            x,
            y,
            lo: interval.map(|i| i.0),
            hi: interval.map(|i| i.1),
            label: label.into(),
            series: None,
        }
    }
    /// Ring the point of series `name` (see [`Mark::series`]).
    pub fn on(mut self, name: impl Into<String>) -> Self {
        self.series = Some(name.into());
        self
    }
}

/// A shaded interval of x (a phase), labelled at the top of the panel.
#[derive(Debug, Clone)]
pub struct Shade {
    pub x0: f64,
    pub x1: f64,
    pub label: String,
}

#[derive(Debug, Clone, Default)]
pub struct Axis {
    /// What and unit, e.g. `CPU per decision (µs)`.
    pub label: String,
    pub log: bool,
    /// Force the range (otherwise from the data and references).
    pub range: Option<(f64, f64)>,
    /// Ticks at these values only (e.g. the worker counts that ran).
    pub ticks: Option<Vec<f64>>,
    /// A percentile ("nines") axis: values are `-log10(1 - q)`
    /// ([`crate::nines::nines_x`]) and ticks read p50, p90, p99, p99.9.
    pub nines: bool,
}

impl Axis {
    pub fn new(label: impl Into<String>) -> Self {
        Axis {
            label: label.into(),
            ..Default::default()
        }
    }
    pub fn log(label: impl Into<String>) -> Self {
        Axis {
            label: label.into(),
            log: true,
            ..Default::default()
        }
    }
    /// A percentile axis ([`Axis::nines`]): give points at
    /// [`crate::nines::nines_x`] of their quantile.
    pub fn nines(label: impl Into<String>) -> Self {
        Axis {
            label: label.into(),
            nines: true,
            ticks: Some(crate::nines::nines_ticks()),
            ..Default::default()
        }
    }
    pub fn range(mut self, lo: f64, hi: f64) -> Self {
        self.range = Some((lo, hi));
        self
    }
    pub fn ticks(mut self, t: Vec<f64>) -> Self {
        self.ticks = Some(t);
        self
    }
}

#[derive(Debug, Clone, Default)]
pub struct Panel {
    pub title: String,
    pub x: Axis,
    pub y: Axis,
    /// Categorical x: point `x = i` is category `i`; series are set side by
    /// side within a category so none hides another.
    pub categories: Vec<String>,
    pub series: Vec<Series>,
    pub refs: Vec<Reference>,
    pub shades: Vec<Shade>,
    /// Judged values, ringed and labelled ([`Mark`]).
    pub marks: Vec<Mark>,
    /// Set series slightly apart on a numeric x so equal values do not hide
    /// each other (the CSV keeps the true x).
    pub dodge: bool,
    /// Name each series at the right end of its line instead of in the
    /// legend ([`Panel::label_ends`], drawn by `ends.rs`).
    pub label_ends: bool,
}

impl Panel {
    pub fn dodge(mut self) -> Self {
        self.dodge = true;
        self
    }
    /// Label each line at its right end (in the right margin, staggered
    /// so no two labels touch) instead of a legend entry: for panels of
    /// more than a few lines, where a legend sends the eye back and forth.
    pub fn label_ends(mut self) -> Self {
        self.label_ends = true;
        self
    }
    pub fn new(title: impl Into<String>, x: Axis, y: Axis) -> Self {
        Panel {
            title: title.into(),
            x,
            y,
            ..Default::default()
        }
    }
    pub fn categories(mut self, c: Vec<String>) -> Self {
        self.categories = c;
        self
    }
    pub fn series(mut self, s: Series) -> Self {
        self.series.push(s);
        self
    }
    pub fn reference(mut self, r: Reference) -> Self {
        self.refs.push(r);
        self
    }
    pub fn mark(mut self, m: Mark) -> Self {
        self.marks.push(m);
        self
    }
    pub fn points(&self) -> usize {
        self.series.iter().map(|s| s.points.len()).sum()
    }
    /// The y axis from 0 to `room` times the largest value drawn (a point
    /// or its upper whisker); unchanged if nothing above 0 is drawn.
    pub fn y_from_zero(mut self, room: f64) -> Self {
        let top = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().flat_map(|q| [Some(q.y), q.hi]))
            .flatten()
            .filter(|v| v.is_finite())
            .fold(0.0f64, f64::max);
        if top > 0.0 {
            self.y = self.y.clone().range(0.0, top * room);
        }
        self
    }
}

#[derive(Debug, Clone)]
pub struct Figure {
    /// File stem: `<name>.svg`, `.png`, `.csv`.
    pub name: String,
    /// The claim IDs it supports; the title starts with them.
    pub claims: Vec<String>,
    pub title: String,
    /// One line: what is plotted, what the whiskers are, n.
    pub caption: String,
    pub panels: Vec<Panel>,
    /// Panels per row.
    pub columns: usize,
    /// Series without a fixed look take looks from this index on, so a
    /// caller that fixes looks 0..k for named things (the analysis: one
    /// per strategy) never sees another series drawn in one of them.
    pub free_looks_from: usize,
}

impl Figure {
    pub fn new(
        name: &str,
        claims: &[&str],
        title: impl Into<String>,
        caption: impl Into<String>,
    ) -> Self {
        Figure {
            name: name.into(),
            claims: claims.iter().map(|c| c.to_string()).collect(),
            title: title.into(),
            caption: caption.into(),
            panels: vec![],
            columns: 1,
            free_looks_from: 0,
        }
    }
    pub fn panel(mut self, p: Panel) -> Self {
        self.panels.push(p);
        self
    }
    /// Add `p` if it has points to draw (a panel a partial run may leave empty).
    pub fn panel_if_any(self, p: Panel) -> Self {
        if p.points() > 0 { self.panel(p) } else { self }
    }
    pub fn columns(mut self, c: usize) -> Self {
        self.columns = c.max(1);
        self
    }
    /// The title as drawn: claim IDs first.
    pub fn full_title(&self) -> String {
        if self.claims.is_empty() {
            self.title.clone()
        } else {
            format!("{}: {}", self.claims.join(", "), self.title)
        }
    }
    pub fn points(&self) -> usize {
        self.panels.iter().map(|p| p.points()).sum()
    }

    /// The trial counts behind the points: `n = 5` or `n = 2 to 6`.
    pub fn n_text(&self) -> String {
        let ns: Vec<usize> = self
            .panels
            .iter()
            .flat_map(|p| {
                p.series
                    .iter()
                    .flat_map(|s| s.points.iter().filter_map(|q| q.n))
            })
            .collect();
        match (ns.iter().min(), ns.iter().max()) {
            (Some(a), Some(b)) if a == b => format!("n = {a}"),
            (Some(a), Some(b)) => format!("n = {a} to {b}"),
            _ => "n not recorded".into(),
        }
    }

    /// The caption with `{n}` replaced by [`Figure::n_text`].
    pub fn caption_text(&self) -> String {
        self.caption.replace("{n}", &self.n_text())
    }

    pub fn markdown(&self) -> String {
        let n = &self.name;
        format!(
            "![{}](figures/{n}.png)\n\n*Figure {}.* {} ([SVG](figures/{n}.svg), [numbers drawn](figures/{n}.csv))\n\n",
            self.full_title().replace(['[', ']'], ""),
            n,
            self.caption_text()
        )
    }
}

/// A number as a reader writes it: integers without `.0`, k/M for round
/// thousands and millions, at most 3 significant decimals otherwise.
pub fn num(v: f64) -> String {
    if !v.is_finite() {
        return "n/a".into();
    }
    if v == 0.0 {
        return "0".into();
    }
    let a = v.abs();
    if (v - v.round()).abs() < 1e-9 * a.max(1.0) {
        let i = v.round() as i64;
        return if a >= 1e6 && i % 1_000_000 == 0 {
            format!("{}M", i / 1_000_000)
        } else if a >= 1e4 && i % 1000 == 0 {
            format!("{}k", i / 1000)
        } else {
            i.to_string()
        };
    }
    let d = if a >= 1000.0 {
        0
    } else if a >= 100.0 {
        1
    } else if a >= 1.0 {
        2
    } else {
        (2.0 - a.log10().floor()).min(6.0) as usize
    };
    let s = format!("{v:.d$}");
    // Trailing zeros of the decimals only: 2180.3 at no decimals is "2180"
    // (trimming it read "218").
    if d == 0 {
        return s;
    }
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

mod numbers;
pub use numbers::{CSV_COLUMNS, CSV_NUMBER_COLUMNS};
#[cfg(test)]
mod tests;
