//! Direct labels: on a panel that asks for them ([`Panel::label_ends`]),
//! each series is named at the right end of its line instead of in the
//! legend. The labels stand in one column in the panel's right margin
//! (wide enough for the longest, [`margin`]), each joined to its line's
//! last point by a dotted leader in the series' colour with its marker,
//! and are set apart vertically so no two touch ([`stagger`]): a label
//! sits as near its line's end as the others let it.
//!
//! A series named at its line's end in every panel that draws it has no
//! legend entry ([`labelled_everywhere`]; `draw.rs` leaves it out).

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::axes::tr;
use super::figure::{Draw, Figure, Panel};
use super::marks::{dashed, marker};
use super::panel::Frame;
use super::style::{SMALL, font, series_look, text};
use super::text::text_width;
use limitbench_base::error::Result;

/// The height one label takes (px), and so the least distance between
/// two labels' centres.
pub const LABEL_H: i32 = 16;
/// From the plot's right edge to a label's text: the leader's end and
/// the series' marker.
pub const LEAD: i32 = 26;

/// The right margin a panel needs for its end labels (px; 0 without).
pub fn margin(p: &Panel) -> u32 {
    if !p.label_ends {
        return 0;
    }
    let w = p
        .series
        .iter()
        .map(|s| text_width(&s.name, SMALL))
        .fold(0.0, f64::max);
    w.ceil() as u32 + LEAD as u32 + 6
}

/// Whether series `name` is named at its line's end in every panel that
/// draws it (then the legend leaves it out).
pub fn labelled_everywhere(f: &Figure, name: &str) -> bool {
    let mut any = false;
    for p in &f.panels {
        if p.series.iter().any(|s| s.name == name) {
            if !p.label_ends {
                return false;
            }
            any = true;
        }
    }
    any
}

/// Centres (px, y down) for labels wanted at `wanted`: at least `gap`
/// apart, within `top..=bottom` where they fit, in the order of the
/// wanted places, each run of labels that would touch centred on its
/// wanted places (the least squared shift).
pub fn stagger(wanted: &[i32], gap: i32, top: i32, bottom: i32) -> Vec<i32> {
    let mut order: Vec<usize> = (0..wanted.len()).collect();
    order.sort_by_key(|&i| (wanted[i], i));
    // Runs of labels: (first label's centre, how many, sum of wanted).
    let mut runs: Vec<(f64, usize, f64)> = Vec::new();
    let place = |n: usize, sum: f64| {
        let first = sum / n as f64 - (n as f64 - 1.0) * gap as f64 / 2.0;
        let last_ok = bottom as f64 - (n as f64 - 1.0) * gap as f64;
        first.min(last_ok).max(top as f64)
    };
    for &i in &order {
        let w = wanted[i] as f64;
        runs.push((place(1, w), 1, w));
        while runs.len() > 1 {
            let (b, a) = (runs[runs.len() - 1], runs[runs.len() - 2]);
            if a.0 + a.1 as f64 * gap as f64 <= b.0 {
                break;
            }
            runs.truncate(runs.len() - 2);
            let (n, sum) = (a.1 + b.1, a.2 + b.2);
            runs.push((place(n, sum), n, sum));
        }
    }
    let mut out = vec![0; wanted.len()];
    let mut k = 0;
    for (first, n, _) in runs {
        for j in 0..n {
            out[order[k]] = (first + (j as i32 * gap) as f64).round() as i32;
            k += 1;
        }
    }
    out
}

/// Draw the end labels of `p` (nothing unless it asks for them).
pub(super) fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    p: &Panel,
    names: &[(String, Draw, usize)],
    fr: &Frame,
) -> Result<()> {
    if !p.label_ends {
        return Ok(());
    }
    let ((x0, x1), (y0, y1), (xlog, ylog)) = (fr.x, fr.y, fr.log);
    let (right, top) = (fr.px)(x1, y1);
    let (_, bottom) = (fr.px)(x0, y0);
    // Each series' last point (largest x) in pixels.
    let mut ends: Vec<(usize, (i32, i32))> = Vec::new();
    for (si, s) in p.series.iter().enumerate() {
        let last = s
            .points
            .iter()
            .filter(|q| q.y.is_finite() && (!xlog || q.x > 0.0) && (!ylog || q.y > 0.0))
            .max_by(|a, b| a.x.total_cmp(&b.x));
        if let Some(q) = last {
            let (x, y) = (tr(q.x, xlog).clamp(x0, x1), tr(q.y, ylog).clamp(y0, y1));
            ends.push((si, (fr.px)(x, y)));
        }
    }
    let wanted: Vec<i32> = ends.iter().map(|e| e.1.1).collect();
    let half = LABEL_H / 2;
    let at = stagger(&wanted, LABEL_H, top + half, bottom - half);
    for ((si, (px, py)), y) in ends.into_iter().zip(at) {
        let s = &p.series[si];
        let lk = series_look(names, s, si);
        let leader = [(px + 3, py), (right + 4, y), (right + 12, y)];
        dashed(root, &leader, (1, 3), lk.color.stroke_width(1))?;
        if s.draw != Draw::Line {
            marker(root, (right + 14, y), lk.marker, lk.color)?;
        } else {
            dashed(
                root,
                &[(right + 8, y), (right + 20, y)],
                lk.dash,
                lk.color.stroke_width(2),
            )?;
        }
        text(
            root,
            &s.name,
            (right + LEAD, y),
            &font(SMALL).pos(Pos::new(HPos::Left, VPos::Center)),
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::ends::*;
    use crate::figure::{Axis, Pt, Series};

    fn apart(ys: &[i32], gap: i32) -> bool {
        let mut s = ys.to_vec();
        s.sort();
        s.windows(2).all(|w| w[1] - w[0] >= gap)
    }

    #[test]
    fn labels_that_would_touch_are_set_apart_and_the_rest_stay_put() {
        // Far apart: each at its line's end.
        assert_eq!(stagger(&[100, 10, 200], 16, 0, 300), vec![100, 10, 200]);
        // Three lines ending together: centred on them, 16 px apart, in order.
        let y = stagger(&[100, 101, 102], 16, 0, 300);
        assert!(apart(&y, 16), "{y:?}");
        assert_eq!(y, vec![85, 101, 117]);
        // Crowded at the bottom: pushed up, none below the bottom.
        let y = stagger(&[290, 295, 299, 300], 16, 0, 300);
        assert!(apart(&y, 16) && y.iter().all(|v| *v <= 300), "{y:?}");
        // A run pushed into the next one merges with it.
        let y = stagger(&[50, 50, 50, 60, 80], 16, 0, 300);
        assert!(apart(&y, 16), "{y:?}");
        assert!(y.windows(2).all(|w| w[1] >= w[0]), "order kept: {y:?}");
        // Ten labels in 150 px fit exactly from the top.
        let y = stagger(&[0; 10], 16, 0, 150);
        assert!(apart(&y, 16) && y[0] >= 0 && y[9] <= 150, "{y:?}");
    }

    #[test]
    fn the_margin_fits_the_longest_label_and_labelled_series_leave_the_legend() {
        let pts = vec![Pt::new(1.0, 1.0), Pt::new(2.0, 3.0)];
        let p = Panel::new("p", Axis::new("x"), Axis::new("y"))
            .series(Series::line("short", pts.clone()))
            .series(Series::line("a much longer series name", pts.clone()));
        assert_eq!(margin(&p), 0, "no labels asked for");
        let p = p.label_ends();
        let w = text_width("a much longer series name", SMALL);
        assert!(margin(&p) as f64 >= w + LEAD as f64, "{}", margin(&p));
        let other = Panel::new("q", Axis::new("x"), Axis::new("y"))
            .series(Series::line("short", pts.clone()));
        let f = Figure::new("f", &[], "t", "c").panel(p).panel(other);
        assert!(labelled_everywhere(&f, "a much longer series name"));
        assert!(!labelled_everywhere(&f, "short"), "also in a legend panel");
        assert!(!labelled_everywhere(&f, "absent"));
    }
}
