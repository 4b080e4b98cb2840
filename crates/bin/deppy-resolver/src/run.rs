//! The `run` subcommand: the Catalog and ActiveResolution controllers, with the admin
//! server (metrics, health, readiness) and optional leader election.

use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use deppy_resolver::controller::{
    self, ApiSettings, Metrics, ServedCatalogs, Settings, error_chain,
};
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

    #[command(flatten)]
    source: content::cli::SourceArgs,

    /// Only handle Catalogs and ActiveResolutions matching this label selector (for
    /// sharding, or several instances on one cluster).
    #[arg(long, env = "WATCH_SELECTOR")]
    watch_selector: Option<String>,

    /// Serve the catalog query API over HTTPS on this address (e.g. `0.0.0.0:8443`); off
    /// when not set. See docs/catalog-api.md.
    #[arg(long, env = "CATALOG_API_ADDRESS")]
    catalog_api_address: Option<std::net::SocketAddr>,

    /// The URL clients reach the catalog query API at, published in each Catalog's
    /// `status.urls.base`. Default: `https://deppy-catalogs.<system namespace>.svc`.
    #[arg(long, env = "CATALOG_API_URL")]
    catalog_api_url: Option<String>,

    /// Directory for the catalog query API's store files (unnamed files: nothing is left
    /// behind). Needs room for every served catalog's uncompressed blobs.
    #[arg(long, env = "CATALOG_API_STORE", default_value = "/tmp")]
    catalog_api_store: std::path::PathBuf,
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
            unpack: self.source.unpack_options(),
            selector: self.watch_selector.clone(),
            content_sweep_interval: self.source.content_sweep_interval,
            api: self.catalog_api_address.map(|address| ApiSettings {
                address,
                store_dir: self.catalog_api_store.clone(),
                base_url: self
                    .catalog_api_url
                    .clone()
                    .unwrap_or_else(|| {
                        format!(
                            "https://{}.{}.svc",
                            controller::api::SERVICE,
                            self.system_namespace
                        )
                    })
                    .trim_end_matches('/')
                    .to_owned(),
            }),
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
