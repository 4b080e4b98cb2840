//! The subset of OpenShift's `config.openshift.io/v1` ClusterOperator that the project
//! reads and writes. On OpenShift the cluster-version operator owns the CRD; elsewhere
//! `deploy/compat/` installs one generated from these types.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// ClusterOperator reports the health of one cluster component to the cluster-version
/// machinery. Fields the project does not use are not modelled; on OpenShift the real
/// CRD keeps them.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
// Each printcolumn(...) repeats the same keys; clippy mistakes that for duplicate attributes.
#[allow(clippy::duplicated_attributes)]
#[kube(
    group = "config.openshift.io",
    version = "v1",
    kind = "ClusterOperator",
    plural = "clusteroperators",
    shortname = "co",
    status = "ClusterOperatorStatus",
    doc = "Health of one cluster component, for the cluster-version machinery (compatible subset of OpenShift's ClusterOperator). Cluster-scoped.",
    printcolumn(
        name = "Version",
        type_ = "string",
        json_path = ".status.versions[?(@.name==\"operator\")].version"
    ),
    printcolumn(
        name = "Available",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Available\")].status"
    ),
    printcolumn(
        name = "Progressing",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Progressing\")].status"
    ),
    printcolumn(
        name = "Degraded",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Degraded\")].status"
    ),
    printcolumn(
        name = "Since",
        type_ = "date",
        json_path = ".status.conditions[?(@.type==\"Available\")].lastTransitionTime"
    )
)]
pub struct ClusterOperatorSpec {}

/// Observed state of a ClusterOperator.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterOperatorStatus {
    /// Available, Progressing, Degraded and Upgradeable.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<ClusterOperatorStatusCondition>,

    /// Versions of the operator and its operands.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub versions: Vec<OperandVersion>,

    /// Objects that help debug the component (must-gather collects them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub related_objects: Vec<ObjectReference>,
}

/// One ClusterOperator condition. Unlike `metav1.Condition` it has no
/// `observedGeneration`, and reason and message are optional.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterOperatorStatusCondition {
    /// Condition type: Available, Progressing, Degraded or Upgradeable.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    #[schemars(extend("enum" = ["True", "False", "Unknown"]))]
    pub status: String,
    /// When the status last changed.
    pub last_transition_time: Time,
    /// CamelCase reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Human-readable detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// A version of the operator or an operand.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
pub struct OperandVersion {
    /// Name, e.g. `operator`.
    pub name: String,
    /// Version, e.g. the release version.
    pub version: String,
}

/// A reference to a related object.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ObjectReference {
    /// API group; empty for the core group.
    pub group: String,
    /// Resource (plural), e.g. `namespaces`.
    pub resource: String,
    /// Namespace, for namespaced objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Name; empty means all objects of the resource.
    #[serde(default)]
    pub name: String,
}
