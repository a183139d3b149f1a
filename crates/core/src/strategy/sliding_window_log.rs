//! `sliding-window-log`: a sorted set of admitted requests, unique members.
//! Option `member_len` (default 0): pad the request id to this many characters
//! (the studies do not say how long their members were; memory per entry
//! depends on it, so it is a parameter).

use super::lua::{LuaStrategy, STANDARD_REPLY};
use super::{Builtin, ClientKey, ClockSource, Options, Script};
use limitbench_base::promise::Promise;

pub const BUILTIN: Builtin = Builtin {
    name: "sliding-window-log",
    build: |opts: &Options| {
        LuaStrategy::with_writer(
            LuaStrategy::info(
                "sliding-window-log",
                "rl:{client}:swl (zset: request id -> redis time us)",
                ClockSource::Redis,
                None,
            )
            .with_promise(Promise::AtMostLimitInAnyWindow),
            Script::new(
                "sliding-window-log",
                include_str!("../../../../lua/sliding-window-log.lua"),
            ),
            STANDARD_REPLY,
            opts,
            |r, _| {
                let member_len: usize = r.get("member_len", 0)?;
                Ok(Box::new(move |req, call| {
                    call.keys.push(ClientKey(req.client, "swl"));
                    call.args.push(req.limit.limit);
                    call.args.push(req.limit.window_ms);
                    call.args.push(req.cost);
                    call.args.push(format_args!(
                        "{:0>width$}",
                        req.request_id,
                        width = member_len
                    ));
                }))
            },
        )
    },
};
