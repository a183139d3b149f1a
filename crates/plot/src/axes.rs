//! Axes of a figure: drawn ranges (log10 for log axes), tick positions at
//! readable values, thinned to the space they have, and the plotters axis
//! type that draws exactly those ticks.

use plotters::prelude::*;

use super::figure::{Axis, Panel, num};
use super::nines::nines_label;
use super::style::SMALL;
use super::text::text_width;

/// A value on an axis as drawn (log10 for log axes).
pub(super) fn tr(v: f64, log: bool) -> f64 {
    if log { v.log10() } else { v }
}

/// The drawn range of an axis from its values (already finite).
pub(super) fn range_of(vals: &[f64], axis: &Axis, zero: bool) -> (f64, f64) {
    if let Some((a, b)) = axis.range {
        return (tr(a, axis.log), tr(b, axis.log));
    }
    let v: Vec<f64> = vals
        .iter()
        .copied()
        .filter(|v| v.is_finite() && (!axis.log || *v > 0.0))
        .collect();
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
        let (lo, hi) = if zero && lo >= 0.0 {
            (0.0, hi)
        } else if zero && hi <= 0.0 {
            (lo, 0.0)
        } else {
            (lo, hi)
        };
        // All values equal (e.g. every one 0): a readable unit range around them.
        let (lo, hi) = if hi - lo < 1e-9 * hi.abs().max(1.0) {
            if hi == 0.0 {
                (0.0, 1.0)
            } else {
                (lo.min(0.0), hi * 1.2)
            }
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
pub(super) fn ticks(r: (f64, f64), axis: &Axis, max: usize) -> Vec<f64> {
    if let Some(t) = &axis.ticks {
        return t
            .iter()
            .filter(|v| !axis.log || **v > 0.0)
            .map(|v| tr(*v, axis.log))
            .filter(|v| *v >= r.0 - 1e-9 && *v <= r.1 + 1e-9)
            .collect();
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
        for ms in [
            &[1.0, 2.0, 5.0][..],
            &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0][..],
        ] {
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
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| span / s <= max as f64)
        .unwrap_or(10.0 * mag);
    let mut v = (r.0 / step).ceil() * step;
    let mut out = Vec::new();
    while v <= r.1 + step * 1e-9 {
        out.push(if v.abs() < step * 1e-9 { 0.0 } else { v });
        v += step;
    }
    out
}

/// The label of the tick at `v` (drawn units): the value (10^v on a log
/// axis), or the percentile on a nines axis (`p99.9`).
pub(super) fn tick_label(axis: &Axis, v: f64) -> String {
    if axis.nines {
        nines_label(v)
    } else {
        num(if axis.log { 10f64.powf(v) } else { v })
    }
}

/// Drop ticks whose labels would touch (pixel positions from the fraction of the range).
pub(super) fn thin(t: Vec<f64>, r: (f64, f64), px: f64, axis: &Axis) -> Vec<f64> {
    let mut out: Vec<f64> = Vec::new();
    let mut last_end = f64::MIN;
    for v in t {
        let pos = (v - r.0) / (r.1 - r.0) * px;
        let w = text_width(&tick_label(axis, v), SMALL) + 8.0;
        if pos - w / 2.0 >= last_end {
            out.push(v);
            last_end = pos + w / 2.0;
        }
    }
    out
}

/// A linear axis in drawn units with exactly the given tick positions.
pub(super) struct Ax {
    pub(super) lo: f64,
    pub(super) hi: f64,
    pub(super) keys: Vec<f64>,
}

impl Ranged for Ax {
    type ValueType = f64;
    type FormatOption = plotters::coord::ranged1d::DefaultFormatting;
    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let t = (v - self.lo) / (self.hi - self.lo);
        (limit.0 as f64 + t * (limit.1 - limit.0) as f64).round() as i32
    }
    fn key_points<H: plotters::coord::ranged1d::KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            vec![]
        } else {
            self.keys.clone()
        }
    }
    fn range(&self) -> std::ops::Range<f64> {
        self.lo..self.hi
    }
}

/// The sideways offset (drawn x units) of series `si` of `k` at a
/// category or on a dodged panel, as `panel::series` draws it.
pub(super) fn dodge(p: &Panel, si: usize, cat: bool, x: (f64, f64)) -> f64 {
    let k = p.series.len().max(1);
    // A series' own offset (`Series::offset`) comes on top.
    let own = p.series.get(si).map_or(0.0, |s| s.offset) * (x.1 - x.0);
    own + if cat && k > 1 {
        (si as f64 - (k as f64 - 1.0) / 2.0) * (0.7 / k as f64)
    } else if p.dodge && k > 1 {
        (si as f64 - (k as f64 - 1.0) / 2.0) * (x.1 - x.0) * 0.012
    } else {
        0.0
    }
}
