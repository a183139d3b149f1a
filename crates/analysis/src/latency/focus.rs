//! Percentile plots where latency is the point, each like with like:
//!
//! - WATCH vs Lua (`retries`): per round trip, the Lua fixed window and
//!   WATCH/MULTI at three retry budgets, at the same worker count with
//!   the default retry details (no pause, retries only counted, all at
//!   once, no jitter): the cells A2.1 and A2.2 are judged at.
//! - The fail-open deadline (`fail-open`): every decision of a policy
//!   through all four phases (normal, slow, gone, back) against the
//!   deadline the policy gives Redis, drawn; from the send
//!   (`fail-open-latency.csv`) and, where the run kept every decision's
//!   intended send time (`fail-open-history.csv`), from the schedule
//!   (corrected for coordinated omission, as `open_loop` reads it).

use std::collections::BTreeMap;

use crate::AnalysisCtx;
use crate::experiments::fail_open::rows::SummaryRow;
use crate::experiments::rows::HistoryRow;
use crate::figure::{Axis, Figure, Panel, Reference};
use crate::latency::closed::{MAX_LINES, span};
use crate::latency::hist::{MergedLatency, figure_with_table, merge_by, nines_series};
use crate::latency::open_loop::from_send_and_schedule;
use crate::rows::LatencyRow;
use limitbench_base::error::Result;

fn x_axis() -> Axis {
    Axis::nines("percentile")
}

/// A retries cell's parts: (budget or None for the Lua baseline, round
/// trip, workers) for the cells at the default retry details only.
pub fn retries_cell(cell: &str) -> Option<(Option<u64>, String, u64)> {
    let parts: Vec<&str> = cell.split('/').collect();
    let workers = |c: &str| c.strip_prefix('c')?.parse::<u64>().ok();
    match parts.as_slice() {
        ["watch-multi", b, "fixed-0", "first-free", rtt, c] => Some((
            Some(b.strip_prefix('b')?.parse().ok()?),
            rtt.strip_prefix("rtt")?.to_string(),
            workers(c)?,
        )),
        [s, rtt, c] if *s != "watch-multi" => {
            Some((None, rtt.strip_prefix("rtt")?.to_string(), workers(c)?))
        }
        _ => None,
    }
}

/// The budgets drawn beside the Lua line: the smallest, the middle one
/// and the largest (at most `MAX_LINES - 1`).
pub fn budgets_drawn(mut budgets: Vec<u64>) -> Vec<u64> {
    budgets.sort_unstable();
    budgets.dedup();
    if budgets.len() < MAX_LINES {
        return budgets;
    }
    let mut out = vec![
        budgets[0],
        budgets[budgets.len() / 2],
        budgets[budgets.len() - 1],
    ];
    out.dedup();
    out
}

/// WATCH/MULTI against the Lua script, per round trip, at one worker count.
pub fn watch_vs_lua(ctx: &AnalysisCtx, rows: &[LatencyRow]) -> Result<String> {
    let merged = merge_by(rows, |r| retries_cell(&r.cell).map(|_| r.cell.clone()))?;
    let parsed: Vec<(&String, (Option<u64>, String, u64), &MergedLatency)> = merged
        .iter()
        .filter_map(|(c, m)| retries_cell(c).map(|p| (c, p, m)))
        .collect();
    // The most workers both ran at.
    let Some(workers) = parsed
        .iter()
        .filter(|(_, p, _)| p.0.is_none())
        .map(|(_, p, _)| p.2)
        .filter(|w| parsed.iter().any(|(_, p, _)| p.0.is_some() && p.2 == *w))
        .max()
    else {
        return Ok(String::new());
    };
    let mut rtts: Vec<String> = parsed
        .iter()
        .filter(|(_, p, _)| p.2 == workers && p.0.is_none())
        .map(|(_, p, _)| p.1.clone())
        .collect();
    rtts.sort_by(|a, b| {
        let f = |s: &str| s.parse::<f64>().unwrap_or(f64::MAX);
        f(a).total_cmp(&f(b))
    });
    rtts.dedup();
    let mut fig = Figure::new(
        "latency-watch-vs-lua",
        &[],
        format!("WATCH/MULTI against a Lua script on one hot key, {workers} workers: decision latency by percentile"),
        String::new(),
    )
    .columns(rtts.len().min(3));
    let mut rows_md: Vec<(String, &MergedLatency)> = Vec::new();
    let mut lua_name = String::new();
    for rtt in &rtts {
        let here: Vec<&(&String, (Option<u64>, String, u64), &MergedLatency)> = parsed
            .iter()
            .filter(|(_, p, _)| p.2 == workers && &p.1 == rtt)
            .collect();
        let budgets = budgets_drawn(here.iter().filter_map(|(_, p, _)| p.0).collect());
        if budgets.is_empty() {
            continue;
        }
        let mut p = Panel::new(
            format!("{rtt} ms round trip"),
            x_axis(),
            Axis::log("decision latency (ms, log scale)"),
        );
        for (cell, part, m) in &here {
            if part.0.is_none() {
                let strategy = cell.split('/').next().unwrap_or(cell);
                lua_name = format!("{strategy} (Lua script)");
                p = p.series(nines_series(lua_name.clone(), &m.hist));
                rows_md.push((format!("{lua_name}, {rtt} ms"), m));
            }
        }
        for b in &budgets {
            if let Some((_, _, m)) = here.iter().find(|(_, p, _)| p.0 == Some(*b)) {
                let name = format!(
                    "WATCH/MULTI, {b} {}",
                    if *b == 1 { "retry" } else { "retries" }
                );
                p = p.series(nines_series(name.clone(), &m.hist));
                rows_md.push((format!("{name}, {rtt} ms"), m));
            }
        }
        fig = fig.panel(p);
    }
    if fig.panels.is_empty() {
        return Ok(String::new());
    }
    let trials: Vec<usize> = rows_md.iter().map(|r| r.1.trials).collect();
    fig.caption = format!(
        "Per-decision latency, from a request's first send to its final reply (every WATCH retry inside it, a request refused when its budget ran out included), against its percentile on a nines axis; one round trip per panel, {workers} workers, the L requests of a trial all sent at once, retries without a pause: the cells the study's WATCH claims (A2.1, A2.2) are judged at, so each panel compares like with like. {} beside WATCH/MULTI at the smallest, middle and largest retry budget the run measured. HdrHistograms merged over each cell's {} trials; the last point is the maximum.",
        if lua_name.is_empty() {
            "No Lua line".to_string()
        } else {
            format!("The {lua_name}")
        },
        span(&trials)
    );
    figure_with_table(ctx, &fig, &rows_md)
}

/// The fail-open experiment's decisions against the policy's deadline.
/// The fail-open figure: the histograms from the send (`rows`) and, with
/// the per-decision `history`, latency from the schedule beside them.
pub fn fail_open(
    ctx: &AnalysisCtx,
    rows: &[LatencyRow],
    summary: &[SummaryRow],
    history: Option<&[HistoryRow]>,
) -> Result<String> {
    let merged: BTreeMap<String, MergedLatency> = merge_by(rows, |r| Some(r.cell.clone()))?;
    if merged.is_empty() {
        return Ok(String::new());
    }
    let mut deadlines: Vec<u64> = summary.iter().map(|s| s.timeout_ms).collect();
    deadlines.sort_unstable();
    deadlines.dedup();
    let mut p = Panel::new(
        "every decision, all four phases",
        x_axis(),
        Axis::log("decision latency (ms, log scale)"),
    );
    // Latency from the schedule, per cell (with the history only).
    let scheduled: BTreeMap<String, MergedLatency> = history
        .map(|h| {
            merged
                .keys()
                .filter_map(|cell| {
                    let (_, intended, trials) =
                        from_send_and_schedule(h.iter().filter(|r| &r.cell == cell));
                    (!intended.is_empty()).then(|| {
                        let m = MergedLatency {
                            hist: intended,
                            trials,
                        };
                        (cell.clone(), m)
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    let mut rows_md: Vec<(String, &MergedLatency)> = Vec::new();
    let mut past: Vec<String> = Vec::new();
    for (cell, m) in &merged {
        if let Some(sch) = scheduled.get(cell) {
            p = p.series(nines_series(format!("{cell}, from schedule"), &sch.hist));
            rows_md.push((format!("{cell}, from schedule"), sch));
        }
        let strategy = rows
            .iter()
            .find(|r| &r.cell == cell)
            .map(|r| r.strategy.clone())
            .unwrap_or_default();
        let (line, name) = if scheduled.contains_key(cell) {
            (
                format!("{cell}, from send"),
                format!("{cell} ({strategy}), from send"),
            )
        } else {
            (cell.clone(), format!("{cell} ({strategy})"))
        };
        p = p.series(nines_series(line, &m.hist));
        rows_md.push((name, m));
        if let [d] = deadlines.as_slice() {
            let at = (*d * 1000) as u64;
            let over = m.hist.count_between(at, u64::MAX);
            past.push(format!(
                "{cell}: {:.1}% of {} decisions took the deadline or longer",
                100.0 * over as f64 / m.hist.len().max(1) as f64,
                m.hist.len()
            ));
        }
    }
    for d in &deadlines {
        p = p.reference(Reference::limit(
            format!("the policy's deadline, timeout_ms = {d} ms"),
            *d as f64,
        ));
    }
    let trials: Vec<usize> = rows_md.iter().map(|r| r.1.trials).collect();
    let schedule_note = if scheduled.is_empty() {
        "Latency is from the send only: this run kept no intended send times (`fail-open-history.csv` with `intended_us`, `sent_us`, `replied_us` per decision; a run of this code records them), so no curve corrected for coordinated omission is drawn.".to_string()
    } else {
        let worst: Vec<String> = scheduled
            .iter()
            .filter_map(|(cell, sch)| {
                merged.get(cell).map(|m| {
                    format!(
                        "{cell} max {:.1} ms from the schedule, {:.1} ms from the send",
                        sch.hist.max() as f64 / 1e3,
                        m.hist.max() as f64 / 1e3
                    )
                })
            })
            .collect();
        format!(
            "Each policy is drawn twice: from the send, and from the request's intended send time on the steady schedule to the policy's answer (`fail-open-history.csv`: corrected for coordinated omission, the wait of a request whose driver was still held by a slow decision counted, as a caller on that schedule saw it): {}.",
            worst.join("; ")
        )
    };
    let caption = format!(
        "Per-decision latency as the caller saw it (send to the policy's answer: Redis's reply, or the deadline's miss), against its percentile on a nines axis, per policy over all four phases of each trial (Redis normal, slowed past the deadline, killed, back), HdrHistograms merged over {} trials per policy; the deadline is drawn. {}. The recorded histograms pool the phases, so the tail past the deadline cannot be split by phase here (fail-open.csv's bins give each second's p50 and maximum; fail-open-timeline draws them). {schedule_note}",
        span(&trials),
        if past.is_empty() {
            "The trials' deadlines differ, so none is singled out".to_string()
        } else {
            past.join("; ")
        }
    );
    let fig = Figure::new(
        "latency-fail-open-deadline",
        &[],
        "Fail open or closed: decision latency by percentile against the deadline",
        caption,
    )
    .panel(p);
    figure_with_table(ctx, &fig, &rows_md)
}

#[cfg(test)]
mod tests {
    use crate::latency::focus::*;

    #[test]
    fn only_the_default_retry_details_are_compared_and_three_budgets_drawn() {
        assert_eq!(
            retries_cell("watch-multi/b1000/fixed-0/first-free/rtt6.7/c64"),
            Some((Some(1000), "6.7".into(), 64))
        );
        assert_eq!(
            retries_cell("fixed-window-lua/rtt0/c16"),
            Some((None, "0".into(), 16))
        );
        for other in [
            "watch-multi/b10/fixed-1ms/first-free/rtt6.7/c64",
            "watch-multi/b10/fixed-0/first-counted/rtt6.7/c64",
            "watch-multi/b10/fixed-0/first-free/rtt6.7/spread100/c64",
            "fixed-window-lua/rtt6.7/spread100/c64",
        ] {
            assert_eq!(retries_cell(other), None, "{other}");
        }
        assert_eq!(budgets_drawn(vec![1000, 1, 3, 10, 100]), vec![1, 10, 1000]);
        assert_eq!(budgets_drawn(vec![10, 1000]), vec![10, 1000]);
    }
}
