//! `gcra`: generic cell rate algorithm on Redis's clock, one key.
//! Burst = `limit`, emission interval = 1 / `rate_per_s`.

use super::lua::{LuaStrategy, STANDARD_REPLY};
use super::{Builtin, Options, Script, client_key};

pub const BUILTIN: Builtin = Builtin {
    name: "gcra",
    build: |opts: &Options| {
        LuaStrategy::new(
            LuaStrategy::builtin_info(
                "gcra",
                "rl:{client}:gcra (string: theoretical arrival time us)",
                None,
            ),
            Script::new("gcra", include_str!("../../lua/gcra.lua")),
            STANDARD_REPLY,
            opts,
            |_| {
                Ok(Box::new(|req, keys, args| {
                    keys.push(client_key(req.client, "gcra"));
                    args.push(req.limit.limit.to_string());
                    args.push(req.limit.rate_per_s.to_string());
                    args.push(req.cost.to_string());
                }))
            },
        )
    },
};
