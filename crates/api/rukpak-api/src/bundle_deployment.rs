//! BundleDeployment: keep the content of a Bundle template installed.

use std::collections::BTreeMap;

use api_common::{Condition, DNS_LABEL_PATTERN, DNS_SUBDOMAIN_PATTERN};
use kube::{CustomResource, KubeSchema};
use serde::{Deserialize, Serialize};

use crate::bundle::{BundleSpec, RevisionOutcome};

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
    printcolumn(name = "Pending", type_ = "string", json_path = ".status.pendingRevision.digest", priority = 1),
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

    /// How many superseded revisions (Bundles) to keep besides the one being installed and
    /// the one running, newest first. Their content stays in the content store, so a
    /// rollback to them fetches nothing. Default 2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 10))]
    pub revision_history_limit: Option<i32>,

    /// Health rules for kinds the built-in rules do not know, or overriding them: for
    /// objects of a group and kind (optionally one name, or matching labels), CEL
    /// expressions over the live object decide when it is ready and when it has failed.
    /// They gate the apply phases and decide the `Healthy` condition.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 32))]
    pub health_checks: Vec<HealthCheck>,

    /// How long a revision may take to pass every probe (phases written, objects ready)
    /// before it is reported `Installed=False` with reason `ProgressDeadlineExceeded`
    /// (and rolled back with `rollbackOnFailure`). No deadline when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub progress_deadline_seconds: Option<i32>,

    /// When a revision fails (its apply is refused, a probe reports failure, or it misses
    /// `progressDeadlineSeconds`), re-apply the last revision that was healthy, from its
    /// stored content, instead of leaving the cluster half way. The failed revision is not
    /// tried again until the template changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollback_on_failure: Option<bool>,

    /// `Automatic` (default) applies every new revision. `Manual` unpacks and analyses a
    /// revision whose content differs from what runs, then waits (`Progressing=False`,
    /// reason `AwaitingApproval`, the revision and its changes in `status.pendingRevision`)
    /// until `approvedRevision` names its digest.
    #[serde(default)]
    pub upgrade_approval: UpgradeApproval,

    /// The content digest (`sha256:...`) of the revision an administrator approved, with
    /// `upgradeApproval: Manual`. Only a revision with exactly this digest is applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^sha256:[a-f0-9]{64}$"))]
    pub approved_revision: Option<String>,
}

/// Whether new revisions are applied without a person's approval.
#[derive(
    Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default, schemars::JsonSchema,
)]
pub enum UpgradeApproval {
    /// Apply each new revision as soon as it is unpacked.
    #[default]
    Automatic,
    /// Wait until `spec.approvedRevision` names the new revision's digest.
    Manual,
}

/// A health rule for one kind of object, in CEL over the live object (bound as `self`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HealthCheck {
    /// API group of the objects; empty for the core group.
    #[serde(default)]
    #[schemars(length(max = 253))]
    pub group: String,

    /// Kind of the objects, e.g. `Certificate`.
    #[schemars(length(min = 1, max = 63))]
    pub kind: String,

    /// Only the object of this name; every object of the kind when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    pub name: Option<String>,

    /// Only objects carrying all these labels.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub match_labels: BTreeMap<String, String>,

    /// CEL expression, true when the object is ready, e.g.
    /// `self.status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')`.
    #[schemars(length(min = 1, max = 4096))]
    pub ready: String,

    /// CEL expression, true when the object has failed and will not recover by waiting.
    /// Checked before `ready`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 4096))]
    pub failed: Option<String>,
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

    /// Name of the ServiceAccount (a DNS subdomain, as the API server requires of one).
    #[schemars(length(min = 1, max = 253), regex(pattern = DNS_SUBDOMAIN_PATTERN))]
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

    /// What the provisioner changed from the active Bundle as written so it installs safely
    /// and as OLM installs it (a webhook kept out of system namespaces, fields Kubernetes does
    /// not have dropped, a repeated object installed once), one sentence each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub adjustments: Vec<String>,

    /// The generation of the spec this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,

    /// `HasValidBundle`, `Installed`, `Healthy` and `Progressing`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "api_common::conditions_schema")]
    pub conditions: Vec<Condition>,

    /// The most recent revisions, oldest first: which Bundle, its content digest, and what
    /// became of it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub revisions: Vec<RevisionRecord>,

    /// With `upgradeApproval: Manual`: the revision waiting for approval and what applying
    /// it would change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_revision: Option<PendingRevision>,
}

/// One revision of a BundleDeployment.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RevisionRecord {
    /// Revision number (the Bundle's `core.rukpak.io/revision` label).
    pub revision: i64,
    /// The Bundle.
    pub bundle: String,
    /// Digest of its content.
    pub digest: String,
    /// What became of it.
    pub outcome: RevisionOutcome,
    /// When it started to be applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
    /// When it first passed every probe: a revision with this set is a known-good one to
    /// roll back to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_healthy: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
    /// Why it failed, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// A revision that waits for approval, and what applying it would change.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PendingRevision {
    /// Revision number.
    pub revision: i64,
    /// The Bundle.
    pub bundle: String,
    /// The digest to write into `spec.approvedRevision` to approve it.
    pub digest: String,
    /// Objects it would create.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub added: Vec<String>,
    /// Objects it would change.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changed: Vec<String>,
    /// Objects it would remove.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub removed: Vec<String>,
    /// Every RBAC permission it would grant that is not granted now, cluster-wide ones
    /// first, e.g. `cluster-wide (ClusterRole foo): create, delete apps/deployments`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub permissions_added: Vec<String>,
    /// Writes the API server refused in a dry run: applying would fail. While any are listed
    /// the review is done again every 30 seconds, as they depend on the cluster.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<String>,
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
