//! The `resolution-activator` binary.
//!
//! Subcommands:
//! - `run`: the ActiveResolution controller, against a cluster.

use std::process::ExitCode;
use std::sync::Arc;

use clap::{Args, Parser, Subcommand};
use kit::admin::Admin;
use kit::cli::{AdminArgs, ClientArgs, LeaderElectionArgs, TelemetryArgs};
use resolution_activator::{Classes, Context, Metrics, Settings, controller};

/// Turns resolved ActiveResolutions into ResolveSet bundles that RukPak installs as one unit.
#[derive(Debug, Parser)]
#[command(name = "resolution-activator", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the ActiveResolution controller against a cluster.
    Run(Box<RunArgs>),
}

/// Options of `resolution-activator run`.
#[derive(Debug, Args)]
struct RunArgs {
    #[command(flatten)]
    client: ClientArgs,
    #[command(flatten)]
    admin: AdminArgs,
    #[command(flatten)]
    telemetry: TelemetryArgs,
    #[command(flatten)]
    leader: LeaderElectionArgs,

    /// RukPak's system namespace: where ResolveSet ConfigMaps are written and the leader
    /// lease lives.
    #[arg(long, env = "SYSTEM_NAMESPACE", default_value = "rukpak-system")]
    system_namespace: String,

    /// Deppy's system namespace: where deppy-resolver stores Catalog content.
    #[arg(long, env = "CATALOG_NAMESPACE", default_value = "deppy-system")]
    catalog_namespace: String,

    /// Only handle ActiveResolutions (and read Catalogs) matching this label selector.
    #[arg(long, env = "WATCH_SELECTOR")]
    watch_selector: Option<String>,

    /// How many ResolveSet ConfigMaps to keep per resolution, the current one included.
    #[arg(long, env = "HISTORY", default_value_t = 5, value_parser = clap::value_parser!(u16).range(1..))]
    history: u16,

    /// The activator classes to serve (values of the `deppy.io/activator-class`
    /// annotation), comma separated.
    #[arg(
        long,
        env = "CLASSES",
        default_value = "PlatformOperator",
        value_delimiter = ','
    )]
    classes: Vec<String>,
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Run(args) => args.run(),
    }
}

impl RunArgs {
    /// Runs the controller until a termination signal; exits 1 on a startup failure.
    fn run(self) -> ExitCode {
        let telemetry = self.telemetry.clone();
        kit::serve::main("resolution-activator", &telemetry, || self.serve())
    }

    async fn serve(self) -> Result<(), String> {
        let chain = |err: &(dyn std::error::Error + 'static)| kit::error_chain(err);
        let classes = Classes::select(&self.classes).map_err(|e| chain(&e))?;
        let client = self.client.client().await.map_err(|e| chain(&e))?;
        let admin = Admin::new();
        let metrics = Metrics::register(&admin.registry).map_err(|e| chain(&e))?;
        let settings = Settings {
            system_namespace: self.system_namespace.clone(),
            catalog_namespace: self.catalog_namespace.clone(),
            selector: self.watch_selector.clone(),
            history: usize::from(self.history),
            limits: content::Limits::default(),
        };
        let readiness = admin.readiness.clone();
        kit::serve::controllers(
            &admin,
            self.admin.address,
            client.clone(),
            &self.leader,
            "resolution-activator",
            &self.system_namespace,
            |token| async move {
                let ctx = Arc::new(Context::new(client, settings, classes, metrics));
                controller::run(ctx, &readiness, token).await;
            },
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn run_has_the_documented_defaults() {
        let cli = Cli::try_parse_from(["resolution-activator", "run"]).unwrap();
        let Command::Run(args) = cli.command;
        assert_eq!(args.system_namespace, "rukpak-system");
        assert_eq!(args.catalog_namespace, "deppy-system");
        assert_eq!(args.history, 5);
        assert_eq!(args.classes, ["PlatformOperator"]);
        assert!(args.watch_selector.is_none());
        assert!(Cli::try_parse_from(["resolution-activator", "run", "--history", "0"]).is_err());
    }
}
