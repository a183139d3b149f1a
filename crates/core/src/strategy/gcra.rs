//! `gcra`: generic cell rate algorithm on Redis's clock, one key.
//! Burst = `limit`, emission interval = 1 / `rate_per_s`.

use super::lua::{LuaStrategy, STANDARD_REPLY};
use super::{Builtin, ClientKey, ClockSource, Options, Script};
use limitbench_base::promise::Promise;

pub const BUILTIN: Builtin = Builtin {
    name: "gcra",
    build: |opts: &Options| {
        LuaStrategy::with_writer(
            LuaStrategy::info(
                "gcra",
                "rl:{client}:gcra (string: theoretical arrival time us)",
                ClockSource::Redis,
                None,
            )
            .with_promise(Promise::BurstOfCapacity),
            Script::new("gcra", include_str!("../../../../lua/gcra.lua")),
            STANDARD_REPLY,
            opts,
            |_, _| {
                Ok(Box::new(|req, call| {
                    call.keys.push(ClientKey(req.client, "gcra"));
                    call.args.push(req.limit.limit);
                    call.args.push(req.limit.rate_per_s);
                    call.args.push(req.cost);
                }))
            },
        )
    },
};
