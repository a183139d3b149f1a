//! `fixed-window-lua`: INCRBY + PEXPIRE of the current window's counter in a
//! script. The caller computes the window from its clock and declares the key.

use super::lua::{LuaStrategy, NO_TIME_REPLY};
use super::{Builtin, ClientKey, ClockSource, Options, Script, window_index};

pub const BUILTIN: Builtin = Builtin {
    name: "fixed-window-lua",
    build: |opts: &Options| {
        LuaStrategy::with_writer(
            LuaStrategy::info(
                "fixed-window-lua",
                "rl:{client}:fw:<window index> (counter)",
                ClockSource::Caller,
                None,
            ),
            Script::new(
                "fixed-window-lua",
                include_str!("../../../../lua/fixed-window-lua.lua"),
            ),
            // The script reads no clock and returns -1 in the time slot.
            NO_TIME_REPLY,
            opts,
            |_, _| {
                Ok(Box::new(|req, call| {
                    let w = window_index(req.now_us, req.limit.window_ms);
                    call.keys
                        .push(ClientKey(req.client, format_args!("fw:{w}")));
                    call.args.push(req.limit.limit);
                    call.args.push(req.limit.window_ms);
                    call.args.push(req.cost);
                }))
            },
        )
    },
};
