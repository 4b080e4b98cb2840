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

use flate2::{Compress, Compression, Crc, FlushCompress, Status};
use sha2::{Digest as _, Sha256};
use tar::{EntryType, Header};

use crate::archive_error::ArchiveError;
use crate::content::Content;
use crate::digest::Digest;
use crate::spill::{FileData, Spilled};
use crate::spool::{DEFAULT_SPOOL_THRESHOLD, Spool, SpoolDir};
use crate::tree::{Node, Tree};

/// gzip level of every normalised archive. With zlib-rs, level 2 deflates YAML about
/// twice as fast as level 6 for 3% more bytes, and incompressible data 1.4 times as fast
/// (stored blocks either way). Level 1 is faster still but uses fixed Huffman codes
/// only: YAML comes out 50% larger and incompressible data 5.5% larger than it went in.
pub const GZIP_LEVEL: u32 = 2;
/// Files of at least this many bytes are deflated as independent segments.
pub const SEGMENT_MIN: u64 = 64 * 1024;
/// Bytes handed to the compressor per call, for every stream and segment.
pub(crate) const FEED: usize = 64 * 1024;
/// gzip's "unknown" operating system, so the archive does not depend on the build host.
const GZIP_OS_UNKNOWN: u8 = 255;
/// The compressor's output buffer.
const OUT_BUF: usize = 128 * 1024;
/// A tar block.
const BLOCK: usize = 512;

/// A raw deflate stream fed through a fixed output buffer.
struct Deflater {
    compress: Compress,
    buf: Vec<u8>,
}

impl Deflater {
    fn new() -> Self {
        Self {
            compress: Compress::new(Compression::new(GZIP_LEVEL), false),
            buf: vec![0; OUT_BUF],
        }
    }

    /// Compresses all of `input` with `flush`, writing what comes out to `out`.
    fn run(
        &mut self,
        mut input: &[u8],
        flush: FlushCompress,
        out: &mut impl Write,
    ) -> io::Result<()> {
        loop {
            let (in_before, out_before) = (self.compress.total_in(), self.compress.total_out());
            let status = self
                .compress
                .compress(input, &mut self.buf, flush)
                .map_err(io::Error::other)?;
            let consumed =
                usize::try_from(self.compress.total_in() - in_before).map_err(io::Error::other)?;
            let produced = usize::try_from(self.compress.total_out() - out_before)
                .map_err(io::Error::other)?;
            input = &input[consumed..];
            out.write_all(&self.buf[..produced])?;
            let done = match flush {
                FlushCompress::Finish => status == Status::StreamEnd,
                FlushCompress::None => input.is_empty(),
                _ => input.is_empty() && produced < self.buf.len(),
            };
            if done {
                return Ok(());
            }
            if consumed == 0 && produced == 0 {
                return Err(io::Error::other("the compressor made no progress"));
            }
        }
    }
}

/// Where a deflated segment is, and what it decompresses to.
#[derive(Debug)]
pub(crate) struct Segment {
    /// Offset of the compressed bytes in their file.
    pub(crate) offset: u64,
    /// Compressed length.
    pub(crate) len: u64,
    /// CRC-32 (and length) of the uncompressed bytes.
    pub(crate) crc: Crc,
}

/// Deflates one large file as an independent segment.
///
/// Chunks that cannot be compressed (see [`looks_incompressible`]) are written as stored
/// deflate blocks instead of going through the compressor: deflating random-looking
/// bytes at any level only spends time searching for matches that are not there, and
/// zlib ends up storing them anyway. The choice depends on the chunk's bytes alone, so
/// the same content still gives the same archive.
pub(crate) struct SegmentWriter {
    deflater: Deflater,
    /// The compressor has taken input since it was last flushed and reset.
    deflating: bool,
    crc: Crc,
    offset: u64,
    written: u64,
}

impl SegmentWriter {
    /// A segment that will start at `offset` of its file.
    pub(crate) fn new(offset: u64) -> Self {
        Self {
            deflater: Deflater::new(),
            deflating: false,
            crc: Crc::new(),
            offset,
            written: 0,
        }
    }

    /// Starts a new segment at `offset` with the same compressor: a fresh one allocates
    /// and zeroes a few hundred KiB again, once per large file.
    pub(crate) fn restart(&mut self, offset: u64) {
        self.deflater.compress.reset();
        self.deflating = false;
        self.crc = Crc::new();
        self.offset = offset;
        self.written = 0;
    }

    /// Compresses one chunk (every chunk but the last must be [`FEED`] bytes).
    pub(crate) fn push(&mut self, chunk: &[u8], out: &mut impl Write) -> io::Result<()> {
        self.crc.update(chunk);
        let mut written = 0;
        let mut counted = CountingRef {
            inner: out,
            written: &mut written,
        };
        let result = if looks_incompressible(chunk) {
            self.end_deflating(&mut counted)
                .and_then(|()| write_stored(chunk, &mut counted))
        } else {
            self.deflating = true;
            self.deflater.run(chunk, FlushCompress::None, &mut counted)
        };
        self.written += written;
        result
    }

    /// Ends what the compressor has taken on a byte boundary and forgets its dictionary,
    /// so that stored blocks (or the end of the segment) can follow: a later match must
    /// not reach back across bytes the compressor did not see.
    fn end_deflating(&mut self, out: &mut impl Write) -> io::Result<()> {
        if self.deflating {
            self.deflater.run(&[], FlushCompress::Full, out)?;
            self.deflater.compress.reset();
            self.deflating = false;
        }
        Ok(())
    }

    /// Ends the segment on a byte boundary with an empty dictionary.
    pub(crate) fn finish(&mut self, out: &mut impl Write) -> io::Result<Segment> {
        if self.deflating || self.written == 0 {
            let mut counted = CountingRef {
                inner: out,
                written: &mut self.written,
            };
            self.deflater.run(&[], FlushCompress::Full, &mut counted)?;
        }
        Ok(Segment {
            offset: self.offset,
            len: self.written,
            crc: std::mem::replace(&mut self.crc, Crc::new()),
        })
    }
}

/// Largest payload of one stored deflate block.
const STORED_BLOCK_MAX: usize = 0xffff;
/// Byte entropy (bits per byte) above which a chunk is stored rather than deflated.
/// Compressed, encrypted and random data measure 7.99 and more on a [`FEED`]-byte
/// chunk, text and manifests 4 to 6, executables and other binaries 5 to 7.
const INCOMPRESSIBLE_ENTROPY: f64 = 7.95;
/// Chunks shorter than this are always deflated: the entropy of a few bytes says little.
const ENTROPY_SAMPLE_MIN: usize = 4096;
/// The entropy is measured on this many slices spread evenly over the chunk, so that a
/// chunk that is half text is deflated. Counting every byte would cost text, the
/// common case, a tenth of its deflate time.
const ENTROPY_SLICES: usize = 8;
/// Bytes per slice: 8 KiB in all, on which random bytes measure about 7.98 bits (the
/// estimate is biased low by about 0.02 bits at this size).
const ENTROPY_SLICE: usize = 1024;

/// Whether deflating `chunk` would gain nearly nothing: its bytes (sampled) are spread
/// so evenly over all 256 values that Huffman codes cannot shorten them. (A chunk made of repeats
/// of a random block would still compress by back-references; content like that is
/// stored too, at its own size, which is what deflate gives incompressible data.)
fn looks_incompressible(chunk: &[u8]) -> bool {
    if chunk.len() < ENTROPY_SAMPLE_MIN {
        return false;
    }
    let mut counts = [0u32; 256];
    let stride = chunk.len() / ENTROPY_SLICES;
    let mut total = 0u32;
    for slice in 0..ENTROPY_SLICES {
        let start = slice * stride;
        let end = (start + ENTROPY_SLICE).min(chunk.len());
        for &byte in &chunk[start..end] {
            counts[usize::from(byte)] += 1;
        }
        total += u32::try_from(end - start).unwrap_or(u32::MAX);
    }
    let total = f64::from(total);
    let entropy: f64 = counts
        .iter()
        .filter(|&&count| count > 0)
        .map(|&count| {
            let p = f64::from(count) / total;
            -p * p.log2()
        })
        .sum();
    entropy > INCOMPRESSIBLE_ENTROPY
}

/// Writes `data` as stored (uncompressed) deflate blocks, none of them final. The
/// stream must be on a byte boundary, as it is after a full flush or another stored
/// block, and is on one afterwards.
fn write_stored(data: &[u8], out: &mut impl Write) -> io::Result<()> {
    for block in data.chunks(STORED_BLOCK_MAX) {
        // BFINAL 0 and BTYPE 00 in the low bits, padded to the byte; then LEN and its
        // one's complement, little-endian.
        let len = u16::try_from(block.len()).map_err(io::Error::other)?;
        let [lo, hi] = len.to_le_bytes();
        out.write_all(&[0, lo, hi, !lo, !hi])?;
        out.write_all(block)?;
    }
    Ok(())
}

struct CountingRef<'a, W> {
    inner: &'a mut W,
    written: &'a mut u64,
}

impl<W: Write> Write for CountingRef<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        *self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

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
    fn random_chunks_are_stored_and_text_chunks_deflated() {
        let text = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n".repeat(2000);
        assert!(!looks_incompressible(&text[..FEED]));
        assert!(looks_incompressible(&random(FEED, 1)));
        // Already-compressed data is the common real case (a tarball or an image inside
        // a bundle).
        let gzipped = gzip(
            &random(4 * FEED, 2)
                .iter()
                .map(|b| b % 16)
                .collect::<Vec<_>>(),
        );
        assert!(looks_incompressible(&gzipped[..FEED]), "gzip output");
        assert!(!looks_incompressible(&random(100, 3)), "too short to judge");

        let chunk = random(FEED, 4);
        let mut out = Vec::new();
        let mut writer = SegmentWriter::new(0);
        writer.push(&chunk, &mut out).unwrap();
        let segment = writer.finish(&mut out).unwrap();
        // Two stored blocks (65535 + 1 bytes), each behind a 5-byte header, and nothing
        // else: no flush marker is needed after stored blocks.
        assert_eq!(segment.len, FEED as u64 + 10);
        assert_eq!(&out[..5], &[0, 0xff, 0xff, 0, 0]);
        assert_eq!(&out[5..5 + 0xffff], &chunk[..0xffff]);
        assert_eq!(&out[5 + 0xffff..10 + 0xffff], &[0, 1, 0, 0xfe, 0xff]);
    }

    #[test]
    fn a_restarted_segment_writer_writes_what_a_fresh_one_does() {
        let text = b"kind: ConfigMap\ndata: {a: b}\n".repeat(5000);
        let files = [text.clone(), random(FEED + 7, 8), text];
        let segments = |reuse: bool| {
            let mut out = Vec::new();
            let mut found = Vec::new();
            let mut writer = SegmentWriter::new(0);
            for file in &files {
                if reuse {
                    writer.restart(out.len() as u64);
                } else {
                    writer = SegmentWriter::new(out.len() as u64);
                }
                for chunk in file.chunks(FEED) {
                    writer.push(chunk, &mut out).unwrap();
                }
                let segment = writer.finish(&mut out).unwrap();
                found.push((
                    segment.offset,
                    segment.len,
                    segment.crc.sum(),
                    segment.crc.amount(),
                ));
            }
            (out, found)
        };
        let (fresh, fresh_segments) = segments(false);
        let (reused, reused_segments) = segments(true);
        assert_eq!(reused_segments, fresh_segments);
        assert!(reused == fresh, "the archive bytes differ");
        assert_eq!(fresh_segments.len(), 3);
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
