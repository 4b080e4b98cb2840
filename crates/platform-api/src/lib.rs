//! The PlatformOperator API (`platform.openshift.io/v1alpha1`) and the subset of
//! OpenShift's ClusterOperator (`config.openshift.io/v1`) the project writes.

pub mod cluster_operator;
pub mod conditions;
pub mod platform_operator;

pub use api_common::Condition;
pub use cluster_operator::{
    ClusterOperator, ClusterOperatorSpec, ClusterOperatorStatus, ClusterOperatorStatusCondition,
    ObjectReference, OperandVersion,
};
pub use platform_operator::{
    ActiveBundleDeployment, Package, PlatformOperator, PlatformOperatorSpec, PlatformOperatorStatus,
};

/// The PlatformOperator API group.
pub const GROUP: &str = "platform.openshift.io";
/// The PlatformOperator API version.
pub const VERSION: &str = "v1alpha1";

/// Name of the ClusterOperator that aggregates every PlatformOperator's health.
pub const AGGREGATED_CLUSTER_OPERATOR: &str = "platform-operators-aggregated";

/// The longest package name a PlatformOperator accepts.
pub const PACKAGE_NAME_MAX: usize = 56;
