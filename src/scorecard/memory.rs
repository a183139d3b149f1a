//! Memory per busy client: 20 clients each taken to their limit (100 per
//! 60 s, the scorecard's default; a log keeps one entry per admission), then
//! the MEMORY USAGE of every key of theirs, summed and divided by the
//! clients. At quick size and above, the same at a limit of 1,000 gives the
//! growth with the limit.

use super::cost::spray;
use super::{Bench, Outcome};
use crate::check::keys_containing;
use crate::error::Result;
use crate::run::Size;
use crate::strategy::Limit;

/// Bytes per client for `clients` clients at `limit`: (bytes, keys).
async fn at_limit(b: &Bench<'_>, limit: u64, clients: usize) -> Result<(f64, usize)> {
    let base = b.client(&format!("mem{limit}"));
    let names: Vec<String> = (0..clients).map(|i| format!("{base}-{i}")).collect();
    let sp = spray(
        b.addr(),
        &b.strategy,
        &names,
        Limit::per_window(limit, 60_000),
        4,
        Some(limit * clients as u64),
        None,
    )
    .await?;
    if sp.errors > 0 {
        return Err(crate::Error::Other(format!(
            "{} of {} decisions failed: {}",
            sp.errors,
            sp.decisions,
            sp.first_error.unwrap_or_default()
        )));
    }
    let mut total = 0i64;
    let mut n = 0;
    for mut node in b.fleet.node_connections().await? {
        for k in keys_containing(&mut node, &base).await? {
            let r = node
                .call(&crate::args![
                    "MEMORY",
                    "USAGE",
                    k.as_str(),
                    "SAMPLES",
                    0u64
                ])
                .await?;
            total += r.as_i64().unwrap_or(0);
            n += 1;
        }
    }
    Ok((total as f64 / clients as f64, n))
}

pub async fn per_client(b: &Bench<'_>) -> Result<Outcome> {
    let (bytes, keys) = at_limit(b, 100, 20).await?;
    let growth = if b.size() == Size::Smoke {
        "growth with the limit: not run at size smoke".to_string()
    } else {
        let (big, _) = at_limit(b, 1000, 5).await?;
        format!(
            "at a limit of 1000: {big:.0} B per client ({:.1}x)",
            big / bytes.max(1.0)
        )
    };
    Ok(Outcome::at_most(
        bytes,
        "B",
        1024.0,
        16384.0,
        format!(
            "20 clients at their limit of 100 per 60 s: {keys} keys, {bytes:.0} B per client (MEMORY USAGE SAMPLES 0); {growth}"
        ),
    ))
}
