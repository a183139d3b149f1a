//! `bursts`: not written yet (placeholder so the registry is complete; it
//! fails with a clear error until the experiment lands).

use super::{Def, RunContext};
use crate::error::Error;

pub const EXPERIMENT: Def = Def {
    name: "bursts",
    study: "A",
    claims: &["A3.1", "A3.2", "A3.3", "A3.4"],
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
