//! Uploads: content a caller already has (a tar.gz or a local directory) is checked,
//! normalised and written to the content store for a kind of user, through the same rules
//! as every other source. There is no upload server: a CLI or controller calls this.

use std::path::{Path, PathBuf};

use bytes::Bytes;

use crate::archive_error::ArchiveError;
use crate::content::Content;
use crate::extract::Extractor;
use crate::limits::{LimitError, Limits};
use crate::store::{Store, StoreError, StoredContent};

/// What to upload.
#[derive(Debug, Clone)]
pub enum UploadInput {
    /// A tar or tar.gz in memory.
    Archive(Bytes),
    /// A local directory; its contents become the content root.
    Directory(PathBuf),
}

/// Why an upload failed.
#[derive(Debug, thiserror::Error)]
pub enum UploadError {
    /// The directory (or a file in it) cannot be read.
    #[error("failed to read upload directory {path}")]
    Read {
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The content is not acceptable.
    #[error("failed to accept uploaded content")]
    Content {
        /// What was refused.
        #[source]
        source: ArchiveError,
    },
    /// The store failed.
    #[error("failed to store uploaded content")]
    Store {
        /// The store error.
        #[source]
        source: StoreError,
    },
    /// The normalisation task failed.
    #[error("failed to accept uploaded content: the normalisation task failed")]
    Task,
}

impl UploadError {
    /// Whether retrying cannot help: unreadable or unacceptable input is terminal, the
    /// store decides for its own errors.
    pub fn is_terminal(&self) -> bool {
        match self {
            UploadError::Read { .. } | UploadError::Content { .. } => true,
            UploadError::Store { source } => source.is_terminal(),
            UploadError::Task => false,
        }
    }

    /// A stable snake_case label for metrics and event reasons.
    pub fn label(&self) -> &'static str {
        match self {
            UploadError::Read { .. } => "upload_unreadable",
            UploadError::Content { .. } => "upload_invalid_content",
            UploadError::Store { source } => source.label(),
            UploadError::Task => "upload_task_failed",
        }
    }
}

/// Normalises `input` and writes it to `store` for objects of kind `user` (writing nothing
/// when the same content is already stored for that kind).
pub async fn upload(
    store: &Store,
    user: &str,
    input: UploadInput,
    limits: &Limits,
) -> Result<StoredContent, UploadError> {
    let content = normalize(input, limits).await?;
    store
        .write(&content, user)
        .await
        .map_err(|source| UploadError::Store { source })
}

/// Normalises `input` without storing it.
pub async fn normalize(input: UploadInput, limits: &Limits) -> Result<Content, UploadError> {
    let limits = *limits;
    tokio::task::spawn_blocking(move || match input {
        UploadInput::Archive(data) => Content::normalize(data.as_ref(), &limits)
            .map_err(|source| UploadError::Content { source }),
        UploadInput::Directory(dir) => {
            let mut extractor = Extractor::new(limits);
            add_directory(&mut extractor, &dir, &dir, &limits)?;
            extractor
                .finish()
                .map_err(|source| UploadError::Content { source })
        }
    })
    .await
    .map_err(|_| UploadError::Task)?
}

/// Adds everything below `dir`; symlinks are kept as links (and must stay inside),
/// anything but files, directories and symlinks is refused.
fn add_directory(
    extractor: &mut Extractor,
    root: &Path,
    dir: &Path,
    limits: &Limits,
) -> Result<(), UploadError> {
    use std::os::unix::fs::PermissionsExt;
    let read_err = |path: &Path| {
        let path = path.to_owned();
        move |source| UploadError::Read { path, source }
    };
    let content_err = |source| UploadError::Content { source };
    let mut entries = std::fs::read_dir(dir)
        .map_err(read_err(dir))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(read_err(dir))?;
    entries.sort_by_key(|entry| entry.file_name());
    for entry in entries {
        let path = entry.path();
        let relative = path
            .strip_prefix(root)
            .ok()
            .and_then(Path::to_str)
            .ok_or_else(|| {
                content_err(ArchiveError::InvalidPath {
                    path: path.display().to_string(),
                    problem: crate::paths::PathProblem::NotUtf8,
                })
            })?
            .to_owned();
        let metadata = std::fs::symlink_metadata(&path).map_err(read_err(&path))?;
        let file_type = metadata.file_type();
        if file_type.is_dir() {
            extractor.add_dir(&relative).map_err(content_err)?;
            add_directory(extractor, root, &path, limits)?;
        } else if file_type.is_symlink() {
            let target = std::fs::read_link(&path).map_err(read_err(&path))?;
            let target = target.to_str().ok_or_else(|| {
                content_err(ArchiveError::LinkEscapes {
                    path: relative.clone(),
                    target: target.display().to_string(),
                })
            })?;
            extractor
                .add_symlink(&relative, target)
                .map_err(content_err)?;
        } else if file_type.is_file() {
            // Refuse before reading: the file may be larger than memory should hold.
            if metadata.len() > limits.max_uncompressed_bytes {
                return Err(content_err(ArchiveError::Limit(LimitError::Size {
                    limit: limits.max_uncompressed_bytes,
                })));
            }
            let data = std::fs::read(&path).map_err(read_err(&path))?;
            let executable = metadata.permissions().mode() & 0o111 != 0;
            extractor
                .add_file(&relative, data, executable)
                .map_err(content_err)?;
        } else {
            return Err(content_err(ArchiveError::UnsupportedEntry {
                path: relative,
                kind: "special file".to_owned(),
            }));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::TarBuilder;

    #[tokio::test]
    async fn a_directory_and_the_same_files_as_a_tar_normalise_to_the_same_digest() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("manifests")).unwrap();
        std::fs::write(dir.path().join("manifests/a.yaml"), b"a").unwrap();
        let from_dir = normalize(
            UploadInput::Directory(dir.path().to_owned()),
            &Limits::default(),
        )
        .await
        .unwrap();
        let tar = TarBuilder::new()
            .dir("manifests")
            .file("manifests/a.yaml", b"a")
            .build();
        let from_tar = normalize(UploadInput::Archive(Bytes::from(tar)), &Limits::default())
            .await
            .unwrap();
        assert_eq!(from_dir.digest(), from_tar.digest());
    }

    #[tokio::test]
    async fn symlinks_out_of_an_uploaded_directory_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("/etc/passwd", dir.path().join("passwd")).unwrap();
        let err = normalize(
            UploadInput::Directory(dir.path().to_owned()),
            &Limits::default(),
        )
        .await
        .unwrap_err();
        assert!(
            matches!(
                err,
                UploadError::Content {
                    source: ArchiveError::LinkEscapes { .. }
                }
            ),
            "{err}"
        );
        assert!(err.is_terminal());
    }

    #[tokio::test]
    async fn a_missing_directory_is_a_read_error() {
        let err = normalize(
            UploadInput::Directory(PathBuf::from("/nonexistent/upload")),
            &Limits::default(),
        )
        .await
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "failed to read upload directory /nonexistent/upload"
        );
    }
}
