//! The bundle index of a served Catalog: for each package, its channels and, for each
//! bundle, what activating it needs (version, image, `olm.maxOpenShiftVersion`).
//!
//! deppy-resolver writes it beside the catalog's content in Deppy's content store when it
//! serves the catalog, and records where in `CatalogStatus::bundle_index`; the
//! resolution-activator reads it instead of the whole catalog, so mapping a few selections
//! to bundle images costs a small read whatever the catalog's size. Stored as content (a
//! normalised tar.gz) holding one file, [`BUNDLE_INDEX_FILE`]: a JSON [`BundleIndex`].
//! This type is the contract between the two binaries.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The one file of a bundle index's content.
pub const BUNDLE_INDEX_FILE: &str = "bundle-index.json";

/// [`BundleIndex::schema`] of the format this crate reads and writes. A reader refuses
/// another value rather than misreading it.
pub const BUNDLE_INDEX_SCHEMA: &str = "deppy.io/bundle-index/v1";

/// What the activator reads of a catalog, by package name.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct BundleIndex {
    /// [`BUNDLE_INDEX_SCHEMA`].
    pub schema: String,
    /// Every package of the catalog, by name.
    pub packages: BTreeMap<String, IndexedPackage>,
}

/// One package of a [`BundleIndex`].
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct IndexedPackage {
    /// Channel name to the names of the bundles it lists, in the catalog's entry order.
    pub channels: BTreeMap<String, Vec<String>>,
    /// The package's bundles, in the catalog's order.
    pub bundles: Vec<IndexedBundle>,
}

/// One bundle of an [`IndexedPackage`].
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct IndexedBundle {
    /// The bundle's name (in OLM v0, the CSV name).
    pub name: String,
    /// The version, as selections print it.
    pub version: String,
    /// The bundle image; empty for a bundle that only inlines its manifests.
    pub image: String,
    /// The `olm.maxOpenShiftVersion` property as written, if any.
    #[serde(
        rename = "maxOpenShiftVersion",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub max_openshift_version: Option<String>,
}

/// Which part of a lookup the index does not have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missing {
    /// No such package.
    Package,
    /// The package has no such channel.
    Channel,
    /// No bundle of that version is in the channel.
    Version,
}

/// A bundle index that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum BundleIndexError {
    /// Not JSON of the expected shape.
    #[error("failed to read the bundle index: {0}")]
    Malformed(#[from] serde_json::Error),
    /// Another format (a newer deppy-resolver's, or not an index at all).
    #[error(
        "failed to read the bundle index: its schema is {found:?}, not {BUNDLE_INDEX_SCHEMA:?}"
    )]
    Schema {
        /// The schema the index names.
        found: String,
    },
}

impl Default for BundleIndex {
    fn default() -> Self {
        Self {
            schema: BUNDLE_INDEX_SCHEMA.to_owned(),
            packages: BTreeMap::new(),
        }
    }
}

impl BundleIndex {
    /// Adds a bundle of `package` (bundles keep the order they are added in).
    pub fn add_bundle(&mut self, package: &str, bundle: IndexedBundle) {
        self.package_mut(package).bundles.push(bundle);
    }

    /// Records channel `channel` of `package` with the names of the bundles it lists.
    pub fn add_channel(&mut self, package: &str, channel: &str, entries: Vec<String>) {
        self.package_mut(package)
            .channels
            .insert(channel.to_owned(), entries);
    }

    fn package_mut(&mut self, package: &str) -> &mut IndexedPackage {
        self.packages.entry(package.to_owned()).or_default()
    }

    /// The bundle of `package` at `version` listed in `channel` (the first in catalog
    /// order, as when the catalog itself is searched).
    pub fn find(
        &self,
        package: &str,
        version: &str,
        channel: &str,
    ) -> Result<&IndexedBundle, Missing> {
        let package = self.packages.get(package).ok_or(Missing::Package)?;
        let entries = package.channels.get(channel).ok_or(Missing::Channel)?;
        package
            .bundles
            .iter()
            .filter(|bundle| bundle.version == version)
            .find(|bundle| entries.contains(&bundle.name))
            .ok_or(Missing::Version)
    }

    /// The index as stored: compact JSON, deterministic for the same catalog (maps are
    /// sorted, lists keep catalog order), so the same catalog gives the same digest.
    pub fn to_json(&self) -> Result<Vec<u8>, serde_json::Error> {
        serde_json::to_vec(self)
    }

    /// Reads an index written by [`BundleIndex::to_json`], refusing another schema.
    pub fn from_json(bytes: &[u8]) -> Result<Self, BundleIndexError> {
        let index: Self = serde_json::from_slice(bytes)?;
        if index.schema != BUNDLE_INDEX_SCHEMA {
            return Err(BundleIndexError::Schema {
                found: index.schema,
            });
        }
        Ok(index)
    }

    /// Number of bundles, for logs.
    pub fn bundle_count(&self) -> usize {
        self.packages.values().map(|p| p.bundles.len()).sum()
    }
}

#[cfg(feature = "fbc")]
impl BundleIndex {
    /// The index of a parsed catalog: every package's channels and, for every bundle, its
    /// version, image and `olm.maxOpenShiftVersion`.
    ///
    /// The one way an index is made, on both sides of the contract: deppy-resolver stores
    /// what this returns, and the activator calls it on the catalog of a Catalog served
    /// without an index, so both read the same index of the same catalog.
    pub fn from_catalog(index: &fbc::CatalogIndex) -> Self {
        let catalog = index.catalog();
        let mut out = Self::default();
        for bundle in &catalog.bundles {
            out.add_bundle(
                &bundle.package,
                IndexedBundle {
                    name: bundle.name.clone(),
                    version: bundle.version.to_string(),
                    image: bundle.image.clone(),
                    max_openshift_version: bundle.max_openshift_version().map(str::to_owned),
                },
            );
        }
        for channel in &catalog.channels {
            out.add_channel(
                &channel.package,
                &channel.name,
                channel.entries.iter().map(|e| e.name.clone()).collect(),
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn bundle(name: &str, version: &str, max: Option<&str>) -> IndexedBundle {
        IndexedBundle {
            name: name.to_owned(),
            version: version.to_owned(),
            image: format!("r/{name}"),
            max_openshift_version: max.map(str::to_owned),
        }
    }

    fn sample() -> BundleIndex {
        let mut index = BundleIndex::default();
        index.add_bundle("etcd", bundle("etcd.v1", "1.0.0", None));
        index.add_bundle("etcd", bundle("etcd.v2", "2.0.0", Some("4.16")));
        index.add_channel("etcd", "stable", vec!["etcd.v1".into(), "etcd.v2".into()]);
        index.add_channel("etcd", "old", vec!["etcd.v1".into()]);
        index
    }

    #[test]
    fn an_index_round_trips_through_its_stored_form_byte_for_byte() {
        let index = sample();
        let json = index.to_json().unwrap();
        let back = BundleIndex::from_json(&json).unwrap();
        assert_eq!(back, index);
        assert_eq!(back.to_json().unwrap(), json);
        let text = String::from_utf8(json).unwrap();
        assert!(
            text.starts_with(r#"{"schema":"deppy.io/bundle-index/v1","packages":{"etcd":"#),
            "{text}"
        );
        assert!(text.contains(r#""maxOpenShiftVersion":"4.16""#), "{text}");
        assert_eq!(index.bundle_count(), 2);
    }

    #[test]
    fn a_lookup_says_which_part_is_missing() {
        let index = sample();
        assert_eq!(
            index.find("etcd", "2.0.0", "stable").unwrap().name,
            "etcd.v2"
        );
        assert_eq!(
            index.find("etcd", "1.0.0", "old").unwrap().image,
            "r/etcd.v1"
        );
        assert_eq!(index.find("nope", "1.0.0", "stable"), Err(Missing::Package));
        assert_eq!(index.find("etcd", "1.0.0", "beta"), Err(Missing::Channel));
        assert_eq!(index.find("etcd", "2.0.0", "old"), Err(Missing::Version));
    }

    #[cfg(feature = "fbc")]
    #[test]
    fn a_catalog_gives_its_channels_versions_images_and_max_openshift_versions() {
        let catalog = concat!(
            r#"{"schema":"olm.package","name":"etcd"}"#,
            "\n",
            r#"{"schema":"olm.channel","package":"etcd","name":"stable","entries":[{"name":"etcd.v1"},{"name":"etcd.v2","replaces":"etcd.v1"}]}"#,
            "\n",
            r#"{"schema":"olm.bundle","package":"etcd","name":"etcd.v1","image":"r/etcd.v1","properties":[{"type":"olm.package","value":{"packageName":"etcd","version":"1.0.0"}}]}"#,
            "\n",
            r#"{"schema":"olm.bundle","package":"etcd","name":"etcd.v2","image":"r/etcd.v2","properties":[{"type":"olm.package","value":{"packageName":"etcd","version":"2.0.0"}},{"type":"olm.maxOpenShiftVersion","value":"4.16"}]}"#,
            "\n",
        );
        let parsed = fbc::CatalogIndex::from_files([("etcd/catalog.json", catalog)]).unwrap();
        let mut expected = sample();
        expected
            .packages
            .get_mut("etcd")
            .unwrap()
            .channels
            .remove("old");
        assert_eq!(BundleIndex::from_catalog(&parsed), expected);
    }

    #[test]
    fn another_schema_or_shape_is_refused() {
        let err = BundleIndex::from_json(br#"{"schema":"deppy.io/bundle-index/v2","packages":{}}"#)
            .unwrap_err();
        assert!(
            err.to_string().contains("deppy.io/bundle-index/v2"),
            "{err}"
        );
        let err = BundleIndex::from_json(br#"{"schema":"deppy.io/bundle-index/v1"}"#).unwrap_err();
        assert!(matches!(err, BundleIndexError::Malformed(_)), "{err}");
        assert!(BundleIndex::from_json(b"not json").is_err());
    }
}
