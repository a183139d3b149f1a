//! `sliding-log-ts-member`: THE TIMESTAMP-MEMBER BUG: `ZADD key now now`.
//! Option `member_clock`: `redis-ms` (default), `redis-us` or `caller-ms`.

use super::lua::{LuaStrategy, STANDARD_REPLY};
use super::{Builtin, Options, Script, client_key};

pub const BUILTIN: Builtin = Builtin {
    name: "sliding-log-ts-member",
    build: |opts: &Options| {
        LuaStrategy::new(
            LuaStrategy::builtin_info(
                "sliding-log-ts-member",
                "rl:{client}:tsm (zset: timestamp -> timestamp)",
                Some(
                    "the timestamp is the member: requests in the same tick share one entry and the log undercounts",
                ),
            ),
            Script::new(
                "sliding-log-ts-member",
                include_str!("../../lua/sliding-log-ts-member.lua"),
            ),
            STANDARD_REPLY,
            opts,
            |r| {
                let clock = r.one_of(
                    "member_clock",
                    "redis-ms",
                    &["redis-ms", "redis-us", "caller-ms"],
                )?;
                Ok(Box::new(move |req, keys, args| {
                    keys.push(client_key(req.client, "tsm"));
                    args.push(req.limit.limit.to_string());
                    args.push(req.limit.window_ms.to_string());
                    args.push(req.cost.to_string());
                    args.push(clock.to_string());
                    args.push(req.now_us.div_euclid(1000).to_string());
                }))
            },
        )
    },
};
