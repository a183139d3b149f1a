//! `LuaStrategy`: one script plus how a request becomes KEYS and ARGV and how
//! the reply becomes a decision. Built-in Lua strategies and external ones
//! (manifest-driven) are both this type.
//!
//! The reply is an array; a `ReplyMap` says where in it (0-based) the
//! admitted flag (1 admitted, anything else refused), the remaining allowance
//! and Redis's `TIME` in microseconds are. The built-in scripts return
//! `{admitted, remaining, redis time us}` (`STANDARD_REPLY`); a script that
//! reads no Redis clock returns -1 in the time slot or is mapped with
//! `NO_TIME_REPLY`. A negative time is taken as "no time" for this decision.

use std::sync::Arc;

use async_trait::async_trait;

use super::{
    ClockSource, Decision, Info, Invocation, Kind, Options, Request, Script, ScriptArgs, Strategy,
};
use crate::conn::Conn;
use crate::error::{Error, Result};
use crate::resp::{Connection, Reply};

/// Writes KEYS and ARGV for one request into `ScriptArgs`:
/// `call.keys.push(ClientKey(req.client, "tb"))`, `call.args.push(req.cost)`.
pub type WriteCall = Box<dyn Fn(&Request<'_>, &mut ScriptArgs) + Send + Sync>;

/// Where the decision is in the reply array (0-based).
#[derive(Debug, Clone, Copy)]
pub struct ReplyMap {
    pub admitted: usize,
    pub remaining: Option<usize>,
    /// Redis's `TIME` in microseconds, as the script read it. Mapped exactly
    /// when the strategy's `Info::reports_redis_time` is true.
    pub redis_time_us: Option<usize>,
}

/// The built-in scripts' convention: `{admitted 0|1, remaining, redis time us}`.
pub const STANDARD_REPLY: ReplyMap = ReplyMap {
    admitted: 0,
    remaining: Some(1),
    redis_time_us: Some(2),
};

/// The same layout for scripts whose third slot is not Redis's time (the
/// caller's time, or -1): that slot is not read.
pub const NO_TIME_REPLY: ReplyMap = ReplyMap {
    admitted: 0,
    remaining: Some(1),
    redis_time_us: None,
};

pub struct LuaStrategy {
    info: Info,
    pub script: Script,
    pub mode: Invocation,
    write_call: WriteCall,
    reply: ReplyMap,
}

impl LuaStrategy {
    /// Returns the strategy ready to share (`Arc<dyn Strategy>`), which is
    /// what the registry wants. `opts` may carry `invocation`; other options
    /// are for `extra` to read (it gets the reader, and the info, for options
    /// that change what the strategy is, e.g. its clock), then unknown ones
    /// are rejected. `info.reports_redis_time` must agree with `reply`.
    #[allow(clippy::new_ret_no_self)]
    pub fn with_writer(
        mut info: Info,
        script: Script,
        reply: ReplyMap,
        opts: &Options,
        extra: impl FnOnce(&mut super::OptionReader<'_>, &mut Info) -> Result<WriteCall>,
    ) -> Result<Arc<dyn Strategy>> {
        // The reader borrows the name while `extra` may change the info.
        let name = info.name.clone();
        let mut r = opts.reader(&name);
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
        let write_call = extra(&mut r, &mut info)?;
        r.finish()?;
        if info.reports_redis_time != reply.redis_time_us.is_some() {
            return Err(Error::Other(format!(
                "{}: Info::reports_redis_time is {} but the reply map {} a Redis time slot",
                info.name,
                info.reports_redis_time,
                if reply.redis_time_us.is_some() {
                    "has"
                } else {
                    "has no"
                }
            )));
        }
        Ok(Arc::new(LuaStrategy {
            info,
            script,
            mode,
            write_call,
            reply,
        }))
    }

    /// Info for a built-in Lua strategy (all four modes) on `clock`; it
    /// reports Redis's time when it runs on Redis's clock.
    pub fn info(
        name: &str,
        keys: &str,
        clock: ClockSource,
        known_bug: Option<&'static str>,
    ) -> Info {
        Info {
            name: name.into(),
            kind: Kind::Lua,
            modes: Invocation::ALL.to_vec(),
            keys: keys.into(),
            atomic: true,
            known_bug,
            clock,
            reports_redis_time: clock == ClockSource::Redis,
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
        let mut call = ScriptArgs::take(conn);
        (self.write_call)(req, &mut call);
        let out = self.script.invoke(conn, self.mode, &call).await;
        call.give_back(conn);
        let (reply, fallbacks) = out?;
        // Positions are 1-based in messages, as in an external manifest's
        // `[reply]` table (the ReplyMap itself is 0-based).
        let items = match reply {
            Reply::Array(items) => items,
            other => {
                return Err(Error::Protocol(format!(
                    "strategy `{}`: the script must return an array ({{admitted, ...}}); Redis replied: {}",
                    self.info.name,
                    other.as_redis_cli()
                )));
            }
        };
        let admitted = reply_i64(&items, self.reply.admitted).ok_or_else(|| {
            Error::Protocol(format!(
                "strategy `{}`: no integer admitted flag at position {} of the reply (`reply.admitted = {}` \
                 in an external manifest); Redis replied: {}",
                self.info.name,
                self.reply.admitted + 1,
                self.reply.admitted + 1,
                Reply::Array(items.clone()).as_redis_cli()
            ))
        })?;
        Ok(Decision {
            admitted: admitted == 1,
            remaining: self.reply.remaining.and_then(|i| reply_i64(&items, i)),
            // A script that did not read Redis's clock puts -1 in that slot.
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
