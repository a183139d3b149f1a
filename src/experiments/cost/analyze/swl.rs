//! B2.5: the sliding log's limit (L = 100 vs L = 10,000) within run-to-run
//! noise of CPU per decision, at each fill level of the logs (a detail the
//! study leaves unstated, swept): `normal` (the study's normal traffic,
//! logs emptied before each run: they admit, the ZADD path; the default),
//! `steady` (about L entries over a window sized so each decision trims
//! about one and adds one) and `full` (prefilled to L: every decision is
//! refused, the refusal path).

use super::paired::{ci, per_run};
use super::{LUA_SETTING, Variants, abs_interval, gate, rel_sd, words};
use limitbench_analysis::Measured;
use limitbench_analysis::claims::Alternative;
use limitbench_analysis::stats::mean_ci_method;

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

/// |CPU(largest L) - CPU(smallest L)| / CPU(smallest L) of fill level
/// `fill`, and the larger run-to-run relative sd of the two.
pub fn fill_difference(v: &Variants, fill: &str) -> Option<(f64, f64)> {
    level(v, fill).map(|l| (l.diff_pct / 100.0, l.bound_pct / 200.0))
}

/// The runs of fill level `fill`'s two logs whose Redis was not saturated
/// (the validity check that makes B2.5 no finding), for the figure.
pub fn fill_unsaturated(v: &Variants, fill: &str) -> usize {
    level(v, fill)
        .map(|l| {
            l.cells
                .iter()
                .filter_map(|c| v.get(c))
                .flat_map(|x| x.rows.iter())
                .filter(|r| !(super::validity::busy(r) >= super::validity::MIN_BUSY))
                .count()
        })
        .unwrap_or(0)
}

/// The first fill level measured, the default first.
pub fn shown_fill(v: &Variants) -> Option<&'static str> {
    FILLS.iter().copied().find(|f| level(v, f).is_some())
}

fn what(bound: f64) -> String {
    format!("difference <= 2 x the larger run-to-run relative sd ({bound:.1}%)")
}

pub fn b25(v: &Variants) -> Option<Measured> {
    let levels: Vec<(&str, Level)> = FILLS
        .iter()
        .filter_map(|f| level(v, f).map(|l| (*f, l)))
        .collect();
    if levels.is_empty() {
        return None;
    }
    let mut setting: Vec<(&str, &str)> = LUA_SETTING.to_vec();
    setting.push(("swl_fill", FILLS[0]));
    let shown = levels
        .iter()
        .map(|(_, l)| l.display.clone())
        .collect::<Vec<_>>()
        .join("; ");
    let evidence = "cost.csv: redis_cpu_us_per_decision of sliding-window-log|L<l>|<fill> (normal, steady: cell swl-fill; full: prefilled)";
    let mut m = match levels.iter().find(|(f, _)| *f == FILLS[0]) {
        Some((_, l)) => Measured::new("B2.5", vec![l.diff_pct], shown, evidence)
            .intervals(
                vec![l.iv],
                format!(
                    "{} of the per-run difference (paired by run), as |difference|",
                    mean_ci_method(l.n)
                ),
            )
            .band_condition(what(l.bound_pct), l.iv, (0.0, l.bound_pct)),
        // An older run folder: the default fill level was not measured.
        None => {
            let mut m = Measured::new("B2.5", vec![f64::NAN], shown, evidence);
            m.undecided.push(
                "the default fill level (normal traffic, logs that admit: the ZADD path) was not measured in this run folder (cell swl-fill); only the sweep's other levels".into(),
            );
            m
        }
    }
    .setting(&setting);
    if let Some((_, l)) = levels.iter().find(|(f, _)| *f == FILLS[0]) {
        m = gate(m, v, l.cells.iter().map(|c| c.as_str()));
    }
    for (f, l) in levels.iter().filter(|(f, _)| *f != FILLS[0]) {
        let (lo, hi) = l.iv;
        let holds = hi <= l.bound_pct;
        let mut a = Alternative::new(&[("swl_fill", f)], vec![l.diff_pct], l.display.clone())
            .intervals(vec![l.iv])
            .trials(l.n);
        // A band condition in an alternative: holds inside, fails wholly
        // outside; across the edge it is recorded as failing, so an
        // undecided level never reproduces the claim.
        a = a.condition(what(l.bound_pct), holds && lo >= 0.0);
        if let Some(why) = super::validity::unsaturated(v, l.cells.iter().map(|c| c.as_str())) {
            a = a.invalid(why);
        }
        m = m.alternative(a);
    }
    Some(m.note(
        "fill levels (unstated, swept): normal = the study's normal traffic, logs emptied before each run so they admit (the ZADD path; the default); steady = about L entries over a window sized so each decision trims about one and adds one; full = prefilled to L, every decision refused (trim nothing, ZCARD: the refusal path)",
    ))
}
