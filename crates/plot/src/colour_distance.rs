//! How far apart two colours look: sRGB to CIELAB (D65), the CIEDE2000
//! colour difference (Sharma, Wu and Dalal 2005), and the colours a
//! colour-blind reader sees (Machado, Oliveira and Fernandes 2009, severity
//! 1). The palette's tests (below) hold the series colours of `style` to
//! minimum distances with these; nothing draws with them.

/// An sRGB channel (0..=255) as linear light (0..=1).
fn linear(c: u8) -> f64 {
    let c = c as f64 / 255.0;
    if c <= 0.04045 {
        c / 12.92
    } else {
        ((c + 0.055) / 1.055).powf(2.4)
    }
}

/// Linear light (clamped to 0..=1) as an sRGB channel.
fn encode(c: f64) -> u8 {
    let c = c.clamp(0.0, 1.0);
    let v = if c <= 0.003_130_8 {
        12.92 * c
    } else {
        1.055 * c.powf(1.0 / 2.4) - 0.055
    };
    (v * 255.0).round() as u8
}

/// CIELAB (L*, a*, b*) of an sRGB colour, D65 white.
pub fn lab(rgb: (u8, u8, u8)) -> (f64, f64, f64) {
    let (r, g, b) = (linear(rgb.0), linear(rgb.1), linear(rgb.2));
    let x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.950_47;
    let y = 0.2126 * r + 0.7152 * g + 0.0722 * b;
    let z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.088_83;
    let d: f64 = 6.0 / 29.0;
    let f = |t: f64| {
        if t > d.powi(3) {
            t.cbrt()
        } else {
            t / (3.0 * d * d) + 4.0 / 29.0
        }
    };
    let (fx, fy, fz) = (f(x), f(y), f(z));
    (116.0 * fy - 16.0, 500.0 * (fx - fy), 200.0 * (fy - fz))
}

/// The CIEDE2000 difference of two CIELAB colours (kL = kC = kH = 1).
pub fn ciede2000(c1: (f64, f64, f64), c2: (f64, f64, f64)) -> f64 {
    let ((l1, a1, b1), (l2, a2, b2)) = (c1, c2);
    let cbar = (a1.hypot(b1) + a2.hypot(b2)) / 2.0;
    let p7 = |c: f64| (c.powi(7) / (c.powi(7) + 25f64.powi(7))).sqrt();
    let g = 0.5 * (1.0 - p7(cbar));
    let (a1p, a2p) = ((1.0 + g) * a1, (1.0 + g) * a2);
    let (c1p, c2p) = (a1p.hypot(b1), a2p.hypot(b2));
    let hue = |b: f64, a: f64| {
        if a == 0.0 && b == 0.0 {
            0.0
        } else {
            b.atan2(a).to_degrees().rem_euclid(360.0)
        }
    };
    let (h1, h2) = (hue(b1, a1p), hue(b2, a2p));
    let dl = l2 - l1;
    let dc = c2p - c1p;
    let dh = if c1p * c2p == 0.0 {
        0.0
    } else if h2 - h1 > 180.0 {
        h2 - h1 - 360.0
    } else if h2 - h1 < -180.0 {
        h2 - h1 + 360.0
    } else {
        h2 - h1
    };
    let dhh = 2.0 * (c1p * c2p).sqrt() * (dh / 2.0).to_radians().sin();
    let lbar = (l1 + l2) / 2.0;
    let cbarp = (c1p + c2p) / 2.0;
    let hbar = if c1p * c2p == 0.0 {
        h1 + h2
    } else if (h1 - h2).abs() <= 180.0 {
        (h1 + h2) / 2.0
    } else if h1 + h2 < 360.0 {
        (h1 + h2 + 360.0) / 2.0
    } else {
        (h1 + h2 - 360.0) / 2.0
    };
    let cosd = |deg: f64| deg.to_radians().cos();
    let t =
        1.0 - 0.17 * cosd(hbar - 30.0) + 0.24 * cosd(2.0 * hbar) + 0.32 * cosd(3.0 * hbar + 6.0)
            - 0.20 * cosd(4.0 * hbar - 63.0);
    let dtheta = 30.0 * (-((hbar - 275.0) / 25.0).powi(2)).exp();
    let rc = 2.0 * p7(cbarp);
    let sl = 1.0 + 0.015 * (lbar - 50.0).powi(2) / (20.0 + (lbar - 50.0).powi(2)).sqrt();
    let sc = 1.0 + 0.045 * cbarp;
    let sh = 1.0 + 0.015 * cbarp * t;
    let rt = -(2.0 * dtheta).to_radians().sin() * rc;
    ((dl / sl).powi(2) + (dc / sc).powi(2) + (dhh / sh).powi(2) + rt * (dc / sc) * (dhh / sh))
        .sqrt()
}

/// A colour vision: normal, or one of the three dichromacies.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Vision {
    Normal,
    Protanopia,
    Deuteranopia,
    Tritanopia,
}

impl Vision {
    pub const ALL: [Vision; 4] = [
        Vision::Normal,
        Vision::Protanopia,
        Vision::Deuteranopia,
        Vision::Tritanopia,
    ];

    /// `rgb` as this vision sees it: Machado et al.'s matrix (severity 1)
    /// applied to linear sRGB.
    pub fn sees(self, rgb: (u8, u8, u8)) -> (u8, u8, u8) {
        let m: [[f64; 3]; 3] = match self {
            Vision::Normal => return rgb,
            Vision::Protanopia => [
                [0.152286, 1.052583, -0.204868],
                [0.114503, 0.786281, 0.099216],
                [-0.003882, -0.048116, 1.051998],
            ],
            Vision::Deuteranopia => [
                [0.367322, 0.860646, -0.227968],
                [0.280085, 0.672501, 0.047413],
                [-0.011820, 0.042940, 0.968881],
            ],
            Vision::Tritanopia => [
                [1.255528, -0.076749, -0.178779],
                [-0.078411, 0.930809, 0.147602],
                [0.004733, 0.691367, 0.303900],
            ],
        };
        let l = [linear(rgb.0), linear(rgb.1), linear(rgb.2)];
        let row = |r: [f64; 3]| encode(r[0] * l[0] + r[1] * l[1] + r[2] * l[2]);
        (row(m[0]), row(m[1]), row(m[2]))
    }
}

/// The CIEDE2000 difference of two sRGB colours as `vision` sees them.
pub fn distance(a: (u8, u8, u8), b: (u8, u8, u8), vision: Vision) -> f64 {
    ciede2000(lab(vision.sees(a)), lab(vision.sees(b)))
}

#[cfg(test)]
mod tests {
    use crate::colour_distance::*;
    use crate::style::{COLOURS, NAMED_COLOURS, OWN_MARKER, PALETTE};

    fn rgb(i: usize) -> (u8, u8, u8) {
        let c = PALETTE[i];
        (c.0, c.1, c.2)
    }

    /// The closest pair of `colours` for `vision`: (distance, i, j).
    fn closest(colours: &[usize], vision: Vision) -> (f64, usize, usize) {
        let mut out = (f64::INFINITY, 0, 0);
        for (k, i) in colours.iter().enumerate() {
            for j in &colours[k + 1..] {
                let d = distance(rgb(*i), rgb(*j), vision);
                if d < out.0 {
                    out = (d, *i, *j);
                }
            }
        }
        out
    }

    #[test]
    fn ciede2000_matches_sharmas_test_data() {
        // Pairs 1, 7 and 17 of Sharma, Wu and Dalal's table.
        let cases = [
            ((50.0, 2.6772, -79.7751), (50.0, 0.0, -82.7485), 2.0425),
            ((50.0, 0.0, 0.0), (50.0, -1.0, 2.0), 2.3669),
            ((50.0, 2.5, 0.0), (73.0, 25.0, -18.0), 27.1492),
        ];
        for (a, b, want) in cases {
            assert!((ciede2000(a, b) - want).abs() < 1e-4, "{a:?} {b:?}");
        }
        // sRGB white is L* 100, black 0.
        assert!((lab((255, 255, 255)).0 - 100.0).abs() < 0.01);
        assert_eq!(Vision::Deuteranopia.sees((0, 0, 0)), (0, 0, 0));
    }

    /// The twelve built-in strategies' colours (0..12) are at least as far
    /// apart as the closest pair of Okabe and Ito's palette they start from
    /// (blue and sky blue, 22.3): the old palette had vermillion and orange
    /// (gcra, fixed-window-multi) at 22.2 and three pairs under 17.
    #[test]
    fn the_twelve_strategy_colours_are_far_apart() {
        let twelve: Vec<usize> = (0..12).collect();
        let okabe_ito = distance(rgb(0), rgb(4), Vision::Normal);
        assert!((okabe_ito - 22.3).abs() < 0.05, "{okabe_ito}");
        let (d, i, j) = closest(&twelve, Vision::Normal);
        assert!(d >= okabe_ito - 1e-9, "colours {i} and {j}: {d:.1}");
        // Every colour stays apart from the published value's black and
        // from the two greys (GET, INCR; the model lines' grey).
        let all: Vec<usize> = (0..COLOURS).collect();
        let (d, i, j) = closest(&all, Vision::Normal);
        assert!(d >= 21.0, "colours {i} and {j}: {d:.1}");
        for i in (0..COLOURS).filter(|i| !(12..NAMED_COLOURS).contains(i)) {
            for grey in [(0, 0, 0), (80, 80, 80), (110, 110, 110), (150, 150, 150)] {
                let d = distance(rgb(i), grey, Vision::Normal);
                assert!(d >= 20.0, "colour {i} vs grey {grey:?}: {d:.1}");
            }
        }
    }

    /// Colours that share their own marker stay apart for every vision, so
    /// a colour-blind reader tells any two looks apart by colour or marker.
    #[test]
    fn colours_sharing_a_marker_differ_for_every_vision() {
        for m in 0..6 {
            let same: Vec<usize> = (0..COLOURS).filter(|c| OWN_MARKER[*c] == m).collect();
            for v in Vision::ALL {
                let (d, i, j) = closest(&same, v);
                assert!(d >= 25.0, "marker {m}, {v:?}: colours {i}, {j} at {d:.1}");
            }
        }
    }
}
