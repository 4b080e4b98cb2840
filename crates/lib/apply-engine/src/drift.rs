//! Drift watches: one label-filtered watch per kind a BundleDeployment has applied. Any
//! change to a managed object (a deletion, an edit, a status update) triggers a reconcile
//! of its owner, which re-applies what drifted and re-evaluates health. Watches are added
//! as new kinds appear and live for the process (a kind rarely disappears, and a watch on
//! a kind with no objects costs one idle connection).

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use futures::StreamExt;
use kube::api::{ApiResource, DynamicObject};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use rukpak_api::BundleDeployment;
use rukpak_api::labels::OWNER_KIND;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::object::{OWNER_KIND_BUNDLE_DEPLOYMENT, owning_bundle_deployment};

/// Starts watches on demand and forwards changes as reconcile requests.
#[derive(Clone)]
pub struct DriftWatches {
    client: Client,
    watched: Arc<Mutex<HashSet<(String, String, String)>>>,
    trigger: mpsc::Sender<ObjectRef<BundleDeployment>>,
    shutdown: CancellationToken,
}

impl DriftWatches {
    /// Creates the registry; reconcile requests arrive on the returned receiver.
    pub fn new(
        client: Client,
        shutdown: CancellationToken,
    ) -> (Self, mpsc::Receiver<ObjectRef<BundleDeployment>>) {
        // Bounded: if reconciles fall behind, watchers wait instead of piling up memory.
        let (trigger, requests) = mpsc::channel(1024);
        let watches = Self {
            client,
            watched: Arc::default(),
            trigger,
            shutdown,
        };
        (watches, requests)
    }

    /// How many kinds are watched.
    pub fn len(&self) -> usize {
        self.watched
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Whether no kind is watched yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Makes sure objects of `resource` are watched.
    pub fn ensure(&self, resource: &ApiResource) {
        let key = (
            resource.group.clone(),
            resource.version.clone(),
            resource.kind.clone(),
        );
        if !self
            .watched
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key)
        {
            return;
        }
        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), resource);
        let config = watcher::Config::default()
            .labels(&format!("{OWNER_KIND}={OWNER_KIND_BUNDLE_DEPLOYMENT}"));
        let trigger = self.trigger.clone();
        let shutdown = self.shutdown.clone();
        let kind = resource.kind.clone();
        tokio::spawn(async move {
            let mut events = watcher(api, config)
                .backoff(kit::watch::WatchBackoff::default())
                .touched_objects()
                .boxed();
            loop {
                let next = tokio::select! {
                    () = shutdown.cancelled() => break,
                    next = events.next() => next,
                };
                match next {
                    Some(Ok(object)) => {
                        if let Some(owner) =
                            owning_bundle_deployment(object.metadata.labels.as_ref())
                            && trigger.send(ObjectRef::new(owner)).await.is_err()
                        {
                            break;
                        }
                    }
                    Some(Err(err)) => {
                        tracing::debug!(kind = %kind, error = %err, "drift watch error; retrying")
                    }
                    None => break,
                }
            }
        });
    }
}
