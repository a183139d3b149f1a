//! A Lua script and the four ways to run it.
//!
//! The SHA-1 is computed once when the script is built; `load` puts the
//! script in the cache (SCRIPT LOAD) and the function library in place
//! (FUNCTION LOAD REPLACE) before any timing starts; `invoke` is the one
//! place that knows about NOSCRIPT.

use serde::{Deserialize, Serialize};
use sha1::{Digest, Sha1};

use crate::conn::Conn;
use crate::resp::{Arg, ArgList, Connection, Reply};
use limitbench_base::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Invocation {
    /// EVAL: the whole script with every call.
    Eval,
    /// EVALSHA only; NOSCRIPT is an error (a client without a fallback).
    Evalsha,
    /// EVALSHA, and on NOSCRIPT the same call again as EVAL (go-redis's Script.Run).
    EvalshaFallback,
    /// FCALL of the function library loaded with FUNCTION LOAD.
    Fcall,
}

impl Invocation {
    pub const ALL: [Invocation; 4] = [
        Invocation::Eval,
        Invocation::Evalsha,
        Invocation::EvalshaFallback,
        Invocation::Fcall,
    ];

    pub fn as_str(&self) -> &'static str {
        match self {
            Invocation::Eval => "eval",
            Invocation::Evalsha => "evalsha",
            Invocation::EvalshaFallback => "evalsha-fallback",
            Invocation::Fcall => "fcall",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.as_str() == s)
    }
}

impl std::fmt::Display for Invocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// KEYS and ARGV of one script call, formatted into argument lists that the
/// connection lends (`Conn::take_arg_list`), so building them allocates
/// nothing per decision. Push every key to `keys`, every argument to `args`.
#[derive(Debug, Default)]
pub struct ScriptArgs {
    pub keys: ArgList,
    pub args: ArgList,
}

impl ScriptArgs {
    /// Empty lists borrowed from `conn`; `give_back` returns them.
    pub fn take(conn: &mut Conn) -> Self {
        ScriptArgs {
            keys: conn.take_arg_list(),
            args: conn.take_arg_list(),
        }
    }

    pub fn give_back(self, conn: &mut Conn) {
        conn.give_back(self.keys);
        conn.give_back(self.args);
    }
}

#[derive(Debug, Clone)]
pub struct Script {
    pub name: String,
    /// The script as sent by EVAL.
    pub source: String,
    /// SHA-1 of `source`, lowercase hex, as EVALSHA wants it.
    pub sha: String,
    /// The function's name for FCALL (also the library's name).
    pub function: String,
    /// `#!lua name=... ` + register_function wrapper around `source`.
    pub library: String,
}

pub fn sha1_hex(data: &[u8]) -> String {
    Sha1::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl Script {
    pub fn new(name: &str, source: &str) -> Self {
        // Under the run's namespace on a server the user runs, so the
        // library is the run's and never replaces a user's library.
        let function = crate::namespace::library_name(&format!(
            "lb_{}",
            name.replace(|c: char| !c.is_ascii_alphanumeric(), "_")
        ));
        // A function receives KEYS and ARGV as parameters; naming them KEYS and
        // ARGV lets the EVAL body run unchanged inside it. A `#!lua flags=...`
        // first line becomes the function's flags.
        let (flags, body) = match source.strip_prefix("#!lua") {
            Some(rest) => {
                let (first, body) = rest.split_once('\n').unwrap_or((rest, ""));
                let flags: Vec<String> = first
                    .split_whitespace()
                    .filter_map(|w| w.strip_prefix("flags="))
                    .flat_map(|f| {
                        f.split(',')
                            .map(|s| format!("'{}'", s.trim()))
                            .collect::<Vec<_>>()
                    })
                    .collect();
                (flags, body)
            }
            None => (vec![], source),
        };
        let library = format!(
            "#!lua name={function}\nredis.register_function{{function_name='{function}', flags={{{}}}, callback=function(KEYS, ARGV)\n{body}\nend}}\n",
            flags.join(",")
        );
        Script {
            name: name.to_string(),
            sha: sha1_hex(source.as_bytes()),
            source: source.to_string(),
            function,
            library,
        }
    }

    /// SCRIPT LOAD and FUNCTION LOAD REPLACE on one node; checks the SHA
    /// Redis reports. Both must work (and FCALL must be able to run the
    /// script, `load_for_modes`).
    pub async fn load(&self, node: &mut Connection) -> Result<()> {
        match self.load_for_modes(node).await? {
            None => Ok(()),
            Some(why) => Err(Error::Other(format!(
                "{} cannot run as a function: {why}",
                self.name
            ))),
        }
    }

    /// SCRIPT LOAD (an error when Redis refuses it: then no mode can run
    /// it), then FUNCTION LOAD REPLACE of the wrapped body. Returns why FCALL
    /// cannot run the script on this node, if it cannot: the function did not
    /// load, or the script calls a `redis.*` function that this server's
    /// function runtime lacks (`redis.replicate_commands`, common in scripts
    /// written for Redis < 7, exists for EVAL only; FUNCTION LOAD accepts
    /// the library, as it does not run the body, and every FCALL would fail).
    pub async fn load_for_modes(&self, node: &mut Connection) -> Result<Option<String>> {
        let sha = node
            .call(&crate::args!["SCRIPT", "LOAD", self.source.as_str()])
            .await?;
        if sha.as_string().as_deref() != Some(self.sha.as_str()) {
            return Err(Error::Protocol(format!(
                "SCRIPT LOAD of {} returned {:?}, expected {}",
                self.name, sha, self.sha
            )));
        }
        if let Err(e) = self.load_function(node).await {
            return Ok(Some(e.to_string()));
        }
        let used = SourceUse::of(&self.source).redis_api;
        let unusual: Vec<&String> = used
            .iter()
            .filter(|f| !IN_FUNCTIONS_TOO.contains(&f.as_str()))
            .collect();
        if unusual.is_empty() {
            return Ok(None);
        }
        let there = function_api(node).await?;
        let missing: Vec<String> = unusual
            .into_iter()
            .filter(|f| !there.contains(f))
            .map(|f| format!("redis.{f}"))
            .collect();
        Ok((!missing.is_empty()).then(|| {
            format!(
                "the script calls {}, which functions on this server do not have (it exists for EVAL only; \
                 since Redis 7 effects replication is always on, so redis.replicate_commands() is not needed): \
                 every FCALL would fail",
                missing.join(", ")
            )
        }))
    }

    /// FUNCTION LOAD REPLACE only.
    pub async fn load_function(&self, node: &mut Connection) -> Result<()> {
        crate::namespace::check_library_free(node, &self.function).await?;
        node.call(&crate::args![
            "FUNCTION",
            "LOAD",
            "REPLACE",
            self.library.as_str()
        ])
        .await
        .map_err(|e| Error::Other(format!("FUNCTION LOAD of {} failed: {e}", self.name)))?;
        crate::namespace::note_library_loaded();
        Ok(())
    }

    /// Run the script once with `call`'s KEYS and ARGV, routed by KEYS[1].
    /// Returns the reply and the number of NOSCRIPT fallbacks taken (0 or 1).
    pub async fn invoke(
        &self,
        conn: &mut Conn,
        mode: Invocation,
        call: &ScriptArgs,
    ) -> Result<(Reply, u32)> {
        // Keys are formatted from `&str`s and numbers: valid UTF-8.
        let route = call
            .keys
            .get(0)
            .and_then(|k| std::str::from_utf8(k).ok())
            .unwrap_or("");
        let (head, body) = match mode {
            Invocation::Eval => ("EVAL", self.source.as_str()),
            Invocation::Evalsha | Invocation::EvalshaFallback => ("EVALSHA", self.sha.as_str()),
            Invocation::Fcall => ("FCALL", self.function.as_str()),
        };
        let numkeys = Arg::U(call.keys.len() as u64);
        let tail = [&call.keys, &call.args];
        match conn
            .call_with(route, &[Arg::S(head), Arg::S(body), numkeys], &tail)
            .await
        {
            Err(e) if mode == Invocation::EvalshaFallback && e.is_noscript() => {
                let eval = [Arg::S("EVAL"), Arg::S(&self.source), numkeys];
                Ok((conn.call_with(route, &eval, &tail).await?, 1))
            }
            Err(e) => Err(e),
            Ok(r) => Ok((r, 0)),
        }
    }
}

/// Whether an invocation mode can run a strategy on a server, and if not, why.
#[derive(Debug, Clone, PartialEq)]
pub struct ModeSupport {
    pub mode: Invocation,
    /// `None`: it can; else the reason it cannot (FUNCTION LOAD's error,
    /// an API the function runtime lacks, ...).
    pub problem: Option<String>,
}

/// `redis.*` fields that EVAL scripts and functions both have in Redis 7;
/// a script that calls only these needs no probe of the function runtime.
const IN_FUNCTIONS_TOO: &[&str] = &[
    "call",
    "pcall",
    "error_reply",
    "status_reply",
    "sha1hex",
    "log",
    "setresp",
    "set_repl",
    "acl_check_cmd",
    "REDIS_VERSION",
    "REDIS_VERSION_NUM",
    "LOG_DEBUG",
    "LOG_VERBOSE",
    "LOG_NOTICE",
    "LOG_WARNING",
    "REPL_ALL",
    "REPL_AOF",
    "REPL_REPLICA",
    "REPL_SLAVE",
    "REPL_NONE",
];

static PROBES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The names in the `redis` table that a function sees on this server: a
/// throwaway library (named for this process, deleted again) lists them.
async fn function_api(node: &mut Connection) -> Result<Vec<String>> {
    let name = crate::namespace::library_name(&format!(
        "lb_api_probe_{}_{}",
        std::process::id(),
        PROBES.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    let lib = format!(
        "#!lua name={name}\nredis.register_function{{function_name='{name}', flags={{'no-writes'}}, \
         callback=function() local out = {{}} for k in pairs(redis) do out[#out + 1] = k end return out end}}\n"
    );
    node.call(&crate::args!["FUNCTION", "LOAD", "REPLACE", lib.as_str()])
        .await?;
    crate::namespace::note_library_loaded();
    let listed = node.call(&crate::args!["FCALL", name.as_str(), 0u64]).await;
    node.call(&crate::args!["FUNCTION", "DELETE", name.as_str()])
        .await?;
    Ok(listed?
        .into_array()
        .unwrap_or_default()
        .iter()
        .filter_map(|r| r.as_string())
        .collect())
}

/// What a script's source uses of Redis's Lua API, read from its tokens
/// (comments skipped, strings kept whole), so that a word in a comment or a
/// string does not count.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SourceUse {
    /// Every `redis.<name>` the code names (`call`, `replicate_commands`, ...), sorted, once each.
    pub redis_api: Vec<String>,
    /// It calls `redis.call('TIME')` or `redis.pcall('TIME')` (any case).
    pub reads_time: bool,
}

#[derive(Debug, Clone, PartialEq)]
enum LuaTok {
    Name(String),
    Str(String),
    Punct(char),
}

/// Lua's tokens, enough to find `redis.x` and `redis.call('TIME')`:
/// names, strings (short and long brackets) and one-character punctuation;
/// comments (`--` and `--[[ ]]`) and numbers are skipped.
fn lua_tokens(src: &str) -> Vec<LuaTok> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    // A long bracket `[==[ ... ]==]` opening at `at`: (body start, body end, after it).
    let long = |at: usize| -> Option<(usize, usize, usize)> {
        if b.get(at) != Some(&b'[') {
            return None;
        }
        let mut j = at + 1;
        while j < b.len() && b[j] == b'=' {
            j += 1;
        }
        if j >= b.len() || b[j] != b'[' {
            return None;
        }
        let close = format!("]{}]", "=".repeat(j - at - 1));
        let body = j + 1;
        Some(match src[body..].find(&close) {
            Some(e) => (body, body + e, body + e + close.len()),
            None => (body, b.len(), b.len()),
        })
    };
    while i < b.len() {
        let c = b[i];
        if b[i..].starts_with(b"--") {
            i = match long(i + 2) {
                Some((_, _, next)) => next,
                _ => src[i..].find('\n').map(|e| i + e + 1).unwrap_or(b.len()),
            };
        } else if let Some((body, end, next)) = long(i) {
            out.push(LuaTok::Str(src[body..end].to_string()));
            i = next;
        } else if c == b'"' || c == b'\'' {
            let mut j = i + 1;
            let mut text = String::new();
            while j < b.len() && b[j] != c && b[j] != b'\n' {
                if b[j] == b'\\' && j + 1 < b.len() {
                    j += 1;
                }
                text.push(b[j] as char);
                j += 1;
            }
            out.push(LuaTok::Str(text));
            i = j + 1;
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(LuaTok::Name(src[start..i].to_string()));
        } else if c.is_ascii_digit() {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'.') {
                i += 1;
            }
        } else {
            if !c.is_ascii_whitespace() {
                out.push(LuaTok::Punct(c as char));
            }
            i += 1;
        }
    }
    out
}

impl SourceUse {
    pub fn of(source: &str) -> Self {
        let t = lua_tokens(source);
        let mut api: Vec<String> = Vec::new();
        let mut reads_time = false;
        for w in t.windows(3) {
            if let [LuaTok::Name(r), LuaTok::Punct('.'), LuaTok::Name(f)] = w
                && r == "redis"
                && !api.contains(f)
            {
                api.push(f.clone());
            }
        }
        for w in t.windows(6) {
            if let [
                LuaTok::Name(r),
                LuaTok::Punct('.'),
                LuaTok::Name(f),
                LuaTok::Punct('('),
                LuaTok::Str(cmd),
                _,
            ] = w
            {
                reads_time |= r == "redis"
                    && (f == "call" || f == "pcall")
                    && cmd.trim().eq_ignore_ascii_case("time");
            }
        }
        api.sort();
        SourceUse {
            redis_api: api,
            reads_time,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha_is_sha1_of_the_source() {
        assert_eq!(
            sha1_hex(b"return 1"),
            "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"
        );
        let s = Script::new("my-thing", "#!lua flags=no-writes\nreturn 1");
        assert_eq!(s.function, "lb_my_thing");
        assert!(s.library.contains("flags={'no-writes'}"));
        assert!(!s.library.contains("#!lua flags"));
    }

    #[test]
    fn the_source_scan_sees_calls_not_comments_or_strings() {
        let src = "-- redis.breakpoint() in a comment\n--[==[ redis.debug('x') ]==]\n\
                   redis.replicate_commands()\nlocal t = redis.call(\"time\")\n\
                   local s = 'redis.setresp(3)'\nlocal l = [[redis.log]]\nreturn redis.pcall('GET', KEYS[1])";
        let u = SourceUse::of(src);
        assert_eq!(u.redis_api, ["call", "pcall", "replicate_commands"]);
        assert!(u.reads_time);
        assert!(!SourceUse::of("redis.call('GET', 'TIME')").reads_time);
        assert!(SourceUse::of("redis.pcall( 'TIME' )").reads_time);
    }
}
