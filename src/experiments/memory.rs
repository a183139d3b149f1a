//! `memory`: not written yet (placeholder so the registry is complete; it
//! fails with a clear error until the experiment lands).

use super::{Def, RunContext};
use crate::error::Error;

pub const EXPERIMENT: Def = Def {
    name: "memory",
    study: "B",
    claims: &["B3.1", "B3.2", "B3.3", "B3.4", "B4.3"],
    allows_external: false,
    run: |ctx: &RunContext| {
        Box::pin(async move {
            Err(Error::Other(format!(
                "experiment `{}` is not implemented yet",
                ctx.experiment
            )))
        })
    },
};
