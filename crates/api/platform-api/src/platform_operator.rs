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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 256))]
    pub version_range: Option<String>,
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

    /// `Installed`, with reasons SourceFailed, UnpackPending, InstallPending,
    /// InstallFailed, InstallSuccessful, or a reason copied from the BundleDeployment.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "api_common::conditions_schema")]
    pub conditions: Vec<Condition>,
}

/// Names the BundleDeployment a PlatformOperator manages.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ActiveBundleDeployment {
    /// Name of the BundleDeployment.
    pub name: String,
}
