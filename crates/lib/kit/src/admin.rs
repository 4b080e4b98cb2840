//! The admin HTTP server: `/metrics` (Prometheus text format), `/livez` and `/readyz`.
//!
//! Readiness is a set of named gates, one per watch. `/readyz` answers 200 only once
//! every registered gate is open, so a rollout waits until the new process has a
//! complete view of the cluster. A replica on standby for the leader lease is ready:
//! it has nothing to sync, and holding it unready would stall rolling updates.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use prometheus::{Encoder, Registry, TextEncoder};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Named readiness gates shared between controllers and the admin server.
#[derive(Debug, Clone, Default)]
pub struct Readiness {
    inner: Arc<Mutex<ReadinessState>>,
}

#[derive(Debug, Default)]
struct ReadinessState {
    gates: BTreeMap<String, bool>,
    /// When each watch last failed.
    failures: BTreeMap<String, Instant>,
    standby: bool,
}

/// How long a watch counts as failing after its last error. A watch that keeps failing
/// (API server down) errors at least every 4 s ([`crate::watch::WatchBackoff`]), so its
/// gate stays closed; a resumed watch emits nothing, so "no error for this long" is how
/// its recovery shows.
const FAILING_FOR: Duration = Duration::from_secs(6);

/// An open-able readiness gate; see [`Readiness::register`].
#[derive(Debug)]
pub struct ReadyGate {
    name: String,
    readiness: Readiness,
}

impl ReadyGate {
    /// Opens the gate: this watch has synced.
    pub fn open(self) {
        self.readiness.set(&self.name, true);
    }
}

impl Readiness {
    fn state(&self) -> std::sync::MutexGuard<'_, ReadinessState> {
        // A panic while holding this lock cannot leave the map half-written, so a
        // poisoned lock is still safe to use.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn set(&self, name: &str, ready: bool) {
        self.state().gates.insert(name.to_owned(), ready);
    }

    /// Registers a closed gate named `name` (e.g. `watch:bundles`). `/readyz` fails until
    /// the returned gate is opened. Registering a name twice closes it again. To gate on a
    /// watch's first list, see [`crate::watch::track_store`].
    pub fn register(&self, name: impl Into<String>) -> ReadyGate {
        let name = name.into();
        self.set(&name, false);
        ReadyGate {
            name,
            readiness: self.clone(),
        }
    }

    /// Records that the watch `name` just failed: `/readyz` reports not ready until it has
    /// gone [`FAILING_FOR`] without failing again.
    pub fn watch_failed(&self, name: &str) {
        self.state()
            .failures
            .insert(name.to_owned(), Instant::now());
    }

    /// Marks this process as a standby (not leading): ready regardless of the gates.
    pub fn set_standby(&self, standby: bool) {
        self.state().standby = standby;
    }

    /// The names of closed gates, sorted; empty when ready.
    pub fn pending(&self) -> Vec<String> {
        let state = self.state();
        if state.standby {
            return Vec::new();
        }
        let closed = state
            .gates
            .iter()
            .filter(|(_, ready)| !**ready)
            .map(|(name, _)| name.clone());
        let failing = state
            .failures
            .iter()
            .filter(|(_, at)| at.elapsed() < FAILING_FOR)
            .map(|(name, _)| format!("{name} (failing)"));
        closed.chain(failing).collect()
    }

    /// Whether every registered gate is open (or this process is on standby).
    pub fn is_ready(&self) -> bool {
        self.pending().is_empty()
    }
}

/// How often [`heartbeat`] asks the API server whether it answers, while it does.
const HEARTBEAT_EVERY: Duration = Duration::from_secs(5);
/// How long one heartbeat waits for an answer.
const HEARTBEAT_TIMEOUT: Duration = Duration::from_secs(4);
/// After a failed heartbeat, the next one comes this soon: a failure is then recorded at
/// least every `HEARTBEAT_TIMEOUT + HEARTBEAT_RETRY`, within [`FAILING_FOR`], so the
/// process stays not ready for as long as the API server does not answer.
const HEARTBEAT_RETRY: Duration = Duration::from_secs(1);

/// The name under which [`heartbeat`] reports in `/readyz`.
pub const HEARTBEAT: &str = "api-server";

/// Until `shutdown`, asks the API server for its version every few seconds and reports a
/// failure to `readiness` under [`HEARTBEAT`] when it does not answer in time. Watches
/// notice a crashed API server at once (refused connections), but one that hangs keeps
/// every connection open and sends nothing, so without this `/readyz` would stay 200
/// through the hang. A hang is reported within `HEARTBEAT_EVERY + HEARTBEAT_TIMEOUT`
/// (9 s). `/version` is public and cheap, and costs no watch or list.
pub async fn heartbeat(client: kube::Client, readiness: Readiness, shutdown: CancellationToken) {
    loop {
        let answered = tokio::select! {
            () = shutdown.cancelled() => return,
            result = tokio::time::timeout(HEARTBEAT_TIMEOUT, client.apiserver_version()) => {
                matches!(result, Ok(Ok(_)))
            }
        };
        let pause = if answered {
            HEARTBEAT_EVERY
        } else {
            tracing::debug!(timeout = ?HEARTBEAT_TIMEOUT, "the API server did not answer a heartbeat");
            readiness.watch_failed(HEARTBEAT);
            HEARTBEAT_RETRY
        };
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(pause) => {}
        }
    }
}

/// Failure to start the admin server.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    /// The listen address is unavailable.
    #[error("failed to bind admin server to {address}")]
    Bind {
        /// The requested address.
        address: SocketAddr,
        /// Why binding failed.
        #[source]
        source: std::io::Error,
    },
}

/// The admin server's shared state: metrics registry and readiness gates.
#[derive(Debug, Clone, Default)]
pub struct Admin {
    /// Every metric the process exports; controllers register theirs here.
    pub registry: Registry,
    /// Readiness gates consulted by `/readyz`.
    pub readiness: Readiness,
}

/// A running admin server.
#[derive(Debug)]
pub struct RunningAdmin {
    /// The bound address (useful when the requested port was 0).
    pub address: SocketAddr,
    /// The server task; it ends after the shutdown token fires.
    pub task: JoinHandle<std::io::Result<()>>,
}

impl Admin {
    /// Creates empty state.
    pub fn new() -> Self {
        Self::default()
    }

    /// The router, exposed for tests and embedding.
    pub fn router(&self) -> Router {
        Router::new()
            .route("/metrics", get(metrics))
            .route("/livez", get(|| async { "ok" }))
            .route("/readyz", get(readyz))
            .with_state(self.clone())
    }

    /// Binds `address` and serves until `shutdown` is cancelled.
    pub async fn serve(
        &self,
        address: SocketAddr,
        shutdown: CancellationToken,
    ) -> Result<RunningAdmin, AdminError> {
        let listener = TcpListener::bind(address)
            .await
            .map_err(|source| AdminError::Bind { address, source })?;
        let bound = listener
            .local_addr()
            .map_err(|source| AdminError::Bind { address, source })?;
        let router = self.router();
        let task = tokio::spawn(async move {
            axum::serve(listener, router)
                .with_graceful_shutdown(shutdown.cancelled_owned())
                .await
        });
        tracing::info!(address = %bound, "admin server listening");
        Ok(RunningAdmin {
            address: bound,
            task,
        })
    }
}

async fn readyz(State(admin): State<Admin>) -> impl IntoResponse {
    let pending = admin.readiness.pending();
    if pending.is_empty() {
        (StatusCode::OK, "ok".to_owned())
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready: waiting for {}", pending.join(", ")),
        )
    }
}

async fn metrics(State(admin): State<Admin>) -> impl IntoResponse {
    let encoder = TextEncoder::new();
    let mut body = Vec::new();
    match encoder.encode(&admin.registry.gather(), &mut body) {
        Ok(()) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, encoder.format_type().to_owned())],
            body,
        ),
        Err(err) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            [(header::CONTENT_TYPE, "text/plain".to_owned())],
            format!("failed to encode metrics: {err}").into_bytes(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readiness_waits_for_every_gate() {
        let readiness = Readiness::default();
        assert!(readiness.is_ready(), "no gates registered yet");
        let bundles = readiness.register("watch:bundles");
        let deployments = readiness.register("watch:bundledeployments");
        assert_eq!(
            readiness.pending(),
            vec!["watch:bundledeployments", "watch:bundles"]
        );
        bundles.open();
        assert_eq!(readiness.pending(), vec!["watch:bundledeployments"]);
        deployments.open();
        assert!(readiness.is_ready());
    }

    #[test]
    fn a_failing_watch_is_not_ready_until_it_stops_failing() {
        let readiness = Readiness::default();
        readiness.register("watch:bundles").open();
        assert!(readiness.is_ready());
        readiness.watch_failed("watch:bundles");
        assert_eq!(readiness.pending(), ["watch:bundles (failing)"]);
        // Recovery: no error for FAILING_FOR.
        if let Some(at) = readiness.state().failures.get_mut("watch:bundles") {
            *at -= FAILING_FOR;
        }
        assert!(readiness.is_ready());
    }

    #[test]
    fn standby_is_ready_even_with_closed_gates() {
        let readiness = Readiness::default();
        let _gate = readiness.register("watch:x");
        readiness.set_standby(true);
        assert!(readiness.is_ready());
        readiness.set_standby(false);
        assert!(!readiness.is_ready());
    }
}
