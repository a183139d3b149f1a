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
//! clock = "redis"                  # optional: redis | caller | none (see below)
//!
//! [reply]                          # 1-based positions in the reply array
//! admitted = 1                     # 1 = admitted, 0 = refused
//! remaining = 2                    # optional
//! redis_time_us = 3                # optional: Redis's TIME (us) as the script read it
//! ```
//!
//! Placeholders: `${client}`, `${limit}`, `${capacity}` (= limit),
//! `${window_ms}`, `${window_s}`, `${rate_per_s}`, `${cost}`, `${now_s}`,
//! `${now_ms}`, `${now_us}` (the harness's caller clock), `${request_id}`,
//! and for limiters that build the key from the window on the caller's side
//! (`rl:user:<window>`): `${window_index}` (the caller's now in ms divided
//! by `window_ms`, `strategy::window_index`), `${window_start_ms}` (that
//! window's start, ms since the epoch) and `${prev_window_index}` (the one
//! before). The window placeholders read the caller's clock too, e.g.
//!
//! ```toml
//! keys = ["rl:{${client}}:fw:${window_index}"]
//! args = ["${limit}", "${window_ms}", "${cost}"]
//! ```
//!
//! `clock` is whose "now" the script decides on (`strategy::ClockSource`).
//! Without it: `redis` if `reply.redis_time_us` is mapped, else `caller` if
//! an argument or key uses a `${now_*}` or window placeholder, else `none`.
//! `caller` needs one of those placeholders. The strategy reports Redis's time
//! (`Info::reports_redis_time`) exactly when `reply.redis_time_us` is mapped;
//! a script that returns -1 there reports none for that decision.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;

use super::lua::{LuaStrategy, ReplyMap};
use super::{ClockSource, Info, Invocation, Kind, Options, Request, Script, Strategy};
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
    "window_index",
    "window_start_ms",
    "prev_window_index",
];

/// The placeholders that read the caller's clock.
fn reads_caller_clock(name: &str) -> bool {
    name.starts_with("now_")
        || matches!(
            name,
            "window_index" | "window_start_ms" | "prev_window_index"
        )
}

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
    #[serde(default)]
    clock: Option<String>,
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
    pub clock: ClockSource,
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

    /// Whether the template uses the caller's clock (`${now_*}`, `${window_index}`, ...).
    fn uses_caller_clock(&self) -> bool {
        self.0
            .iter()
            .any(|p| matches!(p, Piece::Var(i) if reads_caller_clock(PLACEHOLDERS[*i])))
    }
}

/// A template filled in for one request, as a value to format straight into
/// an argument list (no String per argument).
struct Rendered<'a>(&'a Template, &'a Request<'a>);

impl std::fmt::Display for Rendered<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Rendered(template, req) = self;
        let l = &req.limit;
        for p in &template.0 {
            match p {
                Piece::Text(t) => f.write_str(t)?,
                Piece::Var(i) => match PLACEHOLDERS[*i] {
                    "client" => f.write_str(req.client)?,
                    "limit" | "capacity" => write!(f, "{}", l.limit)?,
                    "window_ms" => write!(f, "{}", l.window_ms)?,
                    "window_s" => write!(f, "{}", l.window_ms as f64 / 1000.0)?,
                    "rate_per_s" => write!(f, "{}", l.rate_per_s)?,
                    "cost" => write!(f, "{}", req.cost)?,
                    "now_s" => write!(f, "{}", req.now_us.div_euclid(1_000_000))?,
                    "now_ms" => write!(f, "{}", req.now_us.div_euclid(1000))?,
                    "now_us" => write!(f, "{}", req.now_us)?,
                    "request_id" => write!(f, "{}", req.request_id)?,
                    "window_index" => {
                        write!(f, "{}", super::window_index(req.now_us, l.window_ms))?
                    }
                    "window_start_ms" => write!(
                        f,
                        "{}",
                        super::window_index(req.now_us, l.window_ms) * l.window_ms.max(1) as i64
                    )?,
                    "prev_window_index" => {
                        write!(f, "{}", super::window_index(req.now_us, l.window_ms) - 1)?
                    }
                    _ => unreachable!("placeholders are checked at load time"),
                },
            }
        }
        Ok(())
    }
}

impl Manifest {
    /// Read and validate one manifest; every problem names the file and field.
    pub fn load(file: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(file)
            .map_err(|e| Error::io(format!("reading {}", file.display()), e))?;
        let raw: RawManifest = toml::from_str(&text).map_err(|e| {
            // Where it is: the line of the error's span; which field: the
            // key serde names (unknown or missing field), else syntax.
            let line = e
                .span()
                .map(|sp| text[..sp.start.min(text.len())].matches('\n').count() + 1);
            let msg = e.message().to_string();
            let field = match msg.split('`').nth(1) {
                Some(f) if msg.contains("field") => f.to_string(),
                _ => "(TOML syntax)".to_string(),
            };
            let at = line.map(|l| format!("line {l}: ")).unwrap_or_default();
            bad(file, &field, format!("{at}{msg}"))
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
            .collect::<Result<Vec<_>>>()?;
        let args = raw
            .args
            .iter()
            .map(|a| Template::parse(a, file, "args"))
            .collect::<Result<Vec<_>>>()?;
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
        let clock = manifest_clock(raw.clock.as_deref(), &reply, &keys, &args, file)?;
        Ok(Manifest {
            name: raw.name,
            file: file.to_path_buf(),
            description: raw.description,
            source,
            modes,
            clock,
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
            clock: self.clock,
            reports_redis_time: self.reply.redis_time_us.is_some(),
        };
        let (keys, args) = (self.keys.clone(), self.args.clone());
        LuaStrategy::with_writer(
            info,
            Script::new(&self.name, &self.source),
            self.reply,
            opts,
            move |_, _| {
                Ok(Box::new(move |req, call| {
                    keys.iter().for_each(|t| call.keys.push(Rendered(t, req)));
                    args.iter().for_each(|t| call.args.push(Rendered(t, req)));
                }))
            },
        )
    }
}

/// The manifest's `clock`, or the one its reply map and placeholders imply.
fn manifest_clock(
    declared: Option<&str>,
    reply: &ReplyMap,
    keys: &[Template],
    args: &[Template],
    file: &Path,
) -> Result<ClockSource> {
    let takes_caller_time = keys.iter().chain(args).any(Template::uses_caller_clock);
    let clock = match declared {
        Some(c) => ClockSource::parse(c).ok_or_else(|| {
            bad(
                file,
                "clock",
                format!("`{c}` is not one of redis, caller, none"),
            )
        })?,
        None if reply.redis_time_us.is_some() => ClockSource::Redis,
        None if takes_caller_time => ClockSource::Caller,
        None => ClockSource::None,
    };
    if clock == ClockSource::Caller && !takes_caller_time {
        return Err(bad(
            file,
            "clock",
            "`caller` needs the caller's time: pass ${now_s}, ${now_ms}, ${now_us} or a window placeholder (${window_index}, ${window_start_ms}, ${prev_window_index}) in keys or args",
        ));
    }
    Ok(clock)
}

fn describe(t: &Template) -> String {
    t.0.iter()
        .map(|p| match p {
            Piece::Text(s) => s.clone(),
            Piece::Var(i) => format!("${{{}}}", PLACEHOLDERS[*i]),
        })
        .collect()
}

/// Every `*.toml` manifest in `lua/external` (when that folder exists) and
/// then in `dir`, each folder sorted by file name: `--dir` adds to the
/// shipped folder, and a manifest in `dir` replaces a shipped one of the
/// same name. Names must be unique within a folder.
pub fn load_dir(dir: Option<&Path>) -> Result<Vec<Manifest>> {
    let shipped = crate::paths::project_file(super::DEFAULT_EXTERNAL_DIR);
    let mut out = if shipped.is_dir() {
        load_folder(&shipped)?
    } else {
        Vec::new()
    };
    if let Some(d) = dir {
        if !d.is_dir() {
            return Err(Error::Other(format!(
                "strategy folder {} does not exist",
                d.display()
            )));
        }
        let same = match (d.canonicalize(), shipped.canonicalize()) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        };
        if !same {
            for m in load_folder(d)? {
                out.retain(|o| o.name != m.name);
                out.push(m);
            }
        }
    }
    Ok(out)
}

/// Every `*.toml` manifest in one folder, sorted by file name.
fn load_folder(dir: &Path) -> Result<Vec<Manifest>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Load a manifest with `extra` lines (top-level fields, then `[reply]`)
    /// beside a trivial script.
    fn load(extra: &str, reply: &str) -> Result<Manifest> {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("x.lua"), "return {1, 0, -1}").unwrap();
        let file = d.path().join("x.toml");
        std::fs::write(
            &file,
            format!("name = \"x\"\nscript = \"x.lua\"\nkeys = [\"k:${{client}}\"]\n{extra}\n[reply]\nadmitted = 1\n{reply}\n"),
        )
        .unwrap();
        Manifest::load(&file)
    }

    #[test]
    fn the_clock_is_derived_from_the_reply_and_the_placeholders() {
        assert_eq!(
            load("", "redis_time_us = 3").unwrap().clock,
            ClockSource::Redis
        );
        let caller = load("args = [\"${now_ms}\"]", "").unwrap();
        assert_eq!(caller.clock, ClockSource::Caller);
        assert_eq!(
            load("args = [\"${limit}\"]", "").unwrap().clock,
            ClockSource::None
        );
        // Declared wins: a script that reads TIME without returning it.
        assert_eq!(
            load("clock = \"redis\"", "").unwrap().clock,
            ClockSource::Redis
        );
    }

    #[test]
    fn a_bad_clock_names_the_field() {
        let e = load("clock = \"caller\"", "").unwrap_err().to_string();
        assert!(e.contains("clock") && e.contains("${now_ms}"), "{e}");
        let e = load("clock = \"wall\"", "").unwrap_err().to_string();
        assert!(e.contains("clock") && e.contains("`wall`"), "{e}");
    }

    #[test]
    fn window_placeholders_render_the_callers_window() {
        let t = Template::parse(
            "rl:{${client}}:${window_index}:${prev_window_index}:${window_start_ms}",
            Path::new("x"),
            "keys",
        )
        .unwrap();
        let req = Request {
            client: "c",
            limit: crate::strategy::Limit::per_window(5, 1000),
            cost: 1,
            now_us: 12_345_678_901,
            request_id: 7,
        };
        assert_eq!(
            Rendered(&t, &req).to_string(),
            "rl:{c}:12345:12344:12345000"
        );
        assert!(t.uses_caller_clock());
        assert_eq!(
            load("args = [\"${window_start_ms}\"]", "").unwrap().clock,
            ClockSource::Caller
        );
    }

    #[test]
    fn templates_render_as_to_string_would() {
        let t = Template::parse(
            "rl:{${client}}:${window_s}:${rate_per_s}",
            Path::new("x"),
            "keys",
        )
        .unwrap();
        let req = Request {
            client: "c",
            limit: crate::strategy::Limit::per_window(5, 300),
            cost: 1,
            now_us: 0,
            request_id: 7,
        };
        let rate = (5.0f64 * 1000.0 / 300.0).to_string();
        assert_eq!(
            Rendered(&t, &req).to_string(),
            format!("rl:{{c}}:0.3:{rate}")
        );
    }
}
