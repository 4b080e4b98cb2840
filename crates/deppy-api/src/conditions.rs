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
