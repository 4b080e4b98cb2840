//! Condition types and reasons of the Deppy API.

/// Catalog: whether the catalog content has been fetched into the content store.
pub const TYPE_UNPACKED: &str = "Unpacked";
/// Catalog: whether the catalog is parsed and used for resolution.
pub const TYPE_SERVING: &str = "Serving";
/// ActiveResolution: whether the constraints were resolved.
pub const TYPE_RESOLVED: &str = "Resolved";
/// ActiveResolution: whether the activator produced installable entities.
pub const TYPE_ACTIVATED: &str = "Activated";

/// Reasons.
pub mod reasons {
    /// Catalog content is being fetched.
    pub const UNPACK_PENDING: &str = "UnpackPending";
    /// Catalog content was fetched.
    pub const UNPACK_SUCCESSFUL: &str = "UnpackSuccessful";
    /// Catalog content could not be fetched.
    pub const UNPACK_FAILED: &str = "UnpackFailed";
    /// The catalog parsed and serves resolutions.
    pub const SERVING: &str = "Serving";
    /// The catalog content is not a valid file-based catalog.
    pub const INVALID_CATALOG: &str = "InvalidCatalog";
    /// Resolution found a selection satisfying every constraint.
    pub const SUCCEEDED: &str = "Succeeded";
    /// No selection satisfies the constraints; the message explains why.
    pub const CONSTRAINTS_NOT_SATISFIABLE: &str = "ConstraintsNotSatisfiable";
    /// A Catalog named in `spec.sources` is missing or not serving.
    pub const SOURCE_UNAVAILABLE: &str = "SourceUnavailable";
    /// The spec cannot be interpreted (e.g. a malformed constraint expression).
    pub const INVALID_SPEC: &str = "InvalidSpec";
}

/// Reasons of the `Activated` condition on ActiveResolutions, written by the activator
/// serving the resolution's class (also its Event reasons).
pub mod activated {
    /// The wrapper BundleDeployment points at the ResolveSet of the current selections.
    pub const ACTIVATED: &str = "Activated";
    /// `Resolved` is not True: nothing is changed, what is installed stays.
    pub const NOT_RESOLVED: &str = "NotResolved";
    /// A selection does not parse, or names no bundle in its catalog (the message names it).
    pub const SELECTION_NOT_FOUND: &str = "SelectionNotFound";
    /// A Catalog named by a selection is missing or its content cannot be read.
    pub const CATALOG_UNAVAILABLE: &str = "CatalogUnavailable";
    /// The class cannot install a selected bundle (e.g. it has no image).
    pub const BUNDLE_UNSUPPORTED: &str = "BundleUnsupported";
    /// Writing the ResolveSet or the wrapper failed, or another object holds the name.
    pub const APPLY_FAILED: &str = "ApplyFailed";
}
