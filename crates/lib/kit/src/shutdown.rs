//! Graceful shutdown.

use tokio_util::sync::CancellationToken;

/// Returns a token that is cancelled on the first SIGTERM or SIGINT. Hand clones (or
/// child tokens) to every long-running task; each stops cleanly when it fires.
pub fn on_signal() -> CancellationToken {
    let token = CancellationToken::new();
    let trigger = token.clone();
    tokio::spawn(async move {
        wait_for_signal().await;
        tracing::info!("shutdown signal received");
        trigger.cancel();
    });
    token
}

#[cfg(unix)]
async fn wait_for_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
        }
        Err(err) => {
            // Without a SIGTERM handler Kubernetes would kill us hard after the grace
            // period; still honour Ctrl-C.
            tracing::warn!(error = %err, "failed to install SIGTERM handler");
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

#[cfg(not(unix))]
async fn wait_for_signal() {
    let _ = tokio::signal::ctrl_c().await;
}
