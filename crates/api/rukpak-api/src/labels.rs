//! Label and annotation keys written on objects RukPak creates.

/// Kind of the object that owns this one (`BundleDeployment`), on generated Bundles and
/// on every object a provisioner applies.
pub const OWNER_KIND: &str = "core.rukpak.io/owner-kind";
/// Name of the owning object.
pub const OWNER_NAME: &str = "core.rukpak.io/owner-name";
/// Revision number of a generated Bundle among its BundleDeployment's Bundles, from 1.
pub const REVISION: &str = "core.rukpak.io/revision";
/// Hash of the BundleDeployment template a Bundle was generated from.
pub const TEMPLATE_HASH: &str = "core.rukpak.io/template-hash";

/// Annotation on every object a provisioner applies: a short hash of the object as last
/// applied. The engine skips a write when the live object already holds every desired field;
/// a field the new desired object *drops* (an env var an upgrade removed, a config taken
/// away) would pass that test, so the hash changes with any change of the desired object
/// and makes the live one differ, and server-side apply then removes what is no longer
/// desired. An unchanged resync still writes nothing.
pub const APPLIED_HASH: &str = "core.rukpak.io/applied-hash";

/// Annotation on every BundleDeployment: the user name of whoever created it. The API
/// server sets it on create (the admission policy `bundle-author.core.rukpak.io`, whatever
/// the request carried) and refuses to change it afterwards
/// (`bundle-ownership.core.rukpak.io`), so it cannot be forged. Its author may change and
/// delete the BundleDeployment, and a wrapper takes a child BundleDeployment for its own only
/// when the identity it applies as created it.
pub const CREATED_BY: &str = "core.rukpak.io/created-by";
