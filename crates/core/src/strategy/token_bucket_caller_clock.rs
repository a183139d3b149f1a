//! `token-bucket-caller-clock`: the token bucket with "now" from the caller's
//! clock (`Request::now_us`, which the harness may skew per worker).

use super::lua::{LuaStrategy, NO_TIME_REPLY};
use super::{Builtin, ClientKey, ClockSource, Options, Script};
use limitbench_base::promise::Promise;

pub const BUILTIN: Builtin = Builtin {
    name: "token-bucket-caller-clock",
    build: |opts: &Options| {
        LuaStrategy::with_writer(
            LuaStrategy::info(
                "token-bucket-caller-clock",
                "rl:{client}:tbc (hash: tokens, ts)",
                ClockSource::Caller,
                Some(
                    "the caller supplies the time: skewed callers make negative refills that drain the bucket",
                ),
            )
            .with_promise(Promise::BurstOfCapacity),
            Script::new(
                "token-bucket-caller-clock",
                include_str!("../../../../lua/token-bucket-caller-clock.lua"),
            ),
            // The third slot is the caller's time, not Redis's: not read.
            NO_TIME_REPLY,
            opts,
            |_, _| {
                Ok(Box::new(|req, call| {
                    call.keys.push(ClientKey(req.client, "tbc"));
                    call.args.push(req.limit.limit);
                    call.args.push(req.limit.rate_per_s);
                    call.args.push(req.cost);
                    call.args.push(req.now_us.div_euclid(1000));
                }))
            },
        )
    },
};
