//! `fixed-window-lua`: INCRBY + PEXPIRE of the current window's counter in a
//! script. The caller computes the window from its clock and declares the key.

use super::lua::{LuaStrategy, STANDARD_REPLY};
use super::{Builtin, Options, Script, client_key, window_index};

pub const BUILTIN: Builtin = Builtin {
    name: "fixed-window-lua",
    build: |opts: &Options| {
        LuaStrategy::new(
            LuaStrategy::builtin_info(
                "fixed-window-lua",
                "rl:{client}:fw:<window index> (counter)",
                None,
            ),
            Script::new(
                "fixed-window-lua",
                include_str!("../../lua/fixed-window-lua.lua"),
            ),
            STANDARD_REPLY,
            opts,
            |_| {
                Ok(Box::new(|req, keys, args| {
                    let w = window_index(req.now_us, req.limit.window_ms);
                    keys.push(client_key(req.client, &format!("fw:{w}")));
                    args.push(req.limit.limit.to_string());
                    args.push(req.limit.window_ms.to_string());
                    args.push(req.cost.to_string());
                }))
            },
        )
    },
};
