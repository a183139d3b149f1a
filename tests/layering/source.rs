//! Reading the workspace's Rust source as text for tests/layering.rs: its
//! files and the crate and module each one is (from its path), the paths
//! each names (its `use` trees and the paths in its code, comments and
//! string literals removed), the file-level import graph, and its circles
//! (Tarjan's strongly connected parts).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = rd.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rs_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// `p` relative to the project, with `/` separators.
pub fn rel(p: &Path) -> String {
    p.strip_prefix(root())
        .unwrap_or(p)
        .to_string_lossy()
        .replace('\\', "/")
}

/// The text without comments, string and char literals (their insides
/// become spaces), so that a path in a doc or a message is not an import.
pub fn code_of(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if c == b'r' && (b.get(i + 1) == Some(&b'"') || b.get(i + 1) == Some(&b'#')) {
            // A raw string r"..." or r#"..."#.
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&b'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&b'"')
                || (i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'))
            {
                out.push(c as char);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= b.len() {
                    break;
                }
                if b[j] == b'"' && (0..hashes).all(|k| b.get(j + 1 + k) == Some(&b'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            out.push(' ');
            i = j;
        } else if c == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push(' ');
        } else if c == b'\'' {
            // A char literal ('x', '\n', '\u{..}') or a lifetime ('a).
            let close = if b.get(i + 1) == Some(&b'\\') {
                b[i + 2..]
                    .iter()
                    .position(|&x| x == b'\'')
                    .map(|k| i + 2 + k)
            } else if b.get(i + 2) == Some(&b'\'') {
                Some(i + 2)
            } else {
                None
            };
            match close {
                Some(k) => {
                    out.push(' ');
                    i = k + 1;
                }
                None => {
                    out.push('\'');
                    i += 1;
                }
            }
        } else {
            out.push(c as char);
            i += 1;
        }
    }
    out
}

/// A file of the workspace and the module it is.
pub struct Unit {
    pub file: String,
    pub krate: &'static str,
    /// The module path inside its crate (`[]` for the crate root).
    pub module: Vec<String>,
    /// A `mod.rs`, `lib.rs` or `main.rs`: its children are files below it.
    pub is_dir_module: bool,
    pub code: String,
}

/// The crate and module of a file, from its path.
pub fn unit_of(file: &str) -> Option<(&'static str, Vec<String>, bool)> {
    let segs = |s: &str| -> Vec<String> {
        s.split('/')
            .filter(|x| !x.is_empty())
            .map(String::from)
            .collect()
    };
    let strip = |path: &str| -> (Vec<String>, bool) {
        let p = path.trim_end_matches(".rs");
        let mut v = segs(p);
        let dir_module = matches!(v.last().map(String::as_str), Some("mod" | "lib" | "main"));
        if dir_module {
            v.pop();
        }
        (v, dir_module)
    };
    for (prefix, krate) in [
        ("crates/base/src/", "limitbench_base"),
        ("crates/core/src/", "limitbench_core"),
        ("crates/plot/src/", "limitbench_plot"),
        ("crates/analysis/src/", "limitbench_analysis"),
    ] {
        if let Some(rest) = file.strip_prefix(prefix) {
            let (m, d) = strip(rest);
            return Some((krate, m, d));
        }
    }
    let rest = file.strip_prefix("src/")?;
    // An experiment's analysis half: `experiments::<name>::{rows, analyze}`
    // of the analysis crate (crates/analysis/src/experiments/mod.rs).
    if let Some(after) = rest.strip_prefix("experiments/")
        && let Some((name, inner)) = after.split_once("/analyze/")
    {
        let mut m = vec!["experiments".to_string(), name.to_string()];
        if inner == "rows.rs" {
            m.push("rows".into());
            return Some(("limitbench_analysis", m, false));
        }
        m.push("analyze".into());
        let (sub, d) = strip(inner);
        m.extend(sub);
        return Some(("limitbench_analysis", m, d || inner == "mod.rs"));
    }
    if rest == "main.rs" || rest.starts_with("cli/") {
        let (m, d) = strip(rest);
        return Some(("limitbench_bin", m, d));
    }
    let (m, d) = strip(rest);
    Some(("limitbench", m, d))
}

pub fn workspace() -> Vec<Unit> {
    let mut files = Vec::new();
    for d in [
        "crates/base/src",
        "crates/core/src",
        "crates/plot/src",
        "crates/analysis/src",
        "src",
    ] {
        rs_files(&root().join(d), &mut files);
    }
    files
        .iter()
        .filter_map(|p| {
            let file = rel(p);
            let (krate, module, is_dir_module) = unit_of(&file)?;
            let code = code_of(&std::fs::read_to_string(p).ok()?);
            Some(Unit {
                file,
                krate,
                module,
                is_dir_module,
                code,
            })
        })
        .collect()
}

/// A `use` tree expanded into its paths (`a::{b, c::d}` -> `a::b`, `a::c::d`).
pub fn expand(tree: &str) -> Vec<String> {
    // One space between words (so an alias ` as ` stays a word of its own),
    // none around the punctuation of a path.
    let words: Vec<&str> = tree.split_whitespace().collect();
    let tree = words
        .join(" ")
        .replace(" ::", "::")
        .replace(":: ", "::")
        .replace(" {", "{")
        .replace("{ ", "{")
        .replace(" }", "}")
        .replace(", ", ",")
        .replace(" ,", ",");
    fn go(prefix: &str, t: &str, out: &mut Vec<String>) {
        if let Some(open) = t.find('{') {
            let head = &t[..open];
            let body = &t[open + 1..t.rfind('}').unwrap_or(t.len())];
            let mut depth = 0;
            let mut start = 0;
            let parts: Vec<&str> = {
                let mut v = Vec::new();
                for (i, c) in body.char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' => depth -= 1,
                        ',' if depth == 0 => {
                            v.push(&body[start..i]);
                            start = i + 1;
                        }
                        _ => {}
                    }
                }
                v.push(&body[start..]);
                v
            };
            for p in parts.into_iter().filter(|p| !p.is_empty()) {
                go(&format!("{prefix}{head}"), p, out);
            }
        } else {
            // `path as name`: the path is what is named.
            let t = t.split(" as ").next().unwrap_or(t).trim();
            out.push(format!("{prefix}{t}"));
        }
    }
    let mut out = Vec::new();
    go("", &tree, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::expand;

    #[test]
    fn use_trees_expand_with_their_aliases_and_names_containing_as() {
        assert_eq!(
            expand("crate::a::{parse, b::{c as d, passes}, self}"),
            [
                "crate::a::parse",
                "crate::a::b::c",
                "crate::a::b::passes",
                "crate::a::self"
            ]
        );
        assert_eq!(expand("super::x::Row as AsRow"), ["super::x::Row"]);
    }
}

/// Every path a file names: its `use` trees expanded, and the paths in its
/// code that start with `crate::`, `super::`, `self::` or a workspace
/// crate. Each with whether it is a `pub use` (a re-export).
pub fn paths_named(code: &str, children: &BTreeSet<String>) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let mut rest = code;
    // `use` statements (possibly over several lines).
    while let Some(i) = rest.find("use ") {
        let before = &rest[..i];
        let at_item = before
            .chars()
            .last()
            .is_none_or(|c| c.is_whitespace() || c == ';' || c == '{' || c == '}' || c == ')');
        let after = &rest[i + 4..];
        let end = after.find(';').unwrap_or(after.len());
        if at_item {
            let line_start = before.rfind('\n').map(|k| k + 1).unwrap_or(0);
            let public = before[line_start..].trim_start().starts_with("pub");
            for p in expand(&after[..end]) {
                out.push((p, public));
            }
            rest = &after[end..];
        } else {
            rest = after;
        }
    }
    // Paths in code.
    let b = code.as_bytes();
    let kids: Vec<String> = children.iter().map(|c| format!("{c}::")).collect();
    let prefixes = [
        "crate::",
        "super::",
        "self::",
        "limitbench_",
        "limitbench::",
    ]
    .into_iter()
    .map(String::from)
    .chain(kids);
    for prefix in prefixes {
        let prefix = prefix.as_str();
        let mut from = 0;
        while let Some(k) = code[from..].find(prefix) {
            let s = from + k;
            from = s + prefix.len();
            if s > 0 && (b[s - 1].is_ascii_alphanumeric() || b[s - 1] == b'_' || b[s - 1] == b':') {
                continue;
            }
            let e = code[s..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
                .map(|x| s + x)
                .unwrap_or(code.len());
            let p = code[s..e].trim_end_matches(':');
            // A macro (`crate::keyed!`): `#[macro_export]` puts it at the
            // crate root whatever file defines it, so its path names no file.
            let is_macro = code[e..].starts_with('!');
            if p.contains("::") && !is_macro {
                out.push((p.to_string(), false));
            }
        }
    }
    out
}

/// The module of a path named in `u`, as (crate, segments), or `None` for a
/// path outside the workspace (std, a dependency).
pub fn resolve(
    u: &Unit,
    path: &str,
    children: &BTreeSet<String>,
) -> Option<(&'static str, Vec<String>)> {
    let mut segs: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
    let first = *segs.first()?;
    let (krate, mut base): (&'static str, Vec<String>) = match first {
        "crate" => {
            segs.remove(0);
            (u.krate, vec![])
        }
        "self" => {
            segs.remove(0);
            (u.krate, u.module.clone())
        }
        "super" => {
            let mut m = u.module.clone();
            while segs.first() == Some(&"super") {
                segs.remove(0);
                m.pop();
            }
            (u.krate, m)
        }
        "limitbench_base" | "limitbench_core" | "limitbench_plot" | "limitbench_analysis" => {
            let k = match first {
                "limitbench_base" => "limitbench_base",
                "limitbench_core" => "limitbench_core",
                "limitbench_plot" => "limitbench_plot",
                _ => "limitbench_analysis",
            };
            segs.remove(0);
            (k, vec![])
        }
        "limitbench" => {
            segs.remove(0);
            ("limitbench", vec![])
        }
        // A child module named bare (`use a1_2::X` in its parent).
        c if children.contains(c) => (u.krate, u.module.clone()),
        _ => return None,
    };
    base.extend(segs.iter().map(|s| s.to_string()));
    Some((krate, base))
}

/// The import graph: file -> files it names items of (re-exports of a
/// file's own descendants left out).
pub fn graph(units: &[Unit]) -> BTreeMap<String, BTreeSet<String>> {
    let by_module: BTreeMap<(&str, Vec<String>), &str> = units
        .iter()
        .map(|u| ((u.krate, u.module.clone()), u.file.as_str()))
        .collect();
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for u in units {
        // The modules this file declares with `mod x;` / `mod x {`.
        let children: BTreeSet<String> = u
            .code
            .split(|c: char| c == ';' || c == '{' || c == '}' || c == '\n')
            .filter_map(|s| {
                let s = s.trim();
                let s = s.strip_prefix("pub ").unwrap_or(s);
                let s = s.strip_prefix("pub(crate) ").unwrap_or(s);
                s.strip_prefix("mod ").map(|m| m.trim().to_string())
            })
            .collect();
        let edges = g.entry(u.file.clone()).or_default();
        for (path, public) in paths_named(&u.code, &children) {
            let Some((krate, segs)) = resolve(u, &path, &children) else {
                continue;
            };
            // The longest prefix that is a file of the workspace.
            let target = (0..=segs.len())
                .rev()
                .find_map(|n| by_module.get(&(krate, segs[..n].to_vec())).copied());
            let Some(target) = target else { continue };
            if target == u.file {
                continue;
            }
            let (_, tmod, _) = unit_of(target).unwrap();
            let own_descendant = u.is_dir_module
                && krate == u.krate
                && tmod.len() > u.module.len()
                && tmod[..u.module.len()] == u.module[..];
            if own_descendant && public {
                continue;
            }
            // A file naming one of its own ancestor module files (`super::X`,
            // `crate::X` from below): the parent holds what its parts
            // share, so this is the module's vocabulary, not a circle.
            let own_ancestor = krate == u.krate
                && tmod.len() < u.module.len()
                && u.module[..tmod.len()] == tmod[..]
                && unit_of(target).is_some_and(|(_, _, d)| d);
            if own_ancestor {
                continue;
            }
            edges.insert(target.to_string());
        }
    }
    g
}

/// The circles (strongly connected parts of more than one file), Tarjan's way.
pub fn circles(g: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct T<'a> {
        g: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        next: usize,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a str) {
        t.index.insert(v, t.next);
        t.low.insert(v, t.next);
        t.next += 1;
        t.stack.push(v);
        t.on.insert(v);
        if let Some(ws) = t.g.get(v) {
            for w in ws {
                let w = w.as_str();
                if !t.index.contains_key(w) {
                    visit(t, w);
                    let lw = t.low[w];
                    let lv = t.low[v];
                    t.low.insert(v, lv.min(lw));
                } else if t.on.contains(w) {
                    let iw = t.index[w];
                    let lv = t.low[v];
                    t.low.insert(v, lv.min(iw));
                }
            }
        }
        if t.low[v] == t.index[v] {
            let mut part = Vec::new();
            while let Some(w) = t.stack.pop() {
                t.on.remove(w);
                part.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if part.len() > 1 {
                part.sort();
                t.out.push(part);
            }
        }
    }
    let mut t = T {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in g.keys() {
        if !t.index.contains_key(v.as_str()) {
            visit(&mut t, v);
        }
    }
    t.out
}
