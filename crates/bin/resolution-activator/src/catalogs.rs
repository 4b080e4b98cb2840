//! Finding selected bundles in Catalogs.
//!
//! deppy-resolver writes each served Catalog's bundle index (`status.bundleIndex`,
//! [`deppy_api::BundleIndex`]: channels, versions, images) to Deppy's content store beside
//! the catalog; the activator reads that, never the catalog itself nor deppy-resolver, so
//! mapping a few selections costs a small read whatever the catalog's size. A Catalog
//! served by a deppy-resolver that predates the index has only `status.content`: its
//! catalog is then parsed and reduced to the same index. Either way what is kept is the
//! index, a few by digest, so each catalog version is read once however many resolutions
//! use it.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use deppy_api::bundle_index::Missing;
use deppy_api::{BUNDLE_INDEX_FILE, BundleIndex, Catalog, IndexedBundle};
use fbc::CatalogIndex;
use kube::ResourceExt;

use deppy_api::Selection;

/// How many bundle indexes are kept.
const CACHED_INDEXES: usize = 8;

/// Why a Catalog's bundles are not available.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    /// The Catalog has neither a bundle index nor content in its status (not served yet,
    /// or failing).
    #[error("failed to read Catalog {0}: it is not serving content yet")]
    NoContent(String),
    /// A digest in the status is not a digest.
    #[error("failed to read Catalog {catalog}: invalid {what} digest {digest:?}")]
    BadDigest {
        /// The Catalog.
        catalog: String,
        /// `bundle index` or `content`.
        what: &'static str,
        /// The text.
        digest: String,
    },
    /// The content store could not give the bundle index or the content.
    #[error("failed to read the {what} of Catalog {catalog}")]
    Read {
        /// The Catalog.
        catalog: String,
        /// `bundle index` or `content`.
        what: &'static str,
        /// Why.
        #[source]
        source: content::StoreError,
    },
    /// The bundle index was read and verified, but is not one.
    #[error(
        "failed to read the bundle index of Catalog {catalog}: {message}; deppy-resolver writes \
         it again when it next serves the catalog (e.g. after a restart)"
    )]
    Index {
        /// The Catalog.
        catalog: String,
        /// What is wrong.
        message: String,
    },
    /// The content (of a Catalog without a bundle index) is not a valid file-based catalog.
    #[error("failed to parse the content of Catalog {catalog}: {message}")]
    Parse {
        /// The Catalog.
        catalog: String,
        /// What is wrong.
        message: String,
    },
    /// Reading was interrupted (the task panicked or was cancelled).
    #[error("failed to read Catalog {catalog}")]
    Task {
        /// The Catalog.
        catalog: String,
        /// Why.
        #[source]
        source: tokio::task::JoinError,
    },
}

impl CatalogError {
    /// Whether retrying may help without anything changing (an API or store hiccup, or
    /// stored content that its writer repairs).
    pub fn is_transient(&self) -> bool {
        match self {
            Self::Read { source, .. } => !source.is_terminal(),
            Self::Task { .. } => true,
            Self::NoContent(_)
            | Self::BadDigest { .. }
            | Self::Index { .. }
            | Self::Parse { .. } => false,
        }
    }
}

/// Bundle indexes by digest, read through from the content store.
#[derive(Debug)]
pub struct CatalogCache {
    store: content::Store,
    limits: content::Limits,
    indexes: Mutex<VecDeque<(String, Arc<BundleIndex>)>>,
}

/// What a Catalog's status offers to read.
#[derive(Debug, Clone, Copy)]
enum Source {
    /// `status.bundleIndex`.
    Index,
    /// Only `status.content` (an older deppy-resolver): the whole catalog.
    Content,
}

impl CatalogCache {
    /// A cache reading from `store` (Deppy's content store), extracting within `limits`.
    pub fn new(store: content::Store, limits: content::Limits) -> Self {
        Self {
            store,
            limits,
            indexes: Mutex::new(VecDeque::new()),
        }
    }

    fn cached(&self, digest: &str) -> Option<Arc<BundleIndex>> {
        let indexes = self.indexes.lock().unwrap_or_else(PoisonError::into_inner);
        indexes
            .iter()
            .find(|(d, _)| d == digest)
            .map(|(_, index)| index.clone())
    }

    fn remember(&self, digest: String, index: Arc<BundleIndex>) {
        let mut indexes = self.indexes.lock().unwrap_or_else(PoisonError::into_inner);
        if indexes.iter().any(|(d, _)| *d == digest) {
            return;
        }
        if indexes.len() >= CACHED_INDEXES {
            indexes.pop_front();
        }
        indexes.push_back((digest, index));
    }

    /// The bundle index of `catalog`: the one deppy-resolver stored, or (for a Catalog
    /// without one) one built from its content.
    pub async fn index(&self, catalog: &Catalog) -> Result<Arc<BundleIndex>, CatalogError> {
        let name = catalog.name_any();
        let status = catalog.status.as_ref();
        let (source, reference) = match (
            status.and_then(|s| s.bundle_index.as_ref()),
            status.and_then(|s| s.content.as_ref()),
        ) {
            (Some(index), _) => (Source::Index, index),
            (None, Some(content)) => (Source::Content, content),
            (None, None) => return Err(CatalogError::NoContent(name)),
        };
        let what = match source {
            Source::Index => "bundle index",
            Source::Content => "content",
        };
        if let Some(index) = self.cached(&reference.digest) {
            return Ok(index);
        }
        let digest: content::Digest =
            reference
                .digest
                .parse()
                .map_err(|_| CatalogError::BadDigest {
                    catalog: name.clone(),
                    what,
                    digest: reference.digest.clone(),
                })?;
        let content = self
            .store
            .read(&digest)
            .await
            .map_err(|source| CatalogError::Read {
                catalog: name.clone(),
                what,
                source,
            })?;
        let limits = self.limits;
        // Reading a whole catalog is CPU-bound, and even an index takes a few milliseconds:
        // keep it off the workers driving the watches.
        let read = tokio::task::spawn_blocking(move || match source {
            Source::Index => read_index(&content, &limits),
            Source::Content => parse_content(&content, &limits),
        })
        .await
        .map_err(|source| CatalogError::Task {
            catalog: name.clone(),
            source,
        })?;
        let index = read.map_err(|message| match source {
            Source::Index => CatalogError::Index {
                catalog: name.clone(),
                message,
            },
            Source::Content => CatalogError::Parse {
                catalog: name.clone(),
                message,
            },
        })?;
        let index = Arc::new(index);
        self.remember(reference.digest.clone(), index.clone());
        Ok(index)
    }
}

/// The bundle index stored as `content`; the error says what is wrong with it.
fn read_index(content: &content::Content, limits: &content::Limits) -> Result<BundleIndex, String> {
    let files = content
        .files(limits)
        .map_err(|err| kit::error_chain(&err))?;
    let json = files
        .get(BUNDLE_INDEX_FILE)
        .ok_or_else(|| format!("the content holds no {BUNDLE_INDEX_FILE}"))?;
    BundleIndex::from_json(json).map_err(|err| kit::error_chain(&err))
}

/// The bundle index of a whole catalog, for a Catalog served without one. Only the index is
/// kept: icons, descriptions and inline manifests are validated and dropped while parsing,
/// and the parsed catalog once the index is built.
fn parse_content(
    content: &content::Content,
    limits: &content::Limits,
) -> Result<BundleIndex, String> {
    let files = content
        .files(limits)
        .map_err(|err| kit::error_chain(&err))?;
    let index = CatalogIndex::from_files_with(files.iter(), fbc::Detail::Resolution)
        .map_err(|err| kit::error_chain(&err))?;
    Ok(BundleIndex::from_catalog(&index))
}

/// Why a selection has no bundle in its catalog.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotFound {
    /// The catalog has no such package.
    #[error("catalog {catalog} has no package {package}")]
    Package {
        /// The catalog.
        catalog: String,
        /// The package.
        package: String,
    },
    /// The package has no such channel.
    #[error("package {package} in catalog {catalog} has no channel {channel}")]
    Channel {
        /// The catalog.
        catalog: String,
        /// The package.
        package: String,
        /// The channel.
        channel: String,
    },
    /// No bundle of that version is in the channel.
    #[error(
        "channel {channel} of package {package} in catalog {catalog} has no bundle of version {version}"
    )]
    Version {
        /// The catalog.
        catalog: String,
        /// The package.
        package: String,
        /// The channel.
        channel: String,
        /// The version.
        version: String,
    },
}

/// The bundle `selection` names in `index`: of its package, at its version, in its
/// channel.
pub fn find_bundle<'a>(
    index: &'a BundleIndex,
    selection: &Selection,
) -> Result<&'a IndexedBundle, NotFound> {
    let Selection {
        catalog,
        package,
        version,
        channel,
    } = selection;
    index
        .find(package, version, channel)
        .map_err(|missing| match missing {
            Missing::Package => NotFound::Package {
                catalog: catalog.clone(),
                package: package.clone(),
            },
            Missing::Channel => NotFound::Channel {
                catalog: catalog.clone(),
                package: package.clone(),
                channel: channel.clone(),
            },
            Missing::Version => NotFound::Version {
                catalog: catalog.clone(),
                package: package.clone(),
                channel: channel.clone(),
                version: version.clone(),
            },
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::catalog_files;

    fn index() -> BundleIndex {
        let files = catalog_files("memcached-operator", &["0.1.0", "0.2.0"]);
        BundleIndex::from_catalog(
            &CatalogIndex::from_files(files.iter().map(|(p, c)| (p.as_str(), c.as_bytes())))
                .unwrap(),
        )
    }

    fn stored(files: &[(&str, &[u8])]) -> content::Content {
        let mut extractor = content::Extractor::new(content::Limits::default());
        for (path, data) in files {
            extractor.add_file(path, data.to_vec(), false).unwrap();
        }
        extractor.finish().unwrap()
    }

    #[test]
    fn a_stored_index_reads_back_and_a_broken_one_says_what_is_wrong() {
        let limits = content::Limits::default();
        let index = index();
        let json = index.to_json().unwrap();
        let read = read_index(&stored(&[(BUNDLE_INDEX_FILE, &json)]), &limits).unwrap();
        assert_eq!(read, index);
        let err = read_index(&stored(&[("other.json", &json)]), &limits).unwrap_err();
        assert_eq!(err, "the content holds no bundle-index.json");
        let err = read_index(&stored(&[(BUNDLE_INDEX_FILE, b"[1]")]), &limits).unwrap_err();
        assert!(err.starts_with("failed to read the bundle index"), "{err}");
    }

    #[test]
    fn a_catalog_without_an_index_gives_the_same_index_from_its_content() {
        let files = catalog_files("memcached-operator", &["0.1.0", "0.2.0"]);
        let files: Vec<(&str, &[u8])> = files
            .iter()
            .map(|(p, c)| (p.as_str(), c.as_bytes()))
            .collect();
        let parsed = parse_content(&stored(&files), &content::Limits::default()).unwrap();
        assert_eq!(parsed, index());
        let err =
            parse_content(&stored(&[("c.json", b"{")]), &content::Limits::default()).unwrap_err();
        assert!(err.contains("c.json"), "{err}");
    }

    fn selection(text: &str) -> Selection {
        text.parse().unwrap()
    }

    #[test]
    fn a_selection_finds_its_bundle_and_image() {
        let index = index();
        let bundle = find_bundle(
            &index,
            &selection("examples:memcached-operator:0.1.0:stable"),
        )
        .unwrap();
        assert_eq!(bundle.name, "memcached-operator.v0.1.0");
        assert_eq!(bundle.image, "r/memcached-operator:v0.1.0");
    }

    #[test]
    fn a_selection_that_does_not_map_says_which_part_is_missing() {
        let index = index();
        assert!(matches!(
            find_bundle(&index, &selection("examples:nope:0.1.0:stable")),
            Err(NotFound::Package { .. })
        ));
        assert!(matches!(
            find_bundle(&index, &selection("examples:memcached-operator:0.1.0:beta")),
            Err(NotFound::Channel { .. })
        ));
        let err = find_bundle(
            &index,
            &selection("examples:memcached-operator:9.9.9:stable"),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "channel stable of package memcached-operator in catalog examples has no bundle of version 9.9.9"
        );
    }
}
