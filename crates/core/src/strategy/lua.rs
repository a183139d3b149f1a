//! `LuaStrategy`: one script plus how a request becomes KEYS and ARGV and how
//! the reply becomes a decision. Built-in Lua strategies and external ones
//! (manifest-driven) are both this type.
//!
//! How the reply is read is a `reply::ReplyRules`. The built-ins give it as
//! a `ReplyMap` of 0-based positions: the admitted flag (1 admitted, 0
//! refused, anything else an error that shows the reply), the remaining
//! allowance and Redis's `TIME` in microseconds. The built-in scripts return
//! `{admitted, remaining, redis time us}` (`STANDARD_REPLY`); a script that
//! reads no Redis clock returns -1 in the time slot or is mapped with
//! `NO_TIME_REPLY`. A negative time is taken as "no time" for this decision.
//! External manifests write rules (`reply[2] >= 0`, `reply <= ${limit}`).

use std::sync::Arc;

use async_trait::async_trait;

use super::{
    ClockSource, Decision, Info, Invocation, Kind, ModeSupport, Options, Request, Script,
    ScriptArgs, Strategy,
};
use crate::conn::Conn;
use crate::resp::Connection;
use limitbench_base::error::{Error, Result};

use super::reply::{ReplyRules, Rule};

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

impl From<ReplyMap> for ReplyRules {
    fn from(m: ReplyMap) -> Self {
        ReplyRules {
            admitted: Rule::flag_at(m.admitted),
            remaining: m.remaining.map(Rule::at),
            redis_time_us: m.redis_time_us.map(Rule::at),
        }
    }
}

pub struct LuaStrategy {
    info: Info,
    pub script: Script,
    pub mode: Invocation,
    write_call: WriteCall,
    reply: ReplyRules,
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
        reply: impl Into<ReplyRules>,
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
        let reply = reply.into();
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
            promise: None,
            window_whole_seconds: false,
            takes_cost: true,
        }
    }
}

#[async_trait]
impl Strategy for LuaStrategy {
    fn info(&self) -> &Info {
        &self.info
    }

    /// Loads the script and its function; a function that cannot run is
    /// an error only when this strategy runs by FCALL.
    async fn prepare(&self, node: &mut Connection) -> Result<()> {
        match self.script.load_for_modes(node).await? {
            Some(why) if self.mode == Invocation::Fcall => Err(Error::Other(format!(
                "strategy `{}` cannot run by fcall on this server: {why}; run it by {} instead (--opt invocation=...)",
                self.info.name,
                self.info
                    .modes
                    .iter()
                    .filter(|m| **m != Invocation::Fcall)
                    .map(|m| m.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
            _ => Ok(()),
        }
    }

    fn invocation(&self) -> Option<Invocation> {
        Some(self.mode)
    }

    fn reply_rules(&self) -> Option<&ReplyRules> {
        Some(&self.reply)
    }

    async fn mode_support(&self, node: &mut Connection) -> Result<Vec<ModeSupport>> {
        let fcall = self.script.load_for_modes(node).await?;
        Ok(self
            .info
            .modes
            .iter()
            .map(|&mode| ModeSupport {
                mode,
                problem: if mode == Invocation::Fcall {
                    fcall.clone()
                } else {
                    None
                },
            })
            .collect())
    }

    async fn decide(&self, conn: &mut Conn, req: &Request<'_>) -> Result<Decision> {
        if self.info.window_whole_seconds {
            self.info.accepts(&req.limit).map_err(Error::Other)?;
        }
        self.info.accepts_cost(req.cost).map_err(Error::Other)?;
        let mut call = ScriptArgs::take(conn);
        (self.write_call)(req, &mut call);
        let out = self.script.invoke(conn, self.mode, &call).await;
        call.give_back(conn);
        let (reply, fallbacks) = out?;
        // Every rule failure names the field, the rule and the reply.
        let fail = |field: &str, rule: &Rule, p: super::reply::Problem| {
            Error::Protocol(format!(
                "strategy `{}`: reply.{field} = {} cannot be applied: {}; Redis replied: {}",
                self.info.name,
                rule.text(),
                p.0,
                reply.as_redis_cli()
            ))
        };
        let r = &self.reply;
        let admitted = r
            .admitted
            .admitted(&reply, req)
            .map_err(|p| fail("admitted", &r.admitted, p))?;
        let number = |field: &str, rule: &Option<Rule>| -> Result<Option<i64>> {
            match rule {
                None => Ok(None),
                Some(rule) => Ok(rule
                    .number(&reply, req)
                    .map_err(|p| fail(field, rule, p))?
                    .map(|x| x.floor() as i64)),
            }
        };
        Ok(Decision {
            admitted,
            remaining: number("remaining", &r.remaining)?,
            // A script that did not read Redis's clock puts -1 (or nil) in that slot.
            redis_time_us: number("redis_time_us", &r.redis_time_us)?.filter(|t| *t >= 0),
            noscript_fallbacks: fallbacks,
            ..Default::default()
        })
    }
}
