//! `plain-provisioner`: installs plain+v0 bundles for BundleDeployments whose
//! ProvisionerClass names the `core-rukpak-io-plain` provisioner. The format is this
//! package's library (`plain_provisioner::PlainFormat`), the engine is `apply_engine`; the
//! engine's cluster tests, run with this format, are in `crates/lib/apply-engine/tests`.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use plain_provisioner::PlainFormat;
use provisioner::run::RunArgs;

/// Installs plain+v0 bundles (a flat manifests/ directory of Kubernetes objects).
#[derive(Debug, Parser)]
#[command(version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the provisioner for BundleDeployments of the plain class.
    Run(Box<RunArgs>),
}

fn main() -> ExitCode {
    let Command::Run(args) = Cli::parse().command;
    args.run("plain-provisioner", PlainFormat)
}
