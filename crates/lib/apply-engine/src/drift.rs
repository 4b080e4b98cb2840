//! Drift watches: one label-filtered watch per kind a BundleDeployment has applied. Any
//! change to a managed object (a deletion, an edit, a status update) triggers a reconcile
//! of its owner, which re-applies what drifted and re-evaluates health. Watches are added
//! as new kinds appear and live for the process (a kind rarely disappears, and a watch on
//! a kind with no objects costs one idle connection).
//!
//! Each watch also keeps what it saw (without `managedFields`), so that an apply reads the
//! live copy of the objects it applied before, and health reads them too, from memory
//! instead of one GET each per reconcile. CRDs are the exception: they can be megabytes
//! each and are read rarely, so they are watched but not kept.
//!
//! What is kept is each object's JSON, not the parsed tree a reflector store holds: a
//! small object (a ConfigMap, a Service) takes a third of the memory or less as bytes, and a
//! read parses it again in microseconds. At 1,000 BundleDeployments of 5 objects the
//! parsed stores were most of the provisioner's heap (see `KeptObjects`).
//!
//! A watch event that only reports one of this process's own writes (the object at the
//! resourceVersion the write returned) triggers nothing: the reconcile that wrote it
//! already knows. Every other change (someone's edit, a controller's status update, a
//! deletion) does.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use std::sync::RwLock;

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
    /// Every watched kind, with what its watch saw unless the kind is not kept (CRDs).
    watched: Arc<Mutex<HashMap<KindKey, Option<Kept>>>>,
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
    ) -> Option<DynamicObject> {
        let kept = self
            .lock_watched()
            .get(&kind_key(resource))
            .cloned()
            .flatten()?;
        let kept = kept.read().unwrap_or_else(PoisonError::into_inner);
        kept.get(namespace, name)
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
        let kept = (!is_crd(resource)).then(Kept::default);
        {
            let mut watched = self.lock_watched();
            if watched.contains_key(&kind_key(resource)) {
                return;
            }
            watched.insert(kind_key(resource), kept.clone());
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
            let mut events = watch.boxed();
            loop {
                let next = tokio::select! {
                    () = shutdown.cancelled() => break,
                    next = events.next() => next,
                };
                match next {
                    Some(Ok(event)) => {
                        if let Some(kept) = &kept {
                            // Encoded before the lock, so readers wait only for the insert.
                            let change = Change::of(&event);
                            kept.write()
                                .unwrap_or_else(PoisonError::into_inner)
                                .record(change);
                        }
                        let (watcher::Event::Apply(object)
                        | watcher::Event::Delete(object)
                        | watcher::Event::InitApply(object)) = event
                        else {
                            continue;
                        };
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

    fn lock_watched(&self) -> std::sync::MutexGuard<'_, HashMap<KindKey, Option<Kept>>> {
        self.watched.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What the watch of one kind saw, shared between the watch (the only writer) and readers.
type Kept = Arc<RwLock<KeptObjects>>;

/// The objects of one kind as their watch last saw them, each as its JSON (`apiVersion`
/// and `kind` included, `managedFields` not).
///
/// Why bytes: in a reflector store, a small object (the ConfigMap, Secret, ServiceAccount and
/// Service of `hack/bench-flux`) took 1.3–1.9 KiB of maps, strings and `serde_json::Value`s
/// (each key and value its own allocation) plus a key of five strings, against 360–670 bytes
/// of JSON. A read parses the object again; reads happen once per object per reconcile.
#[derive(Debug, Default)]
struct KeptObjects {
    /// Keyed by `namespace/name` (`/name` for cluster-scoped objects).
    current: HashMap<Box<str>, Box<[u8]>>,
    /// A relist in progress: the objects listed so far. It replaces `current` once the
    /// list is complete, so that readers never see a half-listed kind.
    relisting: Option<HashMap<Box<str>, Box<[u8]>>>,
}

/// One watch event as it changes what is kept: objects already keyed and encoded.
enum Change {
    Kept(Box<str>, Box<[u8]>),
    Deleted(String),
    RelistStarted,
    Listed(Box<str>, Box<[u8]>),
    RelistDone,
    /// An object that could not be encoded (it always can: it was just decoded from JSON);
    /// leaving it out only costs a GET later.
    Nothing,
}

impl Change {
    fn of(event: &watcher::Event<DynamicObject>) -> Self {
        let encoded = |object: &DynamicObject| {
            let json = serde_json::to_vec(object).ok()?;
            Some((key_of(object).into_boxed_str(), json.into_boxed_slice()))
        };
        match event {
            watcher::Event::Apply(object) => {
                encoded(object).map_or(Self::Nothing, |(key, json)| Self::Kept(key, json))
            }
            watcher::Event::Delete(object) => Self::Deleted(key_of(object)),
            watcher::Event::Init => Self::RelistStarted,
            watcher::Event::InitApply(object) => {
                encoded(object).map_or(Self::Nothing, |(key, json)| Self::Listed(key, json))
            }
            watcher::Event::InitDone => Self::RelistDone,
        }
    }
}

impl KeptObjects {
    /// Applies one change. Pure apart from `self`.
    fn record(&mut self, change: Change) {
        match change {
            Change::Kept(key, json) => {
                self.current.insert(key, json);
            }
            Change::Deleted(key) => {
                self.current.remove(key.as_str());
                // A map keeps its capacity; give it back once most of it is unused.
                if self.current.capacity() > 64 && self.current.len() < self.current.capacity() / 4
                {
                    self.current.shrink_to_fit();
                }
            }
            Change::RelistStarted => self.relisting = Some(HashMap::new()),
            Change::Listed(key, json) => {
                self.relisting
                    .get_or_insert_with(HashMap::new)
                    .insert(key, json);
            }
            Change::RelistDone => {
                if let Some(listed) = self.relisting.take() {
                    self.current = listed;
                }
            }
            Change::Nothing => {}
        }
    }

    /// The object named `name` in `namespace` (`None`: cluster-scoped), parsed again.
    fn get(&self, namespace: Option<&str>, name: &str) -> Option<DynamicObject> {
        let json = self.current.get(object_key(namespace, name).as_str())?;
        // The bytes are what serde_json wrote from a DynamicObject; reading them back
        // cannot fail short of memory corruption, and `None` only costs a GET.
        serde_json::from_slice(json).ok()
    }
}

fn object_key(namespace: Option<&str>, name: &str) -> String {
    format!("{}/{name}", namespace.unwrap_or_default())
}

fn key_of(object: &DynamicObject) -> String {
    object_key(
        object.metadata.namespace.as_deref(),
        object.metadata.name.as_deref().unwrap_or_default(),
    )
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

    fn see(kept: &mut KeptObjects, event: watcher::Event<DynamicObject>) {
        kept.record(Change::of(&event));
    }

    /// The resourceVersion of the kept object, which must be there.
    fn version(kept: &KeptObjects, namespace: Option<&str>, name: &str) -> Option<String> {
        kept.get(namespace, name)
            .expect("kept")
            .metadata
            .resource_version
    }

    fn labelled(name: &str, namespace: Option<&str>, version: &str) -> DynamicObject {
        let mut object: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": name,
                "resourceVersion": version,
                "labels": {"core.rukpak.io/owner-name": "demo"},
                "annotations": {"note": "odd \"quoted\" text, ünïcode"},
            },
            "data": {"mode": "bench", "nested": "{\"a\": [1, 2]}"},
        }))
        .unwrap();
        object.metadata.namespace = namespace.map(str::to_owned);
        object
    }

    #[test]
    fn kept_objects_read_back_as_they_were_seen() {
        let mut kept = KeptObjects::default();
        let seen = labelled("a", Some("ns"), "3");
        see(&mut kept, watcher::Event::Apply(seen.clone()));
        let read = kept.get(Some("ns"), "a").expect("kept");
        assert_eq!(
            serde_json::to_value(&read).unwrap(),
            serde_json::to_value(&seen).unwrap()
        );
        assert_eq!(read.types.unwrap().kind, "ConfigMap");
        // The namespace is part of the key: the same name elsewhere, or cluster-scoped, is
        // another object.
        assert!(kept.get(Some("other"), "a").is_none());
        assert!(kept.get(None, "a").is_none());
        see(&mut kept, watcher::Event::Apply(labelled("a", None, "4")));
        assert_eq!(kept.current.len(), 2);
        assert_eq!(version(&kept, None, "a").as_deref(), Some("4"));
        // A later event replaces what was seen; a deletion forgets it.
        see(
            &mut kept,
            watcher::Event::Apply(labelled("a", Some("ns"), "5")),
        );
        assert_eq!(version(&kept, Some("ns"), "a").as_deref(), Some("5"));
        see(
            &mut kept,
            watcher::Event::Delete(labelled("a", Some("ns"), "6")),
        );
        assert!(kept.get(Some("ns"), "a").is_none());
        assert_eq!(kept.current.len(), 1);
    }

    #[test]
    fn a_relist_replaces_the_kept_objects_only_once_complete() {
        let mut kept = KeptObjects::default();
        see(
            &mut kept,
            watcher::Event::Apply(labelled("gone", Some("ns"), "1")),
        );
        see(
            &mut kept,
            watcher::Event::Apply(labelled("stays", Some("ns"), "1")),
        );
        see(&mut kept, watcher::Event::Init);
        see(
            &mut kept,
            watcher::Event::InitApply(labelled("stays", Some("ns"), "7")),
        );
        // Mid-list, readers still see the previous state, whole.
        assert!(kept.get(Some("ns"), "gone").is_some());
        assert_eq!(version(&kept, Some("ns"), "stays").as_deref(), Some("1"));
        see(&mut kept, watcher::Event::InitDone);
        // What the list did not return was deleted while the watch was down.
        assert!(kept.get(Some("ns"), "gone").is_none());
        assert_eq!(version(&kept, Some("ns"), "stays").as_deref(), Some("7"));
        assert_eq!(kept.current.len(), 1);
    }

    #[test]
    fn a_kind_emptied_by_deletions_gives_its_room_back() {
        let mut kept = KeptObjects::default();
        for i in 0..1000 {
            see(
                &mut kept,
                watcher::Event::Apply(labelled(&format!("o{i}"), Some("ns"), "1")),
            );
        }
        let full = kept.current.capacity();
        for i in 0..999 {
            see(
                &mut kept,
                watcher::Event::Delete(labelled(&format!("o{i}"), Some("ns"), "2")),
            );
        }
        assert!(kept.get(Some("ns"), "o999").is_some());
        assert!(
            kept.current.capacity() < full / 4,
            "capacity {} of {full}",
            kept.current.capacity()
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
