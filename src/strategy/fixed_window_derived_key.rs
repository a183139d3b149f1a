//! `fixed-window-derived-key`: THE CLUSTER BUG. The script builds its window
//! key from KEYS[1] and Redis's clock, so the key it writes is not declared.
//! Option `hash_tag` (default false): base key `rl:{client}:fwd` instead of
//! `rl:client:fwd`, which keeps the derived keys in the base key's slot.

use super::lua::{LuaStrategy, STANDARD_REPLY};
use super::{Builtin, Options, Script};

pub const BUILTIN: Builtin = Builtin {
    name: "fixed-window-derived-key",
    build: |opts: &Options| {
        LuaStrategy::new(
            LuaStrategy::builtin_info(
                "fixed-window-derived-key",
                "rl:client:fwd:<window index> (counter; built inside the script, undeclared)",
                Some(
                    "writes a key it does not declare: fails on Redis Cluster when that key lives on another node",
                ),
            ),
            Script::new(
                "fixed-window-derived-key",
                include_str!("../../lua/fixed-window-derived-key.lua"),
            ),
            STANDARD_REPLY,
            opts,
            |r| {
                let tagged: bool = r.get("hash_tag", false)?;
                Ok(Box::new(move |req, keys, args| {
                    keys.push(if tagged {
                        format!("rl:{{{}}}:fwd", req.client)
                    } else {
                        format!("rl:{}:fwd", req.client)
                    });
                    args.push(req.limit.limit.to_string());
                    args.push(req.limit.window_ms.to_string());
                    args.push(req.cost.to_string());
                }))
            },
        )
    },
};
