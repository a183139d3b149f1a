//! Reading and validating one manifest (`Manifest::load`): the TOML as
//! written, its `[reply]` fields as rules, and the clock it declares or
//! implies. Every problem names the file and the field.

use std::path::Path;

use serde::Deserialize;

use super::template::Template;
use super::{Manifest, bad};
use crate::strategy::reply::{ReplyRules, Rule};
use crate::strategy::{ClockSource, Invocation, SourceUse};
use limitbench_base::error::{Error, Result};
use limitbench_base::promise::Promise;

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
/// `reply/`); read as TOML values so that a wrong type names its field.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawReply {
    admitted: toml::Value,
    #[serde(default)]
    remaining: Option<toml::Value>,
    #[serde(default)]
    redis_time_us: Option<toml::Value>,
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
        if crate::strategy::BUILTINS.iter().any(|b| b.name == raw.name) {
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
