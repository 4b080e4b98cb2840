//! `<provisioner> run`: the options and the process every provisioner binary shares; a
//! provisioner binary only names its [`BundleFormat`].

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use kit::admin::Admin;
use kit::cli::{AdminArgs, ClientArgs, LeaderElectionArgs, TelemetryArgs};
use kit::metrics::ReconcileMetrics;

use crate::controller::{self, Context, Settings};
use crate::format::BundleFormat;
use apply_engine::drift::DriftWatches;

/// Options of `<provisioner> run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
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
    pub system_namespace: String,

    /// Only handle BundleDeployments matching this label selector (for sharding, or
    /// several instances on one cluster).
    #[arg(long, env = "WATCH_SELECTOR")]
    pub watch_selector: Option<String>,

    /// The ServiceAccount (`NAMESPACE/NAME`) a BundleDeployment without
    /// `spec.serviceAccount` applies as, by impersonation. Unset: the provisioner's own
    /// identity (single-tenant clusters). Set it on shared clusters to an account with
    /// only the rights tenants may have.
    #[arg(long, env = "DEFAULT_SERVICE_ACCOUNT")]
    pub default_service_account: Option<rukpak_api::ServiceAccountRef>,

    /// Namespace of the ConfigMap `bundle-identities`, where the default identity is
    /// published for the admission policy `bundle-identity.core.rukpak.io`: the namespace
    /// its binding's `paramRef` names. Unset: the system namespace.
    #[arg(long, env = "IDENTITY_NAMESPACE")]
    pub identity_namespace: Option<String>,

    /// At most this many BundleDeployments are reconciled at once (0: no limit).
    #[arg(long, env = "MAX_CONCURRENT_RECONCILES", default_value_t = 8)]
    pub max_concurrent_reconciles: u16,

    /// Triggers of one BundleDeployment within this time of each other make one reconcile
    /// (e.g. `250ms`; `0s` reconciles on every trigger at once).
    #[arg(long, env = "RECONCILE_DEBOUNCE", default_value = "250ms", value_parser = kit::cli::parse_duration)]
    pub debounce: Duration,

    /// At most this many MiB of unpacked bundle content are kept in memory between
    /// reconciles, so an unchanged bundle is not read from the content store and unpacked
    /// again every time (0 keeps none).
    #[arg(long, env = "CONTENT_CACHE_MIB", default_value_t = 32)]
    pub content_cache_mib: u64,

    /// How often an unchanged BundleDeployment is re-checked for drift (e.g. `10m`).
    #[arg(long, env = "RESYNC_INTERVAL", default_value = "10m", value_parser = kit::cli::parse_duration)]
    pub resync: Duration,

    /// How long the built-in webhook CA and serving certificates are valid (e.g. `17520h`, two years);
    /// each is renewed when a third of this is left, the CA with an overlap in which both
    /// the old and the new CA are trusted.
    #[arg(long, env = "CERTIFICATE_VALIDITY", default_value = "17520h", value_parser = kit::cli::parse_duration)]
    pub certificate_validity: Duration,
}

impl RunArgs {
    /// Runs the provisioner of `format` as the process `binary` until a termination
    /// signal; metrics are prefixed with `binary` (`-` becomes `_`).
    pub fn run<F: BundleFormat>(self, binary: &'static str, format: F) -> ExitCode {
        let telemetry = self.telemetry.clone();
        kit::serve::main(binary, &telemetry, || self.serve(binary, format))
    }

    async fn serve<F: BundleFormat>(self, binary: &'static str, format: F) -> Result<(), String> {
        let chain = |err: &(dyn std::error::Error + 'static)| kit::error_chain(err);
        let config = self.client.config().await.map_err(|e| chain(&e))?;
        let client = kube::Client::try_from(config.clone()).map_err(|e| chain(&e))?;
        let admin = Admin::new();
        let metrics = ReconcileMetrics::register(&admin.registry, &binary.replace('-', "_"))
            .map_err(|e| chain(&e))?;
        let settings = Settings {
            system_namespace: self.system_namespace.clone(),
            resync: self.resync,
            limits: content::Limits::default(),
            selector: self.watch_selector.clone(),
            default_service_account: self.default_service_account.clone(),
            identity_namespace: self
                .identity_namespace
                .clone()
                .unwrap_or_else(|| self.system_namespace.clone()),
            concurrency: self.max_concurrent_reconciles,
            certificates: crate::certificates::Policy::for_validity(self.certificate_validity),
            debounce: self.debounce,
            content_cache_bytes: self.content_cache_mib.saturating_mul(1024 * 1024),
        };
        let readiness = admin.readiness.clone();
        kit::serve::controllers(
            &admin,
            self.admin.address,
            client.clone(),
            &self.leader,
            binary,
            &self.system_namespace,
            |token| async move {
                let (drift, requests) = DriftWatches::new(client.clone(), token.clone());
                let ctx = Arc::new(Context::new(
                    client, config, format, settings, metrics, drift,
                ));
                controller::run(ctx, requests, &readiness, token).await;
            },
        )
        .await
    }
}
