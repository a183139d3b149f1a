//! Append-only CSV tables: rows appended and flushed one batch at a time
//! (they survive a kill of the harness), a torn last line cut off before a
//! table is appended to again, and a table's header kept when the row type
//! has grown columns since it was written.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

use limitbench_base::error::{Error, Result};

/// Cut a file back to its last complete line (a kill can tear the last one).
pub fn truncate_torn_line(path: &Path) -> Result<()> {
    let data = match std::fs::read(path) {
        Ok(d) => d,
        Err(_) => return Ok(()),
    };
    if data.is_empty() || data.ends_with(b"\n") {
        return Ok(());
    }
    let keep = data
        .iter()
        .rposition(|&b| b == b'\n')
        .map(|i| i + 1)
        .unwrap_or(0);
    let f = OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
    f.set_len(keep as u64)
        .map_err(|e| Error::io(format!("truncating {}", path.display()), e))?;
    Ok(())
}

/// One append at a time in this process (see [`CsvAppender::append`]).
static APPENDS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// An append-only CSV of typed rows.
pub struct CsvAppender {
    path: PathBuf,
    file: File,
    header_written: bool,
}

impl CsvAppender {
    pub fn open(path: &Path) -> Result<Self> {
        // Not while another appender of this process writes to the file
        // (its line in flight would look torn).
        let one = APPENDS.lock().unwrap_or_else(|p| p.into_inner());
        truncate_torn_line(path)?;
        drop(one);
        let exists = path.metadata().map(|m| m.len() > 0).unwrap_or(false);
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
        Ok(CsvAppender {
            path: path.to_path_buf(),
            file,
            header_written: exists,
        })
    }

    /// Append rows and flush them to the OS (they survive a kill of the harness).
    ///
    /// A table already written keeps its header: rows whose type has
    /// columns the table lacks (added since, read back as their defaults)
    /// are written in the table's shape, those columns left out; rows that
    /// lack one of the table's columns are an error naming both, never a
    /// table whose lines no longer match its header.
    pub fn append<R: Serialize>(&mut self, rows: &[R]) -> Result<()> {
        // Lanes of one experiment (`run::parallel`) append to the same
        // tables: whether the header is due is decided at the append, from
        // the file itself, one append at a time.
        let _one = APPENDS.lock().unwrap_or_else(|p| p.into_inner());
        if !self.header_written {
            self.header_written = self.file.metadata().map(|m| m.len() > 0).unwrap_or(false);
        }
        let bytes = if self.header_written {
            self.rows_in_table_shape(rows)?
        } else {
            self.serialized(rows, true)?
        };
        if !rows.is_empty() {
            self.header_written = true;
        }
        self.file
            .write_all(&bytes)
            .map_err(|e| Error::io(format!("writing {}", self.path.display()), e))?;
        self.file.flush()?;
        Ok(())
    }

    /// `rows` as CSV, with their header or without.
    fn serialized<R: Serialize>(&self, rows: &[R], header: bool) -> Result<Vec<u8>> {
        let mut w = csv::WriterBuilder::new()
            .has_headers(header)
            .from_writer(Vec::new());
        for r in rows {
            w.serialize(r).map_err(|e| {
                Error::Other(format!(
                    "serializing a row for {}: {e}",
                    self.path.display()
                ))
            })?;
        }
        w.into_inner().map_err(|e| Error::Other(format!("{e}")))
    }

    /// `rows` as lines of the table already written (no header), in its
    /// columns ([`append`](Self::append)).
    fn rows_in_table_shape<R: Serialize>(&self, rows: &[R]) -> Result<Vec<u8>> {
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        let table = table_header(&self.path)?;
        let header_of = |bytes: &[u8]| -> Result<Vec<String>> {
            let mut rdr = csv::ReaderBuilder::new().from_reader(bytes);
            Ok(rdr
                .headers()
                .map_err(|e| Error::Other(format!("{e}")))?
                .iter()
                .map(String::from)
                .collect())
        };
        let ours = header_of(&self.serialized(&rows[..1], true)?)?;
        if ours == table {
            return self.serialized(rows, false);
        }
        let fresh = self.serialized(rows, true)?;
        let mut rdr = csv::ReaderBuilder::new().from_reader(fresh.as_slice());
        let at: Vec<usize> = table
            .iter()
            .map(|c| ours.iter().position(|o| o == c))
            .collect::<Option<_>>()
            .ok_or_else(|| {
                Error::Other(format!(
                    "{} has the columns `{}`, but the rows written now have `{}`: the table was written by another version of limitbench; finish it with that version, or start a new run",
                    self.path.display(),
                    table.join(","),
                    ours.join(",")
                ))
            })?;
        let mut w = csv::WriterBuilder::new()
            .has_headers(false)
            .from_writer(Vec::new());
        for rec in rdr.records() {
            let rec = rec.map_err(|e| Error::Other(format!("{e}")))?;
            w.write_record(at.iter().map(|i| &rec[*i]))
                .map_err(|e| Error::Other(format!("{e}")))?;
        }
        w.into_inner().map_err(|e| Error::Other(format!("{e}")))
    }
}

/// The header of the CSV table at `path` (its first line's fields).
fn table_header(path: &Path) -> Result<Vec<String>> {
    let f = File::open(path).map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
    let mut rdr = csv::ReaderBuilder::new().from_reader(f);
    Ok(rdr
        .headers()
        .map_err(|e| Error::Other(format!("reading the header of {}: {e}", path.display())))?
        .iter()
        .map(String::from)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Old {
        cell: String,
        trial: u64,
    }

    #[derive(Serialize)]
    struct Grown {
        cell: String,
        trial: u64,
        steal: Option<f64>,
    }

    #[derive(Serialize)]
    struct Shrunk {
        cell: String,
    }

    #[test]
    fn a_table_keeps_its_header_when_rows_grow_and_refuses_rows_that_lost_a_column() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("t.csv");
        let old = |t| Old {
            cell: "a".into(),
            trial: t,
        };
        CsvAppender::open(&path).unwrap().append(&[old(0)]).unwrap();
        // A resumed run whose rows have grown a column writes the table's shape.
        let grown = |t| Grown {
            cell: "a".into(),
            trial: t,
            steal: Some(0.5),
        };
        CsvAppender::open(&path)
            .unwrap()
            .append(&[grown(1), grown(2)])
            .unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "cell,trial\na,0\na,1\na,2\n"
        );
        // Rows without one of the table's columns are refused, naming both.
        let e = CsvAppender::open(&path)
            .unwrap()
            .append(&[Shrunk { cell: "a".into() }])
            .unwrap_err()
            .to_string();
        assert!(e.contains("`cell,trial`") && e.contains("`cell`"), "{e}");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap().lines().count(),
            4,
            "nothing written"
        );
        // A new table takes the rows' own header.
        let fresh = tmp.path().join("n.csv");
        CsvAppender::open(&fresh)
            .unwrap()
            .append(&[grown(0)])
            .unwrap();
        assert_eq!(
            std::fs::read_to_string(&fresh).unwrap(),
            "cell,trial,steal\na,0,0.5\n"
        );
    }
}
