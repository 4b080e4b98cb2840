//! BundleDeployment: keep the content of a Bundle template installed.

use std::collections::BTreeMap;

use api_common::{Condition, DNS_LABEL_PATTERN};
use kube::{CustomResource, KubeSchema};
use serde::{Deserialize, Serialize};

use crate::bundle::BundleSpec;

/// A BundleDeployment keeps the content described by its template installed. rukpak-core
/// creates a Bundle from the template (a new one whenever the template changes) and the
/// provisioner of `provisionerClassName` applies it, prunes what the previous Bundle had
/// and the new one does not, and corrects drift.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
// Each printcolumn(...) repeats the same keys; clippy mistakes that for duplicate attributes.
#[allow(clippy::duplicated_attributes)]
#[kube(
    group = "core.rukpak.io",
    version = "v1alpha1",
    kind = "BundleDeployment",
    plural = "bundledeployments",
    shortname = "bd",
    shortname = "bds",
    status = "BundleDeploymentStatus",
    doc = "Keeps the content of a Bundle template installed, pivoting to a new Bundle when the template changes. Cluster-scoped.",
    printcolumn(name = "Active Bundle", type_ = "string", json_path = ".status.activeBundle"),
    printcolumn(name = "Install State", type_ = "string", json_path = ".status.conditions[?(@.type==\"Installed\")].reason"),
    printcolumn(name = "Healthy", type_ = "string", json_path = ".status.conditions[?(@.type==\"Healthy\")].status"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp"),
    printcolumn(name = "Provisioner", type_ = "string", json_path = ".spec.provisionerClassName", priority = 1),
    validation = Rule::new("self.metadata.name.size() <= 45").message("metadata.name: Too long: may not be longer than 45 characters"),
)]
#[serde(rename_all = "camelCase")]
pub struct BundleDeploymentSpec {
    /// Name of the ProvisionerClass that installs the Bundle, e.g. `core-rukpak-io-plain`.
    /// Creating or changing a BundleDeployment requires the `use` verb on this class and on
    /// the template's class.
    #[schemars(length(min = 1, max = 63), regex(pattern = DNS_LABEL_PATTERN))]
    pub provisioner_class_name: String,

    /// The Bundle to install. Changing it creates a new Bundle; the installed objects move
    /// to it once it has unpacked.
    pub template: BundleTemplate,

    /// Provisioner-specific settings, e.g. for `core-rukpak-io-registry`:
    /// `targetNamespaces` (a list of namespaces the operator watches).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "api_common::free_form_object_schema")]
    pub config: Option<serde_json::Value>,

    /// Namespace for the Bundle's namespaced objects that do not name one. It is created
    /// when missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 63), regex(pattern = DNS_LABEL_PATTERN))]
    pub install_namespace: Option<String>,

    /// Stop all writes: nothing is applied, pruned or corrected while true. The objects
    /// already installed stay as they are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused: Option<bool>,

    /// Apply as this ServiceAccount (by impersonation), so the BundleDeployment can never
    /// do more than the account may. Without it the class's default identity applies (the
    /// provisioner's `--default-service-account`, else the provisioner's own; see the
    /// ProvisionerClass's `status.defaultIdentity`). Creating or changing a
    /// BundleDeployment requires the `impersonate` verb on the identity it applies as.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account: Option<ServiceAccountRef>,

    /// What to do when an object of the Bundle already exists and is not managed by this
    /// BundleDeployment: `Prevent` (default) refuses; `IfNoController` adopts objects with
    /// no controller owner; `None` adopts anything.
    #[serde(default)]
    pub collision_protection: CollisionProtection,

    /// What deleting the BundleDeployment does to the objects it installed: `Delete`
    /// (default) removes them, except CRDs that still hold custom resources and namespaces
    /// holding objects it did not create; `Orphan` leaves every object in place and removes
    /// only the ownership labels, so another BundleDeployment (or a person) can take them
    /// over.
    #[serde(default)]
    pub deletion_policy: DeletionPolicy,
}

/// What deleting a BundleDeployment does to the objects it installed.
#[derive(
    Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default, schemars::JsonSchema,
)]
pub enum DeletionPolicy {
    /// Remove them (keeping CRDs with custom resources and namespaces with foreign objects).
    #[default]
    Delete,
    /// Leave them in place without ownership labels.
    Orphan,
}

/// The Bundle a BundleDeployment installs.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BundleTemplate {
    /// Labels and annotations copied onto the generated Bundle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<TemplateMetadata>,

    /// The generated Bundle's spec.
    pub spec: BundleSpec,
}

/// Labels and annotations for a generated Bundle.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TemplateMetadata {
    /// Labels of the generated Bundle.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,

    /// Annotations of the generated Bundle.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// A ServiceAccount to impersonate when applying.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServiceAccountRef {
    /// Namespace of the ServiceAccount.
    #[schemars(length(min = 1, max = 63), regex(pattern = DNS_LABEL_PATTERN))]
    pub namespace: String,

    /// Name of the ServiceAccount.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
}

impl ServiceAccountRef {
    /// The user name the API server gives the account:
    /// `system:serviceaccount:<namespace>:<name>`.
    pub fn username(&self) -> String {
        format!("system:serviceaccount:{}:{}", self.namespace, self.name)
    }

    /// The account behind a `system:serviceaccount:<namespace>:<name>` user name.
    pub fn from_username(username: &str) -> Option<Self> {
        let rest = username.strip_prefix("system:serviceaccount:")?;
        let (namespace, name) = rest.split_once(':')?;
        (!namespace.is_empty() && !name.is_empty() && !name.contains(':')).then(|| Self {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        })
    }
}

impl std::fmt::Display for ServiceAccountRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

impl std::str::FromStr for ServiceAccountRef {
    type Err = String;

    /// Parses `NAMESPACE/NAME`.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.split_once('/') {
            Some((namespace, name))
                if !namespace.is_empty() && !name.is_empty() && !name.contains('/') =>
            {
                Ok(Self {
                    namespace: namespace.to_owned(),
                    name: name.to_owned(),
                })
            }
            _ => Err(format!(
                "{text:?} is not a ServiceAccount: want NAMESPACE/NAME"
            )),
        }
    }
}

/// How to treat objects that already exist when a Bundle wants to apply them.
#[derive(
    Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default, schemars::JsonSchema,
)]
pub enum CollisionProtection {
    /// Refuse to touch an object this BundleDeployment does not already manage.
    #[default]
    Prevent,
    /// Adopt an existing object only when no controller owns it.
    IfNoController,
    /// Adopt any existing object.
    None,
}

/// Observed state of a BundleDeployment.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BundleDeploymentStatus {
    /// Name of the Bundle whose objects are installed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_bundle: Option<String>,

    /// The objects applied for the active Bundle: what gets pruned on the next pivot and
    /// removed on deletion.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inventory: Vec<InventoryEntry>,

    /// Optional objects of the active Bundle (annotated `core.rukpak.io/optional: "true"`)
    /// that were not applied because the cluster does not serve their kind; each is applied
    /// once a CRD of its group appears.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<InventoryEntry>,

    /// The generation of the spec this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,

    /// `HasValidBundle`, `Installed` and `Healthy`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "api_common::conditions_schema")]
    pub conditions: Vec<Condition>,
}

/// One applied object.
#[derive(
    Serialize,
    Deserialize,
    Clone,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Default,
    schemars::JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct InventoryEntry {
    /// API group; empty for the core group.
    #[serde(default)]
    pub group: String,
    /// API version.
    pub version: String,
    /// Kind.
    pub kind: String,
    /// Namespace; absent for cluster-scoped objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Name.
    pub name: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_account_round_trips_through_its_user_name_and_flag_form() {
        let account: ServiceAccountRef = "team-a/deployer".parse().unwrap();
        assert_eq!(account.namespace, "team-a");
        assert_eq!(account.name, "deployer");
        assert_eq!(account.to_string(), "team-a/deployer");
        assert_eq!(account.username(), "system:serviceaccount:team-a:deployer");
        assert_eq!(
            ServiceAccountRef::from_username(&account.username()),
            Some(account)
        );
    }

    #[test]
    fn malformed_service_accounts_are_refused() {
        for text in ["", "deployer", "/deployer", "team-a/", "a/b/c"] {
            assert!(text.parse::<ServiceAccountRef>().is_err(), "{text:?}");
        }
        for user in [
            "kubernetes-admin",
            "system:serviceaccount:",
            "system:serviceaccount:ns",
            "system:serviceaccount::name",
            "system:serviceaccount:ns:a:b",
        ] {
            assert_eq!(ServiceAccountRef::from_username(user), None, "{user:?}");
        }
    }

    #[test]
    fn a_user_identity_has_no_service_account() {
        let admin = crate::ApplyIdentity::from_username("kubernetes-admin");
        assert_eq!(admin.username, "kubernetes-admin");
        assert_eq!(admin.service_account, None);
        let account = crate::ApplyIdentity::from_username("system:serviceaccount:x:y");
        assert_eq!(
            account.service_account,
            Some(ServiceAccountRef {
                namespace: "x".into(),
                name: "y".into()
            })
        );
    }
}
