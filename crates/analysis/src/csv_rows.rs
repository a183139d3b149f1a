//! The one CSV reader ([`read_table`], [`parse_csv_rows`]): every path from
//! a CSV row to a verdict, a scorecard cell, a matrix row or an outlier
//! flag reads through here. [`read_table_noting`] also gathers one
//! column's distinct values while it parses (the analysis context notes
//! the `strategy` column: which strategies a run measured, so a strategy
//! added from a manifest is drawn in a look of its own).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

use limitbench_base::error::{Error, Result};

/// Table `name` of `dir` (e.g. `noise.csv`, or its compressed form
/// `noise.csv.zst` or `.csv.gz`) parsed with [`parse_csv_rows`]: its path,
/// its rows and the line number of a torn last line; `Ok(None)` if there is
/// none. A row that does not parse is an error naming the file and line.
pub fn read_table<T: DeserializeOwned>(
    dir: &Path,
    name: &str,
) -> Result<Option<(PathBuf, Vec<T>, Option<u64>)>> {
    read_table_noting(dir, name, "", &mut BTreeSet::new())
}

/// [`read_table`], adding every distinct value of column `column` (if the
/// table has it) to `seen`.
pub fn read_table_noting<T: DeserializeOwned>(
    dir: &Path,
    name: &str,
    column: &str,
    seen: &mut BTreeSet<String>,
) -> Result<Option<(PathBuf, Vec<T>, Option<u64>)>> {
    let Some(p) = limitbench_base::files::find_table(dir, name) else {
        return Ok(None);
    };
    let bytes = limitbench_base::files::read_maybe_compressed(&p)?;
    let (rows, torn) = parse_csv_rows_noting(&bytes, column, seen)
        .map_err(|e| Error::Other(format!("{}: {e}", p.display())))?;
    Ok(Some((p, rows, torn)))
}

/// Parse CSV bytes (with a header) into rows. A last line without its
/// newline was torn by a kill (rows are appended whole, newline last): it is
/// dropped even if what is left of it parses, and its line number returned.
/// Any other row that does not parse is an error naming the line.
pub fn parse_csv_rows<T: DeserializeOwned>(
    bytes: &[u8],
) -> std::result::Result<(Vec<T>, Option<u64>), String> {
    parse_csv_rows_noting(bytes, "", &mut BTreeSet::new())
}

/// [`parse_csv_rows`], adding every distinct value of column `column` (of
/// the rows kept) to `seen`.
pub fn parse_csv_rows_noting<T: DeserializeOwned>(
    bytes: &[u8],
    column: &str,
    seen: &mut BTreeSet<String>,
) -> std::result::Result<(Vec<T>, Option<u64>), String> {
    let (body, torn) = match bytes.iter().rposition(|&b| b == b'\n') {
        _ if bytes.is_empty() || bytes.ends_with(b"\n") => (bytes, None),
        Some(i) => (
            &bytes[..=i],
            Some(bytes[..=i].iter().filter(|&&b| b == b'\n').count() as u64 + 1),
        ),
        None => return Err("line 1: the header is torn (no newline)".into()),
    };
    let mut rdr = csv::ReaderBuilder::new().flexible(false).from_reader(body);
    let at = |e: &csv::Error| {
        let line = e.position().map(|p| p.line()).unwrap_or(0);
        format!("line {line}: {}", csv_error_text(e))
    };
    let headers = rdr.headers().map_err(|e| at(&e))?.clone();
    let col = headers
        .iter()
        .position(|h| h == column && !column.is_empty());
    let mut out = Vec::new();
    let mut rec = csv::StringRecord::new();
    while rdr.read_record(&mut rec).map_err(|e| at(&e))? {
        out.push(rec.deserialize::<T>(Some(&headers)).map_err(|e| at(&e))?);
        if let Some(v) = col.and_then(|c| rec.get(c))
            && !seen.contains(v)
        {
            seen.insert(v.to_string());
        }
    }
    Ok((out, torn))
}

fn csv_error_text(e: &csv::Error) -> String {
    match e.kind() {
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => {
            format!("{len} fields where the header has {expected_len}")
        }
        csv::ErrorKind::Deserialize { err, .. } => match err.field() {
            Some(f) => format!("column {}: {}", f + 1, err.kind()),
            None => err.kind().to_string(),
        },
        _ => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use crate::csv_rows::*;
    use std::collections::BTreeSet;

    #[derive(Debug, serde::Deserialize, PartialEq)]
    struct R {
        cell: String,
        n: u64,
    }

    #[test]
    fn a_torn_last_line_is_dropped_even_if_it_parses() {
        let (rows, torn) = parse_csv_rows::<R>(b"cell,n\na,1\nb,2").unwrap();
        assert_eq!(
            rows,
            vec![R {
                cell: "a".into(),
                n: 1
            }]
        );
        assert_eq!(torn, Some(3));
        let (rows, torn) = parse_csv_rows::<R>(b"cell,n\na,1\n").unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(torn, None);
    }

    #[test]
    fn ragged_and_mistyped_rows_are_errors_with_their_line() {
        let e = parse_csv_rows::<R>(b"cell,n\na,1\nb\nc,3\n").unwrap_err();
        assert!(e.starts_with("line 3:"), "{e}");
        assert!(e.contains("1 fields where the header has 2"), "{e}");
        let e = parse_csv_rows::<R>(b"cell,n\na,x\n").unwrap_err();
        assert!(e.starts_with("line 2:") && e.contains("column 2"), "{e}");
    }

    #[test]
    fn a_noted_column_gathers_the_distinct_values_of_the_rows_kept() {
        let mut seen = BTreeSet::new();
        let (rows, torn) =
            parse_csv_rows_noting::<R>(b"cell,n\nb,1\na,2\nb,3\nc,4", "cell", &mut seen).unwrap();
        assert_eq!((rows.len(), torn), (3, Some(5)));
        // The torn row's `c` is not a value of the table.
        assert_eq!(seen.iter().collect::<Vec<_>>(), ["a", "b"]);
        let mut none = BTreeSet::new();
        parse_csv_rows_noting::<R>(b"cell,n\na,1\n", "strategy", &mut none).unwrap();
        assert!(none.is_empty());
    }
}
