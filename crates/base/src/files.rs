//! Reading the files of a run folder, whichever form they are in: a
//! finished run stores its large tables zstd-compressed (`.csv.zst`); runs
//! written before that stored them gzip-compressed (`.csv.gz`), and both are
//! still read.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Suffixes of a compressed table, in the order a reader looks for them
/// after the plain file.
pub const COMPRESSED_SUFFIXES: [&str; 2] = [".zst", ".gz"];

/// zstd level for a finished run's large tables. 19 is the highest level
/// that needs no extra decoder memory; on this machine it compresses a
/// 30 MB history in about 25 s, to two thirds of gzip's best on the
/// decision histories and a seventh on the cluster's per-user table
/// (whose rows repeat at distances gzip's 32 KiB window cannot see).
pub const ZSTD_LEVEL: i32 = 19;

/// The path of table `name` (e.g. `concurrency.csv`) in `dir`: the plain
/// file if it exists, else its compressed form; `None` if there is none.
pub fn find_table(dir: &Path, name: &str) -> Option<PathBuf> {
    std::iter::once(dir.join(name))
        .chain(
            COMPRESSED_SUFFIXES
                .iter()
                .map(|s| dir.join(format!("{name}{s}"))),
        )
        .find(|p| p.exists())
}

/// `name` without a compressed suffix (`bursts-history.csv.zst` ->
/// `bursts-history.csv`).
pub fn plain_name(name: &str) -> &str {
    COMPRESSED_SUFFIXES
        .iter()
        .find_map(|s| name.strip_suffix(s))
        .unwrap_or(name)
}

/// A file's bytes, decompressed when its name ends in `.zst` or `.gz`.
pub fn read_maybe_compressed(path: &Path) -> Result<Vec<u8>> {
    let raw =
        std::fs::read(path).map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
    let failed = |e| Error::io(format!("decompressing {}", path.display()), e);
    match path.extension().and_then(|x| x.to_str()) {
        Some("zst") => zstd::decode_all(raw.as_slice()).map_err(failed),
        Some("gz") => {
            let mut out = Vec::new();
            std::io::Read::read_to_end(
                &mut flate2::read::MultiGzDecoder::new(raw.as_slice()),
                &mut out,
            )
            .map_err(failed)?;
            Ok(out)
        }
        _ => Ok(raw),
    }
}

/// Compress `path` to `<path>.zst` (through a temporary file, so a kill
/// leaves either the plain file or both, never a torn `.zst` alone) and
/// remove the plain file. Returns the compressed file's path.
pub fn compress_to_zst(path: &Path) -> Result<PathBuf> {
    let zst = PathBuf::from(format!("{}.zst", path.display()));
    let tmp = PathBuf::from(format!("{}.zst.tmp", path.display()));
    {
        let input = std::fs::File::open(path)
            .map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
        let out = std::fs::File::create(&tmp)
            .map_err(|e| Error::io(format!("creating {}", tmp.display()), e))?;
        zstd::stream::copy_encode(input, out, ZSTD_LEVEL)
            .map_err(|e| Error::io(format!("compressing {}", path.display()), e))?;
    }
    std::fs::rename(&tmp, &zst).map_err(|e| Error::io(format!("writing {}", zst.display()), e))?;
    std::fs::remove_file(path).map_err(|e| Error::io(format!("removing {}", path.display()), e))?;
    Ok(zst)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_reads_back_the_same_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let text = "cell,trial\na,0\n".repeat(1000);
        std::fs::write(dir.path().join("t.csv"), &text).unwrap();
        assert_eq!(
            find_table(dir.path(), "t.csv"),
            Some(dir.path().join("t.csv"))
        );
        let zst = compress_to_zst(&dir.path().join("t.csv")).unwrap();
        assert!(!dir.path().join("t.csv").exists());
        assert!(std::fs::metadata(&zst).unwrap().len() < text.len() as u64 / 10);
        assert_eq!(find_table(dir.path(), "t.csv"), Some(zst.clone()));
        assert_eq!(read_maybe_compressed(&zst).unwrap(), text.as_bytes());

        let gz = dir.path().join("u.csv.gz");
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut enc, text.as_bytes()).unwrap();
        std::fs::write(&gz, enc.finish().unwrap()).unwrap();
        assert_eq!(find_table(dir.path(), "u.csv"), Some(gz.clone()));
        assert_eq!(read_maybe_compressed(&gz).unwrap(), text.as_bytes());
        assert_eq!(plain_name("u.csv.gz"), "u.csv");
        assert_eq!(plain_name("t.csv.zst"), "t.csv");
        assert_eq!(find_table(dir.path(), "absent.csv"), None);
    }

    #[test]
    fn a_damaged_compressed_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.csv.zst");
        std::fs::write(&p, b"not zstd at all").unwrap();
        let e = read_maybe_compressed(&p).unwrap_err().to_string();
        assert!(e.contains("t.csv.zst"), "{e}");
    }
}
