//! The `deppy.io/v1alpha1` API: where installable content is listed ([`Catalog`]) and
//! which of it a consumer needs ([`ActiveResolution`]). Both kinds are cluster-scoped.
//! Deppy resolves; it never installs.

pub mod active_resolution;
pub mod bundle_index;
pub mod catalog;
pub mod conditions;
pub mod selection;

pub use active_resolution::{
    ActiveResolution, ActiveResolutionSpec, ActiveResolutionStatus, Constraint, GvkRequirement,
    InstalledPackage, PackageRequirement, ProhibitedPackage, ResolvedEntity, SelectionDeprecation,
};
pub use api_common::{Condition, ContentRef, SecretRef};
pub use bundle_index::{
    BUNDLE_INDEX_FILE, BUNDLE_INDEX_SCHEMA, BundleIndex, BundleIndexError, IndexedBundle,
    IndexedPackage,
};
pub use catalog::{
    Catalog, CatalogSource, CatalogSpec, CatalogStatus, CatalogUrls, ConfigMapCatalogSource,
    ImageCatalogSource,
};
pub use selection::{Selection, SelectionError};

/// The API group.
pub const GROUP: &str = "deppy.io";
/// The API version.
pub const VERSION: &str = "v1alpha1";

/// Annotation on an ActiveResolution naming the activator class that turns its
/// selections into installable entities, e.g. `PlatformOperator`.
///
/// The design documents spell it `deppy.io/v1alpha1/activator-class`, which the API server
/// refuses (an annotation key is an optional DNS-subdomain prefix, one `/`, and a name).
pub const ACTIVATOR_CLASS_ANNOTATION: &str = "deppy.io/activator-class";

/// Annotation on an ActiveResolution naming the ServiceAccount (`NAMESPACE/NAME`) its
/// install applies as: the activator sets it as `spec.serviceAccount` of the wrapper
/// BundleDeployment and of every child. Absent: the provisioner classes' default
/// identities. The admission policy `resolution-activation.deppy.io` lets only those who may
/// impersonate that identity activate the resolution.
pub const SERVICE_ACCOUNT_ANNOTATION: &str = "deppy.io/service-account";

/// Annotation on an ActiveResolution recording who created it, set by the API server (the
/// admission policy `resolution-author.deppy.io`) whatever the request carried. Only its
/// author, those who may impersonate the identity an activated one installs as, and holders
/// of the verb `manage` on ActiveResolutions may change or delete it
/// (`resolution-ownership.deppy.io`).
pub const CREATED_BY_ANNOTATION: &str = "deppy.io/created-by";
