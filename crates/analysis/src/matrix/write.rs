//! The matrix's files in the run folder: `matrix-claims.md` (what differs
//! between servers, the heatmaps, then the servers and the claims at a
//! glance and in full), `matrix-claims.csv`, `matrix-scorecard.md` (the
//! scorecard heatmaps, then its tables) and under `figures/`:
//! `matrix-claims-heatmap.*`, `matrix-scorecard-<server>.*`, `matrix-differ.*`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::figure::differ_figure;
use super::heatmaps::{CLAIMS_HEATMAP, claims_heatmap, scorecard_heatmaps};
use super::rows::{MatrixRow, rows};
use super::scorecard::{read_cards, scorecard_table};
use super::servers::{STUDY_RERUN, STUDY_SERVER, ServerColumn, servers_table};
use super::signals::signals;
use super::tables::{claims_table, compact_table};
use crate::claims::Judged;
use limitbench_base::error::{Error, Result};

/// Write the matrix's tables (`matrix-claims.md`, `matrix-claims.csv`,
/// `matrix-scorecard.md`) and figures (the heatmaps and
/// `figures/matrix-differ.*`) into
/// `run_dir` from each analysed server's judged claims (`per_server`, in
/// column order); `columns` are every server of the run, analysed or not.
/// Returns the files written.
pub fn write_matrix(
    run_dir: &Path,
    per_server: &[(String, Vec<Judged>)],
    columns: &[ServerColumn],
) -> Result<Vec<PathBuf>> {
    let identities: BTreeMap<_, _> = columns
        .iter()
        .filter_map(|c| Some((c.name.clone(), c.identity.clone()?)))
        .collect();
    let servers: Vec<String> = per_server.iter().map(|p| p.0.clone()).collect();
    let rows = rows(per_server);
    let mut written = Vec::new();

    let mut csv = String::from(
        "claim,setting,server,verdict,value,lo,hi,holds_as_on_study_server,survives_rerun,display\n",
    );
    let q = |s: &str| format!("\"{}\"", s.replace('"', "\"\""));
    for r in &rows {
        let study = r.cells.get(STUDY_SERVER).map(|c| c.base.clone());
        for s in &servers {
            let Some(c) = r.cells.get(s) else { continue };
            let f = |v: Option<f64>| v.map(|x| format!("{x}")).unwrap_or_default();
            let _ = writeln!(
                csv,
                "{},{},{},{},{},{},{},{},{},{}",
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
                r.survives(s).map(|b| b.to_string()).unwrap_or_default(),
                q(&c.display)
            );
        }
    }
    let p = run_dir.join("matrix-claims.csv");
    std::fs::write(&p, csv).map_err(|e| Error::io("writing matrix-claims.csv", e))?;
    written.push(p);

    let differ: Vec<&MatrixRow> = rows.iter().filter(|r| r.differs()).collect();
    let cards = read_cards(run_dir, &servers);
    let dir = run_dir.join("figures");
    std::fs::create_dir_all(&dir).map_err(|e| Error::io("creating figures/", e))?;
    let mut md = String::from("# The same battery on every server\n\n");
    md += &signals(&rows, &servers, &identities, cards.as_ref());
    let mut pictures = String::new();
    // Claims outside the tally (A0, B0: the study's own description) are
    // not drawn in the heatmap: a partial battery says nothing of them.
    let mut apart: Vec<String> = per_server
        .iter()
        .flat_map(|(_, judged)| judged)
        .filter(|j| j.spec.tally != "reproduction")
        .map(|j| j.spec.id.clone())
        .collect();
    apart.sort();
    apart.dedup();
    if let Some(h) = claims_heatmap(&rows, &servers, &identities, &apart) {
        h.write_to(&dir)?;
        written.push(dir.join(format!("{CLAIMS_HEATMAP}.png")));
        let _ = writeln!(
            pictures,
            "![the claims on every server](figures/{CLAIMS_HEATMAP}.png)\n"
        );
    }
    let mut card_pictures = String::new();
    if let Some(c) = &cards {
        for h in scorecard_heatmaps(c, &identities) {
            h.write_to(&dir)?;
            written.push(dir.join(format!("{}.png", h.name)));
            let _ = writeln!(
                card_pictures,
                "![the scorecard on {}](figures/{}.png)\n",
                h.name.trim_start_matches("matrix-scorecard-"),
                h.name
            );
        }
    }
    md += &pictures;
    md += &card_pictures;
    md += "## How to read the tables\n\n";
    md += "The expectation of each claim is the study's, on the study's server (Redis 7.0); on another server a cell says whether the finding holds there (the same verdict) and, where not, what the server does instead. A cell differs when its verdict does, or its point value lies on the other side of the claim's fixed tolerance than on Redis 7.0 (what a claim with too few trials for a verdict still shows). Where the matrix ran Redis 7.0 twice (`redis-7.0-rerun`, another seed), a difference counts only if the rerun kept Redis 7.0's verdict and the other server's value lies further from Redis 7.0's than the rerun's; bold marks the differences that count (all of them without a rerun).\n\n";
    md += &servers_table(run_dir, columns);
    md += "\n## At a glance\n\nThe verdict and the judged value per server (the change against the study's server in brackets); bold: the verdict differs from the study server's and survives the rerun; \"(as a rerun moves)\": it differs no more than Redis 7.0 from itself.\n\n";
    // As in the heatmap: the claims outside the tally say nothing of a
    // server (the full table keeps them).
    let tallied: Vec<MatrixRow> = rows
        .iter()
        .filter(|r| !apart.contains(&r.id))
        .cloned()
        .collect();
    md += &compact_table(&tallied, &servers, &identities);
    if !apart.is_empty() {
        let _ = writeln!(
            md,
            "
Not in this table: {} (the study's own description or the harness's policy, outside the tally: a partial battery says nothing of them; the full table has them).",
            apart.join(", ")
        );
    }
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
    if servers.iter().any(|s| s == STUDY_RERUN) {
        let kept: Vec<String> = differ
            .iter()
            .filter(|r| !r.surviving().is_empty())
            .map(|r| format!("{} ({})", r.id, r.surviving().join(", ")))
            .collect();
        let _ = writeln!(
            md,
            "Of these, {} survive the rerun of Redis 7.0: {}.",
            kept.len(),
            if kept.is_empty() {
                "none".to_string()
            } else {
                kept.join("; ")
            }
        );
    }
    if let Some(fig) = differ_figure(&rows, &servers) {
        fig.write_to(&dir)?;
        let _ = writeln!(md, "\n![claims that differ](figures/matrix-differ.png)");
        written.push(dir.join("matrix-differ.png"));
    }
    if let Some(card) = scorecard_table(run_dir, &servers) {
        let p = run_dir.join("matrix-scorecard.md");
        let text = format!(
            "# The scorecard on every server\n\nEach server's own scorecard is `<server>/scorecard.md`; here each server's as a heatmap (framed: the verdict differs between servers), then a strategy's verdict counts per server, then the cells that differ.\n\n{card_pictures}{card}"
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
