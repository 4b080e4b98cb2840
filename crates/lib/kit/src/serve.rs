//! The life of a controller process, the same for every binary: telemetry, the runtime,
//! the admin server, leader election, and shutdown on SIGTERM/SIGINT.

use std::future::Future;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use kube::Client;
use tokio_util::sync::CancellationToken;

use crate::admin::Admin;
use crate::cli::{LeaderElectionArgs, TelemetryArgs};
use crate::report::error_chain;

/// The whole `main` of a controller command: installs telemetry, runs `body` on a
/// multi-threaded runtime, and turns a failure into a logged message and exit status 1.
pub fn main<F, Fut>(binary: &str, telemetry: &TelemetryArgs, body: F) -> ExitCode
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = Result<(), String>>,
{
    if let Err(err) = crate::telemetry::init(telemetry) {
        eprintln!("{binary}: {}", error_chain(&err));
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
    match runtime.block_on(body()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            tracing::error!("{message}");
            ExitCode::FAILURE
        }
    }
}

/// How long controllers may take to stop after SIGTERM or SIGINT before the process exits
/// anyway. A controller still waiting for its first list (API server unreachable) never
/// looks at its shutdown signal, and used to keep the process alive forever; Kubernetes
/// would SIGKILL it after the pod's grace period (30 s by default), this stays inside it.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(15);

/// Serves `admin` at `address` and runs `controllers` (after winning the Lease
/// `lease_name` in `namespace` when leader election is on) until SIGTERM or SIGINT, then
/// stops the admin server. Register metrics on `admin` and clone its readiness for the
/// controllers before calling.
pub async fn controllers<F, Fut>(
    admin: &Admin,
    address: SocketAddr,
    client: Client,
    leader: &LeaderElectionArgs,
    lease_name: &str,
    namespace: &str,
    controllers: F,
) -> Result<(), String>
where
    F: FnOnce(CancellationToken) -> Fut,
    Fut: Future<Output = ()>,
{
    let shutdown = crate::shutdown::on_signal();
    let server = admin
        .serve(address, shutdown.clone())
        .await
        .map_err(|err| error_chain(&err))?;
    let heartbeat = tokio::spawn(crate::admin::heartbeat(
        client.clone(),
        admin.readiness.clone(),
        shutdown.clone(),
    ));
    let work = crate::leader::run_controllers(
        client,
        leader,
        lease_name,
        namespace,
        &admin.readiness,
        shutdown.clone(),
        controllers,
    );
    let deadline = async {
        shutdown.cancelled().await;
        tokio::time::sleep(SHUTDOWN_GRACE).await;
    };
    let result = tokio::select! {
        result = work => result.map_err(|err| error_chain(&err)),
        () = deadline => {
            tracing::warn!(grace = ?SHUTDOWN_GRACE, "controllers did not stop in time after the termination signal; exiting anyway");
            Ok(())
        }
    };
    shutdown.cancel();
    let _ = server.task.await;
    let _ = heartbeat.await;
    result
}
