//! Analysis: reads only the CSVs of a run folder (no Redis), recomputes every
//! claim, and writes `claims.csv`, `report.md` and `figures/`.
//!
//! - `claims.rs`: the claims table (`analysis/claims.toml`: published value,
//!   unit, check, tolerance, kind) and the verdict logic. Published figures
//!   live in that file only.
//! - each experiment's `analyze.rs` (in `src/experiments/<name>/`): an
//!   `Analyzer` that reads its CSV(s), computes `Measured` values for its
//!   claims, draws its figures and writes its report section. Missing CSV ->
//!   its claims are `not-run`.
//! - `table.rs`: markdown tables and number formatting for report sections.
//! - `chart.rs`: SVG line/point and bar charts.
//! - `stats.rs`: mean/min/max/quantiles over trials.

pub mod chart;
pub mod claims;
pub mod stats;
pub mod table;
pub mod window;

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

use crate::error::{Error, Result};

pub use claims::{ClaimSpec, Measured, Verdict};

/// What an analyzer gets: where the run's CSVs are, where figures go.
pub struct AnalysisCtx {
    pub run_dir: PathBuf,
    pub figures_dir: PathBuf,
    pub claims: Vec<ClaimSpec>,
    pub manifest: serde_json::Value,
}

impl AnalysisCtx {
    pub fn csv_path(&self, name: &str) -> PathBuf {
        self.run_dir.join(name)
    }

    /// All rows of `name` (e.g. `concurrency.csv`) as `T`; `Ok(None)` if the
    /// file does not exist (the experiment did not run).
    pub fn read_csv<T: DeserializeOwned>(&self, name: &str) -> Result<Option<Vec<T>>> {
        let p = self.csv_path(name);
        if !p.exists() {
            return Ok(None);
        }
        let mut rdr = csv::Reader::from_path(&p)
            .map_err(|e| Error::Other(format!("reading {}: {e}", p.display())))?;
        let mut out = Vec::new();
        for r in rdr.deserialize() {
            out.push(r.map_err(|e| Error::Other(format!("parsing {}: {e}", p.display())))?);
        }
        Ok(Some(out))
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
    pub markdown: String,
}

impl Section {
    pub fn new(experiment: &str, markdown: impl Into<String>) -> Self {
        Section {
            experiment: experiment.to_string(),
            markdown: markdown.into(),
        }
    }
}

pub type Analyzer = fn(&AnalysisCtx) -> Result<(Vec<Measured>, Section)>;


/// Analyze a run folder: claims.csv, report.md, figures/.
pub fn analyze(
    run_dir: &Path,
    claims_file: &Path,
) -> Result<Vec<(ClaimSpec, Option<Measured>, Verdict)>> {
    let claims = claims::load(claims_file)?;
    let figures_dir = run_dir.join("figures");
    std::fs::create_dir_all(&figures_dir).map_err(|e| Error::io("creating figures/", e))?;
    let manifest = std::fs::read_to_string(run_dir.join("manifest.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(serde_json::Value::Null);
    let ctx = AnalysisCtx {
        run_dir: run_dir.to_path_buf(),
        figures_dir,
        claims: claims.clone(),
        manifest,
    };
    let mut measured: Vec<Measured> = Vec::new();
    let mut sections = Vec::new();
    for e in crate::experiments::REGISTRY {
        let name = e.name;
        match (e.analyze)(&ctx) {
            Ok((m, s)) => {
                measured.extend(m);
                sections.push(s);
            }
            Err(e) => sections.push(Section::new(
                name,
                format!("Analysis of `{name}` failed: {e}\n"),
            )),
        }
    }
    let rows = claims::judge(&claims, measured);
    claims::write_csv(&run_dir.join("claims.csv"), &rows)?;
    claims::write_report(&run_dir.join("report.md"), &ctx, &rows, &sections)?;
    let rel = run_dir
        .file_name()
        .map(|n| format!("data/{}", n.to_string_lossy()))
        .unwrap_or_default();
    std::fs::write(
        run_dir.join("claims-table.md"),
        claims::readme_table(&rows, &ctx.manifest, &rel),
    )
    .map_err(|e| Error::io("writing claims-table.md", e))?;
    Ok(rows)
}
