//! The summary figure (`figures/summary-claims`) of the committed reference
//! run and of its independent rerun, analysed afresh from copies: every
//! label, cause and settings line fits its column whole (measured with the
//! chart library's text width against the column's room), every claim has
//! a mark on one of the two strips unless its measurement is invalid (then
//! none, the strip says so and the cause `invalid: <reason>`), an inconclusive claim's
//! mark is drawn undecided and its row gives a cause, a ratio of 0 lies
//! inside its band, and the drawn SVG has no text outside the canvas or
//! over another.

use std::path::Path;

use limitbench_analysis::report::summary::{
    INVALID_MARK, SUMMARY_FIGURE, invalid_reason, summary_forest,
};

/// A copy of `data/<run>` in `tmp`, analysed; its judged claims.
fn analysed(tmp: &Path, run: &str) -> Vec<limitbench_analysis::claims::Judged> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tmp.join(run);
    std::fs::create_dir(&dir).unwrap();
    for e in std::fs::read_dir(root.join("data").join(run)).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() {
            std::fs::copy(&p, dir.join(p.file_name().unwrap())).unwrap();
        }
    }
    limitbench::app::analyze(&dir, &root.join("analysis/claims.toml")).unwrap()
}

fn check(run: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let rows = analysed(tmp.path(), run);
    let f = summary_forest(&rows, run);
    let mut problems: Vec<String> = f
        .clipped()
        .into_iter()
        .map(|c| format!("clipped: {c}"))
        .collect();
    let drawn: Vec<_> = f.groups.iter().flat_map(|g| &g.rows).collect();
    if drawn.len() != rows.len() {
        problems.push(format!("{} rows for {} claims", drawn.len(), rows.len()));
    }
    for r in &drawn {
        if r.strip() == "none" && !r.placeholder.starts_with("invalid: ") {
            problems.push(format!("{}: no mark", r.label));
        }
        // A claim's ID, the published value and ours: "A2.1 58 -> 22".
        if !r.label.contains(" -> ") {
            problems.push(format!("{}: not `id published -> ours`", r.label));
        }
        if let (Some(v), Some((lo, hi))) = (r.value, r.band)
            && v <= 0.0
            && !(lo <= 0.0 && hi >= 0.0)
        {
            problems.push(format!("{}: a ratio of 0 outside its band", r.label));
        }
    }
    for j in &rows {
        let id = format!("{} ", j.spec.id);
        let r = drawn.iter().find(|r| r.label.starts_with(&id));
        match r {
            None => problems.push(format!("{}: no row", j.spec.id)),
            Some(r) if j.verdict.as_str() == "not-reproduced" && r.cause.is_empty() => {
                problems.push(format!("{}: not reproduced and no cause", j.spec.id))
            }
            Some(r) if j.verdict.as_str() == "inconclusive" => {
                if r.cause.is_empty() {
                    problems.push(format!("{}: inconclusive and no cause", j.spec.id));
                }
                // An invalid measurement is no finding: no mark (not a
                // pass-looking mark at 1); any other inconclusive mark is
                // drawn undecided, wherever it lies.
                let invalid = j.measured.as_ref().and_then(invalid_reason);
                match invalid {
                    Some(why) => {
                        if r.strip() != "none" {
                            problems.push(format!("{}: invalid ({why}) but marked", j.spec.id));
                        }
                        if r.placeholder != format!("invalid: {INVALID_MARK}")
                            || r.cause != format!("invalid: {why}")
                        {
                            problems.push(format!(
                                "{}: strip `{}`, cause `{}`",
                                j.spec.id, r.placeholder, r.cause
                            ));
                        }
                    }
                    None if !r.undecided => {
                        problems.push(format!("{}: inconclusive, mark not undecided", j.spec.id))
                    }
                    None => {}
                }
            }
            Some(r) if r.undecided || r.strip() == "none" => problems.push(format!(
                "{}: {} but drawn undecided or without a mark",
                j.spec.id,
                j.verdict.as_str()
            )),
            _ => {}
        }
    }
    // The run's own invalid measurements are found and drawn without a
    // mark (computed from the judged claims, not listed here).
    let invalid = rows
        .iter()
        .filter(|j| j.verdict.as_str() == "inconclusive")
        .filter(|j| j.measured.as_ref().and_then(invalid_reason).is_some())
        .count();
    let unmarked = drawn.iter().filter(|r| r.strip() == "none").count();
    if invalid != unmarked {
        problems.push(format!(
            "{invalid} invalid claims, {unmarked} rows without a mark"
        ));
    }
    let svg = std::fs::read_to_string(
        tmp.path()
            .join(run)
            .join("figures")
            .join(format!("{SUMMARY_FIGURE}.svg")),
    )
    .unwrap();
    for p in limitbench_analysis::figure::text_problems(&svg) {
        problems.push(format!("svg: {p}"));
    }
    assert!(
        problems.is_empty(),
        "{run}: {} problems:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn the_reference_runs_summary_draws_every_claim_whole() {
    check("reference");
}

#[test]
fn the_reruns_summary_draws_every_claim_whole() {
    check("reference-rerun");
}
