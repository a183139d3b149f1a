//! Analysis of `ts-member` (B5.1-B5.4): over-admission of the timestamp-member
//! sliding log per rate and member, the pacing/connection sensitivity, and the
//! closed-loop run.

use std::collections::BTreeSet;

use crate::analysis::chart::{Axes, Series, Style, xy_chart};
use crate::analysis::table::{distinct, f, md_table};
use crate::analysis::{AnalysisCtx, Measured, Section};
use crate::analysis::stats::Summary;
use crate::error::Result;
use super::Row;

/// The rates B5.1 reports, in its order.
const B51_RATES: [f64; 3] = [100.0, 1000.0, 10000.0];

fn ratios(rows: &[&Row]) -> Summary {
    Summary::of(
        &rows
            .iter()
            .map(|r| r.admitted_per_limit)
            .collect::<Vec<_>>(),
    )
}

pub fn analyze(ctx: &AnalysisCtx) -> Result<(Vec<Measured>, Section)> {
    let Some(rows) = ctx.read_csv::<Row>("ts-member.csv")? else {
        return Ok((vec![], Section::new("ts-member", "Not run.\n")));
    };
    let open: Vec<&Row> = rows.iter().filter(|r| r.mode == "open").collect();
    let closed: Vec<&Row> = rows.iter().filter(|r| r.mode == "closed").collect();
    let members = distinct(open.iter().map(|r| r.member.clone()));
    // The main setting: the (pacing, drivers) every member ran at.
    let mut common: Option<BTreeSet<(String, u64)>> = None;
    for m in &members {
        let s: BTreeSet<(String, u64)> = open
            .iter()
            .filter(|r| &r.member == m)
            .map(|r| (r.pacing.clone(), r.drivers))
            .collect();
        common = Some(match common {
            None => s,
            Some(c) => c.intersection(&s).cloned().collect(),
        });
    }
    let main = common
        .unwrap_or_default()
        .into_iter()
        .max_by_key(|(p, _)| (p == "poisson") as u8);
    let mut md = String::new();
    let seeds = distinct(rows.iter().map(|r| r.seed));
    md.push_str(&format!(
        "Open loop: limit {} per {} ms, arrivals for {} s at each rate (one client), a pool of driver connections; \
         main setting pacing/drivers = {:?}; seed(s) {seeds:?}. Every row records the achieved rate and spread measured from send times.\n\n",
        open.first().map(|r| r.limit).unwrap_or(0),
        open.first().map(|r| r.window_ms).unwrap_or(0),
        open.first().map(|r| r.duration_s).unwrap_or(0.0),
        main
    ));
    let in_main = |r: &&Row| {
        main.as_ref()
            .is_some_and(|(p, d)| &r.pacing == p && r.drivers == *d)
    };
    let rates = {
        let mut v = distinct(open.iter().map(|r| r.rate_per_s));
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        v
    };
    let sel = |member: &str, rate: f64| -> Vec<&Row> {
        open.iter()
            .copied()
            .filter(|r| r.member == member && r.rate_per_s == rate)
            .filter(in_main)
            .collect()
    };
    // Main table.
    let mut t = Vec::new();
    for m in &members {
        for &rate in &rates {
            let rs = sel(m, rate);
            if rs.is_empty() {
                continue;
            }
            let ach = Summary::of(&rs.iter().map(|r| r.achieved_rate_per_s).collect::<Vec<_>>());
            let cv = Summary::of(
                &rs.iter()
                    .map(|r| r.gap_sd_us / r.gap_mean_us)
                    .collect::<Vec<_>>(),
            );
            t.push(vec![
                m.clone(),
                f(rate, 0),
                ratios(&rs).show(2),
                f(
                    Summary::of(&rs.iter().map(|r| r.over_limit as f64).collect::<Vec<_>>()).max,
                    0,
                ),
                f(ach.mean, 0),
                f(cv.mean, 2),
                f(
                    Summary::of(&rs.iter().map(|r| r.lateness_p99_us).collect::<Vec<_>>()).mean,
                    0,
                ),
                f(
                    Summary::of(
                        &rs.iter()
                            .map(|r| r.admitted_distinct_redis_ms as f64)
                            .collect::<Vec<_>>(),
                    )
                    .mean,
                    0,
                ),
                f(
                    Summary::of(&rs.iter().map(|r| r.zcard_end as f64).collect::<Vec<_>>()).mean,
                    0,
                ),
            ]);
        }
    }
    md.push_str(&md_table(
        &[
            "member",
            "offered /s",
            "admitted / limit (mean, min, max, n)",
            "max over limit",
            "achieved /s",
            "gap sd/mean",
            "lateness p99 us",
            "distinct Redis ms among admitted",
            "ZCARD at end",
        ],
        &t,
    ));
    let mut out = Vec::new();

    // B5.1 with the sensitivity table.
    let spec = ctx.claim("B5.1").cloned();
    let mut values = Vec::new();
    let mut disp = Vec::new();
    for &rate in &B51_RATES {
        let s = ratios(&sel("redis-ms", rate));
        values.push(s.mean);
        disp.push(format!("{}/s: {}", rate, s.show(2)));
    }
    if !open.is_empty() {
        out.push(
            Measured::new(
                "B5.1",
                values.clone(),
                disp.join("; "),
                "ts-member.csv mode=open member=redis-ms, main pacing/drivers",
            )
            .note(format!(
                "rates missing at this size show as n/a; measured inter-arrival sd/mean (Poisson: 1) per rate: {}",
                B51_RATES
                    .iter()
                    .map(|&r| {
                        let rs = sel("redis-ms", r);
                        f(Summary::of(&rs.iter().map(|x| x.gap_sd_us / x.gap_mean_us).collect::<Vec<_>>()).mean, 2)
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        );
    }
    let sweep: Vec<(String, u64)> = distinct(
        open.iter()
            .filter(|r| r.member == "redis-ms")
            .map(|r| (r.pacing.clone(), r.drivers)),
    );
    if sweep.len() > 1 {
        md.push_str("\nSensitivity of the timestamp member (redis-ms) to the unstated pacing and connection count; \
                     `B5.1 band` says whether the mean lies within the claim's tolerance of the published value at that rate:\n\n");
        let mut t = Vec::new();
        for (pacing, drivers) in &sweep {
            for &rate in &rates {
                let rs: Vec<&Row> = open
                    .iter()
                    .copied()
                    .filter(|r| {
                        r.member == "redis-ms"
                            && r.rate_per_s == rate
                            && &r.pacing == pacing
                            && r.drivers == *drivers
                    })
                    .collect();
                if rs.is_empty() {
                    continue;
                }
                let s = ratios(&rs);
                let band = spec.as_ref().and_then(|c| {
                    let i = B51_RATES.iter().position(|x| *x == rate)?;
                    let (p, tol) = (c.published.at(i), c.tolerance.at(i));
                    Some(if (s.mean - p).abs() <= tol * p {
                        "within"
                    } else {
                        "outside"
                    })
                });
                t.push(vec![
                    pacing.clone(),
                    drivers.to_string(),
                    f(rate, 0),
                    s.show(2),
                    f(
                        Summary::of(&rs.iter().map(|r| r.achieved_rate_per_s).collect::<Vec<_>>())
                            .mean,
                        0,
                    ),
                    f(
                        Summary::of(
                            &rs.iter()
                                .map(|r| r.gap_sd_us / r.gap_mean_us)
                                .collect::<Vec<_>>(),
                        )
                        .mean,
                        2,
                    ),
                    band.unwrap_or("-").into(),
                ]);
            }
        }
        md.push_str(&md_table(
            &[
                "pacing",
                "drivers",
                "offered /s",
                "admitted / limit",
                "achieved /s",
                "gap sd/mean",
                "B5.1 band",
            ],
            &t,
        ));
    }

    // B5.2: closed loop.
    let closed_m =
        |m: &str| -> Vec<&Row> { closed.iter().copied().filter(|r| r.member == m).collect() };
    if !closed.is_empty() {
        md.push_str("\nClosed loop (workers flat out):\n\n");
        let mut t = Vec::new();
        for m in distinct(closed.iter().map(|r| r.member.clone())) {
            for d in distinct(closed_m(&m).iter().map(|r| r.duration_s.to_bits())) {
                let rs: Vec<&Row> = closed_m(&m)
                    .into_iter()
                    .filter(|r| r.duration_s.to_bits() == d)
                    .collect();
                t.push(vec![
                    m.clone(),
                    rs[0].drivers.to_string(),
                    rs[0].limit.to_string(),
                    f(rs[0].duration_s, 1),
                    Summary::of(&rs.iter().map(|r| r.admitted as f64).collect::<Vec<_>>()).show(0),
                    f(
                        Summary::of(&rs.iter().map(|r| r.achieved_rate_per_s).collect::<Vec<_>>())
                            .mean,
                        0,
                    ),
                ]);
            }
        }
        md.push_str(&md_table(
            &[
                "member",
                "workers",
                "limit",
                "duration s",
                "admitted",
                "decisions /s",
            ],
            &t,
        ));
        let rs = closed_m("redis-ms");
        if !rs.is_empty() {
            // The run closest to the study's 2 s.
            let best = rs
                .iter()
                .map(|r| r.duration_s)
                .min_by(|a, b| (a - 2.0).abs().partial_cmp(&(b - 2.0).abs()).unwrap())
                .unwrap();
            let rs: Vec<&Row> = rs.into_iter().filter(|r| r.duration_s == best).collect();
            let s = Summary::of(&rs.iter().map(|r| r.admitted as f64).collect::<Vec<_>>());
            let lim = rs[0].limit as f64;
            out.push(
                Measured::new(
                    "B5.2",
                    vec![s.mean],
                    format!(
                        "{} admitted, {:.1}x the limit, {} s runs at {} decisions/s",
                        s.show(0),
                        s.mean / lim,
                        best,
                        f(
                            Summary::of(
                                &rs.iter().map(|r| r.achieved_rate_per_s).collect::<Vec<_>>()
                            )
                            .mean,
                            0
                        )
                    ),
                    "ts-member.csv mode=closed member=redis-ms",
                )
                .condition(
                    "over 10x the limit in every trial",
                    rs.iter().all(|r| r.admitted as f64 > 10.0 * lim),
                )
                .note("machine claim: the count scales with the decision rate Redis sustains here"),
            );
        }
    }

    // B5.3: redis-ms vs caller-ms.
    let mut diffs = Vec::new();
    let mut dd = Vec::new();
    let mut dd_less = 0;
    for &rate in &rates {
        let a = Summary::of(
            &sel("redis-ms", rate)
                .iter()
                .map(|r| r.over_limit as f64)
                .collect::<Vec<_>>(),
        );
        let b = Summary::of(
            &sel("caller-ms", rate)
                .iter()
                .map(|r| r.over_limit as f64)
                .collect::<Vec<_>>(),
        );
        if a.n > 0 && b.n > 0 && a.mean > 0.0 {
            let d = (a.mean - b.mean).abs() / a.mean * 100.0;
            diffs.push(d);
            dd_less += (b.mean < a.mean) as usize;
            dd.push(format!(
                "{rate}/s: {} vs {} over ({}%)",
                f(a.mean, 1),
                f(b.mean, 1),
                f(d, 1)
            ));
        }
    }
    if !diffs.is_empty() {
        let worst = diffs.iter().copied().fold(f64::MIN, f64::max);
        out.push(Measured::new(
            "B5.3",
            vec![worst],
            format!("largest {}%: {}", f(worst, 1), dd.join("; ")),
            "ts-member.csv mode=open, main setting: mean over_limit, member=redis-ms vs caller-ms",
        ).note(format!(
                "caller-ms over-admitted less than redis-ms at {} of {} rates; a likely cause: requests that queue at Redis run back to back inside one Redis millisecond, while the caller stamps them when it sends",
                dd_less, diffs.len()
            )));
    }

    // B5.4: exact members.
    let exact: Vec<&Row> = rows
        .iter()
        .filter(|r| r.member == "redis-us" || r.member == "request-id")
        .collect();
    if !exact.is_empty() {
        let worst = exact.iter().map(|r| r.over_limit).max().unwrap_or(0);
        let us_worst = exact
            .iter()
            .filter(|r| r.member == "redis-us")
            .map(|r| r.over_limit)
            .max();
        let id_worst = exact
            .iter()
            .filter(|r| r.member == "request-id")
            .map(|r| r.over_limit)
            .max();
        out.push(
            Measured::new(
                "B5.4",
                vec![worst.max(0) as f64],
                format!(
                    "max over limit: redis-us {:?}, request-id {:?} ({} trials)",
                    us_worst,
                    id_worst,
                    exact.len()
                ),
                "ts-member.csv member in {redis-us, request-id}, every mode and cell",
            )
            .condition(
                "no errors in those trials",
                exact.iter().all(|r| r.errors == 0),
            ),
        );
    }

    // Figure: over-admission vs rate.
    if !open.is_empty() {
        let (path, link) = ctx.figure("ts-member-overadmission.svg");
        let mut series = Vec::new();
        for m in &members {
            let mut pts = Vec::new();
            let mut rg = Vec::new();
            for &rate in &rates {
                let s = ratios(&sel(m, rate));
                if s.n > 0 {
                    pts.push((rate, s.mean));
                    rg.push((rate, s.min, s.max));
                }
            }
            series.push(Series::new(format!("{m} (main)"), pts, Style::LinePoints).with_ranges(rg));
        }
        for (pacing, drivers) in &sweep {
            if main.as_ref() == Some(&(pacing.clone(), *drivers)) {
                continue;
            }
            let pts: Vec<(f64, f64)> = rates
                .iter()
                .filter_map(|&rate| {
                    let rs: Vec<&Row> = open
                        .iter()
                        .copied()
                        .filter(|r| {
                            r.member == "redis-ms"
                                && r.rate_per_s == rate
                                && &r.pacing == pacing
                                && r.drivers == *drivers
                        })
                        .collect();
                    (!rs.is_empty()).then(|| (rate, ratios(&rs).mean))
                })
                .collect();
            series.push(Series::new(
                format!("redis-ms {pacing} d{drivers}"),
                pts,
                Style::Dashed,
            ));
        }
        xy_chart(
            &path,
            &Axes {
                title: "B5.1-B5.4: admitted / limit vs offered rate (limit 100 per 10 s, 2 s of arrivals)".into(),
                x_label: "offered rate (requests/s, log)".into(),
                y_label: "admitted / limit (log)".into(),
                x_log: true,
                y_log: true,
            },
            &series,
        )?;
        md.push_str(&format!("\n![timestamp member over-admission]({link})\n"));
    }
    Ok((out, Section::new("ts-member", md)))
}
