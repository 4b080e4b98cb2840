//! Label and annotation keys written on objects RukPak creates.

/// Kind of the object that owns this one (`BundleDeployment`), on generated Bundles and
/// on every object a provisioner applies.
pub const OWNER_KIND: &str = "core.rukpak.io/owner-kind";
/// Name of the owning object.
pub const OWNER_NAME: &str = "core.rukpak.io/owner-name";
/// Hash of the BundleDeployment template a Bundle was generated from.
pub const TEMPLATE_HASH: &str = "core.rukpak.io/template-hash";
