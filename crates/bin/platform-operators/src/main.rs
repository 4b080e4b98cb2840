//! The `platform-operators` binary.
//!
//! Subcommand `run`: the PlatformOperator and aggregated ClusterOperator controllers,
//! with the admin server (metrics, health, readiness) and optional leader election.

use std::process::ExitCode;
use std::time::Duration;

use clap::{ArgAction, Args, Parser, Subcommand};
use kit::admin::Admin;
use kit::cli::{AdminArgs, ClientArgs, LeaderElectionArgs, TelemetryArgs};
use platform_operators::controller::{self, Metrics, Settings, error_chain};

/// Installs operators by package name (PlatformOperators) and reports their health in
/// the platform-operators-aggregated ClusterOperator.
#[derive(Debug, Parser)]
#[command(name = "platform-operators", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the PlatformOperator and aggregated ClusterOperator controllers against a cluster.
    Run(Box<RunArgs>),
}

/// Options of `platform-operators run`.
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

    /// Namespace of the leader lease, listed in the ClusterOperator's relatedObjects
    /// (`openshift-platform-operators` on OpenShift).
    #[arg(
        long,
        env = "SYSTEM_NAMESPACE",
        default_value = "platform-operators-system"
    )]
    system_namespace: String,

    /// Only handle PlatformOperators matching this label selector (and the
    /// ActiveResolutions and BundleDeployments made for them, which carry their labels).
    #[arg(long, env = "WATCH_SELECTOR")]
    watch_selector: Option<String>,

    /// The version reported for `operator` in the ClusterOperator's `versions` (the
    /// release build replaces the placeholder).
    #[arg(long, env = "RELEASE_VERSION", default_value = "0.0.1-snapshot")]
    release_version: String,

    /// Maintain the platform-operators-aggregated ClusterOperator
    /// (`--cluster-operator=false` to run only the PlatformOperator controller).
    #[arg(long, env = "CLUSTER_OPERATOR", default_value_t = true, action = ArgAction::Set)]
    cluster_operator: bool,

    /// How often everything is reconciled again without a change (e.g. `10m`).
    #[arg(long, env = "RESYNC_INTERVAL", default_value = "10m", value_parser = kit::cli::parse_duration)]
    resync: Duration,

    /// How often to look for the ClusterOperator API again while it is not installed.
    #[arg(long, env = "API_RECHECK_INTERVAL", default_value = "30s", value_parser = kit::cli::parse_duration)]
    api_recheck: Duration,

    /// The ServiceAccount (`NAMESPACE/NAME`) PlatformOperators install as: named on each
    /// ActiveResolution (annotation `deppy.io/service-account`), so the wrapper and child
    /// BundleDeployments apply as it. It must be allowed everything an operator's bundle
    /// holds (CRDs, cluster roles, webhooks), and this controller and the
    /// resolution-activator must be allowed to impersonate it. Unset: the provisioner
    /// classes' default identities, which on shared clusters (`--default-service-account`
    /// on the provisioners) are the tenants' and cannot install operators.
    #[arg(long, env = "INSTALL_SERVICE_ACCOUNT")]
    install_service_account: Option<rukpak_api::ServiceAccountRef>,
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Run(args) => args.run(),
    }
}

impl RunArgs {
    /// Runs the controllers until a termination signal; exits 1 on a startup failure.
    fn run(self) -> ExitCode {
        let telemetry = self.telemetry.clone();
        kit::serve::main("platform-operators", &telemetry, || self.serve())
    }

    async fn serve(self) -> Result<(), String> {
        let chain = |err: &(dyn std::error::Error + 'static)| error_chain(err);
        let client = self.client.client().await.map_err(|e| chain(&e))?;
        let admin = Admin::new();
        let metrics = Metrics::register(&admin.registry).map_err(|e| chain(&e))?;
        let settings = Settings {
            system_namespace: self.system_namespace.clone(),
            selector: self.watch_selector.clone(),
            release_version: self.release_version.clone(),
            cluster_operator: self.cluster_operator,
            resync: self.resync,
            api_recheck: self.api_recheck,
            install_service_account: self.install_service_account.clone(),
        };
        let readiness = admin.readiness.clone();
        kit::serve::controllers(
            &admin,
            self.admin.address,
            client.clone(),
            &self.leader,
            "platform-operators",
            &self.system_namespace,
            |token| async move {
                controller::run(client, settings, metrics, &readiness, token).await;
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
    fn defaults_and_the_cluster_operator_switch() {
        let Command::Run(args) = Cli::try_parse_from(["platform-operators", "run"])
            .unwrap()
            .command;
        assert_eq!(args.system_namespace, "platform-operators-system");
        assert!(args.cluster_operator);
        assert_eq!(args.resync, Duration::from_secs(600));
        let Command::Run(args) = Cli::try_parse_from([
            "platform-operators",
            "run",
            "--cluster-operator=false",
            "--watch-selector",
            "olmv1-test=x",
            "--release-version",
            "4.16.0",
        ])
        .unwrap()
        .command;
        assert!(!args.cluster_operator);
        assert_eq!(args.watch_selector.as_deref(), Some("olmv1-test=x"));
        assert_eq!(args.release_version, "4.16.0");
    }
}
