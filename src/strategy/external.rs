//! External strategies: a Lua file and a TOML manifest, no Rust.
//!
//! ```toml
//! name = "leaky-bucket"            # how experiments and `check` refer to it
//! script = "leaky-bucket.lua"      # relative to the manifest
//! description = "..."              # optional
//! modes = ["evalsha-fallback", "eval", "evalsha", "fcall"]   # optional; default all four
//! keys = ["rl:{${client}}:lb"]     # KEYS, templated
//! args = ["${limit}", "${rate_per_s}", "${cost}"]            # ARGV, templated
//!
//! [reply]                          # 1-based positions in the reply array
//! admitted = 1                     # 1 = admitted, 0 = refused
//! remaining = 2                    # optional
//! redis_time_us = 3                # optional
//! ```
//!
//! Placeholders: `${client}`, `${limit}`, `${capacity}` (= limit),
//! `${window_ms}`, `${window_s}`, `${rate_per_s}`, `${cost}`, `${now_s}`,
//! `${now_ms}`, `${now_us}` (the harness's caller clock), `${request_id}`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;

use super::lua::{LuaStrategy, ReplyMap};
use super::{Info, Invocation, Kind, Options, Request, Script, Strategy};
use crate::error::{Error, Result};

pub const PLACEHOLDERS: &[&str] = &[
    "client",
    "limit",
    "capacity",
    "window_ms",
    "window_s",
    "rate_per_s",
    "cost",
    "now_s",
    "now_ms",
    "now_us",
    "request_id",
];

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawManifest {
    name: String,
    script: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    modes: Option<Vec<String>>,
    keys: Vec<String>,
    #[serde(default)]
    args: Vec<String>,
    reply: RawReply,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawReply {
    admitted: usize,
    #[serde(default)]
    remaining: Option<usize>,
    #[serde(default)]
    redis_time_us: Option<usize>,
}

/// A validated manifest with its script source.
#[derive(Debug, Clone)]
pub struct Manifest {
    pub name: String,
    pub file: PathBuf,
    pub description: Option<String>,
    pub source: String,
    pub modes: Vec<Invocation>,
    keys: Vec<Template>,
    args: Vec<Template>,
    reply: ReplyMap,
}

/// A string with `${placeholder}`s, split once at load time.
#[derive(Debug, Clone)]
struct Template(Vec<Piece>);

#[derive(Debug, Clone)]
enum Piece {
    Text(String),
    Var(usize),
}

fn bad(file: &Path, field: &str, problem: impl Into<String>) -> Error {
    Error::Manifest {
        file: file.to_path_buf(),
        field: field.into(),
        problem: problem.into(),
    }
}

impl Template {
    fn parse(s: &str, file: &Path, field: &str) -> Result<Self> {
        let mut pieces = Vec::new();
        let mut rest = s;
        while let Some(start) = rest.find("${") {
            if start > 0 {
                pieces.push(Piece::Text(rest[..start].to_string()));
            }
            let after = &rest[start + 2..];
            let end = after
                .find('}')
                .ok_or_else(|| bad(file, field, format!("unclosed `${{` in `{s}`")))?;
            let var = &after[..end];
            let i = PLACEHOLDERS.iter().position(|p| *p == var).ok_or_else(|| {
                bad(
                    file,
                    field,
                    format!(
                        "unknown placeholder `${{{var}}}` (known: {})",
                        PLACEHOLDERS.join(", ")
                    ),
                )
            })?;
            pieces.push(Piece::Var(i));
            rest = &after[end + 1..];
        }
        if !rest.is_empty() {
            pieces.push(Piece::Text(rest.to_string()));
        }
        Ok(Template(pieces))
    }

    fn render(&self, req: &Request<'_>) -> String {
        let mut out = String::new();
        for p in &self.0 {
            match p {
                Piece::Text(t) => out.push_str(t),
                Piece::Var(i) => {
                    let l = &req.limit;
                    let v = match PLACEHOLDERS[*i] {
                        "client" => req.client.to_string(),
                        "limit" | "capacity" => l.limit.to_string(),
                        "window_ms" => l.window_ms.to_string(),
                        "window_s" => (l.window_ms as f64 / 1000.0).to_string(),
                        "rate_per_s" => l.rate_per_s.to_string(),
                        "cost" => req.cost.to_string(),
                        "now_s" => req.now_us.div_euclid(1_000_000).to_string(),
                        "now_ms" => req.now_us.div_euclid(1000).to_string(),
                        "now_us" => req.now_us.to_string(),
                        "request_id" => req.request_id.to_string(),
                        _ => unreachable!("placeholders are checked at load time"),
                    };
                    out.push_str(&v);
                }
            }
        }
        out
    }
}

impl Manifest {
    /// Read and validate one manifest; every problem names the file and field.
    pub fn load(file: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(file)
            .map_err(|e| Error::io(format!("reading {}", file.display()), e))?;
        let raw: RawManifest = toml::from_str(&text).map_err(|e| {
            let msg = e.message().to_string();
            let field = msg.split('`').nth(1).unwrap_or("(document)").to_string();
            bad(file, &field, msg)
        })?;
        if raw.name.is_empty()
            || !raw
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(bad(
                file,
                "name",
                format!("`{}` must be non-empty letters, digits, - or _", raw.name),
            ));
        }
        if super::BUILTINS.iter().any(|b| b.name == raw.name) {
            return Err(bad(
                file,
                "name",
                format!("`{}` is a built-in strategy's name", raw.name),
            ));
        }
        let script_path = file.parent().unwrap_or(Path::new(".")).join(&raw.script);
        let source = std::fs::read_to_string(&script_path).map_err(|e| {
            bad(
                file,
                "script",
                format!("cannot read {}: {e}", script_path.display()),
            )
        })?;
        let modes = match raw.modes {
            None => Invocation::ALL.to_vec(),
            Some(ms) if ms.is_empty() => {
                return Err(bad(file, "modes", "must list at least one mode"));
            }
            Some(ms) => ms
                .iter()
                .map(|m| {
                    Invocation::parse(m).ok_or_else(|| {
                        bad(
                            file,
                            "modes",
                            format!("`{m}` is not one of eval, evalsha, evalsha-fallback, fcall"),
                        )
                    })
                })
                .collect::<Result<_>>()?,
        };
        if raw.keys.is_empty() {
            return Err(bad(
                file,
                "keys",
                "a strategy must declare at least one key (KEYS[1] routes the call)",
            ));
        }
        let keys = raw
            .keys
            .iter()
            .map(|k| Template::parse(k, file, "keys"))
            .collect::<Result<_>>()?;
        let args = raw
            .args
            .iter()
            .map(|a| Template::parse(a, file, "args"))
            .collect::<Result<_>>()?;
        let pos = |v: usize, field: &str| -> Result<usize> {
            if v == 0 {
                Err(bad(file, field, "positions are 1-based"))
            } else {
                Ok(v - 1)
            }
        };
        let reply = ReplyMap {
            admitted: pos(raw.reply.admitted, "reply.admitted")?,
            remaining: raw
                .reply
                .remaining
                .map(|v| pos(v, "reply.remaining"))
                .transpose()?,
            redis_time_us: raw
                .reply
                .redis_time_us
                .map(|v| pos(v, "reply.redis_time_us"))
                .transpose()?,
        };
        Ok(Manifest {
            name: raw.name,
            file: file.to_path_buf(),
            description: raw.description,
            source,
            modes,
            keys,
            args,
            reply,
        })
    }

    pub fn build(&self, opts: &Options) -> Result<Arc<dyn Strategy>> {
        let keys_doc = self
            .keys
            .iter()
            .map(describe)
            .collect::<Vec<_>>()
            .join(", ");
        let info = Info {
            name: self.name.clone(),
            kind: Kind::External,
            modes: self.modes.clone(),
            keys: keys_doc,
            atomic: true,
            known_bug: None,
        };
        let (keys, args) = (self.keys.clone(), self.args.clone());
        LuaStrategy::new(
            info,
            Script::new(&self.name, &self.source),
            self.reply,
            opts,
            move |_| {
                Ok(Box::new(
                    move |req: &Request<'_>, k: &mut Vec<String>, a: &mut Vec<String>| {
                        k.extend(keys.iter().map(|t| t.render(req)));
                        a.extend(args.iter().map(|t| t.render(req)));
                    },
                ))
            },
        )
    }
}

fn describe(t: &Template) -> String {
    t.0.iter()
        .map(|p| match p {
            Piece::Text(s) => s.clone(),
            Piece::Var(i) => format!("${{{}}}", PLACEHOLDERS[*i]),
        })
        .collect()
}

/// Every `*.toml` manifest in `dir` (or in `lua/external` when `dir` is None
/// and that folder exists), sorted by file name. Names must be unique.
pub fn load_dir(dir: Option<&Path>) -> Result<Vec<Manifest>> {
    let dir = match dir {
        Some(d) => {
            if !d.is_dir() {
                return Err(Error::Other(format!(
                    "strategy folder {} does not exist",
                    d.display()
                )));
            }
            d.to_path_buf()
        }
        None => {
            let d = crate::paths::project_file(super::DEFAULT_EXTERNAL_DIR);
            if !d.is_dir() {
                return Ok(vec![]);
            }
            d
        }
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| Error::io(format!("reading {}", dir.display()), e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    let mut out: Vec<Manifest> = Vec::new();
    for f in files {
        let m = Manifest::load(&f)?;
        if let Some(prev) = out.iter().find(|o| o.name == m.name) {
            return Err(bad(
                &f,
                "name",
                format!("`{}` is already defined by {}", m.name, prev.file.display()),
            ));
        }
        out.push(m);
    }
    Ok(out)
}
