//! `token-bucket`: study B's token bucket on Redis's clock (`lua/token-bucket.lua`).

use super::lua::{LuaStrategy, STANDARD_REPLY};
use super::{Builtin, ClientKey, ClockSource, Options, Script};
use limitbench_base::promise::Promise;

pub const BUILTIN: Builtin = Builtin {
    name: "token-bucket",
    build: |opts: &Options| {
        LuaStrategy::with_writer(
            LuaStrategy::info(
                "token-bucket",
                "rl:{client}:tb (hash: tokens, ts)",
                ClockSource::Redis,
                None,
            )
            .with_promise(Promise::BurstOfCapacity),
            Script::new(
                "token-bucket",
                include_str!("../../../../lua/token-bucket.lua"),
            ),
            STANDARD_REPLY,
            opts,
            |_, _| {
                Ok(Box::new(|req, call| {
                    call.keys.push(ClientKey(req.client, "tb"));
                    call.args.push(req.limit.limit);
                    call.args.push(req.limit.rate_per_s);
                    call.args.push(req.cost);
                }))
            },
        )
    },
};
