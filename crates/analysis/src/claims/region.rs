//! Where a claim's check holds: the one definition of a claim's passing
//! region, which the judge decides on and every figure shades.

use super::{Check, ClaimSpec};
use limitbench_plot::figure::num;

/// The published value `i` of a claim, the interval where its check passes
/// (infinite ends allowed) and the rule in words.
pub fn pass_region(spec: &ClaimSpec, i: usize) -> (Option<f64>, Option<(f64, f64)>, String) {
    let p = spec.published.at(i);
    let t = spec.tolerance.at(i);
    let t = if t.is_finite() {
        t
    } else {
        spec.tolerance.at(0)
    };
    match spec.check {
        Check::Equals | Check::WithinAbs => (
            Some(p),
            Some((p - t, p + t)),
            if t == 0.0 {
                "exactly".into()
            } else {
                format!("within ±{}", num(t))
            },
        ),
        Check::WithinRel => (
            Some(p),
            Some((p - t * p.abs(), p + t * p.abs())),
            format!("within ±{}%", num(t * 100.0)),
        ),
        Check::AtMost => (
            Some(p),
            Some((f64::NEG_INFINITY, p + t)),
            format!("at most {}", num(p + t)),
        ),
        Check::AtLeast => (
            Some(p),
            Some((p - t, f64::INFINITY)),
            format!("at least {}", num(p - t)),
        ),
        Check::InRange => {
            let (lo, hi, t) = (
                spec.published.at(0),
                spec.published.at(1),
                spec.tolerance.at(0),
            );
            (
                None,
                Some((lo * (1.0 - t), hi * (1.0 + t))),
                format!("{}..{}", num(lo * (1.0 - t)), num(hi * (1.0 + t))),
            )
        }
        Check::Shape | Check::Behaviour => (Some(p), None, "not judged on this value".into()),
    }
}
