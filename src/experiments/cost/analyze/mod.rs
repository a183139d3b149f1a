//! Analysis of `cost` (claims B0, B2.1-B2.6, B6.1) from `cost.csv` only.
//!
//! Every ratio is taken between variants of the same run folder (the runs
//! were interleaved), on the mean over runs; the tables show mean, min, max
//! and n per variant. The figure puts every variant's Redis CPU per decision
//! beside GET's (the scale).
//!
//! Layout: [`Variants`] groups the rows; one metric function per claim turns
//! them into numbers (tested in the folder's `tests.rs` on hand-written rows); the
//! presentation functions below them write the claim values, the tables and
//! the figure.
//!
//! The figures are in `figures.rs` beside this file (the files of an
//! `analyze/` folder reach each other and the rows, inside
//! `limitbench-analysis`).

pub mod scorecard;

use std::collections::BTreeMap;

mod b61;
mod figures;
mod labels;
mod lua;
mod lua_figure;
mod paired;
pub(super) mod swl;
mod tables;
pub mod validity;

pub use b61::B61_LOSS_TOLERANCE_POINTS;
pub use labels::{percent_in, words};
pub use paired::b21_split;
pub use swl::{b25, fill_difference};

use lua::SETTING as LUA_SETTING;
use paired::{ci, per_run};

use super::rows::CostRow;
use limitbench_analysis::claims::values_of;
use limitbench_analysis::stats::{Summary, mean_cs_method};
use limitbench_analysis::{AnalysisCtx, Measured, Section};
use limitbench_base::error::Result;

/// Study B's experiments, for B0's time sum.
const STUDY_B: &[&str] = &[
    "replication",
    "cost",
    "memory",
    "stalls",
    "ts-member",
    "script-survival",
    "cluster",
    "fail-open",
];

/// The rows (runs) of one variant.
pub(super) struct Variant<'a> {
    rows: Vec<&'a CostRow>,
}

impl Variant<'_> {
    fn s(&self, f: impl Fn(&CostRow) -> f64) -> Summary {
        Summary::of(&self.rows.iter().map(|r| f(r)).collect::<Vec<_>>())
    }
    /// Redis CPU per decision over runs.
    fn cpu(&self) -> Summary {
        self.s(|r| r.redis_cpu_us_per_decision)
    }
    /// Decisions per second over runs.
    fn rate(&self) -> Summary {
        self.s(|r| r.decisions_per_s)
    }
    fn first(&self) -> &CostRow {
        self.rows[0]
    }
    /// The cell it ran in (`rounds-k`, `swl-fill`; empty in runs made
    /// before the groups, where one `rounds` cell held every variant).
    fn group(&self) -> &str {
        &self.first().group
    }
    /// A GET (the scale): one per group.
    fn is_get(&self) -> bool {
        self.first().strategy == "get" && self.first().invocation == "command"
    }
    /// Admitted decisions in % of all, over every run.
    fn admitted_pct(&self) -> f64 {
        let dec: u64 = self.rows.iter().map(|r| r.decisions).sum();
        let adm: u64 = self.rows.iter().map(|r| r.admitted).sum();
        100.0 * adm as f64 / dec.max(1) as f64
    }
}

/// Rows grouped by variant (`cell`), with the order variants first appear.
pub struct Variants<'a> {
    by: BTreeMap<String, Variant<'a>>,
    order: Vec<String>,
}

impl<'a> Variants<'a> {
    pub fn of(rows: &'a [CostRow]) -> Self {
        let mut by: BTreeMap<String, Variant> = BTreeMap::new();
        let mut order = Vec::new();
        for r in rows {
            if !by.contains_key(&r.cell) {
                order.push(r.cell.clone());
            }
            by.entry(r.cell.clone())
                .or_insert(Variant { rows: vec![] })
                .rows
                .push(r);
        }
        Variants { by, order }
    }

    fn get(&self, id: &str) -> Option<&Variant<'a>> {
        self.by.get(id)
    }

    /// The GET of `x`'s group, with its id: every ratio to GET is to this
    /// one, measured in the same cell (the same server and machine).
    fn get_of(&self, x: &Variant) -> Option<(&String, &Variant<'a>)> {
        self.in_order()
            .find(|(_, g)| g.is_get() && g.group() == x.group())
    }

    /// Whether the rows name their groups (runs made since the rounds were
    /// split; older runs had one `rounds` cell and one `get`).
    fn grouped(&self) -> bool {
        self.by.values().any(|x| !x.group().is_empty())
    }

    /// The GETs of the groups of `cells`, by id (each once).
    fn gets_for<'b>(&'b self, cells: &[&str]) -> Vec<&'b str> {
        let mut out: Vec<&str> = Vec::new();
        for c in cells {
            if let Some((id, _)) = self.get(c).and_then(|x| self.get_of(x))
                && !out.contains(&id.as_str())
            {
                out.push(id);
            }
        }
        out
    }

    /// Every group's GET rows pooled: the scale drawn and tabled (in runs
    /// made before the groups, the one `get`).
    fn scale(&self) -> Option<Variant<'a>> {
        let rows: Vec<&'a CostRow> = self
            .in_order()
            .filter(|(_, g)| g.is_get())
            .flat_map(|(_, g)| g.rows.iter().copied())
            .collect();
        (!rows.is_empty()).then_some(Variant { rows })
    }

    /// Variants in the order they ran.
    fn in_order(&self) -> impl Iterator<Item = (&String, &Variant<'a>)> {
        self.order.iter().map(|c| (c, &self.by[c]))
    }

    /// The Lua limiter strategies on the study's normal traffic (EVALSHA,
    /// uniform keys) measured in the rounds with GET: not the sliding logs,
    /// whose fill levels (prefilled full: the refusal path; emptied or
    /// steady, in their own cell without GET) are B2.5's.
    fn lua(&self) -> Vec<(&String, &Variant<'a>)> {
        self.in_order()
            .filter(|(c, v)| {
                v.first().invocation == "evalsha"
                    && v.first().traffic == "uniform"
                    && v.first().prefill_entries == 0
                    && !c.starts_with("sliding-window-log|")
            })
            .collect()
    }
}

fn rel_sd(s: &Summary) -> f64 {
    if s.n > 1 && s.mean != 0.0 {
        s.sd / s.mean
    } else {
        0.0
    }
}

/// |x| of every x in (lo, hi): 0 if the interval spans 0.
fn abs_interval((lo, hi): (f64, f64)) -> (f64, f64) {
    if lo <= 0.0 && hi >= 0.0 {
        (0.0, lo.abs().max(hi.abs()))
    } else {
        (lo.abs().min(hi.abs()), lo.abs().max(hi.abs()))
    }
}

fn min_of(v: &[f64]) -> f64 {
    v.iter().cloned().fold(f64::INFINITY, f64::min)
}

fn max_of(v: &[f64]) -> f64 {
    v.iter().cloned().fold(0.0, f64::max)
}

// ---- metrics: rows -> numbers ----

/// B2.1: each Lua variant's mean CPU per decision / GET's; (GET's mean, [(variant, ratio)]).
pub fn cpu_vs_get(v: &Variants) -> Option<(f64, Vec<(String, f64)>)> {
    let g = v.scale()?.cpu().mean;
    let lua = v.lua();
    if lua.is_empty() || g.is_nan() || g <= 0.0 {
        return None;
    }
    // Each against its own group's GET (the one `get` in older runs).
    let own = |l: &Variant| v.get_of(l).map(|(_, g)| g.cpu().mean).unwrap_or(f64::NAN);
    Some((
        g,
        lua.iter()
            .map(|(c, l)| ((*c).clone(), l.cpu().mean / own(l)))
            .collect(),
    ))
}

/// One variant against its group's GET, on the means over runs:
/// (Redis CPU per decision / GET's, decisions per second / GET's). The
/// scorecard's cost columns; `None` without both variants.
pub fn against_get(v: &Variants, cell: &str) -> Option<(f64, f64)> {
    let x = v.get(cell)?;
    let (_, g) = v.get_of(x)?;
    Some((x.cpu().mean / g.cpu().mean, x.rate().mean / g.rate().mean))
}

/// The lowest Redis busy fraction of any Lua run (infinite if none).
pub fn lua_busy_min(v: &Variants) -> f64 {
    v.lua()
        .iter()
        .flat_map(|(_, l)| l.rows.iter().map(|r| r.redis_busy_fraction))
        .fold(f64::INFINITY, f64::min)
}

/// B2.1's and B2.2's spreads, the means of their per-run ratios: the
/// dearest over the cheapest Lua strategy's CPU per decision, the fastest
/// over the slowest's rate (across groups, of their ratios to their own
/// group's GET).
pub fn lua_spreads(v: &Variants) -> (Option<f64>, Option<f64>) {
    let lua = v.lua();
    (
        lua::spread(v, &lua, |r| r.redis_cpu_us_per_decision).map(|e| e.0),
        lua::spread(v, &lua, |r| r.decisions_per_s).map(|e| e.0),
    )
}

/// B2.2: mean decisions per second of each Lua variant.
pub fn lua_rates(v: &Variants) -> Vec<f64> {
    v.lua().iter().map(|(_, l)| l.rate().mean).collect()
}

/// B2.3: each Lua variant's mean script time per call (commandstats) and
/// mean Redis CPU per decision.
pub fn lua_script_times(v: &Variants) -> (Vec<f64>, Vec<f64>) {
    let lua = v.lua();
    (
        lua.iter()
            .map(|(_, l)| l.s(|r| r.cmd_usec_per_call).mean)
            .collect(),
        lua.iter().map(|(_, l)| l.cpu().mean).collect(),
    )
}

/// B2.4: MULTI's throughput against the Lua fixed window's, in %: on the
/// means, and per run (paired by trial).
pub fn multi_vs_lua(v: &Variants) -> Option<(f64, Vec<f64>)> {
    let (m, l) = (
        v.get("fixed-window-multi")?,
        v.get("fixed-window-lua|evalsha")?,
    );
    let pct = (m.rate().mean / l.rate().mean - 1.0) * 100.0;
    let paired = m
        .rows
        .iter()
        .filter_map(|a| {
            l.rows
                .iter()
                .find(|b| b.trial == a.trial)
                .map(|b| (a.decisions_per_s / b.decisions_per_s - 1.0) * 100.0)
        })
        .collect();
    Some((pct, paired))
}

/// B2.5 on the prefilled (full) logs: relative CPU difference between the
/// smallest and largest limit, and the larger run-to-run relative sd.
pub fn prefilled_difference(v: &Variants) -> Option<(f64, f64)> {
    swl::fill_difference(v, "full")
}

/// B2.6: an abusive client (one key, nearly all refused) against normal traffic.
#[derive(Debug, PartialEq)]
pub struct Abusive {
    pub strategy: String,
    /// Redis CPU per decision, abusive over normal.
    pub ratio: f64,
    pub abusive_us: f64,
    pub normal_us: f64,
    pub refused_pct: f64,
}

/// B2.6: every abusive variant with a normal EVALSHA twin.
pub fn abusive_ratios(v: &Variants) -> Vec<Abusive> {
    let mut out = Vec::new();
    for (_, a) in v.in_order().filter(|(c, _)| c.ends_with("|abusive")) {
        let s = a.first().strategy.clone();
        if let Some(n) = v.get(&format!("{s}|evalsha")) {
            let (ac, nc) = (a.cpu().mean, n.cpu().mean);
            out.push(Abusive {
                strategy: s,
                ratio: ac / nc,
                abusive_us: ac,
                normal_us: nc,
                refused_pct: 100.0 - a.admitted_pct(),
            });
        }
    }
    out
}

/// B6.1: EVAL's extra CPU per decision over EVALSHA (us) and the throughput
/// it loses (%).
pub fn eval_vs_evalsha(v: &Variants) -> Option<(f64, f64)> {
    let (sha, ev) = (v.get("token-bucket|evalsha")?, v.get("token-bucket|eval")?);
    let extra = ev.cpu().mean - sha.cpu().mean;
    let lost = (1.0 - ev.rate().mean / sha.rate().mean) * 100.0;
    Some((extra, lost))
}

/// B6.1's FCALL check: |FCALL/EVALSHA - 1| of CPU per decision, and the
/// noise it is held to (2 x the larger relative sd, at least 3%).
pub fn fcall_vs_evalsha(v: &Variants) -> Option<(f64, f64)> {
    let (sha, fc) = (v.get("token-bucket|evalsha")?, v.get("token-bucket|fcall")?);
    let d = (fc.cpu().mean / sha.cpu().mean - 1.0).abs();
    let noise = (2.0 * rel_sd(&fc.cpu()).max(rel_sd(&sha.cpu()))).max(0.03);
    Some((d, noise))
}

/// An experiment's seconds in the run's own session: the manifest's sum over
/// sessions less what a later session added by resuming the run
/// (`supplements[i].seconds_added`, documented with the rows it added).
pub(super) fn own_seconds(ctx: &AnalysisCtx, name: &str, e: &serde_json::Value) -> f64 {
    let added: f64 = ctx.manifest["supplements"]
        .as_array()
        .map(|s| {
            s.iter()
                .filter_map(|x| x["seconds_added"][name].as_f64())
                .sum()
        })
        .unwrap_or(0.0);
    e["seconds"].as_f64().unwrap_or(0.0) - added
}

// ---- presentation: claim values, tables, figure ----

pub fn b0(ctx: &AnalysisCtx) -> Option<Measured> {
    let exps = ctx.manifest["experiments"].as_object()?;
    let mut secs = 0.0;
    let mut names = Vec::new();
    let mut all_done = true;
    for n in STUDY_B {
        if let Some(e) = exps.get(*n) {
            secs += own_seconds(ctx, n, e);
            names.push(*n);
            all_done &= e["outcome"].as_str() == Some("done");
        }
    }
    if names.is_empty() {
        return None;
    }
    let size = ctx.manifest["size"].as_str().unwrap_or("?");
    Some(
        Measured::new(
            "B0",
            vec![secs / 60.0],
            format!(
                "{:.1} min for {} of 8 study-B experiments at size {size} ({})",
                secs / 60.0,
                names.len(),
                names.join(", ")
            ),
            "manifest.json experiments.*.seconds",
        )
        .no_cells()
        .condition("every study-B experiment in this run finished", all_done)
        .note("informational: this run's time is not comparable with the authors' rerun unless every study-B experiment ran at full size"),
    )
}

/// Harness vs redis-benchmark on GET: the ratio over runs (n = 0 without a benchmark).
fn bench_ratio(v: &Variants) -> Summary {
    let bench: Vec<f64> = v
        .scale()
        .map(|g| g.rows.iter().filter_map(|r| r.harness_over_bench).collect())
        .unwrap_or_default();
    Summary::of(&bench)
}

fn b24(v: &Variants) -> Option<Measured> {
    let (pct, paired) = multi_vs_lua(v)?;
    let (m, l) = (
        v.get("fixed-window-multi")?,
        v.get("fixed-window-lua|evalsha")?,
    );
    Some(
        Measured::new(
            "B2.4",
            vec![pct],
            format!(
                "{pct:+.1}% (per run: {}); CPU per decision MULTI {:.2} µs vs Lua {:.2} µs",
                Summary::of(&paired).show(1),
                m.cpu().mean,
                l.cpu().mean
            ),
            "cost.csv: decisions_per_s fixed-window-multi / fixed-window-lua|evalsha - 1",
        )
        .intervals(
            vec![ci(&paired)],
            format!("{} (paired by run)", mean_cs_method(paired.len())),
        )
        .setting(lua::SETTING)
        .note(
            "a throughput ratio is a CPU ratio only while Redis is saturated (the validity check)",
        ),
    )
    .map(|m| gate(m, v, ["fixed-window-multi", "fixed-window-lua|evalsha"]))
}

/// `m`, made invalid (inconclusive, with the runs named) if Redis was not
/// saturated in a run of `cells`, resting on the schedule cells they ran in.
pub(super) fn gate<'a>(
    m: Measured,
    v: &Variants,
    cells: impl IntoIterator<Item = &'a str>,
) -> Measured {
    let cells: Vec<&str> = cells.into_iter().collect();
    // The schedule's cells these variants ran in (the disturbance step
    // reads them): their `group`; in runs made before the groups, B2.5's
    // sliding logs under normal or steady traffic in `swl-fill`, every other
    // variant in `rounds`.
    let m =
        m.rests_on(cells.iter().map(
            |c| match v.get(c).map(|x| x.group()).filter(|g| !g.is_empty()) {
                Some(g) => g.to_string(),
                None if c.ends_with("|normal") || c.ends_with("|steady") => "swl-fill".into(),
                None => "rounds".into(),
            },
        ));
    match validity::unsaturated(v, cells) {
        Some(why) => m.invalid(why),
        None => m,
    }
}

fn b26(v: &Variants) -> Option<Measured> {
    let ab = abusive_ratios(v);
    if ab.is_empty() {
        return None;
    }
    let disp: Vec<String> = ab
        .iter()
        .map(|a| {
            format!(
                "{}: {:.2} ({:.2} vs {:.2} µs; {:.1}% refused)",
                a.strategy, a.ratio, a.abusive_us, a.normal_us, a.refused_pct
            )
        })
        .collect();
    let iv: Vec<(f64, f64)> = ab
        .iter()
        .map(|a| {
            let (x, n) = (
                &v.by[&format!("{}|abusive", a.strategy)],
                &v.by[&format!("{}|evalsha", a.strategy)],
            );
            ci(&per_run(x, n, |p, q| {
                p.redis_cpu_us_per_decision / q.redis_cpu_us_per_decision
            }))
        })
        .collect();
    Some(Measured::new(
        "B2.6",
        ab.iter().map(|a| a.ratio).collect(),
        disp.join("; "),
        "cost.csv: redis_cpu_us_per_decision <strategy>|abusive / <strategy>|evalsha",
    )
    .intervals(iv, format!("{} of the per-run ratio (paired by run)", mean_cs_method(v.by.values().map(|x| x.rows.len()).min().unwrap_or(0))))
    .setting(lua::SETTING)
    .note("the token bucket (as published) writes its hash on refusals too; GCRA's refusal writes nothing"))
    .map(|m| {
        let cells: Vec<String> = ab
            .iter()
            .flat_map(|a| [format!("{}|abusive", a.strategy), format!("{}|evalsha", a.strategy)])
            .collect();
        gate(m, v, cells.iter().map(|c| c.as_str()))
    })
}

pub fn analyze(ctx: &AnalysisCtx) -> Result<(Vec<Measured>, Section)> {
    let mut measured = Vec::new();
    measured.extend(b0(ctx));
    let Some(rows) = ctx.read_csv::<CostRow>("cost.csv")? else {
        let md = figures::b0(ctx)? + "Not run.\n";
        return Ok((measured, Section::new("cost", md)));
    };
    let v = Variants::of(&rows);
    let bench = bench_ratio(&v);
    let mut md = tables::what_ran(&v, &rows);
    md += &tables::variant_table(&v);
    md += &tables::split_table(
        &v,
        &ctx.claim("B2.1")
            .map(|c| c.published_text.clone())
            .unwrap_or_default(),
    );
    md += &tables::bench_line(&v, &bench);
    measured.extend(lua::claims(ctx, &v, &bench));
    measured.extend(b24(&v));
    measured.extend(swl::b25(&v));
    measured.extend(b26(&v));
    measured.extend(b61::b61(&v, ctx.claim("B6.1")));
    let mut figs = lua_figure::lua(ctx, &v)?;
    figs += &figures::split(ctx, &v)?;
    figs += &figures::ratios(ctx, &v)?;
    figs += &figures::overview(ctx, &v)?;
    figs += &figures::b0(ctx)?;
    md = figs + &md;
    let get = |id: &str| values_of(&measured, id);
    let range = |v: &[f64]| {
        if v.is_empty() {
            "n/a".to_string()
        } else {
            format!("{:.2} to {:.2}", min_of(v), max_of(v))
        }
    };
    let finding = format!(
        "a Lua decision cost {} times a GET's Redis CPU here; MULTI made {}% more decisions/s than the same logic in Lua; EVAL cost {} µs more CPU per decision than EVALSHA.",
        range(&get("B2.1")),
        get("B2.4")
            .first()
            .map(|x| format!("{x:.0}"))
            .unwrap_or_else(|| "n/a".into()),
        get("B6.1")
            .first()
            .map(|x| format!("{x:.2}"))
            .unwrap_or_else(|| "n/a".into()),
    );
    Ok((measured, Section::new("cost", md).finding(finding)))
}
