//! `sliding-window-log`: a sorted set of admitted requests, unique members.
//! Option `member_len` (default 0): pad the request id to this many characters
//! (the studies do not say how long their members were; memory per entry
//! depends on it, so it is a parameter).

use super::lua::{LuaStrategy, STANDARD_REPLY};
use super::{Builtin, Options, Script, client_key};

pub const BUILTIN: Builtin = Builtin {
    name: "sliding-window-log",
    build: |opts: &Options| {
        LuaStrategy::new(
            LuaStrategy::builtin_info(
                "sliding-window-log",
                "rl:{client}:swl (zset: request id -> redis time us)",
                None,
            ),
            Script::new(
                "sliding-window-log",
                include_str!("../../lua/sliding-window-log.lua"),
            ),
            STANDARD_REPLY,
            opts,
            |r| {
                let member_len: usize = r.get("member_len", 0)?;
                Ok(Box::new(move |req, keys, args| {
                    keys.push(client_key(req.client, "swl"));
                    args.push(req.limit.limit.to_string());
                    args.push(req.limit.window_ms.to_string());
                    args.push(req.cost.to_string());
                    args.push(format!("{:0>width$}", req.request_id, width = member_len));
                }))
            },
        )
    },
};
