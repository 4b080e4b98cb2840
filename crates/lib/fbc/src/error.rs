//! Errors from reading catalog files into the model.
//!
//! Every variant names the file, and every blob-level variant names the document within it
//! (and the blob's schema and name when they were readable), so a catalog author can find the
//! blob to fix. Causes are kept as `source`, not repeated in the message.

use std::path::PathBuf;

use crate::location::Location;
use crate::property::PropertyError;
use crate::range::RangeError;

/// A failure to read a catalog into [`crate::Catalog`].
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    /// The file or directory could not be read.
    #[error("failed to read {path}")]
    Read {
        /// The path that failed.
        path: PathBuf,
        /// The I/O failure.
        #[source]
        source: std::io::Error,
    },
    /// A `.indexignore` file holds an invalid pattern.
    #[error("failed to read ignore patterns in {file}")]
    IndexIgnore {
        /// The `.indexignore` file.
        file: String,
        /// The pattern failure.
        #[source]
        source: ignore::Error,
    },
    /// A JSON document is malformed.
    #[error("malformed JSON in {file} document {document}")]
    Json {
        /// The file.
        file: String,
        /// 1-based position of the failing document.
        document: usize,
        /// The JSON failure (with line and column).
        #[source]
        source: serde_json::Error,
    },
    /// A YAML document is malformed.
    #[error("malformed YAML in {file} document {document}")]
    Yaml {
        /// The file.
        file: String,
        /// 1-based position of the failing document.
        document: usize,
        /// The YAML failure (with line and column).
        #[source]
        source: serde_yaml_ng::Error,
    },
    /// A document is not a mapping/object.
    #[error("{location}: a catalog blob must be an object")]
    NotAnObject {
        /// The blob.
        location: Box<Location>,
    },
    /// A blob has no (string) `schema`.
    #[error("{location}: blob has no schema")]
    MissingSchema {
        /// The blob.
        location: Box<Location>,
    },
    /// A required field is absent or empty.
    #[error("{location}: {field} must be set")]
    MissingField {
        /// The blob.
        location: Box<Location>,
        /// The field, e.g. `package`.
        field: &'static str,
    },
    /// A field has the wrong type or shape.
    #[error("{location}: blob does not match the {schema} format")]
    Shape {
        /// The blob.
        location: Box<Location>,
        /// The schema whose format was expected.
        schema: &'static str,
        /// The decoding failure, naming the field.
        #[source]
        source: serde_json::Error,
    },
    /// A known property has an invalid value.
    #[error("{location}: property {index} ({type_name}) is invalid")]
    Property {
        /// The blob.
        location: Box<Location>,
        /// 0-based index in the blob's `properties`.
        index: usize,
        /// The property type.
        type_name: String,
        /// What is wrong with it.
        #[source]
        source: PropertyError,
    },
    /// A bundle does not have exactly one `olm.package` property.
    #[error("{location}: a bundle needs exactly one olm.package property, found {count}")]
    PackagePropertyCount {
        /// The blob.
        location: Box<Location>,
        /// How many were found.
        count: usize,
    },
    /// A bundle's `olm.package` property names another package than its `package` field.
    #[error(
        "{location}: olm.package property names package {property:?}, but the bundle's package is {package:?}"
    )]
    PackagePropertyMismatch {
        /// The blob.
        location: Box<Location>,
        /// The `package` field.
        package: String,
        /// The property's `packageName`.
        property: String,
    },
    /// A channel entry has an invalid `skipRange`.
    #[error("{location}: entry {entry:?} has an invalid skipRange")]
    SkipRange {
        /// The channel blob.
        location: Box<Location>,
        /// The entry name.
        entry: String,
        /// The range failure.
        #[source]
        source: RangeError,
    },
    /// A deprecation entry references a schema that cannot be deprecated.
    #[error("{location}: deprecation entry {index} references unsupported schema {schema:?}")]
    DeprecationSchema {
        /// The deprecations blob.
        location: Box<Location>,
        /// 0-based entry index.
        index: usize,
        /// The schema referenced.
        schema: String,
    },
    /// A deprecation entry of a channel or bundle has no name.
    #[error("{location}: deprecation entry {index} references a {schema} without a name")]
    DeprecationName {
        /// The deprecations blob.
        location: Box<Location>,
        /// 0-based entry index.
        index: usize,
        /// The schema referenced.
        schema: String,
    },
}
