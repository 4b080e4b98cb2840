//! One selected bundle, as `ActiveResolution.status.selections` names it, with what the
//! activator needs to install it.

use std::fmt;

use fbc::Version;

/// A selected bundle: `catalog:package:version:channel`, plus its bundle name and image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
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

impl fmt::Display for Selection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}:{}",
            self.catalog, self.package, self.version, self.channel
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_selection_prints_as_catalog_package_version_channel() {
        let selection = Selection {
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
}
