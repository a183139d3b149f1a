//! The clients a stall holds up (B4.1's trims, B4.2's expiries): the
//! stalls experiment's PING probe by percentile, PINGs in flight during
//! the event against those outside it, from `stalls-pings.csv` (every
//! PING with its phase: before, during, after; see the stalls rows).
//!
//! One panel per kind of event and placement of Redis's background
//! threads (the trims; the expiries with the background threads beside
//! the main thread or on another CPU), two settings a panel (the two
//! biggest trims; lazyfree no and yes at the biggest expiry), each drawn
//! during and outside the event: at most four lines. Runs recorded before
//! the PINGs were kept have `stalls.csv` alone: the section then says in
//! one line what is missing ([`MISSING`]) instead of drawing.

use std::collections::BTreeMap;

use crate::AnalysisCtx;
use crate::experiments::stalls::rows::{PingRow, StallRow};
use crate::figure::{Axis, Figure, Panel};
use crate::latency::closed::span;
use crate::latency::hist::{MergedLatency, figure_with_table, nines_series, of_values};
use limitbench_base::error::Result;
use limitbench_plot::style::{colour, ramp_look, variant_look};

/// The section's line for a run without the PINGs (`stalls-pings.csv`).
pub const MISSING: &str = "The clients held up by a stall are not drawn: this run's stalls experiment kept only its summaries (`stalls.csv`: the probe's worst round trip during and before each event), not the columns `sent_ms`, `rtt_ms` and `phase` of each PING (`stalls-pings.csv`); a run of this code records them.";

/// A panel: its title, and its settings (a label and the cells measured at
/// it), at most two.
struct Group {
    title: String,
    settings: Vec<(String, Vec<String>)>,
}

/// The panels from the run's measurements: the trims' two biggest sizes;
/// per placement of the background threads, each lazyfree mode at the
/// biggest expiry.
fn groups(stalls: &[StallRow]) -> Vec<Group> {
    // (panel, setting) -> cells, with the entries to pick the biggest.
    let mut trims: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    let mut expiries: BTreeMap<String, BTreeMap<u64, BTreeMap<String, Vec<String>>>> =
        BTreeMap::new();
    for s in stalls {
        let cells = if s.kind == "trim" {
            trims.entry(s.entries).or_default()
        } else {
            expiries
                .entry(s.bio_cpus.clone())
                .or_default()
                .entry(s.entries)
                .or_default()
                .entry(s.lazyfree_lazy_expire.clone())
                .or_default()
        };
        if !cells.contains(&s.cell) {
            cells.push(s.cell.clone());
        }
    }
    let mut out = Vec::new();
    if !trims.is_empty() {
        out.push(Group {
            title: "trims (B4.1)".into(),
            settings: trims
                .iter()
                .rev()
                .take(2)
                .rev()
                .map(|(n, c)| (format!("{} entries", count(*n)), c.clone()))
                .collect(),
        });
    }
    for (bio, by_size) in &expiries {
        let Some((n, modes)) = by_size.iter().next_back() else {
            continue;
        };
        // Where the background (lazy-free) threads ran.
        let place = if bio == "same" {
            "bio on main CPU".to_string()
        } else {
            format!("bio on {bio}")
        };
        out.push(Group {
            title: format!("expiry of {}, {place} (B4.2)", count(*n)),
            settings: modes
                .iter()
                .take(2)
                .map(|(m, c)| (format!("lazyfree {m}"), c.clone()))
                .collect(),
        });
    }
    out
}

/// 1000000 -> "1M", 100000 -> "100k", 250 -> "250".
fn count(n: u64) -> String {
    if n >= 1_000_000 && n % 1_000_000 == 0 {
        format!("{}M", n / 1_000_000)
    } else if n >= 1000 && n % 1000 == 0 {
        format!("{}k", n / 1000)
    } else {
        n.to_string()
    }
}

/// The round trips (µs) of the PINGs of `cells` during the event or
/// outside it, and the trials they came from.
fn of_phase(pings: &[PingRow], cells: &[String], during: bool) -> MergedLatency {
    let rows: Vec<&PingRow> = pings
        .iter()
        .filter(|p| cells.contains(&p.cell) && (p.phase == "during") == during)
        .collect();
    let mut trials: Vec<(&str, u64)> = rows.iter().map(|p| (p.cell.as_str(), p.trial)).collect();
    trials.sort_unstable();
    trials.dedup();
    MergedLatency {
        hist: of_values(rows.iter().map(|p| (p.rtt_ms * 1000.0).round() as i64)),
        trials: trials.len(),
    }
}

/// The stalled-clients figure and its table, or [`MISSING`] for a run
/// without the PINGs.
pub fn figure(ctx: &AnalysisCtx) -> Result<String> {
    let Some(stalls) = ctx.read_csv::<StallRow>("stalls.csv")? else {
        return Ok(String::new());
    };
    let Some(pings) = ctx.read_csv::<PingRow>("stalls-pings.csv")? else {
        return Ok(format!("{MISSING}\n"));
    };
    let mut fig = Figure::new(
        "latency-stalled-clients",
        &[],
        "Clients held up by a stall: the PING probe's round trips by percentile",
        String::new(),
    )
    .columns(groups(&stalls).len().min(3));
    let mut kept: Vec<(String, MergedLatency)> = Vec::new();
    for g in groups(&stalls) {
        let mut p = Panel::new(
            g.title.clone(),
            Axis::nines("percentile"),
            Axis::log("PING round trip (ms, log scale)"),
        )
        .label_ends();
        let of = g.settings.len();
        for (i, (label, cells)) in g.settings.iter().enumerate() {
            for during in [true, false] {
                let m = of_phase(&pings, cells, during);
                if m.hist.is_empty() {
                    continue;
                }
                let name = format!("{label}, {}", if during { "during" } else { "outside" });
                // During: one hue, darker for the bigger setting; outside: grey.
                let look = if during {
                    ramp_look(i, of)
                } else {
                    variant_look(colour::GREY, i)
                };
                p = p.series(nines_series(name.clone(), &m.hist).with_look(look));
                kept.push((format!("{}: {name}", g.title), m));
            }
        }
        if p.points() > 0 {
            fig = fig.panel(p);
        }
    }
    if fig.panels.is_empty() {
        return Ok(String::new());
    }
    let trials: Vec<usize> = kept.iter().map(|k| k.1.trials).collect();
    fig.caption = format!(
        "Round trip of every PING the stalls experiment's probe sent (its own connection and thread, PINGs back to back) against its percentile on a nines axis, per event: the PINGs in flight at some moment of the trim or the expiry (`during`: the ones whose worst is `probe_worst_ms`, what B4.2 is judged on) against those before and after it (`outside`: the probe's own noise on an idle Redis). From `stalls-pings.csv`, {} measurements a line. The probe is closed loop (the next PING leaves when the last reply came back), so a stall of T ms is one sample of about T ms, not T ms of held-up clients: the high percentiles of `during` are the stall, the rest the PINGs around it. The last point of each line is the maximum. `bio`: where Redis's background threads (the lazy-free one among them) ran.",
        span(&trials)
    );
    let rows: Vec<(String, &MergedLatency)> = kept.iter().map(|(n, m)| (n.clone(), m)).collect();
    figure_with_table(ctx, &fig, &rows)
}

#[cfg(test)]
mod tests {
    use crate::experiments::stalls::rows::{PingRow, StallRow};
    use crate::latency::stalled::*;

    fn stall(cell: &str, kind: &str, n: u64, mode: &str, bio: &str) -> StallRow {
        StallRow {
            cell: cell.into(),
            kind: kind.into(),
            entries: n,
            lazyfree_lazy_expire: mode.into(),
            bio_cpus: bio.into(),
            ..Default::default()
        }
    }

    #[test]
    fn panels_take_the_two_biggest_trims_and_each_mode_at_the_biggest_expiry() {
        let rows = [
            stall("trim|n10000", "trim", 10_000, "n/a", "n/a"),
            stall("trim|n100000", "trim", 100_000, "n/a", "n/a"),
            stall("trim|n1000000", "trim", 1_000_000, "n/a", "n/a"),
            stall("e-no-small", "expire", 1000, "no", "same"),
            stall("e-no", "expire", 1_000_000, "no", "same"),
            stall("e-yes", "expire", 1_000_000, "yes", "same"),
            stall("e-yes-1", "expire", 1_000_000, "yes", "cpu1"),
        ];
        let g = groups(&rows);
        assert_eq!(g.len(), 3);
        let labels =
            |i: usize| -> Vec<&str> { g[i].settings.iter().map(|s| s.0.as_str()).collect() };
        assert_eq!(labels(0), ["100k entries", "1M entries"]);
        assert_eq!(g[0].settings[1].1, ["trim|n1000000"]);
        // bio "cpu1" sorts before "same".
        assert_eq!(labels(1), ["lazyfree yes"]);
        assert_eq!(g[1].title, "expiry of 1M, bio on cpu1 (B4.2)");
        assert_eq!(labels(2), ["lazyfree no", "lazyfree yes"]);
        assert_eq!(
            g[2].settings[0].1,
            ["e-no"],
            "the smaller expiry is left out"
        );
    }

    #[test]
    fn during_and_outside_split_the_pings_of_a_setting() {
        let p = |cell: &str, trial: u64, rtt: f64, phase: &str| PingRow {
            cell: cell.into(),
            trial,
            sent_ms: 0.0,
            rtt_ms: rtt,
            phase: phase.into(),
        };
        let pings = [
            p("a", 0, 0.1, "before"),
            p("a", 0, 50.0, "during"),
            p("a", 1, 40.0, "during"),
            p("a", 1, 0.2, "after"),
            p("b", 0, 99.0, "during"),
        ];
        let cells = vec!["a".to_string()];
        let d = of_phase(&pings, &cells, true);
        assert_eq!((d.hist.len(), d.trials), (2, 2));
        assert_eq!(d.hist.max(), d.hist.highest_equivalent(50_000));
        let o = of_phase(&pings, &cells, false);
        assert_eq!((o.hist.len(), o.trials), (2, 2));
        assert_eq!(o.hist.max(), o.hist.highest_equivalent(200));
    }
}
