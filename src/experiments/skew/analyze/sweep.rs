//! A4.1 and A4.2 as sensitivity sweeps over the details the study leaves
//! unstated, and A4.3's interval: per setting of those details, the claim's
//! quantity with its 95% interval over trials, the default setting as the
//! value and every other setting as an `Alternative`; one figure per sweep.
//!
//! Detail names and spellings are shared between the two claims (the judge
//! needs one value per detail to serve both): `capacity_s` (bucket capacity
//! / refill rate, s), `servers`, `offset_draw` (`spread`, `random`,
//! `two-point`), and for A4.1 `load_x` and `run_s`.

use std::collections::{BTreeMap, BTreeSet};

use super::super::rows::Row;
use super::{CALLER, Pair, worst_by_skew};
use limitbench_analysis::claims::Alternative;
use limitbench_analysis::figure::{Anchor, Axis, Figure, Panel, Pt, Reference, Series, num};
use limitbench_analysis::figure::{ClaimReference, SummaryPoint, WriteFigure};
use limitbench_analysis::stats::{Summary, mean_cs, mean_cs_method};
use limitbench_analysis::{AnalysisCtx, Measured};
use limitbench_base::error::Result;

/// The skew both sweeps are read at (the study's ±1 s).
const SKEW_MS: f64 = 1000.0;

/// Bucket capacity in seconds of refill.
pub fn capacity_s(r: &Row) -> f64 {
    r.capacity as f64 / r.rate_per_s
}

/// A4.2's details of a row: capacity_s, servers, offset_draw.
pub fn a4_2_key(r: &Row) -> (String, String, String) {
    (num(capacity_s(r)), r.servers.to_string(), r.clocks.clone())
}

/// A4.1's details of a row: load_x, run_s, capacity_s, servers, offset_draw.
pub fn a4_1_key(r: &Row) -> [String; 5] {
    [
        num(r.load_x),
        num(r.duration_ms / 1000.0),
        num(capacity_s(r)),
        r.servers.to_string(),
        r.clocks.clone(),
    ]
}

const A4_2_DETAILS: [&str; 3] = ["capacity_s", "servers", "offset_draw"];
const A4_1_DETAILS: [&str; 5] = ["load_x", "run_s", "capacity_s", "servers", "offset_draw"];

/// The trials A4.2 reads: the caller clock at ±1 s near the limit, poisson
/// arrivals from random servers (the round-robin and steady variants of
/// older runs are other questions).
fn near_limit(r: &Row) -> bool {
    r.strategy == CALLER
        && (r.skew_ms - SKEW_MS).abs() < 1e-9
        && r.load_x < 2.0
        && r.arrivals == "poisson"
        && r.assign == "random"
}

/// A4.2: caller-clock % of ideal per (capacity_s, servers, offset_draw).
pub fn a4_2_sweep(rows: &[Row], ideal: &[f64]) -> BTreeMap<(String, String, String), Vec<f64>> {
    let mut m: BTreeMap<_, Vec<f64>> = BTreeMap::new();
    for (i, r) in rows.iter().enumerate().filter(|(_, r)| near_limit(r)) {
        m.entry(a4_2_key(r))
            .or_default()
            .push(100.0 * r.admitted as f64 / ideal[i]);
    }
    m
}

/// A4.1: |caller - Redis| / Redis % of the trial pairs at ±1 s under
/// overload, per (load_x, run_s, capacity_s, servers, offset_draw).
pub fn a4_1_sweep(
    rows: &[Row],
    pairs: &BTreeMap<(String, u64), Pair>,
) -> BTreeMap<[String; 5], Vec<f64>> {
    let mut m: BTreeMap<_, Vec<f64>> = BTreeMap::new();
    for p in pairs.values() {
        let r = &rows[p.row];
        let over = r.load_x >= 2.0 && (r.skew_ms - SKEW_MS).abs() < 1e-9 && r.assign == "random";
        if let (true, Some(d)) = (over, p.difference_pct()) {
            m.entry(a4_1_key(r)).or_default().push(d);
        }
    }
    m
}

fn max_of(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::NAN, f64::max)
}

fn pairs_of<'a>(names: &'a [&'a str], values: &'a [String]) -> Vec<(&'a str, &'a str)> {
    names
        .iter()
        .copied()
        .zip(values.iter().map(|s| s.as_str()))
        .collect()
}

/// The default setting's key if measured, else the one with the most trials.
fn default_key<K: Ord + Clone>(m: &BTreeMap<K, Vec<f64>>, pick: impl Fn(&K) -> bool) -> Option<K> {
    m.keys()
        .find(|k| pick(k))
        .or_else(|| m.iter().max_by_key(|(_, v)| v.len()).map(|(k, _)| k))
        .cloned()
}

const A4_2_MODEL: &str = "Refer the bucket's level to real time: a request from a server whose clock is o ahead caps that level at C - r*o and is admitted only if it is at least 1 - r*o. So a server whose clock is more than C/r behind the last capping (most-ahead) server finds the bucket empty, and near the limit the bucket admits roughly the traffic of the servers within C/r of the clock ahead: about half with C/r = 1 s against ±1 s (evenly spread or random offsets), half for two-point offsets at any capacity, and only (C/r)/(2S) plus the ahead servers' share when C/r is well below the skew.";

/// A4.2 with its sweep (None without near-limit trials at ±1 s).
pub fn measured_a4_2(rows: &[Row], ideal: &[f64]) -> Option<Measured> {
    let m = a4_2_sweep(rows, ideal);
    let def = default_key(&m, |k| k.0 == "1" && k.1 == "8" && k.2 == "spread")?;
    let v = &m[&def];
    let s = Summary::of(v);
    let mut out = Measured::new(
        "A4.2",
        vec![s.mean],
        format!(
            "{} % of ideal at capacity {} s of refill, {} servers, {} offsets",
            s.show(1),
            def.0,
            def.1,
            def.2
        ),
        "skew.csv strategy=token-bucket-caller-clock skew_ms=1000 load_x<2 poisson, random servers, per (capacity/rate, servers, clocks); ideal from skew-history.csv",
    )
    .intervals(vec![mean_cs(v)], mean_cs_method(v.len()))
    .setting(&pairs_of(&A4_2_DETAILS, &[def.0.clone(), def.1.clone(), def.2.clone()]))
    .sweep_figure("a4_2-sweep-capacity-servers-offsets")
    .rests_on(a4_2_cells(rows, &def))
    .note(format!("the bucket's size is read as stated: capacity 100 refilling 100/s (1 s of refill) is stated in the study's bursts paragraph and carried over to the clock paragraph, which does not restate it; the finding rests on that reading (a 0.1-0.25 s bucket gives about 16%). model: {A4_2_MODEL} Run length (pooled here) moves it little: the bucket starts full, so only its first C requests pass whatever the clocks."));
    for (k, v) in m.iter().filter(|(k, _)| **k != def) {
        let s = Summary::of(v);
        out = out.alternative(
            Alternative::new(
                &pairs_of(&A4_2_DETAILS, &[k.0.clone(), k.1.clone(), k.2.clone()]),
                vec![s.mean],
                format!("{} % of ideal", s.show(1)),
            )
            .intervals(vec![mean_cs(v)])
            .rests_on(a4_2_cells(rows, k)),
        );
    }
    Some(out)
}

/// The cells of A4.2's trials at one setting.
fn a4_2_cells(rows: &[Row], key: &(String, String, String)) -> Vec<String> {
    rows.iter()
        .filter(|r| near_limit(r) && &a4_2_key(r) == key)
        .map(|r| r.cell.clone())
        .collect()
}

/// A4.1 with its sweep; the worst pair at other skews goes in the note.
/// The value is the mean over the setting's trial pairs, with its 95%
/// interval, a confidence sequence (the study's "at most 1.3% off" read as a bound on how far the
/// caller clock's bucket typically is from Redis's at that setting); the
/// largest pair is shown beside, not judged: a max over pairs grows with
/// the number of pairs and its bootstrap interval always ends at the sample
/// max, so no number of trials decides it.
pub fn measured_a4_1(rows: &[Row], pairs: &BTreeMap<(String, u64), Pair>) -> Option<Measured> {
    let m = a4_1_sweep(rows, pairs);
    // Default: load 5x, capacity 1 s, 8 evenly spread clocks, the run length closest to 5 s.
    let at_def = |k: &[String; 5]| k[0] == "5" && k[2] == "1" && k[3] == "8" && k[4] == "spread";
    let run = m
        .keys()
        .filter(|k| at_def(k))
        .map(|k| k[1].parse::<f64>().unwrap_or(f64::NAN))
        .min_by(|a, b| (a - 5.0).abs().total_cmp(&(b - 5.0).abs()))
        .map(num);
    let def = default_key(&m, |k| at_def(k) && Some(&k[1]) == run.as_ref())?;
    let v = &m[&def];
    let all: Vec<(String, f64)> = super::a4_1(rows, pairs);
    let shown = |v: &[f64]| {
        format!(
            "mean {:.2}% over {} trial pairs (largest pair {:.2}%, not judged)",
            Summary::of(v).mean,
            v.len(),
            max_of(v)
        )
    };
    let mut out = Measured::new(
        "A4.1",
        vec![Summary::of(v).mean],
        format!(
            "{} at ±1 s skew, load {}x, {} s runs, capacity {} s, {} {} servers",
            shown(v),
            def[0],
            def[1],
            def[2],
            def[3],
            def[4]
        ),
        "skew.csv skew_ms=1000 load_x>=2: |admitted(caller clock) - admitted(Redis clock)| / Redis per trial pair, mean per (load, run length, capacity/rate, servers, clocks)",
    )
    .intervals(vec![mean_cs(v)], mean_cs_method(v.len()).replace(" trials", " trial pairs"))
    .setting(&pairs_of(&A4_1_DETAILS, &def))
    .sweep_figure("a4_1-sweep-run-length-load")
    .note(format!(
        "worst pair per skew, every overload setting: {}. Under overload only a fraction f of the servers can still admit (see A4.2's model), but as long as f x load >= 1 they take every token, so the difference is the start-up transient (up to 2S x rate tokens) over the run's admissions and shrinks with the run length; at lighter overload or small capacities f x load < 1 and the bucket under-admits for the whole run",
        worst_by_skew(&all)
            .iter()
            .map(|(k, v)| format!("±{} ms: {v:.1}%", k.trim_start_matches('S')))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    // The cells of a setting's pairs (by the pair's first row's cell): a
    // disturbed one makes the setting no measurement (`disturbance`).
    let cells_at = |key: &[String; 5]| -> Vec<String> {
        pairs
            .values()
            .map(|p| &rows[p.row])
            .filter(|r| {
                &a4_1_key(r) == key
                    && r.load_x >= 2.0
                    && (r.skew_ms - SKEW_MS).abs() < 1e-9
                    && r.assign == "random"
            })
            .map(|r| r.cell.clone())
            .collect()
    };
    out = out.rests_on(cells_at(&def));
    for (k, v) in m.iter().filter(|(k, _)| **k != def) {
        let a = Alternative::new(
            &pairs_of(&A4_1_DETAILS, k),
            vec![Summary::of(v).mean],
            shown(v),
        )
        .intervals(vec![mean_cs(v)])
        .trials(v.len())
        .rests_on(cells_at(k));
        out = out.alternative(a);
    }
    Some(out)
}

/// A4.2's sweep: % of ideal against capacity/rate, a panel per offset draw,
/// a series per server count; whiskers the 95% interval of the mean.
pub fn figure_a4_2(ctx: &AnalysisCtx, rows: &[Row], ideal: &[f64]) -> Result<String> {
    let m = a4_2_sweep(rows, ideal);
    let draws: Vec<String> = ["spread", "random", "two-point"]
        .iter()
        .map(|s| s.to_string())
        .filter(|d| m.keys().any(|k| &k.2 == d))
        .collect();
    let caps: Vec<f64> = {
        let mut c: Vec<f64> = m.keys().filter_map(|k| k.0.parse().ok()).collect();
        c.sort_by(f64::total_cmp);
        c.dedup();
        c
    };
    let mut fig = Figure::new(
        "a4_2-sweep-capacity-servers-offsets",
        &["A4.2"],
        "caller-clock bucket near the limit at ±1 s skew: % of ideal by capacity, servers, offsets",
        "Admitted / what an ideal bucket admits of the same send times, %, mean per setting with min-max whiskers over its trials ({n} per point; the ring's interval is the judge's 95% confidence sequence at the judged setting); x: bucket capacity / refill rate (s), log scale; a panel names its server counts when not all ran with that offset draw.",
    )
    .columns(draws.len().max(1));
    // A4.2's judged value, ringed at its setting.
    let mut anchors: Vec<Anchor> = Vec::new();
    let all_servers: BTreeSet<String> = m.keys().map(|k| k.1.clone()).collect();
    for d in &draws {
        let here: BTreeSet<String> = m
            .keys()
            .filter(|k| &k.2 == d)
            .map(|k| k.1.clone())
            .collect();
        let mut p = Panel::new(
            if here == all_servers {
                format!("{d} offsets")
            } else {
                format!("{d} offsets ({} servers)", {
                    let mut h: Vec<&String> = here.iter().collect();
                    h.sort_by_key(|v| v.parse::<u64>().unwrap_or(u64::MAX));
                    h.iter().map(|v| v.as_str()).collect::<Vec<_>>().join(", ")
                })
            },
            Axis::log("bucket capacity / refill rate (s)").ticks(caps.clone()),
            Axis::new("caller-clock bucket, % of ideal").range(0.0, 100.0),
        );
        let mut servers: Vec<u64> = m
            .keys()
            .filter(|k| &k.2 == d)
            .filter_map(|k| k.1.parse().ok())
            .collect();
        servers.sort();
        servers.dedup();
        // Server counts are ordered: one hue, light to dark.
        let ws = servers.len();
        for (i, w) in servers.into_iter().enumerate() {
            let name = format!("{w} servers");
            let pts = m
                .iter()
                .filter(|(k, _)| &k.2 == d && k.1 == w.to_string())
                .map(|(k, v)| {
                    let x = k.0.parse().unwrap_or(f64::NAN);
                    anchors.push(
                        Anchor::new("A4.2", fig.panels.len(), x)
                            .at("capacity_s", &k.0)
                            .at("servers", &k.1)
                            .at("offset_draw", &k.2)
                            .on(&name),
                    );
                    Pt::summary(x, &Summary::of(v))
                })
                .collect();
            p = p.series(Series::line(name, pts).ramp(i, ws));
        }
        if let Some(c) = ctx.claim("A4.2") {
            p = p.reference(Reference::published(c, 0));
        }
        fig = fig.panel(p);
    }
    fig.write_anchored_if_any(ctx, anchors)
}

/// A4.1's sweep: the mean pair's difference against the run length (left)
/// and the load (right), a series per setting of the other details;
/// whiskers min..max over the pairs.
pub fn figure_a4_1(
    ctx: &AnalysisCtx,
    rows: &[Row],
    pairs: &BTreeMap<(String, u64), Pair>,
) -> Result<String> {
    let m = a4_1_sweep(rows, pairs);
    let n = |v: &str| v.parse::<f64>().unwrap_or(f64::NAN);
    let sorted = |mut v: Vec<String>| {
        v.sort_by(|a, b| n(a).total_cmp(&n(b)));
        v.dedup();
        v
    };
    // Left: against the run length at the default capacity (1 s of
    // refill), a series per load. Right: against the load, a series per run
    // length and capacity. Every setting appears in at least one panel, and
    // the two panels share no series name, so no colour means two things.
    let default_cap = |k: &[String; 5]| (n(&k[2]) - 1.0).abs() < 1e-9;
    // The y axis from the decade below the smallest value above 0, so it
    // has a labelled tick; a whisker down to 0 (or below the floor) ends at
    // the floor, where a log axis ends.
    let all: Vec<f64> = m.values().flatten().copied().filter(|v| *v > 0.0).collect();
    let y_range = match (
        all.iter().copied().reduce(f64::min),
        all.iter().copied().reduce(f64::max),
    ) {
        (Some(lo), Some(hi)) => {
            let lo = 10f64.powf(lo.log10().floor());
            Some((lo, hi.max(lo * 10.0) * 1.5))
        }
        _ => None,
    };
    let floor = y_range.map(|r| r.0).unwrap_or(0.0);
    let pt = |x: f64, v: &[f64]| {
        let s = Summary::of(v);
        Pt::spread(x, s.mean.max(floor), s.min.max(floor), s.max, s.n)
    };
    // The map's keys are text ("10" before "2"): a line joins its points in
    // x order.
    let by_x = |mut pts: Vec<Pt>| {
        pts.sort_by(|a, b| a.x.total_cmp(&b.x));
        pts
    };
    let published = ctx.claim("A4.1").map(|c| Reference::published(c, 0));
    let runs_at_cap: Vec<f64> = sorted(
        m.keys()
            .filter(|k| default_cap(k))
            .map(|k| k[1].clone())
            .collect(),
    )
    .iter()
    .map(|v| n(v))
    .collect();
    let mut left = Panel::new(
        "against the run length (capacity 1 s)",
        Axis::log("run length (s)").ticks(runs_at_cap),
        Axis::log("|caller - Redis clock| / Redis clock admitted (%)"),
    )
    .dodge();
    // A4.1's judged value is ringed at its setting, in each panel that
    // draws that setting.
    let mut anchors: Vec<Anchor> = Vec::new();
    let anchor = |panel: usize, x: f64, k: &[String; 5], series: &str| {
        A4_1_DETAILS
            .iter()
            .zip(k.iter())
            .fold(Anchor::new("A4.1", panel, x), |a, (d, v)| a.at(d, v))
            .on(series)
    };
    // Loads are ordered: one hue, light to dark.
    let left_loads = sorted(
        m.keys()
            .filter(|k| default_cap(k))
            .map(|k| k[0].clone())
            .collect(),
    );
    for (i, load) in left_loads.iter().enumerate() {
        let name = format!("load {load}x, capacity 1 s");
        let pts: Vec<Pt> = m
            .iter()
            .filter(|(k, _)| default_cap(k) && k[0] == *load)
            .map(|(k, v)| {
                anchors.push(anchor(0, n(&k[1]), k, &name));
                pt(n(&k[1]), v)
            })
            .collect();
        left = left.series(Series::line(name, by_x(pts)).ramp(i, left_loads.len()));
    }
    let loads: Vec<f64> = sorted(m.keys().map(|k| k[0].clone()).collect())
        .iter()
        .map(|v| n(v))
        .collect();
    let mut right = Panel::new(
        "against the load",
        Axis::log("offered load (x the refill rate)").ticks(loads),
        Axis::log("|caller - Redis clock| / Redis clock admitted (%)"),
    )
    .dodge();
    let mut run_cap: Vec<(String, String)> =
        m.keys().map(|k| (k[1].clone(), k[2].clone())).collect();
    run_cap.sort_by(|a, b| {
        n(&a.0)
            .total_cmp(&n(&b.0))
            .then(n(&a.1).total_cmp(&n(&b.1)))
    });
    run_cap.dedup();
    // Run length and capacity, a second parameter beside the left panel's
    // loads: the neutral near-black looks, a marker and dash each.
    for (k, (run, cap)) in run_cap.into_iter().enumerate() {
        let name = format!("{run} s runs, capacity {cap} s");
        let pts: Vec<Pt> = m
            .iter()
            .filter(|(k, _)| k[1] == run && k[2] == cap)
            .map(|(k, v)| {
                anchors.push(anchor(1, n(&k[0]), k, &name));
                pt(n(&k[0]), v)
            })
            .collect();
        right = right.series(Series::line(name, by_x(pts)).neutral(k));
    }
    if let Some(r) = published {
        left = left.reference(r.clone());
        right = right.reference(r);
    }
    if let Some((lo, hi)) = y_range {
        left.y = left.y.range(lo, hi);
        right.y = right.y.range(lo, hi);
    }
    let servers: Vec<String> = {
        let mut v: Vec<String> = m.keys().map(|k| format!("{} {}", k[3], k[4])).collect();
        v.sort();
        v.dedup();
        v
    };
    let fig = Figure::new(
        "a4_1-sweep-run-length-load",
        &["A4.1"],
        "caller-clock bucket under overload at ±1 s skew: distance from the Redis-clock bucket",
        format!(
            "Mean |admitted(caller clock) - admitted(Redis clock)| / admitted(Redis clock) over the trial pairs of a setting (marker: what A4.1 judges), whiskers min..max over its pairs (the top of a whisker is the largest pair, shown, not judged) ({{n}} per point: few pairs, so read the spread as indicative; a whisker down to 0 ends at the axis floor); log scales, against the run length (left) and the offered load (right); servers and offsets: {}.",
            servers.join(", ")
        ),
    )
    .columns(2)
    .panel(left)
    .panel(right);
    fig.write_anchored_if_any(ctx, anchors)
}
