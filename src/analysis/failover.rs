//! Analysis of `failover`: not written yet (its claims report `not-run`).

use super::{AnalysisCtx, Measured, Section};
use crate::error::Result;

pub fn analyze(_ctx: &AnalysisCtx) -> Result<(Vec<Measured>, Section)> {
    Ok((
        vec![],
        Section {
            experiment: "failover".into(),
            markdown: "Not analyzed yet.\n".into(),
        },
    ))
}
