//! `limitbench matrix`: the same experiments on every server of
//! `limitbench::servers::SERVERS`, one sub-folder each (a `run`, then a
//! scorecard), then one claims table with a column per server.
//! [`reanalyze`] redoes only the analysis of a matrix folder, from its
//! `servers.json` (what `limitbench analyze <matrix folder>` runs).

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Parser;

use limitbench::app;
use limitbench::experiments::Size;
use limitbench::run::record::now_rfc3339;
use limitbench::servers::{self, Availability, ServerSpec, identity};
use limitbench_core::fleet::RedisBinary;

/// The experiments the matrix runs when none are named: those whose claims
/// depend on the server (memory layout, expiry, scripts, cluster errors,
/// atomicity), not on the network or the client.
pub const DEFAULT_EXPERIMENTS: &[&str] = &[
    "memory",
    "stalls",
    "script-survival",
    "cluster",
    "concurrency",
];

#[derive(clap::Args)]
pub struct MatrixArgs {
    /// Experiments to run on each server (default: memory stalls
    /// script-survival cluster concurrency; `all` for every one).
    experiments: Vec<String>,
    /// The servers (comma-separated, or `all`).
    #[arg(long, value_delimiter = ',', default_value = "all")]
    server: Vec<String>,
    #[arg(long, value_enum, default_value = "full")]
    size: Size,
    /// The scorecard of the built-ins on each server at this size.
    #[arg(long, value_enum, default_value = "quick")]
    scorecard_size: Size,
    /// No scorecard.
    #[arg(long)]
    no_scorecard: bool,
    /// Name of the run folder (default: servers-<UTC date and time>).
    #[arg(long, value_parser = limitbench::run::record::check_run_id, conflicts_with = "resume")]
    run_id: Option<String>,
    /// Continue a matrix run: finished servers are kept, the others resumed.
    #[arg(long)]
    resume: Option<String>,
    #[arg(long, default_value_t = limitbench::run::seeds::DEFAULT_SEED)]
    seed: u64,
    /// Where run folders go; default: data/ in the project.
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Measure even if the preflight of each server's run finds the machine
    /// busy (`limitbench run --allow-busy`).
    #[arg(long)]
    allow_busy: bool,
    /// After the servers, run the study's server (redis-7.0) once more with
    /// the next seed, as `redis-7.0-rerun` (no scorecard): the table then
    /// counts a difference between servers only where it passes what the
    /// same server moves between two runs.
    #[arg(long)]
    rerun: bool,
}

/// One column's run: the server, the sub-folder's name, the seed, and
/// whether its scorecard runs.
struct Column<'a> {
    spec: &'a ServerSpec,
    name: &'static str,
    seed: u64,
    scorecard: bool,
}

/// Per server: its status in the matrix and what was measured.
#[derive(serde::Serialize, serde::Deserialize, Default, Clone)]
pub struct ServerEntry {
    pub name: String,
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub identity: Option<limitbench_analysis::matrix::Identity>,
    pub run_seconds: f64,
    pub scorecard_seconds: f64,
    pub licence: String,
}

/// The matrix's index, `servers.json`: one entry per server, saved after
/// every change of status.
struct Index {
    path: PathBuf,
    entries: Vec<ServerEntry>,
}

impl Index {
    /// The index of `run_dir` (empty for a new matrix).
    fn load(run_dir: &Path) -> Self {
        let path = run_dir.join("servers.json");
        let entries = std::fs::read_to_string(&path)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default();
        Index { path, entries }
    }

    fn save(&self) -> Result<()> {
        std::fs::write(&self.path, serde_json::to_string_pretty(&self.entries)?)
            .with_context(|| format!("writing {}", self.path.display()))
    }

    /// The entry of server `name`, added if new.
    fn entry(&mut self, name: &str) -> &mut ServerEntry {
        let pos = match self.entries.iter().position(|e| e.name == name) {
            Some(p) => p,
            None => {
                self.entries.push(ServerEntry {
                    name: name.into(),
                    ..Default::default()
                });
                self.entries.len() - 1
            }
        };
        &mut self.entries[pos]
    }

    /// Server `name` skipped, with the reason.
    fn skip(&mut self, name: &str, why: String) -> Result<()> {
        eprintln!("limitbench: server {name} skipped: {why}");
        let e = self.entry(name);
        e.status = "skipped".into();
        e.reason = Some(why);
        self.save()
    }
}

/// One matrix run: its arguments, folder, experiments and server cache.
struct Matrix<'a> {
    a: &'a MatrixArgs,
    root: &'a Path,
    run_dir: PathBuf,
    experiments: Vec<String>,
    cache: PathBuf,
}

// Fetch, probe, run, scorecard per server, then the analysis and the table; one pass in that order.
pub async fn run(a: MatrixArgs, root: &Path) -> Result<i32> {
    let specs = servers::select(&a.server)?;
    let experiments = experiments_of(&a)?;
    let run_dir = run_folder(&a, root)?;
    let m = Matrix {
        a: &a,
        root,
        run_dir,
        experiments,
        cache: servers::cache_dir(),
    };
    let mut index = Index::load(&m.run_dir);
    eprintln!(
        "limitbench: matrix of {} servers, writing {}",
        specs.len(),
        m.run_dir.display()
    );
    let mut failures = 0;
    for spec in &specs {
        let col = Column {
            spec,
            name: spec.name,
            seed: a.seed,
            scorecard: !a.no_scorecard,
        };
        failures += m.one_server(&col, &mut index).await?;
    }
    if a.rerun {
        let study = servers::select(&[limitbench_analysis::matrix::STUDY_SERVER.to_string()])?;
        let col = Column {
            spec: &study[0],
            name: limitbench_analysis::matrix::STUDY_RERUN,
            seed: a.seed.wrapping_add(1),
            scorecard: false,
        };
        failures += m.one_server(&col, &mut index).await?;
    }
    write_analysis(
        &m.run_dir,
        &root.join("analysis/claims.toml"),
        &index.entries,
    )?;
    print_times(&index.entries);
    println!("{}", m.run_dir.display());
    Ok(if failures > 0 { 1 } else { 0 })
}

/// The experiments to run on each server (checked): those named, or
/// [`DEFAULT_EXPERIMENTS`].
fn experiments_of(a: &MatrixArgs) -> Result<Vec<String>> {
    let experiments: Vec<String> = if a.experiments.is_empty() {
        DEFAULT_EXPERIMENTS.iter().map(|s| s.to_string()).collect()
    } else {
        a.experiments.clone()
    };
    for e in &experiments {
        if e != "all" {
            limitbench::experiments::find(e)?;
        }
    }
    Ok(experiments)
}

/// The matrix's folder: the resumed one, or a new one (refused if it exists).
fn run_folder(a: &MatrixArgs, root: &Path) -> Result<PathBuf> {
    let data_dir = a.data_dir.clone().unwrap_or_else(|| root.join("data"));
    if let Some(id) = &a.resume {
        let p = if Path::new(id).is_dir() {
            PathBuf::from(id)
        } else {
            data_dir.join(id)
        };
        if !p.is_dir() {
            anyhow::bail!("no matrix run folder {} to resume", p.display());
        }
        return Ok(p);
    }
    let id = a.run_id.clone().unwrap_or_else(|| {
        format!(
            "servers-{}",
            now_rfc3339()
                .replace([':', '-'], "")
                .replace('T', "-")
                .trim_end_matches('Z')
        )
    });
    let p = data_dir.join(&id);
    if p.exists() {
        anyhow::bail!(
            "{} exists; choose another --run-id or --resume it",
            p.display()
        );
    }
    std::fs::create_dir_all(&p).with_context(|| format!("creating {}", p.display()))?;
    Ok(p)
}

impl Matrix<'_> {
    /// One server: fetched and probed (or skipped), its run (unless
    /// finished), its scorecard; returns the number of failures (0 or 1).
    async fn one_server(&self, col: &Column<'_>, index: &mut Index) -> Result<usize> {
        let (spec, name) = (col.spec, col.name);
        index.entry(name).licence = spec.licence.into();
        let Some((bin, id)) = self.probe(spec, name, index).await? else {
            return Ok(0);
        };
        let sub = self.run_dir.join(name);
        if !finished(&sub) {
            index.entry(name).status = "running".into();
            index.save()?;
            let t = Instant::now();
            let code = self.run_on(col, &bin, &id, &sub).await?;
            index.entry(name).run_seconds += t.elapsed().as_secs_f64();
            if code != 0 {
                index.entry(name).status = "failed".into();
                index.save()?;
                return Ok(1);
            }
        }
        let _ = std::fs::remove_file(self.run_dir.join("latest"));
        let mut failures = 0;
        if col.scorecard && !sub.join("scorecard.csv").exists() {
            let t = Instant::now();
            let card = self.scorecard_args(name, &bin)?;
            let out = super::scorecard::run(card, self.root).await;
            index.entry(name).scorecard_seconds += t.elapsed().as_secs_f64();
            if let Err(e) = out {
                eprintln!("limitbench: scorecard on {name} failed: {e:#}");
                failures += 1;
            }
        }
        index.entry(name).status = "done".into();
        index.save()?;
        Ok(failures)
    }

    /// The server's binary (fetched) and identity (from a bare start);
    /// None when it is skipped (the index says why).
    async fn probe(
        &self,
        spec: &ServerSpec,
        name: &str,
        index: &mut Index,
    ) -> Result<Option<(RedisBinary, limitbench_analysis::matrix::Identity)>> {
        let bin = match spec.fetch(&self.cache) {
            Availability::Ready(b) => b,
            Availability::Fetchable => unreachable!("fetch leaves no server fetchable"),
            Availability::Unavailable(why) => {
                index.skip(name, why)?;
                return Ok(None);
            }
        };
        let id = match identity::probe(&bin).await {
            Ok(id) => id,
            Err(e) => {
                index.skip(name, format!("does not start: {e}"))?;
                return Ok(None);
            }
        };
        eprintln!(
            "limitbench: server {}: {} (mem_allocator {}, --version malloc {})",
            spec.name,
            id.label(),
            id.mem_allocator,
            id.version_malloc
        );
        let e = index.entry(name);
        e.identity = Some(id.clone());
        e.reason = None;
        Ok(Some((bin, id)))
    }

    /// The experiments on one server, as `limitbench run` would with these
    /// flags (into `sub`, resumed if it was started); its exit status.
    async fn run_on(
        &self,
        col: &Column<'_>,
        bin: &RedisBinary,
        id: &limitbench_analysis::matrix::Identity,
        sub: &Path,
    ) -> Result<i32> {
        let a = self.a;
        let mut args: Vec<String> = self.experiments.clone();
        args.extend(["--size".into(), a.size.as_str().into()]);
        args.extend(["--seed".into(), col.seed.to_string()]);
        // One experiment at a time: the servers' columns are compared
        // with each other, so each runs as the committed matrix did.
        args.extend(["--parallel".into(), "1".into()]);
        if a.allow_busy {
            args.push("--allow-busy".into());
        }
        args.extend(["--data-dir".into(), self.run_dir.display().to_string()]);
        args.push("--redis-server".into());
        args.push(bin.path.display().to_string());
        if sub.join("manifest.json").exists() {
            args.extend(["--resume".into(), col.name.into()]);
        } else {
            args.extend(["--run-id".into(), col.name.into()]);
        }
        #[derive(Parser)]
        struct RunCmd {
            #[command(flatten)]
            run: super::run::RunArgs,
        }
        let mut run = RunCmd::try_parse_from(std::iter::once("limitbench".to_string()).chain(args))
            .context("building the run's arguments")?
            .run
            .request();
        let mut id = id.to_json();
        id["source"] = format!("limitbench matrix: server {}", col.name).into();
        run.server_identity = Some(id);
        app::run::run_experiments(run, self.root).await
    }

    /// The scorecard's arguments on one server, as `limitbench scorecard`
    /// would parse them.
    fn scorecard_args(
        &self,
        name: &str,
        bin: &RedisBinary,
    ) -> Result<super::scorecard::ScorecardArgs> {
        let args = vec![
            "--size".to_string(),
            self.a.scorecard_size.as_str().into(),
            "--data-dir".into(),
            self.run_dir.display().to_string(),
            "--run-id".into(),
            name.into(),
            "--redis-server".into(),
            bin.path.display().to_string(),
        ];
        #[derive(Parser)]
        struct ScoreCmd {
            #[command(flatten)]
            card: super::scorecard::ScorecardArgs,
        }
        Ok(
            ScoreCmd::try_parse_from(std::iter::once("limitbench".to_string()).chain(args))
                .context("building the scorecard's arguments")?
                .card,
        )
    }
}

/// Is `dir` a matrix folder (its `servers.json`, no run manifest of its own)?
pub fn is_matrix_folder(dir: &Path) -> bool {
    dir.join("servers.json").is_file() && !dir.join("manifest.json").exists()
}

/// Only the analysis of the matrix folder `run_dir`: every server that
/// `servers.json` lists with a run folder, analysed from its CSVs, then the
/// matrix's tables and figures. Starts no server and fetches nothing.
pub fn reanalyze(run_dir: &Path, claims: &Path) -> Result<()> {
    let text = std::fs::read_to_string(run_dir.join("servers.json"))
        .with_context(|| format!("reading {}/servers.json", run_dir.display()))?;
    let entries: Vec<ServerEntry> = serde_json::from_str(&text)
        .with_context(|| format!("parsing {}/servers.json", run_dir.display()))?;
    write_analysis(run_dir, claims, &entries)
}

/// The analysis: each server's claims, then one table across them.
fn write_analysis(run_dir: &Path, claims: &Path, entries: &[ServerEntry]) -> Result<()> {
    let columns: Vec<limitbench_analysis::matrix::ServerColumn> = entries
        .iter()
        .map(|e| limitbench_analysis::matrix::ServerColumn {
            name: e.name.clone(),
            status: e.status.clone(),
            reason: e.reason.clone(),
            identity: e.identity.clone(),
            run_seconds: e.run_seconds,
            scorecard_seconds: e.scorecard_seconds,
        })
        .collect();
    let written = app::matrix::analyze_matrix(run_dir, claims, &columns)?;
    for f in &written {
        eprintln!("limitbench: wrote {}", f.display());
    }
    Ok(())
}

fn print_times(entries: &[ServerEntry]) {
    eprintln!("limitbench: time per server:");
    for e in entries {
        eprintln!(
            "  {:<11} {:<8} run {:>7.1} s  scorecard {:>6.1} s{}",
            e.name,
            e.status,
            e.run_seconds,
            e.scorecard_seconds,
            e.reason
                .as_deref()
                .map(|r| format!("  ({r})"))
                .unwrap_or_default()
        );
    }
}

/// A server's run finished: its manifest has an end and every experiment is done.
fn finished(sub: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(sub.join("manifest.json")) else {
        return false;
    };
    let Ok(m) = serde_json::from_str::<serde_json::Value>(&text) else {
        return false;
    };
    m["ended"].is_string()
        && m["experiments"]
            .as_object()
            .is_some_and(|e| e.values().all(|x| x["outcome"] == "done"))
}
