//! The sample operator of `examples/`: small, but it really runs.
//!
//! - It reconciles every `Memcached` (`cache.example.com/v1alpha1`) by recording that it saw
//!   the object's generation: condition `Available=True` and `status.observedGeneration`.
//! - It serves a validating admission webhook (HTTPS, the serving certificate the installer
//!   mounts at `/tmp/k8s-webhook-server/serving-certs`, reloaded when it changes) that
//!   refuses a `spec.size` outside 0–10, and, on the same server, the conversion webhook
//!   bundle 0.2.0 registers for its second version (`v1beta1`, where `spec.size` is
//!   `spec.replicas`).
//! - `/readyz` on the health address answers once the webhook server has a certificate and
//!   the controller has started, so the installer's phase gate waits for a pod that serves.
//!
//! The examples' bundles (`examples/bundles/memcached-operator.*`) run it; `hack/publish-examples`
//! builds its image.

mod controller;
mod conversion;
mod tls;
mod validation;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::http::StatusCode;
use axum::routing::{get, post};
use clap::Parser;

/// Command-line options (each also read from the environment).
#[derive(Debug, Parser)]
#[command(name = "memcached-operator", version, about)]
struct Options {
    /// Where the admission webhook listens (HTTPS).
    #[arg(long, env = "WEBHOOK_ADDRESS", default_value = "0.0.0.0:9443")]
    webhook_address: SocketAddr,
    /// Where `/readyz` and `/healthz` listen (HTTP).
    #[arg(long, env = "HEALTH_ADDRESS", default_value = "0.0.0.0:8081")]
    health_address: SocketAddr,
    /// The directory holding `tls.crt` and `tls.key` for the webhook.
    #[arg(
        long,
        env = "CERT_DIR",
        default_value = "/tmp/k8s-webhook-server/serving-certs"
    )]
    cert_dir: PathBuf,
}

/// Why the operator stopped.
#[derive(Debug, thiserror::Error)]
enum Error {
    #[error("cannot listen on {address}: {source}")]
    Listen {
        address: SocketAddr,
        source: std::io::Error,
    },
    #[error("cannot reach the Kubernetes API: {0}")]
    Client(#[from] kube::Error),
    #[error("{0}")]
    Tls(#[from] tls::Error),
}

#[tokio::main]
async fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    if let Err(err) = run(Options::parse()).await {
        tracing::error!("{err}");
        std::process::exit(1);
    }
}

async fn run(options: Options) -> Result<(), Error> {
    let started = Arc::new(AtomicBool::new(false));
    let certificates = tls::ReloadingCertificate::load(&options.cert_dir)?;
    let client = kube::Client::try_default().await?;

    let webhook = tokio::net::TcpListener::bind(options.webhook_address)
        .await
        .map_err(|source| Error::Listen {
            address: options.webhook_address,
            source,
        })?;
    let health = tokio::net::TcpListener::bind(options.health_address)
        .await
        .map_err(|source| Error::Listen {
            address: options.health_address,
            source,
        })?;
    tracing::info!(
        webhook = %options.webhook_address,
        health = %options.health_address,
        "serving"
    );

    let ready = started.clone();
    let health_routes = Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route(
            "/readyz",
            get(move || {
                let ready = ready.load(Ordering::Relaxed);
                async move {
                    if ready {
                        (StatusCode::OK, "ok")
                    } else {
                        (StatusCode::SERVICE_UNAVAILABLE, "starting")
                    }
                }
            }),
        );
    let webhook_routes = Router::new()
        .route(
            validation::PATH,
            post(|body: axum::body::Bytes| async move {
                let (status, body) = validation::answer(&body);
                (status, [("content-type", "application/json")], body)
            }),
        )
        .route(
            conversion::PATH,
            post(|body: axum::body::Bytes| async move {
                let (status, body) = conversion::answer(&body);
                (status, [("content-type", "application/json")], body)
            }),
        );
    let listener = tls::TlsListener::new(webhook, certificates)?;

    started.store(true, Ordering::Relaxed);
    tokio::select! {
        result = axum::serve(health, health_routes) => result.map_err(|source| Error::Listen { address: options.health_address, source }),
        result = axum::serve(listener, webhook_routes) => result.map_err(|source| Error::Listen { address: options.webhook_address, source }),
        () = controller::run(client) => Ok(()),
        () = shutdown() => Ok(()),
    }
}

/// Resolves on SIGTERM (the kubelet stopping the pod) or SIGINT: the operator holds no state
/// worth finishing, so it exits at once and the pod ends in well under its grace period.
async fn shutdown() {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(term) => term,
        Err(err) => {
            tracing::warn!("cannot watch for SIGTERM ({err}); only SIGINT stops the operator");
            std::future::pending::<()>().await;
            return;
        }
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    tracing::info!("stopping");
}
