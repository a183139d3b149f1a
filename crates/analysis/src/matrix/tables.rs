//! The matrix's claims tables: in full (what each server's cell says) and
//! at a glance (the verdict and the judged value per server, with the
//! change against the study's server).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::rows::{MatrixRow, cell_text, default_differs};
use super::servers::{Identity, STUDY_RERUN, STUDY_SERVER};

/// The claims table, one column per analysed server.
pub fn claims_table(
    rows: &[MatrixRow],
    servers: &[String],
    identities: &BTreeMap<String, Identity>,
) -> String {
    let label = |s: &String| {
        identities
            .get(s)
            .map(|i| format!("{s} ({} {})", i.product, i.version))
            .unwrap_or_else(|| s.clone())
    };
    let label = |s: &String| rerun_label(s, label(s));
    let mut md = format!(
        "| claim | published | {} |\n|---|---|{}\n",
        servers.iter().map(label).collect::<Vec<_>>().join(" | "),
        "---|".repeat(servers.len())
    );
    for r in rows {
        let id = if r.setting.is_empty() {
            r.id.clone()
        } else {
            format!("{} ({})", r.id, r.setting)
        };
        let id = if r.surviving().is_empty() {
            id
        } else {
            format!("**{id}**")
        };
        let cells: Vec<String> = servers
            .iter()
            .map(|s| {
                cell_text(r, s, identities)
                    .replace('|', "/")
                    .replace('\n', " ")
            })
            .collect();
        let _ = writeln!(
            md,
            "| {id} | {} | {} |",
            r.published_text.replace('|', "/"),
            cells.join(" | ")
        );
    }
    md
}

/// A column's label, marked when it is the study server's rerun.
fn rerun_label(server: &str, label: String) -> String {
    if server == STUDY_RERUN {
        format!("{label}, rerun (next seed)")
    } else {
        label
    }
}

/// A number with three significant digits, as a compact cell shows it.
fn short(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let digits = (2 - v.abs().log10().floor() as i32).max(0) as usize;
    format!("{v:.digits$}")
}

/// The claims table at a glance: per server the verdict and the judged
/// value (with its change against the study's server), bold where a
/// verdict differs; the full table says what each value is.
pub fn compact_table(
    rows: &[MatrixRow],
    servers: &[String],
    identities: &BTreeMap<String, Identity>,
) -> String {
    let label = |s: &String| {
        identities
            .get(s)
            .map(|i| format!("{} {} ({})", i.product, i.version, i.mem_allocator))
            .unwrap_or_else(|| s.clone())
    };
    let label = |s: &String| rerun_label(s, label(s));
    let mut md = format!(
        "| claim | unit | published | {} |\n|---|---|---|{}\n",
        servers.iter().map(label).collect::<Vec<_>>().join(" | "),
        "---|".repeat(servers.len())
    );
    let study = |r: &MatrixRow| r.cells.get(STUDY_SERVER).cloned();
    for r in rows {
        let cells: Vec<String> = servers
            .iter()
            .map(|s| {
                let Some(c) = r.cells.get(s) else {
                    return "-".into();
                };
                let mut t = c.verdict.clone();
                if !c.point_inside {
                    t += ", point outside tolerance";
                }
                if let Some(v) = c.value {
                    t += &format!(" {}", short(v));
                    if let (true, Some(sv)) = (s != STUDY_SERVER, study(r).and_then(|x| x.value))
                        && sv.abs() > 1e-12
                        && (v - sv).abs() > 1e-9 * sv.abs()
                    {
                        t += &format!(" ({:+.0}%)", (v / sv - 1.0) * 100.0);
                    }
                }
                if s != STUDY_SERVER
                    && let Some((key, here, _, _)) = default_differs(&r.id, s, identities)
                {
                    t += &format!("; default {key} {here}");
                }
                match (r.cell_differs(s), r.survives(s)) {
                    (true, Some(false)) => format!("{t} (as a rerun moves)"),
                    (true, _) => format!("**{t}**"),
                    _ => t,
                }
            })
            .collect();
        let id = if r.setting.is_empty() {
            r.id.clone()
        } else {
            format!("{} ({})", r.id, r.setting)
        };
        let _ = writeln!(
            md,
            "| {id} | {} | {} | {} |",
            r.unit.replace('|', "/"),
            r.published_text.replace('|', "/"),
            cells.join(" | ")
        );
    }
    md
}
