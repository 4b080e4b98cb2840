//! Bundle and catalog content: fetched from OCI images, git, http or ConfigMaps (or
//! uploaded), made safe and normalised into a reproducible tar.gz, and kept in the
//! content store on the API server.
//!
//! - [`extract`]: safe extraction of any incoming archive (no traversal, no links out of
//!   the root, no devices, [`Limits`] against archive bombs) in bounded memory: file data
//!   past a budget is spilled to unnamed temporary files, large files already deflated;
//! - [`archive_error`]: [`ArchiveError`], why content is refused, whichever step (reading,
//!   assembling the file tree, normalising) refuses it;
//! - [`normalize`]: the normalised tar.gz whose sha256 [`Digest`] identifies the content
//!   (its compressor and deflate segments are in the private `deflate` module);
//! - [`Content`] and [`FileMap`]: the normalised bytes, and the files consumers read;
//! - [`source`]: the sources (image, git, http, ConfigMaps) and [`source::Unpacker`], whose
//!   `unpack` is defined in the private `unpack` module because it returns [`Error`];
//! - [`store`]: the content store (chunked immutable ConfigMaps named by digest, shared
//!   by digest at no write per sharer, verified on every read, unreferenced content removed
//!   by a two-phase mark and sweep);
//! - [`upload`]: puts caller-provided content into the store;
//! - [`error`]: rendering error chains and the terminal/transient classification.
//!
//! The crate knows nothing about the project's CRDs: callers read Secrets and
//! ConfigMaps and pass their data in.

pub mod archive_error;
#[cfg(feature = "cli")]
pub mod cli;
pub mod content;
mod deflate;
pub mod digest;
pub mod error;
pub mod extract;
pub mod limits;
pub mod normalize;
pub mod paths;
mod recently_stored;
pub mod source;
mod spill;
mod spool;
pub mod store;
mod tree;
mod unpack;
pub mod upload;

#[cfg(test)]
mod testutil;

pub use archive_error::ArchiveError;
pub use content::{Content, DigestMismatch, FileMap};
pub use digest::Digest;
pub use error::{Error, report};
pub use extract::Extractor;
pub use limits::{LimitError, Limits};
pub use source::{ResolvedSource, Source, UnpackOptions, Unpacked, Unpacker};
pub use store::{Store, StoreError, StoredContent};
pub use upload::{UploadError, UploadInput, upload};
