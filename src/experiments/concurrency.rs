//! `concurrency`: not written yet (placeholder so the registry is complete; it
//! fails with a clear error until the experiment lands).

use super::{Def, RunContext};
use crate::error::Error;

pub const EXPERIMENT: Def = Def {
    name: "concurrency",
    study: "A",
    claims: &["A0", "A1.1", "A1.2", "A3.0"],
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
