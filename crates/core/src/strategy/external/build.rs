//! The strategy a manifest builds (`Manifest::build`): a `LuaStrategy`
//! running its script, whose KEYS and ARGV are its templates rendered for
//! each request.

use std::sync::Arc;

use super::Manifest;
use super::template::{Rendered, describe};
use crate::strategy::lua::LuaStrategy;
use crate::strategy::{Info, Kind, Options, Script, Strategy};
use limitbench_base::error::Result;

impl Manifest {
    pub fn build(&self, opts: &Options) -> Result<Arc<dyn Strategy>> {
        let keys_doc = self
            .keys
            .iter()
            .map(describe)
            .collect::<Vec<_>>()
            .join(", ");
        let info = Info {
            name: self.name.clone(),
            kind: Kind::External,
            modes: self.modes.clone(),
            keys: keys_doc,
            atomic: true,
            known_bug: None,
            clock: self.clock,
            reports_redis_time: self.reply.redis_time_us.is_some(),
            promise: self.promise,
            window_whole_seconds: self
                .keys
                .iter()
                .chain(&self.args)
                .any(|t| t.uses("window_s_int")),
            takes_cost: self.takes_cost(),
        };
        let (keys, args) = (self.keys.clone(), self.args.clone());
        LuaStrategy::with_writer(
            info,
            Script::new(&self.name, &self.source),
            self.reply.clone(),
            opts,
            move |_, _| {
                Ok(Box::new(move |req, call| {
                    keys.iter().for_each(|t| {
                        call.keys
                            .push(crate::namespace::Namespaced(Rendered(t, req)))
                    });
                    args.iter().for_each(|t| call.args.push(Rendered(t, req)));
                }))
            },
        )
    }
}
