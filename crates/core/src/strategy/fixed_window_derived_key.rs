//! `fixed-window-derived-key`: THE CLUSTER BUG. The script builds its window
//! key from KEYS[1] and Redis's clock, so the key it writes is not declared.
//! Option `hash_tag` (default false): base key `rl:{client}:fwd` instead of
//! `rl:client:fwd`, which keeps the derived keys in the base key's slot.

use super::lua::{LuaStrategy, STANDARD_REPLY};
use super::{Builtin, ClientKey, ClockSource, Options, Script};

pub const BUILTIN: Builtin = Builtin {
    name: "fixed-window-derived-key",
    build: |opts: &Options| {
        LuaStrategy::with_writer(
            LuaStrategy::info(
                "fixed-window-derived-key",
                "rl:client:fwd:<window index> (counter; built inside the script, undeclared)",
                ClockSource::Redis,
                Some(
                    "writes a key it does not declare: fails on Redis Cluster when that key lives on another node",
                ),
            ),
            Script::new(
                "fixed-window-derived-key",
                include_str!("../../../../lua/fixed-window-derived-key.lua"),
            ),
            STANDARD_REPLY,
            opts,
            |r, _| {
                let tagged: bool = r.get("hash_tag", false)?;
                Ok(Box::new(move |req, call| {
                    if tagged {
                        call.keys.push(ClientKey(req.client, "fwd"));
                    } else {
                        call.keys.push(crate::namespace::Namespaced(format_args!(
                            "rl:{}:fwd",
                            req.client
                        )));
                    }
                    call.args.push(req.limit.limit);
                    call.args.push(req.limit.window_ms);
                    call.args.push(req.cost);
                }))
            },
        )
    },
};
