//! `limitbench scorecard`: the arguments and the handler (the battery
//! itself is `limitbench::scorecard`: the experiments' probes, per strategy).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use limitbench::experiments::Size;
use limitbench::run::record::now_rfc3339;
use limitbench::scorecard::{self as sc, Config, ScorecardServer};
use limitbench_analysis::scorecard::CellVerdict;
use limitbench_core::fleet::RedisBinary;
use limitbench_core::strategy::Options;
use limitbench_core::strategy::external::Folder;

#[derive(clap::Args, Clone)]
pub struct ScorecardArgs {
    /// Strategies to score (repeatable or comma-separated); default: every
    /// built-in, the external ones in lua/external, and those in --dir.
    #[arg(long, value_delimiter = ',')]
    strategy: Vec<String>,
    /// A folder of external strategies, added to lua/external.
    #[arg(long)]
    dir: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "quick")]
    size: Size,
    /// The limit of the promise columns (straddle, quiet-burst,
    /// burst-sustained, anchored); default: the bursts probe table's (50;
    /// 20 at --size smoke). For a library that only takes some limits.
    #[arg(long)]
    limit: Option<u64>,
    /// The window of the promise columns, with a unit: 1s, 2s, 500ms
    /// (at least 200 ms: the bursts land 50 ms either side of an edge);
    /// default: the bursts probe table's (1 s; 500 ms at --size smoke, where
    /// a script that takes its window in whole seconds, `${window_s_int}`,
    /// is probed at 1 s instead).
    #[arg(long, value_parser = limitbench::check::parse_window)]
    window: Option<u64>,
    /// Name of the run folder (default: scorecard-<UTC date and time>).
    #[arg(long, value_parser = limitbench::run::record::check_run_id)]
    run_id: Option<String>,
    /// Where run folders go; default: data/ in the project.
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// A Redis you run: redis://[user:password@]host:port[/db]. Only the
    /// properties that need no control of the server are run.
    /// Also from the environment (LIMITBENCH_REDIS_URL), so a password
    /// stays out of `ps`.
    #[arg(long, env = "LIMITBENCH_REDIS_URL", hide_env_values = true)]
    redis_url: Option<String>,
    /// Allow a --redis-url / --cluster-url that is not a loopback address
    /// (a Redis you run elsewhere); the host and prefix are printed first.
    #[arg(long)]
    allow_remote: bool,
    /// A seed node of a Redis Cluster you run, for the cluster property.
    /// Also from the environment (LIMITBENCH_CLUSTER_URL).
    #[arg(
        long,
        requires = "redis_url",
        env = "LIMITBENCH_CLUSTER_URL",
        hide_env_values = true
    )]
    cluster_url: Option<String>,
    /// Every key written starts with this prefix (default limitbench:<run-id>:),
    /// which must contain the run id; what starts with it is deleted at the end.
    #[arg(long)]
    key_prefix: Option<String>,
    /// The redis-server binary to start (default: from PATH).
    #[arg(long)]
    redis_server: Option<PathBuf>,
    /// Score on these servers of `limitbench servers` (comma-separated, or
    /// `all`), fetched as the matrix does: one scorecard per server in
    /// data/<run-id>/<server>/, so a strategy's row reads per server.
    #[arg(long, value_delimiter = ',', conflicts_with_all = ["redis_server", "redis_url"])]
    server: Vec<String>,
    /// The exit status for CI: `fail` (default) exits 1 when a cell fails,
    /// `warn` also when one warns, `never` only on errors. A manifest that
    /// does not load, or a battery that measured no cell, always exits 1.
    #[arg(long, value_enum, default_value = "fail")]
    fail_on: FailOn,
    /// Strategies whose probes that wait on windows run at once, each on
    /// servers of its own (the probes that time CPU or throughput always
    /// run alone, one strategy at a time, after them). 1 runs every
    /// strategy after the other. With --redis-url always 1.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=8))]
    parallel: u64,
}

/// Which cells make the scorecard exit 1 (`--fail-on`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailOn {
    Fail,
    Warn,
    Never,
}

/// The exit status of a scored card: 1 when a cell at or past `fail_on`
/// was found or nothing was measured (every cell not-run or error), else 0;
/// with the reason.
pub fn exit_status(card: &sc::Scorecard, fail_on: FailOn) -> (i32, String) {
    let cells: Vec<&sc::ScorecardCell> = card.results.iter().flat_map(|r| &r.cells).collect();
    let n = |v: CellVerdict| cells.iter().filter(|c| c.verdict == v).count();
    let (fail, warn, pass) = (
        n(CellVerdict::Fail),
        n(CellVerdict::Warn),
        n(CellVerdict::Pass),
    );
    if fail + warn + pass == 0 {
        return (
            1,
            "no cell was measured (every cell not-run or error)".into(),
        );
    }
    let counted = match fail_on {
        FailOn::Fail => fail,
        FailOn::Warn => fail + warn,
        FailOn::Never => 0,
    };
    let what =
        format!("{fail} fail, {warn} warn, {pass} pass (--fail-on {fail_on:?})").to_lowercase();
    (i32::from(counted > 0), what)
}

/// `--server`: one scorecard per server, each in its own sub-folder; a
/// server that cannot be had is skipped with its reason.
async fn per_server(a: ScorecardArgs, root: &Path) -> Result<i32> {
    use limitbench::servers::{self, Availability};
    let specs = servers::select(&a.server)?;
    let run_id = a.run_id.clone().unwrap_or_else(default_run_id);
    let data_dir = a
        .data_dir
        .clone()
        .unwrap_or_else(|| root.join("data"))
        .join(&run_id);
    let cache = servers::cache_dir();
    let mut code = 0;
    for spec in specs {
        match spec.fetch(&cache) {
            Availability::Ready(bin) => {
                eprintln!(
                    "limitbench: scorecard on {} ({})",
                    spec.name,
                    bin.path.display()
                );
                let mut one = a.clone();
                one.server.clear();
                one.redis_server = Some(bin.path);
                one.data_dir = Some(data_dir.clone());
                one.run_id = Some(spec.name.to_string());
                code = code.max(Box::pin(run(one, root)).await?);
            }
            Availability::Fetchable => unreachable!("fetch leaves no server fetchable"),
            Availability::Unavailable(why) => {
                eprintln!("limitbench: server {} skipped: {why}", spec.name)
            }
        }
    }
    Ok(code)
}

/// A scorecard's folder name when none is given: `scorecard-<UTC date and time>`.
fn default_run_id() -> String {
    format!(
        "scorecard-{}",
        now_rfc3339()
            .replace([':', '-'], "")
            .replace('T', "-")
            .trim_end_matches('Z')
    )
}

pub async fn run(a: ScorecardArgs, root: &Path) -> Result<i32> {
    if !a.server.is_empty() {
        return per_server(a, root).await;
    }
    // A manifest that does not load is named (and scored as an error row);
    // the good ones beside it are scored.
    let folder = limitbench_core::strategy::external::scan(a.dir.as_deref())?;
    for b in folder.broken_text() {
        eprintln!("limitbench: error: not loaded: {b}");
    }
    let strategies = strategies_of(&a)?;
    let data_dir = a.data_dir.clone().unwrap_or_else(|| root.join("data"));
    let run_id = a.run_id.clone().unwrap_or_else(default_run_id);
    if !run_id
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
    {
        anyhow::bail!("--run-id `{run_id}` may hold only letters, digits, -, _ and .");
    }
    let key_prefix = a
        .key_prefix
        .clone()
        .unwrap_or_else(|| format!("limitbench:{run_id}:"));
    limitbench_core::fleet::owned::check_prefix_suggesting(
        &key_prefix,
        Some(&run_id),
        &format!("limitbench:{run_id}:"),
    )?;
    let target = target_of(&a, &key_prefix, &run_id).await?;
    // A folder that cannot be written is refused before the battery runs.
    limitbench_core::fleet::owned::check_writable(&data_dir)?;
    let out = data_dir.join(&run_id);
    if out.join("scorecard.csv").exists() || out.join("probes").exists() {
        anyhow::bail!(
            "{} already holds a scorecard; choose another --run-id",
            out.display()
        );
    }
    let cfg = Config {
        strategies,
        dir: a.dir.clone(),
        size: a.size,
        target,
        key_prefix,
        out: out.clone(),
        experiments_dir: root.join("experiments"),
        promise_limit: a.limit,
        promise_window_ms: a.window,
        broken: if a.strategy.is_empty() {
            folder
                .broken
                .iter()
                .map(|b| (b.file.display().to_string(), b.error.to_string()))
                .collect()
        } else {
            Vec::new()
        },
        lanes: a.parallel as usize,
    };
    score(&cfg, a.size, &folder, a.fail_on).await
}

/// The strategies to score (each built once to name a bad one early), after
/// checking the promise columns' limit and window.
fn strategies_of(a: &ScorecardArgs) -> Result<Vec<String>> {
    let strategies = if a.strategy.is_empty() {
        sc::default_strategies(a.dir.as_deref())?
    } else {
        a.strategy.clone()
    };
    if a.limit == Some(0) {
        anyhow::bail!("--limit must be at least 1");
    }
    if a.window.is_some_and(|w| w < 200) {
        anyhow::bail!(
            "--window must be at least 200ms (the promise patterns put bursts 50 ms either side of an edge)"
        );
    }
    for s in &strategies {
        sc::build(s, a.dir.as_deref(), &Options::default())?;
    }
    Ok(strategies)
}

/// The server scored on: the user's (`--redis-url`, checked) or our own.
async fn target_of(a: &ScorecardArgs, key_prefix: &str, run_id: &str) -> Result<ScorecardServer> {
    Ok(match &a.redis_url {
        Some(url) => ScorecardServer::External(
            sc::External::connect_with(
                url,
                a.cluster_url.as_deref(),
                key_prefix,
                Some(run_id),
                a.allow_remote,
            )
            .await
            .context("checking --redis-url")?,
        ),
        None => ScorecardServer::Own(RedisBinary::locate(a.redis_server.as_deref())?),
    })
}

/// The battery, a line per strategy as it ends, then the files; exits 1
/// when a strategy manifest did not load, or as `--fail-on` says.
async fn score(cfg: &Config, size: Size, folder: &Folder, fail_on: FailOn) -> Result<i32> {
    let out = &cfg.out;
    eprintln!(
        "limitbench: scorecard of {} strategies ({}), writing {}",
        cfg.strategies.len(),
        size.as_str(),
        out.display()
    );
    if cfg.lanes() > 1 {
        eprintln!(
            "limitbench: {} strategies at a time for the probes that wait on windows, then those that time CPU one strategy at a time (a line per strategy as its last part ends)",
            cfg.lanes()
        );
    } else if cfg.lanes > 1 {
        eprintln!(
            "limitbench: one strategy at a time on a Redis you run (--parallel applies to servers of our own)"
        );
    }
    // Names line up however long an external manifest's name is.
    let width = cfg
        .strategies
        .iter()
        .map(String::len)
        .chain(cfg.broken.iter().map(|(f, _)| {
            std::path::Path::new(f)
                .file_name()
                .map_or(f.len(), |n| n.len())
        }))
        .max()
        .unwrap_or(0);
    let card = sc::run(cfg, |r| {
        let n = |v: CellVerdict| r.cells.iter().filter(|c| c.verdict == v).count();
        eprintln!(
            "  {:<width$} {:>6.1} s  clock {:<7} pass {} warn {} fail {} not-run {} error {}",
            r.strategy,
            r.seconds,
            r.clock,
            n(CellVerdict::Pass),
            n(CellVerdict::Warn),
            n(CellVerdict::Fail),
            n(CellVerdict::NotRun),
            n(CellVerdict::Error)
        );
    })
    .await?;
    sc::output::write_all(out, &card)?;
    eprintln!(
        "limitbench: scorecard took {:.1} s in all",
        card.total_seconds
    );
    println!("{}", out.join("scorecard.md").display());
    if !folder.broken.is_empty() {
        eprintln!(
            "limitbench: error: {} strategy manifest(s) did not load; the others were scored:\n  {}",
            folder.broken.len(),
            folder.broken_text().join("\n  ")
        );
        return Ok(1);
    }
    let (code, what) = exit_status(&card, fail_on);
    eprintln!("limitbench: {what}: exit {code}");
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn card(verdicts: &[CellVerdict]) -> sc::Scorecard {
        sc::Scorecard {
            size: "smoke".into(),
            target: serde_json::Value::Null,
            results: vec![sc::StrategyResult {
                strategy: "s".into(),
                clock: "redis".into(),
                seconds: 1.0,
                cells: verdicts
                    .iter()
                    .map(|&verdict| sc::ScorecardCell {
                        strategy: "s".into(),
                        property: "p",
                        value: None,
                        unit: "",
                        threshold: String::new(),
                        verdict,
                        detail: String::new(),
                    })
                    .collect(),
                probes: Vec::new(),
            }],
            total_seconds: 1.0,
            lanes: 1,
        }
    }

    #[test]
    fn the_exit_status_follows_fail_on_and_nothing_measured_fails() {
        use CellVerdict::*;
        let warned = card(&[Pass, Warn, NotRun]);
        assert_eq!(exit_status(&warned, FailOn::Fail).0, 0);
        assert_eq!(exit_status(&warned, FailOn::Warn).0, 1);
        let failed = card(&[Pass, Fail]);
        assert_eq!(exit_status(&failed, FailOn::Fail).0, 1);
        assert_eq!(exit_status(&failed, FailOn::Never).0, 0);
        let nothing = card(&[NotRun, Error]);
        let (code, why) = exit_status(&nothing, FailOn::Never);
        assert_eq!(code, 1);
        assert!(why.contains("no cell was measured"), "{why}");
    }
}
