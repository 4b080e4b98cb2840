//! Watch settings shared by the controllers.

use std::fmt::Debug;
use std::hash::{Hash, Hasher};

use kube::runtime::WatchStreamExt;
use kube::runtime::controller::Controller;
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher;
use kube::{Api, Resource};
use serde::de::DeserializeOwned;

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
    meta.generation.hash(&mut hasher);
    meta.labels.hash(&mut hasher);
    meta.annotations.hash(&mut hasher);
    meta.finalizers.hash(&mut hasher);
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
pub fn on_spec_changes<K>(api: Api<K>, config: watcher::Config) -> Controller<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Default + Eq + Hash + Clone + Unpin,
{
    let (reader, writer): (Store<K>, _) = reflector::store();
    let trigger = watcher(api, config)
        .default_backoff()
        .reflect(writer)
        .applied_objects()
        .predicate_filter(authored, Default::default());
    Controller::for_stream(trigger, reader)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;

    fn object(generation: i64) -> ConfigMap {
        let mut object = ConfigMap::default();
        object.metadata.generation = Some(generation);
        object
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
