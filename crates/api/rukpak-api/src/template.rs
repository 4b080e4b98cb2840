//! Naming of the Bundles a BundleDeployment generates from its template. rukpak-core
//! creates them and provisioners look them up, so both must compute the same names.

use crate::BUNDLE_NAME_MAX;
use crate::BundleTemplate;

/// A short, stable hash of a template: the first 10 hex digits of the sha256 of its JSON.
/// Any change to the template (labels, annotations or spec) changes it.
pub fn template_hash(template: &BundleTemplate) -> String {
    // Serialising our own plain data types cannot fail; an empty string would still give
    // a stable (if meaningless) hash rather than a panic.
    let json = serde_json::to_vec(template).unwrap_or_default();
    crate::names::short_hash(&json)
}

/// The name of the Bundle generated for `bundle_deployment` with template hash `hash`:
/// `<bundleDeployment>-<hash>`, at most [`BUNDLE_NAME_MAX`] characters (BundleDeployment
/// names are limited to 45, so it always fits).
pub fn bundle_name(bundle_deployment: &str, hash: &str) -> String {
    let mut name = format!("{bundle_deployment}-{hash}");
    name.truncate(BUNDLE_NAME_MAX);
    name
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BundleSource, BundleSpec, ImageSource, SourceType};

    fn template(image: &str) -> BundleTemplate {
        BundleTemplate {
            metadata: None,
            spec: BundleSpec {
                provisioner_class_name: "core-rukpak-io-plain".into(),
                source: BundleSource {
                    type_: SourceType::Image,
                    image: Some(ImageSource {
                        ref_: image.into(),
                        ..ImageSource::default()
                    }),
                    git: None,
                    http: None,
                    config_maps: None,
                    upload: None,
                },
            },
        }
    }

    #[test]
    fn the_hash_is_stable_and_changes_with_the_template() {
        let a = template_hash(&template("r/b:v1"));
        assert_eq!(a, template_hash(&template("r/b:v1")));
        assert_ne!(a, template_hash(&template("r/b:v2")));
        assert_eq!(a.len(), 10);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
    }

    #[test]
    fn bundle_names_fit_the_bundle_name_limit() {
        let longest = "x".repeat(crate::BUNDLE_DEPLOYMENT_NAME_MAX);
        let name = bundle_name(&longest, &template_hash(&template("r/b:v1")));
        assert!(name.len() <= BUNDLE_NAME_MAX, "{}", name.len());
        assert_eq!(bundle_name("etcd", "0123456789"), "etcd-0123456789");
    }
}
