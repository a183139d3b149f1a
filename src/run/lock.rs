//! One holder of a run folder at a time: `run` (and `--resume`), `merge`
//! into its output and `analyze` take `<run>/.lock` with `flock` before
//! they write, and a second holder gets a refusal naming the first. The
//! kernel drops the lock when the holder exits, even on `kill -9`; the
//! file is removed when the holder ends normally.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use limitbench_base::error::{Error, Result};

/// The lock file in a run folder.
pub const LOCK_FILE: &str = ".lock";

/// A held lock on a run folder, released when dropped.
#[derive(Debug)]
pub struct RunLock {
    file: Option<File>,
    path: PathBuf,
}

impl RunLock {
    /// Take the lock of the run folder `dir` for `what` (e.g. "run", "analyze").
    pub fn take(dir: &Path, what: &str) -> Result<Self> {
        let path = dir.join(LOCK_FILE);
        let mut file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
        // SAFETY: flock on a descriptor this function owns.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc != 0 {
            let holder = std::fs::read_to_string(&path).unwrap_or_default();
            return Err(Error::Other(format!(
                "the run folder {} is in use by another limitbench ({}); wait for it to end (nothing was written)",
                dir.display(),
                if holder.trim().is_empty() {
                    "its holder did not say who it is".to_string()
                } else {
                    holder.trim().to_string()
                }
            )));
        }
        let _ = file.set_len(0);
        let _ = write!(file, "pid {} ({what})", std::process::id());
        Ok(RunLock {
            file: Some(file),
            path,
        })
    }
}

impl Drop for RunLock {
    fn drop(&mut self) {
        // Remove the file while still holding the lock, then release it.
        let _ = std::fs::remove_file(&self.path);
        self.file.take();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_and_the_first_ones_end_frees_the_folder() {
        let dir = tempfile::tempdir().unwrap();
        let first = RunLock::take(dir.path(), "run").unwrap();
        let e = RunLock::take(dir.path(), "analyze")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("in use by another limitbench") && e.contains("(run)"),
            "{e}"
        );
        assert!(e.contains(&format!("pid {}", std::process::id())), "{e}");
        drop(first);
        assert!(!dir.path().join(LOCK_FILE).exists());
        let again = RunLock::take(dir.path(), "analyze").unwrap();
        drop(again);
    }
}
