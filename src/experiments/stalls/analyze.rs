//! Analysis of `stalls` (claims B4.1, B4.2) from `stalls.csv` only.
//!
//! Trim: the SLOWLOG duration of the trimming call is the stall (LATENCY's
//! `command` event and the PING probe are shown beside it). Expiry: LATENCY's
//! `expire-del`/`expire-cycle` events (1 ms resolution, 0 = no event >= 1 ms)
//! are the stall; the probe's worst round trip is shown, but it also includes
//! the harness's own scheduling on this 2-core machine.
//!
//! Layout: metric functions (rows -> numbers, tested in the folder's
//! `tests.rs`), then the tables, claim values and figure.

use std::collections::BTreeMap;

use super::rows::StallRow;
use crate::analysis::figure::{Axis, Figure, Panel, Pt, Reference, Series, num};
use crate::analysis::stats::Summary;
use crate::analysis::table::md_table;
use crate::analysis::{AnalysisCtx, Measured, Section};
use crate::error::Result;

/// Trim rows by log size.
pub(super) type Trims<'a> = BTreeMap<u64, Vec<&'a StallRow>>;
/// Expiry rows by (lazyfree mode, background threads' CPUs, log size).
pub(super) type Expiries<'a> = BTreeMap<(String, String, u64), Vec<&'a StallRow>>;

// ---- metrics: rows -> numbers ----

pub(super) fn trims_by_entries(rows: &[StallRow]) -> Trims<'_> {
    let mut by_n: Trims = BTreeMap::new();
    for r in rows.iter().filter(|r| r.kind == "trim") {
        by_n.entry(r.entries).or_default().push(r);
    }
    by_n
}

pub(super) fn expiries_by_mode(rows: &[StallRow]) -> Expiries<'_> {
    let mut by_mode: Expiries = BTreeMap::new();
    for r in rows.iter().filter(|r| r.kind == "expire") {
        let k = (
            r.lazyfree_lazy_expire.clone(),
            r.bio_cpus.clone(),
            r.entries,
        );
        by_mode.entry(k).or_default().push(r);
    }
    by_mode
}

fn summary(v: &[&StallRow], f: impl Fn(&StallRow) -> f64) -> Summary {
    Summary::of(&v.iter().map(|r| f(r)).collect::<Vec<_>>())
}

/// The trimming call's SLOWLOG duration in ms, over trials.
pub(super) fn slowlog_ms(v: &[&StallRow]) -> Summary {
    summary(v, |r| r.slowlog_us.unwrap_or(f64::NAN) / 1000.0)
}

/// B4.1: mean SLOWLOG ms at 100k and 1M entries, and their ratio.
pub(super) fn b41_trim_growth(by_n: &Trims) -> Option<(Summary, Summary, f64)> {
    let (a, b) = (by_n.get(&100_000)?, by_n.get(&1_000_000)?);
    let (sa, sb) = (slowlog_ms(a), slowlog_ms(b));
    let ratio = sb.mean / sa.mean;
    Some((sa, sb, ratio))
}

/// Did every trimming call empty the log (leaving its own entry) and admit?
pub(super) fn all_trimmed(rows: &[StallRow]) -> bool {
    rows.iter()
        .filter(|r| r.kind == "trim")
        .all(|r| r.after_size == 1 && r.admitted == Some(true))
}

/// An expiry's stall: the worse of LATENCY's expire-del and expire-cycle, ms (0: none >= 1 ms).
pub(super) fn expiry_stall_ms(r: &StallRow) -> f64 {
    r.latency_expire_del_ms
        .unwrap_or(0.0)
        .max(r.latency_expire_cycle_ms.unwrap_or(0.0))
}

/// B4.2 at one placement of the background threads, at the biggest log.
#[derive(Debug, PartialEq)]
pub(super) struct Placement {
    /// `same` (as the main thread) or `cpuN`.
    pub bio: String,
    /// Worst expiry stall with lazyfree-lazy-expire no / yes, ms.
    pub no_ms: f64,
    pub yes_ms: f64,
    /// The probe's worst round trip with no / yes, ms.
    pub probe_no_ms: f64,
    pub probe_yes_ms: f64,
}

/// B4.2: the biggest log size, and each placement measured with both modes.
pub(super) fn b42_by_placement(by_mode: &Expiries) -> (u64, Vec<Placement>) {
    let biggest = by_mode.keys().map(|k| k.2).max().unwrap_or(0);
    let bios: Vec<String> = {
        let mut b: Vec<String> = by_mode.keys().map(|k| k.1.clone()).collect();
        b.sort();
        b.dedup();
        b
    };
    let worst = |mode: &str, bio: &str, f: &dyn Fn(&StallRow) -> f64| {
        by_mode
            .get(&(mode.to_string(), bio.to_string(), biggest))
            .map(|v| v.iter().map(|r| f(r)).fold(0.0, f64::max))
    };
    let out = bios
        .iter()
        .filter_map(|bio| {
            let probe = |m| worst(m, bio, &|r| r.probe_worst_ms).unwrap_or(f64::NAN);
            Some(Placement {
                bio: bio.clone(),
                no_ms: worst("no", bio, &expiry_stall_ms)?,
                yes_ms: worst("yes", bio, &expiry_stall_ms)?,
                probe_no_ms: probe("no"),
                probe_yes_ms: probe("yes"),
            })
        })
        .collect();
    (biggest, out)
}

// ---- presentation: tables, claim values, figure ----

fn trim_table(by_n: &Trims) -> String {
    let rows: Vec<Vec<String>> = by_n
        .iter()
        .map(|(n, v)| {
            vec![
                n.to_string(),
                slowlog_ms(v).show(2),
                summary(v, |r| r.latency_command_ms.unwrap_or(f64::NAN)).show(0),
                summary(v, |r| r.probe_worst_ms).show(2),
                format!("{:.2}", summary(v, |r| r.probe_baseline_worst_ms).max),
                summary(v, |r| r.event_ms).show(2),
                format!(
                    "{} of {}",
                    v.iter().filter(|r| r.after_size == 1).count(),
                    v.len()
                ),
            ]
        })
        .collect();
    format!(
        "Trim of a log whose window has passed, by the strategy's next call:\n\n{}",
        md_table(
            &[
                "entries",
                "SLOWLOG ms",
                "LATENCY command ms",
                "probe worst ms",
                "probe before ms",
                "call ms (client)",
                "trimmed to 1",
            ],
            &rows
        )
    )
}

fn expiry_table(by_mode: &Expiries) -> String {
    let rows: Vec<Vec<String>> = by_mode
        .iter()
        .map(|((mode, bio, n), v)| {
            vec![
                mode.clone(),
                bio.clone(),
                n.to_string(),
                summary(v, |r| r.latency_expire_del_ms.unwrap_or(f64::NAN)).show(0),
                summary(v, |r| r.latency_expire_cycle_ms.unwrap_or(f64::NAN)).show(0),
                format!(
                    "{:.0}",
                    v.iter().map(|r| expiry_stall_ms(r)).fold(0.0, f64::max)
                ),
                summary(v, |r| r.probe_worst_ms).show(2),
                format!("{:.2}", summary(v, |r| r.probe_baseline_worst_ms).max),
                v.len().to_string(),
            ]
        })
        .collect();
    format!(
        "\nExpiry of a big log (active expire cycle), by lazyfree-lazy-expire and where Redis's background threads run:\n\n{}",
        md_table(
            &[
                "lazyfree",
                "bio threads",
                "entries",
                "LATENCY expire-del ms",
                "LATENCY expire-cycle ms",
                "worst LATENCY ms",
                "probe worst ms",
                "probe before ms",
                "runs",
            ],
            &rows
        )
    )
}

fn b41(by_n: &Trims, rows: &[StallRow]) -> Option<Measured> {
    let (sa, sb, ratio) = b41_trim_growth(by_n)?;
    Some(
        Measured::new(
            "B4.1",
            vec![sa.mean, sb.mean],
            format!(
                "100k: {} ms, 1M: {} ms (SLOWLOG; ratio {ratio:.1}x)",
                sa.show(1),
                sb.show(1)
            ),
            "stalls.csv: kind=trim slowlog_us",
        )
        .condition(
            format!("roughly linear growth: the 1M trim takes 5 to 20 times the 100k trim (here {ratio:.1} times)"),
            (5.0..=20.0).contains(&ratio),
        )
        .condition(
            "every trimming call emptied the log and admitted",
            all_trimmed(rows),
        )
        .note("machine claim: absolute times are this machine's"),
    )
}

fn b42(by_mode: &Expiries) -> Option<Measured> {
    let (biggest, per_bio) = b42_by_placement(by_mode);
    if per_bio.is_empty() {
        return None;
    }
    let values: Vec<f64> = per_bio.iter().map(|p| p.yes_ms).collect();
    let disp: Vec<String> = per_bio
        .iter()
        .map(|p| {
            format!(
                "{}: no {:.0} ms, yes {:.0} ms (probe {:.1} / {:.1} ms)",
                bio_words(&p.bio),
                p.no_ms,
                p.yes_ms,
                p.probe_no_ms,
                p.probe_yes_ms
            )
        })
        .collect();
    let shape_ok = per_bio.iter().all(|p| p.no_ms > p.yes_ms);
    let same_bad = per_bio.iter().any(|p| p.bio == "same" && p.yes_ms >= 1.0);
    Some(
        Measured::new(
            "B4.2",
            values,
            format!("{} entries: {}", biggest, disp.join("; ")),
            "stalls.csv: kind=expire, max(LATENCY expire-del, expire-cycle) over runs, per bio placement",
        )
        .condition("lazyfree no stalls longer than yes", shape_ok)
        .note(if same_bad {
            "with the whole redis-server (main and background threads) pinned to one CPU, the lazy-free thread preempts the main thread while it frees the set, so `yes` still blocks for milliseconds; with bio_cpulist on another CPU no expiry event reaches 1 ms. The published `< 1 ms` needs the background thread on a core of its own (unstated in the study)."
        } else {
            ""
        }),
    )
}

/// Where the background threads ran, in words.
fn bio_words(bio: &str) -> String {
    match bio {
        "same" => "background threads on the main thread's CPU".into(),
        b if b.starts_with("cpu") => format!("background threads on CPU {}", &b[3..]),
        b => b.to_string(),
    }
}

/// B4.1: trim stall against entries; B4.2: the expiry stall per setting.
fn figure(ctx: &AnalysisCtx, by_n: &Trims, by_mode: &Expiries) -> Result<String> {
    let ns: Vec<f64> = by_n.keys().map(|n| *n as f64).collect();
    let mut a = Panel::new(
        "B4.1: trimming a log whose window passed",
        Axis::log("entries in the log").ticks(ns),
        Axis::log("stall (ms)"),
    )
    .series(Series::line(
        "SLOWLOG duration of the trimming call",
        by_n.iter()
            .map(|(n, v)| Pt::summary(*n as f64, &slowlog_ms(v)))
            .collect(),
    ))
    .series(Series::line(
        "probe's worst round trip meanwhile",
        by_n.iter()
            .map(|(n, v)| Pt::summary(*n as f64, &summary(v, |r| r.probe_worst_ms)))
            .collect(),
    ));
    if let Some(v) = by_n.get(&100_000) {
        let k = slowlog_ms(v).mean / 100_000.0;
        let (lo, hi) = (
            *by_n.keys().next().unwrap_or(&1) as f64,
            *by_n.keys().last().unwrap_or(&1) as f64,
        );
        a = a.series(Series::plain(
            "linear in entries (through ours at 100,000)",
            vec![Pt::new(lo, k * lo), Pt::new(hi, k * hi)],
        ));
    }
    if let Some(c) = ctx.claim("B4.1") {
        for (i, n) in [100_000.0, 1_000_000.0].iter().enumerate() {
            a = a.reference(
                Reference::published(c, i)
                    .over(n / 1.6, n * 1.6)
                    .labelled(format!(
                        "B4.1 published: {} (machine claim, judged on linear growth)",
                        c.published_text
                    )),
            );
        }
    }
    let (biggest, _) = b42_by_placement(by_mode);
    let keys: Vec<&(String, String, u64)> = by_mode.keys().filter(|k| k.2 == biggest).collect();
    let mut b = Panel::new(
        format!("B4.2: expiring a log of {} entries", num(biggest as f64)),
        Axis::new("lazyfree-lazy-expire, where Redis's background threads ran"),
        Axis::new("stall (ms)"),
    )
    .categories(
        keys.iter()
            .map(|k| format!("{}, {}", k.0, bio_words(&k.1)))
            .collect(),
    )
    .series(Series::points(
        "worst LATENCY expire-del / expire-cycle (0: no event of 1 ms or more)",
        keys.iter()
            .enumerate()
            .map(|(i, k)| Pt::summary(i as f64, &summary(&by_mode[*k], expiry_stall_ms)))
            .collect(),
    ))
    .series(Series::points(
        "probe's worst round trip meanwhile",
        keys.iter()
            .enumerate()
            .map(|(i, k)| Pt::summary(i as f64, &summary(&by_mode[*k], |r| r.probe_worst_ms)))
            .collect(),
    ));
    if let Some(c) = ctx.claim("B4.2") {
        let yes: Vec<usize> = keys
            .iter()
            .enumerate()
            .filter(|(_, k)| k.0 == "yes")
            .map(|(i, _)| i)
            .collect();
        for i in yes {
            b = b.reference(
                Reference::published(c, 0)
                    .over(i as f64 - 0.45, i as f64 + 0.45)
                    .labelled(format!(
                        "B4.2 published: {}; shaded: passes (yes: at most 1 ms)",
                        c.published_text
                    )),
            );
        }
    }
    let fig = Figure::new(
        "stalls_vs_entries",
        &["B4.1", "B4.2"],
        "how long one big sliding log blocks Redis: trimming it, and expiring it with lazyfree no/yes",
        format!(
            "Mean with min-max whiskers over n = {} trials per point; the published times are the authors' machine's (B4.1 is judged on linear growth, B4.2 on lazyfree yes staying under 1 ms).",
            by_n.values().map(|v| v.len()).max().unwrap_or(0)
        ),
    )
    .columns(2)
    .panel(a)
    .panel(b);
    fig.write(ctx)
}

pub fn analyze(ctx: &AnalysisCtx) -> Result<(Vec<Measured>, Section)> {
    let Some(rows) = ctx.read_csv::<StallRow>("stalls.csv")? else {
        return Ok((vec![], Section::new("stalls", "Not run.\n")));
    };
    let by_n = trims_by_entries(&rows);
    let by_mode = expiries_by_mode(&rows);
    let mut md = format!(
        "What ran: {} trim trials and {} expiry trials, seed {}, Redis pinned to CPU {}, member_len {}; big logs built with pipelined ZADD batches before the measurement.\n\n",
        rows.iter().filter(|r| r.kind == "trim").count(),
        rows.iter().filter(|r| r.kind == "expire").count(),
        rows.first().map(|r| r.seed).unwrap_or(0),
        rows.first()
            .and_then(|r| r.redis_cpu)
            .map(|c| c.to_string())
            .unwrap_or_else(|| "(not pinned)".into()),
        rows.first().map(|r| r.member_len).unwrap_or(0),
    );
    md += &trim_table(&by_n);
    let mut measured: Vec<Measured> = b41(&by_n, &rows).into_iter().collect();
    if !by_mode.is_empty() {
        md += &expiry_table(&by_mode);
        measured.extend(b42(&by_mode));
    }
    md = figure(ctx, &by_n, &by_mode)? + &md;
    let finding = match b41_trim_growth(&by_n) {
        Some((a, b, r)) => format!(
            "trimming 100,000 entries blocked Redis {:.1} ms and 1,000,000 entries {:.1} ms ({:.1}x for 10x the entries); expiring {} entries: {}.",
            a.mean,
            b.mean,
            r,
            num(b42_by_placement(&by_mode).0 as f64),
            b42_by_placement(&by_mode)
                .1
                .iter()
                .map(|p| format!(
                    "with {}, lazyfree no {:.0} ms and yes {:.0} ms",
                    bio_words(&p.bio),
                    p.no_ms,
                    p.yes_ms
                ))
                .collect::<Vec<_>>()
                .join("; ")
        ),
        None => String::new(),
    };
    Ok((measured, Section::new("stalls", md).finding(finding)))
}
