//! The PlatformOperator API (`platform.openshift.io/v1alpha1`), the subset of
//! OpenShift's ClusterOperator (`config.openshift.io/v1`) the project writes, and the
//! subset of ClusterVersion it reads.

pub mod cluster_operator;
pub mod cluster_version;
pub mod conditions;
pub mod platform_operator;

pub use api_common::Condition;
pub use cluster_operator::{
    ClusterOperator, ClusterOperatorSpec, ClusterOperatorStatus, ClusterOperatorStatusCondition,
    ObjectReference, OperandVersion,
};
pub use cluster_version::{
    CLUSTER_VERSION_NAME, ClusterVersion, ClusterVersionSpec, ClusterVersionStatus, Release,
    UpdateHistory,
};
pub use platform_operator::{
    ActiveBundleDeployment, Approval, InstalledBundle, OperatorConfig, Package, PlatformOperator,
    PlatformOperatorSpec, PlatformOperatorStatus, UpgradeConstraintPolicy,
};

/// The PlatformOperator API group.
pub const GROUP: &str = "platform.openshift.io";
/// The PlatformOperator API version.
pub const VERSION: &str = "v1alpha1";

/// Name of the ClusterOperator that aggregates every PlatformOperator's health.
pub const AGGREGATED_CLUSTER_OPERATOR: &str = "platform-operators-aggregated";

/// The longest package name a PlatformOperator accepts.
pub const PACKAGE_NAME_MAX: usize = 56;

/// Annotation on a child BundleDeployment carrying its bundle's `olm.maxOpenShiftVersion`
/// property (written by the resolution activator's PlatformOperator class, read by the
/// aggregated ClusterOperator controller to compute `Upgradeable`).
pub const MAX_OPENSHIFT_VERSION_ANNOTATION: &str = "platform.openshift.io/max-openshift-version";

/// Annotation on a child BundleDeployment's template (so also on the Bundles made from it)
/// naming the package the bundle belongs to. Written by the resolution activator's
/// PlatformOperator class; read back by platform-operators to learn what is installed.
pub const PACKAGE_ANNOTATION: &str = "platform.openshift.io/package";

/// Annotation next to [`PACKAGE_ANNOTATION`]: the bundle's version as the catalog lists it.
/// Once the Bundle of that template is the active one, this version is what is installed,
/// and the PlatformOperator's next resolution may only stay there or move along the
/// catalog's upgrade graph from it.
pub const BUNDLE_VERSION_ANNOTATION: &str = "platform.openshift.io/bundle-version";

/// Annotation on a PlatformOperator's ActiveResolution holding its `spec.config` as JSON,
/// for the resolution activator's PlatformOperator class to pass to the BundleDeployment
/// of the PlatformOperator's own package (as `spec.config.deploymentConfig`).
pub const CONFIG_ANNOTATION: &str = "platform.openshift.io/config";

/// Annotation on a PlatformOperator's ActiveResolution holding its approval settings
/// (`upgradeApproval`, `approvedRevision`) as JSON, for the resolution activator's
/// PlatformOperator class to set on every child BundleDeployment.
pub const APPROVAL_ANNOTATION: &str = "platform.openshift.io/approval";

/// The name base of the child BundleDeployment that installs `package` for a
/// PlatformOperator (before fitting to the BundleDeployment name limit): `package-<package>`.
///
/// Children are named after the package so that one package is installed once per cluster
/// (a second resolution of it collides), with a prefix so that a child never takes the name
/// of the wrapper BundleDeployment, which is named after the PlatformOperator (often the
/// package's own name).
pub fn package_bundle_deployment(package: &str) -> String {
    format!("package-{package}")
}
