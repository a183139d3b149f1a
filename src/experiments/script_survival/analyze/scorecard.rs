//! `script_survival`'s scorecard columns: its probe's rows, read back from a
//! strategy's probe folder, -> each column's value, verdict and detail
//! (the judge's threshold beside each). Shared pieces: `limitbench_analysis::scorecard`.

use super::super::rows;
use limitbench_analysis::scorecard::{CellOutcome, ColumnOutcome, ProbeRows, failed, first_line};
use limitbench_base::error::Error;

/// The scorecard columns this experiment's probe fills, in the table's order.
pub const COLUMNS: &[&str] = &["survive-restart", "survive-promotion"];

/// `survive-restart`, `survive-promotion`: the fraction of the strategy's
/// invocation modes whose client decided after the restart / on the
/// promoted replica: 1 to pass, above 0 to warn.
pub fn judge(r: &ProbeRows) -> Vec<ColumnOutcome> {
    let columns = [
        (
            "survive-restart",
            "restart",
            "after SHUTDOWN SAVE and a restart",
        ),
        (
            "survive-promotion",
            "promoted",
            "on the replica promoted after its primary was killed",
        ),
    ];
    let rows: Vec<rows::Row> = match r.read("script-survival.csv") {
        Ok(v) => v,
        Err(e) => return failed(&columns.map(|c| c.0), e),
    };
    columns
        .iter()
        .map(|&(column, scenario, what)| {
            let clients: Vec<&rows::Row> = rows
                .iter()
                .filter(|x| {
                    x.scenario == scenario
                        && x.script == r.strategy
                        && x.check.starts_with("client:")
                })
                .collect();
            if clients.is_empty() {
                let e = format!("the probe wrote no client row of scenario `{scenario}`");
                return (column, Err(Error::Other(e)));
            }
            let ok = clients.iter().filter(|x| x.ok).count();
            // Modes the server said the strategy cannot run are not scored.
            let unrunnable: Vec<String> = rows
                .iter()
                .filter(|x| x.script == r.strategy && x.check.starts_with("unrunnable:"))
                .map(|x| {
                    format!(
                        "{} not scored ({})",
                        x.check.trim_start_matches("unrunnable:"),
                        first_line(&x.reply)
                    )
                })
                .collect();
            let detail = clients
                .iter()
                .map(|x| {
                    let mode = x.check.trim_start_matches("client:");
                    if x.ok {
                        format!("{mode}: ok")
                    } else {
                        format!("{mode}: {}", first_line(&x.reply))
                    }
                })
                .collect::<Vec<_>>()
                .join("; ");
            (
                column,
                Ok(CellOutcome::at_least(
                    ok as f64 / clients.len() as f64,
                    "fraction of modes",
                    1.0,
                    0.01,
                    if unrunnable.is_empty() {
                        format!("{what}: {detail}")
                    } else {
                        format!("{what}: {detail}; {}", unrunnable.join("; "))
                    },
                )),
            )
        })
        .collect()
}
