//! `token-bucket-caller-clock`: the token bucket with "now" from the caller's
//! clock (`Request::now_us`, which the harness may skew per worker).

use super::lua::{LuaStrategy, ReplyMap};
use super::{Builtin, Options, Script, client_key};

pub const BUILTIN: Builtin = Builtin {
    name: "token-bucket-caller-clock",
    build: |opts: &Options| {
        LuaStrategy::new(
            LuaStrategy::builtin_info(
                "token-bucket-caller-clock",
                "rl:{client}:tbc (hash: tokens, ts)",
                Some(
                    "the caller supplies the time: skewed callers make negative refills that drain the bucket",
                ),
            ),
            Script::new(
                "token-bucket-caller-clock",
                include_str!("../../lua/token-bucket-caller-clock.lua"),
            ),
            // The third slot is the caller's time, not Redis's: not a Redis time.
            ReplyMap {
                admitted: 0,
                remaining: Some(1),
                redis_time_us: None,
            },
            opts,
            |_| {
                Ok(Box::new(|req, keys, args| {
                    keys.push(client_key(req.client, "tbc"));
                    args.push(req.limit.limit.to_string());
                    args.push(req.limit.rate_per_s.to_string());
                    args.push(req.cost.to_string());
                    args.push(req.now_us.div_euclid(1000).to_string());
                }))
            },
        )
    },
};
