//! B2.5: the sliding log's limit (L = 100 vs L = 10,000) within run-to-run
//! noise of CPU per decision, judged at every fill level of the logs (a
//! detail the study leaves unstated) where the smaller limit binds:
//! `normal` (the study's normal traffic, logs emptied before each run:
//! they admit, the ZADD path; L=100 never binds there, so it is shown and
//! not judged),
//! `steady` (about L entries over a window sized so each decision trims
//! about one and adds one) and `full` (prefilled to L: every decision is
//! refused, the refusal path).

use super::paired::{ci, per_run};
use super::{LUA_SETTING, Variants, abs_interval, gate, rel_sd, words};
use limitbench_analysis::Measured;
use limitbench_analysis::stats::mean_cs_method;

/// The fill levels, the default first.
const FILLS: &[&str] = &["normal", "steady", "full"];

/// One fill level's comparison of the smallest and largest limit.
struct Level {
    diff_pct: f64,
    iv: (f64, f64),
    bound_pct: f64,
    n: usize,
    display: String,
    cells: [String; 2],
}

/// The sliding-log cells of fill level `fill`, in run order.
fn cells<'v>(v: &'v Variants, fill: &str) -> Vec<&'v String> {
    let end = format!("|{fill}");
    v.order
        .iter()
        .filter(|c| c.starts_with("sliding-window-log|L") && c.ends_with(&end))
        .collect()
}

fn level(v: &Variants, fill: &str) -> Option<Level> {
    let cs = cells(v, fill);
    if cs.len() < 2 {
        return None;
    }
    let (a, b) = (&v.by[cs[0]], &v.by[cs[cs.len() - 1]]);
    let (ca, cb) = (a.cpu(), b.cpu());
    let diff = (cb.mean - ca.mean).abs() / ca.mean;
    let spread = rel_sd(&ca).max(rel_sd(&cb));
    let runs = per_run(b, a, |x, y| {
        (x.redis_cpu_us_per_decision / y.redis_cpu_us_per_decision - 1.0) * 100.0
    });
    let iv = abs_interval(ci(&runs));
    Some(Level {
        diff_pct: diff * 100.0,
        iv: (iv.0.min(diff * 100.0), iv.1.max(diff * 100.0)),
        bound_pct: 200.0 * spread,
        n: runs.len(),
        display: format!(
            "{fill}: {:.1}% ({}: {} µs, {:.0}% admitted; {}: {} µs, {:.0}% admitted; larger run-to-run sd {:.1}%)",
            diff * 100.0,
            words(cs[0]),
            ca.show(2),
            a.admitted_pct(),
            words(cs[cs.len() - 1]),
            cb.show(2),
            b.admitted_pct(),
            spread * 100.0
        ),
        cells: [cs[0].clone(), cs[cs.len() - 1].clone()],
    })
}

/// The runs of fill level `fill`'s two logs whose Redis was not saturated
/// (the validity check that makes B2.5 no finding), for the figure.
/// |CPU(largest L) - CPU(smallest L)| / CPU(smallest L) of fill level
/// `fill`, and the larger run-to-run relative sd of the two.
pub fn fill_difference(v: &Variants, fill: &str) -> Option<(f64, f64)> {
    level(v, fill).map(|l| (l.diff_pct / 100.0, l.bound_pct / 200.0))
}

fn unsaturated_runs(v: &Variants, l: &Level) -> usize {
    l.cells
        .iter()
        .filter_map(|c| v.get(c))
        .flat_map(|x| x.rows.iter())
        .filter(|r| !(super::validity::busy(r) >= super::validity::MIN_BUSY))
        .count()
}

fn what(fill: &str, bound: f64) -> String {
    format!("{fill}: difference <= 2 x the larger run-to-run relative sd ({bound:.1}%)")
}

/// Whether the smaller limit binds at this fill level: some decision of
/// its log was refused, so the log reached L. Where it never binds, both
/// limits run the same commands on the same logs and the claim cannot
/// fail (the third review's objection to judging B2.5 at `normal`).
fn binds(v: &Variants, l: &Level) -> bool {
    v.get(&l.cells[0]).is_some_and(|c| c.admitted_pct() < 100.0)
}

/// B2.5 over its scope: every measured fill level at which the smaller
/// limit binds (the sentence is about the sliding log's cost in general,
/// and only where the log can reach L can L change it); each such level's
/// difference must lie within its noise bound. A level where L never binds
/// is shown, not judged.
pub fn b25(v: &Variants) -> Option<Measured> {
    let levels: Vec<(&str, Level)> = FILLS
        .iter()
        .filter_map(|f| level(v, f).map(|l| (*f, l)))
        .collect();
    if levels.is_empty() {
        return None;
    }
    let shown = levels
        .iter()
        .map(|(_, l)| {
            if binds(v, l) {
                l.display.clone()
            } else {
                format!("{} [the limit never binds: not judged]", l.display)
            }
        })
        .collect::<Vec<_>>()
        .join("; ");
    let evidence = "cost.csv: redis_cpu_us_per_decision of sliding-window-log|L<l>|<fill> (normal, steady: cell swl-fill; full: prefilled)";
    let judged: Vec<&(&str, Level)> = levels.iter().filter(|(_, l)| binds(v, l)).collect();
    let scope: Vec<&str> = judged.iter().map(|(f, _)| *f).collect();
    let mut setting: Vec<(&str, &str)> = LUA_SETTING.to_vec();
    let scope_text = if scope.is_empty() {
        "none".to_string()
    } else {
        scope.join("+")
    };
    setting.push(("swl_fill", &scope_text));
    let mut m = Measured::new(
        "B2.5",
        judged.iter().map(|(_, l)| l.diff_pct).collect(),
        shown,
        evidence,
    )
    .intervals(
        judged.iter().map(|(_, l)| l.iv).collect(),
        format!(
            "{} of the per-run difference (paired by run), as |difference|, per fill level where the limit binds",
            mean_cs_method(judged.iter().map(|(_, l)| l.n).min().unwrap_or(0))
        ),
    )
    .setting(&setting);
    for (f, l) in &judged {
        m = m.band_condition(what(f, l.bound_pct), l.iv, (0.0, l.bound_pct));
    }
    // The levels built to make L bind: a run folder without one of them
    // (an older one) has not covered the scope, so it cannot pass.
    for f in ["steady", "full"] {
        if !levels.iter().any(|(g, _)| *g == f) {
            m.undecided.push(format!(
                "the {f} fill level (built so that L binds) was not measured in this run folder (cell {})",
                if f == "full" { "main" } else { "swl-fill" }
            ));
        }
    }
    if judged.is_empty() {
        m = m.invalid(
            "the smaller limit never binds at any measured fill level (every decision of the L=100 log admitted), so L cannot change the cost here and the claim cannot fail: no finding",
        );
    } else {
        m = gate(
            m,
            v,
            judged
                .iter()
                .flat_map(|(_, l)| l.cells.iter().map(|c| c.as_str())),
        );
    }
    Some(m.note(
        "scope: the fill levels where the smaller limit binds (the L=100 log refuses some decisions, so it reached L); where it never binds both limits run the same commands on the same logs and the sentence cannot fail. Fill levels (unstated, all measured): normal = the study's normal traffic, logs emptied before each run so they admit (the ZADD path); steady = about L entries over a window sized so each decision trims about one and adds one; full = prefilled to L, every decision refused (trim nothing, ZCARD: the refusal path)",
    ))
}

/// Every measured fill level: (fill, difference %, interval, noise bound
/// %, whether the smaller limit binds, runs that failed saturation), for
/// the figure.
pub fn fill_levels(v: &Variants) -> Vec<(&'static str, f64, (f64, f64), f64, bool, usize)> {
    FILLS
        .iter()
        .filter_map(|f| {
            level(v, f).map(|l| {
                (
                    *f,
                    l.diff_pct,
                    l.iv,
                    l.bound_pct,
                    binds(v, &l),
                    unsaturated_runs(v, &l),
                )
            })
        })
        .collect()
}
