//! The claims of a matrix run side by side: one column per server.
//!
//! The expectation of a claim is the study's, on the study's server
//! (Redis 7.0): that column is judged against the publication as any run
//! is. On another server the row says whether the finding holds there (the
//! same verdict as on the study's server) and, where it does not, what the
//! server does instead: its value, the change against the study's server,
//! and the server's own default of the setting the finding depends on.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use limitbench_plot::figure::{Axis, Figure, Panel, Pt, Reference, Series};

use crate::analysis::Judged;
use crate::error::{Error, Result};

use super::STUDY_SERVER;
use super::identity::Identity;

/// One server's column: what it is and how its run went.
#[derive(Debug, Clone, Default)]
pub struct ServerColumn {
    pub name: String,
    pub status: String,
    pub reason: Option<String>,
    pub identity: Option<Identity>,
    pub run_seconds: f64,
    pub scorecard_seconds: f64,
}

/// Claims whose finding rests on a server default the experiment itself
/// overrides (so the measurement holds everywhere, but an untouched server
/// behaves as its default says): the setting, and what its value means.
const DEFAULT_DEPENDENT: &[(&str, &str, &str)] = &[
    (
        "B4.2",
        "lazyfree-lazy-expire",
        "with `yes` an untouched server frees an expired log in the background: the default stall of the study's server does not happen",
    ),
    (
        "B3.2",
        "zset-max-listpack-entries",
        "the listpack cliff sits at this many entries",
    ),
];

/// One server's judgement of one claim row.
#[derive(Debug, Clone)]
pub struct Cell {
    /// The verdict as the report writes it (with "(borderline)" and the like).
    pub verdict: String,
    /// The verdict alone: what "holds" and "differs" compare (a borderline
    /// interval on one server is not a different finding).
    pub base: String,
    /// The point value(s) and conditions inside the claim's fixed tolerance
    /// (the judge's check without intervals): what a server with too few
    /// trials for a verdict still shows about the finding.
    pub point_inside: bool,
    pub display: String,
    pub value: Option<f64>,
    pub interval: Option<(f64, f64)>,
}

/// A row of the matrix: a claim (and its setting, where a claim has rows
/// per setting) with one cell per server.
#[derive(Debug, Clone)]
pub struct Row {
    pub id: String,
    pub setting: String,
    pub unit: String,
    pub published: Option<f64>,
    pub published_text: String,
    pub cells: BTreeMap<String, Cell>,
}

impl Row {
    /// Does any server's verdict differ from the study server's?
    pub fn differs(&self) -> bool {
        let Some(study) = self.cells.get(STUDY_SERVER) else {
            return false;
        };
        self.cells
            .values()
            .any(|c| c.base != study.base || c.point_inside != study.point_inside)
    }
}

fn setting_text(j: &Judged) -> String {
    j.measured
        .as_ref()
        .map(|m| {
            m.setting
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

/// The rows, from each server's judged claims, in the study server's order.
/// A claim measured on no server (its experiment not in the matrix) is left out.
pub fn rows(per_server: &[(String, Vec<Judged>)]) -> Vec<Row> {
    let mut out: Vec<Row> = Vec::new();
    for (server, judged) in per_server {
        for j in judged {
            let Some(m) = &j.measured else { continue };
            let setting = setting_text(j);
            let cell = Cell {
                verdict: crate::analysis::report::verdict_text(j),
                base: j.verdict.as_str().to_string(),
                point_inside: crate::analysis::claims::value_passes(
                    &j.spec,
                    &m.values,
                    &[],
                    &m.conditions,
                )
                .0,
                display: m.display.clone(),
                value: m.values.first().copied(),
                interval: m.intervals.first().copied(),
            };
            let pos = out
                .iter()
                .position(|r| r.id == j.spec.id && r.setting == setting);
            let pos = match pos {
                Some(p) => p,
                None => {
                    out.push(Row {
                        id: j.spec.id.clone(),
                        setting,
                        unit: j.spec.unit.clone(),
                        published: j.spec.published.values().first().copied(),
                        published_text: j.spec.published_text.clone(),
                        cells: BTreeMap::new(),
                    });
                    out.len() - 1
                }
            };
            out[pos].cells.insert(server.clone(), cell);
        }
    }
    out
}

/// What a row says for `server`: the study's judgement on the study's
/// server; elsewhere whether the finding holds and, if not, what instead.
pub fn cell_text(row: &Row, server: &str, identities: &BTreeMap<String, Identity>) -> String {
    let Some(c) = row.cells.get(server) else {
        return "not measured".into();
    };
    if server == STUDY_SERVER {
        return format!("{}: {}", c.verdict, c.display);
    }
    let study = row.cells.get(STUDY_SERVER);
    let change = match (c.value, study.and_then(|s| s.value)) {
        (Some(v), Some(s)) if s.abs() > 1e-12 && (v - s).abs() > 1e-9 * s.abs() => {
            format!(" ({:+.0}% vs {STUDY_SERVER})", (v / s - 1.0) * 100.0)
        }
        _ => String::new(),
    };
    let mut text = match study {
        Some(s) if s.base == c.base && s.point_inside == c.point_inside => {
            format!("holds ({}): {}{change}", c.verdict, c.display)
        }
        Some(s) => format!(
            "does not hold ({}{}; {} on {STUDY_SERVER}): {}{change}",
            c.verdict,
            if c.point_inside {
                ""
            } else {
                ", point value outside the claim's tolerance"
            },
            s.verdict,
            c.display
        ),
        None => format!("{}: {}{change}", c.verdict, c.display),
    };
    if let Some(d) = default_note(&row.id, server, identities) {
        text += &format!("; {d}");
    }
    text
}

/// The server's own default of the setting `id` depends on, where it is
/// not the study server's.
pub fn default_note(
    id: &str,
    server: &str,
    identities: &BTreeMap<String, Identity>,
) -> Option<String> {
    let (key, here, study, meaning) = default_differs(id, server, identities)?;
    Some(format!(
        "this server's own default {key} = {here} ({STUDY_SERVER}: {study}): {meaning}"
    ))
}

/// The setting `id` depends on, this server's default, the study server's,
/// and what it means, where the two defaults differ.
fn default_differs(
    id: &str,
    server: &str,
    identities: &BTreeMap<String, Identity>,
) -> Option<(&'static str, String, String, &'static str)> {
    let (_, key, meaning) = DEFAULT_DEPENDENT.iter().find(|d| d.0 == id)?;
    let here = identities.get(server)?.defaults.get(*key)?;
    let study = identities.get(STUDY_SERVER)?.defaults.get(*key)?;
    (here != study).then(|| (*key, here.clone(), study.clone(), *meaning))
}

/// The noise sampler's view of a server's run: the other processes' CPU
/// (cores) during its cells, mean and worst over cells, and the cell count.
pub fn noise_of(sub: &Path) -> Option<(f64, f64, usize)> {
    let text = std::fs::read_to_string(sub.join("noise.csv")).ok()?;
    let mut r = csv::Reader::from_reader(text.as_bytes());
    let head = r.headers().ok()?.clone();
    let mean_at = head.iter().position(|h| h == "other_cpu_cores_mean")?;
    let max_at = head.iter().position(|h| h == "other_cpu_cores_max")?;
    let (mut sum, mut worst, mut n) = (0.0, 0.0f64, 0usize);
    for rec in r.records().flatten() {
        if let (Some(m), Some(x)) = (
            rec.get(mean_at).and_then(|v| v.parse::<f64>().ok()),
            rec.get(max_at).and_then(|v| v.parse::<f64>().ok()),
        ) {
            sum += m;
            worst = worst.max(x);
            n += 1;
        }
    }
    (n > 0).then(|| (sum / n as f64, worst, n))
}

/// The seconds a server's experiments took, summed over the sessions of a
/// resumed run (the manifest keeps them), or `fallback` without a manifest.
pub fn run_seconds_of(sub: &Path, fallback: f64) -> f64 {
    std::fs::read_to_string(sub.join("manifest.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|m| {
            m["experiments"]
                .as_object()
                .map(|e| e.values().filter_map(|x| x["seconds"].as_f64()).sum())
        })
        .unwrap_or(fallback)
}

/// The servers' identities, the time each took and the skipped ones.
pub fn servers_table(run_dir: &Path, columns: &[ServerColumn]) -> String {
    let mut md = String::from(
        "| server | product | version | INFO redis_version | mem_allocator | --version malloc | lazyfree-lazy-expire default | zset-max-listpack-entries default | status | run s | scorecard s | other processes' CPU, cores (mean / worst over cells) |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for c in columns {
        let id = c.identity.clone().unwrap_or_default();
        let d = |k: &str| id.defaults.get(k).cloned().unwrap_or_else(|| "-".into());
        let status = match &c.reason {
            Some(r) => format!("{}: {r}", c.status),
            None => c.status.clone(),
        };
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.0} | {:.0} | {} |",
            c.name,
            id.product,
            id.version,
            id.redis_version,
            id.mem_allocator,
            id.version_malloc,
            d("lazyfree-lazy-expire"),
            d("zset-max-listpack-entries"),
            status.replace('|', "/"),
            run_seconds_of(&run_dir.join(&c.name), c.run_seconds),
            c.scorecard_seconds,
            noise_of(&run_dir.join(&c.name))
                .map(|(m, x, n)| format!("{m:.2} / {x:.2} ({n} cells)"))
                .unwrap_or_else(|| "-".into())
        );
    }
    md
}

/// The claims table, one column per analysed server.
pub fn claims_table(
    rows: &[Row],
    servers: &[String],
    identities: &BTreeMap<String, Identity>,
) -> String {
    let label = |s: &String| {
        identities
            .get(s)
            .map(|i| format!("{s} ({} {})", i.product, i.version))
            .unwrap_or_else(|| s.clone())
    };
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
        let id = if r.differs() { format!("**{id}**") } else { id };
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
    rows: &[Row],
    servers: &[String],
    identities: &BTreeMap<String, Identity>,
) -> String {
    let label = |s: &String| {
        identities
            .get(s)
            .map(|i| format!("{} {} ({})", i.product, i.version, i.mem_allocator))
            .unwrap_or_else(|| s.clone())
    };
    let mut md = format!(
        "| claim | unit | published | {} |\n|---|---|---|{}\n",
        servers.iter().map(label).collect::<Vec<_>>().join(" | "),
        "---|".repeat(servers.len())
    );
    let study = |r: &Row| r.cells.get(STUDY_SERVER).cloned();
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
                let differs =
                    study(r).is_some_and(|x| x.base != c.base || x.point_inside != c.point_inside);
                if differs { format!("**{t}**") } else { t }
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

/// One panel per differing claim that has a value: the judged value on each
/// server (with its 95% interval where there is one), the published value
/// beside it.
pub fn differ_figure(rows: &[Row], servers: &[String]) -> Option<Figure> {
    let differing: Vec<&Row> = rows
        .iter()
        .filter(|r| r.differs() && r.cells.values().any(|c| c.value.is_some()))
        .collect();
    if differing.is_empty() {
        return None;
    }
    let ids: Vec<&str> = differing.iter().map(|r| r.id.as_str()).collect();
    let mut fig = Figure::new(
        "matrix-differ",
        &ids,
        "claims that differ between servers (verdict, or point value against the tolerance)",
        "the claim's judged value per server (whiskers: its 95% interval where the claim has one); dashed: the published value",
    )
    .columns(differing.len().min(3));
    for r in differing {
        let pts: Vec<Pt> = servers
            .iter()
            .enumerate()
            .filter_map(|(i, s)| {
                let c = r.cells.get(s)?;
                let v = c.value?;
                Some(match c.interval {
                    Some((lo, hi)) => Pt::spread(i as f64, v, lo, hi, 0),
                    None => Pt::new(i as f64, v),
                })
            })
            .collect();
        let title = if r.setting.is_empty() {
            r.id.clone()
        } else {
            format!("{} ({})", r.id, r.setting)
        };
        let mut p = Panel::new(title, Axis::new("server"), Axis::new(r.unit.clone()))
            .categories(servers.to_vec())
            .series(Series::points("measured", pts));
        if let Some(v) = r.published {
            // One legend entry for every panel: the published text is in the tables.
            p = p.reference(Reference::expected(
                "published (the claim's first value)",
                v,
            ));
        }
        fig = fig.panel(p.y_from_zero(1.15));
    }
    Some(fig)
}

/// The scorecards of the servers side by side (`matrix-scorecard.md`): per
/// strategy and server the verdict counts, then every cell whose verdict
/// differs between servers with each server's value. None without scorecards.
pub fn scorecard_table(run_dir: &Path, servers: &[String]) -> Option<String> {
    // (strategy, property) -> server -> (verdict, value, unit)
    let mut cells: BTreeMap<(String, String), BTreeMap<String, (String, String, String)>> =
        BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    let mut with_card = Vec::new();
    for s in servers {
        let Ok(text) = std::fs::read_to_string(run_dir.join(s).join("scorecard.csv")) else {
            continue;
        };
        with_card.push(s.clone());
        let mut r = csv::Reader::from_reader(text.as_bytes());
        for rec in r.records().flatten() {
            let g = |i: usize| rec.get(i).unwrap_or("").to_string();
            if !order.contains(&g(0)) {
                order.push(g(0));
            }
            cells
                .entry((g(0), g(1)))
                .or_default()
                .insert(s.clone(), (g(5), g(2), g(3)));
        }
    }
    if with_card.is_empty() {
        return None;
    }
    let mut md = format!(
        "| strategy | {} |\n|---|{}\n",
        with_card.join(" | "),
        "---|".repeat(with_card.len())
    );
    for strategy in &order {
        let counts: Vec<String> = with_card
            .iter()
            .map(|s| {
                let mut n: BTreeMap<&str, usize> = BTreeMap::new();
                for ((st, _), per) in &cells {
                    if st == strategy
                        && let Some((v, _, _)) = per.get(s)
                    {
                        *n.entry(v.as_str()).or_default() += 1;
                    }
                }
                n.iter()
                    .map(|(v, c)| format!("{v} {c}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .collect();
        let _ = writeln!(md, "| {strategy} | {} |", counts.join(" | "));
    }
    let differing: Vec<_> = cells
        .iter()
        .filter(|(_, per)| {
            let mut v = per.values().map(|x| &x.0);
            let first = v.next();
            v.any(|x| Some(x) != first)
        })
        .collect();
    let _ = writeln!(
        md,
        "\n{} of {} (strategy, property) cells have a verdict that differs between servers{}\n",
        differing.len(),
        cells.len(),
        if differing.is_empty() { "." } else { ":" }
    );
    if !differing.is_empty() {
        let _ = writeln!(
            md,
            "| strategy | property | {} |\n|---|---|{}",
            with_card.join(" | "),
            "---|".repeat(with_card.len())
        );
        for ((st, prop), per) in differing {
            let row: Vec<String> = with_card
                .iter()
                .map(|s| {
                    per.get(s)
                        .map(|(v, x, u)| {
                            // The scorecard's raw value, as a reader writes it.
                            let x = x
                                .parse::<f64>()
                                .map(crate::analysis::claims::short)
                                .unwrap_or_else(|_| x.clone());
                            format!("{v} ({x} {u})")
                                .replace("  ", " ")
                                .replace(" )", ")")
                        })
                        .unwrap_or_else(|| "-".into())
                })
                .collect();
            let _ = writeln!(md, "| {st} | {prop} | {} |", row.join(" | "));
        }
    }
    Some(md)
}

/// Analyse every finished server's folder and write the matrix's tables
/// (`matrix-claims.md`, `matrix-claims.csv`) and figure
/// (`figures/matrix-differ.*`) into `run_dir`; returns the files written.
pub fn write_matrix(
    run_dir: &Path,
    claims_file: &Path,
    columns: &[ServerColumn],
) -> Result<Vec<PathBuf>> {
    let mut per_server = Vec::new();
    let mut identities = BTreeMap::new();
    for c in columns {
        if let Some(id) = &c.identity {
            identities.insert(c.name.clone(), id.clone());
        }
        let sub = run_dir.join(&c.name);
        if !sub.join("manifest.json").exists() || c.status == "skipped" {
            continue;
        }
        let judged = crate::app::analyze(&sub, claims_file)?;
        per_server.push((c.name.clone(), judged));
    }
    let servers: Vec<String> = per_server.iter().map(|p| p.0.clone()).collect();
    let rows = rows(&per_server);
    let mut written = Vec::new();

    let mut csv =
        String::from("claim,setting,server,verdict,value,lo,hi,holds_as_on_study_server,display\n");
    let q = |s: &str| format!("\"{}\"", s.replace('"', "\"\""));
    for r in &rows {
        let study = r.cells.get(STUDY_SERVER).map(|c| c.base.clone());
        for s in &servers {
            let Some(c) = r.cells.get(s) else { continue };
            let f = |v: Option<f64>| v.map(|x| format!("{x}")).unwrap_or_default();
            let _ = writeln!(
                csv,
                "{},{},{},{},{},{},{},{},{}",
                q(&r.id),
                q(&r.setting),
                s,
                q(&c.verdict),
                f(c.value),
                f(c.interval.map(|i| i.0)),
                f(c.interval.map(|i| i.1)),
                study
                    .as_ref()
                    .map(|v| (*v == c.base).to_string())
                    .unwrap_or_default(),
                q(&c.display)
            );
        }
    }
    let p = run_dir.join("matrix-claims.csv");
    std::fs::write(&p, csv).map_err(|e| Error::io("writing matrix-claims.csv", e))?;
    written.push(p);

    let differ: Vec<&Row> = rows.iter().filter(|r| r.differs()).collect();
    let mut md = String::from("# The same battery on every server\n\n");
    md += "The expectation of each claim is the study's, on the study's server (Redis 7.0); on another server a cell says whether the finding holds there (the same verdict) and, where not, what the server does instead. Rows in bold differ: another verdict, or the point value on the other side of the claim's fixed tolerance than on Redis 7.0 (what a claim with too few trials for a verdict still shows).\n\n";
    md += &servers_table(run_dir, columns);
    md += "\n## At a glance\n\nThe verdict and the judged value per server (the change against the study's server in brackets); bold: the verdict differs from the study server's.\n\n";
    md += &compact_table(&rows, &servers, &identities);
    md += "\n## In full\n\n";
    md += &claims_table(&rows, &servers, &identities);
    let _ = writeln!(
        md,
        "\n{} of {} claim rows differ between servers: {}.",
        differ.len(),
        rows.len(),
        differ
            .iter()
            .map(|r| r.id.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    if let Some(fig) = differ_figure(&rows, &servers) {
        let dir = run_dir.join("figures");
        std::fs::create_dir_all(&dir).map_err(|e| Error::io("creating figures/", e))?;
        fig.write_to(&dir)?;
        let _ = writeln!(md, "\n![claims that differ](figures/matrix-differ.png)");
        written.push(dir.join("matrix-differ.png"));
    }
    if let Some(card) = scorecard_table(run_dir, &servers) {
        let p = run_dir.join("matrix-scorecard.md");
        let text = format!(
            "# The scorecard on every server\n\nEach server's own scorecard is `<server>/scorecard.md`; here a strategy's verdict counts per server, then the cells that differ.\n\n{card}"
        );
        std::fs::write(&p, text).map_err(|e| Error::io("writing matrix-scorecard.md", e))?;
        written.push(p);
        let _ = writeln!(
            md,
            "\nThe scorecard per server: [matrix-scorecard.md](matrix-scorecard.md)."
        );
    }
    let p = run_dir.join("matrix-claims.md");
    std::fs::write(&p, md).map_err(|e| Error::io("writing matrix-claims.md", e))?;
    written.push(p);
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(verdict: &str, v: f64) -> Cell {
        Cell {
            verdict: verdict.into(),
            base: verdict.into(),
            point_inside: verdict == "pass",
            display: format!("{v}"),
            value: Some(v),
            interval: Some((v, v)),
        }
    }

    fn identity(lazy: &str) -> Identity {
        let mut id = Identity::default();
        id.defaults
            .insert("lazyfree-lazy-expire".into(), lazy.into());
        id
    }

    #[test]
    fn a_row_differs_only_when_a_verdict_does_and_says_what_instead() {
        let mut r = Row {
            id: "B3.3".into(),
            setting: String::new(),
            unit: "B/entry".into(),
            published: Some(130.0),
            published_text: "126-137".into(),
            cells: BTreeMap::new(),
        };
        r.cells.insert(STUDY_SERVER.into(), cell("pass", 128.0));
        r.cells.insert("valkey-9.1".into(), cell("pass", 128.0));
        assert!(!r.differs());
        r.cells.insert("valkey-9.1".into(), cell("fail", 88.0));
        assert!(r.differs());
        let ids = BTreeMap::new();
        let t = cell_text(&r, "valkey-9.1", &ids);
        assert!(
            t.starts_with("does not hold (fail, point value outside the claim's tolerance; pass on redis-7.0): 88"),
            "{t}"
        );
        assert!(t.contains("-31% vs redis-7.0"), "{t}");
        assert!(cell_text(&r, STUDY_SERVER, &ids).starts_with("pass: 128"));
    }

    #[test]
    fn the_scorecards_side_by_side_list_the_cells_that_differ() {
        let dir = tempfile::tempdir().unwrap();
        let head = "strategy,property,value,unit,threshold,verdict,detail\n";
        for (server, memory) in [("redis-7.0", "pass"), ("valkey-9.1", "warn")] {
            std::fs::create_dir_all(dir.path().join(server)).unwrap();
            std::fs::write(
                dir.path().join(server).join("scorecard.csv"),
                format!("{head}gcra,works,1,,x,pass,d\ngcra,memory,80,B/key,x,{memory},d\n"),
            )
            .unwrap();
        }
        let md = scorecard_table(dir.path(), &["redis-7.0".into(), "valkey-9.1".into()]).unwrap();
        assert!(md.contains("| gcra | pass 2 | pass 1, warn 1 |"), "{md}");
        assert!(md.contains("1 of 2 (strategy, property) cells"), "{md}");
        assert!(
            md.contains("| gcra | memory | pass (80 B/key) | warn (80 B/key) |"),
            "{md}"
        );
        assert!(scorecard_table(dir.path(), &["valkey-8.1".into()]).is_none());
    }

    #[test]
    fn the_lazyfree_default_is_named_where_it_differs_from_the_study_servers() {
        let mut ids = BTreeMap::new();
        ids.insert(STUDY_SERVER.to_string(), identity("no"));
        ids.insert("valkey-8.1".to_string(), identity("yes"));
        ids.insert("redis-8.2".to_string(), identity("no"));
        let n = default_note("B4.2", "valkey-8.1", &ids).unwrap();
        assert!(
            n.contains("lazyfree-lazy-expire = yes (redis-7.0: no)"),
            "{n}"
        );
        assert!(default_note("B4.2", "redis-8.2", &ids).is_none());
        assert!(default_note("B7.1", "valkey-8.1", &ids).is_none());
    }
}
