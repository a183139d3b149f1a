//! Analysis of `cost` (claims B0, B2.1-B2.6, B6.1) from `cost.csv` only.
//!
//! Every ratio is taken between variants of the same run folder (the runs
//! were interleaved), on the mean over runs; the tables show mean, min, max
//! and n per variant. The figure puts every variant's Redis CPU per decision
//! beside GET's (the scale).

use std::collections::BTreeMap;

use crate::analysis::chart::{Axes, BarGroup, bar_chart};
use crate::analysis::stats::Summary;
use crate::analysis::{AnalysisCtx, Measured, Section};
use crate::error::Result;
use super::rows::CostRow;

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

struct V<'a> {
    rows: Vec<&'a CostRow>,
}

impl V<'_> {
    fn s(&self, f: impl Fn(&CostRow) -> f64) -> Summary {
        Summary::of(&self.rows.iter().map(|r| f(r)).collect::<Vec<_>>())
    }
    fn cpu(&self) -> Summary {
        self.s(|r| r.redis_cpu_us_per_decision)
    }
    fn rate(&self) -> Summary {
        self.s(|r| r.decisions_per_s)
    }
    fn first(&self) -> &CostRow {
        self.rows[0]
    }
}

fn rel_sd(s: &Summary) -> f64 {
    if s.n > 1 && s.mean != 0.0 {
        s.sd / s.mean
    } else {
        0.0
    }
}

pub fn b0(ctx: &AnalysisCtx) -> Option<Measured> {
    let exps = ctx.manifest["experiments"].as_object()?;
    let mut secs = 0.0;
    let mut names = Vec::new();
    let mut all_done = true;
    for n in STUDY_B {
        if let Some(e) = exps.get(*n) {
            secs += e["seconds"].as_f64().unwrap_or(0.0);
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
        .condition("every study-B experiment in this run finished", all_done)
        .note("informational: this run's time is not comparable with the authors' rerun unless every study-B experiment ran at full size"),
    )
}

pub fn analyze(ctx: &AnalysisCtx) -> Result<(Vec<Measured>, Section)> {
    let mut measured = Vec::new();
    measured.extend(b0(ctx));
    let Some(rows) = ctx.read_csv::<CostRow>("cost.csv")? else {
        return Ok((measured, Section::new("cost", "Not run.\n")));
    };
    let mut by: BTreeMap<String, V> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    for r in &rows {
        if !by.contains_key(&r.cell) {
            order.push(r.cell.clone());
        }
        by.entry(r.cell.clone())
            .or_insert(V { rows: vec![] })
            .rows
            .push(r);
    }
    let mut md = String::new();
    let runs = by.values().map(|v| v.rows.len()).max().unwrap_or(0);
    let f = &rows[0];
    md.push_str(&format!(
        "What ran: {} variants x up to {} runs of {:.1} s (interleaved), {} connections, closed loop, seed {}; Redis pinned to CPU {:?}, the harness to CPU {:?}. Normal traffic: keys uniform over {} clients, limit {} per {} ms (never reached). CPU per decision = delta(used_cpu_user+used_cpu_sys) / client-counted decisions.\n\n",
        by.len(),
        runs,
        Summary::of(&rows.iter().map(|r| r.wall_s).collect::<Vec<_>>()).mean,
        f.conns,
        f.seed,
        f.redis_cpu,
        f.load_cpu,
        by.get("get").map(|v| v.first().keys).unwrap_or(0),
        by.values().find(|v| v.first().traffic == "uniform" && v.first().limit > 0 && v.first().prefill_entries == 0).map(|v| v.first().limit).unwrap_or(0),
        by.values().find(|v| v.first().limit > 0).map(|v| v.first().window_ms).unwrap_or(0),
    ));
    let get_cpu = by.get("get").map(|v| v.cpu());
    md.push_str("| variant | traffic | decisions/s | Redis CPU us/decision | x GET | busy | script/cmd us per call | p50 / p99 / p99.9 us | admitted % | errors | load-bound runs |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
    for c in &order {
        let v = &by[c];
        let cpu = v.cpu();
        let busy = v.s(|r| r.redis_busy_fraction);
        let dec: u64 = v.rows.iter().map(|r| r.decisions).sum();
        let adm: u64 = v.rows.iter().map(|r| r.admitted).sum();
        let err: u64 = v.rows.iter().map(|r| r.errors).sum();
        md.push_str(&format!(
            "| {c} | {} | {} | {} | {} | {:.2} (min {:.2}) | {:.2} | {:.0} / {:.0} / {:.0} | {:.1} | {err} | {} of {} |\n",
            v.first().traffic,
            v.rate().show(0),
            cpu.show(2),
            get_cpu.map(|g| format!("{:.2}", cpu.mean / g.mean)).unwrap_or_default(),
            busy.mean,
            busy.min,
            v.s(|r| r.cmd_usec_per_call).mean,
            v.s(|r| r.p50_us).mean,
            v.s(|r| r.p99_us).mean,
            v.s(|r| r.p999_us).mean,
            100.0 * adm as f64 / dec.max(1) as f64,
            v.rows.iter().filter(|r| r.load_bound).count(),
            v.rows.len(),
        ));
    }
    // Harness vs redis-benchmark on GET.
    let bench: Vec<f64> = by
        .get("get")
        .map(|v| v.rows.iter().filter_map(|r| r.harness_over_bench).collect())
        .unwrap_or_default();
    let bench_s = Summary::of(&bench);
    if bench_s.n > 0 {
        let g = &by["get"];
        md.push_str(&format!(
            "\nGET, harness vs `redis-benchmark -c {} -r {} -t get` in the same runs, same CPU: harness/redis-benchmark throughput {}; redis-benchmark {} req/s, Redis busy {:.2} under it, {:.2} us CPU per GET (harness: {:.2}).\n",
            g.first().conns,
            g.first().keys,
            bench_s.show(2),
            Summary::of(&g.rows.iter().filter_map(|r| r.bench_rps).collect::<Vec<_>>()).show(0),
            Summary::of(&g.rows.iter().filter_map(|r| r.bench_busy_fraction).collect::<Vec<_>>()).mean,
            Summary::of(&g.rows.iter().filter_map(|r| r.bench_redis_cpu_us_per_request).collect::<Vec<_>>()).mean,
            g.cpu().mean,
        ));
    }

    // The Lua variants: EVALSHA, normal (uniform) traffic.
    let lua: Vec<&String> = order
        .iter()
        .filter(|c| {
            let r = by[*c].first();
            r.invocation == "evalsha" && r.traffic == "uniform"
        })
        .collect();
    let lua_busy_min = lua
        .iter()
        .flat_map(|c| by[*c].rows.iter().map(|r| r.redis_busy_fraction))
        .fold(f64::INFINITY, f64::min);
    let load_bound_note = if lua_busy_min < 0.9 {
        format!(
            " Redis was less than 90% busy in some Lua runs (lowest {lua_busy_min:.2}): the load generator (or a busy machine) limited those runs, so rates are lower bounds and CPU per decision may include idle-loop overhead."
        )
    } else {
        String::new()
    };
    if let Some(g) = get_cpu
        && !lua.is_empty()
        && g.mean > 0.0
    {
        let ratios: Vec<f64> = lua.iter().map(|c| by[*c].cpu().mean / g.mean).collect();
        let disp = lua
            .iter()
            .zip(&ratios)
            .map(|(c, r)| format!("{}: {r:.2}", c.trim_end_matches("|evalsha")))
            .collect::<Vec<_>>()
            .join(", ");
        measured.push(
            Measured::new(
                "B2.1",
                ratios.clone(),
                format!(
                    "{:.2}-{:.2}x ({disp}); GET {:.2} us",
                    ratios.iter().cloned().fold(f64::INFINITY, f64::min),
                    ratios.iter().cloned().fold(0.0, f64::max),
                    g.mean
                ),
                "cost.csv: mean redis_cpu_us_per_decision per EVALSHA variant / variant=get",
            )
            .note(format!(
                "harness/redis-benchmark GET throughput {} (the load generator is not the bottleneck).{load_bound_note} \
                 A GET and a script both pay Redis's per-command network work (read, parse, reply, \
                 syscalls); where that share is large, as on this VM, the script's own time weighs \
                 less and the ratio is lower (see B2.3 for the script-only time).",
                bench_s.show(2)
            )),
        );
    }
    if !lua.is_empty() {
        let rates: Vec<f64> = lua.iter().map(|c| by[*c].rate().mean).collect();
        measured.push(
            Measured::new(
                "B2.2",
                rates.clone(),
                format!(
                    "{:.0}-{:.0} decisions/s; Redis busy >= {:.2}",
                    rates.iter().cloned().fold(f64::INFINITY, f64::min),
                    rates.iter().cloned().fold(0.0, f64::max),
                    lua_busy_min
                ),
                "cost.csv: mean decisions_per_s per EVALSHA variant; min redis_busy_fraction",
            )
            .condition(
                "Redis busy fraction >= 0.9 in every Lua run",
                lua_busy_min >= 0.9,
            )
            .note(format!(
                "machine claim: the absolute rate is this machine's.{load_bound_note}"
            )),
        );
        let script: Vec<f64> = lua
            .iter()
            .map(|c| by[*c].s(|r| r.cmd_usec_per_call).mean)
            .collect();
        let below = lua
            .iter()
            .all(|c| by[*c].s(|r| r.cmd_usec_per_call).mean < by[*c].cpu().mean);
        measured.push(
            Measured::new(
                "B2.3",
                script.clone(),
                format!(
                    "{:.1}-{:.1} us per call (of {:.1}-{:.1} us CPU per decision)",
                    script.iter().cloned().fold(f64::INFINITY, f64::min),
                    script.iter().cloned().fold(0.0, f64::max),
                    lua.iter()
                        .map(|c| by[*c].cpu().mean)
                        .fold(f64::INFINITY, f64::min),
                    lua.iter().map(|c| by[*c].cpu().mean).fold(0.0, f64::max),
                ),
                "cost.csv: INFO commandstats usec_per_call of evalsha per EVALSHA variant",
            )
            .condition(
                "script time < Redis CPU per decision for every Lua variant",
                below,
            ),
        );
    }
    if let (Some(m), Some(l)) = (
        by.get("fixed-window-multi"),
        by.get("fixed-window-lua|evalsha"),
    ) {
        let pct = (m.rate().mean / l.rate().mean - 1.0) * 100.0;
        let paired: Vec<f64> = m
            .rows
            .iter()
            .filter_map(|a| {
                l.rows
                    .iter()
                    .find(|b| b.trial == a.trial)
                    .map(|b| (a.decisions_per_s / b.decisions_per_s - 1.0) * 100.0)
            })
            .collect();
        measured.push(
            Measured::new(
                "B2.4",
                vec![pct],
                format!(
                    "{pct:+.1}% (per run: {}); CPU per decision MULTI {:.2} us vs Lua {:.2} us",
                    Summary::of(&paired).show(1),
                    m.cpu().mean,
                    l.cpu().mean
                ),
                "cost.csv: decisions_per_s fixed-window-multi / fixed-window-lua|evalsha - 1",
            )
            .note(if m.rows.iter().chain(&l.rows).any(|r| r.load_bound) {
                "some runs were load-bound: a throughput ratio then partly measures the client; compare the CPU per decision too".to_string()
            } else {
                String::new()
            }),
        );
    }
    let swl: Vec<&String> = order
        .iter()
        .filter(|c| c.starts_with("sliding-window-log|L") && c.ends_with("|full"))
        .collect();
    if swl.len() >= 2 {
        let (a, b) = (&by[swl[0]], &by[swl[swl.len() - 1]]);
        let (ca, cb) = (a.cpu(), b.cpu());
        let diff = (cb.mean - ca.mean).abs() / ca.mean;
        let spread = rel_sd(&ca).max(rel_sd(&cb));
        measured.push(
            Measured::new(
                "B2.5",
                vec![diff * 100.0],
                format!(
                    "{:.1}% ({}: {}; {}: {}); larger run-to-run sd {:.1}%",
                    diff * 100.0,
                    swl[0],
                    ca.show(2),
                    swl[swl.len() - 1],
                    cb.show(2),
                    spread * 100.0
                ),
                "cost.csv: redis_cpu_us_per_decision of the prefilled sliding-log variants",
            )
            .condition(
                "difference <= 2 x the larger run-to-run relative sd",
                diff <= 2.0 * spread,
            ),
        );
    }
    let mut abusive = Vec::new();
    let mut abusive_disp = Vec::new();
    for c in order.iter().filter(|c| c.ends_with("|abusive")) {
        let s = by[c].first().strategy.clone();
        if let Some(n) = by.get(&format!("{s}|evalsha")) {
            let r = by[c].cpu().mean / n.cpu().mean;
            let adm: u64 = by[c].rows.iter().map(|r| r.admitted).sum();
            let dec: u64 = by[c].rows.iter().map(|r| r.decisions).sum();
            abusive.push(r);
            abusive_disp.push(format!(
                "{s}: {r:.2} ({:.2} vs {:.2} us; {:.1}% refused)",
                by[c].cpu().mean,
                n.cpu().mean,
                100.0 - 100.0 * adm as f64 / dec.max(1) as f64
            ));
        }
    }
    if !abusive.is_empty() {
        measured.push(Measured::new(
            "B2.6",
            abusive,
            abusive_disp.join("; "),
            "cost.csv: redis_cpu_us_per_decision <strategy>|abusive / <strategy>|evalsha",
        ).note("the token bucket (as published) writes its hash on refusals too; GCRA's refusal writes nothing"));
    }
    if let (Some(sha), Some(ev)) = (by.get("token-bucket|evalsha"), by.get("token-bucket|eval")) {
        let extra = ev.cpu().mean - sha.cpu().mean;
        let lost = (1.0 - ev.rate().mean / sha.rate().mean) * 100.0;
        let mut m = Measured::new(
            "B6.1",
            vec![extra, lost],
            format!(
                "EVAL {extra:+.2} us CPU per decision, throughput lost {lost:.1}% (EVALSHA {:.2} us, EVAL {:.2} us)",
                sha.cpu().mean,
                ev.cpu().mean
            ),
            "cost.csv: token-bucket|eval vs token-bucket|evalsha (and |fcall)",
        );
        if let Some(fc) = by.get("token-bucket|fcall") {
            let d = (fc.cpu().mean / sha.cpu().mean - 1.0).abs();
            let noise = (2.0 * rel_sd(&fc.cpu()).max(rel_sd(&sha.cpu()))).max(0.03);
            m.display.push_str(&format!(
                "; FCALL {:.2} us ({:+.1}% vs EVALSHA)",
                fc.cpu().mean,
                (fc.cpu().mean / sha.cpu().mean - 1.0) * 100.0
            ));
            m = m.condition(
                format!(
                    "|FCALL/EVALSHA - 1| of CPU per decision within noise (<= {:.1}%)",
                    noise * 100.0
                ),
                d <= noise,
            );
        }
        measured.push(m);
    }

    // Figure: CPU per decision per variant, GET as the reference line.
    let (path, link) = ctx.figure("cost_cpu_per_decision.svg");
    let groups: Vec<BarGroup> = order
        .iter()
        .map(|c| {
            let v = &by[c];
            let cpu = v.cpu();
            let cmd = v.s(|r| r.cmd_usec_per_decision);
            BarGroup {
                category: c.clone(),
                values: vec![cpu.mean, cmd.mean],
                ranges: vec![Some((cpu.min, cpu.max)), Some((cmd.min, cmd.max))],
            }
        })
        .collect();
    bar_chart(
        &path,
        &Axes {
            title: "B2.1/B2.4/B2.6/B6.1: Redis CPU per decision (GET = dashed line)".into(),
            x_label: "variant".into(),
            y_label: "us per decision".into(),
            ..Default::default()
        },
        &[
            "Redis CPU (INFO cpu)".to_string(),
            "command time (commandstats)".to_string(),
        ],
        &groups,
        get_cpu.map(|g| (g.mean, "GET")),
    )?;
    md.push_str(&format!(
        "\n![CPU per decision]({link})\n\nBars: mean over runs (whiskers min..max); command time is the top-level command's commandstats usec per decision (the script for Lua, MULTI+EXEC for the transaction).\n"
    ));
    Ok((measured, Section::new("cost", md)))
}
