//! Option groups shared by every binary. Flatten them into a binary's `Args` with
//! `#[command(flatten)]`; each flag also reads an environment variable, so the same
//! binary is configured by flags locally and by env in a Deployment.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};
use kube::config::{KubeConfigOptions, Kubeconfig};

/// How to reach the Kubernetes API server. Client and telemetry flags are global: they
/// may be given before or after a subcommand.
#[derive(Debug, Clone, Args)]
pub struct ClientArgs {
    /// Path to a kubeconfig file. Without it: $KUBECONFIG, then ~/.kube/config, then the
    /// in-cluster service account.
    #[arg(long, env = "KUBECONFIG", global = true)]
    pub kubeconfig: Option<PathBuf>,

    /// The kubeconfig context to use instead of its current context.
    #[arg(long, env = "KUBE_CONTEXT", global = true)]
    pub context: Option<String>,
}

/// Failure to build a Kubernetes client from [`ClientArgs`].
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The kubeconfig file could not be read or parsed.
    #[error("failed to read kubeconfig {path}")]
    ReadKubeconfig {
        /// The file that was read.
        path: PathBuf,
        /// Why it failed.
        #[source]
        source: kube::config::KubeconfigError,
    },
    /// The kubeconfig was read but does not describe a usable client.
    #[error("failed to load client configuration")]
    Config(#[source] kube::config::KubeconfigError),
    /// No kubeconfig and no in-cluster environment.
    #[error("failed to infer client configuration (no kubeconfig and not in a cluster)")]
    Infer(#[source] kube::config::InferConfigError),
    /// The client could not be constructed from the configuration.
    #[error("failed to create Kubernetes client")]
    Client(#[source] kube::Error),
}

impl ClientArgs {
    /// Builds the client configuration these options describe, sending the user agent
    /// `<binary>/<version>` (see [`user_agent`]).
    pub async fn config(&self) -> Result<kube::Config, ClientError> {
        let mut config = self.config_without_user_agent().await?;
        if let Ok(agent) = axum::http::HeaderValue::from_str(&user_agent()) {
            config.headers.push((axum::http::header::USER_AGENT, agent));
        }
        Ok(config)
    }

    async fn config_without_user_agent(&self) -> Result<kube::Config, ClientError> {
        let options = KubeConfigOptions {
            context: self.context.clone(),
            ..KubeConfigOptions::default()
        };
        match &self.kubeconfig {
            Some(path) => {
                let kubeconfig =
                    Kubeconfig::read_from(path).map_err(|source| ClientError::ReadKubeconfig {
                        path: path.clone(),
                        source,
                    })?;
                kube::Config::from_custom_kubeconfig(kubeconfig, &options)
                    .await
                    .map_err(ClientError::Config)
            }
            None if self.context.is_some() => kube::Config::from_kubeconfig(&options)
                .await
                .map_err(ClientError::Config),
            None => kube::Config::infer().await.map_err(ClientError::Infer),
        }
    }

    /// Builds a client from these options.
    pub async fn client(&self) -> Result<kube::Client, ClientError> {
        kube::Client::try_from(self.config().await?).map_err(ClientError::Client)
    }
}

/// The user agent of this process's API requests: `<binary>/<version>`, e.g.
/// `rukpak-core/0.1.0`. The API server's audit log records it, which is how API request
/// budgets are told apart per controller (`hack/process-budgets`) and how an administrator
/// finds which controller sends what.
pub fn user_agent() -> String {
    let binary = std::env::current_exe()
        .ok()
        .and_then(|path| path.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "olmv1".to_owned());
    format!("{binary}/{}", env!("CARGO_PKG_VERSION"))
}

/// Where the admin server (`/metrics`, `/livez`, `/readyz`) listens.
#[derive(Debug, Clone, Args)]
pub struct AdminArgs {
    /// Listen address of the admin HTTP server.
    #[arg(
        long = "admin-address",
        env = "ADMIN_ADDRESS",
        default_value = "0.0.0.0:8080"
    )]
    pub address: SocketAddr,
}

/// Log output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Plain,
    /// One JSON object per line, for log collectors.
    Json,
}

/// Logging options.
#[derive(Debug, Clone, Args)]
pub struct TelemetryArgs {
    /// Log format.
    #[arg(long, env = "LOG_FORMAT", value_enum, default_value_t = LogFormat::Plain, global = true)]
    pub log_format: LogFormat,

    /// Log filter in tracing's EnvFilter syntax, e.g. `info` or `info,kube=debug`.
    #[arg(long, env = "LOG_LEVEL", default_value = "info", global = true)]
    pub log_level: String,
}

/// Leader election options. Run several replicas with `--leader-elect`; only the
/// holder of the Lease runs controllers.
#[derive(Debug, Clone, Args)]
pub struct LeaderElectionArgs {
    /// Elect a leader through a Lease before starting controllers.
    #[arg(long, env = "LEADER_ELECT", default_value_t = false)]
    pub leader_elect: bool,

    /// Name of the Lease. Defaults to the binary's name.
    #[arg(long, env = "LEADER_ELECTION_LEASE_NAME")]
    pub leader_election_lease_name: Option<String>,

    /// Namespace of the Lease. Defaults to the binary's system namespace.
    #[arg(long, env = "LEADER_ELECTION_NAMESPACE")]
    pub leader_election_namespace: Option<String>,

    /// How long a Lease is valid without renewal; a standby takes over this long after a
    /// leader dies without releasing it (e.g. `15s`).
    #[arg(long, env = "LEADER_ELECTION_LEASE_DURATION", default_value = "15s", value_parser = parse_lease_duration)]
    pub leader_election_lease_duration: Duration,
}

/// Parses a non-negative duration such as `30s`, `10m` or `1h30m` (a clap value parser).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let parsed: k8s_openapi::jiff::SignedDuration = text
        .parse()
        .map_err(|err| format!("invalid duration {text:?}: {err}"))?;
    Duration::try_from(parsed)
        .map_err(|_| format!("invalid duration {text:?}: must not be negative"))
}

/// Parses a whole-second duration such as `15s` or `1m`, at least 3 seconds so that
/// renewal (a third of the duration before expiry) has room.
pub fn parse_lease_duration(text: &str) -> Result<Duration, String> {
    let duration = parse_duration(text)?;
    if duration.subsec_nanos() != 0 {
        return Err(format!("invalid duration {text:?}: use whole seconds"));
    }
    if duration < Duration::from_secs(3) {
        return Err(format!("lease duration {text:?} is too short: at least 3s"));
    }
    Ok(duration)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct TestArgs {
        #[command(flatten)]
        client: ClientArgs,
        #[command(flatten)]
        admin: AdminArgs,
        #[command(flatten)]
        telemetry: TelemetryArgs,
        #[command(flatten)]
        leader: LeaderElectionArgs,
    }

    #[test]
    fn the_user_agent_names_the_running_binary_and_version() {
        let agent = user_agent();
        let exe = std::env::current_exe().unwrap();
        let binary = exe.file_name().unwrap().to_string_lossy();
        assert_eq!(agent, format!("{binary}/{}", env!("CARGO_PKG_VERSION")));
        assert!(axum::http::HeaderValue::from_str(&agent).is_ok());
    }

    #[test]
    fn option_groups_compose_without_conflicts() {
        use clap::CommandFactory;
        TestArgs::command().debug_assert();
    }

    #[test]
    fn flags_override_defaults() {
        let args = TestArgs::try_parse_from([
            "bin",
            "--kubeconfig",
            "/tmp/kc",
            "--admin-address",
            "127.0.0.1:9000",
            "--log-format",
            "json",
            "--leader-elect",
            "--leader-election-lease-duration",
            "1m",
        ])
        .unwrap();
        assert_eq!(args.client.kubeconfig, Some(PathBuf::from("/tmp/kc")));
        assert_eq!(args.admin.address.port(), 9000);
        assert_eq!(args.telemetry.log_format, LogFormat::Json);
        assert!(args.leader.leader_elect);
        assert_eq!(
            args.leader.leader_election_lease_duration,
            Duration::from_secs(60)
        );
    }

    #[test]
    fn lease_durations_must_be_whole_seconds_and_long_enough() {
        assert_eq!(parse_lease_duration("15s"), Ok(Duration::from_secs(15)));
        assert!(
            parse_lease_duration("2s")
                .unwrap_err()
                .contains("too short")
        );
        assert!(
            parse_lease_duration("3500ms")
                .unwrap_err()
                .contains("whole seconds")
        );
        assert!(
            parse_lease_duration("soon")
                .unwrap_err()
                .contains("invalid duration")
        );
    }
}
