//! One error type over all modules, its terminal/transient classification, and
//! rendering of error chains.
//!
//! Messages follow "failed to <verb> <object>: ..." and keep causes in `source()` rather
//! than repeating them, so [`report`] prints each cause once: use it for condition
//! messages and events.

use classify::{Classify, Retry};

use crate::archive_error::ArchiveError;
use crate::source::{ConfigMapError, Denied, GitError, HttpError, ImageError};
use crate::store::StoreError;
use crate::upload::UploadError;

/// Any error of this crate.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Content was refused.
    #[error(transparent)]
    Archive(#[from] ArchiveError),
    /// An image could not be unpacked.
    #[error(transparent)]
    Image(#[from] ImageError),
    /// A git repository could not be unpacked.
    #[error(transparent)]
    Git(#[from] GitError),
    /// An http source could not be unpacked.
    #[error(transparent)]
    Http(#[from] HttpError),
    /// ConfigMaps could not be unpacked.
    #[error(transparent)]
    ConfigMaps(#[from] ConfigMapError),
    /// The content store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// An upload failed.
    #[error(transparent)]
    Upload(#[from] UploadError),
    /// The source names a host in a denied network.
    #[error(transparent)]
    Denied(#[from] Denied),
}

impl Error {
    /// Whether retrying cannot help until the input (spec, source, content) changes.
    pub fn is_terminal(&self) -> bool {
        match self {
            // Local storage failing is not the content's fault.
            Error::Archive(err) => !matches!(err, ArchiveError::Write { .. }),
            Error::Image(err) => err.is_terminal(),
            Error::Git(err) => err.is_terminal(),
            Error::Http(err) => err.is_terminal(),
            Error::ConfigMaps(err) => err.is_terminal(),
            Error::Store(err) => err.is_terminal(),
            Error::Upload(err) => err.is_terminal(),
            Error::Denied(_) => true,
        }
    }
}

impl Classify for Error {
    fn retry(&self) -> Retry {
        Retry::unless_terminal(self.is_terminal())
    }

    fn label(&self) -> &'static str {
        match self {
            Error::Archive(err) => archive_label(err),
            Error::Image(err) => err.label(),
            Error::Git(err) => err.label(),
            Error::Http(err) => err.label(),
            Error::ConfigMaps(err) => err.label(),
            Error::Store(err) => err.label(),
            Error::Upload(err) => err.label(),
            Error::Denied(_) => "denied_network",
        }
    }
}

/// The label of an archive error.
pub fn archive_label(err: &ArchiveError) -> &'static str {
    match err {
        ArchiveError::Read { .. } | ArchiveError::UnsupportedCompression { .. } => {
            "content_unreadable"
        }
        ArchiveError::Limit(_) => "content_too_large",
        ArchiveError::Write { .. } => "content_write_failed",
        _ => "content_unsafe",
    }
}

/// Renders an error and its causes as `outer: cause: root cause`, skipping a cause
/// whose text the previous message already ends with (transparent wrappers).
pub fn report(err: &(dyn std::error::Error + 'static)) -> String {
    let mut out = err.to_string();
    let mut current = err.source();
    while let Some(cause) = current {
        let text = cause.to_string();
        if !text.is_empty() && !out.ends_with(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        current = cause.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::LimitError;

    #[test]
    fn report_joins_causes_once() {
        let err = ImageError::Content {
            reference: "quay.io/a/b:1".to_owned(),
            source: ArchiveError::Limit(LimitError::Entries { limit: 3 }),
        };
        assert_eq!(
            report(&err),
            "failed to unpack image quay.io/a/b:1: failed to extract content: more than 3 entries"
        );
        let wrapped = Error::from(err);
        assert_eq!(
            report(&wrapped),
            "failed to unpack image quay.io/a/b:1: failed to extract content: more than 3 entries"
        );
    }

    #[test]
    fn content_errors_are_invalid_spec_and_timeouts_are_transient() {
        let refused = Error::Archive(ArchiveError::SymlinkLoop { path: "a".into() });
        assert_eq!(refused.retry(), Retry::WaitForChange);
        assert_eq!(refused.label(), "content_unsafe");
        let timeout = Error::Http(HttpError::Timeout { url: "u".into() });
        assert_eq!(timeout.retry(), Retry::Backoff);
        assert_eq!(timeout.label(), "http_timeout");
    }
}
