//! One selected bundle, with what the activator needs to install it; its
//! [`deppy_api::Selection`] is how `ActiveResolution.status.selections` names it.

use std::fmt;

use fbc::Version;

/// A selected bundle: its [`deppy_api::Selection`] (`catalog:package:version:channel`),
/// plus its bundle name and image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelectedBundle {
    /// The catalog it was selected from.
    pub catalog: String,
    /// Its package.
    pub package: String,
    /// Its version.
    pub version: Version,
    /// The channel it was selected through.
    pub channel: String,
    /// The bundle's name in the catalog (in OLM v0, the CSV name).
    pub bundle: String,
    /// The bundle image to install; empty only for bundles that inline their manifests.
    pub image: String,
}

impl SelectedBundle {
    /// How `ActiveResolution.status.selections` names it, for the activator to parse.
    pub fn selection(&self) -> deppy_api::Selection {
        deppy_api::Selection {
            catalog: self.catalog.clone(),
            package: self.package.clone(),
            version: self.version.to_string(),
            channel: self.channel.clone(),
        }
    }
}

impl fmt::Display for SelectedBundle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.selection().fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_selection_prints_as_catalog_package_version_channel() {
        let selection = SelectedBundle {
            catalog: "redhat-operators".into(),
            package: "foo-package".into(),
            version: Version::new(1, 2, 0),
            channel: "platform".into(),
            bundle: "foo.v1.2.0".into(),
            image: "quay.io/x/foo-bundle:v1.2.0".into(),
        };
        assert_eq!(
            selection.to_string(),
            "redhat-operators:foo-package:1.2.0:platform"
        );
    }

    /// The contract with resolution-activator: what deppy-resolver writes, the activator
    /// parses back to the same selection, for versions with pre-release and build parts and
    /// channels with colons too.
    #[test]
    fn what_the_resolver_writes_the_activator_parses_back() {
        for (version, channel) in [
            ("1.2.0", "stable"),
            ("0.0.1-rc.1+build.5", "candidate-v0"),
            ("10.20.30", "odd:channel:name"),
        ] {
            let selected = SelectedBundle {
                catalog: "examples".into(),
                package: "memcached-operator".into(),
                version: version.parse().unwrap(),
                channel: channel.into(),
                bundle: "memcached-operator.v1".into(),
                image: String::new(),
            };
            let written = selected.to_string();
            let parsed: deppy_api::Selection = written.parse().unwrap();
            assert_eq!(parsed, selected.selection(), "{written}");
            assert_eq!(parsed.version, version);
            assert_eq!(parsed.to_string(), written);
        }
    }
}
