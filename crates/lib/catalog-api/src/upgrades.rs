//! The `upgrades` query: what a version of a package upgrades to, in one step and in
//! several, along the catalog's upgrade graph ([`fbc::upgrades`], the walk `kubectl olm
//! upgrades` prints). catalogd has no such path; its clients rebuild the graph from
//! `metas`, as this does on the server.
//!
//! Only the package's own blobs are read from the store file and indexed for the answer,
//! so the answer comes from the same content as every other answer with the same `ETag`,
//! and nothing stays in memory between requests.

use fbc::{CatalogIndex, Detail, Version};

use crate::store::{Filter, StoreError, StoredCatalog};

/// What an `upgrades` request asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpgradesQuery {
    /// The package.
    pub package: String,
    /// The installed version.
    pub from: Version,
    /// Only this channel's edges, when given.
    pub channel: Option<String>,
}

/// Why there is no answer.
#[derive(Debug, thiserror::Error)]
pub enum UpgradesError {
    /// The catalog has no bundle of that version (a 404).
    #[error(
        "Catalog {catalog:?} has no version {version} of package {package:?}, so nothing is known of its upgrades; its versions are in /api/v1/packages"
    )]
    NoSuchVersion {
        /// The catalog.
        catalog: String,
        /// The package.
        package: String,
        /// The version asked for.
        version: Version,
    },
    /// The store file could not be read.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The package's blobs do not load on their own (a 500: they loaded in the catalog).
    #[error("package {package:?} of Catalog {catalog:?} could not be indexed: {why}")]
    Index {
        /// The catalog.
        catalog: String,
        /// The package.
        package: String,
        /// The loader's sentence.
        why: String,
    },
}

/// The JSON answer ([`fbc::upgrades::Upgrades`]) for `query` in `stored` (the catalog named
/// `catalog`). Reads the store file: call it off the async workers.
pub fn answer(
    stored: &StoredCatalog,
    catalog: &str,
    query: &UpgradesQuery,
) -> Result<Vec<u8>, UpgradesError> {
    let package = &query.package;
    let head = stored.select(&Filter {
        schema: Some("olm.package".to_owned()),
        name: Some(package.clone()),
        package: None,
    });
    let rest = stored.select(&Filter {
        package: Some(package.clone()),
        ..Filter::default()
    });
    let mut blobs = Vec::with_capacity((head.len + rest.len) as usize);
    for (start, end) in head.spans.iter().chain(&rest.spans) {
        blobs.extend_from_slice(&stored.read(*start, (end - start) as usize)?);
    }
    let index = CatalogIndex::from_files_with([("package.json", blobs)], Detail::Resolution)
        .map_err(|err| UpgradesError::Index {
            catalog: catalog.to_owned(),
            package: package.clone(),
            why: err.to_string(),
        })?;
    let found = fbc::upgrades::upgrades_from(
        &index,
        catalog,
        package,
        &query.from,
        query.channel.as_deref(),
    )
    .ok_or_else(|| UpgradesError::NoSuchVersion {
        catalog: catalog.to_owned(),
        package: package.clone(),
        version: query.from.clone(),
    })?;
    // Serialising plain structs of strings cannot fail.
    Ok(serde_json::to_vec(&found).unwrap_or_default())
}
