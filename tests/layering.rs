//! The layering the crate graph cannot see on its own (docs/architecture.md):
//!
//! - every file under `src/experiments/<name>/analyze/` belongs to
//!   `limitbench-analysis` and names it `limitbench_analysis::`, never
//!   `crate::` (which in `src/` means the app), and imports nothing of the
//!   measuring half (the app, the core crate, tokio);
//! - the analysis crate depends on nothing that talks to Redis, and compiles
//!   no file of `src/` outside those `analyze/` folders;
//! - the scorecard only schedules experiment probes: no file of
//!   `src/scorecard/` drives load or decides itself;
//! - the server matrix (`src/servers/`) does not import the app;
//! - no file-level import circle anywhere in the workspace: file A naming an
//!   item of file B and B naming one of A, directly or round a longer loop.
//!   Two kinds of reference are how Rust builds a module, not imports, and
//!   do not count: a module file re-exporting its own children (`pub use
//!   child::X`, `mod child`), and a file naming an item of its own ancestor
//!   module file (`super::X`: the parent holds what its parts share). Every
//!   other reference counts: between siblings, across folders and crates,
//!   and a parent using its child's items in its own code.
//!
//! The source is read as text (comments and string literals removed), so the
//! test needs no parser and runs in milliseconds.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
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
fn rel(p: &Path) -> String {
    p.strip_prefix(root())
        .unwrap_or(p)
        .to_string_lossy()
        .replace('\\', "/")
}

/// The text without comments, string and char literals (their insides
/// become spaces), so that a path in a doc or a message is not an import.
fn code_of(text: &str) -> String {
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
struct Unit {
    file: String,
    krate: &'static str,
    /// The module path inside its crate (`[]` for the crate root).
    module: Vec<String>,
    /// A `mod.rs`, `lib.rs` or `main.rs`: its children are files below it.
    is_dir_module: bool,
    code: String,
}

/// The crate and module of a file, from its path.
fn unit_of(file: &str) -> Option<(&'static str, Vec<String>, bool)> {
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

fn workspace() -> Vec<Unit> {
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
fn expand(tree: &str) -> Vec<String> {
    let tree: String = tree.chars().filter(|c| !c.is_whitespace()).collect();
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
            let t = t.split(" as ").next().unwrap_or(t);
            let t = t
                .split("as")
                .next()
                .filter(|_| !t.contains("::"))
                .unwrap_or(t);
            out.push(format!("{prefix}{t}"));
        }
    }
    let mut out = Vec::new();
    go("", &tree, &mut out);
    out
}

/// Every path a file names: its `use` trees expanded, and the paths in its
/// code that start with `crate::`, `super::`, `self::` or a workspace
/// crate. Each with whether it is a `pub use` (a re-export).
fn paths_named(code: &str, children: &BTreeSet<String>) -> Vec<(String, bool)> {
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
fn resolve(
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
fn graph(units: &[Unit]) -> BTreeMap<String, BTreeSet<String>> {
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
fn circles(g: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
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

#[test]
fn no_file_level_import_circle_anywhere() {
    let units = workspace();
    assert!(units.len() > 150, "only {} files read", units.len());
    let g = graph(&units);
    let found = circles(&g);
    let text: Vec<String> = found
        .iter()
        .map(|c| {
            let ties: Vec<String> = c
                .iter()
                .flat_map(|a| {
                    g[a].iter()
                        .filter(|b| c.contains(b))
                        .map(move |b| format!("{a} -> {b}"))
                })
                .collect();
            ties.join(", ")
        })
        .collect();
    assert!(found.is_empty(), "import circles:\n{}", text.join("\n"));
}

#[test]
fn the_circle_finder_finds_a_circle() {
    // The negative control: two files naming each other are one circle.
    let mut g = BTreeMap::new();
    g.insert("a.rs".to_string(), BTreeSet::from(["b.rs".to_string()]));
    g.insert("b.rs".to_string(), BTreeSet::from(["a.rs".to_string()]));
    g.insert("c.rs".to_string(), BTreeSet::from(["a.rs".to_string()]));
    assert_eq!(
        circles(&g),
        vec![vec!["a.rs".to_string(), "b.rs".to_string()]]
    );
    // And the reader sees a `use` through `super::` and a bare child.
    let u = Unit {
        file: "src/x/mod.rs".into(),
        krate: "limitbench",
        module: vec!["x".into()],
        is_dir_module: true,
        code: code_of(
            "mod y;\nuse y::Thing; // use z::Not\nfn f() { let s = \"crate::no::Path\"; super::w::g(); }",
        ),
    };
    let kids = BTreeSet::from(["y".to_string()]);
    let named: Vec<_> = paths_named(&u.code, &kids)
        .into_iter()
        .filter_map(|(p, _)| resolve(&u, &p, &kids))
        .collect();
    assert!(
        named.contains(&("limitbench", vec!["x".into(), "y".into(), "Thing".into()])),
        "{named:?}"
    );
    assert!(
        named.contains(&("limitbench", vec!["w".into(), "g".into()])),
        "{named:?}"
    );
    assert!(
        !named.iter().any(|(_, s)| s.contains(&"no".to_string())),
        "{named:?}"
    );
}

#[test]
fn analysis_halves_name_their_crate_and_import_no_measuring_code() {
    let mut files = Vec::new();
    rs_files(&root().join("src/experiments"), &mut files);
    let halves: Vec<_> = files
        .iter()
        .filter(|p| rel(p).contains("/analyze/"))
        .collect();
    assert!(
        halves.len() >= 14 * 2,
        "only {} analysis-half files",
        halves.len()
    );
    let mut wrong = Vec::new();
    for p in halves {
        let code = code_of(&std::fs::read_to_string(p).unwrap());
        for bad in [
            "crate::",
            "limitbench::",
            "limitbench_core",
            "tokio",
            "redis::",
        ] {
            let hit = code.match_indices(bad).any(|(i, _)| {
                i == 0 || {
                    let c = code.as_bytes()[i - 1];
                    !(c.is_ascii_alphanumeric() || c == b'_' || c == b':')
                }
            });
            if hit {
                wrong.push(format!("{} names `{bad}`", rel(p)));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_analysis_crate_cannot_reach_redis_and_compiles_only_analysis_halves() {
    let toml = std::fs::read_to_string(root().join("crates/analysis/Cargo.toml")).unwrap();
    let deps = toml
        .split("[dependencies]")
        .nth(1)
        .unwrap()
        .split("\n[")
        .next()
        .unwrap();
    for bad in ["limitbench-core", "tokio", "redis"] {
        assert!(!deps.contains(bad), "crates/analysis depends on {bad}");
    }
    let mut files = Vec::new();
    rs_files(&root().join("crates/analysis/src"), &mut files);
    let mut paths = 0;
    for p in &files {
        let text = std::fs::read_to_string(p).unwrap();
        for line in text
            .lines()
            .filter(|l| l.trim_start().starts_with("#[path"))
        {
            paths += 1;
            let target = line.split('"').nth(1).unwrap();
            let dir = p.parent().unwrap().join(target);
            let dir = rel(&dir.canonicalize().unwrap_or(dir.clone()));
            let ok = (dir.starts_with("src/experiments/") && dir.ends_with("/analyze"))
                || target == "mod.rs";
            assert!(ok, "{} compiles {dir}, outside an analysis half", rel(p));
        }
    }
    assert!(paths >= 14, "{paths} #[path] entries");
}

#[test]
fn the_scorecard_drives_no_load_and_the_matrix_no_app() {
    let read = |d: &str| {
        let mut files = Vec::new();
        rs_files(&root().join(d), &mut files);
        files
            .into_iter()
            .map(|p| (rel(&p), code_of(&std::fs::read_to_string(&p).unwrap())))
            .collect::<Vec<_>>()
    };
    let mut wrong = Vec::new();
    for (f, code) in read("src/scorecard") {
        for bad in [
            "load::",
            ".decide(",
            "Request::",
            "closed_loop",
            "open_loop",
            "Fleet::standalone",
            "next_request_id",
        ] {
            if code.contains(bad) {
                wrong.push(format!("{f} drives load itself: `{bad}`"));
            }
        }
    }
    for (f, code) in read("src/servers") {
        if code.contains("crate::app") || code.contains("limitbench::app") {
            wrong.push(format!("{f} imports the app"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
