//! `sliding-window-counter`: current + weighted previous window, one hash.

use super::lua::{LuaStrategy, STANDARD_REPLY};
use super::{Builtin, Options, Script, client_key};

pub const BUILTIN: Builtin = Builtin {
    name: "sliding-window-counter",
    build: |opts: &Options| {
        LuaStrategy::new(
            LuaStrategy::builtin_info(
                "sliding-window-counter",
                "rl:{client}:swc (hash: w, cur, prev)",
                None,
            ),
            Script::new(
                "sliding-window-counter",
                include_str!("../../lua/sliding-window-counter.lua"),
            ),
            STANDARD_REPLY,
            opts,
            |_| {
                Ok(Box::new(|req, keys, args| {
                    keys.push(client_key(req.client, "swc"));
                    args.push(req.limit.limit.to_string());
                    args.push(req.limit.window_ms.to_string());
                    args.push(req.cost.to_string());
                }))
            },
        )
    },
};
