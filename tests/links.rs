//! Every relative link in the README, docs/, data/README.md and the
//! reference run's report and claims table resolves to a file or folder of
//! the project (links into a run folder's `figures/` included).

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

fn broken_in(file: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(file).unwrap();
    let dir = file.parent().unwrap();
    links(&text)
        .into_iter()
        .filter(|l| {
            !l.is_empty() && !l.starts_with('#') && !l.contains("://") && !l.starts_with("mailto:")
        })
        .filter(|l| {
            let path = l.split('#').next().unwrap_or(l);
            !dir.join(path).exists()
        })
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
fn the_link_reader_finds_links_and_skips_code() {
    assert_eq!(
        links("see [a](docs/a.md#x) and `[b](not/this)` and [c](../c.png)"),
        ["docs/a.md#x", "../c.png"]
    );
}
