//! Identity of applied objects, and the labels that mark them as a BundleDeployment's.

use std::collections::BTreeMap;
use std::fmt;

use kube::api::DynamicObject;
use rukpak_api::InventoryEntry;
use rukpak_api::labels::{OWNER_KIND, OWNER_NAME};

/// The kind that owns applied objects.
pub const OWNER_KIND_BUNDLE_DEPLOYMENT: &str = "BundleDeployment";

/// Identifies one object: group, version, kind, namespace and name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectKey {
    /// API group; empty for the core group.
    pub group: String,
    /// API version.
    pub version: String,
    /// Kind.
    pub kind: String,
    /// Namespace, for namespaced objects.
    pub namespace: Option<String>,
    /// Name.
    pub name: String,
}

impl ObjectKey {
    /// The key of a parsed object (its namespace as written; see
    /// [`crate::apply`] for defaulting).
    pub fn of(object: &DynamicObject) -> Self {
        let (group, version) = object
            .types
            .as_ref()
            .map(|t| split_api_version(&t.api_version))
            .unwrap_or_default();
        Self {
            group,
            version,
            kind: object
                .types
                .as_ref()
                .map(|t| t.kind.clone())
                .unwrap_or_default(),
            namespace: object.metadata.namespace.clone(),
            name: object.metadata.name.clone().unwrap_or_default(),
        }
    }

    /// `group/version` or just `version` for the core group.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// Whether two keys name the same object, whatever the version.
    pub fn same_object(&self, other: &Self) -> bool {
        self.group == other.group
            && self.kind == other.kind
            && self.namespace == other.namespace
            && self.name == other.name
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = if self.group.is_empty() {
            self.kind.clone()
        } else {
            format!("{}.{}", self.kind, self.group)
        };
        match &self.namespace {
            Some(ns) => write!(f, "{kind} {ns}/{}", self.name),
            None => write!(f, "{kind} {}", self.name),
        }
    }
}

impl From<&InventoryEntry> for ObjectKey {
    fn from(entry: &InventoryEntry) -> Self {
        Self {
            group: entry.group.clone(),
            version: entry.version.clone(),
            kind: entry.kind.clone(),
            namespace: entry.namespace.clone(),
            name: entry.name.clone(),
        }
    }
}

impl From<&ObjectKey> for InventoryEntry {
    fn from(key: &ObjectKey) -> Self {
        Self {
            group: key.group.clone(),
            version: key.version.clone(),
            kind: key.kind.clone(),
            namespace: key.namespace.clone(),
            name: key.name.clone(),
        }
    }
}

/// Splits `apps/v1` into (`apps`, `v1`) and `v1` into (``, `v1`).
pub fn split_api_version(api_version: &str) -> (String, String) {
    match api_version.split_once('/') {
        Some((group, version)) => (group.to_owned(), version.to_owned()),
        None => (String::new(), api_version.to_owned()),
    }
}

/// The owner labels a BundleDeployment puts on everything it applies.
pub fn owner_labels(bundle_deployment: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (
            OWNER_KIND.to_owned(),
            OWNER_KIND_BUNDLE_DEPLOYMENT.to_owned(),
        ),
        (OWNER_NAME.to_owned(), bundle_deployment.to_owned()),
    ])
}

/// The BundleDeployment named by an object's owner labels, if any.
pub fn owning_bundle_deployment(labels: Option<&BTreeMap<String, String>>) -> Option<&str> {
    let labels = labels?;
    if labels.get(OWNER_KIND).map(String::as_str) != Some(OWNER_KIND_BUNDLE_DEPLOYMENT) {
        return None;
    }
    labels.get(OWNER_NAME).map(String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_display_kind_group_namespace_and_name() {
        let key = ObjectKey {
            group: "apps".into(),
            version: "v1".into(),
            kind: "Deployment".into(),
            namespace: Some("ns".into()),
            name: "web".into(),
        };
        assert_eq!(key.to_string(), "Deployment.apps ns/web");
        assert_eq!(key.api_version(), "apps/v1");
        let core = ObjectKey {
            group: String::new(),
            version: "v1".into(),
            kind: "Namespace".into(),
            namespace: None,
            name: "ns".into(),
        };
        assert_eq!(core.to_string(), "Namespace ns");
        assert_eq!(core.api_version(), "v1");
    }

    #[test]
    fn inventory_entries_round_trip_through_keys() {
        let entry = InventoryEntry {
            group: "rbac.authorization.k8s.io".into(),
            version: "v1".into(),
            kind: "ClusterRole".into(),
            namespace: None,
            name: "r".into(),
        };
        assert_eq!(InventoryEntry::from(&ObjectKey::from(&entry)), entry);
    }

    #[test]
    fn owner_labels_identify_the_owning_bundle_deployment() {
        let labels = owner_labels("etcd");
        assert_eq!(owning_bundle_deployment(Some(&labels)), Some("etcd"));
        let mut other_kind = labels.clone();
        other_kind.insert(OWNER_KIND.into(), "Bundle".into());
        assert_eq!(owning_bundle_deployment(Some(&other_kind)), None);
        assert_eq!(owning_bundle_deployment(None), None);
    }
}
