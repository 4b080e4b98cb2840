//! Why content is refused: the one error that reading archives, assembling the file tree
//! and writing the normalised archive all report, so each of those steps can fail with it.

use std::io;

use crate::limits::{LimitError, limit_error_in};
use crate::paths::PathProblem;

/// Content that cannot be accepted. Every variant but [`ArchiveError::Write`] is a
/// property of the content itself, so retrying cannot help.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    /// The archive cannot be read (not a tar, corrupt gzip, truncated).
    #[error("failed to read archive")]
    Read {
        /// What the decoder said.
        #[source]
        source: io::Error,
    },
    /// The archive is compressed with something other than gzip.
    #[error("failed to read archive: {compression} compression is not supported (use gzip)")]
    UnsupportedCompression {
        /// The detected compression.
        compression: &'static str,
    },
    /// A path is absolute, has `..`, or is not UTF-8.
    #[error("failed to accept entry {path:?}: {}", problem.describe())]
    InvalidPath {
        /// The path as found (lossily decoded).
        path: String,
        /// What is wrong with it.
        problem: PathProblem,
    },
    /// A symlink points outside the content root.
    #[error("failed to accept symlink {path:?}: target {target:?} leaves the content root")]
    LinkEscapes {
        /// The link.
        path: String,
        /// Its target.
        target: String,
    },
    /// Following symlinks does not terminate.
    #[error("failed to accept symlink {path:?}: too many levels of symbolic links")]
    SymlinkLoop {
        /// The link.
        path: String,
    },
    /// A hard link whose target is not an earlier regular file of the content.
    #[error(
        "failed to accept hard link {path:?}: target {target:?} is not a regular file of the content"
    )]
    HardLinkTarget {
        /// The link.
        path: String,
        /// Its target.
        target: String,
    },
    /// An entry would be written through a symlink.
    #[error("failed to accept entry {path:?}: its parent {link:?} is a symlink")]
    BelowSymlink {
        /// The entry.
        path: String,
        /// The symlink on its path.
        link: String,
    },
    /// A device file, fifo, sparse file or unknown entry type.
    #[error("failed to accept entry {path:?}: {kind} entries are not allowed")]
    UnsupportedEntry {
        /// The entry.
        path: String,
        /// Its type.
        kind: String,
    },
    /// A limit was crossed.
    #[error(transparent)]
    Limit(#[from] LimitError),
    /// Spilling file data or writing the normalised archive to local temporary storage
    /// failed (e.g. the work directory's disk is full); retrying may help.
    #[error("failed to write normalised archive to local temporary storage")]
    Write {
        /// The underlying error.
        #[source]
        source: io::Error,
    },
}

impl ArchiveError {
    pub(crate) fn from_read(source: io::Error) -> Self {
        match limit_error_in(&source) {
            Some(limit) => ArchiveError::Limit(limit),
            None => ArchiveError::Read { source },
        }
    }

    pub(crate) fn invalid_path(raw: &[u8], problem: PathProblem) -> Self {
        ArchiveError::InvalidPath {
            path: String::from_utf8_lossy(raw).into_owned(),
            problem,
        }
    }
}
