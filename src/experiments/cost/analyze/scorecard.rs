//! `cost`'s scorecard columns: its probe's rows, read back from a
//! strategy's probe folder, -> each column's value, verdict and detail
//! (the judge's threshold beside each). Shared pieces: `limitbench_analysis::scorecard`.

use limitbench_plot::figure::num;

use super::super::rows;
use limitbench_analysis::scorecard::{
    CellOutcome, ColumnOutcome, ProbeRows, UNDER_PASS, failed, first_line, one, under_verdict,
    worse,
};
use limitbench_base::error::{Error, Result};

/// The scorecard columns this experiment's probe fills, in the table's order.
pub const COLUMNS: &[&str] = &["cost-x-get", "decisions-per-s"];

/// `cost-x-get`: Redis CPU per decision / GET's (`cost`'s ratio, the
/// replay loop, Redis and the load pinned), at most 3 to pass, 10 to warn;
/// `decisions-per-s`: decisions/s / GETs/s, at least 0.5 to pass, 0.2 to
/// warn.
pub fn judge(r: &ProbeRows) -> Vec<ColumnOutcome> {
    let columns = COLUMNS;
    let rows: Vec<rows::CostRow> = match r.read("cost.csv") {
        Ok(v) => v,
        Err(e) => return failed(columns, e),
    };
    let read = || -> Result<(&rows::CostRow, &rows::CostRow, (f64, f64))> {
        let get = one(&rows, "for GET", |x| {
            x.strategy == "get" && x.invocation == "command"
        })?;
        let mine = one(&rows, &format!("for `{}`", r.strategy), |x| {
            x.strategy == r.strategy && x.traffic == "uniform" && x.prefill_entries == 0
        })?;
        let v = super::Variants::of(&rows);
        let ratios = super::against_get(&v, &mine.cell)
            .ok_or_else(|| Error::Other("no ratio to GET".into()))?;
        Ok((get, mine, ratios))
    };
    match read() {
        Err(e) => failed(columns, e),
        // A window with errors did not measure decisions (an error reply is cheap).
        Ok((_, mine, _)) if mine.errors > 0 => {
            let e = Error::Other(format!(
                "{} of {} decisions errored: {}",
                mine.errors,
                mine.decisions,
                first_line(&mine.first_error)
            ));
            failed(columns, e)
        }
        Ok((get, mine, (x_cpu, x_rate))) => {
            let admitted = mine.admitted as f64 / mine.decisions.max(1) as f64;
            let mut cells = vec![
                (
                    columns[0],
                    Ok(CellOutcome::at_most(
                        x_cpu,
                        "x GET",
                        3.0,
                        10.0,
                        format!(
                            "{} us Redis CPU per decision ({} by {}, {} decisions, Redis {} % busy) vs {} us per GET ({} GETs, {} % busy); {} connections replaying, {} s windows, Redis on CPU {} and the load on CPU {}",
                            num(mine.redis_cpu_us_per_decision),
                            mine.strategy,
                            mine.invocation,
                            mine.decisions,
                            num(100.0 * mine.redis_busy_fraction),
                            num(get.redis_cpu_us_per_decision),
                            get.decisions,
                            num(100.0 * get.redis_busy_fraction),
                            mine.conns,
                            num(mine.wall_s),
                            mine.redis_cpu.map(|c| c.to_string()).unwrap_or("-".into()),
                            mine.load_cpu.map(|c| c.to_string()).unwrap_or("-".into()),
                        ),
                    )),
                ),
                (
                    columns[1],
                    Ok(CellOutcome::at_least(
                        x_rate,
                        "x GET/s",
                        0.5,
                        0.2,
                        format!(
                            "{} decisions/s vs {} GETs/s ({} connections, closed loop, one process on this machine)",
                            num(mine.decisions_per_s.round()),
                            num(get.decisions_per_s.round()),
                            mine.conns
                        ),
                    )),
                ),
            ];
            // At a limit the traffic never reaches every decision is an admission.
            if admitted < UNDER_PASS {
                for (_, c) in cells.iter_mut() {
                    if let Ok(CellOutcome::Measured {
                        verdict, detail, ..
                    }) = c
                    {
                        *verdict = worse(*verdict, under_verdict(admitted));
                        *detail = format!(
                            "under-admits: {} of {} decisions admitted at a limit of {} per {} ms it never reaches; {detail}",
                            mine.admitted, mine.decisions, mine.limit, mine.window_ms
                        );
                    }
                }
            }
            cells
        }
    }
}
