//! The cost experiment's own validity check: Redis's one thread saturated
//! (at least 90% busy, the study's "at least 91% busy" rounded down) in
//! every run a claim rests on. CPU per decision and decisions per second
//! are Redis's capacity only while Redis is the bottleneck; a run where it
//! was not (the load generator, or other processes on the machine, held it
//! back) makes the claim `inconclusive` with this reason, never a finding.

use super::super::rows::CostRow;
use super::Variants;

/// The saturation bound: Redis's thread busy for at least this fraction of a run.
pub const MIN_BUSY: f64 = 0.9;

/// Redis's main thread's busy fraction in a run (the process's if the
/// thread's is not known).
pub fn busy(r: &CostRow) -> f64 {
    if r.redis_main_thread_busy_fraction.is_finite() && r.redis_main_thread_busy_fraction > 0.0 {
        r.redis_main_thread_busy_fraction
    } else {
        r.redis_busy_fraction
    }
}

/// The runs of `cells` whose Redis was not saturated, in words, or None
/// when every run was (a NaN busy fraction counts as not saturated).
pub fn unsaturated<'a>(v: &Variants, cells: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let mut bad = Vec::new();
    for c in cells {
        let Some(x) = v.get(c) else { continue };
        for r in &x.rows {
            let b = busy(r);
            if !(b >= MIN_BUSY) {
                bad.push(format!("{c} run {}: {b:.2}", r.trial));
            }
        }
    }
    (!bad.is_empty()).then(|| {
        format!(
            "Redis not saturated (its thread busy < {MIN_BUSY} of the run, the study's \"at least 91% busy\"; CPU per decision and rates then measure the load generator or a disturbed machine) in {} run(s): {}",
            bad.len(),
            bad.join(", ")
        )
    })
}
