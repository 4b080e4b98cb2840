//! The normalised archive: the same files always produce the same bytes, so the sha256
//! digest identifies the content, whatever order, times or owners it arrived with.
//!
//! Format: a GNU tar (long names via GNU extensions), entries sorted by path bytes,
//! every directory present as an entry (so empty directories survive), mtime 0,
//! uid/gid 0, empty user and group names, modes 0755 for directories and executable
//! files, 0644 for other files and 0777 for symlinks; hard links are resolved to copies.
//! The tar is gzip-compressed at level 6 (miniz_oxide) with mtime 0, no file name and OS
//! "unknown". The digest is reproducible for a given version of this crate's
//! compressor; a different deflate implementation may produce different (equally
//! valid) bytes.

use std::io::{self, Write};

use bytes::Bytes;
use flate2::{Compression, GzBuilder};
use tar::{EntryType, Header};

use crate::archive_error::ArchiveError;
use crate::content::Content;
use crate::tree::{Node, Tree};

/// gzip level used for every normalised archive.
const GZIP_LEVEL: u32 = 6;
/// gzip's "unknown" operating system, so the archive does not depend on the build host.
const GZIP_OS_UNKNOWN: u8 = 255;

/// Writes the tree as a normalised tar.gz, consuming it: each file's data is freed as
/// soon as it is compressed, so input and output are not both fully in memory.
pub(crate) fn write(tree: Tree) -> Result<Content, ArchiveError> {
    let write_err = |source: io::Error| ArchiveError::Write { source };
    // Reserve the worst case (incompressible data plus headers) up front: untouched
    // capacity costs no resident memory, while growing by doubling would copy and
    // briefly hold two buffers.
    let nodes = tree.into_nodes();
    let worst_case = nodes
        .values()
        .map(|node| match node {
            Node::File { data, .. } => data.len() + 1024,
            _ => 1024,
        })
        .sum::<usize>()
        .saturating_add(64 * 1024);
    let gzip = GzBuilder::new()
        .mtime(0)
        .operating_system(GZIP_OS_UNKNOWN)
        .write(Vec::with_capacity(worst_case), Compression::new(GZIP_LEVEL));
    let mut builder = tar::Builder::new(gzip);
    for (path, node) in nodes {
        append(&mut builder, &path, &node).map_err(write_err)?;
    }
    let gzip = builder.into_inner().map_err(write_err)?;
    let data = gzip.finish().map_err(write_err)?;
    Ok(Content::from_normalised(Bytes::from(data)))
}

fn append<W: Write>(builder: &mut tar::Builder<W>, path: &str, node: &Node) -> io::Result<()> {
    let mut header = Header::new_gnu();
    header.set_uid(0);
    header.set_gid(0);
    header.set_mtime(0);
    match node {
        Node::Dir => {
            header.set_entry_type(EntryType::Directory);
            header.set_mode(0o755);
            header.set_size(0);
            builder.append_data(&mut header, format!("{path}/"), io::empty())
        }
        Node::File { data, executable } => {
            header.set_entry_type(EntryType::Regular);
            header.set_mode(if *executable { 0o755 } else { 0o644 });
            header.set_size(data.len() as u64);
            builder.append_data(&mut header, path, data.as_ref())
        }
        Node::Symlink { target } => {
            header.set_entry_type(EntryType::Symlink);
            header.set_mode(0o777);
            header.set_size(0);
            builder.append_link(&mut header, path, target)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::Extractor;
    use crate::limits::Limits;
    use crate::testutil::{TarBuilder, gzip};

    fn normalise(archive: &[u8]) -> Content {
        let mut extractor = Extractor::new(Limits::default());
        extractor.add_archive(archive).unwrap();
        extractor.finish().unwrap()
    }

    #[test]
    fn same_files_in_another_order_with_other_metadata_have_the_same_digest() {
        let a = TarBuilder::new()
            .dir("manifests")
            .file("manifests/a.yaml", b"a: 1")
            .file("manifests/b.yaml", b"b: 2")
            .file("metadata/annotations.yaml", b"x")
            .build();
        let b = TarBuilder::new()
            .mtime(1_700_000_000)
            .owner(1000, "alice")
            .mode(0o600)
            .file("./metadata/annotations.yaml", b"x")
            .file("manifests/b.yaml", b"b: 2")
            .file("manifests//a.yaml", b"a: 1")
            .build();
        let first = normalise(&gzip(&a));
        let second = normalise(&b);
        assert_eq!(first.digest(), second.digest());
        assert_eq!(first.data(), second.data());
    }

    #[test]
    fn different_content_has_a_different_digest() {
        let a = normalise(&TarBuilder::new().file("a", b"1").build());
        let b = normalise(&TarBuilder::new().file("a", b"2").build());
        let c = normalise(&TarBuilder::new().file("b", b"1").build());
        assert_ne!(a.digest(), b.digest());
        assert_ne!(a.digest(), c.digest());
    }

    #[test]
    fn normalising_normalised_content_changes_nothing() {
        let first = normalise(&TarBuilder::new().file("x/y/z", b"data").build());
        let second = normalise(first.data());
        assert_eq!(first.data(), second.data());
    }

    #[test]
    fn the_executable_bit_survives_and_other_mode_bits_do_not() {
        let tar = TarBuilder::new()
            .mode(0o4751)
            .file("run.sh", b"#!/bin/sh")
            .mode(0o600)
            .file("secret", b"s")
            .build();
        let content = normalise(&tar);
        let decoded = flate2::read::GzDecoder::new(content.data().as_ref());
        let mut archive = tar::Archive::new(decoded);
        let modes: Vec<(String, u32, u64, u64)> = archive
            .entries()
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let h = e.header();
                (
                    e.path().unwrap().display().to_string(),
                    h.mode().unwrap(),
                    h.mtime().unwrap(),
                    h.uid().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            modes,
            [
                ("run.sh".to_owned(), 0o755, 0, 0),
                ("secret".to_owned(), 0o644, 0, 0)
            ]
        );
    }

    #[test]
    fn empty_directories_and_long_names_are_kept() {
        let long = format!("{}/file.yaml", "d".repeat(150));
        let tar = TarBuilder::new().dir("empty").file(&long, b"x").build();
        let content = normalise(&tar);
        let files = content.files(&Limits::default()).unwrap();
        assert!(files.dirs().any(|d| d == "empty"));
        assert_eq!(files.get(&long).map(|b| b.as_ref()), Some(&b"x"[..]));
    }
}
