//! `limitbench strategies`: one line per strategy (name, kind, clock,
//! promise, invocation modes, keys); a manifest that does not load is
//! named and makes the exit 2.

use std::path::PathBuf;

use anyhow::Result;

use limitbench_core::strategy::{self, Options};

#[derive(clap::Args)]
pub struct StrategiesArgs {
    /// A folder of external strategies (Lua + TOML); default lua/external.
    #[arg(long)]
    dir: Option<PathBuf>,
}

const HEAD: [&str; 6] = [
    "name",
    "kind",
    "clock",
    "promise",
    "invocation modes",
    "keys",
];

pub fn run(a: StrategiesArgs) -> Result<i32> {
    let dir = a.dir;
    let folder = strategy::external::scan(dir.as_deref())?;
    let rows = rows(dir.as_deref())?;
    print_table(&rows);
    for m in &folder.manifests {
        for w in &m.warnings {
            eprintln!("limitbench: warning: {w}");
        }
    }
    for b in folder.broken_text() {
        eprintln!("limitbench: error: not loaded: {b}");
    }
    Ok(if folder.broken.is_empty() { 0 } else { 2 })
}

/// One row per strategy, in the columns of [`HEAD`].
fn rows(dir: Option<&std::path::Path>) -> Result<Vec<[String; 6]>> {
    let mut rows = Vec::new();
    for name in &strategy::all_names(dir)? {
        let s = strategy::build(name, dir, &Options::default())?;
        let i = s.info();
        let modes = if i.modes.is_empty() {
            "-".to_string()
        } else {
            i.modes
                .iter()
                .map(|m| m.as_str())
                .collect::<Vec<_>>()
                .join(",")
        };
        let promise = i.promise.map(|p| p.as_str()).unwrap_or("-");
        rows.push([
            i.name.clone(),
            i.kind.as_str().to_string(),
            i.clock.as_str().to_string(),
            promise.to_string(),
            modes,
            i.keys.clone(),
        ]);
    }
    Ok(rows)
}

/// The table: every column as wide as its longest cell, the last unpadded.
fn print_table(rows: &[[String; 6]]) {
    let width: Vec<usize> = (0..HEAD.len())
        .map(|c| {
            rows.iter()
                .map(|r| r[c].chars().count())
                .chain([HEAD[c].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: &[&str]| {
        let mut out = String::new();
        for (c, cell) in cells.iter().enumerate() {
            if c + 1 == cells.len() {
                out += cell;
            } else {
                out += &format!("{cell:<w$} ", w = width[c]);
            }
        }
        println!("{}", out.trim_end());
    };
    line(&HEAD);
    for r in rows {
        line(&r.iter().map(String::as_str).collect::<Vec<_>>());
    }
}
