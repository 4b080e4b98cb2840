//! Safe extraction: incoming archives (and files from other sources) are read into an
//! in-memory tree, never onto disk, refusing anything that could escape the content
//! root or exhaust the process.
//!
//! Refused: absolute paths and `..`, symlinks whose target leaves the root (also via
//! other symlinks), hard links to anything but an earlier regular file, device files,
//! fifos and sparse files, and archives past the [`Limits`].

use std::cell::Cell;
use std::io::{BufRead, BufReader, Read};
use std::rc::Rc;

use bytes::Bytes;
use flate2::read::MultiGzDecoder;
use tar::EntryType;

use crate::archive_error::ArchiveError;
use crate::content::{Content, FileMap};
use crate::limits::{CountingReader, LimitError, LimitedReader, Limits, Usage};
use crate::normalize;
use crate::paths;
use crate::tree::{Node, Tree};

/// Name of the marker that makes a directory opaque in an image layer.
const OPAQUE_MARKER: &str = ".wh..wh..opq";
/// Prefix of whiteout files in image layers.
const WHITEOUT_PREFIX: &str = ".wh.";

/// Assembles content from archives and individual files, then normalises it.
#[derive(Debug)]
pub struct Extractor {
    limits: Limits,
    usage: Usage,
    tree: Tree,
    /// Clean path of the directory to keep from archives (`""`: everything).
    directory: String,
    /// Interpret image-layer whiteouts.
    layered: bool,
}

impl Extractor {
    /// An empty extractor enforcing `limits`.
    pub fn new(limits: Limits) -> Self {
        Self {
            limits,
            usage: Usage::default(),
            tree: Tree::default(),
            directory: String::new(),
            layered: false,
        }
    }

    /// Treats archives as image layers, applied in the order they are added:
    /// `.wh.<name>` deletes `<name>` from lower layers and `.wh..wh..opq` empties its
    /// directory of lower-layer entries. Without this, such names are ordinary files.
    pub fn layered(mut self) -> Self {
        self.layered = true;
        self
    }

    /// Keeps only `directory` (relative to the archive root) from archives, and makes it
    /// the root of the content. Entries outside it are checked for path traversal and
    /// counted against the limits, but otherwise ignored.
    pub fn with_directory(mut self, directory: &str) -> Result<Self, ArchiveError> {
        self.directory = paths::clean_str(directory)
            .map_err(|problem| ArchiveError::invalid_path(directory.as_bytes(), problem))?;
        Ok(self)
    }

    /// Reads one tar archive, gzip-compressed or not (detected from its first bytes).
    pub fn add_archive(&mut self, reader: impl Read) -> Result<(), ArchiveError> {
        let mut buffered = BufReader::with_capacity(64 * 1024, reader);
        let head = buffered.fill_buf().map_err(ArchiveError::from_read)?;
        let compressed = Rc::new(Cell::new(0u64));
        let read = Rc::new(Cell::new(0u64));
        let base = self.usage.bytes;
        let limited: LimitedReader<Box<dyn Read + '_>> = if head.starts_with(&[0x1f, 0x8b]) {
            let decoder = MultiGzDecoder::new(CountingReader::new(buffered, compressed.clone()));
            LimitedReader::new(
                Box::new(decoder),
                self.limits,
                base,
                read.clone(),
                Some(compressed),
            )
        } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            return Err(ArchiveError::UnsupportedCompression {
                compression: "zstd",
            });
        } else if head.starts_with(b"BZh") {
            return Err(ArchiveError::UnsupportedCompression {
                compression: "bzip2",
            });
        } else if head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0x00]) {
            return Err(ArchiveError::UnsupportedCompression { compression: "xz" });
        } else {
            LimitedReader::new(Box::new(buffered), self.limits, base, read.clone(), None)
        };

        self.tree.start_layer();
        let mut archive = tar::Archive::new(limited);
        let result = self.read_entries(&mut archive, base, &read);
        self.usage.bytes = base.saturating_add(read.get());
        result
    }

    fn read_entries<R: Read>(
        &mut self,
        archive: &mut tar::Archive<R>,
        base: u64,
        read: &Rc<Cell<u64>>,
    ) -> Result<(), ArchiveError> {
        for entry in archive.entries().map_err(ArchiveError::from_read)? {
            let mut entry = entry.map_err(ArchiveError::from_read)?;
            self.usage.add_entry(&self.limits)?;
            let raw_path = entry.path_bytes().into_owned();
            let path = paths::clean(&raw_path)
                .map_err(|problem| ArchiveError::invalid_path(&raw_path, problem))?;
            let entry_type = entry.header().entry_type();

            if self.layered && self.apply_whiteout(&path) {
                continue;
            }
            let Some(relative) = paths::strip_dir(&path, &self.directory) else {
                continue;
            };
            if relative.is_empty() {
                // The root (or the selected directory) itself.
                continue;
            }
            let relative = relative.to_owned();

            match entry_type {
                EntryType::Regular | EntryType::Continuous => {
                    let size = entry.size();
                    let used = base.saturating_add(read.get());
                    if used.saturating_add(size) > self.limits.max_uncompressed_bytes {
                        return Err(LimitError::Size {
                            limit: self.limits.max_uncompressed_bytes,
                        }
                        .into());
                    }
                    // The header's size is not trusted for the allocation: a lying header
                    // would otherwise reserve memory the data never fills.
                    let capacity = usize::try_from(size.min(8 * 1024 * 1024)).unwrap_or(0);
                    let mut data = Vec::with_capacity(capacity);
                    entry
                        .read_to_end(&mut data)
                        .map_err(ArchiveError::from_read)?;
                    let mode = entry.header().mode().unwrap_or(0o644);
                    self.tree.insert(
                        &relative,
                        Node::File {
                            data: Bytes::from(data),
                            executable: mode & 0o111 != 0,
                        },
                    )?;
                }
                EntryType::Directory => self.tree.insert(&relative, Node::Dir)?,
                EntryType::Symlink => {
                    let target = entry.link_name_bytes().unwrap_or_default().into_owned();
                    let target = link_target(&relative, &target)?;
                    self.tree.insert(&relative, Node::Symlink { target })?;
                }
                EntryType::Link => {
                    let raw_target = entry.link_name_bytes().unwrap_or_default().into_owned();
                    let target = paths::clean(&raw_target)
                        .map_err(|problem| ArchiveError::invalid_path(&raw_target, problem))?;
                    let target = paths::strip_dir(&target, &self.directory)
                        .filter(|t| !t.is_empty())
                        .ok_or_else(|| ArchiveError::HardLinkTarget {
                            path: relative.clone(),
                            target: target.clone(),
                        })?
                        .to_owned();
                    self.tree.hard_link(&relative, &target)?;
                }
                // A pax global header carries defaults we do not use (times, owners).
                EntryType::XGlobalHeader => {}
                other => {
                    return Err(ArchiveError::UnsupportedEntry {
                        path: relative,
                        kind: entry_kind(other),
                    });
                }
            }
        }
        Ok(())
    }

    /// Handles a whiteout or opaque marker; true if `path` was one.
    fn apply_whiteout(&mut self, path: &str) -> bool {
        let name = paths::file_name(path);
        let parent = paths::parent(path);
        if name == OPAQUE_MARKER {
            match paths::strip_dir(parent, &self.directory) {
                Some(relative) => self.tree.opaque(relative),
                // The selected directory lies inside the opaque directory.
                None if paths::strip_dir(&self.directory, parent).is_some() => self.tree.opaque(""),
                None => {}
            }
            return true;
        }
        let Some(target_name) = name.strip_prefix(WHITEOUT_PREFIX) else {
            return false;
        };
        // Other `.wh..wh.` names are AUFS bookkeeping, not deletions.
        if target_name.starts_with(WHITEOUT_PREFIX) {
            return true;
        }
        let target = paths::join(parent, target_name);
        match paths::strip_dir(&target, &self.directory) {
            Some("") => self.tree.opaque(""),
            Some(relative) => self.tree.whiteout(relative),
            None if paths::strip_dir(&self.directory, &target).is_some() => self.tree.opaque(""),
            None => {}
        }
        true
    }

    /// Adds a regular file at a path relative to the content root.
    pub fn add_file(
        &mut self,
        path: &str,
        data: impl Into<Bytes>,
        executable: bool,
    ) -> Result<(), ArchiveError> {
        let data = data.into();
        let path = self.accept(path)?;
        self.usage.add_bytes(&self.limits, data.len() as u64)?;
        self.tree.insert(&path, Node::File { data, executable })
    }

    /// Adds a directory at a path relative to the content root.
    pub fn add_dir(&mut self, path: &str) -> Result<(), ArchiveError> {
        let path = self.accept(path)?;
        if path.is_empty() {
            return Ok(());
        }
        self.tree.insert(&path, Node::Dir)
    }

    /// Adds a symlink at a path relative to the content root (its target is checked when
    /// the content is finished).
    pub fn add_symlink(&mut self, path: &str, target: &str) -> Result<(), ArchiveError> {
        let path = self.accept(path)?;
        let target = link_target(&path, target.as_bytes())?;
        self.tree.insert(&path, Node::Symlink { target })
    }

    fn accept(&mut self, path: &str) -> Result<String, ArchiveError> {
        let clean = paths::clean_str(path)
            .map_err(|problem| ArchiveError::invalid_path(path.as_bytes(), problem))?;
        self.usage.add_entry(&self.limits)?;
        Ok(clean)
    }

    /// Checks the links of the assembled tree and writes the normalised archive.
    pub fn finish(self) -> Result<Content, ArchiveError> {
        normalize::write(self.into_tree()?)
    }

    /// The assembled tree after its links have been checked.
    pub(crate) fn into_tree(self) -> Result<Tree, ArchiveError> {
        self.tree.validate()?;
        Ok(self.tree)
    }
}

// `Content` is defined in `content` without these two, because they run the extractor and
// the extractor produces `Content`: defining them there would make the modules depend on
// each other.
impl Content {
    /// Normalises any tar or tar.gz: it is extracted safely (see [`Extractor`]) and
    /// written back in normalised form.
    pub fn normalize(archive: impl Read, limits: &Limits) -> Result<Self, ArchiveError> {
        let mut extractor = Extractor::new(*limits);
        extractor.add_archive(archive)?;
        extractor.finish()
    }

    /// Reads the content back as files. The archive is checked again with the same
    /// rules as on the way in, so content from anywhere can be read safely.
    pub fn files(&self, limits: &Limits) -> Result<FileMap, ArchiveError> {
        let mut extractor = Extractor::new(*limits);
        extractor.add_archive(self.data().as_ref())?;
        Ok(FileMap::from_tree(&extractor.into_tree()?))
    }
}

/// A symlink target as text; its containment is checked later against the final tree.
fn link_target(path: &str, raw: &[u8]) -> Result<String, ArchiveError> {
    let target = std::str::from_utf8(raw).map_err(|_| ArchiveError::LinkEscapes {
        path: path.to_owned(),
        target: String::from_utf8_lossy(raw).into_owned(),
    })?;
    if target.is_empty() || target.contains('\0') || target.starts_with('/') {
        return Err(ArchiveError::LinkEscapes {
            path: path.to_owned(),
            target: target.to_owned(),
        });
    }
    Ok(target.to_owned())
}

fn entry_kind(entry_type: EntryType) -> String {
    match entry_type {
        EntryType::Char => "character device".to_owned(),
        EntryType::Block => "block device".to_owned(),
        EntryType::Fifo => "fifo".to_owned(),
        EntryType::GNUSparse => "sparse file".to_owned(),
        other => format!("{other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paths::PathProblem;
    use crate::testutil::{TarBuilder, gzip};

    fn extract(data: &[u8]) -> Result<Content, ArchiveError> {
        let mut extractor = Extractor::new(Limits::default());
        extractor.add_archive(data)?;
        extractor.finish()
    }

    fn files(content: &Content) -> Vec<(String, String)> {
        content
            .files(&Limits::default())
            .unwrap()
            .iter()
            .map(|(path, data)| (path.to_owned(), String::from_utf8_lossy(data).into_owned()))
            .collect()
    }

    #[test]
    fn plain_and_gzipped_tars_are_both_accepted() {
        let tar = TarBuilder::new().file("manifests/a.yaml", b"a").build();
        let plain = extract(&tar).unwrap();
        let gzipped = extract(&gzip(&tar)).unwrap();
        assert_eq!(plain.digest(), gzipped.digest());
        assert_eq!(files(&plain), [("manifests/a.yaml".into(), "a".into())]);
    }

    #[test]
    fn parent_directory_traversal_is_refused() {
        let tar = TarBuilder::new().file("../x", b"evil").build();
        let err = extract(&tar).unwrap_err();
        assert!(
            matches!(
                err,
                ArchiveError::InvalidPath {
                    problem: PathProblem::ParentDir,
                    ..
                }
            ),
            "{err}"
        );
        assert_eq!(
            err.to_string(),
            "failed to accept entry \"../x\": '..' components are not allowed"
        );
    }

    #[test]
    fn absolute_paths_are_refused() {
        let tar = TarBuilder::new().file("/etc/passwd", b"evil").build();
        assert!(matches!(
            extract(&tar),
            Err(ArchiveError::InvalidPath {
                problem: PathProblem::Absolute,
                ..
            })
        ));
    }

    #[test]
    fn symlinks_out_of_the_root_are_refused() {
        for target in ["../../etc/passwd", "/etc/passwd"] {
            let tar = TarBuilder::new().symlink("manifests/x", target).build();
            let err = extract(&tar).unwrap_err();
            assert!(
                matches!(err, ArchiveError::LinkEscapes { .. }),
                "{target}: {err}"
            );
        }
    }

    #[test]
    fn symlinks_inside_the_root_are_kept_and_read_as_files() {
        let tar = TarBuilder::new()
            .file("data/real.yaml", b"x")
            .symlink("manifests/alias.yaml", "../data/real.yaml")
            .build();
        let content = extract(&tar).unwrap();
        assert_eq!(
            files(&content),
            [
                ("data/real.yaml".into(), "x".into()),
                ("manifests/alias.yaml".into(), "x".into())
            ]
        );
    }

    #[test]
    fn hard_links_out_of_the_root_are_refused() {
        let tar = TarBuilder::new().hard_link("x", "../etc/passwd").build();
        assert!(matches!(
            extract(&tar),
            Err(ArchiveError::InvalidPath {
                problem: PathProblem::ParentDir,
                ..
            })
        ));
        let tar = TarBuilder::new().hard_link("x", "missing").build();
        assert!(matches!(
            extract(&tar),
            Err(ArchiveError::HardLinkTarget { .. })
        ));
    }

    #[test]
    fn hard_links_to_earlier_files_become_copies() {
        let tar = TarBuilder::new()
            .file("a", b"data")
            .hard_link("b", "a")
            .build();
        let content = extract(&tar).unwrap();
        assert_eq!(
            files(&content),
            [("a".into(), "data".into()), ("b".into(), "data".into())]
        );
    }

    #[test]
    fn device_files_and_fifos_are_refused() {
        for (entry_type, kind) in [
            (EntryType::Char, "character device"),
            (EntryType::Block, "block device"),
            (EntryType::Fifo, "fifo"),
        ] {
            let tar = TarBuilder::new().special("dev/x", entry_type).build();
            let err = extract(&tar).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("failed to accept entry \"dev/x\": {kind} entries are not allowed")
            );
        }
    }

    #[test]
    fn garbage_is_a_read_error() {
        let err = extract(&gzip(b"this is not a tar archive, just some text")).unwrap_err();
        assert!(matches!(err, ArchiveError::Read { .. }), "{err}");
    }

    #[test]
    fn zstd_archives_are_refused_with_a_clear_message() {
        let err = extract(&[0x28, 0xb5, 0x2f, 0xfd, 0, 0, 0]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "failed to read archive: zstd compression is not supported (use gzip)"
        );
    }

    #[test]
    fn a_gzip_bomb_is_refused_by_the_ratio_limit_before_it_is_read() {
        // 64 MiB of zeros in one file compresses to ~64 KiB.
        let tar = TarBuilder::new()
            .file("bomb", &vec![0u8; 64 * 1024 * 1024])
            .build();
        let bomb = gzip(&tar);
        assert!(bomb.len() < 200 * 1024, "bomb is {} bytes", bomb.len());
        let err = extract(&bomb).unwrap_err();
        match err {
            ArchiveError::Limit(LimitError::Ratio {
                limit,
                uncompressed,
                ..
            }) => {
                assert_eq!(limit, 100);
                assert!(uncompressed < 16 * 1024 * 1024, "read {uncompressed} bytes");
            }
            other => panic!("expected a ratio error, got {other}"),
        }
    }

    #[test]
    fn the_total_size_limit_applies_even_when_the_ratio_is_allowed() {
        let tar = TarBuilder::new()
            .file("big", &vec![7u8; 3 * 1024 * 1024])
            .build();
        let limits = Limits {
            max_uncompressed_bytes: 2 * 1024 * 1024,
            max_compression_ratio: u64::MAX,
            ..Limits::default()
        };
        let mut extractor = Extractor::new(limits);
        let err = extractor.add_archive(&gzip(&tar)[..]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "failed to extract content: uncompressed size exceeds the limit of 2097152 bytes"
        );
    }

    #[test]
    fn the_size_limit_counts_all_archives_together() {
        let tar = TarBuilder::new().file("a", &vec![1u8; 600 * 1024]).build();
        let limits = Limits {
            max_uncompressed_bytes: 1024 * 1024,
            ..Limits::default()
        };
        let mut extractor = Extractor::new(limits);
        extractor.add_archive(&tar[..]).unwrap();
        assert!(matches!(
            extractor.add_archive(&tar[..]),
            Err(ArchiveError::Limit(LimitError::Size { .. }))
        ));
    }

    #[test]
    fn too_many_entries_are_refused() {
        let mut builder = TarBuilder::new();
        for i in 0..11 {
            builder = builder.file(&format!("f{i}"), b"x");
        }
        let limits = Limits {
            max_entries: 10,
            ..Limits::default()
        };
        let mut extractor = Extractor::new(limits);
        let err = extractor.add_archive(&builder.build()[..]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "failed to extract content: more than 10 entries"
        );
    }

    #[test]
    fn a_header_that_claims_a_huge_size_is_refused_without_allocating_it() {
        let tar = TarBuilder::new().lying_size("x", 1 << 40).build();
        assert!(matches!(
            extract(&tar),
            Err(ArchiveError::Limit(LimitError::Size { .. }))
        ));
    }

    #[test]
    fn layers_apply_whiteouts_and_opaque_directories() {
        let lower = TarBuilder::new()
            .file("manifests/a.yaml", b"a1")
            .file("manifests/b.yaml", b"b1")
            .file("etc/old/x", b"x")
            .file("etc/keep", b"k")
            .build();
        let upper = TarBuilder::new()
            .file("manifests/a.yaml", b"a2")
            .file("manifests/.wh.b.yaml", b"")
            .file("etc/old/.wh..wh..opq", b"")
            .file("etc/old/new", b"n")
            .build();
        let mut extractor = Extractor::new(Limits::default()).layered();
        extractor.add_archive(&gzip(&lower)[..]).unwrap();
        extractor.add_archive(&gzip(&upper)[..]).unwrap();
        let content = extractor.finish().unwrap();
        assert_eq!(
            files(&content),
            [
                ("etc/keep".into(), "k".into()),
                ("etc/old/new".into(), "n".into()),
                ("manifests/a.yaml".into(), "a2".into()),
            ]
        );
    }

    #[test]
    fn without_layering_whiteout_names_are_ordinary_files() {
        let tar = TarBuilder::new().file("a/.wh.b", b"").build();
        let content = extract(&tar).unwrap();
        assert_eq!(files(&content), [("a/.wh.b".into(), String::new())]);
    }

    #[test]
    fn a_selected_directory_becomes_the_root_and_the_rest_is_ignored() {
        let tar = TarBuilder::new()
            .file("configs/pkg/catalog.json", b"{}")
            .special("dev/null", EntryType::Char)
            .symlink("bin/sh", "/bin/busybox")
            .build();
        let mut extractor = Extractor::new(Limits::default())
            .layered()
            .with_directory("./configs/")
            .unwrap();
        extractor.add_archive(&tar[..]).unwrap();
        let content = extractor.finish().unwrap();
        assert_eq!(files(&content), [("pkg/catalog.json".into(), "{}".into())]);
    }

    #[test]
    fn an_absolute_selected_directory_is_refused() {
        assert!(matches!(
            Extractor::new(Limits::default()).with_directory("/configs"),
            Err(ArchiveError::InvalidPath {
                problem: PathProblem::Absolute,
                ..
            })
        ));
    }

    #[test]
    fn whiting_out_the_selected_directory_empties_the_content() {
        let lower = TarBuilder::new().file("configs/a", b"a").build();
        let upper = TarBuilder::new().file(".wh.configs", b"").build();
        let mut extractor = Extractor::new(Limits::default())
            .layered()
            .with_directory("configs")
            .unwrap();
        extractor.add_archive(&lower[..]).unwrap();
        extractor.add_archive(&upper[..]).unwrap();
        let content = extractor.finish().unwrap();
        assert!(files(&content).is_empty());
    }
}
