//! How much of a catalog parsing keeps: the one setting the parser (`parse`), the property
//! readers (`property`, `one_pass`) and the index all take. A module of its own so that
//! none of them depends on another for it.

/// How much of each blob parsing keeps in memory.
///
/// A catalog carries far more than resolution reads: package icons and descriptions, CSV
/// metadata and whole manifests inlined as `olm.bundle.object`, which are most of a large
/// catalog's bytes. Both levels read and validate every blob the same way, so they accept and
/// refuse the same catalogs with the same errors; they differ only in what is kept afterwards.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Detail {
    /// Every blob as written (the default).
    #[default]
    Full,
    /// What resolving and activating bundles read, for a long-lived index of a large catalog.
    /// Dropped: package descriptions and icons, bundles' `relatedImages`, of
    /// `olm.csv.metadata` everything but `minKubeVersion`, the values of properties this
    /// crate does not interpret (`olm.bundle.object` and unknown types become
    /// [`Property::Omitted`](crate::Property::Omitted), which keeps the type), and the
    /// content of blobs of unknown schemas ([`crate::Meta::blob`] is `null`).
    Resolution,
}
