//! The noisy-neighbour section of the report: per cell, the CPU other
//! processes took while it was measured. From the per-trial columns of
//! `schedule.csv` where the run wrote them (others' CPU per trial, median
//! and max over a cell's committed trials, and the harness's other lanes
//! beside it), else from `noise.csv`'s per-cell means (runs before the
//! per-trial columns).

use std::collections::BTreeMap;

use limitbench_base::error::Result;

use crate::rows::{NoiseRow, SCHEDULE_CSV, ScheduleRow};
use crate::{AnalysisCtx, Section, table};

/// Cells during which other processes took more than this many cores.
pub const NOISE_WARN_CORES: f64 = 0.10;

/// Per cell, from the committed trials that recorded others' CPU: (trials,
/// median and max of others' CPU, mean of the beside lanes' CPU, disturbed
/// trials), in cores.
#[derive(Debug, Clone, PartialEq)]
pub struct TrialNoise {
    pub experiment: String,
    pub cell: String,
    pub trials: usize,
    pub other_median: f64,
    pub other_max: f64,
    pub beside_mean: f64,
    pub disturbed: usize,
    /// The largest stolen time a trial saw (`steal_cores`), where the run
    /// recorded it.
    pub steal_max: Option<f64>,
}

/// The per-trial figures of every cell that recorded them (empty for runs
/// from before the columns).
pub fn per_trial(rows: &[ScheduleRow]) -> Vec<TrialNoise> {
    let mut by: BTreeMap<(&str, &str), Vec<&ScheduleRow>> = BTreeMap::new();
    for r in rows
        .iter()
        .filter(|r| r.committed && r.other_cpu_cores.is_some())
    {
        by.entry((&r.experiment, &r.cell)).or_default().push(r);
    }
    by.into_iter()
        .map(|((e, c), rs)| {
            let mut o: Vec<f64> = rs.iter().filter_map(|r| r.other_cpu_cores).collect();
            o.sort_by(f64::total_cmp);
            let n = o.len();
            let median = if n % 2 == 1 {
                o[n / 2]
            } else {
                (o[n / 2 - 1] + o[n / 2]) / 2.0
            };
            let beside: Vec<f64> = rs.iter().filter_map(|r| r.beside_lanes_cpu_cores).collect();
            TrialNoise {
                experiment: e.into(),
                cell: c.into(),
                trials: n,
                other_median: median,
                other_max: o[n - 1],
                beside_mean: if beside.is_empty() {
                    0.0
                } else {
                    beside.iter().sum::<f64>() / beside.len() as f64
                },
                disturbed: rs.iter().filter(|r| r.disturbance().is_some()).count(),
                steal_max: rs.iter().filter_map(|r| r.steal_cores).reduce(f64::max),
            }
        })
        .collect()
}

/// The section: per-trial figures where the schedule has them, else the
/// per-cell means of `noise.csv`; None when the run wrote neither.
pub fn section(ctx: &AnalysisCtx) -> Result<Option<Section>> {
    let schedule = ctx
        .read_csv::<ScheduleRow>(SCHEDULE_CSV)?
        .unwrap_or_default();
    let trials = per_trial(&schedule);
    if !trials.is_empty() {
        return Ok(Some(trial_section(ctx, &trials)));
    }
    let Some(rows) = ctx.read_csv::<NoiseRow>("noise.csv")? else {
        return Ok(None);
    };
    Ok(Some(cell_section(ctx, &rows)))
}

fn trial_section(ctx: &AnalysisCtx, cells: &[TrialNoise]) -> Section {
    let mut all: Vec<f64> = cells.iter().map(|c| c.other_median).collect();
    all.sort_by(f64::total_cmp);
    let worst = cells.iter().map(|c| c.other_max).fold(0.0, f64::max);
    let noisy: Vec<&TrialNoise> = cells
        .iter()
        .filter(|c| c.other_median > NOISE_WARN_CORES || c.disturbed > 0)
        .collect();
    let mut md = format!(
        "## Noisy neighbours\n\nOther processes' CPU (not the harness's: its servers, proxies and \
         redis-benchmark are its own) was recorded per trial in {} cells (`schedule.csv`, \
         `other_cpu_cores`); the median over cells of a cell's median is {:.3} cores, the largest \
         one trial saw {:.3}. The harness's other lanes beside a cell are counted apart \
         (`beside_lanes_cpu_cores`). ",
        cells.len(),
        all[all.len() / 2],
        worst
    );
    let stolen: Vec<f64> = cells.iter().filter_map(|c| c.steal_max).collect();
    if !stolen.is_empty() {
        let mut s = stolen.clone();
        s.sort_by(f64::total_cmp);
        md += &format!(
            "The hypervisor's stolen time (`steal_cores`: this machine's CPUs waiting while it ran another guest, which no process shows) was recorded in {} cells and counts with others' CPU against each experiment's bound; the median cell's worst trial saw {:.3} cores, the worst trial {:.3}. ",
            s.len(),
            s[s.len() / 2],
            s[s.len() - 1]
        );
    }
    if noisy.is_empty() {
        md += &format!(
            "In no cell did others take more than {NOISE_WARN_CORES} of a core in the median trial, and no committed trial was disturbed.\n"
        );
        return Section::new("noise", md);
    }
    md += &format!(
        "**Warning:** {} cells had others above {NOISE_WARN_CORES} of a core in the median trial or disturbed committed trials:\n\n",
        noisy.len()
    );
    let table: Vec<Vec<String>> = noisy
        .iter()
        .take(40)
        .map(|c| {
            vec![
                c.experiment.clone(),
                c.cell.clone(),
                c.trials.to_string(),
                format!("{:.3}", c.other_median),
                format!("{:.3}", c.other_max),
                format!("{:.3}", c.beside_mean),
                c.disturbed.to_string(),
            ]
            .into_iter()
            .chain(
                (!stolen.is_empty()).then(|| c.steal_max.map_or("-".into(), |x| format!("{x:.3}"))),
            )
            .collect()
        })
        .collect();
    let mut header = vec![
        "experiment",
        "cell",
        "trials",
        "others' CPU, median (cores)",
        "max (cores)",
        "beside lanes, mean (cores)",
        "disturbed trials",
    ];
    if !stolen.is_empty() {
        header.push("stolen, max (cores)");
    }
    md += &table::md_table(&header, &table);
    if noisy.len() > 40 {
        md += &format!("\n({} more in schedule.csv)\n", noisy.len() - 40);
    }
    ctx.warnings.borrow_mut().push(format!(
        "{} cells ran beside other processes or with disturbed trials (see the report's noisy-neighbour section)",
        noisy.len()
    ));
    Section::new("noise", md)
}

/// Runs before the per-trial columns: `noise.csv`'s per-cell means.
fn cell_section(ctx: &AnalysisCtx, rows: &[NoiseRow]) -> Section {
    let noisy: Vec<&NoiseRow> = rows
        .iter()
        .filter(|r| r.other_cpu_cores_mean > NOISE_WARN_CORES)
        .collect();
    let mut md = format!(
        "## Noisy neighbours\n\nOther processes' CPU was sampled while each of {} cells ran \
         (`noise.csv`; this run has no per-trial figures). ",
        rows.len()
    );
    if noisy.is_empty() {
        md +=
            &format!("In none did they take more than {NOISE_WARN_CORES} of a core on average.\n");
        return Section::new("noise", md);
    }
    md += &format!(
        "**Warning:** in {} cells they took more than {NOISE_WARN_CORES} of a core on average; \
         timings of these cells may be disturbed:\n\n",
        noisy.len()
    );
    let table: Vec<Vec<String>> = noisy
        .iter()
        .take(40)
        .map(|r| {
            vec![
                r.experiment.clone(),
                r.cell.clone(),
                format!("{:.2}", r.other_cpu_cores_mean),
                format!("{:.2}", r.other_cpu_cores_max),
                format!("{:.2}", r.beside_lanes_cpu_cores_mean),
                r.busiest_other.clone(),
            ]
        })
        .collect();
    md += &table::md_table(
        &[
            "experiment",
            "cell",
            "other CPU, mean (cores)",
            "max (cores)",
            "beside lanes, mean (cores)",
            "busiest other process",
        ],
        &table,
    );
    if noisy.len() > 40 {
        md += &format!("\n({} more in noise.csv)\n", noisy.len() - 40);
    }
    ctx.warnings.borrow_mut().push(format!(
        "{} cells ran while other processes took more than {NOISE_WARN_CORES} of a core (see the report's noisy-neighbour section)",
        noisy.len()
    ));
    Section::new("noise", md)
}
