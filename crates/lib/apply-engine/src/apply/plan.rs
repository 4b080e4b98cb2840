//! Planning an apply: each object's kind resolved by discovery, the live copies read,
//! collisions and CRD upgrade safety checked for every object at once (`preflight`, pure),
//! and the order of the writes decided, before anything is written.

use crate::collision::{self};
use crate::crd_safety;
use crate::object::{ObjectKey, owner_labels};
use crate::phase::{Phase, is_crd, phase_of, sort_for_apply};
use crate::prune::stale;
use crate::subset::{as_stored, is_subset};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{ApiResource, DynamicObject};
use kube::core::GroupVersionKind;
use kube::discovery::{ApiCapabilities, Scope};
use rukpak_api::CollisionProtection;
use std::collections::{BTreeMap, HashMap, HashSet};

use super::*;

impl Applier {
    pub(super) async fn discover(
        &self,
        key: &ObjectKey,
    ) -> Result<Option<(ApiResource, ApiCapabilities)>, ApplyError> {
        let gvk = GroupVersionKind::gvk(&key.group, &key.version, &key.kind);
        match self.kinds.resolve(&self.client, &gvk).await {
            Ok(found) => Ok(found),
            Err(source) => Err(ApplyError::Discovery {
                api_version: key.api_version(),
                kind: key.kind.clone(),
                source,
            }),
        }
    }

    /// Resolves an object's kind and scope, defaults its namespace, and adds owner labels.
    /// `None` when its kind is not served yet (a CRD of this bundle will define it).
    pub(super) async fn resolve(
        &self,
        request: &ApplyRequest,
        mut object: DynamicObject,
        cache: &mut KindsSeen,
    ) -> Result<Option<Resolved>, ApplyError> {
        let mut key = ObjectKey::of(&object);
        let cache_key = (key.group.clone(), key.version.clone(), key.kind.clone());
        let found = match cache.get(&cache_key) {
            Some(found) => found.clone(),
            None => {
                let found = self.discover(&key).await?;
                cache.insert(cache_key, found.clone());
                found
            }
        };
        let Some((resource, capabilities)) = found else {
            return Ok(None);
        };
        match capabilities.scope {
            Scope::Namespaced => {
                if object.metadata.namespace.is_none() {
                    object.metadata.namespace = Some(
                        request
                            .install_namespace
                            .clone()
                            .unwrap_or_else(|| "default".to_owned()),
                    );
                }
            }
            // A namespace on a cluster-scoped object is ignored by the server; drop it so
            // the inventory names the object correctly.
            Scope::Cluster => object.metadata.namespace = None,
        }
        key.namespace = object.metadata.namespace.clone();
        let labels = object.metadata.labels.get_or_insert_with(BTreeMap::new);
        labels.extend(owner_labels(&request.owner));
        // Server-side apply rejects these on input.
        object.metadata.resource_version = None;
        object.metadata.uid = None;
        object.metadata.managed_fields = None;
        object.metadata.creation_timestamp = None;
        stamp_applied_hash(&mut object);
        Ok(Some(Resolved {
            key,
            resource,
            object,
        }))
    }

    /// Resolves every object whose kind is served; the rest (returned second) must be
    /// custom resources of a CRD in this bundle and wait for it, or optional (returned
    /// third: skipped).
    pub(super) async fn resolve_objects(
        &self,
        request: &ApplyRequest,
    ) -> Result<(Vec<Resolved>, Vec<DynamicObject>, Vec<ObjectKey>), ApplyError> {
        let mut seen = HashMap::new();
        let bundle_crds: Vec<(String, String)> =
            request.objects.iter().filter_map(crd_group_kind).collect();
        let mut ready = Vec::new();
        let mut deferred = Vec::new();
        let mut skipped = Vec::new();
        for object in request.objects.clone() {
            let key = ObjectKey::of(&object);
            let optional = is_optional(&object);
            match self.resolve(request, object.clone(), &mut seen).await? {
                Some(resolved) => ready.push(resolved),
                None if bundle_crds
                    .iter()
                    .any(|(g, k)| *g == key.group && *k == key.kind) =>
                {
                    deferred.push(object)
                }
                None if optional => skipped.push(with_default_namespace(key, request)),
                None => {
                    return Err(ApplyError::UnknownKind {
                        api_version: key.api_version(),
                        kind: key.kind,
                    });
                }
            }
        }
        Ok((ready, deferred, skipped))
    }

    /// Resolves the objects [`Self::resolve_objects`] deferred, once the bundle's CRDs are
    /// established; a kind still not served is an error.
    pub(super) async fn resolve_deferred(
        &self,
        request: &ApplyRequest,
        deferred: Vec<DynamicObject>,
    ) -> Result<(Vec<Resolved>, Vec<ObjectKey>), ApplyError> {
        let mut seen = HashMap::new();
        let mut late = Vec::new();
        let mut skipped = Vec::new();
        for object in deferred {
            let key = ObjectKey::of(&object);
            let optional = is_optional(&object);
            match self.resolve(request, object, &mut seen).await? {
                Some(resolved) => late.push(resolved),
                None if optional => skipped.push(with_default_namespace(key, request)),
                None => {
                    return Err(ApplyError::UnknownKind {
                        api_version: key.api_version(),
                        kind: key.kind,
                    });
                }
            }
        }
        Ok((late, skipped))
    }

    /// The live copy of every object that exists.
    ///
    /// An object this BundleDeployment applied before (in `previous`) is taken from the
    /// drift watch of its kind when that holds it; nothing in a namespace that does not
    /// exist can exist, so those are not asked for; everything else is read as the
    /// applying identity, since an object of someone else's is invisible to the watches
    /// (they only see owned objects) and must still be found for collision protection.
    pub(super) async fn read_live(
        &self,
        ready: &[Resolved],
        request: &ApplyRequest,
    ) -> Result<HashMap<ObjectKey, DynamicObject>, ApplyError> {
        let mut live = HashMap::new();
        let previous: HashSet<ObjectKey> = request
            .previous_inventory
            .iter()
            .map(ObjectKey::from)
            .collect();
        let is_namespace =
            |item: &&Resolved| item.key.group.is_empty() && item.key.kind == "Namespace";
        let mut missing_namespaces = HashSet::new();
        // Namespaces first: what they say spares the reads of the objects inside them.
        for item in ready
            .iter()
            .filter(is_namespace)
            .chain(ready.iter().filter(|i| !is_namespace(i)))
        {
            if let Some(namespace) = &item.key.namespace
                && missing_namespaces.contains(namespace)
            {
                continue;
            }
            if request.absent.iter().any(|key| key.same_object(&item.key)) {
                if is_namespace(&item) {
                    missing_namespaces.insert(item.key.name.clone());
                }
                continue;
            }
            let cached = previous
                .iter()
                .any(|key| key.same_object(&item.key))
                .then(|| {
                    self.watches.as_ref().and_then(|watches| {
                        watches.cached(
                            &item.resource,
                            item.key.namespace.as_deref(),
                            &item.key.name,
                        )
                    })
                })
                .flatten();
            if let Some(cached) = cached {
                live.insert(item.key.clone(), cached);
                continue;
            }
            let api = self.api(&item.resource, item.key.namespace.as_deref());
            let existing =
                api.get_opt(&item.key.name)
                    .await
                    .map_err(|source| ApplyError::Read {
                        object: item.key.clone(),
                        source,
                    })?;
            match existing {
                Some(existing) => {
                    live.insert(item.key.clone(), existing);
                }
                None if is_namespace(&item) => {
                    missing_namespaces.insert(item.key.name.clone());
                }
                None => {}
            }
        }
        Ok(live)
    }
}

/// What preflight decided: the objects in apply order, split at the foundations.
pub(super) struct Plan {
    /// Namespaces and CRDs, written (and the CRDs established) before anything else.
    pub(super) foundations: Vec<Resolved>,
    /// Every other object whose kind is served now, in apply order.
    pub(super) rest: Vec<Resolved>,
    /// Namespaces this bundle creates: objects in them cannot be dry-run before they exist.
    pub(super) new_namespaces: HashSet<String>,
}

impl Plan {
    pub(super) fn in_new_namespace(&self, item: &Resolved) -> bool {
        item.key
            .namespace
            .as_ref()
            .is_some_and(|ns| self.new_namespaces.contains(ns))
    }

    /// What to dry-run before the first write: every object that needs a write, except
    /// those in namespaces this bundle creates.
    pub(super) fn dry_run_first<'a>(
        &'a self,
        live: &'a HashMap<ObjectKey, DynamicObject>,
    ) -> impl Iterator<Item = &'a Resolved> + 'a {
        self.foundations
            .iter()
            .chain(self.rest.iter())
            .filter(move |r| !self.in_new_namespace(r) && needs_write(r, live.get(&r.key)))
    }
}

/// Whether applying `applied` over `request`'s previous inventory removes webhook
/// configurations (or other admission objects) before the rest is written. Pure.
pub(super) fn admission_prunes(request: &ApplyRequest, applied: &[ObjectKey]) -> bool {
    !stale_where(request, applied, &[], |key| {
        phase_of(key) == Phase::Admission
    })
    .is_empty()
}

/// What `request`'s previous inventory has and `applied` does not (see [`stale`]), leaving
/// out what was already pruned, of the objects `which` selects. Pure.
pub(super) fn stale_where(
    request: &ApplyRequest,
    applied: &[ObjectKey],
    pruned: &[ObjectKey],
    which: impl Fn(&ObjectKey) -> bool,
) -> Vec<ObjectKey> {
    let previous: Vec<ObjectKey> = request
        .previous_inventory
        .iter()
        .map(ObjectKey::from)
        .filter(|key| !pruned.contains(key))
        .collect();
    stale(&previous, applied)
        .into_iter()
        .filter(|key| which(key))
        .collect()
}

/// The first object of `rest` that the phased writes write: phase by phase, in apply
/// order, the first that needs a write. Pure.
pub(super) fn first_rest_write<'a>(
    rest: &'a [Resolved],
    live: &HashMap<ObjectKey, DynamicObject>,
) -> Option<&'a ObjectKey> {
    [Phase::Configuration, Phase::Workloads, Phase::Admission]
        .into_iter()
        .flat_map(|phase| rest.iter().filter(move |r| phase_of(&r.key) == phase))
        .find(|r| needs_write(r, live.get(&r.key)))
        .map(|r| &r.key)
}

/// Decides, before any write, whether `owner` may apply `ready` over what exists (`live`):
/// every collision and every unsafe CRD change is reported at once; otherwise the plan, in
/// apply order. Pure.
// The engine's one error type, as every (async) step returns it; boxing it here alone
// would buy nothing.
#[allow(clippy::result_large_err)]
pub(super) fn preflight(
    owner: &str,
    author: Option<&str>,
    policy: CollisionProtection,
    mut ready: Vec<Resolved>,
    live: &HashMap<ObjectKey, DynamicObject>,
) -> Result<Plan, ApplyError> {
    let mut collisions = Vec::new();
    let mut violations = Vec::new();
    for item in &ready {
        let Some(existing) = live.get(&item.key) else {
            continue;
        };
        if let Some(collision) =
            collision::check(owner, author, policy, &item.key, &existing.metadata)
        {
            collisions.push(collision);
        }
        if is_crd(&item.key)
            && let (Ok(old), Ok(new)) = (to_crd(existing), to_crd(&item.object))
        {
            violations.extend(crd_safety::check(&old, &new));
        }
    }
    if !collisions.is_empty() {
        return Err(ApplyError::Collisions(collisions));
    }
    if !violations.is_empty() {
        return Err(ApplyError::UnsafeCrdUpgrade(violations));
    }
    sort_for_apply(&mut ready, |r| &r.key);
    let new_namespaces = ready
        .iter()
        .filter(|r| {
            r.key.group.is_empty() && r.key.kind == "Namespace" && !live.contains_key(&r.key)
        })
        .map(|r| r.key.name.clone())
        .collect();
    let (foundations, rest) = ready
        .into_iter()
        .partition(|r| phase_of(&r.key) == Phase::Foundations);
    Ok(Plan {
        foundations,
        rest,
        new_namespaces,
    })
}

/// Sets [`rukpak_api::labels::APPLIED_HASH`] to the hash of `object` as it is without it,
/// so that dropping a field from the desired object is seen as drift (see the constant).
pub(super) fn stamp_applied_hash(object: &mut DynamicObject) {
    if let Some(annotations) = object.metadata.annotations.as_mut() {
        annotations.remove(rukpak_api::labels::APPLIED_HASH);
    }
    // Serialising a DynamicObject cannot fail; an empty hash input would only cost writes.
    let bytes = serde_json::to_vec(&*object).unwrap_or_default();
    let hash = rukpak_api::names::short_hash(&bytes);
    object
        .metadata
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(rukpak_api::labels::APPLIED_HASH.to_owned(), hash);
}

/// Whether `item` must be written: it is missing, or a field we set has drifted.
pub(super) fn needs_write(item: &Resolved, live: Option<&DynamicObject>) -> bool {
    let Some(live) = live else { return true };
    match (
        serde_json::to_value(&item.object),
        serde_json::to_value(live),
    ) {
        (Ok(desired), Ok(live)) => !is_subset(&as_stored(&desired), &live),
        _ => true,
    }
}

/// Whether an object is marked [`OPTIONAL_ANNOTATION`]. Pure.
pub(super) fn is_optional(object: &DynamicObject) -> bool {
    object
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(OPTIONAL_ANNOTATION))
        .is_some_and(|v| v == "true")
}

/// The key of an object whose kind is unknown (so its scope is too): an object naming no
/// namespace is reported in the install namespace, where it would land if namespaced.
pub(super) fn with_default_namespace(mut key: ObjectKey, request: &ApplyRequest) -> ObjectKey {
    if key.namespace.is_none() {
        key.namespace = request.install_namespace.clone();
    }
    key
}

pub(super) fn crd_key(name: &str) -> ObjectKey {
    ObjectKey {
        group: "apiextensions.k8s.io".into(),
        version: "v1".into(),
        kind: "CustomResourceDefinition".into(),
        namespace: None,
        name: name.to_owned(),
    }
}

pub(super) fn to_crd(
    object: &DynamicObject,
) -> Result<CustomResourceDefinition, serde_json::Error> {
    serde_json::to_value(object).and_then(serde_json::from_value)
}

/// (group, kind) a CRD object defines.
pub(super) fn crd_group_kind(object: &DynamicObject) -> Option<(String, String)> {
    if !is_crd(&ObjectKey::of(object)) {
        return None;
    }
    let spec = object.data.get("spec")?;
    Some((
        spec.get("group")?.as_str()?.to_owned(),
        spec.get("names")?.get("kind")?.as_str()?.to_owned(),
    ))
}
