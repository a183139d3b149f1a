//! B2.1-B2.3: the Lua variants (EVALSHA, uniform keys) against GET, their
//! rates and their script times, each with its 95% interval over runs.
//!
//! B2.1 is a machine claim judged on its shape: how much a script costs
//! beyond a GET depends on how much of a GET is the per-command network work
//! both pay (the "rest" of the split in `paired.rs`), which is the machine's.

use super::paired::{Est, Split, b21_split, each, est, show};
use super::{Variants, figures, lua_busy_min, lua_rates, lua_script_times, max_of, min_of};
use limitbench_analysis::stats::{Summary, mean_ci_method};
use limitbench_analysis::{AnalysisCtx, Measured};

/// The unstated load detail every cost claim was measured at: one request in
/// flight per connection (a closed loop; the study says only "as fast as
/// they could").
pub(super) const SETTING: &[(&str, &str)] = &[("pipeline_depth", "1")];

fn values(e: &[Est]) -> Vec<f64> {
    e.iter().map(|e| e.0).collect()
}

fn intervals(e: &[Est]) -> Vec<(f64, f64)> {
    e.iter().map(|e| e.1).collect()
}

fn method(e: &[Est], what: &str) -> String {
    format!(
        "{}{what}",
        mean_ci_method(e.iter().map(|e| e.2).min().unwrap_or(0))
    )
}

fn name(cell: &str) -> String {
    figures::words(cell.trim_end_matches("|evalsha"))
}

/// B2.1 with its split: our ratio beside the published one, judged by the
/// claim's check on every strategy's ratio (in_range in the claims table)
/// and two conditions (every script costs more than a GET; the strategies'
/// spread no wider than the published range's).
fn b21(ctx: &AnalysisCtx, get: &Split, lua: &[Split], bench: &Summary, note: &str) -> Measured {
    let tot: Vec<Est> = lua.iter().map(|s| s.total).collect();
    let mut order: Vec<&Split> = lua.iter().collect();
    order.sort_by(|a, b| a.total.0.total_cmp(&b.total.0));
    let parts = lua
        .iter()
        .map(|s| {
            format!(
                "{}: {}x = command {:.2}x + rest {:.2}x",
                name(&s.cell),
                show(&s.total, 2),
                s.cmd.0,
                s.rest.0
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    let ratios = values(&tot);
    let (lo, hi) = (min_of(&ratios), max_of(&ratios));
    let mut m = Measured::new(
        "B2.1",
        ratios.clone(),
        format!(
            "ours {lo:.2}-{hi:.2}x GET ({parts}); GET {:.2} µs = command {:.2} µs + rest {:.2} µs; cheapest to dearest: {}",
            get.total_us,
            get.cmd_us,
            get.rest_us,
            order.iter().map(|s| name(&s.cell)).collect::<Vec<_>>().join(" < ")
        ),
        "cost.csv: redis_cpu_us_per_decision and cmd_usec_per_decision per EVALSHA variant / variant=get, paired by run",
    )
    .intervals(intervals(&tot), method(&tot, " of the per-run ratio to GET"))
    .setting(SETTING)
    .condition(
        "every Lua strategy costs more Redis CPU per decision than GET (95% interval above 1x)",
        tot.iter().all(|e| e.1.0 > 1.0),
    )
    .note(format!(
        "machine claim, judged on every Lua strategy's 95% interval against the published range (the claim's check) and on shape (above GET, spread no wider than the published range's). Split of each decision's CPU: command = INFO commandstats usec per decision (the script; GET for GET), rest = the INFO cpu delta minus it (read, parse, reply, syscalls). Here GET's rest is {:.0}% of its CPU; a script adds its command time on top of about the same rest, so the ratio is lower where the rest is large. Harness/redis-benchmark GET throughput {}.{note}",
        100.0 * get.rest_us / get.total_us,
        bench.show(2)
    ));
    if let Some(c) = ctx.claim("B2.1") {
        let (plo, phi) = (c.published.at(0), c.published.at(1));
        m = m.condition(
            format!(
                "the strategies' spread (dearest / cheapest, ours {:.2}) is no wider than the published range's ({:.2})",
                hi / lo,
                phi / plo
            ),
            hi / lo <= phi / plo,
        );
    }
    m
}

/// B2.1, B2.2, B2.3.
pub(super) fn claims(ctx: &AnalysisCtx, v: &Variants, bench: &Summary) -> Vec<Measured> {
    let mut out = Vec::new();
    let busy_min = lua_busy_min(v);
    let load_bound_note = if busy_min < 0.9 {
        format!(
            " Redis was less than 90% busy in some Lua runs (lowest {busy_min:.2}): the load generator (or a busy machine) limited those runs, so rates are lower bounds and CPU per decision may include idle-loop overhead."
        )
    } else {
        String::new()
    };
    if let Some((get, lua)) = b21_split(v) {
        out.push(b21(ctx, &get, &lua, bench, &load_bound_note));
    }
    let lua = v.lua();
    if lua.is_empty() {
        return out;
    }
    let rates: Vec<Est> = lua
        .iter()
        .map(|(_, l)| est(&each(l, |r| r.decisions_per_s)))
        .collect();
    let r = lua_rates(v);
    out.push(
        Measured::new(
            "B2.2",
            r.clone(),
            format!(
                "{:.0}-{:.0} decisions/s; Redis busy >= {busy_min:.2}",
                min_of(&r),
                max_of(&r),
            ),
            "cost.csv: mean decisions_per_s per EVALSHA variant; min redis_busy_fraction",
        )
        .intervals(intervals(&rates), method(&rates, ""))
        .setting(SETTING)
        .condition(
            "Redis busy fraction >= 0.9 in every Lua run",
            busy_min >= 0.9,
        )
        .note(format!(
            "machine claim: the absolute rate is this machine's.{load_bound_note}"
        )),
    );
    let script: Vec<Est> = lua
        .iter()
        .map(|(_, l)| est(&each(l, |r| r.cmd_usec_per_call)))
        .collect();
    let (s, cpu) = lua_script_times(v);
    // "The rest is network work": what a decision costs beyond its script
    // is about what a GET costs in all (a GET is almost only network work).
    // Within half to twice GET's CPU per decision; fails when the script is
    // most of the decision or the rest is something else than a GET's work.
    let get_cpu = super::cpu_vs_get(v).map(|(g, _)| g);
    let rest_like_get = get_cpu.is_some_and(|g| {
        s.iter()
            .zip(&cpu)
            .all(|(s, c)| (c - s) >= 0.5 * g && (c - s) <= 2.0 * g)
    });
    out.push(
        Measured::new(
            "B2.3",
            s.clone(),
            format!(
                "{:.1}-{:.1} µs per call (of {:.1}-{:.1} µs CPU per decision)",
                min_of(&s),
                max_of(&s),
                min_of(&cpu),
                max_of(&cpu),
            ),
            "cost.csv: INFO commandstats usec_per_call of evalsha per EVALSHA variant",
        )
        .intervals(intervals(&script), method(&script, ""))
        .setting(SETTING)
        .condition(
            format!(
                "the rest of each Lua decision (CPU per decision minus script time) is network work: within 0.5-2x GET's whole CPU per decision ({})",
                get_cpu.map(|g| format!("{g:.1} µs")).unwrap_or_else(|| "GET not measured".into())
            ),
            rest_like_get,
        ),
    );
    out
}
