//! Every relative link in the README, docs/, data/README.md and the
//! reference run's report and claims table resolves to a file or folder of
//! the project (links into a run folder's `figures/` included), and a
//! link's `#anchor` into a markdown file names one of its headings (as
//! GitHub makes their ids) or an `<a id="...">` in it.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The targets of `[text](target)` links in markdown, code spans left out.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        // Drop `code` spans: a path in backticks is not a link.
        let mut plain = String::new();
        for (i, part) in line.split('`').enumerate() {
            if i % 2 == 0 {
                plain.push_str(part);
            }
        }
        let mut rest = plain.as_str();
        while let Some(i) = rest.find("](") {
            let after = &rest[i + 2..];
            let Some(end) = after.find(')') else { break };
            out.push(after[..end].trim().to_string());
            rest = &after[end..];
        }
    }
    out
}

/// A heading's id as GitHub makes it: lower case, punctuation other than
/// `-` and `_` dropped, spaces to `-`.
fn heading_id(h: &str) -> String {
    h.trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a markdown file: its headings' ids and `<a id="...">`s.
fn anchors(text: &str) -> Vec<String> {
    let mut out: Vec<String> = text
        .lines()
        .filter(|l| l.starts_with('#'))
        .map(|l| heading_id(l.trim_start_matches('#')))
        .collect();
    let mut rest = text;
    while let Some(i) = rest.find("<a id=\"") {
        let after = &rest[i + 7..];
        let Some(end) = after.find('"') else { break };
        out.push(after[..end].to_string());
        rest = &after[end..];
    }
    out
}

/// Whether `link` (from `file`) resolves: its path exists and, for an
/// anchor into a markdown file, the anchor is one of that file's.
fn resolves(file: &Path, link: &str) -> bool {
    let (path, anchor) = link.split_once('#').unwrap_or((link, ""));
    let target = if path.is_empty() {
        file.to_path_buf()
    } else {
        file.parent().unwrap().join(path)
    };
    if !target.exists() {
        return false;
    }
    if anchor.is_empty() || target.extension().is_none_or(|x| x != "md") {
        return true;
    }
    let text = std::fs::read_to_string(&target).unwrap_or_default();
    anchors(&text).iter().any(|a| a == anchor)
}

fn broken_in(file: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(file).unwrap();
    links(&text)
        .into_iter()
        .filter(|l| !l.is_empty() && !l.contains("://") && !l.starts_with("mailto:"))
        .filter(|l| !resolves(file, l))
        .map(|l| {
            format!(
                "{}: {l}",
                file.strip_prefix(root()).unwrap_or(file).display()
            )
        })
        .collect()
}

#[test]
fn every_relative_link_resolves() {
    let mut files = vec![
        root().join("README.md"),
        root().join("data/README.md"),
        root().join("data/reference/report.md"),
        root().join("data/reference/claims-table.md"),
    ];
    for e in std::fs::read_dir(root().join("docs")).unwrap().flatten() {
        if e.path().extension().is_some_and(|x| x == "md") {
            files.push(e.path());
        }
    }
    let mut checked = 0;
    let mut broken = Vec::new();
    for f in &files {
        checked += links(&std::fs::read_to_string(f).unwrap()).len();
        broken.extend(broken_in(f));
    }
    assert!(checked > 100, "only {checked} links read");
    assert!(
        broken.is_empty(),
        "{} broken links:\n{}",
        broken.len(),
        broken.join("\n")
    );
}

#[test]
fn an_anchor_resolves_only_to_a_heading_or_an_id_of_its_file() {
    let text = "# Results: the run\n## The scorecard\n- <a id=\"claim-a1-1\"></a>A1.1\n";
    assert_eq!(
        anchors(text),
        ["results-the-run", "the-scorecard", "claim-a1-1"]
    );
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("r.md");
    std::fs::write(&f, text).unwrap();
    assert!(resolves(&f, "#the-scorecard"));
    assert!(resolves(&f, "r.md#claim-a1-1"));
    assert!(!resolves(&f, "r.md#the-scorecard-of-the-reference-run"));
    assert!(!resolves(&f, "missing.md"));
}

#[test]
fn the_link_reader_finds_links_and_skips_code() {
    assert_eq!(
        links("see [a](docs/a.md#x) and `[b](not/this)` and [c](../c.png)"),
        ["docs/a.md#x", "../c.png"]
    );
}
