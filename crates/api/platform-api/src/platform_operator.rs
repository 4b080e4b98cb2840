//! PlatformOperator: an operator an OpenShift administrator asks for by package name.

use api_common::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A PlatformOperator asks for the operator package `spec.package.name` to be installed
/// from the cluster's Catalogs and kept healthy. Changing the spec re-resolves and
/// upgrades. Its `Installed` condition and the `platform-operators-aggregated`
/// ClusterOperator report the result.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
// Each printcolumn(...) repeats the same keys; clippy mistakes that for duplicate attributes.
#[allow(clippy::duplicated_attributes)]
#[kube(
    group = "platform.openshift.io",
    version = "v1alpha1",
    kind = "PlatformOperator",
    plural = "platformoperators",
    status = "PlatformOperatorStatus",
    doc = "An operator package to install from the cluster's Catalogs and keep healthy. Cluster-scoped.",
    printcolumn(
        name = "Installed",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Installed\")].status"
    ),
    printcolumn(
        name = "Reason",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Installed\")].reason",
        priority = 1
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct PlatformOperatorSpec {
    /// The package to install.
    pub package: Package,

    /// Settings for how the operator runs, passed to the BundleDeployment that installs the
    /// package (not to its dependencies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<OperatorConfig>,
    /// `Automatic` (default) installs and upgrades as soon as a bundle is resolved.
    /// `Manual`: each BundleDeployment of the operator (its own package and its
    /// dependencies) waits with a new revision until `approvedRevision` names that
    /// revision's content digest; the `Installed` condition shows the digest waiting, and
    /// `rukpak-core plan package-<package>` what it would change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgrade_approval: Option<rukpak_api::UpgradeApproval>,
    /// With `upgradeApproval: Manual`, the content digest (`sha256:...`) of the revision
    /// approved. A revision with any other digest is not applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^sha256:[a-f0-9]{64}$"))]
    pub approved_revision: Option<String>,
}

/// The approval settings a PlatformOperator passes to its BundleDeployments (as the
/// [`crate::APPROVAL_ANNOTATION`] of its ActiveResolution).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Approval {
    /// See [`PlatformOperatorSpec::upgrade_approval`].
    #[serde(default)]
    pub upgrade_approval: rukpak_api::UpgradeApproval,
    /// See [`PlatformOperatorSpec::approved_revision`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_revision: Option<String>,
}

/// Settings for how an operator runs.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OperatorConfig {
    /// OLM v0's `Subscription.spec.config`, applied to every Deployment of the operator's
    /// bundle by the registry provisioner: `env`, `envFrom`, `volumes`, `volumeMounts`,
    /// `resources`, `nodeSelector`, `tolerations`, `affinity`, `annotations` (see
    /// docs/registry-provisioner.md for the merge rules). An invalid one is reported on the
    /// PlatformOperator's `Installed` condition and nothing is applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "api_common::free_form_object_schema")]
    pub deployment_config: Option<serde_json::Value>,
}

/// An operator package and, optionally, which of its versions.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Package {
    /// Package name as the catalog lists it: a DNS label of at most 56 characters.
    #[schemars(length(min = 1, max = 56), regex(pattern = api_common::DNS_LABEL_PATTERN))]
    pub name: String,

    /// Channel to install from; the package's default channel when empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 255))]
    pub channel: Option<String>,

    /// Acceptable versions, e.g. `>=1.2.0 <2.0.0`; the newest in the channel when empty.
    /// Once something is installed, a new version is only taken when the catalog's upgrade
    /// graph leads to it from the installed one (see `upgradeConstraintPolicy`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 256))]
    pub version_range: Option<String>,

    /// How an installed version may change. `CatalogProvided` (the default): only to a
    /// direct successor the catalog declares (`replaces`, `skips` or `skipRange`), so a
    /// narrower `versionRange`, a new channel head that does not replace the installed
    /// bundle, or a catalog that drops it never downgrades or jumps the running operator;
    /// the PlatformOperator reports `Progressing=False` with reason `UpgradeBlocked`
    /// instead. `SelfCertified`: any version in `versionRange` and `channel`, downgrades
    /// included; the administrator vouches that the move is safe. Dependencies the
    /// resolution brought in always follow their own upgrade graph. The CRD upgrade
    /// safety check applies either way.
    #[serde(default)]
    pub upgrade_constraint_policy: UpgradeConstraintPolicy,
}

/// See [`Package::upgrade_constraint_policy`].
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default, JsonSchema)]
pub enum UpgradeConstraintPolicy {
    /// Follow the catalog's upgrade graph from the installed version.
    #[default]
    CatalogProvided,
    /// Any version in range and channel, downgrades included.
    SelfCertified,
}

/// Observed state of a PlatformOperator.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlatformOperatorStatus {
    /// The BundleDeployment that installs this operator, once installed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_bundle_deployment: Option<ActiveBundleDeployment>,

    /// The generation of the spec this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,

    /// The bundles running for this PlatformOperator, by package (its own package and
    /// the dependencies its resolution brought in): what the next resolution starts from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub installed_bundles: Vec<InstalledBundle>,

    /// `Installed`, with reasons SourceFailed, UnpackPending, InstallPending,
    /// InstallFailed, InstallSuccessful, or a reason copied from the BundleDeployment;
    /// `Progressing`, with reasons Installing (True), Succeeded, UpgradeBlocked,
    /// ResolutionFailed and Failed (False).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "api_common::conditions_schema")]
    pub conditions: Vec<Condition>,
}

/// A bundle that is installed: its package and version, as the catalog listed them.
#[derive(
    Serialize, Deserialize, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Default, JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct InstalledBundle {
    /// Package name.
    pub package: String,
    /// Version.
    pub version: String,
}

/// Names the BundleDeployment a PlatformOperator manages.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ActiveBundleDeployment {
    /// Name of the BundleDeployment.
    pub name: String,
}
