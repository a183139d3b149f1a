//! A Lua script and the four ways to run it.
//!
//! The SHA-1 is computed once when the script is built; `load` puts the
//! script in the cache (SCRIPT LOAD) and the function library in place
//! (FUNCTION LOAD REPLACE) before any timing starts; `invoke` is the one
//! place that knows about NOSCRIPT.

use serde::{Deserialize, Serialize};
use sha1::{Digest, Sha1};

use crate::conn::Conn;
use crate::error::{Error, Result};
use crate::resp::{Arg, ArgList, Connection, Reply};

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
        let function = format!(
            "lb_{}",
            name.replace(|c: char| !c.is_ascii_alphanumeric(), "_")
        );
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

    /// SCRIPT LOAD and FUNCTION LOAD REPLACE on one node; checks the SHA Redis reports.
    pub async fn load(&self, node: &mut Connection) -> Result<()> {
        let sha = node
            .call(&crate::args!["SCRIPT", "LOAD", self.source.as_str()])
            .await?;
        if sha.as_string().as_deref() != Some(self.sha.as_str()) {
            return Err(Error::Protocol(format!(
                "SCRIPT LOAD of {} returned {:?}, expected {}",
                self.name, sha, self.sha
            )));
        }
        self.load_function(node).await
    }

    /// FUNCTION LOAD REPLACE only.
    pub async fn load_function(&self, node: &mut Connection) -> Result<()> {
        node.call(&crate::args![
            "FUNCTION",
            "LOAD",
            "REPLACE",
            self.library.as_str()
        ])
        .await
        .map_err(|e| Error::Other(format!("FUNCTION LOAD of {} failed: {e}", self.name)))?;
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
}
