//! Finding selected bundles in Catalog content.
//!
//! A Catalog's `status.content` names its file-based catalog in Deppy's content store;
//! the activator reads it from there (never from deppy-resolver), parses it with [`fbc`],
//! and keeps a few parsed catalogs by content digest, so that a catalog is parsed once per
//! version however many resolutions use it.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use deppy_api::Catalog;
use fbc::CatalogIndex;
use kube::ResourceExt;

use deppy_api::Selection;

/// How many parsed catalogs are kept.
const CACHED_CATALOGS: usize = 8;

/// Why a Catalog's content is not available.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    /// The Catalog has no content in its status (not unpacked yet, or failing).
    #[error("failed to read Catalog {0}: it has no content yet")]
    NoContent(String),
    /// `status.content.digest` is not a digest.
    #[error("failed to read Catalog {catalog}: invalid content digest {digest:?}")]
    BadDigest {
        /// The Catalog.
        catalog: String,
        /// The text.
        digest: String,
    },
    /// The content store could not give the content.
    #[error("failed to read the content of Catalog {catalog}")]
    Read {
        /// The Catalog.
        catalog: String,
        /// Why.
        #[source]
        source: content::StoreError,
    },
    /// The content is not a valid file-based catalog.
    #[error("failed to parse the content of Catalog {catalog}: {message}")]
    Parse {
        /// The Catalog.
        catalog: String,
        /// What is wrong.
        message: String,
    },
    /// Parsing was interrupted (the task panicked or was cancelled).
    #[error("failed to parse the content of Catalog {catalog}")]
    Task {
        /// The Catalog.
        catalog: String,
        /// Why.
        #[source]
        source: tokio::task::JoinError,
    },
}

impl CatalogError {
    /// Whether retrying may help without anything changing (an API or store hiccup).
    pub fn is_transient(&self) -> bool {
        match self {
            Self::Read { source, .. } => !source.is_terminal(),
            Self::Task { .. } => true,
            Self::NoContent(_) | Self::BadDigest { .. } | Self::Parse { .. } => false,
        }
    }
}

/// Parsed catalogs by content digest, read through from the content store.
#[derive(Debug)]
pub struct CatalogCache {
    store: content::Store,
    limits: content::Limits,
    parsed: Mutex<VecDeque<(String, Arc<CatalogIndex>)>>,
}

impl CatalogCache {
    /// A cache reading from `store` (Deppy's content store), extracting within `limits`.
    pub fn new(store: content::Store, limits: content::Limits) -> Self {
        Self {
            store,
            limits,
            parsed: Mutex::new(VecDeque::new()),
        }
    }

    fn cached(&self, digest: &str) -> Option<Arc<CatalogIndex>> {
        let parsed = self.parsed.lock().unwrap_or_else(PoisonError::into_inner);
        parsed
            .iter()
            .find(|(d, _)| d == digest)
            .map(|(_, index)| index.clone())
    }

    fn remember(&self, digest: String, index: Arc<CatalogIndex>) {
        let mut parsed = self.parsed.lock().unwrap_or_else(PoisonError::into_inner);
        if parsed.iter().any(|(d, _)| *d == digest) {
            return;
        }
        if parsed.len() >= CACHED_CATALOGS {
            parsed.pop_front();
        }
        parsed.push_back((digest, index));
    }

    /// The parsed content of `catalog`.
    pub async fn index(&self, catalog: &Catalog) -> Result<Arc<CatalogIndex>, CatalogError> {
        let name = catalog.name_any();
        let reference = catalog
            .status
            .as_ref()
            .and_then(|status| status.content.as_ref())
            .ok_or_else(|| CatalogError::NoContent(name.clone()))?;
        if let Some(index) = self.cached(&reference.digest) {
            return Ok(index);
        }
        let digest: content::Digest =
            reference
                .digest
                .parse()
                .map_err(|_| CatalogError::BadDigest {
                    catalog: name.clone(),
                    digest: reference.digest.clone(),
                })?;
        let content = self
            .store
            .read(&digest)
            .await
            .map_err(|source| CatalogError::Read {
                catalog: name.clone(),
                source,
            })?;
        let limits = self.limits;
        let catalog_name = name.clone();
        // Parsing a large catalog is CPU-bound: keep it off the workers driving the watches.
        let index = tokio::task::spawn_blocking(move || {
            let files = content
                .files(&limits)
                .map_err(|err| kit::error_chain(&err))?;
            // Only what activation reads is held: icons, descriptions and inline manifests
            // are validated and dropped (the content store keeps them).
            CatalogIndex::from_files_with(files.iter(), fbc::Detail::Resolution)
                .map_err(|err| kit::error_chain(&err))
        })
        .await
        .map_err(|source| CatalogError::Task {
            catalog: catalog_name,
            source,
        })?
        .map_err(|message| CatalogError::Parse {
            catalog: name,
            message,
        })?;
        let index = Arc::new(index);
        self.remember(reference.digest.clone(), index.clone());
        Ok(index)
    }
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
    index: &'a CatalogIndex,
    selection: &Selection,
) -> Result<&'a fbc::Bundle, NotFound> {
    let Selection {
        catalog,
        package,
        version,
        channel,
    } = selection;
    if index.package(package).is_none() {
        return Err(NotFound::Package {
            catalog: catalog.clone(),
            package: package.clone(),
        });
    }
    let entries = index
        .channel(package, channel)
        .ok_or_else(|| NotFound::Channel {
            catalog: catalog.clone(),
            package: package.clone(),
            channel: channel.clone(),
        })?;
    index
        .bundles(package)
        .filter(|bundle| bundle.version.to_string() == *version)
        .find(|bundle| entries.entries.iter().any(|e| e.name == bundle.name))
        .ok_or_else(|| NotFound::Version {
            catalog: catalog.clone(),
            package: package.clone(),
            channel: channel.clone(),
            version: version.clone(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::catalog_files;

    fn index() -> CatalogIndex {
        let files = catalog_files("memcached-operator", &["0.1.0", "0.2.0"]);
        CatalogIndex::from_files(files.iter().map(|(p, c)| (p.as_str(), c.as_bytes()))).unwrap()
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
