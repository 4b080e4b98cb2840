//! Drift watches: one label-filtered watch per kind a BundleDeployment has applied. Any
//! change to a managed object (a deletion, an edit, a status update) triggers a reconcile
//! of its owner, which re-applies what drifted and re-evaluates health. Watches are added
//! as new kinds appear and live for the process (a kind rarely disappears, and a watch on
//! a kind with no objects costs one idle connection).
//!
//! Each watch also keeps what it saw (a reflector store, without `managedFields`), so that
//! an apply reads the live copy of the objects it applied before, and health reads them
//! too, from memory instead of one GET each per reconcile. CRDs are the exception: they
//! can be megabytes each and are read rarely, so they are watched but not kept.
//!
//! A watch event that only reports one of this process's own writes (the object at the
//! resourceVersion the write returned) triggers nothing: the reconcile that wrote it
//! already knows. Every other change (someone's edit, a controller's status update, a
//! deletion) does.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use futures::StreamExt;
use kube::api::{ApiResource, DynamicObject};
use kube::runtime::reflector::{ObjectRef, Store, store::Writer};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use rukpak_api::BundleDeployment;
use rukpak_api::labels::OWNER_KIND;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::object::{OWNER_KIND_BUNDLE_DEPLOYMENT, owning_bundle_deployment};

/// At most this many writes wait for their watch event to be recognised. An entry is
/// removed when its event arrives; a write whose event never comes (the object changed
/// again first) stays until the map is full and is cleared, which only costs a reconcile.
const MAX_OWN_WRITES: usize = 16_384;

/// (group, version, kind) of a watched kind.
type KindKey = (String, String, String);
/// (group, kind, namespace, name) of one object.
type ObjectId = (String, String, Option<String>, String);

/// Starts watches on demand, forwards changes as reconcile requests, and keeps what the
/// watches saw for reads.
#[derive(Clone)]
pub struct DriftWatches {
    client: Client,
    /// Every watched kind, with its store unless the kind is not kept (CRDs).
    watched: Arc<Mutex<HashMap<KindKey, Option<Store<DynamicObject>>>>>,
    /// The resourceVersion each of this process's recent writes returned.
    own_writes: Arc<Mutex<HashMap<ObjectId, String>>>,
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
            own_writes: Arc::default(),
            trigger,
            shutdown,
        };
        (watches, requests)
    }

    /// How many kinds are watched.
    pub fn len(&self) -> usize {
        self.lock_watched().len()
    }

    /// Whether no kind is watched yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The live object as the watch of its kind last saw it, if that kind is watched and
    /// kept and the object carries the owner labels. `None` says nothing about whether the
    /// object exists (objects of others are not watched): read it from the API server.
    pub fn cached(
        &self,
        resource: &ApiResource,
        namespace: Option<&str>,
        name: &str,
    ) -> Option<Arc<DynamicObject>> {
        let store = self
            .lock_watched()
            .get(&kind_key(resource))
            .cloned()
            .flatten()?;
        let mut key = ObjectRef::new_with(name, resource.clone());
        if let Some(namespace) = namespace {
            key = key.within(namespace);
        }
        store.get(&key)
    }

    /// Remembers that this process wrote `object` (as the server returned it), so the watch
    /// event reporting exactly that write does not trigger a reconcile.
    pub fn wrote(&self, resource: &ApiResource, object: &DynamicObject) {
        let Some(version) = object.metadata.resource_version.clone() else {
            return;
        };
        let mut own = self
            .own_writes
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if own.len() >= MAX_OWN_WRITES {
            own.clear();
        }
        own.insert(object_id(resource, object), version);
    }

    /// Makes sure objects of `resource` are watched.
    pub fn ensure(&self, resource: &ApiResource) {
        let keep = !is_crd(resource);
        let (store, writer) = if keep {
            let writer = Writer::new(resource.clone());
            (Some(writer.as_reader()), Some(writer))
        } else {
            (None, None)
        };
        {
            let mut watched = self.lock_watched();
            if watched.contains_key(&kind_key(resource)) {
                return;
            }
            watched.insert(kind_key(resource), store);
        }
        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), resource);
        let config = watcher::Config::default()
            .labels(&format!("{OWNER_KIND}={OWNER_KIND_BUNDLE_DEPLOYMENT}"));
        let trigger = self.trigger.clone();
        let shutdown = self.shutdown.clone();
        let own_writes = self.own_writes.clone();
        let resource = resource.clone();
        let types = kube::api::TypeMeta {
            api_version: resource.api_version.clone(),
            kind: resource.kind.clone(),
        };
        tokio::spawn(async move {
            let watch = watcher(api, config)
                .backoff(kit::watch::WatchBackoff::default())
                .modify(move |object: &mut DynamicObject| {
                    // Server-side apply bookkeeping: never read here, often the largest
                    // part of a small object.
                    object.metadata.managed_fields = None;
                    // Items of a list carry no apiVersion and kind; what a reader compares
                    // with a desired object must.
                    object.types = Some(types.clone());
                });
            let mut events = match writer {
                Some(writer) => watch.reflect(writer).touched_objects().boxed(),
                None => watch.touched_objects().boxed(),
            };
            loop {
                let next = tokio::select! {
                    () = shutdown.cancelled() => break,
                    next = events.next() => next,
                };
                match next {
                    Some(Ok(object)) => {
                        if is_own_write(&own_writes, &resource, &object) {
                            continue;
                        }
                        if let Some(owner) =
                            owning_bundle_deployment(object.metadata.labels.as_ref())
                            && trigger.send(ObjectRef::new(owner)).await.is_err()
                        {
                            break;
                        }
                    }
                    Some(Err(err)) => {
                        tracing::debug!(kind = %resource.kind, error = %err, "drift watch error; retrying")
                    }
                    None => break,
                }
            }
        });
    }

    fn lock_watched(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<KindKey, Option<Store<DynamicObject>>>> {
        self.watched.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Whether `object` is exactly what one of this process's writes returned; forgets the
/// write either way once its object was seen again.
fn is_own_write(
    own_writes: &Mutex<HashMap<ObjectId, String>>,
    resource: &ApiResource,
    object: &DynamicObject,
) -> bool {
    let id = object_id(resource, object);
    let mut own = own_writes.lock().unwrap_or_else(PoisonError::into_inner);
    match (own.get(&id), &object.metadata.resource_version) {
        (Some(written), Some(seen)) if written == seen => {
            own.remove(&id);
            // A deleted object at the version we wrote is still news: something deleted it.
            object.metadata.deletion_timestamp.is_none()
        }
        _ => false,
    }
}

fn kind_key(resource: &ApiResource) -> KindKey {
    (
        resource.group.clone(),
        resource.version.clone(),
        resource.kind.clone(),
    )
}

fn object_id(resource: &ApiResource, object: &DynamicObject) -> ObjectId {
    (
        resource.group.clone(),
        resource.kind.clone(),
        object.metadata.namespace.clone(),
        object.metadata.name.clone().unwrap_or_default(),
    )
}

fn is_crd(resource: &ApiResource) -> bool {
    resource.group == "apiextensions.k8s.io" && resource.kind == "CustomResourceDefinition"
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::GroupVersionKind;

    fn object(name: &str, version: &str) -> DynamicObject {
        let mut object = DynamicObject::new(
            name,
            &ApiResource::from_gvk(&GroupVersionKind::gvk("", "v1", "ConfigMap")),
        )
        .within("ns");
        object.metadata.resource_version = Some(version.to_owned());
        object
    }

    #[test]
    fn only_the_event_of_exactly_the_version_written_is_recognised_once() {
        let resource = ApiResource::from_gvk(&GroupVersionKind::gvk("", "v1", "ConfigMap"));
        let own = Mutex::new(HashMap::new());
        own.lock()
            .unwrap()
            .insert(object_id(&resource, &object("a", "5")), "5".to_owned());
        // Someone else's later change is news.
        assert!(!is_own_write(&own, &resource, &object("a", "6")));
        own.lock()
            .unwrap()
            .insert(object_id(&resource, &object("a", "7")), "7".to_owned());
        assert!(
            !is_own_write(&own, &resource, &object("b", "7")),
            "another object"
        );
        assert!(is_own_write(&own, &resource, &object("a", "7")));
        assert!(
            !is_own_write(&own, &resource, &object("a", "7")),
            "recognised only once: a relist later is a new look"
        );
    }

    #[test]
    fn a_deletion_is_never_taken_for_an_own_write() {
        let resource = ApiResource::from_gvk(&GroupVersionKind::gvk("", "v1", "ConfigMap"));
        let own = Mutex::new(HashMap::new());
        let mut deleted = object("a", "9");
        own.lock()
            .unwrap()
            .insert(object_id(&resource, &deleted), "9".to_owned());
        deleted.metadata.deletion_timestamp = Some(
            k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(Default::default()),
        );
        assert!(!is_own_write(&own, &resource, &deleted));
    }
}
