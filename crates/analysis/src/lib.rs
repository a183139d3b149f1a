//! limitbench's analysis: reads only the CSVs of a run folder (never Redis:
//! this crate depends on no Redis client, no tokio and no part of the
//! measuring side), recomputes every claim, judges it, and writes
//! `claims.csv`, `report.md` and `figures/`.
//!
//! - `claims`: the claims table (`analysis/claims.toml`: published value,
//!   unit, check, tolerance, kind) and the judge. Published figures live in
//!   that file only.
//! - `experiments`: the one list of experiments and every experiment's
//!   analysis half, compiled here from its own folder
//!   (`src/experiments/<name>/analyze/`: `rows.rs`, the analysis,
//!   `scorecard.rs`), so the compiler, not a test, keeps an analyzer away
//!   from Redis: rows -> metrics -> claim values -> figures and a report
//!   section. Missing CSV -> its claims are `not-run`.
//! - `scorecard.rs`: what every experiment's scorecard columns share (a
//!   cell's verdict and outcome, the probe rows a judge reads).
//! - `csv_rows`: [`read_table`], the one CSV reader every path from a row
//!   to a verdict, a scorecard cell, a matrix row or an outlier flag goes
//!   through.
//! - `figure`: the chart library (`limitbench-plot`) plus what turns a
//!   claim into a published reference and its passing band;
//!   `strategy_looks`: one colour and marker per strategy in every figure.
//! - `table.rs`: markdown tables and number formatting for report sections.
//! - `report.rs`: report.md and the claims table of docs/results.md;
//!   `latency/`: the decision-latency section (percentile plots per cell:
//!   WATCH vs Lua, the fail-open deadline, open loop from the schedule,
//!   every strategy at one setting, the cost runs); `compare.rs`: two runs side
//!   by side; `matrix/`: a matrix run's claims, one column per server.
//! - `stats.rs`: mean/min/max/quantiles and intervals over trials;
//!   `window.rs`: the most admitted in any window of an admission history.
//! - `rows`: the rows the run itself writes beside the experiments' (noise,
//!   latency histograms, trial times) and the [`rows::Keyed`] trait;
//!   `trial_times.rs`: the trials far slower than their cell's others.
//!
//! [`analyze`] takes the experiments' analyzers as an argument: the list of
//! experiments is walked only by the application (`limitbench::app`).

pub mod anchors;
pub mod binomial;
pub mod claims;
pub mod compare;
pub mod confseq;
pub mod csv_rows;
pub mod disturbance;
pub mod experiments;
pub mod figure;
pub mod latency;
pub mod matrix;
pub mod noise;
pub mod report;
pub mod rows;
pub mod scorecard;
pub mod sessions;
pub mod stats;
pub mod strategy_looks;
pub mod table;
pub mod trial_times;
pub mod window;

// The analysis halves of the experiments (compiled here from
// `src/experiments/<name>/analyze/`) name this crate `limitbench_analysis::`,
// never `crate::`: in `src/` `crate::` means the app (docs/architecture.md).
extern crate self as limitbench_analysis;

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

use limitbench_base::error::{Error, Result};

pub use claims::{ClaimSpec, Judged, Measured, Verdict};
pub use csv_rows::{parse_csv_rows, read_table};

/// What an analyzer gets: where the run's CSVs are, where figures go.
pub struct AnalysisCtx {
    pub run_dir: PathBuf,
    pub figures_dir: PathBuf,
    pub claims: Vec<ClaimSpec>,
    pub manifest: serde_json::Value,
    /// Problems that did not stop the analysis (a torn last line), for
    /// stderr and the report.
    pub warnings: std::cell::RefCell<Vec<String>>,
    /// Every figure written, for the claims table's links.
    pub figures: std::cell::RefCell<Vec<FigureInfo>>,
    /// Figures written but not yet drawn: drawn once the claims are
    /// judged, with the judged values ringed ([`anchors`]).
    pub pending: std::cell::RefCell<Vec<figure::Pending>>,
    /// Every value of a `strategy` column in the rows read so far: the
    /// strategies the run measured (a figure draws one added from a
    /// manifest in a look from its name, `figure::with_strategy_looks`).
    pub strategies: std::cell::RefCell<std::collections::BTreeSet<String>>,
}

/// A written figure: its PNG (relative to the run folder), the claims it
/// supports and its title.
#[derive(Debug, Clone)]
pub struct FigureInfo {
    pub file: String,
    pub claims: Vec<String>,
    pub title: String,
}

impl AnalysisCtx {
    pub fn csv_path(&self, name: &str) -> PathBuf {
        self.run_dir.join(name)
    }

    /// All rows of `name` (e.g. `concurrency.csv`, or its compressed form
    /// `concurrency.csv.zst` or `.csv.gz`) as `T`; `Ok(None)` if none exists (the
    /// experiment did not run).
    ///
    /// A torn last line (no newline at the end, the only damage a kill can
    /// do) is skipped with a warning; any other row that does not parse is an
    /// error naming the file and line.
    pub fn read_csv<T: DeserializeOwned>(&self, name: &str) -> Result<Option<Vec<T>>> {
        let mut strategies = self.strategies.borrow_mut();
        let Some((p, rows, torn)) =
            csv_rows::read_table_noting(&self.run_dir, name, "strategy", &mut strategies)?
        else {
            return Ok(None);
        };
        if let Some(line) = torn {
            self.warnings.borrow_mut().push(format!(
                "{}: line {line} is torn (no newline at the end, as a kill leaves it); skipped",
                p.display()
            ));
        }
        Ok(Some(rows))
    }

    /// Path of a figure file, and the relative link for report.md.
    pub fn figure(&self, file: &str) -> (PathBuf, String) {
        (self.figures_dir.join(file), format!("figures/{file}"))
    }

    pub fn claim(&self, id: &str) -> Option<&ClaimSpec> {
        self.claims.iter().find(|c| c.id == id)
    }
}

/// An experiment's report section (markdown, figures linked relatively).
#[derive(Debug, Clone, Default)]
pub struct Section {
    pub experiment: String,
    /// One line: what the run shows, from its own numbers.
    pub finding: String,
    /// Figure(s), caption and a compact table.
    pub markdown: String,
    /// Long tables, printed at the end of the report.
    pub appendix: String,
}

impl Section {
    pub fn new(experiment: &str, markdown: impl Into<String>) -> Self {
        Section {
            experiment: experiment.to_string(),
            markdown: markdown.into(),
            ..Default::default()
        }
    }
    pub fn finding(mut self, f: impl Into<String>) -> Self {
        self.finding = f.into();
        self
    }
    pub fn appendix(mut self, a: impl Into<String>) -> Self {
        self.appendix = a.into();
        self
    }
}

pub type Analyzer = fn(&AnalysisCtx) -> Result<(Vec<Measured>, Section)>;

pub use noise::NOISE_WARN_CORES;

/// A run folder's manifest; a folder without one is not a run.
/// The rounds of `--until-decisive`: which experiments got more trials,
/// for which claims, and why the rounds stopped.
fn rounds_section(manifest: &serde_json::Value) -> Option<Section> {
    let u = manifest.get("until_decisive")?;
    let mut text = format!(
        "## Extra trials for inconclusive claims\n\nThe run added trials to the experiments of `inconclusive` claims \
         (`--until-decisive`), at most {} per cell ({}).\n\n",
        u["cap_per_cell"].as_u64().unwrap_or(0),
        u["cap_basis"].as_str().unwrap_or("?")
    );
    for r in u["rounds"].as_array().into_iter().flatten() {
        let mut floors: Vec<String> = r["trial_floor"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(e, f)| format!("{e} >= {f}"))
            .collect();
        // Cells raised on their own (the cells an inconclusive claim rests on).
        for (e, cells) in r["cell_floor"].as_object().into_iter().flatten() {
            let cells = cells.as_object().map(|c| c.len()).unwrap_or(0);
            let most = r["cell_floor"][e]
                .as_object()
                .into_iter()
                .flatten()
                .filter_map(|(_, f)| f.as_u64())
                .max()
                .unwrap_or(0);
            floors.push(format!("{cells} cell(s) of {e} up to {most}"));
        }
        let open: Vec<&str> = r["inconclusive"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str())
            .collect();
        text += &format!(
            "- round {}: trials per cell {} for {} ({})\n",
            r["round"],
            floors.join(", "),
            open.join(", "),
            r["outcome"].as_str().unwrap_or("")
        );
    }
    if let Some(b) = u["budget_s"].as_u64() {
        text += &format!(
            "\nBudget: {b} s of trial time in rounds ({}); spent {:.0} s.\n",
            u["budget_basis"].as_str().unwrap_or("?"),
            u["spent_s"].as_f64().unwrap_or(0.0)
        );
    }
    text += &format!(
        "\nStopped: {}.\n",
        u["stopped"].as_str().unwrap_or("the rounds did not finish")
    );
    // Per cell raised: its trials, its rounds and why it stopped.
    let cells: Vec<String> = u["cells"]
        .as_object()
        .into_iter()
        .flatten()
        .flat_map(|(e, cells)| {
            cells.as_object().into_iter().flatten().map(move |(c, r)| {
                format!(
                    "| {e} | `{c}` | {} | {} | {} |",
                    r["trials"],
                    r["rounds"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|x| x.to_string())
                        .collect::<Vec<_>>()
                        .join(", "),
                    r["stopped"].as_str().unwrap_or("")
                )
            })
        })
        .collect();
    if !cells.is_empty() {
        text += "\nThe cells the rounds raised (the cells an inconclusive claim rests on):\n\n\
                 | experiment | cell | trials | rounds | stopped |\n|---|---|---|---|---|\n";
        text += &cells.join("\n");
        text += "\n";
    }
    Some(Section::new("extra-trials", text))
}

/// A claim still `inconclusive` after `limitbench run --until-decisive`
/// reached its cap says so: more trials were tried and did not decide it.
fn note_trial_cap(rows: &mut [Judged], manifest: &serde_json::Value) {
    let u = &manifest["until_decisive"];
    // A claim whose next round did not fit in the rounds' budget says so.
    for id in u["unfunded_claims"].as_array().into_iter().flatten() {
        let Some(j) = rows.iter_mut().find(|j| {
            j.verdict == Verdict::Inconclusive && Some(j.spec.id.as_str()) == id.as_str()
        }) else {
            continue;
        };
        if j.measured.as_ref().is_some_and(|m| !m.invalid.is_empty()) {
            continue;
        }
        let note = format!(
            "the rounds of --until-decisive stopped on their budget of {} s of trial time ({}) before this claim's next round would fit",
            u["budget_s"].as_u64().unwrap_or(0),
            u["budget_basis"].as_str().unwrap_or("?")
        );
        j.why = if j.why.is_empty() {
            note
        } else {
            format!("{}; {note}", j.why)
        };
    }
    let Some(capped) = u["capped_claims"].as_array() else {
        return;
    };
    let cap = u["cap_per_cell"].as_u64().unwrap_or(0);
    for j in rows
        .iter_mut()
        .filter(|j| j.verdict == Verdict::Inconclusive)
    {
        if capped
            .iter()
            .any(|c| c.as_str() == Some(j.spec.id.as_str()))
        {
            // A claim whose values rest on fewer trials than the cap was not
            // raised to it (cells the experiment measures a fixed number of
            // times, e.g. memory's CPU windows before issue 30): say that,
            // not that the cap was reached.
            // An invalid measurement is no finding whatever its trials: the
            // cap is not why it is undecided.
            if j.measured.as_ref().is_some_and(|m| !m.invalid.is_empty()) {
                continue;
            }
            let rests_on = j.measured.as_ref().and_then(|m| m.trial_count());
            let note = match rests_on {
                Some(n) if (n as u64) > cap => format!(
                    "the run's --until-decisive stopped at its cap of {cap} trials per cell; this claim's values rest on {n} trials (cells measured past the cap in a later session)"
                ),
                Some(n) if (n as u64) < cap => format!(
                    "the run's --until-decisive stopped at its cap of {cap} trials per cell ({}), but this claim's values rest on {n} trial(s): its cells were not raised to the cap",
                    u["cap_basis"].as_str().unwrap_or("?")
                ),
                _ => format!(
                    "the cap of {cap} trials per cell (--until-decisive, {}) was reached without a decision",
                    u["cap_basis"].as_str().unwrap_or("?")
                ),
            };
            j.why = if j.why.is_empty() {
                note
            } else {
                format!("{}; {note}", j.why)
            };
        }
    }
}

fn read_manifest(run_dir: &Path) -> Result<serde_json::Value> {
    let p = run_dir.join("manifest.json");
    let text = std::fs::read_to_string(&p).map_err(|e| {
        Error::Other(format!(
            "{} is not a run folder: cannot read {} ({e})",
            run_dir.display(),
            p.display()
        ))
    })?;
    serde_json::from_str(&text)
        .map_err(|e| Error::Other(format!("{}: not valid JSON: {e}", p.display())))
}

/// One experiment's analysis, as the application lists them.
#[derive(Clone, Copy)]
pub struct ExperimentAnalysis {
    pub name: &'static str,
    pub analyze: Analyzer,
}

/// Analyze a run folder: claims.csv, report.md, figures/. `experiments` is
/// every experiment in report order (the application's registry).
pub fn analyze(
    run_dir: &Path,
    claims_file: &Path,
    experiments: &[ExperimentAnalysis],
) -> Result<Vec<Judged>> {
    analyze_with_rerun(run_dir, claims_file, experiments, None)
}

/// [`analyze`], and the report's findings say how far an independent rerun
/// agrees: `rerun` is its run folder, of which only `claims.csv` is read
/// (analyse it first), paired with this run's as `limitbench compare` does.
pub fn analyze_with_rerun(
    run_dir: &Path,
    claims_file: &Path,
    experiments: &[ExperimentAnalysis],
    rerun: Option<&Path>,
) -> Result<Vec<Judged>> {
    // The rerun's claims are read first: nothing is written if they are missing.
    let rerun_claims = rerun.map(compare::read_claims).transpose()?;
    // An experiment the manifest says finished must have left rows.
    trial_times::finished_experiments_have_rows(run_dir)?;
    // Trials far slower than their cell's others: stderr only, not the report.
    for w in trial_times::outliers(run_dir)? {
        eprintln!("limitbench: warning: {w}");
    }
    let names: Vec<&str> = experiments.iter().map(|e| e.name).collect();
    let claims = claims::load(claims_file, &names)?;
    let figures_dir = run_dir.join("figures");
    // Nothing is written into a folder that is not a run.
    let _ = read_manifest(run_dir)?;
    std::fs::create_dir_all(&figures_dir).map_err(|e| Error::io("creating figures/", e))?;
    let manifest = read_manifest(run_dir)?;
    let ctx = AnalysisCtx {
        run_dir: run_dir.to_path_buf(),
        figures_dir,
        claims: claims.clone(),
        manifest,
        warnings: Default::default(),
        figures: Default::default(),
        pending: Default::default(),
        strategies: Default::default(),
    };
    let mut measured: Vec<Measured> = Vec::new();
    let mut sections = Vec::new();
    let mut failures = Vec::new();
    for e in experiments {
        let name = e.name;
        match (e.analyze)(&ctx) {
            Ok((m, s)) => {
                // A claim ID is joined by its text: one the claims table
                // does not list is a wiring error, never a silent drop.
                for x in m.iter().filter(|x| !claims.iter().any(|c| c.id == x.id)) {
                    failures.push(format!(
                        "{name}: measured claim `{}`, which {} does not list",
                        x.id,
                        claims_file.display()
                    ));
                }
                measured.extend(m);
                sections.push(s);
            }
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    match latency::section(&ctx, &names) {
        Ok(Some(section)) => sections.push(section),
        Ok(None) => {}
        Err(e) => failures.push(format!("latency: {e}")),
    }
    // The scorecard (`limitbench scorecard`, run by run_all.sh into the same
    // folder) is measured at its own size (often `quick`), so its numbers
    // differ from the experiments' at this run's size: it is linked apart,
    // labelled with its size, never embedded.
    if run_dir.join("scorecard.md").exists() {
        let card_size = std::fs::read_to_string(run_dir.join("scorecard.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|v| v["size"].as_str().map(str::to_string))
            .unwrap_or_else(|| "unknown".into());
        sections.push(Section::new(
            "scorecard",
            format!(
                "## Scorecard (size `{card_size}`, linked apart)\n\n\
                 Every strategy against every property the studies measured is in [scorecard.md](scorecard.md) \
                 (picture: [scorecard.svg](scorecard.svg); every cell's value, unit, threshold and detail: \
                 `scorecard.csv`). It was measured at size `{card_size}`, not at this report's size, so its numbers \
                 (fewer trials, shorter runs) are not those of the sections above and are not shown here; where the \
                 two disagree, the experiment sections are the measurement at this report's size.\n"
            ),
        ));
    }
    if let Some(section) = rounds_section(&ctx.manifest) {
        sections.push(section);
    }
    if let Some(section) = noise::section(&ctx)? {
        sections.push(section);
    }
    let mut warnings = ctx.warnings.borrow().clone();
    warnings.sort();
    warnings.dedup();
    for w in &warnings {
        eprintln!("limitbench: warning: {w}");
    }
    if !warnings.is_empty() {
        sections.push(Section::new(
            "warnings",
            format!(
                "## Warnings from the analysis\n\n{}\n",
                warnings
                    .iter()
                    .map(|w| format!("- {w}\n"))
                    .collect::<String>()
            ),
        ));
    }
    if !failures.is_empty() {
        return Err(Error::Other(format!(
            "the analysis of {} failed; claims.csv and report.md were not written:\n  {}",
            run_dir.display(),
            failures.join("\n  ")
        )));
    }
    // Every claim resting on a cell with disturbed committed trials is no
    // finding: `inconclusive (disturbed: ...)`.
    let disturbances = disturbance::Disturbances::read(run_dir)?;
    disturbances.apply(&claims, &mut measured);
    let size = ctx.manifest["size"].as_str().unwrap_or("?").to_string();
    let mut rows = claims::judge(&claims, measured, &size);
    note_trial_cap(&mut rows, &ctx.manifest);
    anchors::draw_pending(&ctx, &rows)?;
    claims::write_csv(&run_dir.join("claims.csv"), &rows)?;
    let rerun = match (rerun, rerun_claims) {
        (Some(dir), Some(theirs)) => Some(report::findings::Rerun {
            name: dir.file_name().map_or_else(
                || dir.display().to_string(),
                |n| n.to_string_lossy().to_string(),
            ),
            pairs: compare::pair(&compare::read_claims(run_dir)?, &theirs),
        }),
        _ => None,
    };
    report::write_report(
        &run_dir.join("report.md"),
        &ctx,
        &rows,
        &sections,
        rerun.as_ref(),
    )?;
    // Figure links relative to the run folder, where the table is written.
    std::fs::write(
        run_dir.join("claims-table.md"),
        report::results_table(
            &rows,
            &ctx.manifest,
            &ctx.figures.borrow(),
            &ctx.figures_dir,
        ),
    )
    .map_err(|e| Error::io("writing claims-table.md", e))?;
    Ok(rows)
}
