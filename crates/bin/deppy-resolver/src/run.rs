//! The `run` subcommand: the Catalog and ActiveResolution controllers, with the admin
//! server (metrics, health, readiness) and optional leader election.

use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use deppy_resolver::controller::{self, Metrics, ServedCatalogs, Settings, error_chain};
use kit::admin::Admin;
use kit::cli::{AdminArgs, ClientArgs, LeaderElectionArgs, TelemetryArgs};

/// Options of `deppy-resolver run`.
#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    #[command(flatten)]
    client: ClientArgs,
    #[command(flatten)]
    admin: AdminArgs,
    #[command(flatten)]
    telemetry: TelemetryArgs,
    #[command(flatten)]
    leader: LeaderElectionArgs,

    /// Namespace of Deppy's content store, image pull secrets and leader lease.
    #[arg(long, env = "SYSTEM_NAMESPACE", default_value = "deppy-system")]
    system_namespace: String,

    /// How often a Catalog image named by tag is fetched again when the Catalog does not
    /// set `pollInterval` (e.g. `10m`). Images named by digest are never fetched again.
    #[arg(long, env = "POLL_INTERVAL", default_value = "10m", value_parser = kit::cli::parse_duration)]
    poll_interval: Duration,

    /// How often content no Catalog references is swept from the content store: a pass
    /// marks it, a later pass deletes what is still unreferenced (e.g. `10m`).
    #[arg(long, env = "CONTENT_SWEEP_INTERVAL", default_value = "10m", value_parser = kit::cli::parse_duration)]
    content_sweep_interval: Duration,

    /// Only handle Catalogs and ActiveResolutions matching this label selector (for
    /// sharding, or several instances on one cluster).
    #[arg(long, env = "WATCH_SELECTOR")]
    watch_selector: Option<String>,

    /// A registry (`host[:port]`) to reach over plain HTTP when it does not speak TLS
    /// (loopback registries always are); repeat or comma-separate for several.
    #[arg(
        long = "plain-http-registry",
        env = "PLAIN_HTTP_REGISTRIES",
        value_delimiter = ','
    )]
    plain_http_registries: Vec<String>,

    /// Networks (comma-separated CIDRs) catalog images may not be fetched from: checked
    /// before connecting. `none` denies nothing.
    #[arg(long, env = "DENIED_NETWORKS", default_value = content::source::DEFAULT_DENIED_NETWORKS)]
    denied_networks: content::source::DeniedNetworks,
}

impl RunArgs {
    /// Runs the controllers until a termination signal; exits 1 on a startup failure.
    pub(crate) fn run(self) -> ExitCode {
        let telemetry = self.telemetry.clone();
        kit::serve::main("deppy-resolver", &telemetry, || self.serve())
    }

    async fn serve(self) -> Result<(), String> {
        let chain = |err: &(dyn std::error::Error + 'static)| error_chain(err);
        let client = self.client.client().await.map_err(|e| chain(&e))?;
        let admin = Admin::new();
        let metrics = Metrics::register(&admin.registry).map_err(|e| chain(&e))?;
        let settings = Settings {
            system_namespace: self.system_namespace.clone(),
            default_poll_interval: self.poll_interval,
            unpack: content::UnpackOptions {
                plain_http_registries: self.plain_http_registries.clone(),
                denied_networks: self.denied_networks.clone(),
                ..content::UnpackOptions::default()
            },
            selector: self.watch_selector.clone(),
            content_sweep_interval: self.content_sweep_interval,
        };
        let readiness = admin.readiness.clone();
        kit::serve::controllers(
            &admin,
            self.admin.address,
            client.clone(),
            &self.leader,
            "deppy-resolver",
            &self.system_namespace,
            |token| async move {
                controller::run(
                    client,
                    settings,
                    metrics,
                    ServedCatalogs::default(),
                    &readiness,
                    token,
                )
                .await;
            },
        )
        .await
    }
}
