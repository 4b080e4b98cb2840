//! Watch settings shared by the controllers.

use std::fmt::Debug;
use std::hash::{Hash, Hasher};
use std::time::Duration;

use futures::StreamExt;
use kube::runtime::WatchStreamExt;
use kube::runtime::controller::Controller;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::utils::Backoff;
use kube::runtime::watcher;
use kube::{Api, Resource};
use serde::de::DeserializeOwned;

use crate::admin::Readiness;

/// The backoff of every watch and controller trigger stream: from 250 ms doubling to at
/// most 4 s (each delay a random time in its upper half), and back to 250 ms after any
/// success.
///
/// kube-runtime's default grows to 30 s and only resets after 120 s without an error. An
/// API server restart produces a burst of errors (refused connections, then `410 Gone` for
/// every resumed watch, and a controller's trigger stream backs off again on top of its
/// watches'), so a controller used to resume 30 s to 3 min after the API server was back.
/// A short cap keeps that to seconds; a failing API server still sees at most one watch
/// attempt per watch every 2-4 s.
#[derive(Debug, Clone)]
pub struct WatchBackoff {
    next: Duration,
}

impl WatchBackoff {
    const FIRST: Duration = Duration::from_millis(250);
    const MAX: Duration = Duration::from_secs(4);
}

impl Default for WatchBackoff {
    fn default() -> Self {
        Self { next: Self::FIRST }
    }
}

impl Iterator for WatchBackoff {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        let ceiling = self.next;
        self.next = (self.next * 2).min(Self::MAX);
        let half = ceiling / 2;
        let spread = u64::try_from((ceiling - half).as_millis()).unwrap_or(0);
        Some(half + Duration::from_millis(rand::random_range(0..=spread)))
    }
}

impl Backoff for WatchBackoff {
    fn reset(&mut self) {
        self.next = Self::FIRST;
    }
}

/// Watch everything, or with `selector` only objects matching that label selector (to
/// shard a kind over several instances, or to run several on one cluster).
pub fn config(selector: Option<&str>) -> watcher::Config {
    match selector {
        Some(selector) => watcher::Config::default().labels(selector),
        None => watcher::Config::default(),
    }
}

/// A predicate (for `predicate_filter`) that changes when what an author writes changes:
/// the spec (through `metadata.generation`, which deletion also bumps), labels,
/// annotations and finalizers; never when only the status does. Filter a controller's
/// own kind with it, so its status writes do not reconcile it again.
pub fn authored<K: Resource>(object: &K) -> Option<u64> {
    let meta = object.meta();
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    meta.finalizers.hash(&mut hasher);
    authored_hash(object, hasher)
}

/// [`authored`] without finalizers: for a controller that adds its own finalizer and goes
/// on in the same reconcile (so the finalizer's watch event is not a reason to reconcile
/// again). Finalizers others add or remove do not concern it: deletion is seen through
/// the deletion timestamp.
pub fn authored_except_finalizers<K: Resource>(object: &K) -> Option<u64> {
    authored_hash(object, std::collections::hash_map::DefaultHasher::new())
}

fn authored_hash<K: Resource>(object: &K, mut hasher: impl Hasher) -> Option<u64> {
    let meta = object.meta();
    meta.generation.hash(&mut hasher);
    meta.labels.hash(&mut hasher);
    meta.annotations.hash(&mut hasher);
    meta.deletion_timestamp.is_some().hash(&mut hasher);
    Some(hasher.finish())
}

/// A controller for `K` that runs when what an author writes changes (the spec, seen
/// through `metadata.generation`; labels; annotations; finalizers; deletion, which bumps the
/// generation) and never because of a status write.
///
/// A controller that writes its own object's status must be built this way: with
/// `Controller::new`, every status write is a watch event that reconciles the object
/// again at once, so a failure that writes status retries immediately, bypassing the
/// backoff and "wait for a change" its reconcile returned (the hot loop of issue #18).
/// Progress of other objects arrives through `owns`/`watches`, and the controller's own
/// timers through the `Action` it returns.
///
/// `/readyz` (through `readiness`) waits for the watch's initial list under `name` and
/// reports not ready while the watch fails.
pub fn on_spec_changes<K>(
    api: Api<K>,
    config: watcher::Config,
    readiness: &Readiness,
    name: &str,
) -> Controller<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Default + Eq + Hash + Clone + Unpin,
{
    controller(api, config, readiness, name, Some(authored::<K>))
}

/// [`on_spec_changes`] for a controller that adds its finalizer itself and goes on in the
/// same reconcile (instead of kube-runtime's `finalizer`, which waits for the finalizer's
/// watch event): finalizer changes do not trigger it (see [`authored_except_finalizers`]).
pub fn on_spec_changes_except_finalizers<K>(
    api: Api<K>,
    config: watcher::Config,
    readiness: &Readiness,
    name: &str,
) -> Controller<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Default + Eq + Hash + Clone + Unpin,
{
    controller(
        api,
        config,
        readiness,
        name,
        Some(authored_except_finalizers::<K>),
    )
}

/// A controller for `K` that runs on every change of it, status included (for kinds
/// whose status another component writes, e.g. the activator reading deppy-resolver's
/// `Resolved`), with [`WatchBackoff`] on its watch and trigger stream (kube-runtime's
/// `Controller::new` uses its 30 s default) and `/readyz` reporting on it under `name`.
pub fn on_every_change<K>(
    api: Api<K>,
    config: watcher::Config,
    readiness: &Readiness,
    name: &str,
) -> Controller<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Default + Eq + Hash + Clone + Unpin,
{
    controller(api, config, readiness, name, None)
}

fn controller<K>(
    api: Api<K>,
    config: watcher::Config,
    readiness: &Readiness,
    name: &str,
    predicate: Option<fn(&K) -> Option<u64>>,
) -> Controller<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Default + Eq + Hash + Clone + Unpin,
{
    let (reader, writer): (Store<K>, _) = reflector::store();
    let changes = cached(api, config, writer, readiness, name).applied_objects();
    let controller = if let Some(predicate) = predicate {
        Controller::for_stream(
            changes.predicate_filter(predicate, Default::default()),
            reader,
        )
    } else {
        Controller::for_stream(changes, reader)
    };
    controller.trigger_backoff(WatchBackoff::default())
}

/// The watch of every `K` that `config` selects, feeding the store of `writer`: with the
/// watch backoff, failures reported to `readiness` under `name`, the `/readyz` gate `name`
/// opening on the first list, and no `managedFields` kept (see [`drop_managed_fields`]).
/// Every store of the controllers is filled this way.
pub fn cached<K>(
    api: Api<K>,
    config: watcher::Config,
    writer: reflector::store::Writer<K>,
    readiness: &Readiness,
    name: &str,
) -> impl futures::Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + 'static
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Default + Eq + Hash + Clone + Send + Sync,
{
    track_store(readiness, name, writer.as_reader());
    watcher(api, config)
        .backoff(WatchBackoff::default())
        .inspect(report_failures(readiness, name))
        .modify(drop_managed_fields)
        .reflect(writer)
}

/// For `.modify(...)` on a watch stream, before the store it feeds: drops `managedFields`.
/// No controller here reads them, and on a small object they are most of its size (one
/// entry per field manager listing every field it owns); a store of 1,000
/// BundleDeployments held them 1,000 times.
pub fn drop_managed_fields<K: Resource>(object: &mut K) {
    object.meta_mut().managed_fields = None;
}

/// Waits until `store` has received its first list; an error if its writer (and so its
/// watch) went first.
///
/// Use this, never a bare `Store::wait_until_ready().await`, wherever more than one task can
/// wait on the same store (every reconcile of a controller does): kube-runtime's readiness
/// future keeps only the most recent waiter's waker, so with several waiters all but one
/// sleep forever. That is how a controller started against a busy API server (whose first
/// list of a store was refused with 429) installed nothing at all. Waiting again every
/// 100 ms re-registers the waker; once the store is ready, the answer is immediate.
pub async fn until_listed<K>(store: &Store<K>) -> Result<(), reflector::store::WriterDropped>
where
    K: Resource + Clone + 'static,
    K::DynamicType: Eq + Hash + Clone,
{
    loop {
        if let Ok(listed) = tokio::time::timeout(READY_POLL, store.wait_until_ready()).await {
            return listed;
        }
    }
}

/// How often [`until_listed`] asks again.
const READY_POLL: Duration = Duration::from_millis(100);

/// Registers the readiness gate `name` on `readiness`, opening once `store` has received its
/// initial list: the usual way to gate `/readyz` on a controller's or reflector's watch.
///
/// Here rather than on [`Readiness`]: the gates know nothing of watches, and this module
/// already depends on them.
pub fn track_store<K>(
    readiness: &Readiness,
    name: impl Into<String>,
    store: Store<K>,
) -> tokio::task::JoinHandle<()>
where
    K: Resource + Clone + Send + Sync + 'static,
    K::DynamicType: Eq + Hash + Clone + Send + Sync,
{
    let gate = readiness.register(name);
    tokio::spawn(async move {
        // A Controller waits on its own store too, so this is one of several waiters.
        // If the writer was dropped before the first list, the watch is gone and the
        // gate stays closed.
        if until_listed(&store).await.is_ok() {
            gate.open();
        }
    })
}

/// Polls a watch stream in a task of its own (so the stores it feeds fill whatever the
/// controller is doing) and sends the objects each item names as reconcile requests to
/// `requests`, until the stream ends, the receiver goes or `shutdown`.
///
/// A stream given to a kube-runtime controller (`owns_stream`, `watches_stream`) is only
/// polled while the controller has room for another reconcile: a reconcile that waits for
/// that stream's store to be ready would then wait forever once every slot does.
pub async fn forward<S, K, T, I>(
    stream: S,
    names: impl Fn(&K) -> I,
    requests: tokio::sync::mpsc::Sender<ObjectRef<T>>,
    shutdown: tokio_util::sync::CancellationToken,
) where
    S: futures::Stream<Item = Result<K, watcher::Error>> + Send,
    T: Resource,
    I: IntoIterator<Item = ObjectRef<T>>,
{
    let mut stream = std::pin::pin!(stream);
    loop {
        let next = tokio::select! {
            () = shutdown.cancelled() => return,
            next = stream.next() => next,
        };
        match next {
            Some(Ok(object)) => {
                for request in names(&object) {
                    if requests.send(request).await.is_err() {
                        return;
                    }
                }
            }
            // Reported through `report_failures` on the stream; the watcher retries.
            Some(Err(_)) => {}
            None => return,
        }
    }
}

/// For `.inspect(...)` on a watch stream: tells `readiness` each time the watch `name`
/// fails, so `/readyz` says not ready while it does.
pub fn report_failures<T>(
    readiness: &Readiness,
    name: &str,
) -> impl FnMut(&Result<T, watcher::Error>) + Send + 'static {
    let readiness = readiness.clone();
    let name = name.to_owned();
    move |event| {
        if let Err(err) = event {
            tracing::debug!(watch = %name, error = %crate::error_chain(err), "watch failed");
            readiness.watch_failed(&name);
        }
    }
}

/// For `.inspect(...)` on a controller's results, when its watches are kube-runtime's own
/// (`Controller::new`, `owns`): tells `readiness` each time one of them fails.
pub fn report_controller_failures<K, E>(
    readiness: &Readiness,
    name: &str,
) -> impl FnMut(&ControllerResult<K, E>) + Send + 'static
where
    K: Resource,
    E: std::error::Error + 'static,
{
    let readiness = readiness.clone();
    let name = name.to_owned();
    move |result| {
        if let Err(kube::runtime::controller::Error::QueueError(_)) = result {
            readiness.watch_failed(&name);
        }
    }
}

/// What a kube-runtime controller's `run` stream yields.
pub type ControllerResult<K, E> = Result<
    (ObjectRef<K>, kube::runtime::controller::Action),
    kube::runtime::controller::Error<E, watcher::Error>,
>;

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;

    fn object(generation: i64) -> ConfigMap {
        let mut object = ConfigMap::default();
        object.metadata.generation = Some(generation);
        object
    }

    /// Every reconcile of a controller waits on the same store when its first list is late
    /// (an API server answering 429 at start): every one of them must go on once it lands.
    #[tokio::test]
    async fn every_waiter_goes_on_once_a_store_is_listed() {
        let (store, mut writer) = reflector::store::<ConfigMap>();
        let waiters: Vec<_> = (0..16)
            .map(|_| {
                let store = store.clone();
                tokio::spawn(async move { until_listed(&store).await.is_ok() })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(50)).await;
        writer.apply_watcher_event(&watcher::Event::Init);
        writer.apply_watcher_event(&watcher::Event::InitDone);
        let all = futures::future::join_all(waiters);
        let done = tokio::time::timeout(Duration::from_secs(5), all).await;
        let results = done.expect("a waiter still sleeps 5 s after the store was listed");
        assert_eq!(
            results
                .into_iter()
                .filter(|r| matches!(r, Ok(true)))
                .count(),
            16
        );
    }

    #[test]
    fn stores_keep_no_managed_fields() {
        let mut object = object(1);
        object.metadata.managed_fields = Some(vec![Default::default()]);
        object.metadata.name = Some("kept".into());
        drop_managed_fields(&mut object);
        assert_eq!(object.metadata.managed_fields, None);
        assert_eq!(object.metadata.name.as_deref(), Some("kept"));
    }

    #[tokio::test]
    async fn waiting_ends_with_an_error_when_the_watch_goes_before_listing() {
        let (store, writer) = reflector::store::<ConfigMap>();
        drop(writer);
        let result = tokio::time::timeout(Duration::from_secs(5), until_listed(&store)).await;
        assert!(matches!(result, Ok(Err(_))), "{result:?}");
    }

    #[test]
    fn the_watch_backoff_is_short_capped_and_resets_after_a_success() {
        let mut backoff = WatchBackoff::default();
        let delays: Vec<Duration> = backoff.by_ref().take(8).collect();
        assert!(delays[0] >= Duration::from_millis(125) && delays[0] <= Duration::from_millis(250));
        assert!(delays.iter().all(|d| *d <= WatchBackoff::MAX), "{delays:?}");
        assert!(delays[7] >= WatchBackoff::MAX / 2, "{delays:?}");
        backoff.reset();
        assert!(
            backoff
                .next()
                .is_some_and(|d| d <= Duration::from_millis(250))
        );
    }

    #[test]
    fn status_writes_do_not_change_what_an_author_wrote() {
        let before = object(3);
        // A status write changes the resourceVersion (and the status), nothing authored.
        let mut after = before.clone();
        after.metadata.resource_version = Some("42".into());
        after.data = Some([("k".to_owned(), "v".to_owned())].into());
        assert_eq!(authored(&before), authored(&after));
    }

    #[test]
    fn spec_labels_annotations_finalizers_and_deletion_do() {
        let base = object(3);
        let mut changes = vec![object(4)];
        let mut labelled = base.clone();
        labelled.metadata.labels = Some([("a".to_owned(), "b".to_owned())].into());
        changes.push(labelled);
        let mut annotated = base.clone();
        annotated.metadata.annotations = Some([("a".to_owned(), "b".to_owned())].into());
        changes.push(annotated);
        let mut finalized = base.clone();
        finalized.metadata.finalizers = Some(vec!["f".into()]);
        changes.push(finalized);
        let mut deleted = base.clone();
        deleted.metadata.deletion_timestamp = Some(
            k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(Default::default()),
        );
        changes.push(deleted);
        for changed in changes {
            assert_ne!(authored(&base), authored(&changed), "{changed:?}");
        }
    }
}
