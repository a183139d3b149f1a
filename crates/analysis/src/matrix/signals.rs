//! What differs between servers, in words, for the top of
//! `matrix-claims.md`: the differences that survive the rerun of the
//! study's server (each server's value, change and allocator), which
//! servers they fall on by allocator, the servers' own defaults that change
//! a finding, the differences within what a rerun moves, and the scorecard
//! cells whose verdict differs.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::rows::{MatrixRow, default_differs};
use super::scorecard::Cards;
use super::servers::{Identity, STUDY_RERUN, STUDY_SERVER};

fn short(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let digits = (2 - v.abs().log10().floor() as i32).max(0) as usize;
    format!("{v:.digits$}")
}

fn row_name(r: &MatrixRow) -> String {
    if r.setting.is_empty() {
        r.id.clone()
    } else {
        format!("{} ({})", r.id, r.setting)
    }
}

fn allocator(server: &str, identities: &BTreeMap<String, Identity>) -> String {
    identities
        .get(server)
        .map(|i| i.mem_allocator.clone())
        .unwrap_or_else(|| "allocator unknown".into())
}

/// The section "What differs between servers" (markdown, ending in a blank line).
pub fn signals(
    rows: &[MatrixRow],
    servers: &[String],
    identities: &BTreeMap<String, Identity>,
    cards: Option<&Cards>,
) -> String {
    let rerun = servers.iter().any(|s| s == STUDY_RERUN);
    let mut md = String::from("## What differs between servers\n\n");
    let surviving: Vec<&MatrixRow> = rows.iter().filter(|r| !r.surviving().is_empty()).collect();
    if surviving.is_empty() {
        let _ = writeln!(
            md,
            "No claim differs from {STUDY_SERVER}{}.\n",
            if rerun {
                " past what its rerun moves"
            } else {
                ""
            }
        );
    } else {
        let _ = writeln!(
            md,
            "{} of {} claim rows differ from {STUDY_SERVER} {} (the value on each server, its change against {STUDY_SERVER}, the verdict, the server's allocator):\n",
            surviving.len(),
            rows.len(),
            if rerun {
                format!(
                    "past what its rerun moves ({STUDY_RERUN} kept the verdict and moved the value less)"
                )
            } else {
                "(no rerun: noise is not told apart)".to_string()
            }
        );
    }
    for r in &surviving {
        let study = r.cells.get(STUDY_SERVER);
        let sv = study.and_then(|c| c.value);
        let mut parts = Vec::new();
        if let Some(c) = study {
            let again = r
                .cells
                .get(STUDY_RERUN)
                .and_then(|c| c.value)
                .map(|v| format!(", rerun {}", short(v)))
                .unwrap_or_default();
            parts.push(format!(
                "{STUDY_SERVER} {}{again} ({}, {})",
                c.value.map(short).unwrap_or_else(|| "-".into()),
                c.base,
                allocator(STUDY_SERVER, identities)
            ));
        }
        for s in r.surviving() {
            let Some(c) = r.cells.get(&s) else { continue };
            let change = match (c.value, sv) {
                (Some(v), Some(b)) => super::heatmaps::change(v, b),
                _ => String::new(),
            };
            parts.push(format!(
                "**{s} {}{change}** ({}, {})",
                c.value.map(short).unwrap_or_else(|| "-".into()),
                c.base,
                allocator(&s, identities)
            ));
        }
        let judged = if r.band.is_none() && r.unit != "behaviour" {
            ", not judged: its shape is"
        } else {
            ""
        };
        let _ = writeln!(
            md,
            "- **{}**, {}{judged} (published {}): {}.",
            row_name(r),
            r.value_unit,
            r.published_text.split(';').next().unwrap_or("").trim(),
            parts.join("; ")
        );
    }
    if !surviving.is_empty() {
        md.push('\n');
        // Which servers the differences fall on, by allocator.
        let study_alloc = allocator(STUDY_SERVER, identities);
        let mut by_alloc: BTreeMap<(bool, String), Vec<String>> = BTreeMap::new();
        for s in servers
            .iter()
            .filter(|s| *s != STUDY_SERVER && *s != STUDY_RERUN)
        {
            let ids: Vec<String> = surviving
                .iter()
                .filter(|r| r.surviving().contains(s))
                .map(|r| r.id.clone())
                .collect();
            let a = allocator(s, identities);
            by_alloc
                .entry((a == study_alloc, a))
                .or_default()
                .push(format!(
                    "{s} {}",
                    if ids.is_empty() {
                        "none".to_string()
                    } else {
                        ids.join(", ")
                    }
                ));
        }
        let _ = write!(md, "By allocator ({STUDY_SERVER}: {study_alloc}): ");
        let lines: Vec<String> = by_alloc
            .iter()
            .map(|((same, a), v)| {
                format!(
                    "{} {a}: {}",
                    if *same { "the same," } else { "another," },
                    v.join("; ")
                )
            })
            .collect();
        let _ = writeln!(md, "{}.\n", lines.join("; "));
    }
    // The servers' own defaults that change what an untouched server does.
    let mut defaults: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for r in rows {
        for s in servers {
            if let Some((key, here, study, meaning)) = default_differs(&r.id, s, identities) {
                defaults
                    .entry(format!(
                        "{}: own default {key} = {here} ({STUDY_SERVER}: {study}): {meaning}",
                        r.id
                    ))
                    .or_default()
                    .push(s.clone());
            }
        }
    }
    for (text, who) in &defaults {
        let _ = writeln!(md, "- **{}** {text}.", who.join(", "));
    }
    if !defaults.is_empty() {
        md.push('\n');
    }
    let noise: Vec<String> = rows
        .iter()
        .filter_map(|r| {
            let within: Vec<String> = servers
                .iter()
                .filter(|s| r.survives(s) == Some(false))
                .cloned()
                .collect();
            (!within.is_empty()).then(|| format!("{} ({})", row_name(r), within.join(", ")))
        })
        .collect();
    if !noise.is_empty() {
        let _ = writeln!(
            md,
            "Within what the rerun of {STUDY_SERVER} moves (not counted): {}.\n",
            noise.join("; ")
        );
    }
    let same = rows.iter().filter(|r| !r.differs()).count();
    let _ = writeln!(
        md,
        "{same} of {} claim rows have the same verdict (and side of the tolerance) on every server.\n",
        rows.len()
    );
    if let Some(cards) = cards.filter(|c| c.servers.len() > 1) {
        let mut by_prop: BTreeMap<&str, usize> = BTreeMap::new();
        for key in cards.cells.keys().filter(|k| cards.differs(k)) {
            *by_prop.entry(key.1.as_str()).or_default() += 1;
        }
        let n: usize = by_prop.values().sum();
        let _ = writeln!(
            md,
            "Scorecard: {n} of {} (strategy, property) cells have a verdict that differs between servers{} (no rerun has a scorecard, so these are not told apart from noise; [matrix-scorecard.md](matrix-scorecard.md)).\n",
            cards.cells.len(),
            if by_prop.is_empty() {
                String::new()
            } else {
                format!(
                    ": {}",
                    by_prop
                        .iter()
                        .map(|(p, k)| format!("{p} {k}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }
        );
    }
    md
}
