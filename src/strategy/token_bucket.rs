//! `token-bucket`: study B's token bucket on Redis's clock (`lua/token-bucket.lua`).

use super::lua::{LuaStrategy, STANDARD_REPLY};
use super::{Builtin, Options, Script, client_key};

pub const BUILTIN: Builtin = Builtin {
    name: "token-bucket",
    build: |opts: &Options| {
        LuaStrategy::new(
            LuaStrategy::builtin_info("token-bucket", "rl:{client}:tb (hash: tokens, ts)", None),
            Script::new("token-bucket", include_str!("../../lua/token-bucket.lua")),
            STANDARD_REPLY,
            opts,
            |_| {
                Ok(Box::new(|req, keys, args| {
                    keys.push(client_key(req.client, "tb"));
                    args.push(req.limit.limit.to_string());
                    args.push(req.limit.rate_per_s.to_string());
                    args.push(req.cost.to_string());
                }))
            },
        )
    },
};
