//! Safe extraction: incoming archives (and files from other sources) are read into a
//! tree of paths, never onto the file system as files, refusing anything that could
//! escape the content root or exhaust the process. File data stays in memory up to a
//! budget and is otherwise spilled to unnamed temporary files, large files already
//! deflated for the normalised archive (see [`crate::spill`]), so memory stays bounded
//! whatever the size of the content.
//!
//! Refused: absolute paths and `..`, symlinks whose target leaves the root (also via
//! other symlinks), hard links to anything but an earlier regular file, device files,
//! fifos and sparse files, and archives past the [`Limits`].

use std::cell::Cell;
use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::rc::Rc;

use bytes::Bytes;
use flate2::read::MultiGzDecoder;
use tar::EntryType;

use crate::archive_error::ArchiveError;
use crate::content::{Content, FileMap};
use crate::limits::{CountingReader, LimitError, LimitedReader, Limits, Usage};
use crate::normalize;
use crate::paths;
use crate::spill::{DEFAULT_MEMORY_BUDGET, FileData, Spill, TakeError};
use crate::spool::SpoolDir;
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
    /// Where file data and the normalised archive go when they do not stay in memory.
    spool_dir: SpoolDir,
    memory_budget: u64,
    spill: Spill,
}

impl Extractor {
    /// An empty extractor enforcing `limits`, spilling to the system's temporary
    /// directory.
    pub fn new(limits: Limits) -> Self {
        Self {
            limits,
            usage: Usage::default(),
            tree: Tree::default(),
            directory: String::new(),
            layered: false,
            spool_dir: SpoolDir::default(),
            memory_budget: DEFAULT_MEMORY_BUDGET,
            spill: Spill::new(SpoolDir::default(), DEFAULT_MEMORY_BUDGET),
        }
    }

    /// Spills file data and the normalised archive into `dir` (created if missing;
    /// `None`: the system's temporary directory). The files have no name: nothing is
    /// left there, whatever happens.
    pub fn with_work_dir(mut self, dir: Option<PathBuf>) -> Self {
        self.spool_dir = SpoolDir::new(dir);
        self.spill
            .configure(self.spool_dir.clone(), self.memory_budget);
        self
    }

    /// Keeps at most `bytes` of small files in memory (default 8 MiB); the rest are
    /// spilled. Large files are always spilled, already deflated.
    pub fn with_memory_budget(mut self, bytes: u64) -> Self {
        self.memory_budget = bytes;
        self.spill
            .configure(self.spool_dir.clone(), self.memory_budget);
        self
    }

    /// Keeps all file data in memory, uncompressed, for reading content back as files.
    fn in_memory(mut self) -> Self {
        self.spill = Spill::in_memory();
        self
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
                    let data = self.spill.take(&mut entry, size).map_err(|err| match err {
                        TakeError::Read(source) => ArchiveError::from_read(source),
                        TakeError::Write(source) => ArchiveError::Write { source },
                    })?;
                    let mode = entry.header().mode().unwrap_or(0o644);
                    self.tree.insert(
                        &relative,
                        Node::File {
                            data,
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
        self.tree.insert(
            &path,
            Node::File {
                data: FileData::Memory(data),
                executable,
            },
        )
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

    /// Checks the links of the assembled tree and writes the normalised archive (in
    /// memory while it is small, else to an unnamed file in the work directory).
    pub fn finish(self) -> Result<Content, ArchiveError> {
        self.tree.validate()?;
        let spilled = self
            .spill
            .finish()
            .map_err(|source| ArchiveError::Write { source })?;
        normalize::write(self.tree, &spilled, self.spool_dir)
    }

    /// The assembled tree after its links have been checked.
    fn into_tree(self) -> Result<Tree, ArchiveError> {
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
        let mut extractor = Extractor::new(*limits).in_memory();
        extractor.add_archive(self.reader())?;
        FileMap::from_tree(&extractor.into_tree()?)
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
    use crate::testutil::{TarBuilder, gzip, random};

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

    fn assert_empty(dir: &std::path::Path) {
        let left: Vec<_> = std::fs::read_dir(dir).unwrap().collect();
        assert!(
            left.is_empty(),
            "files left in the work directory: {left:?}"
        );
    }

    #[test]
    fn spilled_and_in_memory_files_normalise_to_the_same_bytes() {
        let big = random(300 * 1024, 1);
        let text = b"kind: ConfigMap\n".repeat(10_000);
        let tar = TarBuilder::new()
            .file("a/small.yaml", b"a: 1")
            .file("a/big.bin", &big)
            .file("b/text.yaml", &text)
            .hard_link("c/link.bin", "a/big.bin")
            .build();
        let work = tempfile::tempdir().unwrap();
        // Everything spilled: small files past a zero budget, large ones deflated on the
        // worker thread while the archive is read.
        let mut spilled = Extractor::new(Limits::default())
            .with_work_dir(Some(work.path().to_owned()))
            .with_memory_budget(0);
        spilled.add_archive(&gzip(&tar)[..]).unwrap();
        let spilled = spilled.finish().unwrap();
        // Everything in memory, large files deflated while the archive is written.
        let mut in_memory = Extractor::new(Limits::default());
        in_memory
            .add_file("a/small.yaml", &b"a: 1"[..], false)
            .unwrap();
        in_memory.add_file("a/big.bin", big.clone(), false).unwrap();
        in_memory
            .add_file("b/text.yaml", text.clone(), false)
            .unwrap();
        in_memory
            .add_file("c/link.bin", big.clone(), false)
            .unwrap();
        let in_memory = in_memory.finish().unwrap();
        assert_eq!(spilled.digest(), in_memory.digest());
        assert_eq!(spilled.to_bytes().unwrap(), in_memory.to_bytes().unwrap());

        let files = spilled.files(&Limits::default()).unwrap();
        assert_eq!(
            files.get("a/big.bin").map(|b| b.to_vec()),
            Some(big.clone())
        );
        assert_eq!(files.get("c/link.bin").map(|b| b.to_vec()), Some(big));
        assert_eq!(files.get("b/text.yaml").map(|b| b.to_vec()), Some(text));
        // Two copies of the random file, plus the text, which compresses.
        assert!(
            spilled.size() < 2 * 300 * 1024 + 20 * 1024,
            "text compresses: {} bytes",
            spilled.size()
        );
        assert_empty(work.path());
    }

    #[test]
    fn the_normalised_archive_is_one_plain_gzip_member_of_a_plain_tar() {
        let big = random(200 * 1024, 2);
        let tar = TarBuilder::new()
            .file("x/1.yaml", b"one")
            .file("x/big", &big)
            .file("x/2.yaml", b"two")
            .build();
        let content = extract(&tar).unwrap();
        let bytes = content.to_bytes().unwrap();
        assert_eq!(&bytes[..4], &[0x1f, 0x8b, 8, 0]);
        // A single-member decoder reads to the end: the trailer's CRC and size are
        // checked, and nothing follows the member.
        let mut decoded = Vec::new();
        flate2::read::GzDecoder::new(&bytes[..])
            .read_to_end(&mut decoded)
            .unwrap();
        let mut archive = tar::Archive::new(&decoded[..]);
        let mut entries = Vec::new();
        for entry in archive.entries().unwrap() {
            let mut entry = entry.unwrap();
            let mut data = Vec::new();
            entry.read_to_end(&mut data).unwrap();
            entries.push((entry.path().unwrap().display().to_string(), data));
        }
        assert_eq!(
            entries,
            [
                ("x/".to_owned(), vec![]),
                ("x/1.yaml".to_owned(), b"one".to_vec()),
                ("x/2.yaml".to_owned(), b"two".to_vec()),
                ("x/big".to_owned(), big),
            ]
        );
    }

    #[test]
    fn small_files_past_the_memory_budget_are_spilled() {
        let mut builder = TarBuilder::new();
        for i in 0..50u8 {
            builder = builder.file(&format!("f{i:02}"), &random(4096, i));
        }
        let work = tempfile::tempdir().unwrap();
        let mut extractor = Extractor::new(Limits::default())
            .with_work_dir(Some(work.path().to_owned()))
            .with_memory_budget(64 * 1024);
        extractor.add_archive(&builder.build()[..]).unwrap();
        let in_memory: u64 = extractor
            .tree
            .nodes()
            .values()
            .filter_map(|node| match node {
                Node::File {
                    data: FileData::Memory(data),
                    ..
                } => Some(data.len() as u64),
                _ => None,
            })
            .sum();
        assert!(in_memory <= 64 * 1024, "{in_memory} bytes in memory");
        let spilled = extractor
            .tree
            .nodes()
            .values()
            .filter(|node| {
                matches!(
                    node,
                    Node::File {
                        data: FileData::Raw { .. },
                        ..
                    }
                )
            })
            .count();
        assert_eq!(spilled, 50 - 16, "16 files of 4 KiB fit in 64 KiB");
        let content = extractor.finish().unwrap();
        let files = content.files(&Limits::default()).unwrap();
        assert_eq!(files.get("f49").map(|b| b.to_vec()), Some(random(4096, 49)));
        assert_empty(work.path());
    }

    #[test]
    fn large_content_is_written_to_an_unnamed_file_that_leaves_nothing_behind() {
        let work = tempfile::tempdir().unwrap();
        let tar = TarBuilder::new()
            .file("a", &random(3 * 1024 * 1024, 3))
            .file("b", &random(3 * 1024 * 1024, 4))
            .build();
        let mut extractor =
            Extractor::new(Limits::default()).with_work_dir(Some(work.path().to_owned()));
        extractor.add_archive(&tar[..]).unwrap();
        let content = extractor.finish().unwrap();
        assert!(!content.is_in_memory());
        assert!(content.size() > 6 * 1024 * 1024);
        assert_empty(work.path());
        let copy = content.clone();
        drop(content);
        assert_eq!(
            crate::Digest::of(&copy.to_bytes().unwrap()),
            *copy.digest(),
            "clones share the file"
        );
    }

    #[test]
    fn failing_midway_leaves_nothing_behind_and_stops_the_compression_thread() {
        let work = tempfile::tempdir().unwrap();
        let tar = TarBuilder::new()
            .file("a", &random(512 * 1024, 5))
            .file("b", &random(512 * 1024, 6))
            .build();
        let limits = Limits {
            max_uncompressed_bytes: 800 * 1024,
            ..Limits::default()
        };
        let mut extractor = Extractor::new(limits)
            .with_work_dir(Some(work.path().to_owned()))
            .with_memory_budget(0);
        let err = extractor.add_archive(&tar[..]).unwrap_err();
        assert!(
            matches!(err, ArchiveError::Limit(LimitError::Size { .. })),
            "{err}"
        );
        drop(extractor);
        assert_empty(work.path());

        // A broken archive after a large file: the error is the archive's.
        let mut truncated = TarBuilder::new()
            .file("a", &random(512 * 1024, 7))
            .file("b", &random(512 * 1024, 8))
            .build();
        truncated.truncate(700 * 1024);
        let mut extractor =
            Extractor::new(Limits::default()).with_work_dir(Some(work.path().to_owned()));
        let err = extractor.add_archive(&truncated[..]).unwrap_err();
        assert!(matches!(err, ArchiveError::Read { .. }), "{err}");
        drop(extractor);
        assert_empty(work.path());
    }
}
