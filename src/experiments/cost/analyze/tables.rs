//! The tables of `cost`: what ran, one line per variant, and GET against
//! redis-benchmark.

use super::super::rows::CostRow;
use super::{Variants, labels};
use limitbench_analysis::stats::Summary;
use limitbench_analysis::table::md_table;

pub(super) fn what_ran(v: &Variants, rows: &[CostRow]) -> String {
    let runs = v.by.values().map(|x| x.rows.len()).max().unwrap_or(0);
    let f = &rows[0];
    // The limit of normal traffic and the window, from the first variants (by id) that have them.
    let normal = v.by.values().find(|x| {
        let r = x.first();
        r.traffic == "uniform" && r.limit > 0 && r.prefill_entries == 0
    });
    format!(
        "What ran: {} variants x up to {} runs of {:.1} s (interleaved), {} connections, closed loop, seed {}; Redis pinned to CPU {}, the harness to CPU {}. Normal traffic: keys uniform over {} clients, limit {} per {} ms (never reached). CPU per decision = delta(used_cpu_user+used_cpu_sys) / client-counted decisions.\n\n",
        v.by.len(),
        runs,
        Summary::of(&rows.iter().map(|r| r.wall_s).collect::<Vec<_>>()).mean,
        f.conns,
        f.seed,
        f.redis_cpu
            .map(|c| c.to_string())
            .unwrap_or_else(|| "(not pinned)".into()),
        f.load_cpu
            .map(|c| c.to_string())
            .unwrap_or_else(|| "(not pinned)".into()),
        v.scale().map(|x| x.first().keys).unwrap_or(0),
        normal.map(|x| x.first().limit).unwrap_or(0),
        v.by.values()
            .find(|x| x.first().limit > 0)
            .map(|x| x.first().window_ms)
            .unwrap_or(0),
    )
}

/// One line per variant: rate, CPU (and x GET), busy, command time, latency, outcomes.
pub(super) fn variant_table(v: &Variants) -> String {
    let rows: Vec<Vec<String>> = v
        .in_order()
        .map(|(c, x)| {
            // Against the GET of its own group (the one `get` in older runs).
            let get_cpu = v.get_of(x).map(|(_, g)| g.cpu());
            let cpu = x.cpu();
            let busy = x.s(|r| r.redis_busy_fraction);
            vec![
                labels::words(c),
                x.first().traffic.clone(),
                x.rate().show(0),
                cpu.show(2),
                get_cpu
                    .map(|g| format!("{:.2}", cpu.mean / g.mean))
                    .unwrap_or_default(),
                format!("{:.2} (min {:.2})", busy.mean, busy.min),
                format!("{:.2}", x.s(|r| r.cmd_usec_per_call).mean),
                format!(
                    "{:.0} / {:.0} / {:.0}",
                    x.s(|r| r.p50_us).mean,
                    x.s(|r| r.p99_us).mean,
                    x.s(|r| r.p999_us).mean
                ),
                format!("{:.1}", x.admitted_pct()),
                x.rows.iter().map(|r| r.errors).sum::<u64>().to_string(),
                format!(
                    "{} of {}",
                    x.rows.iter().filter(|r| r.load_bound).count(),
                    x.rows.len()
                ),
            ]
        })
        .collect();
    md_table(
        &[
            "variant",
            "traffic",
            "decisions/s",
            "Redis CPU µs/decision",
            "x GET",
            "busy",
            "script/cmd µs per call",
            "p50 / p99 / p99.9 µs",
            "admitted %",
            "errors",
            "load-bound runs",
        ],
        &rows,
    )
}

pub(super) fn bench_line(v: &Variants, bench: &Summary) -> String {
    let Some(g) = v.scale().filter(|_| bench.n > 0) else {
        return String::new();
    };
    let of = |f: fn(&CostRow) -> Option<f64>| {
        Summary::of(&g.rows.iter().filter_map(|r| f(r)).collect::<Vec<_>>())
    };
    format!(
        "\nGET, harness vs `redis-benchmark -c {} -r {} -t get` in the same runs, same CPU: harness/redis-benchmark throughput {}; redis-benchmark {} req/s, Redis busy {:.2} under it, {:.2} µs CPU per GET (harness: {:.2}).\n",
        g.first().conns,
        g.first().keys,
        bench.show(2),
        of(|r| r.bench_rps).show(0),
        of(|r| r.bench_busy_fraction).mean,
        of(|r| r.bench_redis_cpu_us_per_request).mean,
        g.cpu().mean,
    )
}

/// B2.1's split: per variant, the whole CPU per decision against GET's and
/// its two parts (command time, the rest), in µs and in x GET.
pub(super) fn split_table(v: &Variants, published: &str) -> String {
    let Some((get, lua)) = super::b21_split(v) else {
        return String::new();
    };
    let rows: Vec<Vec<String>> = std::iter::once(&get)
        .chain(&lua)
        .map(|s| {
            vec![
                labels::words(s.cell.trim_end_matches("|evalsha")),
                super::paired::show(&s.total, 2),
                format!("{:.2}", s.total_us),
                format!("{:.2} ({:.2}x)", s.cmd_us, s.cmd.0),
                format!("{:.2} ({:.2}x)", s.rest_us, s.rest.0),
                format!("{:.0}%", 100.0 * s.rest_us / s.total_us),
            ]
        })
        .collect();
    format!(
        "\nB2.1, what a decision's Redis CPU is made of (ours beside the published {published}): command = INFO commandstats time of the top-level command per decision (the script; GET for GET), rest = the INFO cpu delta minus it (read, parse, reply, syscalls, event loop); x GET = per run against GET's whole CPU per decision in the same run.\n\n{}",
        md_table(
            &[
                "variant",
                "x GET (95% interval)",
                "CPU µs per decision",
                "command µs (x GET)",
                "rest µs (x GET)",
                "rest share",
            ],
            &rows
        )
    )
}
