//! The `deppy-resolver` binary.
//!
//! Subcommands:
//! - `resolve`: resolve constraints against file-based catalog directories, offline.
//!
//! The ActiveResolution and Catalog controllers will be another subcommand (`run`), next to
//! `resolve`, calling the same library.

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    cli::Cli::parse().run()
}
