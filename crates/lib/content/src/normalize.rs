//! The normalised archive: the same files always produce the same bytes, so the sha256
//! digest identifies the content, whatever order, times or owners it arrived with.
//!
//! Format: a GNU tar (long names via GNU extensions), entries sorted by path bytes,
//! every directory present as an entry (so empty directories survive), mtime 0,
//! uid/gid 0, empty user and group names, modes 0755 for directories and executable
//! files, 0644 for other files and 0777 for symlinks; hard links are resolved to copies.
//!
//! The tar is one gzip member (mtime 0, no file name, OS "unknown") deflated at level
//! [`GZIP_LEVEL`] by zlib-rs, in a shape that lets large files be compressed while the
//! content is still being read, on another thread: the data of every file of
//! [`SEGMENT_MIN`] bytes or more is deflated on its own (a fresh compressor fed
//! [`FEED`]-byte chunks, ended by a full flush), and the stream around it (tar headers,
//! small files, padding) is ended by a full flush before it and carries on after it
//! with no back-references into it. Any gzip reader reads it as a plain tar.gz. The
//! digest is reproducible for a given version of zlib-rs; another deflate implementation
//! or level gives different, equally valid bytes (content normalised before this format,
//! by miniz_oxide at level 6 in one stream, keeps the digest it was stored under).

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;

use flate2::{Crc, FlushCompress};
use sha2::{Digest as _, Sha256};
use tar::{EntryType, Header};

use crate::archive_error::ArchiveError;
use crate::content::Content;
use crate::deflate::{Deflater, FEED, OUT_BUF, Segment, SegmentWriter};
use crate::digest::Digest;
use crate::spill::{FileData, Spilled};
use crate::spool::{DEFAULT_SPOOL_THRESHOLD, Spool, SpoolDir};
use crate::tree::{Node, Tree};

pub use crate::deflate::{GZIP_LEVEL, SEGMENT_MIN};

/// gzip's "unknown" operating system, so the archive does not depend on the build host.
const GZIP_OS_UNKNOWN: u8 = 255;
/// A tar block.
const BLOCK: usize = 512;

/// The gzip member: header, deflate stream with segments spliced in, trailer; hashed
/// and spooled as it is written.
struct Member {
    deflater: Deflater,
    /// Input waiting for the compressor, so it is always fed [`FEED`]-byte chunks.
    staging: Vec<u8>,
    crc: Crc,
    out: Hashed,
}

struct Hashed {
    spool: Spool,
    sha: Sha256,
}

impl Write for Hashed {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.spool.write_all(buf)?;
        self.sha.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.spool.flush()
    }
}

impl Member {
    fn new(dir: SpoolDir) -> io::Result<Self> {
        let mut out = Hashed {
            spool: Spool::new(dir, DEFAULT_SPOOL_THRESHOLD),
            sha: Sha256::new(),
        };
        // ID1 ID2 CM=deflate FLG=0 MTIME=0 XFL=0 OS.
        out.write_all(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, GZIP_OS_UNKNOWN])?;
        Ok(Self {
            deflater: Deflater::new(),
            staging: Vec::with_capacity(FEED),
            crc: Crc::new(),
            out,
        })
    }

    /// Appends uncompressed bytes to the stream.
    fn write(&mut self, mut data: &[u8]) -> io::Result<()> {
        self.crc.update(data);
        while !data.is_empty() {
            let take = (FEED - self.staging.len()).min(data.len());
            self.staging.extend_from_slice(&data[..take]);
            data = &data[take..];
            if self.staging.len() == FEED {
                self.deflater
                    .run(&self.staging, FlushCompress::None, &mut self.out)?;
                self.staging.clear();
            }
        }
        Ok(())
    }

    /// Ends the stream so far on a byte boundary with an empty dictionary, so a segment
    /// can follow.
    fn cut(&mut self) -> io::Result<()> {
        self.deflater
            .run(&self.staging, FlushCompress::Full, &mut self.out)?;
        self.staging.clear();
        Ok(())
    }

    /// Splices in a segment already written to `file`.
    fn splice(&mut self, file: &File, segment: &Segment) -> io::Result<()> {
        self.cut()?;
        let mut buf = vec![0u8; OUT_BUF];
        let mut offset = segment.offset;
        let end = segment.offset + segment.len;
        while offset < end {
            let n = usize::try_from(end - offset)
                .unwrap_or(usize::MAX)
                .min(buf.len());
            file.read_exact_at(&mut buf[..n], offset)?;
            self.out.write_all(&buf[..n])?;
            offset += n as u64;
        }
        self.crc.combine(&segment.crc);
        Ok(())
    }

    /// Deflates a large file now, as the segment it would have been.
    fn segment_now(&mut self, spilled: &Spilled, data: &FileData) -> io::Result<()> {
        self.cut()?;
        let mut writer = SegmentWriter::new(0);
        spilled.for_each_chunk(data, |chunk| writer.push(chunk, &mut self.out))?;
        let segment = writer.finish(&mut self.out)?;
        self.crc.combine(&segment.crc);
        Ok(())
    }

    fn finish(mut self) -> io::Result<Content> {
        self.deflater
            .run(&self.staging, FlushCompress::Finish, &mut self.out)?;
        let mut trailer = [0u8; 8];
        trailer[..4].copy_from_slice(&self.crc.sum().to_le_bytes());
        trailer[4..].copy_from_slice(&self.crc.amount().to_le_bytes());
        self.out.write_all(&trailer)?;
        let digest = Digest::from_bytes(self.out.sha.finalize().into());
        Ok(Content::from_body(self.out.spool.finish()?, digest))
    }
}

/// Writes the tree as a normalised tar.gz into `dir` (memory while small), consuming it.
pub(crate) fn write(tree: Tree, spilled: &Spilled, dir: SpoolDir) -> Result<Content, ArchiveError> {
    write_inner(tree, spilled, dir).map_err(|source| ArchiveError::Write { source })
}

fn write_inner(tree: Tree, spilled: &Spilled, dir: SpoolDir) -> io::Result<Content> {
    let mut member = Member::new(dir)?;
    // Headers (with GNU long-name entries when needed) are built by the tar crate into a
    // scratch buffer, then fed to the stream: file data is added separately because it
    // may already be compressed.
    let mut headers = tar::Builder::new(Vec::new());
    for (path, node) in tree.into_nodes() {
        let mut header = Header::new_gnu();
        header.set_uid(0);
        header.set_gid(0);
        header.set_mtime(0);
        match &node {
            Node::Dir => {
                header.set_entry_type(EntryType::Directory);
                header.set_mode(0o755);
                header.set_size(0);
                headers.append_data(&mut header, format!("{path}/"), io::empty())?;
            }
            Node::File { data, executable } => {
                header.set_entry_type(EntryType::Regular);
                header.set_mode(if *executable { 0o755 } else { 0o644 });
                header.set_size(data.len());
                headers.append_data(&mut header, &path, io::empty())?;
            }
            Node::Symlink { target } => {
                header.set_entry_type(EntryType::Symlink);
                header.set_mode(0o777);
                header.set_size(0);
                headers.append_link(&mut header, &path, target)?;
            }
        }
        member.write(&std::mem::take(headers.get_mut()))?;
        let Node::File { data, .. } = &node else {
            continue;
        };
        match data {
            FileData::Segment { id, .. } => {
                let (file, segment) = spilled.segment(*id)?;
                member.splice(file, segment)?;
            }
            small if small.len() < SEGMENT_MIN => member.write(&spilled.load(small)?)?,
            large => member.segment_now(spilled, large)?,
        }
        let padding = (BLOCK - (data.len() % BLOCK as u64) as usize) % BLOCK;
        member.write(&[0u8; BLOCK][..padding])?;
    }
    // The end of the archive: two zero blocks.
    member.write(&[0u8; 2 * BLOCK])?;
    member.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::Extractor;
    use crate::limits::Limits;
    use crate::testutil::{TarBuilder, gzip, random};

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
        assert_eq!(first.to_bytes().unwrap(), second.to_bytes().unwrap());
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
        let second = normalise(&first.to_bytes().unwrap());
        assert_eq!(first.to_bytes().unwrap(), second.to_bytes().unwrap());
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
        let decoded = flate2::read::GzDecoder::new(content.reader());
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
    fn a_file_that_switches_between_text_and_random_bytes_reads_back_whole() {
        let text = b"spec:\n  replicas: 3\n  template: {}\n".repeat(6000);
        let mut mixed = text.clone();
        mixed.extend(random(3 * FEED + 123, 5));
        mixed.extend(&text);
        mixed.extend(random(FEED, 6));
        let content = normalise(&TarBuilder::new().file("data.bin", &mixed).build());
        let files = content.files(&Limits::default()).unwrap();
        assert_eq!(files.get("data.bin").map(|b| b.to_vec()), Some(mixed));
        // The random parts cost their size plus block headers; the text still compresses.
        let random_bytes = 4 * FEED + 123;
        assert!(
            content.size() < (random_bytes + 16 * 1024) as u64,
            "{} bytes",
            content.size()
        );
        let again = normalise(&content.to_bytes().unwrap());
        assert_eq!(again.digest(), content.digest(), "normalising is stable");
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
