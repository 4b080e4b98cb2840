//! Leader election on a `coordination.k8s.io/v1` Lease.
//!
//! Several replicas of a binary may run; only the Lease holder runs controllers. The
//! Lease itself is managed by `kube-lease-manager` (acquire, renew before expiry, take
//! over an expired lease, release). This module adds the process semantics:
//!
//! - while waiting for the lease the process is a ready standby (see
//!   [`Readiness::set_standby`]);
//! - on shutdown the controllers stop first, then the lease is released so a standby
//!   takes over at once instead of after the lease duration;
//! - a leader that loses the lease stops its controllers and returns
//!   [`LeaderError::Lost`]; the binary exits and is restarted clean, rather than
//!   risking two writers with stale caches.

use std::future::Future;
use std::time::Duration;

use kube::Client;
use kube_lease_manager::{LeaseCreateMode, LeaseManagerBuilder, LeaseManagerError, LeaseParams};
use tokio_util::sync::CancellationToken;

use crate::admin::Readiness;
use crate::cli::LeaderElectionArgs;

/// Failure of leader election.
#[derive(Debug, thiserror::Error)]
pub enum LeaderError {
    /// The Lease could not be read or created.
    #[error("failed to set up leader election lease {namespace}/{name}")]
    Setup {
        /// Lease namespace.
        namespace: String,
        /// Lease name.
        name: String,
        /// Why.
        #[source]
        source: LeaseManagerError,
    },
    /// The lease duration cannot leave time to renew.
    #[error("invalid lease duration {0:?}: at least 3 whole seconds")]
    Duration(Duration),
    /// This process led and lost the lease; its controllers were stopped.
    #[error("lost leader election lease {namespace}/{name}")]
    Lost {
        /// Lease namespace.
        namespace: String,
        /// Lease name.
        name: String,
    },
    /// The task renewing the lease ended unexpectedly.
    #[error("leader election for lease {namespace}/{name} stopped unexpectedly")]
    Stopped {
        /// Lease namespace.
        namespace: String,
        /// Lease name.
        name: String,
    },
}

/// Who contends for which Lease.
#[derive(Debug, Clone)]
pub struct LeaderElection {
    /// Lease name.
    pub lease_name: String,
    /// Lease namespace.
    pub namespace: String,
    /// Lease validity without renewal.
    pub duration: Duration,
    /// This process's identity, written as the Lease holder.
    pub identity: String,
}

impl LeaderElection {
    /// Settings from the command line, with the binary's defaults for name and namespace.
    /// The identity is `$POD_NAME` (or the host name) plus a random suffix, so two
    /// processes on one host never share it.
    pub fn from_args(
        args: &LeaderElectionArgs,
        default_name: &str,
        default_namespace: &str,
    ) -> Self {
        Self {
            lease_name: args
                .leader_election_lease_name
                .clone()
                .unwrap_or_else(|| default_name.to_owned()),
            namespace: args
                .leader_election_namespace
                .clone()
                .unwrap_or_else(|| default_namespace.to_owned()),
            duration: args.leader_election_lease_duration,
            identity: default_identity(),
        }
    }

    /// Contends for the lease and runs `work` while leading.
    ///
    /// `work` receives a token that is cancelled on shutdown or when the lease is lost;
    /// it must return soon after. Returns `Ok` after a clean shutdown (or when `work`
    /// returns by itself) and [`LeaderError::Lost`] when leadership was lost.
    pub async fn run<F, Fut>(
        &self,
        client: Client,
        readiness: &Readiness,
        shutdown: CancellationToken,
        work: F,
    ) -> Result<(), LeaderError>
    where
        F: FnOnce(CancellationToken) -> Fut,
        Fut: Future<Output = ()>,
    {
        let secs = self.duration.as_secs();
        if secs < 3 || self.duration.subsec_nanos() != 0 {
            return Err(LeaderError::Duration(self.duration));
        }
        // Renew when a third of the lease remains: two renewal attempts fit before expiry.
        let grace = (secs / 3).max(1);
        let params = LeaseParams::new(self.identity.clone(), secs, grace)
            .with_field_manager(format!("leader-election/{}", self.identity));
        let manager = LeaseManagerBuilder::new(client, self.lease_name.clone())
            .with_namespace(self.namespace.clone())
            .with_create_mode(LeaseCreateMode::AutoCreate)
            .with_parameters(params)
            .build()
            .await
            .map_err(|source| LeaderError::Setup {
                namespace: self.namespace.clone(),
                name: self.lease_name.clone(),
                source,
            })?;
        let (mut leading, watcher) = manager.watch().await;

        readiness.set_standby(true);
        tracing::info!(lease = %self.lease_name, namespace = %self.namespace, identity = %self.identity, "waiting for leader lease");
        loop {
            if *leading.borrow_and_update() {
                break;
            }
            tokio::select! {
                _ = shutdown.cancelled() => {
                    drop(leading);
                    let _ = watcher.await;
                    return Ok(());
                }
                changed = leading.changed() => {
                    if changed.is_err() {
                        return Err(self.stopped());
                    }
                }
            }
        }

        readiness.set_standby(false);
        tracing::info!(lease = %self.lease_name, identity = %self.identity, "acquired leader lease; starting controllers");
        let token = shutdown.child_token();
        let work = work(token.clone());
        tokio::pin!(work);
        let lost = loop {
            tokio::select! {
                () = &mut work => break false,
                changed = leading.changed() => {
                    let still_leading = changed.is_ok() && *leading.borrow_and_update();
                    if !still_leading {
                        tracing::error!(lease = %self.lease_name, identity = %self.identity, "lost leader lease; stopping controllers");
                        token.cancel();
                        (&mut work).await;
                        break true;
                    }
                }
            }
        };
        // Closing the channel makes the watcher release the lease (a no-op when lost).
        drop(leading);
        match watcher.await {
            Ok(Ok(_)) => tracing::info!(lease = %self.lease_name, "released leader lease"),
            Ok(Err(err)) => {
                tracing::warn!(lease = %self.lease_name, error = %err, "failed to release leader lease")
            }
            Err(err) => {
                tracing::warn!(lease = %self.lease_name, error = %err, "leader lease task failed")
            }
        }
        if lost {
            return Err(LeaderError::Lost {
                namespace: self.namespace.clone(),
                name: self.lease_name.clone(),
            });
        }
        Ok(())
    }

    fn stopped(&self) -> LeaderError {
        LeaderError::Stopped {
            namespace: self.namespace.clone(),
            name: self.lease_name.clone(),
        }
    }
}

/// Runs `work` as leader when `args.leader_elect` is set, otherwise directly.
pub async fn run_controllers<F, Fut>(
    client: Client,
    args: &LeaderElectionArgs,
    default_lease_name: &str,
    default_namespace: &str,
    readiness: &Readiness,
    shutdown: CancellationToken,
    work: F,
) -> Result<(), LeaderError>
where
    F: FnOnce(CancellationToken) -> Fut,
    Fut: Future<Output = ()>,
{
    if !args.leader_elect {
        work(shutdown).await;
        return Ok(());
    }
    LeaderElection::from_args(args, default_lease_name, default_namespace)
        .run(client, readiness, shutdown, work)
        .await
}

fn default_identity() -> String {
    use rand::Rng;
    let host = std::env::var("POD_NAME")
        .ok()
        .filter(|name| !name.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .map(|h| h.trim().to_owned())
        })
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "unknown-host".to_owned());
    let suffix: u32 = rand::rng().random();
    format!("{host}-{suffix:08x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_are_unique_per_process_instance() {
        assert_ne!(default_identity(), default_identity());
    }
}
