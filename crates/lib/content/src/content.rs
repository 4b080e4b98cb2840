//! Normalised content and the in-memory file map consumers read it as.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use bytes::Bytes;
use sha2::{Digest as _, Sha256};

use crate::archive_error::ArchiveError;
use crate::digest::Digest;
use crate::paths;
use crate::spill::FileData;
use crate::spool::Body;
use crate::tree::{Node, Resolved, Tree};

/// A normalised tar.gz and its sha256 digest.
///
/// Small content is held in memory; large content (more than a few MiB) lives in an
/// unnamed temporary file that every clone shares and that disappears with the last one
/// (see [`Content::is_in_memory`]). Either way the bytes are read with
/// [`Content::reader`], [`Content::read_at`] or, all at once, [`Content::to_bytes`].
///
/// [`Content::normalize`] and [`Content::files`] are defined in [`crate::extract`], next to
/// the [`Extractor`](crate::extract::Extractor) they run.
#[derive(Clone)]
pub struct Content {
    body: Body,
    digest: Digest,
}

/// Bytes whose digest is not the one expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("failed to verify content: digest is {actual}, want {expected}")]
pub struct DigestMismatch {
    /// The digest that was asked for.
    pub expected: Digest,
    /// The digest of the bytes.
    pub actual: Digest,
}

impl Content {
    /// Wraps bytes that were normalised by this crate and stored, after checking they
    /// still have the digest they were stored under.
    pub fn verified(data: Bytes, expected: &Digest) -> Result<Self, DigestMismatch> {
        let actual = Digest::of(&data);
        Self::checked(Body::Memory(data), actual, expected)
    }

    /// Content whose bytes were hashed (to `actual`) while they were written to `body`,
    /// if that is the digest expected.
    pub(crate) fn checked(
        body: Body,
        actual: Digest,
        expected: &Digest,
    ) -> Result<Self, DigestMismatch> {
        if &actual != expected {
            return Err(DigestMismatch {
                expected: expected.clone(),
                actual,
            });
        }
        Ok(Self {
            body,
            digest: actual,
        })
    }

    /// Wraps a file of normalised content after checking, while reading it through
    /// once, that it has the digest it was stored under. The file is read with
    /// positioned reads from then on, never written: keep it unchanged (e.g. a file that
    /// is only ever replaced by renaming).
    pub fn verified_file(
        file: std::fs::File,
        expected: &Digest,
    ) -> std::io::Result<Result<Self, DigestMismatch>> {
        let len = file.metadata()?.len();
        let body = Body::File {
            file: std::sync::Arc::new(file),
            len,
        };
        let mut hasher = Sha256::new();
        std::io::copy(&mut body.reader(), &mut HashWriter(&mut hasher))?;
        let actual = Digest::from_bytes(hasher.finalize().into());
        Ok(Self::checked(body, actual, expected))
    }

    pub(crate) fn from_body(body: Body, digest: Digest) -> Self {
        Self { body, digest }
    }

    /// All the tar.gz bytes in one buffer (read from the file for large content: prefer
    /// [`Content::reader`] there).
    pub fn to_bytes(&self) -> std::io::Result<Bytes> {
        self.body.to_bytes()
    }

    /// A reader of the tar.gz bytes from the start.
    pub fn reader(&self) -> impl std::io::Read + Send + 'static {
        self.body.reader()
    }

    /// Reads up to `buf.len()` bytes at `offset`; fewer only at the end.
    pub fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<usize> {
        self.body.read_at(offset, buf)
    }

    /// `len` bytes at `offset` (fewer at the end), e.g. one chunk for the store.
    pub fn slice(&self, offset: u64, len: usize) -> std::io::Result<Bytes> {
        self.body.slice(offset, len)
    }

    /// Whether the bytes are in memory rather than in a temporary file.
    pub fn is_in_memory(&self) -> bool {
        matches!(self.body, Body::Memory(_))
    }

    /// The sha256 digest of the tar.gz bytes.
    pub fn digest(&self) -> &Digest {
        &self.digest
    }

    /// Size of the tar.gz in bytes.
    pub fn size(&self) -> u64 {
        self.body.len()
    }
}

/// Feeds what is written to a hasher.
pub(crate) struct HashWriter<'a>(pub(crate) &'a mut Sha256);

impl std::io::Write for HashWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Content is equal when its digest is: the digest is the sha256 of the bytes.
impl PartialEq for Content {
    fn eq(&self, other: &Self) -> bool {
        self.digest == other.digest && self.size() == other.size()
    }
}

impl Eq for Content {}

impl fmt::Debug for Content {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Content")
            .field("digest", &self.digest)
            .field("size", &self.size())
            .field("in_memory", &self.is_in_memory())
            .finish()
    }
}

/// Content as files in memory: path (relative, `/`-separated, no leading `./`) to bytes.
///
/// Symlinks are resolved: a link to a file appears as a copy of that file, a link to a
/// directory as copies of the regular files directly and indirectly below it; dangling
/// links do not appear.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileMap {
    files: BTreeMap<String, Bytes>,
    dirs: BTreeSet<String>,
}

impl FileMap {
    /// The files of a tree assembled in memory, with symlinks resolved to copies.
    pub(crate) fn from_tree(tree: &Tree) -> Result<Self, ArchiveError> {
        let mut map = FileMap::default();
        for (path, node) in tree.nodes() {
            match node {
                Node::Dir => {
                    map.dirs.insert(path.clone());
                }
                Node::File {
                    data: FileData::Memory(data),
                    ..
                } => {
                    map.files.insert(path.clone(), data.clone());
                }
                Node::File { .. } => {
                    return Err(ArchiveError::Write {
                        source: std::io::Error::other(format!(
                            "file {path:?} was spilled while reading content into memory"
                        )),
                    });
                }
                Node::Symlink { .. } => {}
            }
        }
        for (path, node) in tree.nodes() {
            let Node::Symlink { target } = node else {
                continue;
            };
            // Validated when the tree was finished, so errors cannot happen here.
            let Ok(Resolved::Found(resolved)) = tree.resolve_link(path, target) else {
                continue;
            };
            match tree.get(&resolved) {
                Some(Node::File {
                    data: FileData::Memory(data),
                    ..
                }) => {
                    map.files.insert(path.clone(), data.clone());
                }
                Some(Node::Dir) => {
                    let below: Vec<(String, Bytes)> = map
                        .files
                        .iter()
                        .filter_map(|(file, data)| {
                            paths::strip_dir(file, &resolved)
                                .filter(|rest| !rest.is_empty() && !resolved.is_empty())
                                .map(|rest| (paths::join(path, rest), data.clone()))
                        })
                        .collect();
                    map.dirs.insert(path.clone());
                    map.files.extend(below);
                }
                _ => {}
            }
        }
        Ok(map)
    }

    /// The file at `path`, if any.
    pub fn get(&self, path: &str) -> Option<&Bytes> {
        self.files.get(path)
    }

    /// All files, in path order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Bytes)> {
        self.files.iter().map(|(path, data)| (path.as_str(), data))
    }

    /// All directories (including empty ones), in path order.
    pub fn dirs(&self) -> impl Iterator<Item = &str> {
        self.dirs.iter().map(String::as_str)
    }

    /// Files directly in `dir` (`""`: the root), as (name, bytes).
    pub fn files_in<'a>(&'a self, dir: &'a str) -> impl Iterator<Item = (&'a str, &'a Bytes)> {
        self.files.iter().filter_map(move |(path, data)| {
            let rest = paths::strip_dir(path, dir)?;
            (!rest.is_empty() && !rest.contains('/')).then_some((rest, data))
        })
    }

    /// Directories directly in `dir` (`""`: the root), as names.
    pub fn dirs_in<'a>(&'a self, dir: &'a str) -> impl Iterator<Item = &'a str> {
        self.dirs.iter().filter_map(move |path| {
            let rest = paths::strip_dir(path, dir)?;
            (!rest.is_empty() && !rest.contains('/')).then_some(rest)
        })
    }

    /// Number of files.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// True when there are no files.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Total size of all files in bytes.
    pub fn total_size(&self) -> u64 {
        self.files.values().map(|data| data.len() as u64).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::Limits;
    use crate::testutil::TarBuilder;

    #[test]
    fn verified_content_refuses_bytes_with_another_digest() {
        let content = Content::normalize(
            &TarBuilder::new().file("a", b"1").build()[..],
            &Limits::default(),
        )
        .unwrap();
        let err = Content::verified(Bytes::from_static(b"tampered"), content.digest()).unwrap_err();
        assert_eq!(&err.expected, content.digest());
        assert!(
            err.to_string()
                .starts_with("failed to verify content: digest is sha256:")
        );
        assert_eq!(
            Content::verified(content.to_bytes().unwrap(), content.digest()).unwrap(),
            content
        );
    }

    #[test]
    fn file_map_lists_files_and_directories_per_directory() {
        let tar = TarBuilder::new()
            .file("manifests/a.yaml", b"a")
            .file("manifests/sub/b.yaml", b"b")
            .dir("manifests/empty")
            .file("metadata/annotations.yaml", b"m")
            .build();
        let files = Content::normalize(&tar[..], &Limits::default())
            .unwrap()
            .files(&Limits::default())
            .unwrap();
        assert_eq!(files.len(), 3);
        assert_eq!(files.total_size(), 3);
        let names: Vec<&str> = files.files_in("manifests").map(|(n, _)| n).collect();
        assert_eq!(names, ["a.yaml"]);
        let dirs: Vec<&str> = files.dirs_in("manifests").collect();
        assert_eq!(dirs, ["empty", "sub"]);
        let top: Vec<&str> = files.dirs_in("").collect();
        assert_eq!(top, ["manifests", "metadata"]);
    }

    #[test]
    fn directory_symlinks_expose_the_files_below_them() {
        let tar = TarBuilder::new()
            .file("real/a.yaml", b"a")
            .file("real/deep/b.yaml", b"b")
            .symlink("manifests", "real")
            .build();
        let files = Content::normalize(&tar[..], &Limits::default())
            .unwrap()
            .files(&Limits::default())
            .unwrap();
        assert_eq!(
            files.get("manifests/a.yaml").map(|b| b.as_ref()),
            Some(&b"a"[..])
        );
        assert_eq!(
            files.get("manifests/deep/b.yaml").map(|b| b.as_ref()),
            Some(&b"b"[..])
        );
    }
}
