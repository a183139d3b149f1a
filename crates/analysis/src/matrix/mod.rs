//! The claims of a matrix run side by side: one column per server.
//!
//! The expectation of a claim is the study's, on the study's server
//! (Redis 7.0): that column is judged against the publication as any run
//! is. On another server the row says whether the finding holds there (the
//! same verdict as on the study's server) and, where it does not, what the
//! server does instead: its value, the change against the study's server,
//! and the server's own default of the setting the finding depends on.
//!
//! This module takes each server's judged claims (the application analyses
//! every server's sub-run folder) and the run folder's own files (each
//! server's `noise.csv`, `manifest.json`, `scorecard.csv`); it never starts
//! a server.
//!
//! A difference between servers counts only if it survives a rerun of the
//! study's server (`--rerun`, column [`STUDY_RERUN`]): the same verdict
//! there, and the other server's value further from the study server's
//! than the rerun's (`MatrixRow::survives`).
//!
//! - `servers.rs`: what the matrix knows of a server (its column, its
//!   identity) and the table of the servers;
//! - `rows.rs`: the rows (a claim, a cell per server) and a cell's text;
//! - `signals.rs`: what differs between servers, in words (the top of
//!   `matrix-claims.md`);
//! - `heatmaps.rs`: the claims by servers and each server's scorecard as
//!   heatmaps (colour: the verdict; the value in the cell);
//! - `tables.rs`: the claims tables, at a glance and in full;
//! - `figure.rs`: the figure of the claims that differ (value per server,
//!   published value and passing band);
//! - `scorecard.rs`: the servers' scorecards read and side by side;
//! - `write.rs`: `matrix-claims.md` / `.csv`, `matrix-scorecard.md` and
//!   the figures (`figures/matrix-claims-heatmap.*`,
//!   `matrix-scorecard-<server>.*`, `matrix-differ.*`).

pub mod figure;
pub mod heatmaps;
pub mod rows;
pub mod scorecard;
pub mod servers;
pub mod signals;
pub mod tables;
pub mod write;

pub use figure::differ_figure;
pub use heatmaps::{CLAIMS_HEATMAP, claims_heatmap, scorecard_heatmap_name, scorecard_heatmaps};
pub use rows::{MatrixCell, MatrixRow, cell_text, default_note, rows};
pub use scorecard::scorecard_table;
pub use servers::{
    Identity, STUDY_RERUN, STUDY_SERVER, ServerColumn, noise_of, run_seconds_of, servers_table,
};
pub use tables::{claims_table, compact_table};
pub use write::write_matrix;
