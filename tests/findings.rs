//! The report opens with its findings: right after the title a `Findings`
//! section of at most 12 lines (the sentence, the table, the rerun's line)
//! whose table names every claim of the run not reproduced as stated, and,
//! with `--rerun`, the rerun's agreement as `limitbench compare` counts it.

mod common;
use std::path::Path;

/// A copy of the reference cut to `max_rows` rows per table.
fn fixture(tmp: &Path, max_rows: usize) -> std::path::PathBuf {
    common::copy_of_reference(tmp, max_rows)
}

/// The lines of the report's first section after the title, blank lines
/// left out, and the heading that follows it.
fn first_section(report: &str) -> (String, Vec<String>, String) {
    let mut lines = report.lines().filter(|l| !l.trim().is_empty());
    assert!(lines.next().unwrap().starts_with("# "));
    let heading = lines.next().unwrap().to_string();
    let mut body = Vec::new();
    for l in lines {
        if l.starts_with("## ") {
            return (heading, body, l.to_string());
        }
        body.push(l.to_string());
    }
    panic!("no section after the findings");
}

#[test]
fn the_report_opens_with_every_claim_not_reproduced_as_stated_in_twelve_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tmp = tempfile::tempdir().unwrap();
    let run = fixture(tmp.path(), 40);
    // The rerun: only its claims.csv is read.
    let rerun = tmp.path().join("rerun");
    std::fs::create_dir(&rerun).unwrap();
    std::fs::copy(
        root.join("data/reference-rerun/claims.csv"),
        rerun.join("claims.csv"),
    )
    .unwrap();
    let rows =
        limitbench::app::analyze_with_rerun(&run, &root.join("analysis/claims.toml"), Some(&rerun))
            .unwrap();
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    let (heading, body, next) = first_section(&report);
    assert_eq!(heading, "## Findings");
    assert_eq!(next, "## Executive summary");
    assert!(
        body.len() <= 12,
        "{} lines:\n{}",
        body.len(),
        body.join("\n")
    );
    let table: Vec<&String> = body.iter().filter(|l| l.starts_with('|')).collect();
    assert!(table[0].starts_with(
        "| claim | published | ours as stated | what reproduces it (setting) | cause |"
    ));
    // Every claim not reproduced as stated is in the table's first column;
    // a reproduced one is not.
    let named: Vec<String> = table[2..]
        .iter()
        .flat_map(|l| {
            l.split('|')
                .nth(1)
                .unwrap()
                .split([',', ' '])
                .map(|s| s.trim().to_string())
                .collect::<Vec<_>>()
        })
        .collect();
    let reproduced = limitbench_analysis::Verdict::Reproduced;
    let mut missing = Vec::new();
    for j in &rows {
        let counted = j.verdict != reproduced
            && !(j.verdict == limitbench_analysis::Verdict::NotRun
                && j.spec.tally != "reproduction");
        assert_eq!(
            named.contains(&j.spec.id),
            counted,
            "{} ({}) in the table: {}",
            j.spec.id,
            j.verdict.as_str(),
            named.contains(&j.spec.id)
        );
        if counted && !named.contains(&j.spec.id) {
            missing.push(j.spec.id.clone());
        }
    }
    assert!(missing.is_empty(), "missing {missing:?}");
    assert!(
        rows.iter().filter(|j| j.verdict != reproduced).count() > 9,
        "the fixture should hold more claims than lines, so the table must group them"
    );
    // The rerun's line counts what `limitbench compare` counts.
    let pairs = limitbench_analysis::compare::pair(
        &limitbench_analysis::compare::read_claims(&run).unwrap(),
        &limitbench_analysis::compare::read_claims(&rerun).unwrap(),
    );
    let both = pairs.iter().filter(|p| p.both_measured()).count();
    let agree = pairs
        .iter()
        .filter(|p| p.both_measured() && p.agrees())
        .count();
    let line = body.last().unwrap();
    assert!(
        line.contains(&format!("verdicts agree on {agree} of the {both} claims")),
        "{line}"
    );
    for p in pairs.iter().filter(|p| p.differs()) {
        assert!(
            line.contains(&format!("{} (", p.claim)),
            "{} not named: {line}",
            p.claim
        );
    }
}

#[test]
fn without_a_rerun_the_findings_say_nothing_of_one() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tmp = tempfile::tempdir().unwrap();
    let run = fixture(tmp.path(), 40);
    limitbench::app::analyze(&run, &root.join("analysis/claims.toml")).unwrap();
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    let (heading, body, _) = first_section(&report);
    assert_eq!(heading, "## Findings");
    assert!(body.len() <= 12);
    assert!(
        !body.iter().any(|l| l.contains("rerun")),
        "{}",
        body.join("\n")
    );
}
