//! `script-survival`: not written yet (placeholder so the registry is complete; it
//! fails with a clear error until the experiment lands).

use super::{Def, RunContext};
use crate::error::Error;

pub const EXPERIMENT: Def = Def {
    name: "script-survival",
    study: "B",
    claims: &["B6.2", "B6.3", "B6.4", "B6.5"],
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
