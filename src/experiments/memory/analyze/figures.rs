//! The figures of `memory`: bytes per entry against the limit (B3.1, B3.3),
//! bytes per client with the cliff's jump and the 100,000-entry log (B3.2,
//! B4.3), and the cliff and CPU per decision at other listpack sizes (B3.4).
//! Each point is one measurement (a fill of many clients), so no whiskers.

use super::super::rows::MemoryRow;
use super::verdicts::SWEEP_FIGURE;
use super::{Est, LogCells};
use limitbench_analysis::AnalysisCtx;
use limitbench_analysis::figure::{Anchor, Axis, Figure, Panel, Pt, Reference, Series, num};
use limitbench_analysis::figure::{ClaimReference, WriteFigure};
use limitbench_base::error::Result;

/// A member length in words (0 is the strategy's own member, the request id).
pub fn member(m: usize) -> String {
    if m == 0 {
        "request id in decimal".into()
    } else {
        format!("{m}-character members")
    }
}

fn limits(cells: &LogCells, z: u64) -> Vec<f64> {
    let mut v: Vec<f64> = cells
        .main
        .keys()
        .filter(|k| k.1 == z)
        .map(|k| k.2 as f64)
        .collect();
    v.sort_by(f64::total_cmp);
    v.dedup();
    v
}

/// B3.1 and B3.3: bytes per entry against the limit, one line per member length.
pub(super) fn bytes_per_entry(
    ctx: &AnalysisCtx,
    cells: &LogCells,
    other: &[&MemoryRow],
) -> Result<String> {
    // The limits as categories: 127, 128 and 129 get a tick each (on a log
    // axis they fall on one), and the member lengths stand side by side.
    let ls = limits(cells, 128);
    let at = |l: f64| ls.iter().position(|x| *x == l).map(|i| i as f64);
    let mut p = Panel::new(
        "",
        Axis::new("limit L (entries per client; not to scale)"),
        Axis::new("bytes per entry"),
    )
    .categories(ls.iter().map(|l| num(*l)).collect());
    for m in &cells.member_lens {
        let pts = cells
            .main
            .iter()
            .filter(|(k, _)| k.0 == *m && k.1 == 128)
            .filter_map(|(k, _)| {
                let x = at(k.2 as f64)?;
                let e = cells.bytes_per_entry(k.0, k.1, k.2)?;
                Some(Pt::spread(x, e.v, e.lo, e.hi, e.n))
            })
            .collect();
        p = p.series(
            Series::line(member(*m), pts).ramp(member_step(cells, *m), cells.member_lens.len()),
        );
    }
    // The last listpack limit (128) and the first skiplist one (129).
    let last_lp = ls.iter().rposition(|l| *l <= 128.0);
    if let (Some(c), Some(i)) = (ctx.claim("B3.1"), last_lp) {
        p = p.reference(Reference::published(c, 0).over(-0.5, i as f64 + 0.5));
    }
    // B3.3's band over the limits it covers (from the first after the conversion at 129).
    let first_past = ls.iter().position(|l| *l >= super::PAST_CLIFF_FROM as f64);
    if let (Some(c), Some(i)) = (ctx.claim("B3.3"), first_past) {
        p = p.reference(Reference::published(c, 0).over(i as f64 - 0.5, ls.len() as f64 - 0.5));
    }
    if p.points() == 0 {
        return Ok(String::new());
    }
    // B3.3's last clause: the sliding-window counter per 10,000 clients.
    let (two_keys, hash) = super::verdicts::counter_mb(other);
    let mut counter = Panel::new(
        "B3.3: the same 10,000 clients on a sliding-window counter",
        Axis::new("how the counter's two integers are stored"),
        Axis::new("MB per 10,000 clients"),
    )
    .categories(vec![
        "two keys per client (a reading; not tested)".into(),
        "one hash per client (our counter; shown)".into(),
    ])
    .series(Series::points(
        "ours, per fill",
        two_keys
            .iter()
            .map(|v| Pt::new(0.0, *v))
            .chain(hash.iter().map(|v| Pt::new(1.0, *v)))
            .collect(),
    ));
    if let Some((v, band)) = super::verdicts::counter_band(ctx) {
        counter = counter.reference(Reference {
            kind: limitbench_analysis::figure::RefKind::Published,
            label: format!(
                "B3.3 published: the counter needs {v} MB per 10,000 clients; shaded: passes ({}-{} MB, its rounding to 0.1 MB and 1%)",
                num(band.0),
                num(band.1)
            ),
            value: Some(v),
            band: Some(band),
            x: None,
            lines: vec![],
        });
    }
    let with_counter = counter.points() > 0;
    let fig = Figure::new(
        "b3_1-b3_3-bytes-per-entry",
        &["B3.1", "B3.3"],
        "sliding-log memory per entry: listpack up to 128 entries, skiplist past it, per member length",
        format!("The mean over trials of each cell, the value the claims are judged on, with its 95% interval as whiskers (used_memory growth over {} to {} clients filled to L, zset-max-listpack-entries 128); the claims are judged on the default members; the study does not state its member length, so the other member lengths are drawn too, side by side at each L; B3.1's band covers the listpack limits (up to 128), B3.3's the skiplist ones from 256 (129 is the conversion itself, B3.2). The second panel, B3.3's last clause (the sliding-window counter per 10,000 clients), is shown, not tested: its size is set by how the counter's two integers are stored and by the keys' names, neither stated, so B3.3 stays undecided on it whatever the bytes per entry read.",
        cells.main.values().map(|r| r.clients).min().unwrap_or(0),
        cells.main.values().map(|r| r.clients).max().unwrap_or(0)),
    )
    .panel(p);
    // Each claim's judged value ringed at the member length it was judged
    // at: B3.1 at L=128, B3.3's values at each L past the cliff.
    let mut anchors = Vec::new();
    for m in &cells.member_lens {
        let ring = |id: &str, l: f64, k: usize| {
            at(l).map(|x| {
                Anchor::new(id, 0, x)
                    .at(super::verdicts::DETAIL, &m.to_string())
                    .value(k)
                    .on(member(*m))
            })
        };
        anchors.extend(ring("B3.1", 128.0, 0));
        for (k, (l, _)) in cells.b33(*m).iter().enumerate() {
            anchors.extend(ring("B3.3", *l as f64, k));
        }
    }
    if with_counter {
        fig.panel(counter).write_anchored(ctx, anchors)
    } else {
        fig.write_anchored(ctx, anchors)
    }
}

/// B3.2 and B4.3: bytes per client against L, the jump at 129 and the
/// 100,000-entry log per member length.
pub(super) fn per_client(ctx: &AnalysisCtx, cells: &LogCells, zs: &[u64]) -> Result<String> {
    let mut a = Panel::new(
        "bytes per client against L",
        Axis::log("limit L (entries per client)"),
        Axis::log("bytes per client"),
    );
    a.x =
        a.x.clone()
            .ticks(vec![16.0, 128.0, 1000.0, 10_000.0, 100_000.0]);
    for m in &cells.member_lens {
        let pts = cells
            .main
            .iter()
            .filter(|(k, _)| k.0 == *m && k.1 == 128)
            .map(|(k, r)| Pt::new(k.2 as f64, r.bytes_per_client))
            .collect();
        a = a.series(
            Series::line(member(*m), pts).ramp(member_step(cells, *m), cells.member_lens.len()),
        );
    }
    for &z in zs.iter().filter(|z| **z != 128) {
        let pts = cells
            .main
            .iter()
            .filter(|(k, _)| k.0 == cells.default_member_len() && k.1 == z)
            .map(|(k, r)| Pt::new(k.2 as f64, r.bytes_per_client))
            .collect();
        a = a.series(Series::points(
            format!("zset-max-listpack-entries {z}, default members"),
            pts,
        ));
    }
    let cats: Vec<String> = cells
        .member_lens
        .iter()
        .map(|m| {
            if *m == 0 {
                "default".into()
            } else {
                m.to_string()
            }
        })
        .collect();
    // Claim `id`'s value per member length, beside the published one.
    let by_member = |id: &str, title: &str, y: &str, f: &dyn Fn(usize) -> Option<f64>| {
        let mut p = Panel::new(title, Axis::new("member length (characters)"), Axis::new(y))
            .categories(cats.clone())
            .series(Series::points(
                "ours, zset-max-listpack-entries 128",
                cells
                    .member_lens
                    .iter()
                    .enumerate()
                    .filter_map(|(i, m)| f(*m).map(|v| Pt::new(i as f64, v)))
                    .collect(),
            ));
        if let Some(c) = ctx.claim(id) {
            p = p.reference(Reference::published(c, 0));
        }
        p
    };
    let b = by_member(
        "B3.2",
        "B3.2: bytes per client at 129 / at 128",
        "x (129 entries / 128 entries)",
        &|m| cells.b32_jump(m),
    );
    let d = by_member(
        "B4.3",
        "B4.3: one client's log of 100,000 entries",
        "MB per client",
        &|m| cells.b43_mb_per_client(m),
    );
    // Each claim's judged value ringed at the member length it was judged
    // at (panels b and d follow a, each only if it has points).
    let series = "ours, zset-max-listpack-entries 128";
    let (at_b, at_d) = (1, if b.points() > 0 { 2 } else { 1 });
    let anchors: Vec<Anchor> = [("B3.2", at_b, b.points()), ("B4.3", at_d, d.points())]
        .into_iter()
        .filter(|x| x.2 > 0)
        .flat_map(|(id, panel, _)| {
            cells.member_lens.iter().enumerate().map(move |(i, m)| {
                Anchor::new(id, panel, i as f64)
                    .at(super::verdicts::DETAIL, &m.to_string())
                    .on(series)
            })
        })
        .collect();
    Figure::new(
        "memory_per_client_vs_limit",
        &["B3.2", "B4.3"],
        "sliding-log memory per client: the jump at the listpack cliff and a 100,000-entry log",
        "The mean over trials (used_memory growth / clients; the spread is in the member-length figure); B3.2 and B4.3 are judged on the default members; the other member lengths show how much the unstated member size matters.",
    )
    // Three panels in one row: no empty slot beside the last.
    .columns(3)
    .panel(a)
    .panel_if_any(b)
    .panel_if_any(d)
    .write_anchored_if_any(ctx, anchors)
}

/// B3.4: the cliff at each zset-max-listpack-entries and CPU per decision by log size.
pub(super) fn cpu(
    ctx: &AnalysisCtx,
    cliffs: &[(u64, &MemoryRow, &MemoryRow, f64)],
    zs: &[u64],
    cpu: &[&MemoryRow],
) -> Result<String> {
    let mut a = Panel::new(
        "where the cliff is",
        Axis::log("zset-max-listpack-entries Z").ticks(cliffs.iter().map(|c| c.0 as f64).collect()),
        Axis::new("bytes per client at Z+1 / at Z (x)"),
    )
    .series(Series::line(
        "jump from Z to Z+1 entries",
        cliffs.iter().map(|c| Pt::new(c.0 as f64, c.3)).collect(),
    ))
    .reference(Reference::expected("1x: no jump, no difference", 1.0));
    a.title = "the jump follows Z".into();
    let mut b = Panel::new(
        "CPU per admitted decision by log size",
        Axis::new("entries in the log").ticks({
            let mut v: Vec<f64> = cpu.iter().map(|r| r.fill_per_client as f64).collect();
            v.sort_by(f64::total_cmp);
            v.dedup();
            v
        }),
        Axis::new("Redis CPU per decision (µs)"),
    );
    let cells = super::cpu_cells(cpu);
    for z in zs {
        let pts = cells
            .iter()
            .filter(|c| c.z == *z)
            .filter_map(|c| {
                c.est()
                    .map(|e| Pt::spread(c.n as f64, e.v, e.lo, e.hi, e.n))
            })
            .collect();
        // Z values are ordered: one hue, light to dark.
        let step = zs.iter().filter(|y| **y < *z).count();
        b = b.series(Series::line(format!("Z = {}", num(*z as f64)), pts).ramp(step, zs.len()));
    }
    // B3.4's judged quantity: a listpack's CPU per decision over a
    // skiplist's at the same number of entries (above 1: the listpack costs more).
    let mut c = Panel::new(
        "B3.4's judged ratio: listpack / skiplist",
        Axis::new(""),
        Axis::new("CPU per decision, listpack / skiplist (x)"),
    );
    let pairs = super::listpack_vs_skiplist(&cells);
    if !pairs.is_empty() {
        let dearer = 1.0 + ctx.claim("B3.4").map(|c| c.tolerance.at(0)).unwrap_or(0.05);
        c = c
            .categories(
                pairs
                    .iter()
                    .map(|p| format!("{} entries, Z {} / {}", num(p.a.n as f64), p.a.z, p.b.z))
                    .collect(),
            )
            .series(Series::points(
                "ours (mean, 95% interval over windows)",
                pairs
                    .iter()
                    .enumerate()
                    .map(|(i, p)| Pt::spread(i as f64, p.est.v, p.est.lo, p.est.hi, p.est.n))
                    .collect(),
            ))
            .reference(Reference::expected("1x: no jump, no difference", 1.0))
            .reference(Reference::limit(
                format!("dearer: at or above {dearer:.2}x (1 + the run-to-run noise of CPU per decision)"),
                dearer,
            ))
            .y_from_zero(1.3);
    }
    let published = ctx
        .claim("B3.4")
        .map(|c| c.published_text.clone())
        .unwrap_or_default();
    Figure::new(
        "memory_cpu_listpack",
        &["B3.4"],
        "raising zset-max-listpack-entries moves the cliff, and a big listpack costs more CPU per decision",
        format!(
            "The cliff: one fill per point; CPU: the mean over measured windows per point (the default members; every call admits), the ratio with its 95% interval over windows paired by trial index. The study publishes no number for B3.4 (\"{published}\"); it is judged on these two shapes."
        ),
    )
    .columns(3)
    .panel_if_any(a)
    .panel_if_any(b)
    .panel_if_any(c)
    .write_if_any(ctx)
}

/// The sensitivity sweep of B3.1, B3.2, B3.3 (at L=1,000) and B4.3 over the
/// member length: mean and 95% interval over trials, published value drawn.
pub(super) fn member_sweep(ctx: &AnalysisCtx, cells: &LogCells) -> Result<String> {
    let m0 = cells.default_member_len();
    let xs: Vec<f64> = cells.member_lens.iter().map(|m| *m as f64).collect();
    let panel = |id: &str, title: &str, y: &str, f: &dyn Fn(usize) -> Option<Est>| {
        let pt = |m: &usize| f(*m).map(|e| Pt::spread(*m as f64, e.v, e.lo, e.hi, e.n));
        let mut p = Panel::new(title, Axis::new("member length (characters)"), Axis::new(y));
        p.x = p.x.clone().ticks(xs.clone());
        p = p.series(Series::line(
            "ours (mean, 95% interval over trials)",
            cells.member_lens.iter().filter_map(pt).collect(),
        ));
        p = p.series(Series::points(
            format!("default: member_len {m0}"),
            pt(&m0).into_iter().collect(),
        ));
        if let Some(c) = ctx.claim(id) {
            p = p.reference(Reference::published(c, 0));
        }
        p
    };
    let fig = Figure::new(
        SWEEP_FIGURE,
        &["B3.1", "B3.2", "B3.3", "B4.3"],
        "sliding-log memory against the member length the study does not state",
        "Mean and the judged 95% interval (a confidence sequence) over independent fills ({n}), zset-max-listpack-entries 128. The claims are judged at the default member length; the others are the sensitivity sweep (a claim reproduced only at another length is reproduced-with-assumption; member_len 26 itself is an assumption).",
    )
    .columns(2)
    .panel(panel("B3.1", "B3.1: bytes per entry, L=128 (listpack)", "bytes per entry", &|m| cells.b31(m)))
    .panel(panel("B3.2", "B3.2: bytes per client at 129 / at 128", "x (129 entries / 128 entries)", &|m| cells.b32(m)))
    .panel(panel("B3.3", "B3.3: bytes per entry, L=1,000 (skiplist)", "bytes per entry", &|m| {
        cells.b33(m).into_iter().find(|x| x.0 == 1000).map(|x| x.1)
    }))
    .panel(panel("B4.3", "B4.3: MB per client, L=100,000", "MB (1,000,000 bytes)", &|m| cells.b43(m)));
    // Each claim's judged value ringed at the member length it was judged
    // at (B3.3's panel draws its L=1,000 value).
    let b33_at = cells.b33(m0).iter().position(|x| x.0 == 1000).unwrap_or(0);
    let anchors: Vec<Anchor> = [
        ("B3.1", 0, 0),
        ("B3.2", 1, 0),
        ("B3.3", 2, b33_at),
        ("B4.3", 3, 0),
    ]
    .iter()
    .flat_map(|(id, panel, value)| {
        cells.member_lens.iter().map(move |m| {
            Anchor::new(id, *panel, *m as f64)
                .at(super::verdicts::DETAIL, &m.to_string())
                .value(*value)
                .on("ours (mean, 95% interval over trials)")
        })
    })
    .collect();
    fig.write_anchored_if_any(ctx, anchors)
}

/// Member length `m`'s step on a ramp of the lengths measured (ascending):
/// lengths are ordered, drawn in one hue, light to dark.
fn member_step(cells: &LogCells, m: usize) -> usize {
    cells.member_lens.iter().position(|x| *x == m).unwrap_or(0)
}
