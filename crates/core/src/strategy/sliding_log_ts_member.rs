//! `sliding-log-ts-member`: THE TIMESTAMP-MEMBER BUG: `ZADD key now now`.
//! Option `member_clock`: `redis-ms` (default), `redis-us` or `caller-ms`.
//! With `caller-ms` the entries are stamped and trimmed on the caller's
//! clock (`Info::clock` is then `Caller`); the script reads and returns
//! Redis's `TIME` in every mode, so it always reports Redis's time.

use super::lua::{LuaStrategy, STANDARD_REPLY};
use super::{Builtin, ClientKey, ClockSource, Options, Script};
use limitbench_base::promise::Promise;

pub const BUILTIN: Builtin = Builtin {
    name: "sliding-log-ts-member",
    build: |opts: &Options| {
        LuaStrategy::with_writer(
            LuaStrategy::info(
                "sliding-log-ts-member",
                "rl:{client}:tsm (zset: timestamp -> timestamp)",
                ClockSource::Redis,
                Some(
                    "the timestamp is the member: requests in the same tick share one entry and the log undercounts",
                ),
            )
            .with_promise(Promise::AtMostLimitInAnyWindow),
            Script::new(
                "sliding-log-ts-member",
                include_str!("../../../../lua/sliding-log-ts-member.lua"),
            ),
            STANDARD_REPLY,
            opts,
            |r, info| {
                let clock = r.one_of(
                    "member_clock",
                    "redis-ms",
                    &["redis-ms", "redis-us", "caller-ms"],
                )?;
                if clock == "caller-ms" {
                    info.clock = ClockSource::Caller;
                }
                Ok(Box::new(move |req, call| {
                    call.keys.push(ClientKey(req.client, "tsm"));
                    call.args.push(req.limit.limit);
                    call.args.push(req.limit.window_ms);
                    call.args.push(req.cost);
                    call.args.push(clock);
                    call.args.push(req.now_us.div_euclid(1000));
                }))
            },
        )
    },
};
