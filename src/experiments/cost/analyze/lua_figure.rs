//! The figure of B2.1-B2.3: the Lua strategies against GET (CPU ratio,
//! throughput and busy fraction, the script's share and time), each panel
//! against the published values from the claims table (the authors'
//! machine's beside the part that is judged).

use super::labels::{b21_reference, machine_lines, percent_in, words};
use super::{Variants, b21_split};
use limitbench_analysis::AnalysisCtx;
use limitbench_analysis::figure::{
    Anchor, Axis, Figure, Panel, Pt, RefKind, Reference, Series, num,
};
use limitbench_analysis::figure::{ClaimReference, SummaryPoint, WriteFigure};
use limitbench_base::error::Result;

/// B2.1-B2.3: the Lua variants against GET, their rates and script times.
// Longer than 120 lines: one figure of four panels (B2.1, B2.2 throughput and busy, B2.3) over the same per-strategy runs; each panel is one marked block.
pub(super) fn lua(ctx: &AnalysisCtx, v: &Variants) -> Result<String> {
    let lua = v.lua();
    if lua.is_empty() {
        return Ok(String::new());
    }
    let cats: Vec<String> = lua
        .iter()
        .map(|(c, _)| {
            words(c)
                .replace(" (EVALSHA", " (")
                .replace(" ()", "")
                .replace("(, ", "(")
        })
        .collect();
    let mut fig = Figure::new(
        "b2_1-b2_3-lua-vs-get",
        &["B2.1", "B2.2", "B2.3"],
        "the Lua strategies (EVALSHA, uniform keys): CPU against GET, throughput, script time",
        format!(
            "Means over interleaved runs of {} s ({{n}} per point); B2.1's whiskers: the 95% confidence sequence of the mean of the per-run ratios (what the judge compares), the other panels': min-max over runs; x GET divides each run's CPU per decision by GET's mean; B2.2 and B2.3 are machine claims (the published values are the authors' machine's, judged on shape only).",
            limitbench_analysis::figure::num(
                lua.iter()
                    .flat_map(|(_, l)| l.rows.iter().map(|r| r.wall_s))
                    .sum::<f64>()
                    / lua.iter().map(|(_, l)| l.rows.len()).sum::<usize>().max(1) as f64
            )
        ),
    );
    // B2.1's judged values: each run's ratio to GET in the same run, the
    // mean and 95% interval over runs (the values the verdict compares),
    // in the categories' order (b21_split keeps `v.lua()`'s).
    // Each judged value ringed where the figure draws it (panel, category).
    let mut anchors = Vec::new();
    if let Some((_, splits)) = b21_split(v) {
        anchors.extend((0..splits.len()).map(|i| {
            Anchor::new("B2.1", fig.panels.len(), i as f64)
                .value(i)
                .on("Lua strategy / GET, per-run pairs (mean, 95% interval)")
        }));
        let pts = splits
            .iter()
            .enumerate()
            .map(|(i, s)| Pt::spread(i as f64, s.total.0, s.total.1.0, s.total.1.1, s.total.2))
            .collect();
        let mut p = Panel::new(
            "B2.1: Redis CPU per decision / GET's",
            Axis::new("Lua strategy"),
            Axis::new("x GET's CPU per decision"),
        )
        .categories(cats.clone())
        .series(Series::points(
            "Lua strategy / GET, per-run pairs (mean, 95% interval)",
            pts,
        ))
        .reference(Reference::limit("GET (1x)", 1.0));
        if let Some(c) = ctx.claim("B2.1") {
            p = p.reference(b21_reference(c));
        }
        fig = fig.panel(p);
    }
    let rates = lua
        .iter()
        .enumerate()
        .map(|(i, (_, l))| Pt::summary(i as f64, &l.rate()))
        .collect();
    let mut p = Panel::new(
        "B2.2: throughput with Redis's thread busy",
        Axis::new("Lua strategy"),
        Axis::new("decisions per second"),
    )
    .categories(cats.clone())
    .series(Series::points("decisions/s", rates));
    if let Some(c) = ctx.claim("B2.2")
        && let Some(n) = &c.authors_machine
    {
        p = p.reference(machine_lines(
            &format!(
                "B2.2 published: {} (the authors' machine; judged: fastest / slowest, {} +- {})",
                limitbench_analysis::report::micro(&c.published_text),
                c.published.at(0),
                c.tolerance.at(0)
            ),
            n.values(),
        ));
    }
    fig = fig.panel(p);
    // B2.2's other half: how busy Redis was while it decided.
    let busy = lua
        .iter()
        .enumerate()
        .map(|(i, (_, l))| Pt::summary(i as f64, &l.s(|r| r.redis_busy_fraction * 100.0)))
        .collect();
    let mut p = Panel::new(
        "B2.2: how busy Redis was during the runs",
        Axis::new("Lua strategy"),
        Axis::new("Redis busy (% of wall time)").range(0.0, 105.0),
    )
    .categories(cats.clone())
    .series(Series::points("Redis busy", busy));
    if let Some(c) = ctx.claim("B2.2")
        && let Some(b) = percent_in(&c.published_text)
    {
        p = p.reference(Reference {
            kind: RefKind::Published,
            label: format!("B2.2 published: at least {}% busy (machine claim)", num(b)),
            value: Some(b),
            band: None,
            x: None,
            lines: vec![],
        });
    }
    fig = fig.panel(p);
    // B2.2's judged value: fastest / slowest decisions/s, paired by run.
    if let Some(sp) = super::lua::spread(v, &lua, |r| r.decisions_per_s) {
        let mut p = Panel::new(
            "B2.2 (judged): fastest / slowest decisions per second",
            Axis::new(""),
            Axis::new("fastest / slowest strategy's rate"),
        )
        .categories(vec!["Lua strategies".into()])
        .series(Series::points(
            "per-run ratio (mean, 95% interval)",
            vec![Pt::spread(0.0, sp.0, sp.1.0, sp.1.1, sp.2)],
        ));
        if let Some(c) = ctx.claim("B2.2") {
            p = p.reference(Reference::published(c, 0));
        }
        anchors.push(
            Anchor::new("B2.2", fig.panels.len(), 0.0).on("per-run ratio (mean, 95% interval)"),
        );
        fig = fig.panel(p);
    }
    // B2.3's judged values: the script's share of each decision's CPU.
    let shares: Vec<Pt> = lua
        .iter()
        .enumerate()
        .map(|(i, (_, l))| {
            let e = super::paired::est(&super::paired::each(l, |r| {
                r.cmd_usec_per_decision / r.redis_cpu_us_per_decision
            }));
            Pt::spread(i as f64, e.0, e.1.0, e.1.1, e.2)
        })
        .collect();
    let mut p = Panel::new(
        "B2.3 (judged): the script's share of each decision's CPU",
        Axis::new("Lua strategy"),
        Axis::new("script time / CPU per decision"),
    )
    .categories(cats.clone())
    .series(Series::points("share per run (mean, 95% interval)", shares));
    if let Some(c) = ctx.claim("B2.3") {
        p = p.reference(Reference::published(c, 0));
    }
    anchors.extend((0..lua.len()).map(|i| {
        Anchor::new("B2.3", fig.panels.len(), i as f64)
            .value(i)
            .on("share per run (mean, 95% interval)")
    }));
    fig = fig.panel(p);
    let script = lua
        .iter()
        .enumerate()
        .map(|(i, (_, l))| Pt::summary(i as f64, &l.s(|r| r.cmd_usec_per_call)))
        .collect();
    let cpu = lua
        .iter()
        .enumerate()
        .map(|(i, (_, l))| Pt::summary(i as f64, &l.cpu()))
        .collect();
    let mut p = Panel::new(
        "B2.3: the script's own time within the CPU per decision",
        Axis::new("Lua strategy"),
        Axis::new("time (µs per call or decision)"),
    )
    .categories(cats)
    .series(Series::points(
        "B2.3's quantity: script time per call (commandstats)",
        script,
    ))
    .series(Series::points(
        "not B2.3's quantity, for scale: whole Redis CPU per decision",
        cpu,
    ));
    if let Some(c) = ctx.claim("B2.3")
        && let Some(n) = &c.authors_machine
    {
        p = p.reference(machine_lines(
            &format!(
                "B2.3 published: {} (the authors' machine; judged: the script's share of a decision, {}-{})",
                limitbench_analysis::report::micro(&c.published_text),
                c.published.at(0),
                c.published.at(1)
            ),
            n.values(),
        ));
    }
    fig = fig.panel(p);
    fig.write_anchored(ctx, anchors)
}
