//! rukpak-core: everything RukPak does before a provisioner takes over.
//!
//! - [`sources`]: a Bundle's source (and the Secrets and ConfigMaps it names) as a
//!   `content` source;
//! - [`bundle`]: the Bundle controller: unpack once into the content store, record the
//!   pinned source, report progress on the `Unpacked` condition;
//! - [`deployment_bundles`]: the BundleDeployment controller: the Bundle made from the
//!   current template, and removal of older Bundles once the provisioner has moved to the
//!   new one;
//! - [`upload`]: content for Bundles whose source is `upload`;
//! - [`revisions_cli`]: the `plan` and `rollback` commands (a BundleDeployment's
//!   revisions are chosen by `provisioner::revisions`).

pub mod bundle;
pub mod deployment_bundles;
pub mod revisions_cli;
pub mod slots;
pub mod sources;
pub mod upload;

/// The field manager of rukpak-core's status writes and the reporter of its Events.
pub const FIELD_MANAGER: &str = "rukpak-core";

/// Annotation recording the digest of uploaded content on an upload Bundle.
pub const UPLOADED_DIGEST_ANNOTATION: &str = "core.rukpak.io/uploaded-digest";

pub use kit::error_chain;
