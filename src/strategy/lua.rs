//! `LuaStrategy`: one script plus how a request becomes KEYS and ARGV and how
//! the reply becomes a decision. Built-in Lua strategies and external ones
//! (manifest-driven) are both this type.

use std::sync::Arc;

use async_trait::async_trait;

use super::{Decision, Info, Invocation, Kind, Options, Request, Script, Strategy};
use crate::conn::Conn;
use crate::error::{Error, Result};
use crate::resp::{Connection, Reply};

/// Fills KEYS and ARGV for one request.
pub type BuildCall = Box<dyn Fn(&Request<'_>, &mut Vec<String>, &mut Vec<String>) + Send + Sync>;

/// Where the decision is in the reply array (0-based).
#[derive(Debug, Clone, Copy)]
pub struct ReplyMap {
    pub admitted: usize,
    pub remaining: Option<usize>,
    pub redis_time_us: Option<usize>,
}

/// The built-in scripts' convention: `{admitted 0|1, remaining, now_us}`.
pub const STANDARD_REPLY: ReplyMap = ReplyMap {
    admitted: 0,
    remaining: Some(1),
    redis_time_us: Some(2),
};

pub struct LuaStrategy {
    info: Info,
    pub script: Script,
    pub mode: Invocation,
    build_call: BuildCall,
    reply: ReplyMap,
}

impl LuaStrategy {
    /// Returns the strategy ready to share (`Arc<dyn Strategy>`), which is
    /// what the registry wants. `opts` may carry `invocation`; other options are for `extra` to read
    /// (it gets the reader), then unknown ones are rejected.
    #[allow(clippy::new_ret_no_self)]
    pub fn new(
        info: Info,
        script: Script,
        reply: ReplyMap,
        opts: &Options,
        extra: impl FnOnce(&mut super::OptionReader<'_>) -> Result<BuildCall>,
    ) -> Result<Arc<dyn Strategy>> {
        let mut r = opts.reader(&info.name);
        let mode_s: String = r.get("invocation", "evalsha-fallback".to_string())?;
        let mode = Invocation::parse(&mode_s).ok_or_else(|| Error::BadOption {
            strategy: info.name.clone(),
            option: "invocation".into(),
            problem: format!("`{mode_s}` is not one of eval, evalsha, evalsha-fallback, fcall"),
        })?;
        if !info.modes.contains(&mode) {
            return Err(Error::UnsupportedInvocation {
                strategy: info.name.clone(),
                mode: mode_s,
                supported: info
                    .modes
                    .iter()
                    .map(|m| m.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
        let build_call = extra(&mut r)?;
        r.finish()?;
        Ok(Arc::new(LuaStrategy {
            info,
            script,
            mode,
            build_call,
            reply,
        }))
    }

    /// Info for a built-in Lua strategy (all four modes).
    pub fn builtin_info(name: &str, keys: &str, known_bug: Option<&'static str>) -> Info {
        Info {
            name: name.into(),
            kind: Kind::Lua,
            modes: Invocation::ALL.to_vec(),
            keys: keys.into(),
            atomic: true,
            known_bug,
        }
    }
}

fn reply_i64(items: &[Reply], i: usize) -> Option<i64> {
    items.get(i).and_then(|r| r.as_i64())
}

#[async_trait]
impl Strategy for LuaStrategy {
    fn info(&self) -> &Info {
        &self.info
    }

    async fn prepare(&self, node: &mut Connection) -> Result<()> {
        self.script.load(node).await
    }

    async fn decide(&self, conn: &mut Conn, req: &Request<'_>) -> Result<Decision> {
        let mut keys = Vec::with_capacity(2);
        let mut args = Vec::with_capacity(6);
        (self.build_call)(req, &mut keys, &mut args);
        let (reply, fallbacks) = self.script.invoke(conn, self.mode, &keys, &args).await?;
        let items = match reply {
            Reply::Array(items) => items,
            other => vec![other],
        };
        let admitted = reply_i64(&items, self.reply.admitted).ok_or_else(|| {
            Error::Protocol(format!(
                "{}: reply has no admitted flag at {}: {items:?}",
                self.info.name, self.reply.admitted
            ))
        })?;
        Ok(Decision {
            admitted: admitted == 1,
            remaining: self.reply.remaining.and_then(|i| reply_i64(&items, i)),
            // Scripts that do not read Redis's clock put -1 in that slot.
            redis_time_us: self
                .reply
                .redis_time_us
                .and_then(|i| reply_i64(&items, i))
                .filter(|t| *t >= 0),
            noscript_fallbacks: fallbacks,
            ..Default::default()
        })
    }
}
