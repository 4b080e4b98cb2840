//! `plain-provisioner`: installs plain+v0 bundles for BundleDeployments whose
//! ProvisionerClass names the `core-rukpak-io-plain` provisioner.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, Subcommand};
use kit::admin::Admin;
use kit::cli::{AdminArgs, ClientArgs, LeaderElectionArgs, TelemetryArgs};
use kit::metrics::ReconcileMetrics;
use plain_provisioner::PlainFormat;
use rukpak_provisioner::controller::{self, Context, Settings};
use rukpak_provisioner::drift::DriftWatches;

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
    Run(Box<Args>),
}

/// Options of `plain-provisioner run`.
#[derive(Debug, clap::Args)]
struct Args {
    #[command(flatten)]
    client: ClientArgs,
    #[command(flatten)]
    admin: AdminArgs,
    #[command(flatten)]
    telemetry: TelemetryArgs,
    #[command(flatten)]
    leader: LeaderElectionArgs,

    /// Namespace of RukPak's content store.
    #[arg(long, env = "SYSTEM_NAMESPACE", default_value = "rukpak-system")]
    system_namespace: String,

    /// Only handle BundleDeployments matching this label selector (for sharding, or
    /// several instances on one cluster).
    #[arg(long, env = "WATCH_SELECTOR")]
    watch_selector: Option<String>,

    /// How often an unchanged BundleDeployment is re-checked for drift (e.g. `10m`).
    #[arg(long, env = "RESYNC_INTERVAL", default_value = "10m", value_parser = kit::cli::parse_duration)]
    resync: Duration,
}

#[tokio::main]
async fn main() -> ExitCode {
    let Command::Run(args) = Cli::parse().command;
    let args = *args;
    if let Err(err) = kit::telemetry::init(&args.telemetry) {
        eprintln!(
            "plain-provisioner: {}",
            rukpak_provisioner::controller::error_chain(&err)
        );
        return ExitCode::FAILURE;
    }
    match run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            tracing::error!("{message}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<(), String> {
    let chain = |err: &dyn std::error::Error| controller::error_chain(err);
    let shutdown = kit::shutdown::on_signal();
    let config = args.client.config().await.map_err(|e| chain(&e))?;
    let client = kube::Client::try_from(config.clone()).map_err(|e| chain(&e))?;
    let admin = Admin::new();
    let metrics =
        ReconcileMetrics::register(&admin.registry, "plain_provisioner").map_err(|e| chain(&e))?;
    let server = admin
        .serve(args.admin.address, shutdown.clone())
        .await
        .map_err(|e| chain(&e))?;

    let settings = Settings {
        system_namespace: args.system_namespace.clone(),
        resync: args.resync,
        limits: content::Limits::default(),
        selector: args.watch_selector.clone(),
    };
    let readiness = admin.readiness.clone();
    kit::leader::run_controllers(
        client.clone(),
        &args.leader,
        "plain-provisioner",
        &args.system_namespace,
        &admin.readiness,
        shutdown.clone(),
        |token| async move {
            let (drift, requests) = DriftWatches::new(client.clone(), token.clone());
            let ctx = Arc::new(Context::new(
                client,
                config,
                PlainFormat,
                settings,
                metrics,
                drift,
            ));
            controller::run(ctx, requests, &readiness, token).await;
        },
    )
    .await
    .map_err(|e| chain(&e))?;
    shutdown.cancel();
    let _ = server.task.await;
    Ok(())
}
