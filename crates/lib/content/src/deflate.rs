//! The compressing side of the normalised archive (see [`crate::normalize`]): the raw
//! deflate stream every part of the archive goes through, and the independent segments
//! large files are deflated into, possibly on another thread while the content is still
//! being read (see [`crate::spill`]).

use std::io::{self, Write};

use flate2::{Compress, Compression, Crc, FlushCompress, Status};

/// gzip level of every normalised archive. With zlib-rs, level 2 deflates YAML about
/// twice as fast as level 6 for 3% more bytes, and incompressible data 1.4 times as fast
/// (stored blocks either way). Level 1 is faster still but uses fixed Huffman codes
/// only: YAML comes out 50% larger and incompressible data 5.5% larger than it went in.
pub const GZIP_LEVEL: u32 = 2;
/// Files of at least this many bytes are deflated as independent segments.
pub const SEGMENT_MIN: u64 = 64 * 1024;
/// Bytes handed to the compressor per call, for every stream and segment.
pub(crate) const FEED: usize = 64 * 1024;
/// The compressor's output buffer.
pub(crate) const OUT_BUF: usize = 128 * 1024;

/// A raw deflate stream fed through a fixed output buffer.
pub(crate) struct Deflater {
    compress: Compress,
    buf: Vec<u8>,
}

impl Deflater {
    /// A compressor at [`GZIP_LEVEL`].
    pub(crate) fn new() -> Self {
        Self {
            compress: Compress::new(Compression::new(GZIP_LEVEL), false),
            buf: vec![0; OUT_BUF],
        }
    }

    /// Compresses all of `input` with `flush`, writing what comes out to `out`.
    pub(crate) fn run(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{gzip, random};

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
}
