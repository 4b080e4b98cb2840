//! ProvisionerClass: a kind of bundle a provisioner binary installs, and the RBAC handle
//! for who may use it.

use api_common::{Condition, DNS_LABEL_PATTERN};

use crate::bundle_deployment::ServiceAccountRef;
use kube::{CustomResource, KubeSchema};
use serde::{Deserialize, Serialize};

/// A ProvisionerClass connects Bundles and BundleDeployments to the provisioner that
/// handles them. It is also the unit of RBAC approval: creating or changing a Bundle or
/// BundleDeployment of class X requires the `use` verb on `provisionerclasses/X` in the
/// `core.rukpak.io` group.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
// Each printcolumn(...) repeats the same keys; clippy mistakes that for duplicate attributes.
#[allow(clippy::duplicated_attributes)]
#[kube(
    group = "core.rukpak.io",
    version = "v1alpha1",
    kind = "ProvisionerClass",
    plural = "provisionerclasses",
    status = "ProvisionerClassStatus",
    doc = "Connects Bundles and BundleDeployments to the provisioner that handles them; the RBAC 'use' verb on it approves its users. Cluster-scoped.",
    printcolumn(name = "Provisioner", type_ = "string", json_path = ".spec.provisioner"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp"),
    validation = Rule::new("self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$') && self.metadata.name.size() <= 63").message("metadata.name must be a DNS label: lowercase letters, digits and '-', at most 63 characters"),
)]
#[serde(rename_all = "camelCase")]
pub struct ProvisionerClassSpec {
    /// The id of the provisioner that serves this class, e.g. `core-rukpak-io-plain`.
    /// A provisioner binary acts only on objects whose class names its id.
    #[schemars(length(min = 1, max = 63), regex(pattern = DNS_LABEL_PATTERN))]
    pub provisioner: String,

    /// Provisioner-specific parameters, kept as written. The registry provisioner reads
    /// `certificateProvider` (`builtin`, `cert-manager` or `service-ca`): who makes the
    /// serving certificates of webhooks and API services of this class's bundles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "api_common::free_form_object_schema")]
    pub parameters: Option<serde_json::Value>,
}

/// Observed state of a ProvisionerClass.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProvisionerClassStatus {
    /// Conditions reported by the provisioner serving this class.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "api_common::conditions_schema")]
    pub conditions: Vec<Condition>,

    /// The identity a BundleDeployment of this class applies as when it names no
    /// `spec.serviceAccount`: the provisioner's `--default-service-account`, else the
    /// provisioner's own identity. Written by the provisioner serving the class, for people
    /// to read; the admission policy `bundle-identity.core.rukpak.io`, which requires
    /// whoever creates such a BundleDeployment to be allowed to impersonate it, reads the
    /// same identity from the ConfigMap `bundle-identities` in RukPak's namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_identity: Option<ApplyIdentity>,
}

/// An identity a provisioner applies bundles as.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApplyIdentity {
    /// The user name the API server sees, e.g.
    /// `system:serviceaccount:rukpak-system:plain-provisioner`.
    #[schemars(length(min = 1, max = 512))]
    pub username: String,

    /// The ServiceAccount behind `username`, when it is one. Impersonating it needs the
    /// `impersonate` verb on `serviceaccounts` (with its name, in its namespace); any
    /// other user needs `impersonate` on `users` with its name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account: Option<ServiceAccountRef>,
}

impl ApplyIdentity {
    /// The identity of a ServiceAccount.
    pub fn service_account(account: ServiceAccountRef) -> Self {
        Self {
            username: account.username(),
            service_account: Some(account),
        }
    }

    /// The identity of an authenticated user name: a ServiceAccount when the name has the
    /// `system:serviceaccount:<namespace>:<name>` form.
    pub fn from_username(username: &str) -> Self {
        match ServiceAccountRef::from_username(username) {
            Some(account) => Self::service_account(account),
            None => Self {
                username: username.to_owned(),
                service_account: None,
            },
        }
    }
}
