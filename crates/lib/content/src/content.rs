//! Normalised content and the in-memory file map consumers read it as.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use bytes::Bytes;

use crate::digest::Digest;
use crate::paths;
use crate::tree::{Node, Resolved, Tree};

/// A normalised tar.gz and its sha256 digest.
///
/// [`Content::normalize`] and [`Content::files`] are defined in [`crate::extract`], next to
/// the [`Extractor`](crate::extract::Extractor) they run.
#[derive(Clone, PartialEq, Eq)]
pub struct Content {
    data: Bytes,
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
        if &actual != expected {
            return Err(DigestMismatch {
                expected: expected.clone(),
                actual,
            });
        }
        Ok(Self {
            data,
            digest: actual,
        })
    }

    pub(crate) fn from_normalised(data: Bytes) -> Self {
        let digest = Digest::of(&data);
        Self { data, digest }
    }

    /// The tar.gz bytes.
    pub fn data(&self) -> &Bytes {
        &self.data
    }

    /// The sha256 digest of [`Content::data`].
    pub fn digest(&self) -> &Digest {
        &self.digest
    }

    /// Size of the tar.gz in bytes.
    pub fn size(&self) -> u64 {
        self.data.len() as u64
    }
}

impl fmt::Debug for Content {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Content")
            .field("digest", &self.digest)
            .field("size", &self.data.len())
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
    /// The files of an assembled tree, with symlinks resolved to copies.
    pub(crate) fn from_tree(tree: &Tree) -> Self {
        let mut map = FileMap::default();
        for (path, node) in tree.nodes() {
            match node {
                Node::Dir => {
                    map.dirs.insert(path.clone());
                }
                Node::File { data, .. } => {
                    map.files.insert(path.clone(), data.clone());
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
                Some(Node::File { data, .. }) => {
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
        map
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
            Content::verified(content.data().clone(), content.digest()).unwrap(),
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
