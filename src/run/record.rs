//! Recording: one folder per run, append-only CSVs that survive a kill, and
//! the run manifest.
//!
//! A trial is committed by appending its row(s) to the experiment's CSV and
//! flushing; anything a trial writes elsewhere (a history CSV) is written
//! first, keyed by (cell, trial). On resume, the committed (cell, trial)
//! pairs are read back, a torn last line is cut off, and history rows of
//! trials that never committed are dropped, so a killed run loses nothing it
//! finished and duplicates nothing.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use serde::Serialize;

use limitbench_base::error::{Error, Result};

use super::csv_append::{CsvAppender, truncate_torn_line};

/// `data/<run-id>/`.
#[derive(Debug, Clone)]
pub struct RunDir {
    pub path: PathBuf,
    pub run_id: String,
}

impl RunDir {
    /// A new run folder under `data_dir` (never reusing an existing one).
    /// `data_dir/latest` moves only once the run committed a trial.
    pub fn create(data_dir: &Path, run_id: Option<&str>) -> Result<Self> {
        if let Some(id) = run_id {
            check_run_id(id).map_err(Error::Other)?;
        }
        let run_id = Self::free_id(data_dir, run_id);
        let path = data_dir.join(&run_id);
        std::fs::create_dir_all(&path)
            .map_err(|e| Error::io(format!("creating {}", path.display()), e))?;
        Ok(RunDir { path, run_id })
    }

    /// The id [`RunDir::create`] would give a new run now: `run_id` (or the
    /// UTC date and time), with `-2`, `-3`, ... if that folder exists.
    pub fn free_id(data_dir: &Path, run_id: Option<&str>) -> String {
        let base = run_id.map(str::to_string).unwrap_or_else(default_run_id);
        let mut id = base.clone();
        let mut n = 1;
        while data_dir.join(&id).exists() {
            n += 1;
            id = format!("{base}-{n}");
        }
        id
    }

    /// A folder that is not a run (validation uses it; nothing is written).
    pub fn scratch(path: &Path) -> Self {
        RunDir {
            path: path.to_path_buf(),
            run_id: "validation".into(),
        }
    }

    /// Does any CSV of this run hold a committed row?
    pub fn has_committed_trials(&self) -> bool {
        std::fs::read_dir(&self.path)
            .map(|rd| {
                rd.flatten().any(|e| {
                    let p = e.path();
                    p.extension().is_some_and(|x| x == "csv")
                        && p.file_name().is_some_and(|n| n != "claims.csv")
                        && std::fs::read(&p)
                            .map(|b| b.iter().filter(|&&c| c == b'\n').count() > 1)
                            .unwrap_or(false)
                })
            })
            .unwrap_or(false)
    }

    /// An existing run folder, to resume.
    pub fn open(data_dir: &Path, run_id: &str) -> Result<Self> {
        let path = if Path::new(run_id).is_dir() {
            PathBuf::from(run_id)
        } else {
            data_dir.join(run_id)
        };
        if !path.is_dir() {
            return Err(Error::Other(format!(
                "no run folder {} to resume",
                path.display()
            )));
        }
        let run_id = path
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok(RunDir { path, run_id })
    }

    /// Point `data_dir/latest` at this run.
    pub fn point_latest(&self, data_dir: &Path) {
        let link = data_dir.join("latest");
        let _ = std::fs::remove_file(&link);
        #[cfg(unix)]
        let _ = std::os::unix::fs::symlink(&self.run_id, &link);
    }

    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }
}

/// Side tables and CSVs at least this large are stored zstd-compressed
/// (`.csv.zst`) once a run has finished; the analysis reads either form.
/// 256 KiB keeps the small per-cell tables readable as they are and
/// compresses the per-decision and per-trial ones.
pub const COMPRESS_AT_BYTES: u64 = 256 << 10;

impl RunDir {
    /// Compress every CSV of at least [`COMPRESS_AT_BYTES`] to `.csv.zst`
    /// (removing the plain file), for a run that finished. Returns the
    /// files compressed.
    pub fn compress_large_csvs(&self) -> Result<Vec<PathBuf>> {
        let mut done = Vec::new();
        for e in std::fs::read_dir(&self.path)
            .map_err(|e| Error::io("listing the run folder", e))?
            .flatten()
        {
            let p = e.path();
            let big = e
                .metadata()
                .map(|m| m.len() >= COMPRESS_AT_BYTES)
                .unwrap_or(false);
            if big && p.extension().is_some_and(|x| x == "csv") {
                done.push(limitbench_base::files::compress_to_zst(&p)?);
            }
        }
        Ok(done)
    }

    /// Undo [`compress_large_csvs`](Self::compress_large_csvs) (and the
    /// `.csv.gz` of runs written before it) so a resumed run can append
    /// again.
    pub fn decompress_csvs(&self) -> Result<()> {
        for e in std::fs::read_dir(&self.path)
            .map_err(|e| Error::io("listing the run folder", e))?
            .flatten()
        {
            let p = e.path();
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let plain = limitbench_base::files::plain_name(&name);
            if plain != name && plain.ends_with(".csv") {
                let bytes = limitbench_base::files::read_maybe_compressed(&p)?;
                let out = self.path.join(plain);
                std::fs::write(&out, bytes)
                    .map_err(|e| Error::io(format!("writing {}", out.display()), e))?;
                std::fs::remove_file(&p)
                    .map_err(|e| Error::io(format!("removing {}", p.display()), e))?;
            }
        }
        Ok(())
    }
}

/// Now in UTC as (year, month, day, hour, minute, second).
fn utc_now() -> (i64, u32, u32, i64, i64, i64) {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0) as i64;
    let (days, rem) = (secs.div_euclid(86400), secs.rem_euclid(86400));
    let (y, m, d) = civil_from_days(days);
    (y, m, d, rem / 3600, rem % 3600 / 60, rem % 60)
}

/// `YYYYMMDD-HHMMSS` in UTC.
/// Check a run id given by the user (`--run-id`): a plain folder name of
/// letters, digits, `-`, `_` and `.`, not starting with a dot, at most 100
/// characters, so it can neither leave the data folder (`../x`, `/tmp/x`)
/// nor be empty.
pub fn check_run_id(id: &str) -> std::result::Result<String, String> {
    let ok_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    if id.is_empty() || id.len() > 100 || id.starts_with('.') || !id.chars().all(ok_char) {
        return Err(format!(
            "`{id}` is not a run id: use 1-100 letters, digits, '-', '_' or '.', not starting with '.' (a folder name under the data folder, never a path)"
        ));
    }
    Ok(id.to_string())
}

pub fn default_run_id() -> String {
    let (y, m, d, h, mi, s) = utc_now();
    format!("{y:04}{m:02}{d:02}-{h:02}{mi:02}{s:02}")
}

/// RFC 3339 UTC timestamp, for the manifest.
pub fn now_rfc3339() -> String {
    let (y, m, d, h, mi, s) = utc_now();
    format!("{y:04}-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z")
}

// Howard Hinnant's days-to-civil algorithm.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719468;
    let era = z.div_euclid(146097);
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// The (cell, trial) pairs present in a CSV with `cell` and `trial` columns.
pub fn committed_trials(path: &Path) -> Result<HashSet<(String, u64)>> {
    let mut done = HashSet::new();
    // Absent, or just created by another lane of the experiment: nothing yet.
    if path.metadata().map(|m| m.len() == 0).unwrap_or(true) {
        return Ok(done);
    }
    let mut rdr = csv::Reader::from_path(path)
        .map_err(|e| Error::Other(format!("reading {}: {e}", path.display())))?;
    let headers = rdr
        .headers()
        .map_err(|e| Error::Other(format!("reading {}: {e}", path.display())))?
        .clone();
    let ci = headers.iter().position(|h| h == "cell");
    let ti = headers.iter().position(|h| h == "trial");
    let (Some(ci), Some(ti)) = (ci, ti) else {
        return Err(Error::Other(format!(
            "{} has no cell/trial columns; cannot resume",
            path.display()
        )));
    };
    for rec in rdr.records() {
        let rec = rec.map_err(|e| Error::Other(format!("reading {}: {e}", path.display())))?;
        if let (Some(c), Some(t)) = (rec.get(ci), rec.get(ti).and_then(|t| t.parse().ok())) {
            done.insert((c.to_string(), t));
        }
    }
    Ok(done)
}

/// Keep only rows whose (cell, trial) is in `keep` (drops uncommitted history).
fn filter_rows(path: &Path, keep: &HashSet<(String, u64)>) -> Result<()> {
    if !path.exists() {
        return Ok(());
    }
    let mut rdr = csv::Reader::from_path(path)
        .map_err(|e| Error::Other(format!("reading {}: {e}", path.display())))?;
    let headers = rdr
        .headers()
        .map_err(|e| Error::Other(format!("{e}")))?
        .clone();
    let ci = headers.iter().position(|h| h == "cell");
    let ti = headers.iter().position(|h| h == "trial");
    let (Some(ci), Some(ti)) = (ci, ti) else {
        return Ok(());
    };
    let tmp = path.with_extension("csv.tmp");
    {
        let mut w = csv::Writer::from_path(&tmp).map_err(|e| Error::Other(format!("{e}")))?;
        w.write_record(&headers)
            .map_err(|e| Error::Other(format!("{e}")))?;
        for rec in rdr.records() {
            let rec = rec.map_err(|e| Error::Other(format!("{e}")))?;
            let k = (
                rec.get(ci).unwrap_or("").to_string(),
                rec.get(ti).and_then(|t| t.parse().ok()).unwrap_or(u64::MAX),
            );
            if keep.contains(&k) {
                w.write_record(&rec)
                    .map_err(|e| Error::Other(format!("{e}")))?;
            }
        }
        w.flush()?;
    }
    std::fs::rename(&tmp, path).map_err(|e| Error::io("replacing history csv", e))?;
    Ok(())
}

/// Experiments run in lanes (`run::parallel`): main table -> whether a
/// lane prepared it already. Opening a [`TrialLog`] cuts torn lines and
/// drops uncommitted side rows (rewriting the side tables); while an
/// experiment's lanes run ([`LaneHold`]) only the first open does that, so
/// no lane rewrites a table another lane is appending to.
static LANED: std::sync::Mutex<BTreeMap<PathBuf, bool>> = std::sync::Mutex::new(BTreeMap::new());

/// While alive, `run`'s experiment `name` runs in lanes: its tables are
/// prepared once, by the first lane to open them.
pub struct LaneHold(PathBuf);

impl LaneHold {
    pub fn new(run: &RunDir, name: &str) -> Self {
        let p = run.file(&format!("{name}.csv"));
        LANED
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(p.clone(), false);
        LaneHold(p)
    }
}

impl Drop for LaneHold {
    fn drop(&mut self) {
        LANED
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.0);
    }
}

/// The trial table of one experiment (`<name>.csv`) plus optional side
/// tables (`<name>-<side>.csv`, e.g. the admission history), with resume.
pub struct TrialLog {
    main: CsvAppender,
    sides: BTreeMap<String, CsvAppender>,
    done: HashSet<(String, u64)>,
    dir: PathBuf,
    name: String,
}

impl TrialLog {
    pub fn open(run: &RunDir, name: &str, sides: &[&str]) -> Result<Self> {
        let main_path = run.file(&format!("{name}.csv"));
        let mut laned = LANED.lock().unwrap_or_else(|p| p.into_inner());
        let first = laned.get(&main_path) != Some(&true);
        if first {
            truncate_torn_line(&main_path)?;
        }
        let done = committed_trials(&main_path)?;
        let mut side_map = BTreeMap::new();
        for s in sides {
            let p = run.file(&format!("{name}-{s}.csv"));
            if first {
                truncate_torn_line(&p)?;
                filter_rows(&p, &done)?;
            }
            side_map.insert(s.to_string(), CsvAppender::open(&p)?);
        }
        if let Some(done) = laned.get_mut(&main_path) {
            *done = true;
        }
        drop(laned);
        Ok(TrialLog {
            main: CsvAppender::open(&main_path)?,
            sides: side_map,
            done,
            dir: run.path.clone(),
            name: name.into(),
        })
    }

    pub fn is_done(&self, cell: &str, trial: u64) -> bool {
        self.done.contains(&(cell.to_string(), trial))
    }

    pub fn done_count(&self) -> usize {
        self.done.len()
    }

    /// Write side rows (before the commit).
    pub fn side<R: Serialize>(&mut self, side: &str, rows: &[R]) -> Result<()> {
        let s = self.sides.get_mut(side).ok_or_else(|| {
            Error::Other(format!("{}: side table `{side}` was not opened", self.name))
        })?;
        s.append(rows)
    }

    /// Commit a trial: its row(s) go to the main CSV. Rows must have `cell`
    /// and `trial` fields equal to the arguments.
    pub fn commit<R: Serialize>(&mut self, cell: &str, trial: u64, rows: &[R]) -> Result<()> {
        self.main.append(rows)?;
        self.done.insert((cell.to_string(), trial));
        Ok(())
    }

    /// Commit rows that belong to several cells of one trial (one append).
    pub fn commit_keys<R: Serialize>(
        &mut self,
        cells: &[&str],
        trial: u64,
        rows: &[R],
    ) -> Result<()> {
        self.main.append(rows)?;
        for c in cells {
            self.done.insert((c.to_string(), trial));
        }
        Ok(())
    }

    pub fn path(&self) -> PathBuf {
        self.dir.join(format!("{}.csv", self.name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::OpenOptions;
    use std::io::Write;

    #[derive(Serialize)]
    struct Row {
        cell: String,
        trial: u64,
        x: f64,
    }

    #[test]
    fn resume_keeps_committed_and_drops_torn_and_uncommitted() {
        let tmp = tempfile::tempdir().unwrap();
        let run = RunDir::create(tmp.path(), Some("r")).unwrap();
        {
            let mut log = TrialLog::open(&run, "exp", &["history"]).unwrap();
            log.side(
                "history",
                &[Row {
                    cell: "a".into(),
                    trial: 0,
                    x: 1.0,
                }],
            )
            .unwrap();
            log.commit(
                "a",
                0,
                &[Row {
                    cell: "a".into(),
                    trial: 0,
                    x: 2.0,
                }],
            )
            .unwrap();
            // Trial 1 wrote history but was killed before committing.
            log.side(
                "history",
                &[Row {
                    cell: "a".into(),
                    trial: 1,
                    x: 3.0,
                }],
            )
            .unwrap();
        }
        // And the kill tore a line of the main CSV.
        let mut f = OpenOptions::new()
            .append(true)
            .open(run.file("exp.csv"))
            .unwrap();
        f.write_all(b"a,1,4.").unwrap();
        drop(f);
        let log = TrialLog::open(&run, "exp", &["history"]).unwrap();
        assert!(log.is_done("a", 0));
        assert!(!log.is_done("a", 1));
        assert_eq!(log.done_count(), 1);
        let hist = std::fs::read_to_string(run.file("exp-history.csv")).unwrap();
        assert_eq!(hist, "cell,trial,x\na,0,1.0\n");
        let main = std::fs::read_to_string(run.file("exp.csv")).unwrap();
        assert_eq!(main, "cell,trial,x\na,0,2.0\n");
        // A second run never reuses the folder.
        let again = RunDir::create(tmp.path(), Some("r")).unwrap();
        assert_ne!(again.path, run.path);
    }

    #[test]
    fn run_ids_are_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20000), (2024, 10, 4));
    }
}
