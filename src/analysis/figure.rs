//! Figures: one model, three outputs. A [`Figure`] is drawn twice from the
//! same code, as SVG (text left to the viewer's fonts) and as PNG (text
//! rendered with the bundled DejaVu Sans through `ab_glyph`, so no system
//! font is needed), and its numbers are written as `<name>.csv`: every point,
//! whisker and reference line exactly as drawn.
//!
//! Conventions every figure follows:
//! - the title starts with the claim IDs it supports;
//! - the published value is drawn from the claims table (a line at the
//!   published value, the region the check passes shaded), never typed in;
//! - our value is the mean over trials with whiskers (the caption says which:
//!   min-max over trials unless stated) and n;
//! - each series has its own colour, dash and marker, and the legend (right
//!   of the panels, never over data) shows the same line, dash and marker;
//! - log scales are drawn on log10 of the values, with decade ticks.
//!
//! [`text_boxes`] and [`overlaps`] read a written SVG back and are what the
//! figure test checks: no text outside the canvas, no two labels overlapping.

use std::path::Path;
use std::sync::Once;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::claims::{Check, ClaimSpec};
use super::{AnalysisCtx, FigureInfo};
use crate::error::{Error, Result};

/// The bundled font (DejaVu Sans, Bitstream Vera license: see
/// `assets/fonts/DejaVuSans-LICENSE.txt`).
static FONT: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");
const FAMILY: &str = "sans-serif";

/// Register the bundled font once per process for every text plotters draws.
pub fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if plotters::style::register_font(FAMILY, FontStyle::Normal, FONT).is_err() {
            panic!("the bundled font assets/fonts/DejaVuSans.ttf does not parse");
        }
    });
}

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
        Pt { x, y, lo: None, hi: None, n: None }
    }
    /// A point with its min-max (or interval) whisker and trial count.
    pub fn spread(x: f64, y: f64, lo: f64, hi: f64, n: usize) -> Self {
        Pt { x, y, lo: Some(lo), hi: Some(hi), n: Some(n) }
    }
    /// From a summary over trials: mean, min..max, n.
    pub fn summary(x: f64, s: &super::stats::Summary) -> Self {
        Pt::spread(x, s.mean, s.min, s.max, s.n)
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
}

impl Series {
    pub fn line(name: impl Into<String>, points: Vec<Pt>) -> Self {
        Series { name: name.into(), points, draw: Draw::LinePoints }
    }
    pub fn points(name: impl Into<String>, points: Vec<Pt>) -> Self {
        Series { name: name.into(), points, draw: Draw::Points }
    }
    pub fn plain(name: impl Into<String>, points: Vec<Pt>) -> Self {
        Series { name: name.into(), points, draw: Draw::Line }
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
        Reference { kind: RefKind::Limit, label: label.into(), value: Some(value), band: None, x: None, lines: vec![] }
    }
    pub fn expected(label: impl Into<String>, value: f64) -> Self {
        Reference { kind: RefKind::Expected, label: label.into(), value: Some(value), band: None, x: None, lines: vec![] }
    }
    /// Only over `x0..x1`.
    pub fn over(mut self, x0: f64, x1: f64) -> Self {
        self.x = Some((x0, x1));
        self
    }
    /// The claim's `i`-th published value and the region its check passes,
    /// with a legend label saying both.
    pub fn published(spec: &ClaimSpec, i: usize) -> Self {
        let (value, band, rule) = pass_region(spec, i);
        let label = if band.is_none() {
            format!("{} published: {} (judged on its shape, not on this value)", spec.id, super::claims::micro(&spec.published_text))
        } else {
            format!("{} published: {}; shaded: passes ({rule})", spec.id, super::claims::micro(&spec.published_text))
        };
        Reference {
            kind: RefKind::Published,
            label,
            value,
            band,
            x: None,
            lines: if spec.check == Check::InRange { vec![spec.published.at(0), spec.published.at(1)] } else { vec![] },
        }
    }
    /// The published value `i` scaled (e.g. a fraction shown in %), same rule.
    pub fn published_scaled(spec: &ClaimSpec, i: usize, k: f64) -> Self {
        let mut r = Reference::published(spec, i);
        r.value = r.value.map(|v| v * k);
        r.band = r.band.map(|(a, b)| (a * k, b * k));
        r.lines = r.lines.iter().map(|v| v * k).collect();
        r
    }
    /// A short label instead of the default one.
    pub fn labelled(mut self, label: impl Into<String>) -> Self {
        self.label = label.into();
        self
    }
}

/// The published value `i` of a claim, the interval where its check passes
/// (infinite ends allowed) and the rule in words.
pub fn pass_region(spec: &ClaimSpec, i: usize) -> (Option<f64>, Option<(f64, f64)>, String) {
    let p = spec.published.at(i);
    let t = spec.tolerance.at(i);
    let t = if t.is_finite() { t } else { spec.tolerance.at(0) };
    match spec.check {
        Check::Equals | Check::WithinAbs => {
            (Some(p), Some((p - t, p + t)), if t == 0.0 { "exactly".into() } else { format!("within ±{}", num(t)) })
        }
        Check::WithinRel => (Some(p), Some((p - t * p.abs(), p + t * p.abs())), format!("within ±{}%", num(t * 100.0))),
        Check::AtMost => (Some(p), Some((f64::NEG_INFINITY, p + t)), format!("at most {}", num(p + t))),
        Check::AtLeast => (Some(p), Some((p - t, f64::INFINITY)), format!("at least {}", num(p - t))),
        Check::InRange => {
            let (lo, hi, t) = (spec.published.at(0), spec.published.at(1), spec.tolerance.at(0));
            (None, Some((lo * (1.0 - t), hi * (1.0 + t))), format!("{}..{}", num(lo * (1.0 - t)), num(hi * (1.0 + t))))
        }
        Check::Shape | Check::Behaviour => (Some(p), None, "not judged on this value".into()),
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
}

impl Axis {
    pub fn new(label: impl Into<String>) -> Self {
        Axis { label: label.into(), ..Default::default() }
    }
    pub fn log(label: impl Into<String>) -> Self {
        Axis { label: label.into(), log: true, ..Default::default() }
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
    /// Set series slightly apart on a numeric x so equal values do not hide
    /// each other (the CSV keeps the true x).
    pub dodge: bool,
}

impl Panel {
    pub fn dodge(mut self) -> Self {
        self.dodge = true;
        self
    }
    pub fn new(title: impl Into<String>, x: Axis, y: Axis) -> Self {
        Panel { title: title.into(), x, y, ..Default::default() }
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
    pub fn points(&self) -> usize {
        self.series.iter().map(|s| s.points.len()).sum()
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
}

impl Figure {
    pub fn new(name: &str, claims: &[&str], title: impl Into<String>, caption: impl Into<String>) -> Self {
        Figure {
            name: name.into(),
            claims: claims.iter().map(|c| c.to_string()).collect(),
            title: title.into(),
            caption: caption.into(),
            panels: vec![],
            columns: 1,
        }
    }
    pub fn panel(mut self, p: Panel) -> Self {
        self.panels.push(p);
        self
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
        let ns: Vec<usize> = self.panels.iter().flat_map(|p| p.series.iter().flat_map(|s| s.points.iter().filter_map(|q| q.n))).collect();
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

    /// Write SVG, PNG and CSV into the run's figures/, record the figure for
    /// the claims table, and return its markdown (image, caption, links).
    pub fn write(&self, ctx: &AnalysisCtx) -> Result<String> {
        if self.points() == 0 {
            // A partial run: say so instead of drawing an empty figure.
            ctx.warnings.borrow_mut().push(format!("figure {} has no data points in this run; not drawn", self.name));
            return Ok(String::new());
        }
        self.write_to(&ctx.figures_dir)?;
        ctx.figures.borrow_mut().push(FigureInfo {
            file: format!("figures/{}.png", self.name),
            claims: self.claims.clone(),
            title: self.full_title(),
        });
        Ok(self.markdown())
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

    pub fn write_to(&self, dir: &Path) -> Result<()> {
        register_font();
        if self.points() == 0 {
            return Err(Error::Other(format!("figure {}: no data points", self.name)));
        }
        let layout = Layout::of(self);
        let svg = dir.join(format!("{}.svg", self.name));
        {
            let root = SVGBackend::new(&svg, (layout.w, layout.h)).into_drawing_area();
            draw(&root, self, &layout)?;
            root.present().map_err(err)?;
        }
        let png = dir.join(format!("{}.png", self.name));
        {
            let root = BitMapBackend::new(&png, (layout.w, layout.h)).into_drawing_area();
            draw(&root, self, &layout)?;
            root.present().map_err(err)?;
        }
        std::fs::write(dir.join(format!("{}.csv", self.name)), self.csv())
            .map_err(|e| Error::io(format!("writing figure {}.csv", self.name), e))
    }

    /// The numbers drawn, one row per point, reference or shaded phase.
    pub fn csv(&self) -> String {
        let mut w = csv::Writer::from_writer(vec![]);
        let _ = w.write_record(["panel", "kind", "series", "x", "x_category", "y", "low", "high", "n", "x_end"]);
        let o = |v: Option<f64>| v.filter(|v| v.is_finite()).map(|v| format!("{v}")).unwrap_or_default();
        for p in &self.panels {
            for s in &p.series {
                for pt in &s.points {
                    let cat = p.categories.get(pt.x as usize).cloned().filter(|_| !p.categories.is_empty()).unwrap_or_default();
                    let _ = w.write_record([
                        p.title.clone(), "data".into(), s.name.clone(), format!("{}", pt.x), cat,
                        format!("{}", pt.y), o(pt.lo), o(pt.hi), pt.n.map(|n| n.to_string()).unwrap_or_default(), String::new(),
                    ]);
                }
            }
            for r in &p.refs {
                let kind = match r.kind {
                    RefKind::Published => "published",
                    RefKind::Expected => "expected",
                    RefKind::Limit => "limit",
                };
                let _ = w.write_record([
                    p.title.clone(), kind.into(), r.label.clone(), o(r.x.map(|x| x.0)), String::new(),
                    o(r.value), o(r.band.map(|b| b.0)), o(r.band.map(|b| b.1)), String::new(), o(r.x.map(|x| x.1)),
                ]);
            }
            for s in &p.shades {
                let _ = w.write_record([
                    p.title.clone(), "phase".into(), s.label.clone(), format!("{}", s.x0), String::new(),
                    String::new(), String::new(), String::new(), String::new(), format!("{}", s.x1),
                ]);
            }
        }
        String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
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
    let d = if a >= 1000.0 { 0 } else if a >= 100.0 { 1 } else if a >= 1.0 { 2 } else { (2.0 - a.log10().floor()).min(6.0) as usize };
    let s = format!("{v:.d$}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

// ---- Styles ----

const PALETTE: [RGBColor; 10] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(230, 159, 0),
    RGBColor(90, 90, 90),
    RGBColor(140, 80, 20),
    RGBColor(150, 0, 90),
    RGBColor(20, 20, 20),
];
const MARKERS: usize = 6;
/// (dash, gap) in pixels; (0, 0) is solid.
const DASHES: [(u32, u32); 3] = [(0, 0), (9, 5), (2, 4)];

#[derive(Clone, Copy)]
struct Look {
    color: RGBColor,
    marker: usize,
    dash: (u32, u32),
}

fn look(i: usize) -> Look {
    Look { color: PALETTE[i % PALETTE.len()], marker: i % MARKERS, dash: DASHES[i % DASHES.len()] }
}

fn ref_look(k: RefKind) -> (RGBColor, (u32, u32), f64) {
    match k {
        RefKind::Published => (RGBColor(0, 0, 0), (14, 4), 0.10),
        RefKind::Expected => (RGBColor(110, 110, 110), (6, 4), 0.0),
        RefKind::Limit => (RGBColor(170, 0, 0), (2, 3), 0.0),
    }
}

const SHADE_TONES: [RGBColor; 4] = [
    RGBColor(255, 196, 120),
    RGBColor(240, 120, 120),
    RGBColor(140, 210, 140),
    RGBColor(170, 170, 220),
];

// ---- Layout ----

const W: u32 = 1180;
const LEGEND_W: u32 = 300;
const TITLE_SIZE: f64 = 19.0;
const TEXT: f64 = 14.0;
const SMALL: f64 = 13.0;
const LINE: i32 = 18;

struct Layout {
    w: u32,
    h: u32,
    title_lines: Vec<String>,
    caption_lines: Vec<String>,
    rows: usize,
    panel_h: u32,
    panel_w: u32,
}

/// An upper estimate of the width of `s` at font size `size` in pixels
/// (DejaVu Sans: digits and most letters about 0.6 em, spaces 0.32 em).
pub fn text_width(s: &str, size: f64) -> f64 {
    s.chars()
        .map(|c| match c {
            ' ' | 'i' | 'l' | 'j' | '.' | ',' | ':' | ';' | '\'' | '|' | '!' => 0.34,
            'm' | 'w' | 'M' | 'W' | '%' | '@' => 0.95,
            c if c.is_uppercase() => 0.74,
            _ => 0.62,
        })
        .sum::<f64>()
        * size
}

/// Words of `s` in lines no wider than `width` px at `size`.
pub fn wrap(s: &str, width: f64, size: f64) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut cur = String::new();
    // Break at spaces and after hyphens.
    let mut words: Vec<String> = Vec::new();
    for w in s.split(' ') {
        let parts: Vec<&str> = w.split_inclusive('-').collect();
        for (i, p) in parts.iter().enumerate() {
            words.push(if i == 0 { format!(" {p}") } else { p.to_string() });
        }
    }
    for w in words {
        let cand = if cur.is_empty() { w.trim_start().to_string() } else { format!("{cur}{w}") };
        let w = w.trim_start().to_string();
        if text_width(&cand, size) > width && !cur.is_empty() {
            lines.push(std::mem::take(&mut cur));
            cur = w.to_string();
        } else {
            cur = cand;
        }
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines
}

impl Layout {
    fn of(f: &Figure) -> Self {
        let cols = f.columns.min(f.panels.len()).max(1);
        let rows = f.panels.len().div_ceil(cols);
        let plot_w = W - LEGEND_W;
        let panel_w = plot_w / cols as u32;
        let cats = f.panels.iter().map(|p| cat_lines(p, panel_w).len()).max().unwrap_or(0);
        let panel_h = match rows {
            1 => 430,
            2 => 330,
            _ => 290,
        } + 16 * cats.saturating_sub(1) as u32;
        let title_lines = wrap(&f.full_title(), (W - 30) as f64, TITLE_SIZE);
        let caption_lines = wrap(&f.caption_text(), (W - 30) as f64, SMALL);
        let top = 14 + title_lines.len() as u32 * 24;
        let legend_h = legend_height(f);
        let body = (rows as u32 * panel_h).max(legend_h);
        let h = top + body + 10 + caption_lines.len() as u32 * LINE as u32 + 8;
        Layout { w: W, h, title_lines, caption_lines, rows, panel_h, panel_w }
    }
    fn top(&self) -> i32 {
        14 + self.title_lines.len() as i32 * 24
    }
}

/// The category labels of a panel, wrapped to the width of a category.
fn cat_lines(p: &Panel, panel_w: u32) -> Vec<Vec<String>> {
    if p.categories.is_empty() {
        return vec![];
    }
    let plot_w = panel_w as f64 - 100.0;
    let each = (plot_w / p.categories.len() as f64 - 6.0).max(30.0);
    let wrapped: Vec<Vec<String>> = p.categories.iter().map(|c| wrap(c, each, SMALL)).collect();
    let lines = wrapped.iter().map(|w| w.len()).max().unwrap_or(0);
    (0..lines).map(|i| wrapped.iter().map(|w| w.get(i).cloned().unwrap_or_default()).collect()).collect()
}

/// Legend entries: series names in first-seen order (one look each), then references.
fn legend_entries(f: &Figure) -> (Vec<(String, Draw)>, Vec<(RefKind, String)>) {
    let mut names: Vec<(String, Draw)> = Vec::new();
    let mut refs: Vec<(RefKind, String)> = Vec::new();
    for p in &f.panels {
        for s in &p.series {
            if !names.iter().any(|n| n.0 == s.name) {
                names.push((s.name.clone(), s.draw));
            }
        }
        for r in &p.refs {
            if !refs.iter().any(|x| x.1 == r.label) {
                refs.push((r.kind, r.label.clone()));
            }
        }
    }
    (names, refs)
}

const LEGEND_TEXT_W: f64 = (LEGEND_W - 60) as f64;

fn legend_height(f: &Figure) -> u32 {
    let (names, refs) = legend_entries(f);
    let lines: usize = names
        .iter()
        .map(|n| &n.0)
        .chain(refs.iter().map(|r| &r.1))
        .map(|s| wrap(s, LEGEND_TEXT_W, SMALL).len())
        .sum();
    let entries = names.len() + refs.len();
    (lines as u32 * 16 + entries as u32 * 8 + 30).max(100)
}

// ---- Drawing ----

fn err<T: std::fmt::Display>(e: T) -> Error {
    Error::Other(format!("drawing figure: {e}"))
}

fn font(size: f64) -> TextStyle<'static> {
    TextStyle::from((FAMILY, size).into_font()).color(&BLACK)
}

fn text<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, s: &str, at: (i32, i32), style: &TextStyle) -> Result<()> {
    if s.is_empty() {
        return Ok(());
    }
    area.draw(&Text::new(s.to_string(), at, style.clone())).map_err(err)
}

/// A value on an axis as drawn (log10 for log axes).
fn tr(v: f64, log: bool) -> f64 {
    if log { v.log10() } else { v }
}

/// The drawn range of an axis from its values (already finite).
fn range_of(vals: &[f64], axis: &Axis, zero: bool) -> (f64, f64) {
    if let Some((a, b)) = axis.range {
        return (tr(a, axis.log), tr(b, axis.log));
    }
    let v: Vec<f64> = vals.iter().copied().filter(|v| v.is_finite() && (!axis.log || *v > 0.0)).collect();
    if v.is_empty() {
        return if axis.log { (0.0, 1.0) } else { (0.0, 1.0) };
    }
    let lo = v.iter().copied().fold(f64::MAX, f64::min);
    let hi = v.iter().copied().fold(f64::MIN, f64::max);
    if axis.log {
        let (a, b) = (lo.log10(), hi.log10());
        let pad = ((b - a) * 0.06).max(0.08);
        (a - pad, b + pad)
    } else {
        let (lo, hi) = if zero && lo >= 0.0 { (0.0, hi) } else if zero && hi <= 0.0 { (lo, 0.0) } else { (lo, hi) };
        // All values equal (e.g. every one 0): a readable unit range around them.
        let (lo, hi) = if hi - lo < 1e-9 * hi.abs().max(1.0) {
            if hi == 0.0 { (0.0, 1.0) } else { (lo.min(0.0), hi * 1.2) }
        } else {
            (lo, hi)
        };
        let span = (hi - lo).max(hi.abs() * 0.1).max(1e-9);
        let pad = span * 0.07;
        // Zero itself stays off the axis line so a value of 0 is seen.
        (if lo == 0.0 { -span * 0.04 } else { lo - pad }, hi + pad)
    }
}

/// Tick positions (drawn units) for an axis over `r` with room for about `max` labels.
fn ticks(r: (f64, f64), axis: &Axis, max: usize) -> Vec<f64> {
    if let Some(t) = &axis.ticks {
        return t.iter().filter(|v| !axis.log || **v > 0.0).map(|v| tr(*v, axis.log)).filter(|v| *v >= r.0 - 1e-9 && *v <= r.1 + 1e-9).collect();
    }
    if axis.log {
        let (a, b) = (r.0.ceil() as i32, r.1.floor() as i32);
        let decades: Vec<f64> = (a..=b).map(|d| d as f64).collect();
        if decades.len() >= 3 {
            let step = decades.len().div_ceil(max).max(1);
            return decades.into_iter().step_by(step).collect();
        }
        // Less than three decades: 1, 2, 5 multiples, or every multiple
        // when that gives fewer than three ticks.
        for ms in [&[1.0, 2.0, 5.0][..], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0][..]] {
            let mut out = Vec::new();
            for d in (r.0.floor() as i32)..=(r.1.ceil() as i32) {
                for m in ms {
                    let v = (m * 10f64.powi(d)).log10();
                    if v >= r.0 && v <= r.1 {
                        out.push(v);
                    }
                }
            }
            if out.len() >= 3 || ms.len() > 3 {
                return out;
            }
        }
        return vec![];
    }
    let span = r.1 - r.0;
    let raw = span / max.max(2) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0].iter().map(|m| m * mag).find(|s| span / s <= max as f64).unwrap_or(10.0 * mag);
    let mut v = (r.0 / step).ceil() * step;
    let mut out = Vec::new();
    while v <= r.1 + step * 1e-9 {
        out.push(if v.abs() < step * 1e-9 { 0.0 } else { v });
        v += step;
    }
    out
}

/// Drop ticks whose labels would touch (pixel positions from the fraction of the range).
fn thin(t: Vec<f64>, r: (f64, f64), px: f64, log: bool) -> Vec<f64> {
    let mut out: Vec<f64> = Vec::new();
    let mut last_end = f64::MIN;
    for v in t {
        let pos = (v - r.0) / (r.1 - r.0) * px;
        let w = text_width(&num(if log { 10f64.powf(v) } else { v }), SMALL) + 8.0;
        if pos - w / 2.0 >= last_end {
            out.push(v);
            last_end = pos + w / 2.0;
        }
    }
    out
}

/// A linear axis in drawn units with exactly the given tick positions.
struct Ax {
    lo: f64,
    hi: f64,
    keys: Vec<f64>,
}

impl Ranged for Ax {
    type ValueType = f64;
    type FormatOption = plotters::coord::ranged1d::DefaultFormatting;
    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let t = (v - self.lo) / (self.hi - self.lo);
        (limit.0 as f64 + t * (limit.1 - limit.0) as f64).round() as i32
    }
    fn key_points<H: plotters::coord::ranged1d::KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() { vec![] } else { self.keys.clone() }
    }
    fn range(&self) -> std::ops::Range<f64> {
        self.lo..self.hi
    }
}

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, f: &Figure, l: &Layout) -> Result<()> {
    root.fill(&WHITE).map_err(err)?;
    let mut y = 10;
    for t in &l.title_lines {
        text(root, t, (15, y), &font(TITLE_SIZE).pos(Pos::new(HPos::Left, VPos::Top)))?;
        y += 24;
    }
    let (names, refs) = legend_entries(f);
    let body_h = l.rows as u32 * l.panel_h;
    let plots = root.margin(l.top(), 0, 0, 0);
    let plots = plots.shrink((0, 0), (W - LEGEND_W, body_h));
    let cols = f.columns.min(f.panels.len()).max(1);
    let areas = plots.split_evenly((l.rows, cols));
    for (p, area) in f.panels.iter().zip(areas.iter()) {
        panel(root, area, p, &names, l.panel_w)?;
    }
    legend(root, (W - LEGEND_W + 10) as i32, l.top() + 6, &names, &refs)?;
    let mut y = l.top() + body_h.max(legend_height(f)) as i32 + 10;
    for c in &l.caption_lines {
        text(root, c, (15, y), &font(SMALL).color(&RGBColor(60, 60, 60)).pos(Pos::new(HPos::Left, VPos::Top)))?;
        y += LINE;
    }
    Ok(())
}

fn marker<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, at: (i32, i32), m: usize, c: RGBColor) -> Result<()> {
    let s = 5;
    let st = c.stroke_width(2);
    let (x, y) = at;
    match m {
        0 => area.draw(&Circle::new(at, s, st)).map_err(err),
        1 => area.draw(&Rectangle::new([(x - s + 1, y - s + 1), (x + s - 1, y + s - 1)], st)).map_err(err),
        2 => area.draw(&PathElement::new(vec![(x, y - s - 1), (x + s + 1, y + s), (x - s - 1, y + s), (x, y - s - 1)], st)).map_err(err),
        3 => area.draw(&PathElement::new(vec![(x, y - s - 1), (x + s + 1, y), (x, y + s + 1), (x - s - 1, y), (x, y - s - 1)], st)).map_err(err),
        4 => {
            area.draw(&PathElement::new(vec![(x - s, y), (x + s, y)], st)).map_err(err)?;
            area.draw(&PathElement::new(vec![(x, y - s), (x, y + s)], st)).map_err(err)
        }
        _ => {
            area.draw(&PathElement::new(vec![(x - s, y - s), (x + s, y + s)], st)).map_err(err)?;
            area.draw(&PathElement::new(vec![(x - s, y + s), (x + s, y - s)], st)).map_err(err)
        }
    }
}

/// A polyline in pixels with a dash pattern ((0, 0) = solid).
fn dashed<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, pts: &[(i32, i32)], dash: (u32, u32), style: ShapeStyle) -> Result<()> {
    if dash.0 == 0 {
        return area.draw(&PathElement::new(pts.to_vec(), style)).map_err(err);
    }
    let (on, off) = (dash.0 as f64, dash.1 as f64);
    let mut phase = 0.0; // distance into the current on+off period
    for w in pts.windows(2) {
        let (a, b) = ((w[0].0 as f64, w[0].1 as f64), (w[1].0 as f64, w[1].1 as f64));
        let len = ((b.0 - a.0).powi(2) + (b.1 - a.1).powi(2)).sqrt();
        if len == 0.0 {
            continue;
        }
        let mut d = 0.0;
        while d < len {
            let in_on = phase < on;
            let step = if in_on { on - phase } else { on + off - phase }.min(len - d);
            if in_on {
                let p = |t: f64| ((a.0 + (b.0 - a.0) * t / len).round() as i32, (a.1 + (b.1 - a.1) * t / len).round() as i32);
                area.draw(&PathElement::new(vec![p(d), p(d + step)], style)).map_err(err)?;
            }
            d += step;
            phase = (phase + step) % (on + off);
        }
    }
    Ok(())
}

fn legend<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, x: i32, y0: i32, names: &[(String, Draw)], refs: &[(RefKind, String)]) -> Result<()> {
    let mut y = y0;
    let st = font(SMALL).pos(Pos::new(HPos::Left, VPos::Center));
    for (i, (n, d)) in names.iter().enumerate() {
        let lk = look(i);
        let lines = wrap(n, LEGEND_TEXT_W, SMALL);
        let mid = y + 8;
        if *d != Draw::Points {
            dashed(root, &[(x, mid), (x + 40, mid)], lk.dash, lk.color.stroke_width(2))?;
        }
        if *d != Draw::Line {
            marker(root, (x + 20, mid), lk.marker, lk.color)?;
        }
        for (j, line) in lines.iter().enumerate() {
            text(root, line, (x + 50, mid + j as i32 * 16), &st)?;
        }
        y += lines.len() as i32 * 16 + 8;
    }
    for (k, label) in refs {
        let (c, dash, band) = ref_look(*k);
        let lines = wrap(label, LEGEND_TEXT_W, SMALL);
        let mid = y + 8;
        if band > 0.0 {
            root.draw(&Rectangle::new([(x, mid - 7), (x + 40, mid + 7)], RGBAColor(0, 0, 0, band).filled())).map_err(err)?;
        }
        dashed(root, &[(x, mid), (x + 40, mid)], dash, c.stroke_width(2))?;
        for (j, line) in lines.iter().enumerate() {
            text(root, line, (x + 50, mid + j as i32 * 16), &st)?;
        }
        y += lines.len() as i32 * 16 + 8;
    }
    Ok(())
}

fn panel<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, area: &DrawingArea<DB, Shift>, p: &Panel, names: &[(String, Draw)], panel_w: u32) -> Result<()> {
    let cat = !p.categories.is_empty();
    let clines = cat_lines(p, panel_w);
    // Ranges in drawn units.
    let (x0, x1) = if cat {
        (-0.5, p.categories.len() as f64 - 0.5)
    } else {
        let xs: Vec<f64> = p.series.iter().flat_map(|s| s.points.iter().map(|q| q.x)).chain(p.shades.iter().flat_map(|s| [s.x0, s.x1])).collect();
        let (a, b) = range_of(&xs, &p.x, false);
        if p.x.log { (a, b) } else { let pad = (b - a) * 0.03; (a - pad, b + pad) }
    };
    let ys: Vec<f64> = p
        .series
        .iter()
        .flat_map(|s| s.points.iter().flat_map(|q| [Some(q.y), q.lo, q.hi]).flatten())
        .chain(p.refs.iter().flat_map(|r| [r.value, r.band.map(|b| b.0), r.band.map(|b| b.1)]).flatten().filter(|v| v.is_finite()))
        .collect();
    let (y0, y1) = range_of(&ys, &p.y, true);
    let x_area = if cat { 20 + 16 * clines.len() as u32 + 22 } else { 58 };
    let (pw, ph) = area.dim_in_pixel();
    let plot_px = (pw as f64 - 100.0, ph as f64 - x_area as f64 - 40.0);
    let xt = if cat { vec![] } else { thin(ticks((x0, x1), &p.x, 8), (x0, x1), plot_px.0, p.x.log) };
    let yt = thin(ticks((y0, y1), &p.y, (plot_px.1 / 40.0).max(3.0) as usize), (y0, y1), plot_px.1, p.y.log);
    let mut b = ChartBuilder::on(area);
    b.margin_left(8).margin_right(16).margin_top(6).margin_bottom(4).x_label_area_size(x_area).y_label_area_size(84);
    if !p.title.is_empty() {
        b.caption(&p.title, font(15.0));
    }
    let mut chart = b
        .build_cartesian_2d(Ax { lo: x0, hi: x1, keys: xt }, Ax { lo: y0, hi: y1, keys: yt })
        .map_err(err)?;
    let (xlog, ylog) = (p.x.log, p.y.log);
    let xf = move |v: &f64| num(if xlog { 10f64.powf(*v) } else { *v });
    let yf = move |v: &f64| num(if ylog { 10f64.powf(*v) } else { *v });
    let mut mesh = chart.configure_mesh();
    mesh.x_label_formatter(&xf)
        .y_label_formatter(&yf)
        .label_style(font(SMALL))
        .axis_desc_style(font(TEXT))
        .y_desc(p.y.label.as_str())
        .bold_line_style(RGBColor(225, 225, 225).stroke_width(1));
    if cat {
        mesh.disable_x_mesh();
    } else {
        mesh.x_desc(p.x.label.as_str());
    }
    mesh.draw().map_err(err)?;
    let px = |chart: &ChartContext<DB, _>, x: f64, y: f64| chart.backend_coord(&(x, y));
    let clampy = |v: f64| v.clamp(y0, y1);
    // Shaded phases, with their labels at the top of the plot.
    for (i, s) in p.shades.iter().enumerate() {
        let (a, b) = (tr(s.x0, xlog).max(x0), tr(s.x1, xlog).min(x1));
        if b <= a {
            continue;
        }
        chart.draw_series(std::iter::once(Rectangle::new([(a, y0), (b, y1)], SHADE_TONES[i % 4].mix(0.22).filled()))).map_err(err)?;
        let (l, t) = px(&chart, a, y1);
        let (r, _) = px(&chart, b, y1);
        text(root, &s.label, ((l + r) / 2, t + 4), &font(SMALL).pos(Pos::new(HPos::Center, VPos::Top)))?;
    }
    // References: bands first, then lines.
    for r in &p.refs {
        let (c, dash, band) = ref_look(r.kind);
        let (a, b) = r.x.map(|(a, b)| (tr(a, xlog).max(x0), tr(b, xlog).min(x1))).unwrap_or((x0, x1));
        if let (Some((lo, hi)), true) = (r.band, band > 0.0) {
            let (lo, hi) = (clampy(tr(lo.max(if ylog { 1e-300 } else { f64::MIN }), ylog)), clampy(tr(hi, ylog)));
            if hi > lo {
                chart.draw_series(std::iter::once(Rectangle::new([(a, lo), (b, hi)], RGBAColor(0, 0, 0, band).filled()))).map_err(err)?;
            }
        }
        let lines: Vec<f64> = match (r.value, r.kind, r.band) {
            (Some(v), _, _) => vec![v],
            (None, RefKind::Published, Some(_)) => r.lines.clone(),
            _ => vec![],
        };
        for v in lines.into_iter().filter(|v| v.is_finite() && (!ylog || *v > 0.0)) {
            let v = tr(v, ylog);
            if v < y0 || v > y1 {
                continue;
            }
            let (pa, pb) = (px(&chart, a, v), px(&chart, b, v));
            dashed(root, &[pa, pb], dash, c.stroke_width(2))?;
        }
    }
    // Series: whiskers, lines, markers.
    let k = p.series.len().max(1);
    for (si, s) in p.series.iter().enumerate() {
        let idx = names.iter().position(|n| n.0 == s.name).unwrap_or(si);
        let lk = look(idx);
        let dodge = if cat && k > 1 {
            (si as f64 - (k as f64 - 1.0) / 2.0) * (0.7 / k as f64)
        } else if p.dodge && k > 1 {
            (si as f64 - (k as f64 - 1.0) / 2.0) * (x1 - x0) * 0.012
        } else {
            0.0
        };
        let pts: Vec<(f64, f64, Option<f64>, Option<f64>)> = s
            .points
            .iter()
            .filter(|q| q.y.is_finite() && (!ylog || q.y > 0.0) && (!xlog || q.x > 0.0))
            .map(|q| (tr(q.x, xlog) + dodge, tr(q.y, ylog), q.lo.map(|v| tr(v, ylog)), q.hi.map(|v| tr(v, ylog))))
            .collect();
        for (x, _, lo, hi) in &pts {
            if let (Some(lo), Some(hi)) = (lo, hi)
                && lo.is_finite()
                && hi.is_finite()
                && hi > lo
            {
                let (a, b) = (px(&chart, *x, clampy(*lo)), px(&chart, *x, clampy(*hi)));
                let st = lk.color.stroke_width(1);
                root.draw(&PathElement::new(vec![a, b], st)).map_err(err)?;
                root.draw(&PathElement::new(vec![(a.0 - 4, a.1), (a.0 + 4, a.1)], st)).map_err(err)?;
                root.draw(&PathElement::new(vec![(b.0 - 4, b.1), (b.0 + 4, b.1)], st)).map_err(err)?;
            }
        }
        let pix: Vec<(i32, i32)> = pts.iter().map(|(x, y, _, _)| px(&chart, *x, clampy(*y))).collect();
        if s.draw != Draw::Points && pix.len() > 1 {
            dashed(root, &pix, lk.dash, lk.color.stroke_width(2))?;
        }
        if s.draw != Draw::Line {
            for q in &pix {
                marker(root, *q, lk.marker, lk.color)?;
            }
        }
    }
    // Category labels (wrapped) and the x description below them.
    if cat {
        let (_, bottom) = px(&chart, x0, y0);
        for (i, _) in p.categories.iter().enumerate() {
            let (cx, _) = px(&chart, i as f64, y0);
            for (j, line) in clines.iter().enumerate() {
                text(root, &line[i], (cx, bottom + 8 + j as i32 * 16), &font(SMALL).pos(Pos::new(HPos::Center, VPos::Top)))?;
            }
        }
        let (l, _) = px(&chart, x0, y0);
        let (r, _) = px(&chart, x1, y0);
        text(root, &p.x.label, ((l + r) / 2, bottom + 12 + clines.len() as i32 * 16), &font(TEXT).pos(Pos::new(HPos::Center, VPos::Top)))?;
    }
    Ok(())
}

// ---- Reading an SVG back (for the figure test) ----

/// A text element's box in pixels: (x0, y0, x1, y1) and its text.
#[derive(Debug, Clone)]
pub struct TextBox {
    pub text: String,
    pub x0: f64,
    pub y0: f64,
    pub x1: f64,
    pub y1: f64,
}

fn attr(tag: &str, name: &str) -> Option<String> {
    let key = format!(" {name}=\"");
    let i = tag.find(&key)? + key.len();
    let j = tag[i..].find('"')? + i;
    Some(tag[i..j].to_string())
}

/// The canvas size and every non-empty `<text>` box of an SVG written by
/// plotters (anchor, `dy` and `rotate(...)` taken into account; widths
/// estimated by [`text_width`]).
pub fn text_boxes(svg: &str) -> ((f64, f64), Vec<TextBox>) {
    let head = svg.split('>').next().unwrap_or("");
    let size = (
        attr(head, "width").and_then(|v| v.parse().ok()).unwrap_or(0.0),
        attr(head, "height").and_then(|v| v.parse().ok()).unwrap_or(0.0),
    );
    let mut out = Vec::new();
    let mut rest = svg;
    while let Some(i) = rest.find("<text") {
        let after = &rest[i..];
        let Some(end) = after.find('>') else { break };
        let tag = &after[..end];
        let close = after.find("</text>").unwrap_or(after.len());
        let body = after[end + 1..close].replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&").replace("&quot;", "\"").replace("&#39;", "'");
        let body = body.trim().to_string();
        rest = &after[close.min(after.len())..];
        if body.trim().is_empty() {
            continue;
        }
        let num = |n: &str| attr(tag, n).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
        let (x, y, fs) = (num("x"), num("y"), num("font-size"));
        let w = text_width(&body, fs);
        let (a, b) = match attr(tag, "text-anchor").as_deref() {
            Some("middle") => (-w / 2.0, w / 2.0),
            Some("end") => (-w, 0.0),
            _ => (0.0, w),
        };
        // Vertical extent relative to y, from plotters' dy.
        let (c, d) = match attr(tag, "dy").as_deref() {
            Some("0.76em") => (-0.2 * fs, 0.95 * fs),
            Some("0.5ex") => (-0.55 * fs, 0.45 * fs),
            Some("-0.5ex") => (-1.05 * fs, 0.0),
            _ => (-0.8 * fs, 0.2 * fs),
        };
        let rot = attr(tag, "transform").and_then(|t| t.strip_prefix("rotate(").and_then(|r| r.split(',').next().and_then(|a| a.trim().parse::<f64>().ok()))).unwrap_or(0.0);
        let (x0, y0, x1, y1) = match rot as i64 {
            90 => (x - d, y + a, x - c, y + b),
            270 => (x + c, y - b, x + d, y - a),
            180 => (x - b, y - d, x - a, y - c),
            _ => (x + a, y + c, x + b, y + d),
        };
        out.push(TextBox { text: body, x0, y0, x1, y1 });
    }
    (size, out)
}

/// Problems of an SVG's text: boxes outside the canvas and pairs that overlap
/// (by more than 1 px each way).
pub fn text_problems(svg: &str) -> Vec<String> {
    let ((w, h), boxes) = text_boxes(svg);
    let mut out = Vec::new();
    for b in &boxes {
        if b.x0 < -0.5 || b.y0 < -0.5 || b.x1 > w + 0.5 || b.y1 > h + 0.5 {
            out.push(format!("`{}` outside the {w}x{h} canvas: ({:.0},{:.0})-({:.0},{:.0})", b.text, b.x0, b.y0, b.x1, b.y1));
        }
    }
    for (i, a) in boxes.iter().enumerate() {
        for b in &boxes[i + 1..] {
            let ox = a.x1.min(b.x1) - a.x0.max(b.x0);
            let oy = a.y1.min(b.y1) - a.y0.max(b.y0);
            if ox > 1.0 && oy > 1.0 {
                out.push(format!("`{}` overlaps `{}`", a.text, b.text));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_as_a_person_writes_them() {
        assert_eq!(num(1.0), "1");
        assert_eq!(num(10_000_000.0), "10M");
        assert_eq!(num(20_000.0), "20k");
        assert_eq!(num(12_345.0), "12345");
        assert_eq!(num(1.5), "1.5");
        assert_eq!(num(0.05), "0.05");
        assert_eq!(num(128.7), "128.7");
    }

    fn fig() -> Figure {
        let mut p = Panel::new("6.7 ms round trip", Axis::log("workers").ticks(vec![1.0, 8.0, 64.0]), Axis::new("admitted - L (requests)"))
            .series(Series::line("measured", vec![Pt::spread(1.0, 0.0, 0.0, 0.0, 20), Pt::spread(8.0, 4.0, 3.0, 5.0, 20), Pt::spread(64.0, 28.0, 26.0, 30.0, 20)]))
            .reference(Reference::limit("limit L = 100", 20.0));
        p.shades.push(Shade { x0: 2.0, x1: 6.0, label: "slow".into() });
        let q = Panel::new("by strategy", Axis::new("strategy"), Axis::log("µs per decision"))
            .categories(vec!["GET".into(), "fixed window in Lua".into(), "token bucket".into()])
            .series(Series::points("ours", vec![Pt::new(0.0, 6.5), Pt::new(1.0, 11.8), Pt::new(2.0, 14.2)]))
            .series(Series::points("theirs", vec![Pt::new(0.0, 7.0), Pt::new(1.0, 12.0), Pt::new(2.0, 15.0)]));
        Figure::new("t", &["A1.2"], "check-then-act overshoot", "mean over trials; whiskers min-max; n = 20 per point").panel(p).panel(q).columns(2)
    }

    #[test]
    fn a_figure_renders_to_svg_png_and_csv_without_text_problems() {
        let d = tempfile::tempdir().unwrap();
        let f = fig();
        f.write_to(d.path()).unwrap();
        if let Ok(dir) = std::env::var("LIMITBENCH_FIGURE_OUT") {
            f.write_to(Path::new(&dir)).unwrap();
        }
        let svg = std::fs::read_to_string(d.path().join("t.svg")).unwrap();
        assert!(svg.contains("A1.2: check-then-act overshoot"));
        let problems = text_problems(&svg);
        assert!(problems.is_empty(), "{problems:#?}");
        let png = std::fs::read(d.path().join("t.png")).unwrap();
        assert_eq!(&png[1..4], b"PNG");
        let csv = std::fs::read_to_string(d.path().join("t.csv")).unwrap();
        assert!(csv.lines().count() == 1 + 3 + 1 + 1 + 6, "{csv}");
    }

    #[test]
    fn overlapping_and_clipped_text_is_found() {
        let svg = r#"<svg width="100" height="50" viewBox="0 0 100 50" xmlns="http://www.w3.org/2000/svg">
<text x="10" y="20" dy="0.5ex" text-anchor="start" font-size="10">hello</text>
<text x="20" y="20" dy="0.5ex" text-anchor="start" font-size="10">world</text>
<text x="95" y="40" dy="0.5ex" text-anchor="start" font-size="10">clipped</text>
<text x="5" y="25" dy="0.5ex" text-anchor="middle" font-size="10" transform="rotate(270, 5, 25)">up</text>
</svg>"#;
        let p = text_problems(svg);
        assert!(p.iter().any(|s| s.contains("`hello` overlaps `world`")), "{p:?}");
        assert!(p.iter().any(|s| s.contains("`clipped` outside")), "{p:?}");
        assert!(!p.iter().any(|s| s.contains("`up`")), "{p:?}");
    }

    #[test]
    fn an_empty_figure_is_an_error() {
        let d = tempfile::tempdir().unwrap();
        let f = Figure::new("e", &["X"], "nothing", "");
        assert!(f.write_to(d.path()).is_err());
    }
}
