//! Where the rings' labels go: one placer, in pixels, knowing nothing of
//! plotters or of what the rings mean.
//!
//! Each label has candidate boxes around its ring: [`DIRECTIONS`]
//! directions, each at the [`GAPS`] from the ring's edge, in each of the
//! label's layouts (one line, or the value and its interval on two). A
//! candidate past the plot area's edge is moved inside it (the move counts
//! as distance); a layout larger than the area is taken only when no
//! layout fits (then its top-left corner stays inside). Candidates are
//! scored by what they cover, in this order of weight: a label already
//! placed, a ring, a data point, another ring nearer the label than its
//! own (the label would read as that ring's), then the length of every
//! line under it (series lines, whiskers, interval bars, reference lines
//! and band edges), then its distance from its ring and a second line.
//! The labels are placed in the order given, each at its lowest score,
//! ties to the first candidate (directions from the right,
//! counter-clockwise, nearest gap first): the result depends on nothing
//! but the input. A label not touching its ring gets a leader, a short
//! line from the ring's edge to the box.

/// The ring's radius in pixels (a series marker is 5).
pub const RING: i32 = 11;

/// Directions around a ring a label is tried in (evenly spaced).
pub const DIRECTIONS: usize = 16;

/// Gaps (px) between a ring's edge and its label's box, nearest first.
pub const GAPS: [i32; 5] = [4, 18, 40, 75, 120];

/// Up to this gap a label is adjacent to its ring; past it, a leader is drawn.
pub const ADJACENT: i32 = 6;

/// Half a data marker's size (px): a point covers the square this far
/// around it.
const MARKER: i32 = 6;

/// What a panel draws, in pixels (y down): what labels must not hide.
#[derive(Debug, Clone, Default)]
pub struct Scene {
    /// The plot area: left, top, right, bottom.
    pub area: (i32, i32, i32, i32),
    /// Data points (markers).
    pub points: Vec<(i32, i32)>,
    /// Drawn lines: series, whiskers, interval bars, references, band edges.
    pub segments: Vec<((i32, i32), (i32, i32))>,
    /// Ring centres (radius [`RING`]).
    pub rings: Vec<(i32, i32)>,
}

/// One label to place: its ring (an index into [`Scene::rings`]) and the
/// sizes (width, height) of its layouts, the preferred first.
#[derive(Debug, Clone)]
pub struct Label {
    pub ring: usize,
    pub layouts: Vec<(i32, i32)>,
}

/// A placed label: its box, the layout it takes, and its leader (from the
/// ring's edge to the box) when it does not touch its ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placed {
    pub x: i32,
    pub y: i32,
    pub w: i32,
    pub h: i32,
    pub layout: usize,
    pub leader: Option<((i32, i32), (i32, i32))>,
}

impl Placed {
    /// The box as (left, top, right, bottom).
    pub fn rect(&self) -> (i32, i32, i32, i32) {
        (self.x, self.y, self.x + self.w, self.y + self.h)
    }
}

/// Score weights: what a candidate box covers.
const LABEL_OVERLAP: i64 = 200; // per px² of an earlier label
const RING_OVERLAP: i64 = 60; // per px² of a ring's square
const POINT: i64 = 3000; // per data point
const LINE: i64 = 40; // per px of a drawn line
const DISTANCE: i64 = 18; // per px of gap from the ring
const SECOND_LINE: i64 = 250; // a two-line layout
const NEARER_RING: i64 = 2500; // per other ring nearer the label than its own

/// Place every label (see the module docs).
pub fn place(scene: &Scene, labels: &[Label]) -> Vec<Placed> {
    let mut placed: Vec<Placed> = Vec::new();
    for l in labels {
        let Some(&c) = scene.rings.get(l.ring) else {
            continue;
        };
        let mut best: Option<(i64, bool, Placed)> = None;
        for (li, &(w, h)) in l.layouts.iter().enumerate() {
            for &gap in &GAPS {
                for d in 0..DIRECTIONS {
                    // A candidate past the area's edge is moved inside
                    // (the move counts as distance); a layout larger than
                    // the area cannot be, and loses to one that fits.
                    let (cx, cy) = candidate(c, (w, h), gap, d);
                    let (x, y) = pushed_in(scene.area, (cx, cy), (w, h));
                    let b = (x, y, x + w, y + h);
                    let inside = inside(scene.area, b);
                    let moved = ((x - cx).abs() + (y - cy).abs()) as i64;
                    let s = score(scene, &placed, b)
                        + (gap as i64 + moved) * DISTANCE
                        + li as i64 * SECOND_LINE
                        + ambiguous(scene, l.ring, b) * NEARER_RING;
                    let better = match &best {
                        None => true,
                        // Inside the area beats outside; then the score.
                        Some((bs, bi, _)) => (inside && !bi) || (inside == *bi && s < *bs),
                    };
                    if better {
                        let p = Placed {
                            x,
                            y,
                            w,
                            h,
                            layout: li,
                            leader: leader(c, b),
                        };
                        best = Some((s, inside, p));
                    }
                }
            }
        }
        if let Some((_, _, p)) = best {
            placed.push(p);
        }
    }
    placed
}

/// The box (top-left) of size `wh` in direction `d` at `gap` from the ring
/// at `c`: the point at that distance lies on the box's edge facing the ring.
fn candidate(c: (i32, i32), wh: (i32, i32), gap: i32, d: usize) -> (i32, i32) {
    let a = std::f64::consts::TAU * d as f64 / DIRECTIONS as f64;
    // Screen y is down: counter-clockwise from the right is -sin.
    let (dx, dy) = (a.cos(), -a.sin());
    let r = (RING + gap) as f64;
    let (ax, ay) = (c.0 as f64 + dx * r, c.1 as f64 + dy * r);
    let s = 1.0 / dx.abs().max(dy.abs());
    let (w, h) = (wh.0 as f64, wh.1 as f64);
    let (cx, cy) = (ax + dx * s * w / 2.0, ay + dy * s * h / 2.0);
    ((cx - w / 2.0).round() as i32, (cy - h / 2.0).round() as i32)
}

fn inside(area: (i32, i32, i32, i32), b: (i32, i32, i32, i32)) -> bool {
    b.0 >= area.0 && b.1 >= area.1 && b.2 <= area.2 && b.3 <= area.3
}

/// A box moved the least into the area (its top-left corner where the box
/// is larger than the area).
fn pushed_in(area: (i32, i32, i32, i32), xy: (i32, i32), wh: (i32, i32)) -> (i32, i32) {
    let x = xy.0.min(area.2 - wh.0).max(area.0);
    let y = xy.1.min(area.3 - wh.1).max(area.1);
    (x, y)
}

/// How many other rings are nearer box `b` than its own ring `own` (a
/// reader would take the label for theirs).
fn ambiguous(scene: &Scene, own: usize, b: (i32, i32, i32, i32)) -> i64 {
    let d = distance(scene.rings[own], b);
    scene
        .rings
        .iter()
        .enumerate()
        .filter(|&(i, &c)| i != own && distance(c, b) < d)
        .count() as i64
}

/// What box `b` covers, weighted (without its distance).
fn score(scene: &Scene, placed: &[Placed], b: (i32, i32, i32, i32)) -> i64 {
    let labels: i64 = placed.iter().map(|p| overlap(grow(p.rect(), 3), b)).sum();
    let rings: i64 = scene
        .rings
        .iter()
        .map(|&(x, y)| overlap((x - RING - 2, y - RING - 2, x + RING + 2, y + RING + 2), b))
        .sum();
    let points = scene
        .points
        .iter()
        .filter(|&&(x, y)| overlap((x - MARKER, y - MARKER, x + MARKER, y + MARKER), b) > 0)
        .count() as i64;
    let lines: f64 = scene
        .segments
        .iter()
        .map(|&(p, q)| clipped_length(p, q, grow(b, 1)))
        .sum();
    labels * LABEL_OVERLAP + rings * RING_OVERLAP + points * POINT + (lines * LINE as f64) as i64
}

fn grow(b: (i32, i32, i32, i32), k: i32) -> (i32, i32, i32, i32) {
    (b.0 - k, b.1 - k, b.2 + k, b.3 + k)
}

/// The area (px²) two boxes share.
fn overlap(a: (i32, i32, i32, i32), b: (i32, i32, i32, i32)) -> i64 {
    let w = (a.2.min(b.2) - a.0.max(b.0)).max(0) as i64;
    let h = (a.3.min(b.3) - a.1.max(b.1)).max(0) as i64;
    w * h
}

/// The length of segment `p`-`q` inside box `b` (Liang-Barsky clipping).
fn clipped_length(p: (i32, i32), q: (i32, i32), b: (i32, i32, i32, i32)) -> f64 {
    let (x0, y0) = (p.0 as f64, p.1 as f64);
    let (dx, dy) = ((q.0 - p.0) as f64, (q.1 - p.1) as f64);
    let (mut t0, mut t1) = (0.0f64, 1.0f64);
    for (pk, qk) in [
        (-dx, x0 - b.0 as f64),
        (dx, b.2 as f64 - x0),
        (-dy, y0 - b.1 as f64),
        (dy, b.3 as f64 - y0),
    ] {
        if pk == 0.0 {
            if qk < 0.0 {
                return 0.0;
            }
        } else {
            let t = qk / pk;
            if pk < 0.0 {
                t0 = t0.max(t);
            } else {
                t1 = t1.min(t);
            }
        }
    }
    if t1 <= t0 {
        0.0
    } else {
        (t1 - t0) * (dx * dx + dy * dy).sqrt()
    }
}

/// From the ring's edge to the nearest point of box `b`, if the box is
/// farther than [`ADJACENT`] from the ring's edge.
fn leader(c: (i32, i32), b: (i32, i32, i32, i32)) -> Option<((i32, i32), (i32, i32))> {
    let n = (c.0.clamp(b.0, b.2), c.1.clamp(b.1, b.3));
    let (dx, dy) = ((n.0 - c.0) as f64, (n.1 - c.1) as f64);
    let d = (dx * dx + dy * dy).sqrt();
    if d <= (RING + ADJACENT) as f64 {
        return None;
    }
    let from = (
        c.0 + (dx / d * RING as f64).round() as i32,
        c.1 + (dy / d * RING as f64).round() as i32,
    );
    Some((from, n))
}

/// The distance (px) from ring centre `c` to the nearest point of box `b`.
pub fn distance(c: (i32, i32), b: (i32, i32, i32, i32)) -> f64 {
    let n = (c.0.clamp(b.0, b.2), c.1.clamp(b.1, b.3));
    (((n.0 - c.0) as f64).powi(2) + ((n.1 - c.1) as f64).powi(2)).sqrt()
}

#[cfg(test)]
mod tests;
