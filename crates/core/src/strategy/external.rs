//! External strategies: a Lua file and a TOML manifest, no Rust.
//!
//! The point is auditing the scripts that libraries ship without editing
//! them: the manifest says how a request becomes KEYS and ARGV (templates
//! with placeholders, in the units the library takes) and how the reply
//! becomes a decision (rules, `reply.rs`).
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
//! promise = "burst-of-capacity"    # optional: at-most-limit-in-any-window | burst-of-capacity
//!
//! [reply]
//! admitted = 1                     # position: reply[1] is 1 (admitted) or 0 (refused)
//! # admitted = "reply[2] >= 0"     # or a rule (reply.rs): remaining, -1 when refused
//! remaining = 2                    # optional: a position or an expression ("${limit} - reply")
//! redis_time_us = 3                # optional: Redis's TIME (us) as the script read it
//! ```
//!
//! Placeholders (`PLACEHOLDERS`): `${client}`, `${limit}`, `${capacity}`
//! (= limit), `${window_ms}`, `${window_s}` (seconds, fractional: 0.3),
//! `${window_s_int}` (whole seconds; a window that is not one is an error
//! of the decision, `Info::window_whole_seconds`), `${rate_per_s}`,
//! `${cost}`, the caller's clock as `${now_s}` (whole seconds), `${now_ms}`,
//! `${now_us}` and `${now_s_float}` (seconds with six decimals, as
//! `time.time()` or `microtime(true)` give it), `${request_id}`, and for
//! limiters that build the key from the window on the caller's side
//! (`rl:user:<window>`): `${window_index}` (the caller's now in ms divided
//! by `window_ms`, `strategy::window_index`), `${window_start_ms}` (that
//! window's start, ms since the epoch) and `${prev_window_index}` (the one
//! before). The window placeholders read the caller's clock too.
//!
//! `clock` is whose "now" the script decides on (`strategy::ClockSource`).
//! Without it: `redis` if `reply.redis_time_us` is mapped, else `caller` if
//! an argument or key uses a `${now_*}` or window placeholder, else `redis`
//! if the script calls `redis.call('TIME')`, else `none`; a script that
//! reads TIME and also takes the caller's time is inferred `caller` with a
//! warning (`Manifest::warnings`), and so is a declared `none` that reads
//! TIME. `caller` needs one of those placeholders. The strategy reports
//! Redis's time (`Info::reports_redis_time`) exactly when
//! `reply.redis_time_us` is mapped; a script that returns -1 (or nil) there
//! reports none for that decision.
//!
//! A folder is read manifest by manifest: a broken one is named with its
//! error (`Folder::broken`) and the others load (`scan`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;

use super::lua::LuaStrategy;
use super::reply::{ReplyRules, Rule};
use super::{ClockSource, Info, Invocation, Kind, Options, Request, Script, SourceUse, Strategy};
use limitbench_base::error::{Error, Result};
use limitbench_base::promise::Promise;

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
    "now_s_float",
    "window_s_int",
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
    #[serde(default)]
    promise: Option<String>,
    reply: RawReply,
}

/// Each field a 1-based position (an integer) or a rule (a string,
/// `reply.rs`); read as TOML values so that a wrong type names its field.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawReply {
    admitted: toml::Value,
    #[serde(default)]
    remaining: Option<toml::Value>,
    #[serde(default)]
    redis_time_us: Option<toml::Value>,
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
    pub promise: Option<Promise>,
    /// What the manifest leaves doubtful but not wrong (an inferred clock
    /// that could be another); `strategies` and `check` print them.
    pub warnings: Vec<String>,
    keys: Vec<Template>,
    args: Vec<Template>,
    reply: ReplyRules,
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

    fn uses(&self, name: &str) -> bool {
        self.0
            .iter()
            .any(|p| matches!(p, Piece::Var(i) if PLACEHOLDERS[*i] == name))
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
                    "now_s_float" => write!(
                        f,
                        "{}.{:06}",
                        req.now_us.div_euclid(1_000_000),
                        req.now_us.rem_euclid(1_000_000)
                    )?,
                    // Whole by `Info::accepts`, checked before the call.
                    "window_s_int" => write!(f, "{}", l.window_ms / 1000)?,
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
        let reply = ReplyRules {
            admitted: rule(raw.reply.admitted, file, "reply.admitted", true)?,
            remaining: raw
                .reply
                .remaining
                .map(|r| rule(r, file, "reply.remaining", false))
                .transpose()?,
            redis_time_us: raw
                .reply
                .redis_time_us
                .map(|r| rule(r, file, "reply.redis_time_us", false))
                .transpose()?,
        };
        let promise = raw
            .promise
            .as_deref()
            .map(|p| {
                Promise::parse(p).ok_or_else(|| {
                    bad(
                        file,
                        "promise",
                        format!(
                            "`{p}` is not one of {}",
                            Promise::ALL.map(|p| p.as_str()).join(", ")
                        ),
                    )
                })
            })
            .transpose()?;
        let mut warnings = Vec::new();
        let clock = manifest_clock(
            raw.clock.as_deref(),
            &reply,
            &keys,
            &args,
            SourceUse::of(&source).reads_time,
            file,
            &mut warnings,
        )?;
        Ok(Manifest {
            name: raw.name,
            file: file.to_path_buf(),
            description: raw.description,
            source,
            modes,
            clock,
            promise,
            warnings,
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
            promise: self.promise,
            window_whole_seconds: self
                .keys
                .iter()
                .chain(&self.args)
                .any(|t| t.uses("window_s_int")),
        };
        let (keys, args) = (self.keys.clone(), self.args.clone());
        LuaStrategy::with_writer(
            info,
            Script::new(&self.name, &self.source),
            self.reply.clone(),
            opts,
            move |_, _| {
                Ok(Box::new(move |req, call| {
                    keys.iter().for_each(|t| {
                        call.keys
                            .push(crate::namespace::Namespaced(Rendered(t, req)))
                    });
                    args.iter().for_each(|t| call.args.push(Rendered(t, req)));
                }))
            },
        )
    }
}

/// A `[reply]` field: a 1-based position, or a rule (a decision for
/// `admitted`, a number for the others).
fn rule(raw: toml::Value, file: &Path, field: &str, decision: bool) -> Result<Rule> {
    match raw {
        toml::Value::Integer(p) if p < 1 => Err(bad(
            file,
            field,
            format!("positions are 1-based (reply[1] is the first element), got {p}"),
        )),
        toml::Value::Integer(p) if decision => Ok(Rule::flag_at(p as usize - 1)),
        toml::Value::Integer(p) => Ok(Rule::at(p as usize - 1)),
        toml::Value::String(text) => if decision {
            Rule::decision(&text)
        } else {
            Rule::value(&text)
        }
        .map_err(|e| bad(file, field, format!("rule `{text}`: {e}"))),
        other => Err(bad(
            file,
            field,
            format!(
                "`{other}` is a {}; give a 1-based position (an integer) or a rule (a string, e.g. \"reply[1] == 1\")",
                other.type_str()
            ),
        )),
    }
}

/// The manifest's `clock`, or the one its reply map, placeholders and
/// script imply; doubtful inferences add a warning.
fn manifest_clock(
    declared: Option<&str>,
    reply: &ReplyRules,
    keys: &[Template],
    args: &[Template],
    reads_time: bool,
    file: &Path,
    warnings: &mut Vec<String>,
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
        None if takes_caller_time => {
            if reads_time {
                warnings.push(format!(
                    "{}: the script reads Redis's TIME and takes the caller's time: inferred clock `caller`; declare `clock = \"redis\"` if TIME is what moves its windows",
                    file.display()
                ));
            }
            ClockSource::Caller
        }
        None if reads_time => ClockSource::Redis,
        None => ClockSource::None,
    };
    if clock == ClockSource::Caller && !takes_caller_time {
        return Err(bad(
            file,
            "clock",
            "`caller` needs the caller's time: pass ${now_s}, ${now_ms}, ${now_us}, ${now_s_float} or a window placeholder (${window_index}, ${window_start_ms}, ${prev_window_index}) in keys or args",
        ));
    }
    if declared == Some("none") && reads_time {
        warnings.push(format!(
            "{}: declares clock `none` but the script reads Redis's TIME",
            file.display()
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

/// A manifest that did not load, and why.
#[derive(Debug)]
pub struct Broken {
    pub file: PathBuf,
    pub error: Error,
}

/// What a scan of the strategy folders found: the manifests that loaded,
/// and the ones that did not, each with its error.
#[derive(Debug, Default)]
pub struct Folder {
    pub manifests: Vec<Manifest>,
    pub broken: Vec<Broken>,
}

impl Folder {
    /// The broken manifests, one line each (`<file>: field ...: problem`).
    pub fn broken_text(&self) -> Vec<String> {
        self.broken.iter().map(|b| b.error.to_string()).collect()
    }
}

/// Every `*.toml` manifest in `lua/external` (when that folder exists) and
/// then in `dir`, each folder sorted by file name: `--dir` adds to the
/// shipped folder, and a manifest in `dir` replaces a shipped one of the
/// same name. A manifest that does not load (or repeats a name within its
/// folder) is listed in `broken` and the others still load. Errors only
/// when `dir` does not exist or a folder cannot be read.
pub fn scan(dir: Option<&Path>) -> Result<Folder> {
    let shipped = limitbench_base::paths::project_file(super::DEFAULT_EXTERNAL_DIR);
    let mut out = if shipped.is_dir() {
        load_folder(&shipped)?
    } else {
        Folder::default()
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
            let theirs = load_folder(d)?;
            for m in theirs.manifests {
                out.manifests.retain(|o| o.name != m.name);
                out.manifests.push(m);
            }
            out.broken.extend(theirs.broken);
        }
    }
    Ok(out)
}

/// The manifests of `scan` that loaded.
pub fn load_dir(dir: Option<&Path>) -> Result<Vec<Manifest>> {
    Ok(scan(dir)?.manifests)
}

/// Every `*.toml` manifest in one folder, sorted by file name.
fn load_folder(dir: &Path) -> Result<Folder> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| Error::io(format!("reading {}", dir.display()), e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    let mut out = Folder::default();
    for f in files {
        let m = match Manifest::load(&f) {
            Ok(m) => m,
            Err(error) => {
                out.broken.push(Broken { file: f, error });
                continue;
            }
        };
        if let Some(prev) = out.manifests.iter().find(|o| o.name == m.name) {
            let error = bad(
                &f,
                "name",
                format!("`{}` is already defined by {}", m.name, prev.file.display()),
            );
            out.broken.push(Broken { file: f, error });
            continue;
        }
        out.manifests.push(m);
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

    /// `load`, with the script's source given.
    fn load_with(lua: &str, extra: &str, reply: &str) -> Result<Manifest> {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("x.lua"), lua).unwrap();
        let file = d.path().join("x.toml");
        std::fs::write(
            &file,
            format!("name = \"x\"\nscript = \"x.lua\"\nkeys = [\"k:${{client}}\"]\n{extra}\n[reply]\n{reply}\n"),
        )
        .unwrap();
        Manifest::load(&file)
    }

    #[test]
    fn a_script_that_reads_time_runs_on_redis_clock_unless_it_takes_the_callers() {
        let reads = "local t = redis.call('TIME')\nreturn {1, 0}";
        let m = load_with(reads, "", "admitted = 1").unwrap();
        assert_eq!(m.clock, ClockSource::Redis);
        assert!(m.warnings.is_empty(), "{:?}", m.warnings);
        // TIME in a comment or a string is not a call.
        let m = load_with(
            "-- redis.call('TIME')\nreturn {1, 'TIME'}",
            "",
            "admitted = 1",
        )
        .unwrap();
        assert_eq!(m.clock, ClockSource::None);
        // Both clocks: caller, with a warning; declared none: a warning.
        let m = load_with(reads, "args = [\"${now_ms}\"]", "admitted = 1").unwrap();
        assert_eq!(m.clock, ClockSource::Caller);
        assert!(m.warnings[0].contains("TIME"), "{:?}", m.warnings);
        let m = load_with(reads, "clock = \"none\"", "admitted = 1").unwrap();
        assert!(m.warnings[0].contains("none"), "{:?}", m.warnings);
    }

    #[test]
    fn reply_fields_take_positions_or_rules_and_name_a_bad_one() {
        let m = load_with(
            "return 1",
            "",
            "admitted = \"reply <= ${limit}\"\nremaining = \"${limit} - reply\"",
        )
        .unwrap();
        assert_eq!(m.reply.admitted.text(), "\"reply <= ${limit}\"");
        let e = load_with("return 1", "", "admitted = \"reply >= \"")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("reply.admitted") && e.contains("rule `reply >= `"),
            "{e}"
        );
        let e = load_with("return 1", "", "admitted = 0")
            .unwrap_err()
            .to_string();
        assert!(e.contains("1-based"), "{e}");
        let e = load_with("return 1", "", "admitted = true")
            .unwrap_err()
            .to_string();
        assert!(e.contains("reply.admitted") && e.contains("boolean"), "{e}");
        let e = load_with(
            "return 1",
            "",
            "admitted = 1\nremaining = \"reply[1] == 1\"",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("reply.remaining") && e.contains("comparison"),
            "{e}"
        );
    }

    #[test]
    fn the_promise_is_parsed_and_checked() {
        let m = load("promise = \"burst-of-capacity\"", "").unwrap();
        assert_eq!(m.promise, Some(Promise::BurstOfCapacity));
        let s = m.build(&Options::default()).unwrap();
        assert_eq!(s.info().promise, Some(Promise::BurstOfCapacity));
        assert_eq!(load("", "").unwrap().promise, None);
        let e = load("promise = \"exact\"", "").unwrap_err().to_string();
        assert!(
            e.contains("promise") && e.contains("at-most-limit-in-any-window"),
            "{e}"
        );
    }

    #[test]
    fn seconds_placeholders_render_in_the_units_libraries_take() {
        let t = Template::parse(
            "${now_s_float}|${window_s_int}|${now_s}",
            Path::new("x"),
            "args",
        )
        .unwrap();
        let req = Request {
            client: "c",
            limit: crate::strategy::Limit::per_window(10, 60_000),
            cost: 1,
            now_us: 1_700_000_000_012_345,
            request_id: 7,
        };
        assert_eq!(
            Rendered(&t, &req).to_string(),
            "1700000000.012345|60|1700000000"
        );
        assert!(t.uses_caller_clock());
        let m = load("args = [\"${window_s_int}\"]", "").unwrap();
        let s = m.build(&Options::default()).unwrap();
        assert!(s.info().window_whole_seconds);
        let e = s
            .info()
            .accepts(&crate::strategy::Limit::per_window(5, 300))
            .unwrap_err();
        assert!(e.contains("whole seconds") && e.contains("300 ms"), "{e}");
        assert!(
            s.info()
                .accepts(&crate::strategy::Limit::per_window(5, 2000))
                .is_ok()
        );
    }

    #[test]
    fn a_broken_manifest_does_not_keep_the_others_from_loading() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("x.lua"), "return {1}").unwrap();
        let good = |n: &str| {
            format!("name = \"{n}\"\nscript = \"x.lua\"\nkeys = [\"k\"]\n[reply]\nadmitted = 1\n")
        };
        std::fs::write(d.path().join("a.toml"), good("good-a")).unwrap();
        std::fs::write(
            d.path().join("b.toml"),
            "name = \"b\"\nscript = \"x.lua\"\nkeys = [\"${clinet}\"]\n[reply]\nadmitted = 1\n",
        )
        .unwrap();
        std::fs::write(d.path().join("c.toml"), good("good-a")).unwrap();
        std::fs::write(d.path().join("d.toml"), good("good-d")).unwrap();
        let f = load_folder(d.path()).unwrap();
        let names: Vec<&str> = f.manifests.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["good-a", "good-d"]);
        let broken = f.broken_text();
        assert_eq!(broken.len(), 2, "{broken:?}");
        assert!(
            broken[0].contains("b.toml") && broken[0].contains("${clinet}"),
            "{broken:?}"
        );
        assert!(
            broken[1].contains("c.toml") && broken[1].contains("already defined"),
            "{broken:?}"
        );
    }
}
