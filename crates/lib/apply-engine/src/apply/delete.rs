//! Deleting and releasing what a BundleDeployment applied, keeping user data: CRDs with
//! custom resources and namespaces holding foreign objects stay.

use crate::object::{ObjectKey, owning_bundle_deployment};
use crate::phase::{is_crd, sort_for_delete};
use crate::prune::{PRUNE_ANNOTATION, PRUNE_DISABLED};
use kube::Api;
use kube::api::{ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use kube::discovery::Scope;
use rukpak_api::InventoryEntry;
use serde_json::json;

use super::*;

impl Applier {
    /// Deletes every object of `inventory` that `owner` still manages, in delete order
    /// ([`sort_for_delete`]), keeping CRDs that still have custom resources and namespaces that hold
    /// anything else (both orphaned: their owner labels are removed).
    pub async fn delete_all(
        &self,
        owner: &str,
        inventory: &[InventoryEntry],
    ) -> Result<DeleteReport, ApplyError> {
        let mut keys: Vec<ObjectKey> = inventory.iter().map(ObjectKey::from).collect();
        sort_for_delete(&mut keys, |k| k);
        let mut report = DeleteReport::default();
        for key in keys {
            match self.remove(owner, &key).await? {
                Removal::Deleted => report.deleted.push(key),
                Removal::Kept(reason) => {
                    self.release(&key).await?;
                    report.orphaned.push((key, reason));
                }
                Removal::Gone => {}
            }
        }
        Ok(report)
    }

    /// Deletes one object `owner` manages, unless something would be lost.
    pub(super) async fn remove(&self, owner: &str, key: &ObjectKey) -> Result<Removal, ApplyError> {
        let Some((resource, capabilities)) = self.discover(key).await? else {
            return Ok(Removal::Gone);
        };
        let namespace = match capabilities.scope {
            Scope::Namespaced => key.namespace.as_deref(),
            Scope::Cluster => None,
        };
        let api = self.api(&resource, namespace);
        let Some(live) = api
            .get_opt(&key.name)
            .await
            .map_err(|source| ApplyError::Read {
                object: key.clone(),
                source,
            })?
        else {
            return Ok(Removal::Gone);
        };
        if owning_bundle_deployment(live.metadata.labels.as_ref()) != Some(owner) {
            // Someone else took it over (or it was never ours): not ours to delete.
            return Ok(Removal::Gone);
        }
        if live
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(PRUNE_ANNOTATION))
            .map(String::as_str)
            == Some(PRUNE_DISABLED)
        {
            return Ok(Removal::Kept(format!(
                "annotated {PRUNE_ANNOTATION}={PRUNE_DISABLED}"
            )));
        }
        if is_crd(key)
            && let Some(count) = self.custom_resources_exist(&live).await?
        {
            return Ok(Removal::Kept(format!(
                "CRD still has custom resources (at least {count}); deleting it would delete them"
            )));
        }
        if key.group.is_empty()
            && key.kind == "Namespace"
            && let Some(other) = self.foreign_object_in(&key.name, owner).await?
        {
            return Ok(Removal::Kept(format!(
                "namespace holds {other}, which this BundleDeployment did not create"
            )));
        }
        match api.delete(&key.name, &DeleteParams::background()).await {
            Ok(_) => Ok(Removal::Deleted),
            Err(err) if is_not_found(&err) => Ok(Removal::Gone),
            Err(source) => Err(ApplyError::Delete {
                object: key.clone(),
                source,
            }),
        }
    }

    /// Leaves every object of `inventory` that `owner` still manages in place, removing
    /// only the ownership labels (`deletionPolicy: Orphan`); returns what it released.
    pub async fn release_all(
        &self,
        owner: &str,
        inventory: &[InventoryEntry],
    ) -> Result<Vec<ObjectKey>, ApplyError> {
        let mut released = Vec::new();
        for key in inventory.iter().map(ObjectKey::from) {
            let Some((resource, capabilities)) = self.discover(&key).await? else {
                continue;
            };
            let namespace = match capabilities.scope {
                Scope::Namespaced => key.namespace.as_deref(),
                Scope::Cluster => None,
            };
            let live = self
                .api(&resource, namespace)
                .get_opt(&key.name)
                .await
                .map_err(|source| ApplyError::Read {
                    object: key.clone(),
                    source,
                })?;
            if live.is_some_and(|l| {
                owning_bundle_deployment(l.metadata.labels.as_ref()) == Some(owner)
            }) {
                self.release(&key).await?;
                released.push(key);
            }
        }
        Ok(released)
    }

    /// Removes the owner labels from an object that is left behind.
    pub(super) async fn release(&self, key: &ObjectKey) -> Result<(), ApplyError> {
        let Some((resource, _)) = self.discover(key).await? else {
            return Ok(());
        };
        let patch = json!({ "metadata": { "labels": {
            rukpak_api::labels::OWNER_KIND: null, rukpak_api::labels::OWNER_NAME: null
        }}});
        match self
            .api(&resource, key.namespace.as_deref())
            .patch(&key.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => Ok(()),
            Err(err) if is_not_found(&err) => Ok(()),
            Err(source) => Err(ApplyError::Apply {
                object: key.clone(),
                source,
            }),
        }
    }

    /// How many custom resources (up to a small number) exist for a live CRD, if any.
    pub(super) async fn custom_resources_exist(
        &self,
        crd: &DynamicObject,
    ) -> Result<Option<usize>, ApplyError> {
        let Ok(crd) = to_crd(crd) else {
            return Ok(None);
        };
        let Some(version) = crd.spec.versions.iter().find(|v| v.served) else {
            return Ok(None);
        };
        let resource = ApiResource {
            group: crd.spec.group.clone(),
            version: version.name.clone(),
            api_version: format!("{}/{}", crd.spec.group, version.name),
            kind: crd.spec.names.kind.clone(),
            plural: crd.spec.names.plural.clone(),
        };
        let list = Api::<DynamicObject>::all_with(self.client.clone(), &resource)
            .list_metadata(&ListParams::default().limit(5))
            .await;
        match list {
            Ok(list) if list.items.is_empty() => Ok(None),
            Ok(list) => Ok(Some(list.items.len())),
            Err(err) if is_not_found(&err) => Ok(None),
            Err(source) => Err(ApplyError::Read {
                object: crd_key(&crd.metadata.name.unwrap_or_default()),
                source,
            }),
        }
    }

    /// The first object in `namespace` not managed by `owner` (ignoring what Kubernetes
    /// creates in every namespace), if any.
    pub(super) async fn foreign_object_in(
        &self,
        namespace: &str,
        owner: &str,
    ) -> Result<Option<String>, ApplyError> {
        let discovery_failed = |source| ApplyError::Discovery {
            api_version: "*".into(),
            kind: "*".into(),
            source,
        };
        let mut group_names = vec![kube::discovery::ApiGroup::CORE_GROUP.to_owned()];
        group_names.extend(
            self.client
                .list_api_groups()
                .await
                .map_err(discovery_failed)?
                .groups
                .into_iter()
                .map(|g| g.name),
        );
        // Group by group, not `Discovery::run`: a group that vanishes between the listing and
        // its query (a CRD being deleted, typically by this very cleanup) fails the whole
        // run, and only means there is nothing of that group left to find.
        let mut groups = Vec::new();
        for name in group_names {
            match kube::discovery::group(&self.client, &name).await {
                Ok(group) => groups.push(group),
                Err(err) if is_not_found(&err) || matches!(err, kube::Error::Discovery(_)) => {}
                Err(source) => return Err(discovery_failed(source)),
            }
        }
        for group in &groups {
            for (resource, capabilities) in group.recommended_resources() {
                if capabilities.scope != Scope::Namespaced
                    || !capabilities.supports_operation(kube::discovery::verbs::LIST)
                {
                    continue;
                }
                if ["Event", "Lease", "EndpointSlice", "Endpoints"]
                    .contains(&resource.kind.as_str())
                {
                    continue;
                }
                let Ok(list) = Api::<DynamicObject>::namespaced_with(
                    self.client.clone(),
                    namespace,
                    &resource,
                )
                .list_metadata(&ListParams::default().limit(50))
                .await
                else {
                    continue;
                };
                for item in list.items {
                    let name = item.metadata.name.clone().unwrap_or_default();
                    let automatic = (resource.kind == "ConfigMap" && name == "kube-root-ca.crt")
                        || (resource.kind == "ServiceAccount" && name == "default");
                    let ours =
                        owning_bundle_deployment(item.metadata.labels.as_ref()) == Some(owner);
                    // Pods, ReplicaSets and the like belong to our workloads through owner
                    // references; they go with them.
                    let owned = item
                        .metadata
                        .owner_references
                        .as_ref()
                        .is_some_and(|r| !r.is_empty());
                    if !automatic && !ours && !owned {
                        return Ok(Some(format!("{} {namespace}/{name}", resource.kind)));
                    }
                }
            }
        }
        Ok(None)
    }
}

pub(super) enum Removal {
    Deleted,
    Kept(String),
    Gone,
}
