//! `retries`: not written yet (placeholder so the registry is complete; it
//! fails with a clear error until the experiment lands).

use super::{Def, RunContext};
use crate::error::Error;

pub const EXPERIMENT: Def = Def {
    name: "retries",
    study: "A",
    claims: &["A2.1", "A2.2", "A2.3"],
    allows_external: true,
    run: |ctx: &RunContext| {
        Box::pin(async move {
            Err(Error::Other(format!(
                "experiment `{}` is not implemented yet",
                ctx.experiment
            )))
        })
    },
};
