//! A claim that asserts an effect (over-admission, a slowdown, a jump, a
//! cost) must be able to fail on a system without the effect. This test
//! writes a run folder as an ideal limiter would leave it at size `full`
//! (exact counts, no over-admission, no slowdown, no jump at the 129th
//! entry, no extra CPU for a script, ideal clocks, every cluster user
//! working), with at least 10 trials per cell, and runs the real analyzers
//! and the judge on it (`limitbench::app::analyze`, what `limitbench
//! analyze` runs): every effect claim must come out `not-reproduced`.
//!
//! The rows are computed here from a small model of the ideal limiter (a
//! sliding log, a token bucket, min(offered, limit)) on seeded arrivals;
//! nothing is copied from a committed run. Unlike the unit test in
//! `src/app/mod.rs`, which hands the judge claims.toml's `no_effect` values,
//! this one goes through each analyzer's filters, cell ids, pairing and
//! intervals, so an analyzer that read the effect into ideal rows (or a
//! tolerance widened past the effect) fails here.
//!
//! The ideal limiter's model is in `ideal_limiter/model.rs`, the row builders
//! per experiment in `ideal_limiter/study_a.rs` and `ideal_limiter/study_b.rs`.

#[path = "ideal_limiter/model.rs"]
mod model;
#[path = "ideal_limiter/study_a.rs"]
mod study_a;
#[path = "ideal_limiter/study_b.rs"]
mod study_b;

use std::path::Path;

use limitbench_analysis::Verdict;
use limitbench_analysis::claims::pass_region;
use rand::SeedableRng;
use rand::rngs::ChaCha8Rng;

use study_a::{bursts, concurrency, retries, skew};
use study_b::{cluster, cost, memory, stalls, ts_member};

/// Trials per cell: at least the 10 an interval needs to decide.
const TRIALS: u64 = 12;
const LIMIT: u64 = 100;

/// The effect claims: the same list as `src/app/mod.rs`'s unit test (a
/// `#[cfg(test)]` const there, which an integration test cannot import).
const EFFECT_CLAIMS: &[&str] = &[
    "A1.1", "A1.2", "A2.1", "A2.2", "A3.1", "A3.2", "A3.3", "A4.2", "B2.1", "B2.4", "B2.6", "B3.2",
    "B5.1", "B5.2", "B6.1", "B7.1",
];

/// Shape claims of an effect (an ordering, a growth): no
/// numeric region, so the ideal rows must make the effect's own condition
/// fail (wholly outside its band), not merely another condition beside it.
/// (claim, words every effect condition's text contains.)
const SHAPE_EFFECT_CLAIMS: &[(&str, &str)] = &[
    // B3.4: a listpack no dearer than a skiplist, and not growing with its size.
    ("B3.4", "CPU per decision"),
    // B4.1: a trim whose time does not grow with the entries (1x for 10x).
    ("B4.1", "roughly linear"),
];

fn write_csv<T: serde::Serialize>(dir: &Path, name: &str, rows: &[T]) {
    assert!(!rows.is_empty(), "{name}: no rows generated");
    let mut w = csv::Writer::from_path(dir.join(name)).unwrap();
    for r in rows {
        w.serialize(r).unwrap();
    }
    w.flush().unwrap();
}

/// A run folder an ideal limiter leaves at size `full`.
fn ideal_run(dir: &Path) {
    let mut rng = ChaCha8Rng::seed_from_u64(0x1dea_1);
    concurrency(dir, &mut rng);
    retries(dir, &mut rng);
    bursts(dir, &mut rng);
    skew(dir, &mut rng);
    cost(dir, &mut rng);
    memory(dir, &mut rng);
    stalls(dir, &mut rng);
    ts_member(dir, &mut rng);
    cluster(dir, &mut rng);
    let done = serde_json::json!({"outcome": "done", "seconds": 60.0});
    let manifest = serde_json::json!({
        "size": "full",
        "seed": 20261201,
        "experiments": {
            "concurrency": done, "retries": done, "bursts": done, "skew": done,
            "cost": done, "memory": done, "stalls": done, "ts-member": done, "cluster": done,
        },
    });
    std::fs::write(
        dir.join("manifest.json"),
        serde_json::to_string_pretty(&manifest).unwrap(),
    )
    .unwrap();
}

#[test]
fn every_effect_claim_is_not_reproduced_on_ideal_rows_through_its_analyzer() {
    let dir = tempfile::tempdir().unwrap();
    let started = std::time::Instant::now();
    ideal_run(dir.path());
    let written = started.elapsed();
    let claims_file = Path::new(env!("CARGO_MANIFEST_DIR")).join("analysis/claims.toml");
    let judged = limitbench::app::analyze(dir.path(), &claims_file).unwrap();
    eprintln!(
        "ideal rows written in {:.1} s, analyzed in {:.1} s",
        written.as_secs_f64(),
        (started.elapsed() - written).as_secs_f64()
    );
    let mut wrong = Vec::new();
    for id in EFFECT_CLAIMS {
        let j = judged
            .iter()
            .find(|j| j.spec.id == *id)
            .unwrap_or_else(|| panic!("{id} is not in the judged claims"));
        let Some(m) = j.measured.as_ref() else {
            wrong.push(format!(
                "{id} was not measured on the ideal rows ({}): {}",
                j.verdict.as_str(),
                j.why
            ));
            continue;
        };
        let shown = format!(
            "values {:?}, intervals {:?}, conditions {:?}: {}",
            m.values, m.intervals, m.conditions, m.display
        );
        eprintln!("{id}: {} -- {shown} -- {}", j.verdict.as_str(), j.why);
        if j.verdict != Verdict::NotReproduced {
            wrong.push(format!(
                "{id} is `{}` on an ideal limiter's rows: {shown}; why: {}",
                j.verdict.as_str(),
                j.why
            ));
        }
        // The value itself, not only a condition beside it, refutes the
        // effect: each value's whole interval lies outside its tolerance
        // region (B2.1 and B7.1 also fail a condition on ideal rows, which
        // alone would hide a tolerance widened past the effect).
        for (i, v) in m.values.iter().enumerate() {
            let (lo, hi) = m.intervals.get(i).copied().unwrap_or((*v, *v));
            let (lo, hi) = (lo.min(*v), hi.max(*v));
            let (_, region, rule) = pass_region(&j.spec, i);
            let (a, b) = region.expect("an effect claim has a numeric tolerance");
            if !(hi < a || lo > b) {
                wrong.push(format!(
                    "{id} value {i}: the ideal limiter's {v} (interval {lo}..{hi}) is not wholly outside the tolerance {a}..{b} ({rule})"
                ));
            }
        }
    }
    for (id, effect) in SHAPE_EFFECT_CLAIMS {
        let j = judged.iter().find(|j| j.spec.id == *id).unwrap();
        let Some(m) = j.measured.as_ref() else {
            wrong.push(format!(
                "{id} was not measured on the ideal rows: {}",
                j.why
            ));
            continue;
        };
        eprintln!(
            "{id}: {} -- {:?} -- {}",
            j.verdict.as_str(),
            m.conditions,
            j.why
        );
        let effects: Vec<&(String, bool)> = m
            .conditions
            .iter()
            .filter(|c| c.0.contains(effect))
            .collect();
        if j.verdict != Verdict::NotReproduced
            || effects.is_empty()
            || effects.iter().any(|c| c.1)
            || m.undecided.iter().any(|u| u.contains(effect))
        {
            wrong.push(format!(
                "{id} is `{}` on an ideal limiter's rows, its effect conditions {effects:?} (undecided {:?}): {}",
                j.verdict.as_str(),
                m.undecided,
                j.why
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "effect claims that an ideal limiter does not refute:\n  {}",
        wrong.join("\n  ")
    );
}
