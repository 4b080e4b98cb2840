//! File-based catalogs (FBC): the format OLM catalogs ship in.
//!
//! - [`parse_dir`] and [`parse_files`] read a catalog tree (JSON streams and multi-document
//!   YAML, filtered by `.indexignore`) from disk or from memory into a [`Catalog`]. Blob-level
//!   problems are [`ParseError`]s naming the file and document. Each document is read straight
//!   into its typed blob; with [`Detail::Resolution`] (the `_with` variants) only what
//!   resolution reads is kept, which for a catalog with inlined manifests and icons is a small
//!   part of its size.
//! - [`for_each_document`] gives each document of a file as one line of compact JSON with its
//!   outline, numbered as [`Location`] numbers them, for serving blobs verbatim.
//! - [`CatalogBuilder`] takes the same files one at a time in any order (e.g. as they come
//!   out of an archive), so no more than one file's bytes need to be held at once.
//! - [`CatalogIndex::new`] checks the rules that span blobs (duplicates, references, channel
//!   graphs) and answers lookups: packages and default channels, bundles by package, name and
//!   provided API, deprecations, and upgrade successors. A package whose upgrade graph is
//!   broken (a cycle, two heads) is set aside ([`CatalogIndex::package_problems`]) rather
//!   than failing the whole catalog.
//! - [`ChannelGraph`] holds one channel's head and replaces/skips/skipRange edges.
//! - [`upgrades::upgrades_from`] walks those graphs from an installed version: its direct
//!   upgrades and everything reachable.
//! - [`VersionRange`] is a hand-written parser for the range syntax of blang/semver and
//!   Masterminds/semver, with either library's pre-release semantics ([`PrereleasePolicy`]).
//! - [`Constraint`] evaluates `olm.package.required`, `olm.gvk.required` and `olm.constraint`
//!   dependencies against bundles.
//!
//! Versions are [`semver::Version`]. Compare them with [`compare_precedence`] where semver
//! precedence matters, since `Ord for Version` also orders build metadata.

mod channel;
mod constraint;
mod csv_check;
mod detail;
mod dir;
mod documents;
mod error;
mod evaluate;
mod gvk;
mod ignore;
mod index;
mod location;
mod model;
mod name_index;
mod one_pass;
mod parallel;
mod parse;
mod property;
mod range;
mod scan;
mod stream;
pub mod upgrades;

pub use channel::{ChannelError, ChannelGraph};
pub use constraint::{Constraint, ConstraintExpr, ConstraintParseError};
pub use detail::Detail;
pub use documents::{Document, DocumentError, for_each_document};
pub use error::ParseError;
pub use evaluate::ConstraintError;
pub use gvk::Gvk;
pub use ignore::INDEX_IGNORE;
pub use index::{ApiId, CatalogError, CatalogIndex, Deprecation, IndexError, LoadError};
pub use location::Location;
pub use model::{
    Bundle, Catalog, Channel, ChannelEntry, DeprecationEntry, DeprecationReference, Deprecations,
    Icon, Meta, Package, RelatedImage, SCHEMA_BUNDLE, SCHEMA_CHANNEL, SCHEMA_DEPRECATIONS,
    SCHEMA_PACKAGE,
};
pub use parse::{
    normalize_path, parse_dir, parse_dir_with, parse_files, parse_files_with, parse_into,
    parse_into_with,
};
pub use property::{
    CsvMetadata, InstallMode, PackageProperty, PackageRequired, Property, PropertyError,
    TYPE_BUNDLE_OBJECT, TYPE_CONSTRAINT, TYPE_CSV_METADATA, TYPE_GVK, TYPE_GVK_REQUIRED,
    TYPE_MAX_OPENSHIFT_VERSION, TYPE_PACKAGE, TYPE_PACKAGE_REQUIRED,
};
pub use range::{PrereleasePolicy, RangeError, VersionRange, compare_precedence};
pub use semver::Version;
pub use stream::CatalogBuilder;
