//! Test helpers: start real servers, run the `limitbench` binary and, when
//! an assertion fails, show the command with its stdout and stderr.

#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

use limitbench_core::fleet::{Fleet, RedisBinary, ServerConfig};

pub fn redis() -> RedisBinary {
    RedisBinary::locate(None)
        .expect("redis-server must be installed for the tests (apt-get install redis-server)")
}

pub async fn standalone() -> Fleet {
    Fleet::standalone(&redis(), ServerConfig::default())
        .await
        .expect("start redis-server")
}

/// The output of one `limitbench` invocation, printable on failure.
pub struct Run {
    pub cmd: String,
    pub out: Output,
}

impl Run {
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.out.stdout).into_owned()
    }
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.out.stderr).into_owned()
    }
    pub fn code(&self) -> i32 {
        self.out.status.code().unwrap_or(-1)
    }
    fn show(&self) -> String {
        format!(
            "\n--- command: {}\n--- exit: {}\n--- stdout:\n{}\n--- stderr:\n{}\n",
            self.cmd,
            self.code(),
            self.stdout(),
            self.stderr()
        )
    }
    /// Assert the exit code, printing everything if it differs.
    pub fn expect_code(&self, code: i32) -> &Self {
        assert_eq!(self.code(), code, "unexpected exit code{}", self.show());
        self
    }
    /// Assert that stdout+stderr contains `text`.
    pub fn expect_output(&self, text: &str) -> &Self {
        assert!(
            self.stdout().contains(text) || self.stderr().contains(text),
            "output does not contain {text:?}{}",
            self.show()
        );
        self
    }
}

/// Run the binary with `args` in `dir` (the crate root by default).
pub fn limitbench(args: &[&str], dir: Option<&Path>) -> Run {
    let bin = env!("CARGO_BIN_EXE_limitbench");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(bin)
        .args(args)
        .current_dir(dir.unwrap_or(root))
        .output()
        .expect("run limitbench");
    Run {
        cmd: format!("limitbench {}", args.join(" ")),
        out,
    }
}

/// Write `<name>.lua` and `<name>.toml` into `dir` (created if need be):
/// the manifest names the script and the key `rl:{client}:<name>`, then
/// `rest` (args, `[reply]`, ...).
pub fn external_strategy(dir: &Path, name: &str, lua: &str, rest: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join(format!("{name}.lua")), lua).unwrap();
    std::fs::write(
        dir.join(format!("{name}.toml")),
        format!(
            "name = \"{name}\"\nscript = \"{name}.lua\"\nkeys = [\"rl:{{${{client}}}}:{name}\"]\n{rest}\n"
        ),
    )
    .unwrap();
}

/// Is a process with this PID still alive?
pub fn alive(pid: u32) -> bool {
    // A zombie is dead for our purposes: check /proc state.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => s.split_whitespace().nth(2).is_none_or(|st| st != "Z"),
        Err(_) => false,
    }
}

/// A copy of the project's experiment files with a small `concurrency` (every
/// strategy at 0 ms, 1 and 8 workers, 4 trials) for runs that take seconds.
pub fn small_experiments(dir: &Path) -> std::path::PathBuf {
    let exp = dir.join("experiments");
    std::fs::create_dir_all(&exp).unwrap();
    for e in std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments")).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, exp.join(p.file_name().unwrap())).unwrap();
    }
    let conc = std::fs::read_to_string(exp.join("concurrency.toml")).unwrap();
    let start = conc.find("[smoke]").unwrap();
    let end = conc[start..].find("\n[quick]").map(|i| start + i).unwrap();
    let smoke = "[smoke]\ntrials = 4\nworkers = [1, 8]\ngroups = [\n  { strategies = [\"*\"], rtts_ms = [0] },\n]\n";
    std::fs::write(
        exp.join("concurrency.toml"),
        format!("{}{smoke}{}", &conc[..start], &conc[end..]),
    )
    .unwrap();
    exp
}

/// Sorted (cell, trial[, seed]) keys of a run's main table of `exp`; none
/// from an empty table (a shard that drew none of the experiment's cells).
pub fn keys(run: &Path, exp: &str) -> Vec<String> {
    let p = limitbench_base::files::find_table(run, &format!("{exp}.csv"))
        .unwrap_or_else(|| panic!("{exp}.csv in {}", run.display()));
    let bytes = limitbench_base::files::read_maybe_compressed(&p).unwrap();
    if bytes.is_empty() {
        return vec![];
    }
    let mut rdr = csv::Reader::from_reader(bytes.as_slice());
    let h = rdr.headers().unwrap().clone();
    let col = |n: &str| h.iter().position(|x| x == n);
    let (ci, ti, si) = (col("cell").unwrap(), col("trial").unwrap(), col("seed"));
    let mut out: Vec<String> = rdr
        .records()
        .map(|r| {
            let r = r.unwrap();
            let seed = si.map(|i| r[i].to_string()).unwrap_or_default();
            format!("{}/{}/{seed}", &r[ci], &r[ti])
        })
        .collect();
    out.sort();
    out
}

/// The distinct values of column `name` in a run's main table of `exp`
/// (none from an empty table or one without the column).
pub fn column(run: &Path, exp: &str, name: &str) -> std::collections::BTreeSet<String> {
    let Some(p) = limitbench_base::files::find_table(run, &format!("{exp}.csv")) else {
        return Default::default();
    };
    let bytes = limitbench_base::files::read_maybe_compressed(&p).unwrap();
    if bytes.is_empty() {
        return Default::default();
    }
    let mut rdr = csv::Reader::from_reader(bytes.as_slice());
    let h = rdr.headers().unwrap().clone();
    let Some(i) = h.iter().position(|x| x == name) else {
        return Default::default();
    };
    rdr.records().map(|r| r.unwrap()[i].to_string()).collect()
}

/// Copy the files (not the folders) of `from` into `to`, made if missing.
#[allow(dead_code)]
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        if e.path().is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// A scorecard of `strategies` (built-in or in `dir`) on servers of our
/// own at `size`, one strategy at a time, under the tests' key prefix,
/// writing to `out`.
pub fn own_scorecard(
    strategies: &[&str],
    dir: Option<&Path>,
    size: limitbench::run::Size,
    out: &Path,
) -> limitbench::scorecard::Config {
    limitbench::scorecard::Config {
        strategies: strategies.iter().map(|s| s.to_string()).collect(),
        dir: dir.map(Path::to_path_buf),
        size,
        target: limitbench::scorecard::ScorecardServer::Own(redis()),
        key_prefix: "limitbench:test:".into(),
        out: out.to_path_buf(),
        experiments_dir: Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments"),
        promise_limit: None,
        promise_window_ms: None,
        broken: Vec::new(),
        lanes: 1,
    }
}

/// A copy of the reference run's inputs (its CSVs, at most `max_rows` rows
/// each, and its manifest) in a temporary folder.
pub fn copy_of_reference(tmp: &Path, max_rows: usize) -> std::path::PathBuf {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let run = tmp.join("reference");
    std::fs::create_dir(&run).unwrap();
    for e in std::fs::read_dir(root.join("data/reference")).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        // Large tables are committed compressed (`.csv.zst`); the copy is plain.
        let plain = limitbench_base::files::plain_name(&name).to_string();
        if plain.ends_with(".csv") && plain != "claims.csv" {
            let bytes = limitbench_base::files::read_maybe_compressed(&p).unwrap();
            let text = String::from_utf8(bytes).unwrap();
            let kept: String = text
                .lines()
                .take(max_rows + 1)
                .map(|l| format!("{l}\n"))
                .collect();
            std::fs::write(run.join(&plain), kept).unwrap();
        } else if name == "manifest.json" {
            std::fs::copy(&p, run.join(&name)).unwrap();
        }
    }
    run
}
