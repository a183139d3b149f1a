//! `cost`: not written yet (placeholder so the registry is complete; it
//! fails with a clear error until the experiment lands).

use super::{Def, RunContext};
use crate::error::Error;

pub const EXPERIMENT: Def = Def {
    name: "cost",
    study: "B",
    claims: &["B0", "B2.1", "B2.2", "B2.3", "B2.4", "B2.5", "B2.6", "B6.1"],
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
