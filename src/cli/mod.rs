//! Subcommands of the `limitbench` binary that have a file of their own.

pub mod matrix;
pub mod scorecard;
