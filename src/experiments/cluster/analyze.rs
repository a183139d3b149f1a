//! Analysis of `cluster` (B7.1, B7.2): the fraction of users for whom each
//! script variant works, by shebang flags and cluster size, the error texts,
//! and the concurrency check on the cluster.

use crate::analysis::chart::{Axes, BarGroup, bar_chart};
use crate::analysis::table::{distinct, error_core, f, md_table};
use crate::analysis::{AnalysisCtx, Measured, Section};
use crate::analysis::stats::Summary;
use crate::error::Result;
use super::Row;

/// The text between the first pair of single quotes in a claim statement.
fn quoted(s: &str) -> Option<String> {
    let a = s.find('\'')?;
    let b = s[a + 1..].find('\'')?;
    Some(s[a + 1..a + 1 + b].to_string())
}

pub fn analyze(ctx: &AnalysisCtx) -> Result<(Vec<Measured>, Section)> {
    let Some(rows) = ctx.read_csv::<Row>("cluster.csv")? else {
        return Ok((vec![], Section::new("cluster", "Not run.\n")));
    };
    let users: Vec<&Row> = rows.iter().filter(|r| r.kind == "users").collect();
    let conc: Vec<&Row> = rows.iter().filter(|r| r.kind == "concurrency").collect();
    let mut md = format!(
        "Redis Cluster of n masters (slots split evenly), one decision per user, window keys derived from Redis's clock. \
         Seed(s): {:?}. Users per trial: {:?}.\n\n",
        distinct(rows.iter().map(|r| r.seed)),
        distinct(users.iter().map(|r| r.users))
    );
    let sel = |n: u64, v: &str, fl: &str| -> Vec<&Row> {
        users
            .iter()
            .copied()
            .filter(|r| r.nodes == n && r.variant == v && r.flags == fl)
            .collect()
    };
    let nodes = {
        let mut v = distinct(users.iter().map(|r| r.nodes));
        v.sort();
        v
    };
    let variants = distinct(users.iter().map(|r| r.variant.clone()));
    let flags = distinct(users.iter().map(|r| r.flags.clone()));
    let published_error = ctx.claim("B7.1").and_then(|c| quoted(&c.statement));
    let mut t = Vec::new();
    for &n in &nodes {
        for v in &variants {
            for fl in &flags {
                let rs = sel(n, v, fl);
                if rs.is_empty() {
                    continue;
                }
                let fr = Summary::of(&rs.iter().map(|r| r.fraction_ok).collect::<Vec<_>>());
                let same = Summary::of(
                    &rs.iter()
                        .map(|r| r.same_node as f64 / r.users.max(1) as f64)
                        .collect::<Vec<_>>(),
                );
                let errs = distinct(
                    rs.iter()
                        .flat_map(|r| {
                            r.errors
                                .split(" | ")
                                .map(|e| error_core(e.rsplit_once(" (x").map(|x| x.0).unwrap_or(e)))
                        })
                        .filter(|e| !e.is_empty()),
                );
                t.push(vec![
                    n.to_string(),
                    v.clone(),
                    fl.clone(),
                    fr.show(3),
                    f(same.mean, 3),
                    rs.iter().map(|r| r.ok_other_node).sum::<u64>().to_string(),
                    errs.join(" / "),
                ]);
            }
        }
    }
    md.push_str("Fraction of users whose decision worked, per cluster size, variant and script first line \
                 (`none`: no shebang; `lua`: `#!lua`; `allow-cross-slot`: `#!lua flags=allow-cross-slot-keys`):\n\n");
    md.push_str(&md_table(
        &[
            "masters",
            "variant",
            "flags",
            "fraction ok (mean, min, max, n trials)",
            "derived key on base key's node (fraction)",
            "ok with key on another node",
            "error texts (script suffix cut)",
        ],
        &t,
    ));
    let mut out = Vec::new();
    let main_n = if nodes.contains(&3) {
        3
    } else {
        nodes.first().copied().unwrap_or(0)
    };
    let plain = sel(main_n, "derived-plain", "none");
    if !plain.is_empty() {
        let fr = Summary::of(&plain.iter().map(|r| r.fraction_ok).collect::<Vec<_>>());
        let texts: Vec<String> = distinct(
            plain
                .iter()
                .flat_map(|r| r.errors.split(" | ").map(|e| e.to_string()))
                .filter(|e| !e.is_empty()),
        );
        let all_published = published_error
            .as_ref()
            .is_some_and(|p| texts.iter().all(|t| t.contains(p.as_str())));
        let same = plain
            .iter()
            .all(|r| r.ok == r.ok_same_node + r.ok_other_node && r.ok_other_node == 0);
        out.push(
            Measured::new(
                "B7.1",
                vec![fr.mean],
                format!("{} of users work on {main_n} masters; errors: {}", fr.show(3),
                    distinct(texts.iter().map(|t| error_core(t.rsplit_once(" (x").map(|x| x.0).unwrap_or(t)))).join(" / ")),
                format!("cluster.csv kind=users nodes={main_n} variant=derived-plain flags=none; cluster-users.csv"),
            )
            .condition("every failure carries the published error text", all_published)
            .condition("a user works exactly when the derived key is on the base key's node", same)
            .note("Redis 7.0.15 prefixes the text with ERR and appends the script's SHA and line"),
        );
    }
    let tagged = sel(main_n, "derived-tagged", "none");
    if !tagged.is_empty() {
        let fr = Summary::of(&tagged.iter().map(|r| r.fraction_ok).collect::<Vec<_>>());
        let every_flag = flags.iter().all(|fl| {
            sel(main_n, "derived-tagged", fl)
                .iter()
                .all(|r| r.fraction_ok == 1.0)
        });
        out.push(
            Measured::new(
                "B7.2",
                vec![fr.min],
                format!(
                    "{} of users work (min over trials) on {main_n} masters",
                    fr.show(3)
                ),
                format!("cluster.csv kind=users nodes={main_n} variant=derived-tagged flags=none"),
            )
            .condition(
                "all users work with the hash tag under every script first line",
                every_flag,
            ),
        );
    }
    if !conc.is_empty() {
        md.push_str("\nStudy A's concurrency check on the cluster, hash-tagged keys (every worker released together):\n\n");
        let mut t = Vec::new();
        for s in distinct(conc.iter().map(|r| r.strategy.clone())) {
            let rs: Vec<&Row> = conc.iter().copied().filter(|r| r.strategy == s).collect();
            t.push(vec![
                s.clone(),
                rs[0].nodes.to_string(),
                rs[0].workers.to_string(),
                rs[0].limit.to_string(),
                rs[0].offered.to_string(),
                Summary::of(&rs.iter().map(|r| r.admitted as f64).collect::<Vec<_>>()).show(1),
                format!("{}/{}", rs.iter().filter(|r| r.exact).count(), rs.len()),
            ]);
        }
        md.push_str(&md_table(
            &[
                "strategy",
                "masters",
                "workers",
                "limit",
                "offered",
                "admitted",
                "exact trials",
            ],
            &t,
        ));
    }
    if !users.is_empty() {
        let (path, link) = ctx.figure("cluster-failing-fraction.svg");
        let series: Vec<String> = nodes.iter().map(|n| format!("{n} masters")).collect();
        let mut groups = Vec::new();
        for v in &variants {
            for fl in &flags {
                let mut vals = Vec::new();
                let mut rg = Vec::new();
                for &n in &nodes {
                    let s = Summary::of(
                        &sel(n, v, fl)
                            .iter()
                            .map(|r| 1.0 - r.fraction_ok)
                            .collect::<Vec<_>>(),
                    );
                    vals.push(if s.n > 0 { s.mean } else { f64::NAN });
                    rg.push((s.n > 0).then_some((s.min, s.max)));
                }
                groups.push(BarGroup {
                    category: format!("{v} / {fl}"),
                    values: vals,
                    ranges: rg,
                });
            }
        }
        bar_chart(
            &path,
            &Axes {
                title: "B7.1/B7.2: fraction of users whose decision fails, by variant / script first line".into(),
                x_label: "variant / shebang flags".into(),
                y_label: "fraction of users failing".into(),
                ..Default::default()
            },
            &series,
            &groups,
            None,
        )?;
        md.push_str(&format!("\n![cluster failing fraction]({link})\n"));
    }
    Ok((out, Section::new("cluster", md)))
}
