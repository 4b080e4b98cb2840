//! The `deppy-resolver` binary.
//!
//! Subcommands:
//! - `resolve`: resolve constraints against file-based catalog directories, offline.
//! - `run`: the Catalog and ActiveResolution controllers, against a cluster.

mod cli;
mod run;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    cli::Cli::parse().run()
}
