//! B5.1 as it happened: the collisions of one trial of the timestamp
//! member, drawn from `ts-member-history.csv`.

use std::collections::BTreeSet;

use limitbench_analysis::AnalysisCtx;
use limitbench_analysis::experiments::rows::HistoryRow;
use limitbench_analysis::experiments::ts_member::rows::Row;
use limitbench_analysis::figure::{Axis, Figure, Panel, Pt, Reference, Series, WriteFigure};
use limitbench_base::error::Result;

/// Where Redis's millisecond boundaries lie on a trial's clock: history
/// times are µs since the trial started, the member is Redis's own
/// millisecond, and the start's offset within its millisecond is not
/// recorded. The phase (0..1000 µs, added to the trial time) at which the
/// log's rule, admit while it holds fewer than `limit` distinct
/// milliseconds, agrees with the most decisions in Redis-time order `h`
/// (the middle of the best run of phases), and how many it agrees with.
fn redis_ms_phase(h: &[(i64, bool)], limit: u64) -> (i64, usize) {
    let agree = |phase: i64| {
        let mut ms = BTreeSet::new();
        let mut ok = 0;
        for (t, admitted) in h {
            let admits = (ms.len() as u64) < limit;
            ok += usize::from(admits == *admitted);
            if *admitted {
                ms.insert((t + phase).div_euclid(1000));
            }
        }
        ok
    };
    let scores: Vec<usize> = (0..1000).map(agree).collect();
    let best = scores.iter().copied().max().unwrap_or(0);
    // The longest run of best phases (the phase circles: 999 borders 0).
    let (mut run, mut longest) = ((0, 0), (0i64, 0i64));
    for (p, s) in scores.iter().chain(scores.iter()).enumerate() {
        if *s == best {
            if run.1 == 0 {
                run.0 = p as i64;
            }
            run.1 += 1;
            if run.1 > longest.1 && run.1 <= 1000 {
                longest = run;
            }
        } else {
            run.1 = 0;
        }
    }
    ((longest.0 + longest.1 / 2).rem_euclid(1000), best)
}

/// B5.1 as it happened: one trial of the millisecond-timestamp member at the
/// main (precise) sender per rate up to 1,000/s, its admissions so far
/// against the entries its log holds (one per distinct Redis millisecond
/// among the admissions: a second request in the same millisecond writes
/// the same member, so the log does not grow and the next check admits
/// again). From `ts-member-history.csv` (first trial of the open cells up to
/// 1,000/s); a run from before it has none, and the section says so.
pub fn collision_history(ctx: &AnalysisCtx, rows: &[Row], md: &mut String) -> Result<()> {
    let main: Vec<&Row> = rows
        .iter()
        .filter(|r| {
            r.member == "redis-ms"
                && r.pacing == "poisson"
                && r.sender_tick_ms == 0.0
                && r.trial == 0
                && r.rate_per_s <= 1000.0
        })
        .collect();
    let Some(drivers) = main.iter().map(|r| r.drivers).max() else {
        return Ok(());
    };
    let Some(history) = ctx.read_csv::<HistoryRow>("ts-member-history.csv")? else {
        *md += "No per-request history in this run (`ts-member-history.csv` is absent: runs before the history was kept store none), so B5.1's collisions are not drawn as a timeline; a new run draws them.\n\n";
        return Ok(());
    };
    let mut fig = Figure::new(
        "b5_1-collision-history",
        &["B5.1"],
        "the millisecond-timestamp member, one trial as it happened: admitted against entries in the log",
        format!(
            "Member redis-ms, precise Poisson sender, {drivers} connections, trial 0 per rate: every admission in Redis-time order (ms since the trial started); the log holds one entry per distinct Redis millisecond among them, because a request in a millisecond already written writes the same member again. The log stays below the limit while admissions pass it: the gap is the over-admission."
        ),
    )
    .columns(2);
    let mut drawn = 0;
    let mut phases: Vec<String> = Vec::new();
    for r in main.iter().filter(|r| r.drivers == drivers) {
        let mut h: Vec<(i64, bool)> = history
            .iter()
            .filter(|x| x.cell == r.cell && x.trial == r.trial)
            .filter_map(|x| x.redis_time_us.map(|t| (t, x.admitted)))
            .collect();
        h.sort();
        let (phase, agree) = redis_ms_phase(&h, r.limit);
        phases.push(format!(
            "{}/s: {} µs, {agree} of {} decisions; ZCARD at the end {}",
            r.rate_per_s,
            phase,
            h.len(),
            r.zcard_end
        ));
        let (mut admitted, mut entries) = (Vec::new(), Vec::new());
        let (mut n, mut ms) = (0u64, BTreeSet::new());
        for (t, _) in h.iter().filter(|x| x.1) {
            n += 1;
            ms.insert((t + phase).div_euclid(1000));
            admitted.push(Pt::new(*t as f64 / 1000.0, n as f64));
            entries.push(Pt::new(*t as f64 / 1000.0, ms.len() as f64));
        }
        if admitted.is_empty() {
            continue;
        }
        drawn += 1;
        fig = fig.panel(
            Panel::new(
                format!(
                    "{} requests/s: {} admitted, {} entries in the log",
                    r.rate_per_s,
                    n,
                    ms.len()
                ),
                Axis::new("Redis time since the trial started (ms)"),
                Axis::new("requests"),
            )
            .series(Series::plain("admitted so far", admitted))
            // A spare look (dark red-brown, solid), apart from the first
            // free look (green, dotted) and the limit's red dots.
            .series(
                Series::plain("entries in the log (distinct Redis ms)", entries)
                    .with_look(limitbench_plot::style::spare_look(1)),
            )
            .reference(Reference::limit(
                format!("limit L = {}", r.limit),
                r.limit as f64,
            )),
        );
    }
    fig.caption += &format!(
        " Redis's millisecond boundaries (the member) lie at a phase of the trial's clock the history does not record; they are placed at the phase where the log's rule (admit while it holds fewer than L entries) agrees with the most decisions ({}).",
        phases.join("; ")
    );
    if drawn == 0 {
        *md += "`ts-member-history.csv` has no admissions for the main sender's redis-ms cells: B5.1's timeline is not drawn.\n\n";
        return Ok(());
    }
    *md += &fig.write(ctx)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::redis_ms_phase;

    #[test]
    fn the_millisecond_phase_is_where_the_logs_rule_explains_every_decision() {
        // Limit 2: the first two are admitted, the third refused, so the two
        // admissions (300 and 500 µs into the trial) fell in different Redis
        // milliseconds: a boundary between them, at a phase of 500..700 µs.
        let h = [(300, true), (500, true), (1300, false)];
        assert_eq!(redis_ms_phase(&h, 2), (600, 3));
        // Had the third been admitted, they shared one (any other phase).
        let h = [(300, true), (500, true), (1300, true)];
        let (phase, agree) = redis_ms_phase(&h, 2);
        assert_eq!(agree, 3);
        assert!(!(500..700).contains(&phase), "{phase}");
    }
}
