//! Charts as SVG (plotters' SVG backend writes text as SVG `<text>`, so no
//! system fonts are needed). Two shapes cover every figure: lines/points
//! over a numeric x axis, and grouped bars over categories.

use std::path::Path;

use plotters::prelude::*;

use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Style {
    Line,
    Points,
    LinePoints,
    /// Dashed reference line (a formula, a published bound).
    Dashed,
}

#[derive(Debug, Clone)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    pub style: Style,
    /// Optional (x, lo, hi) error bars, e.g. min/max over trials.
    pub ranges: Vec<(f64, f64, f64)>,
}

impl Series {
    pub fn new(name: impl Into<String>, points: Vec<(f64, f64)>, style: Style) -> Self {
        Series {
            name: name.into(),
            points,
            style,
            ranges: vec![],
        }
    }
    pub fn with_ranges(mut self, r: Vec<(f64, f64, f64)>) -> Self {
        self.ranges = r;
        self
    }
}

#[derive(Debug, Clone, Default)]
pub struct Axes {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub x_log: bool,
    pub y_log: bool,
}

fn e<T: std::fmt::Display>(x: T) -> Error {
    Error::Other(format!("drawing chart: {x}"))
}

fn color(i: usize) -> RGBColor {
    const P: [RGBColor; 10] = [
        RGBColor(31, 119, 180),
        RGBColor(255, 127, 14),
        RGBColor(44, 160, 44),
        RGBColor(214, 39, 40),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(127, 127, 127),
        RGBColor(188, 189, 34),
        RGBColor(23, 190, 207),
    ];
    P[i % P.len()]
}

fn bounds(vals: impl Iterator<Item = f64>, log: bool) -> (f64, f64) {
    let v: Vec<f64> = vals
        .filter(|x| x.is_finite() && (!log || *x > 0.0))
        .collect();
    if v.is_empty() {
        return if log { (1.0, 10.0) } else { (0.0, 1.0) };
    }
    let (lo, hi) = v
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(*x), b.max(*x)));
    if log {
        (lo / 1.5, hi * 1.5)
    } else {
        let pad = ((hi - lo) * 0.08).max(hi.abs() * 0.05).max(1e-9);
        (
            if lo >= 0.0 && lo - pad < 0.0 {
                0.0
            } else {
                lo - pad
            },
            hi + pad,
        )
    }
}

/// Lines and/or points over a numeric x axis (log axes optional).
pub fn xy_chart(path: &Path, axes: &Axes, series: &[Series]) -> Result<()> {
    super::figure::register_font();
    let xs = series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    let ys = series.iter().flat_map(|s| {
        s.points
            .iter()
            .map(|p| p.1)
            .chain(s.ranges.iter().flat_map(|r| [r.1, r.2]))
    });
    let (x0, x1) = bounds(xs, axes.x_log);
    let (y0, y1) = bounds(ys, axes.y_log);
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(e)?;
    macro_rules! draw {
        ($chart:expr) => {{
            let mut chart = $chart;
            chart
                .configure_mesh()
                .x_desc(axes.x_label.as_str())
                .y_desc(axes.y_label.as_str())
                .label_style(("sans-serif", 14))
                .draw()
                .map_err(e)?;
            for (i, s) in series.iter().enumerate() {
                let c = color(i);
                let pts = s.points.clone();
                let anno = match s.style {
                    Style::Line => chart
                        .draw_series(LineSeries::new(pts, c.stroke_width(2)))
                        .map_err(e)?,
                    Style::Dashed => chart
                        .draw_series(DashedLineSeries::new(
                            pts,
                            8,
                            5,
                            ShapeStyle::from(&BLACK).stroke_width(2),
                        ))
                        .map_err(e)?,
                    Style::Points => chart
                        .draw_series(pts.iter().map(|p| Circle::new(*p, 4, c.filled())))
                        .map_err(e)?,
                    Style::LinePoints => {
                        chart
                            .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
                            .map_err(e)?;
                        chart
                            .draw_series(pts.iter().map(|p| Circle::new(*p, 4, c.filled())))
                            .map_err(e)?
                    }
                };
                let legend_color = if s.style == Style::Dashed { BLACK } else { c };
                anno.label(s.name.as_str()).legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], legend_color.stroke_width(2))
                });
                if !s.ranges.is_empty() {
                    chart
                        .draw_series(s.ranges.iter().map(|(x, lo, hi)| {
                            PathElement::new(vec![(*x, *lo), (*x, *hi)], c.stroke_width(1))
                        }))
                        .map_err(e)?;
                }
            }
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .label_font(("sans-serif", 13))
                .position(SeriesLabelPosition::UpperLeft)
                .draw()
                .map_err(e)?;
        }};
    }
    let mut b = ChartBuilder::on(&root);
    b.caption(axes.title.as_str(), ("sans-serif", 18))
        .margin(14)
        .x_label_area_size(48)
        .y_label_area_size(72);
    match (axes.x_log, axes.y_log) {
        (false, false) => draw!(b.build_cartesian_2d(x0..x1, y0..y1).map_err(e)?),
        (true, false) => draw!(
            b.build_cartesian_2d((x0..x1).log_scale(), y0..y1)
                .map_err(e)?
        ),
        (false, true) => draw!(
            b.build_cartesian_2d(x0..x1, (y0..y1).log_scale())
                .map_err(e)?
        ),
        (true, true) => draw!(
            b.build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale())
                .map_err(e)?
        ),
    }
    root.present().map_err(e)?;
    Ok(())
}

/// One group of bars: a category with one value per series (NaN = no bar),
/// each with an optional (lo, hi) range.
#[derive(Debug, Clone)]
pub struct BarGroup {
    pub category: String,
    pub values: Vec<f64>,
    pub ranges: Vec<Option<(f64, f64)>>,
}

/// Grouped bars: one group per category, one bar per series name;
/// `reference` draws a dashed horizontal line (e.g. the limit) if given.
pub fn bar_chart(
    path: &Path,
    axes: &Axes,
    series_names: &[String],
    groups: &[BarGroup],
    reference: Option<(f64, &str)>,
) -> Result<()> {
    super::figure::register_font();
    let n_groups = groups.len().max(1);
    let n_series = series_names.len().max(1);
    let ys = groups
        .iter()
        .flat_map(|g| {
            g.values
                .iter()
                .copied()
                .chain(g.ranges.iter().flatten().flat_map(|r| [r.0, r.1]))
        })
        .chain(reference.map(|r| r.0));
    let (_, y1) = bounds(ys, false);
    let y0 = 0.0;
    let root = SVGBackend::new(path, (1000, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(e)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(axes.title.as_str(), ("sans-serif", 18))
        .margin(14)
        .x_label_area_size(110)
        .y_label_area_size(72)
        .build_cartesian_2d(0f64..n_groups as f64, y0..y1)
        .map_err(e)?;
    let cats: Vec<String> = groups.iter().map(|g| g.category.clone()).collect();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n_groups * 2 + 1)
        .x_label_formatter(&|x| {
            let i = x.floor() as usize;
            if (x - (i as f64 + 0.5)).abs() < 0.26 {
                cats.get(i).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .x_label_style(
            ("sans-serif", 11)
                .into_font()
                .transform(FontTransform::Rotate90),
        )
        .y_desc(axes.y_label.as_str())
        .x_desc(axes.x_label.as_str())
        .draw()
        .map_err(e)?;
    let w = 0.8 / n_series as f64;
    for (si, name) in series_names.iter().enumerate() {
        let c = color(si);
        let rects: Vec<Rectangle<(f64, f64)>> = groups
            .iter()
            .enumerate()
            .filter_map(|(gi, g)| {
                let v = *g.values.get(si)?;
                if !v.is_finite() {
                    return None;
                }
                let x = gi as f64 + 0.1 + si as f64 * w;
                Some(Rectangle::new([(x, 0.0), (x + w * 0.92, v)], c.filled()))
            })
            .collect();
        chart
            .draw_series(rects)
            .map_err(e)?
            .label(name.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], c.filled()));
        let whiskers: Vec<PathElement<(f64, f64)>> = groups
            .iter()
            .enumerate()
            .filter_map(|(gi, g)| {
                let (lo, hi) = (*g.ranges.get(si)?)?;
                let x = gi as f64 + 0.1 + si as f64 * w + w * 0.46;
                Some(PathElement::new(
                    vec![(x, lo), (x, hi)],
                    BLACK.stroke_width(1),
                ))
            })
            .collect();
        chart.draw_series(whiskers).map_err(e)?;
    }
    if let Some((v, label)) = reference {
        chart
            .draw_series(DashedLineSeries::new(
                vec![(0.0, v), (n_groups as f64, v)],
                8,
                5,
                BLACK.stroke_width(2),
            ))
            .map_err(e)?
            .label(label)
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 13))
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(e)?;
    root.present().map_err(e)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charts_render_without_fonts() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.svg");
        let axes = Axes {
            title: "A1.2 overshoot".into(),
            x_label: "workers".into(),
            y_label: "extra admitted".into(),
            x_log: true,
            y_log: false,
        };
        xy_chart(
            &p,
            &axes,
            &[
                Series::new(
                    "measured",
                    vec![(1.0, 0.0), (8.0, 4.0), (64.0, 28.0)],
                    Style::LinePoints,
                )
                .with_ranges(vec![(8.0, 3.0, 5.0)]),
                Series::new("formula", vec![(1.0, 0.0), (64.0, 28.0)], Style::Dashed),
            ],
        )
        .unwrap();
        let svg = std::fs::read_to_string(&p).unwrap();
        assert!(svg.contains("<svg") && svg.contains("A1.2 overshoot") && svg.contains("workers"));
        let q = d.path().join("b.svg");
        bar_chart(
            &q,
            &axes,
            &["x".into(), "y".into()],
            &[BarGroup {
                category: "GET".into(),
                values: vec![1.0, 2.0],
                ranges: vec![Some((0.5, 1.5)), None],
            }],
            Some((1.0, "limit")),
        )
        .unwrap();
        assert!(std::fs::read_to_string(&q).unwrap().contains("GET"));
    }
}
