//! Key names: every trial works on keys nobody used before in the run, so
//! trials never share limiter state.

use super::seeds::fnv;

/// A client id (and so a key) derived from the cell and trial: the same on
/// a resumed run, unique within the run.
pub fn fresh_client(experiment: &str, cell: &str, trial: u64) -> String {
    format!("{experiment}-{:012x}-{trial}", fnv(cell) & 0xffff_ffff_ffff)
}

/// A readable, run-unique client id (cell name plus a process-wide counter),
/// for experiments that need several distinct clients per trial.
pub fn unique_client(tag: &str, cell: &str, trial: u64) -> String {
    format!(
        "{tag}-{}-{trial}-{}",
        cell.replace(|c: char| !c.is_ascii_alphanumeric(), "_"),
        limitbench_core::load::next_request_id()
    )
}
