//! `sliding-window-counter`: current + weighted previous window, one hash.

use super::lua::{LuaStrategy, STANDARD_REPLY};
use super::{Builtin, ClientKey, ClockSource, Options, Script};
use limitbench_base::promise::Promise;

pub const BUILTIN: Builtin = Builtin {
    name: "sliding-window-counter",
    build: |opts: &Options| {
        LuaStrategy::with_writer(
            LuaStrategy::info(
                "sliding-window-counter",
                "rl:{client}:swc (hash: w, cur, prev)",
                ClockSource::Redis,
                None,
            )
            .with_promise(Promise::AtMostLimitInAnyWindow),
            Script::new(
                "sliding-window-counter",
                include_str!("../../../../lua/sliding-window-counter.lua"),
            ),
            STANDARD_REPLY,
            opts,
            |_, _| {
                Ok(Box::new(|req, call| {
                    call.keys.push(ClientKey(req.client, "swc"));
                    call.args.push(req.limit.limit);
                    call.args.push(req.limit.window_ms);
                    call.args.push(req.cost);
                }))
            },
        )
    },
};
