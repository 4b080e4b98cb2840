//! Platform Operators: an OpenShift administrator asks for an operator by package name
//! with a `PlatformOperator`, and sees in it, and in the `platform-operators-aggregated`
//! ClusterOperator, whether it installed and stays healthy.
//!
//! Two controllers run in the `platform-operators run` binary ([`controller::run`]):
//!
//! - the **PlatformOperator controller** keeps, for each PlatformOperator `foo`, an
//!   ActiveResolution `foo` that requires its package (Deppy resolves it; the resolution
//!   activator turns it into the wrapper BundleDeployment `foo` and one child
//!   BundleDeployment per package; RukPak installs them), and reports the chain's state
//!   in the `Installed` condition with upstream's reasons ([`status::installed`]).
//!   Two PlatformOperators never install the same package: the later one reports
//!   `DuplicatePackage` ([`ownership`]);
//! - the **aggregated ClusterOperator controller** maintains `platform-operators-aggregated`
//!   ([`status::cluster_operator_conditions`]): Available, Progressing, Degraded,
//!   Upgradeable (from each installed bundle's `olm.maxOpenShiftVersion` and the
//!   ClusterVersion), relatedObjects and versions. It tolerates clusters without the
//!   ClusterOperator API.
//!
//! The status computations are pure functions, unit-tested without a cluster.

pub mod controller;
pub mod names;
pub mod ownership;
pub mod status;
pub mod upgrade;
