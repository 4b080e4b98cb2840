//! The `registry-provisioner` binary.
//!
//! Subcommands:
//! - `run`: installs registry+v1 bundles for BundleDeployments whose ProvisionerClass names
//!   the `core-rukpak-io-registry` provisioner, with the shared apply engine.
//! - `render`: converts a bundle directory offline and prints the objects as YAML.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use kit::admin::Admin;
use kit::cli::{AdminArgs, ClientArgs, LeaderElectionArgs, TelemetryArgs};
use kit::metrics::ReconcileMetrics;
use registry_provisioner::{Options, RegistryFormat, render};
use rukpak_provisioner::controller::{self, Context, Settings};
use rukpak_provisioner::drift::DriftWatches;

/// Installs OLM registry+v1 operator bundles, or renders them offline.
#[derive(Debug, Parser)]
#[command(name = "registry-provisioner", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the provisioner for the `core-rukpak-io-registry` class against a cluster.
    Run(Box<RunArgs>),
    /// Convert a bundle directory (manifests/, metadata/annotations.yaml) into the objects
    /// that would be installed, printed as a YAML stream on stdout; no cluster needed.
    ///
    /// Exits 0 on success; prints the error (naming the bundle file) on stderr and exits 1
    /// when the bundle cannot be converted.
    Render(RenderArgs),
}

/// Options of `registry-provisioner run`.
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

/// Options of `registry-provisioner render`.
#[derive(Debug, Args)]
struct RenderArgs {
    /// The bundle directory (holding manifests/ and metadata/annotations.yaml).
    bundle_dir: PathBuf,

    /// The install namespace (default: the CSV's suggested namespace, else
    /// `<package>-system`).
    #[arg(long, value_name = "NS")]
    install_namespace: Option<String>,

    /// The namespaces the operator watches, comma-separated (default: all namespaces when
    /// the CSV supports it, else the install namespace). An empty value means all
    /// namespaces.
    #[arg(long, value_name = "A,B", value_delimiter = ',')]
    target_namespaces: Vec<String>,
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Run(args) => args.run(),
        Command::Render(args) => args.run(),
    }
}

impl RenderArgs {
    fn run(self) -> ExitCode {
        match self.render() {
            Ok(yaml) => {
                let mut stdout = std::io::stdout().lock();
                if let Err(err) = stdout
                    .write_all(yaml.as_bytes())
                    .and_then(|()| stdout.flush())
                {
                    eprintln!("registry-provisioner: failed to write the objects: {err}");
                    return ExitCode::FAILURE;
                }
                ExitCode::SUCCESS
            }
            Err(message) => {
                eprintln!(
                    "registry-provisioner: failed to render bundle {}: {message}",
                    self.bundle_dir.display()
                );
                ExitCode::FAILURE
            }
        }
    }

    fn render(&self) -> Result<String, String> {
        let files = render::read_dir(&self.bundle_dir).map_err(|e| kit::report::error_chain(&e))?;
        let options = Options {
            install_namespace: self.install_namespace.clone(),
            target_namespaces: self.target_namespaces.clone(),
        };
        let objects = registry_provisioner::convert(
            files
                .iter()
                .map(|(path, bytes)| (path.as_str(), bytes.as_slice())),
            &options,
        )
        .map_err(|e| kit::report::error_chain(&e))?;
        render::to_yaml(&objects).map_err(|e| kit::report::error_chain(&e))
    }
}

impl RunArgs {
    fn run(self) -> ExitCode {
        if let Err(err) = kit::telemetry::init(&self.telemetry) {
            eprintln!("registry-provisioner: {}", controller::error_chain(&err));
            return ExitCode::FAILURE;
        }
        let runtime = match tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
        {
            Ok(runtime) => runtime,
            Err(err) => {
                tracing::error!("failed to start the async runtime: {err}");
                return ExitCode::FAILURE;
            }
        };
        match runtime.block_on(self.serve()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(message) => {
                tracing::error!("{message}");
                ExitCode::FAILURE
            }
        }
    }

    async fn serve(self) -> Result<(), String> {
        let chain = |err: &dyn std::error::Error| controller::error_chain(err);
        let shutdown = kit::shutdown::on_signal();
        let config = self.client.config().await.map_err(|e| chain(&e))?;
        let client = kube::Client::try_from(config.clone()).map_err(|e| chain(&e))?;
        let admin = Admin::new();
        let metrics = ReconcileMetrics::register(&admin.registry, "registry_provisioner")
            .map_err(|e| chain(&e))?;
        let server = admin
            .serve(self.admin.address, shutdown.clone())
            .await
            .map_err(|e| chain(&e))?;

        let settings = Settings {
            system_namespace: self.system_namespace.clone(),
            resync: self.resync,
            limits: content::Limits::default(),
            selector: self.watch_selector.clone(),
        };
        let readiness = admin.readiness.clone();
        kit::leader::run_controllers(
            client.clone(),
            &self.leader,
            "registry-provisioner",
            &self.system_namespace,
            &admin.readiness,
            shutdown.clone(),
            |token| async move {
                let (drift, requests) = DriftWatches::new(client.clone(), token.clone());
                let ctx = Arc::new(Context::new(
                    client,
                    config,
                    RegistryFormat,
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
}
