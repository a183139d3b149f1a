//! Reading the files of a run folder, whichever form they are in: a
//! finished run stores its large tables gzip-compressed (`.csv.gz`).

use std::path::Path;

use crate::error::{Error, Result};

/// A file's bytes, gunzipped when its name ends in `.gz` (large tables of a
/// finished run are stored compressed).
pub fn read_maybe_gz(path: &Path) -> Result<Vec<u8>> {
    let raw =
        std::fs::read(path).map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
    if path.extension().is_some_and(|x| x == "gz") {
        let mut out = Vec::new();
        std::io::Read::read_to_end(
            &mut flate2::read::MultiGzDecoder::new(raw.as_slice()),
            &mut out,
        )
        .map_err(|e| Error::io(format!("decompressing {}", path.display()), e))?;
        Ok(out)
    } else {
        Ok(raw)
    }
}
