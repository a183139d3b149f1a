//! The report opens with its findings: right after the title a `Findings`
//! section whose headline (at most 12 lines) names the claims by verdict
//! and, with `--rerun`, says how far the independent rerun agrees and
//! which reproduced claims it does not reproduce; then a table with one
//! row per claim not reproduced as stated, its cells whole (no `…`) and
//! its claims linked to their lines in the report. Checked on the whole
//! reference run (so A3.3's cause is the real one) and on a cut copy
//! without a rerun.

mod common;
use std::path::Path;

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

/// A table row's cells, the outer pipes dropped (an escaped `\|` stays
/// inside its cell).
fn cells(row: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut prev = ' ';
    for ch in row.trim().trim_start_matches('|').chars() {
        if ch == '|' && prev != '\\' {
            out.push(cur.trim().to_string());
            cur.clear();
        } else {
            cur.push(ch);
        }
        prev = ch;
    }
    out
}

/// The claim id a row's first cell names (`[A2.1](#claim-a2-1) inconclusive`).
fn row_claim(row: &str) -> String {
    let first = &cells(row)[0];
    first
        .trim_start_matches('[')
        .split(']')
        .next()
        .unwrap()
        .to_string()
}

#[test]
fn the_findings_name_every_claim_once_and_the_rerun_says_what_it_does_to_them() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tmp = tempfile::tempdir().unwrap();
    // The whole reference: the verdicts are the committed ones.
    let run = common::copy_of_reference(tmp.path(), 100_000_000);
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
    let table_at = body
        .iter()
        .position(|l| l.starts_with('|'))
        .expect("a table");
    let headline = &body[..table_at];
    // The headline's lines, the table's lead-in sentence left out.
    let head_lines = headline
        .iter()
        .filter(|l| !l.starts_with("Every claim"))
        .count();
    assert!(
        head_lines <= 12,
        "{head_lines} headline lines:\n{}",
        headline.join("\n")
    );
    let table: Vec<&String> = body[table_at..]
        .iter()
        .take_while(|l| l.starts_with('|'))
        .collect();
    assert_eq!(
        table[0],
        "| claim | published | ours | what reproduces it (setting) | cause |"
    );
    let rows_md = &table[2..];
    // One claim per row, each once; exactly the claims not reproduced as
    // stated; the reproduced ones named in the headline instead.
    let named: Vec<String> = rows_md.iter().map(|r| row_claim(r)).collect();
    let mut seen = named.clone();
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), named.len(), "a claim in two rows: {named:?}");
    let reproduced = limitbench_analysis::Verdict::Reproduced;
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
        if j.verdict == reproduced && j.spec.tally == "reproduction" {
            assert!(
                headline[0].contains(&format!(" {},", j.spec.id))
                    || headline[0].contains(&format!(" {}.", j.spec.id)),
                "{} reproduced but not named: {}",
                j.spec.id,
                headline[0]
            );
        }
    }
    for r in rows_md {
        let c = cells(r);
        assert_eq!(c.len(), 5, "{r}");
        assert!(!r.contains('…'), "a cell cut with an ellipsis: {r}");
        assert!(c.iter().all(|x| !x.is_empty()), "an empty cell: {r}");
    }
    // Every link to an anchor in the report lands on one.
    for part in report.split("](#").skip(1) {
        let id = part.split(')').next().unwrap();
        assert!(
            report.contains(&format!("<a id=\"{id}\"></a>")),
            "no anchor {id}"
        );
    }
    // A3.3: its sessions' intervals overlap (they agree), so its cause is
    // not that they disagree; it is the computed explanation.
    let a33 = rows.iter().find(|j| j.spec.id == "A3.3").unwrap();
    let m = a33.measured.as_ref().unwrap();
    assert!(m.sessions_apart && !m.sessions_disagree);
    let cause = m
        .explanation
        .as_ref()
        .expect("A3.3 explained")
        .cause
        .clone();
    let row = rows_md.iter().find(|r| row_claim(r) == "A3.3").unwrap();
    assert!(!row.contains("sessions disagree"), "{row}");
    assert!(cells(row)[4].ends_with(&format!("; {cause}")), "{row}");
    assert!(m.note.contains(&m.explanation.as_ref().unwrap().text));
    // The rerun's line counts what `limitbench compare` counts and names
    // each reproduced claim the rerun does not reproduce.
    let pairs = limitbench_analysis::compare::pair(
        &limitbench_analysis::compare::read_claims(&run).unwrap(),
        &limitbench_analysis::compare::read_claims(&rerun).unwrap(),
    );
    let both = pairs.iter().filter(|p| p.both_measured()).count();
    let agree = pairs
        .iter()
        .filter(|p| p.both_measured() && p.agrees())
        .count();
    let line = headline
        .iter()
        .find(|l| l.contains("Independent rerun"))
        .expect("the rerun's line");
    assert!(
        line.contains(&format!("verdicts agree on {agree} of the {both} claims")),
        "{line}"
    );
    let lone: Vec<&String> = pairs
        .iter()
        .filter(|p| p.both_measured() && !p.agrees())
        .filter(|p| p.run.as_ref().unwrap().verdict == "reproduced")
        .map(|p| &p.claim)
        .collect();
    assert!(
        !lone.is_empty(),
        "the reference rerun differs on reproduced claims"
    );
    for id in lone {
        assert!(line.contains(id.as_str()), "{id} not named: {line}");
    }
    assert!(line.contains("rest on this run alone"), "{line}");
}

#[test]
fn without_a_rerun_the_findings_say_nothing_of_one() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tmp = tempfile::tempdir().unwrap();
    let run = common::copy_of_reference(tmp.path(), 40);
    limitbench::app::analyze(&run, &root.join("analysis/claims.toml")).unwrap();
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    let (heading, body, _) = first_section(&report);
    assert_eq!(heading, "## Findings");
    let table_at = body.iter().position(|l| l.starts_with('|')).unwrap();
    assert!(table_at <= 13, "{}", body[..table_at].join("\n"));
    assert!(
        !body.iter().any(|l| l.contains("rerun")),
        "{}",
        body.join("\n")
    );
}
