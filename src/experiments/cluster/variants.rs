//! The `cluster` script variants: the derived-key script with a plain or
//! hash-tagged base key, or the declared-key one, each with a `flags` first
//! line; the keys a variant writes and the strategy that runs it.

use std::sync::Arc;

use limitbench_base::error::{Error, Result};
use limitbench_core::strategy::lua::{LuaStrategy, NO_TIME_REPLY, STANDARD_REPLY};
use limitbench_core::strategy::{
    ClockSource, Options, Request, Script, ScriptArgs, Strategy, client_key, window_index,
};

/// The shebang line for a `flags` value (`none`: no line at all).
pub fn shebang(flags: &str) -> Result<&'static str> {
    match flags {
        "none" => Ok(""),
        "lua" => Ok("#!lua\n"),
        "allow-cross-slot" => Ok("#!lua flags=allow-cross-slot-keys\n"),
        other => Err(Error::Other(format!(
            "cluster: unknown flags `{other}` (none, lua, allow-cross-slot)"
        ))),
    }
}

/// A variant's base key (what goes in `KEYS[1]`) and the key the script really writes.
pub fn variant_keys(variant: &str, user: &str, window: i64) -> (String, String) {
    match variant {
        "derived-plain" => {
            let b = format!("{}rl:{user}:fwd", limitbench_core::namespace::namespace());
            (b.clone(), format!("{b}:{window}"))
        }
        "derived-tagged" => {
            let b = format!(
                "{}rl:{{{user}}}:fwd",
                limitbench_core::namespace::namespace()
            );
            (b.clone(), format!("{b}:{window}"))
        }
        _ => {
            let k = client_key(user, &format!("fw:{window}"));
            (k.clone(), k)
        }
    }
}

/// The strategy for a variant, its Lua source with the `flags` first line.
pub fn variant_strategy(variant: &str, flags: &str) -> Result<Arc<dyn Strategy>> {
    let source = match variant {
        "derived-plain" | "derived-tagged" => {
            include_str!("../../../lua/fixed-window-derived-key.lua")
        }
        "declared" => include_str!("../../../lua/fixed-window-lua.lua"),
        other => {
            return Err(Error::Other(format!(
                "cluster: unknown variant `{other}` (derived-plain, derived-tagged, declared)"
            )));
        }
    };
    let name = format!("cluster-{variant}-{flags}");
    let script = Script::new(&name, &format!("{}{source}", shebang(flags)?));
    let variant = variant.to_string();
    // The derived-key script reads Redis's clock and returns it; the
    // declared-key one (fixed-window-lua) reads none.
    let (clock, reply) = if variant == "declared" {
        (ClockSource::Caller, NO_TIME_REPLY)
    } else {
        (ClockSource::Redis, STANDARD_REPLY)
    };
    LuaStrategy::with_writer(
        LuaStrategy::info(&name, "see variant_keys", clock, None),
        script,
        reply,
        &Options::default().with("invocation", "evalsha"),
        move |_, _| {
            Ok(Box::new(move |req: &Request<'_>, call: &mut ScriptArgs| {
                let w = window_index(req.now_us, req.limit.window_ms);
                call.keys.push(&variant_keys(&variant, req.client, w).0);
                call.args.push(req.limit.limit);
                call.args.push(req.limit.window_ms);
                call.args.push(req.cost);
            }))
        },
    )
}
