//! The `core.rukpak.io/v1alpha1` API: what to install ([`Bundle`]), how to keep it
//! installed ([`BundleDeployment`]), and who may install with which provisioner
//! ([`ProvisionerClass`]). All kinds are cluster-scoped.
//!
//! Condition types, reasons and label keys are constants in [`conditions`] and
//! [`labels`], so every controller and test spells them the same way.

pub mod bundle;
pub mod bundle_deployment;
pub mod conditions;
pub mod labels;
pub mod names;
pub mod provisioner_class;
pub mod template;

pub use api_common::{Condition, ContentRef, SecretRef};
pub use bundle::{
    Bundle, BundlePhase, BundleSource, BundleSpec, BundleStatus, ConfigMapRef, ConfigMapSource,
    GitAuth, GitRef, GitSource, HttpAuth, HttpSource, ImageSource, RevisionOutcome, SourceType,
    UploadSource,
};
pub use bundle_deployment::{
    BundleDeployment, BundleDeploymentSpec, BundleDeploymentStatus, BundleTemplate,
    CollisionProtection, DeletionPolicy, HealthCheck, InventoryEntry, PendingRevision,
    RevisionRecord, ServiceAccountRef, TemplateMetadata, UpgradeApproval,
};
pub use provisioner_class::{
    ApplyIdentity, ProvisionerClass, ProvisionerClassSpec, ProvisionerClassStatus,
};
pub use template::{bundle_name, template_hash};

/// The API group.
pub const GROUP: &str = "core.rukpak.io";
/// The API version.
pub const VERSION: &str = "v1alpha1";

/// The ConfigMap (in RukPak's namespace) where provisioners publish the identity each
/// class's BundleDeployments apply as without `spec.serviceAccount`: one key per
/// ProvisionerClass name, the user name as its value. It is the parameter of the admission
/// policy `bundle-identity.core.rukpak.io`.
pub const BUNDLE_IDENTITIES_CONFIG_MAP: &str = "bundle-identities";
/// Provisioner class of plain+v0 bundles (a directory of manifests).
pub const PLAIN_PROVISIONER_CLASS: &str = "core-rukpak-io-plain";
/// Provisioner class of registry+v1 bundles (OLM operator bundles).
pub const REGISTRY_PROVISIONER_CLASS: &str = "core-rukpak-io-registry";

/// The longest Bundle name: leaves room for suffixes of names derived from it.
pub const BUNDLE_NAME_MAX: usize = 52;
/// The longest BundleDeployment name: `<name>-<hash>` Bundle names stay within
/// [`BUNDLE_NAME_MAX`].
pub const BUNDLE_DEPLOYMENT_NAME_MAX: usize = 45;
