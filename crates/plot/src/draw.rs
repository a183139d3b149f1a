//! Drawing a [`Figure`]: the layout (title, a grid of panels, the legend
//! right of them, the caption below), axes with ticks at readable values,
//! whiskers, markers, dashes, reference lines and bands, shaded phases; the
//! same code draws the SVG and the PNG.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::axes::{Ax, range_of, thin, tick_label, ticks};
use super::figure::{Draw, Figure, Panel, RefKind};
use super::images::{Drawing, write_svg_png};
use super::marks::{dashed, marker, published_marker};
use super::panel::{Frame, category_labels, references, series, shades, x_range, y_values};
use super::style::*;
pub use super::text::{text_width, wrap};
use limitbench_base::error::{Error, Result};

impl Figure {
    /// Write `<name>.svg`, `<name>.png` and `<name>.csv` (the numbers
    /// drawn) into `dir`.
    pub fn write_to(&self, dir: &Path) -> Result<()> {
        register_font();
        if self.points() == 0 {
            return Err(Error::Other(format!(
                "figure {}: no data points",
                self.name
            )));
        }
        render(self, dir)?;
        std::fs::write(dir.join(format!("{}.csv", self.name)), self.csv())
            .map_err(|e| Error::io(format!("writing figure {}.csv", self.name), e))
    }
}

/// Write `<name>.svg` and `<name>.png` of a figure into `dir`.
pub(super) fn render(f: &Figure, dir: &Path) -> Result<()> {
    let layout = Layout::of(f);
    let size = (layout.w, layout.h);
    write_svg_png(dir, &f.name, size, &Laid { f, layout })
}

/// A figure with its layout: drawn alike on either backend.
struct Laid<'a> {
    f: &'a Figure,
    layout: Layout,
}

impl Drawing for Laid<'_> {
    fn draw_on<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<()> {
        draw(root, self.f, &self.layout)
    }
}

// ---- Layout ----

const W: u32 = 1180;
const LEGEND_W: u32 = 300;
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

impl Layout {
    fn of(f: &Figure) -> Self {
        let cols = f.columns.min(f.panels.len()).max(1);
        let rows = f.panels.len().div_ceil(cols);
        let plot_w = W - legend_w(f);
        let panel_w = plot_w / cols as u32;
        let cats = f
            .panels
            .iter()
            .map(|p| cat_lines(p, panel_w).len())
            .max()
            .unwrap_or(0);
        let panel_h = match rows {
            1 => 430,
            2 => 330,
            _ => 290,
        } + 16 * cats.saturating_sub(1) as u32;
        let title_lines = wrap(&f.full_title(), (W - 30) as f64, TITLE_SIZE);
        let caption_lines = wrap(&caption_drawn(f), (W - 30) as f64, SMALL);
        let top = 14 + title_lines.len() as u32 * 24;
        let legend_h = legend_height(f);
        let body = (rows as u32 * panel_h).max(legend_h);
        let h = top + body + 10 + caption_lines.len() as u32 * LINE as u32 + 8;
        Layout {
            w: W,
            h,
            title_lines,
            caption_lines,
            rows,
            panel_h,
            panel_w,
        }
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
    (0..lines)
        .map(|i| {
            wrapped
                .iter()
                .map(|w| w.get(i).cloned().unwrap_or_default())
                .collect()
        })
        .collect()
}

/// Legend entries: series names in first-seen order (one look each), then references.
/// A reference's entry: its kind, label, and whether any reference under
/// that label draws a band (only then does the swatch show one).
type RefEntry = (RefKind, String, bool);

/// The legend's one entry for all published values of a figure that
/// shows more than one: their labels are listed under the figure instead.
pub const PUBLISHED_ENTRY: &str =
    "published value (listed below the figure); shaded: where its check passes";
/// The same for several expected lines (a model's or a design's values):
/// they are drawn alike, so separate entries would look the same.
pub const EXPECTED_ENTRY: &str = "expected value (listed below the figure)";
/// The same for several configured limits.
pub const LIMIT_ENTRY: &str = "configured limit (listed below the figure)";

/// The one legend entry for every reference of `kind` when the figure has
/// references of that kind under more than one label.
pub fn merged_entry(kind: RefKind) -> &'static str {
    match kind {
        RefKind::Published => PUBLISHED_ENTRY,
        RefKind::Expected => EXPECTED_ENTRY,
        RefKind::Limit => LIMIT_ENTRY,
    }
}

/// How a kind's lines are drawn, as the caption names them.
fn drawn_as(kind: RefKind) -> &'static str {
    match kind {
        RefKind::Published => "Published values (black dashes, black diamond at the right end)",
        RefKind::Expected => "Expected values (grey dashes)",
        RefKind::Limit => "Configured limits (red dots)",
    }
}

const REF_KINDS: [RefKind; 3] = [RefKind::Published, RefKind::Expected, RefKind::Limit];

/// The distinct labels of the figure's references of `kind`.
fn labels_of(f: &Figure, kind: RefKind) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in f.panels.iter().flat_map(|p| &p.refs) {
        if r.kind == kind && !out.contains(&r.label) {
            out.push(r.label.clone());
        }
    }
    out
}

/// The caption as drawn: the caption, then, for every kind of reference
/// with more than one label (whose legend entry is then one), the labels.
fn caption_drawn(f: &Figure) -> String {
    let mut out = f.caption_text();
    for kind in REF_KINDS {
        let labels = labels_of(f, kind);
        if labels.len() > 1 {
            out = format!("{out} {}: {}.", drawn_as(kind), labels.join("; "));
        }
    }
    out
}

/// The legend's entries: the series not named at their lines' ends
/// (`ends.rs`), then the references.
fn legend_entries(f: &Figure) -> (Vec<(String, Draw, usize)>, Vec<RefEntry>) {
    let mut names = resolve_looks(f);
    names.retain(|n| !super::ends::labelled_everywhere(f, &n.0));
    let merged: Vec<RefKind> = REF_KINDS
        .into_iter()
        .filter(|k| labels_of(f, *k).len() > 1)
        .collect();
    let mut refs: Vec<RefEntry> = Vec::new();
    for p in &f.panels {
        for r in &p.refs {
            let banded = r.band.is_some();
            let label = if merged.contains(&r.kind) {
                merged_entry(r.kind).to_string()
            } else {
                r.label.clone()
            };
            match refs.iter_mut().find(|x| x.1 == label) {
                Some(e) => e.2 |= banded,
                None => refs.push((r.kind, label, banded)),
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
    if entries == 0 {
        return 0;
    }
    (lines as u32 * 16 + entries as u32 * 8 + 30).max(100)
}

/// The legend's width: none when every series is named at its line's end
/// and there is no reference (the panels then take the whole width).
fn legend_w(f: &Figure) -> u32 {
    if legend_height(f) == 0 { 0 } else { LEGEND_W }
}

// ---- Drawing ----

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, f: &Figure, l: &Layout) -> Result<()> {
    root.fill(&WHITE).map_err(err)?;
    title(root, &l.title_lines, (15, 10))?;
    let (legend_names, refs) = legend_entries(f);
    // Every series' look, legend entry or not.
    let names = resolve_looks(f);
    let body_h = l.rows as u32 * l.panel_h;
    let plots = root.margin(l.top(), 0, 0, 0);
    let plots = plots.shrink((0, 0), (W - legend_w(f), body_h));
    let cols = f.columns.min(f.panels.len()).max(1);
    // A last row with fewer panels than columns shares the row's width
    // among them, so no grid slot is left blank.
    let mut areas = Vec::new();
    for (i, row) in plots.split_evenly((l.rows, 1)).into_iter().enumerate() {
        let in_row = (f.panels.len() - i * cols).min(cols);
        areas.extend(row.split_evenly((1, in_row)));
    }
    for (p, area) in f.panels.iter().zip(areas.iter()) {
        panel(root, area, p, &names, l.panel_w)?;
    }
    legend(
        root,
        (W - LEGEND_W + 10) as i32,
        l.top() + 6,
        &legend_names,
        &refs,
    )?;
    let mut y = l.top() + body_h.max(legend_height(f)) as i32 + 10;
    for c in &l.caption_lines {
        text(
            root,
            c,
            (15, y),
            &font(SMALL)
                .color(&RGBColor(60, 60, 60))
                .pos(Pos::new(HPos::Left, VPos::Top)),
        )?;
        y += LINE;
    }
    Ok(())
}

fn legend<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    x: i32,
    y0: i32,
    names: &[(String, Draw, usize)],
    refs: &[RefEntry],
) -> Result<()> {
    let mut y = y0;
    let st = font(SMALL).pos(Pos::new(HPos::Left, VPos::Center));
    for (n, d, i) in names {
        let lk = look(*i);
        let lines = wrap(n, LEGEND_TEXT_W, SMALL);
        let mid = y + 8;
        if *d != Draw::Points {
            dashed(
                root,
                &[(x, mid), (x + 40, mid)],
                lk.dash,
                lk.color.stroke_width(2),
            )?;
        }
        if *d != Draw::Line {
            marker(root, (x + 20, mid), lk.marker, lk.color)?;
        }
        for (j, line) in lines.iter().enumerate() {
            text(root, line, (x + 50, mid + j as i32 * 16), &st)?;
        }
        y += lines.len() as i32 * 16 + 8;
    }
    for (k, label, banded) in refs {
        let (c, dash, band) = ref_look(*k);
        let lines = wrap(label, LEGEND_TEXT_W, SMALL);
        let mid = y + 8;
        if band > 0.0 && *banded {
            root.draw(&Rectangle::new(
                [(x, mid - 7), (x + 40, mid + 7)],
                RGBAColor(0, 0, 0, band).filled(),
            ))
            .map_err(err)?;
        }
        dashed(root, &[(x, mid), (x + 40, mid)], dash, c.stroke_width(2))?;
        if *k == RefKind::Published {
            published_marker(root, (x + 40, mid))?;
        }
        for (j, line) in lines.iter().enumerate() {
            text(root, line, (x + 50, mid + j as i32 * 16), &st)?;
        }
        y += lines.len() as i32 * 16 + 8;
    }
    Ok(())
}

/// A panel's y range in drawn units: from zero on a linear axis, unless a
/// published band would then be under 5% of the axis (a sliver nobody
/// sees), in which case the axis spans only what is drawn.
pub(crate) fn y_range(p: &Panel) -> (f64, f64) {
    let vals = y_values(p);
    let from_zero = range_of(&vals, &p.y, true);
    if p.y.log || p.y.range.is_some() {
        return from_zero;
    }
    let span = from_zero.1 - from_zero.0;
    let thin = p.refs.iter().any(|r| {
        r.kind == RefKind::Published
            && r.band
                .is_some_and(|(lo, hi)| lo.is_finite() && hi.is_finite() && hi - lo < 0.05 * span)
    });
    if thin {
        range_of(&vals, &p.y, false)
    } else {
        from_zero
    }
}

fn panel<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    area: &DrawingArea<DB, Shift>,
    p: &Panel,
    names: &[(String, Draw, usize)],
    panel_w: u32,
) -> Result<()> {
    let cat = !p.categories.is_empty();
    let clines = cat_lines(p, panel_w);
    let (x0, x1) = x_range(p, cat);
    let (y0, y1) = y_range(p);
    let x_area = if cat {
        20 + 16 * clines.len() as u32 + 22
    } else {
        58
    };
    let (pw, ph) = area.dim_in_pixel();
    let plot_px = (
        pw as f64 - 100.0 - super::ends::margin(p) as f64,
        ph as f64 - x_area as f64 - 40.0,
    );
    let xt = if cat {
        vec![]
    } else {
        thin(ticks((x0, x1), &p.x, 8), (x0, x1), plot_px.0, &p.x)
    };
    let yt = thin(
        ticks((y0, y1), &p.y, (plot_px.1 / 40.0).max(3.0) as usize),
        (y0, y1),
        plot_px.1,
        &p.y,
    );
    let mut b = ChartBuilder::on(area);
    b.margin_left(8)
        .margin_right(16.max(super::ends::margin(p)))
        .margin_top(6)
        .margin_bottom(4)
        .x_label_area_size(x_area)
        .y_label_area_size(84);
    if !p.title.is_empty() {
        b.caption(&p.title, font(15.0));
    }
    let mut chart = b
        .build_cartesian_2d(
            Ax {
                lo: x0,
                hi: x1,
                keys: xt,
            },
            Ax {
                lo: y0,
                hi: y1,
                keys: yt,
            },
        )
        .map_err(err)?;
    let (xlog, ylog) = (p.x.log, p.y.log);
    let xf = |v: &f64| tick_label(&p.x, *v);
    let yf = |v: &f64| tick_label(&p.y, *v);
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
    let to_px = |x: f64, y: f64| chart.backend_coord(&(x, y));
    let fr = Frame {
        x: (x0, x1),
        y: (y0, y1),
        log: (xlog, ylog),
        px: &to_px,
    };
    shades(root, p, &fr)?;
    references(root, p, &fr)?;
    series(root, p, names, cat, &fr)?;
    if cat {
        category_labels(root, p, &clines, &fr)?;
    }
    super::ends::draw(root, p, names, &fr)?;
    crate::ring::marks(root, p, cat, &fr)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figure::{Axis, Panel, Reference};

    fn with_refs(refs: Vec<Reference>) -> Figure {
        let mut p = Panel::new("p", Axis::new("x"), Axis::new("y"));
        for r in refs {
            p = p.reference(r);
        }
        Figure::new("t", &[], "title", "caption.").panel(p)
    }

    #[test]
    fn lines_of_one_kind_under_several_labels_share_one_legend_entry() {
        let f = with_refs(vec![
            Reference::expected("model a", 1.0),
            Reference::expected("model b", 2.0),
            Reference::limit("limit L", 3.0),
        ]);
        let (_, refs) = legend_entries(&f);
        let labels: Vec<&str> = refs.iter().map(|r| r.1.as_str()).collect();
        assert_eq!(labels, vec![EXPECTED_ENTRY, "limit L"]);
        let caption = caption_drawn(&f);
        assert!(caption.contains("model a; model b"), "{caption}");
        assert!(!caption.contains("limit L"), "{caption}");
    }

    #[test]
    fn one_label_per_kind_keeps_its_own_entry() {
        let f = with_refs(vec![
            Reference::expected("model a", 1.0),
            Reference::expected("model a", 2.0),
        ]);
        let (_, refs) = legend_entries(&f);
        assert_eq!(refs.len(), 1);
        assert_eq!(refs[0].1, "model a");
        assert_eq!(caption_drawn(&f), "caption.");
    }

    #[test]
    fn a_published_band_is_never_a_sliver_of_a_linear_axis() {
        let band = |lo: f64, hi: f64| Reference {
            kind: RefKind::Published,
            label: "A0.1 published".into(),
            value: Some((lo + hi) / 2.0),
            band: Some((lo, hi)),
            x: None,
            lines: vec![],
        };
        let pts = vec![crate::figure::Pt::spread(0.0, 1.09, 1.03, 1.11, 10)];
        let thin = Panel::new("p", Axis::new("x"), Axis::new("y"))
            .series(crate::figure::Series::points("s", pts.clone()))
            .reference(band(1.076, 1.104));
        let (y0, y1) = y_range(&thin);
        assert!(y0 > 0.9, "the axis still starts at zero: {y0}..{y1}");
        assert!((1.104 - 1.076) / (y1 - y0) >= 0.05, "{y0}..{y1}");
        // A band wide enough keeps the axis from zero.
        let wide = Panel::new("p", Axis::new("x"), Axis::new("y"))
            .series(crate::figure::Series::points("s", pts))
            .reference(band(0.8, 1.2));
        assert!(y_range(&wide).0 <= 0.0);
    }
}
