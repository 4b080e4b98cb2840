//! rukpak-core: everything RukPak does before a provisioner takes over.
//!
//! - [`sources`]: a Bundle's source (and the Secrets and ConfigMaps it names) as a
//!   `content` source;
//! - [`bundle`]: the Bundle controller: unpack once into the content store, record the
//!   pinned source, report progress on the `Unpacked` condition;
//! - [`templating`]: the BundleDeployment controller: the Bundle for the current template,
//!   and removal of older Bundles once the provisioner has moved to the new one;
//! - [`upload`]: content for Bundles whose source is `upload`.

pub mod bundle;
pub mod sources;
pub mod templating;
pub mod upload;

/// Annotation recording the digest of uploaded content on an upload Bundle.
pub const UPLOADED_DIGEST_ANNOTATION: &str = "core.rukpak.io/uploaded-digest";

/// An error and its sources, joined: conditions and events need the whole story.
pub fn error_chain(err: &dyn std::error::Error) -> String {
    let mut message = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = cause.source();
    }
    message
}
