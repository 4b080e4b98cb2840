//! Limits that protect the process from archive bombs and runaway content.
//!
//! Every byte of incoming content is counted while it is decompressed, so an archive is
//! refused as soon as it crosses a limit, before it has been read to the end (a gzip
//! bomb never gets to allocate its full size).

use std::cell::Cell;
use std::io::{self, Read};
use std::rc::Rc;

/// Configurable limits for one piece of content (all layers of an image together).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest number of uncompressed bytes read in total (tar headers included).
    pub max_uncompressed_bytes: u64,
    /// Largest number of entries (files, directories, links) read in total.
    pub max_entries: u64,
    /// Largest ratio of uncompressed to compressed bytes of one compressed stream.
    pub max_compression_ratio: u64,
    /// The ratio is only checked after this many uncompressed bytes of a stream, so
    /// that small, very repetitive files (which compress extremely well) are not refused.
    pub ratio_grace_bytes: u64,
}

impl Default for Limits {
    /// 256 MiB, 100 000 entries, ratio 100:1 after the first MiB. Bundles and catalogs
    /// are YAML and JSON, which compress about 5-20:1; a gzip bomb reaches 1000:1.
    fn default() -> Self {
        Self {
            max_uncompressed_bytes: 256 * 1024 * 1024,
            max_entries: 100_000,
            max_compression_ratio: 100,
            ratio_grace_bytes: 1024 * 1024,
        }
    }
}

/// A limit was crossed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LimitError {
    /// Too many uncompressed bytes.
    #[error("failed to extract content: uncompressed size exceeds the limit of {limit} bytes")]
    Size {
        /// The configured limit.
        limit: u64,
    },
    /// Too many entries.
    #[error("failed to extract content: more than {limit} entries")]
    Entries {
        /// The configured limit.
        limit: u64,
    },
    /// A compressed stream expands too much.
    #[error(
        "failed to extract content: compression ratio exceeds {limit}:1 \
         ({uncompressed} bytes from {compressed} compressed bytes)"
    )]
    Ratio {
        /// The configured limit.
        limit: u64,
        /// Uncompressed bytes read when the limit was crossed.
        uncompressed: u64,
        /// Compressed bytes consumed by then.
        compressed: u64,
    },
}

/// What has been used of the limits so far, across several archives.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Usage {
    pub(crate) bytes: u64,
    pub(crate) entries: u64,
}

impl Usage {
    /// Counts `bytes` more uncompressed bytes.
    pub(crate) fn add_bytes(&mut self, limits: &Limits, bytes: u64) -> Result<(), LimitError> {
        self.bytes = self.bytes.saturating_add(bytes);
        if self.bytes > limits.max_uncompressed_bytes {
            return Err(LimitError::Size {
                limit: limits.max_uncompressed_bytes,
            });
        }
        Ok(())
    }

    /// Counts one more entry.
    pub(crate) fn add_entry(&mut self, limits: &Limits) -> Result<(), LimitError> {
        self.entries = self.entries.saturating_add(1);
        if self.entries > limits.max_entries {
            return Err(LimitError::Entries {
                limit: limits.max_entries,
            });
        }
        Ok(())
    }
}

/// Counts the bytes read through it into a shared cell (the compressed side of a
/// decompressor, so the limiter on the other side can compute the ratio).
pub(crate) struct CountingReader<R> {
    inner: R,
    count: Rc<Cell<u64>>,
}

impl<R> CountingReader<R> {
    pub(crate) fn new(inner: R, count: Rc<Cell<u64>>) -> Self {
        Self { inner, count }
    }
}

impl<R: Read> Read for CountingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.set(self.count.get().saturating_add(n as u64));
        Ok(n)
    }
}

/// Enforces the size limit (and, for compressed streams, the ratio limit) on the
/// uncompressed bytes read through it. Crossing a limit is an `io::Error` carrying a
/// [`LimitError`], which the extractor unwraps again.
pub(crate) struct LimitedReader<R> {
    inner: R,
    limits: Limits,
    /// Bytes already used by earlier archives.
    base: u64,
    /// Uncompressed bytes read through this reader.
    read: Rc<Cell<u64>>,
    /// Compressed bytes consumed, when the stream is compressed.
    compressed: Option<Rc<Cell<u64>>>,
}

impl<R> LimitedReader<R> {
    pub(crate) fn new(
        inner: R,
        limits: Limits,
        base: u64,
        read: Rc<Cell<u64>>,
        compressed: Option<Rc<Cell<u64>>>,
    ) -> Self {
        Self {
            inner,
            limits,
            base,
            read,
            compressed,
        }
    }

    fn check(&self) -> Result<(), LimitError> {
        let read = self.read.get();
        if self.base.saturating_add(read) > self.limits.max_uncompressed_bytes {
            return Err(LimitError::Size {
                limit: self.limits.max_uncompressed_bytes,
            });
        }
        if let Some(compressed) = &self.compressed {
            let compressed = compressed.get().max(1);
            if read > self.limits.ratio_grace_bytes
                && read > compressed.saturating_mul(self.limits.max_compression_ratio)
            {
                return Err(LimitError::Ratio {
                    limit: self.limits.max_compression_ratio,
                    uncompressed: read,
                    compressed,
                });
            }
        }
        Ok(())
    }
}

impl<R: Read> Read for LimitedReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.set(self.read.get().saturating_add(n as u64));
        self.check().map_err(io::Error::other)?;
        Ok(n)
    }
}

/// Finds a [`LimitError`] inside an `io::Error` produced by a [`LimitedReader`]
/// (possibly wrapped by the tar reader on the way out).
pub(crate) fn limit_error_in(err: &io::Error) -> Option<LimitError> {
    let mut current: Option<&(dyn std::error::Error + 'static)> = err.get_ref().map(|e| e as _);
    while let Some(e) = current {
        if let Some(limit) = e.downcast_ref::<LimitError>() {
            return Some(limit.clone());
        }
        if let Some(io) = e.downcast_ref::<io::Error>()
            && let Some(inner) = io.get_ref()
        {
            current = Some(inner as _);
            continue;
        }
        current = e.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max: u64, ratio: u64, grace: u64) -> Limits {
        Limits {
            max_uncompressed_bytes: max,
            max_entries: 10,
            max_compression_ratio: ratio,
            ratio_grace_bytes: grace,
        }
    }

    #[test]
    fn reading_past_the_size_limit_fails_with_a_limit_error() {
        let data = [0u8; 100];
        let mut reader = LimitedReader::new(
            &data[..],
            limits(50, 100, 0),
            0,
            Rc::new(Cell::new(0)),
            None,
        );
        let err = io::copy(&mut reader, &mut io::sink()).unwrap_err();
        assert_eq!(limit_error_in(&err), Some(LimitError::Size { limit: 50 }));
    }

    #[test]
    fn earlier_archives_count_against_the_size_limit() {
        let data = [0u8; 30];
        let mut reader = LimitedReader::new(
            &data[..],
            limits(50, 100, 0),
            40,
            Rc::new(Cell::new(0)),
            None,
        );
        let err = io::copy(&mut reader, &mut io::sink()).unwrap_err();
        assert!(matches!(
            limit_error_in(&err),
            Some(LimitError::Size { .. })
        ));
    }

    #[test]
    fn the_ratio_is_only_checked_after_the_grace_bytes() {
        let compressed = Rc::new(Cell::new(1));
        let data = [0u8; 64];
        let mut reader = LimitedReader::new(
            &data[..],
            limits(1000, 2, 100),
            0,
            Rc::new(Cell::new(0)),
            Some(compressed.clone()),
        );
        assert_eq!(io::copy(&mut reader, &mut io::sink()).unwrap(), 64);

        let mut reader = LimitedReader::new(
            &data[..],
            limits(1000, 2, 10),
            0,
            Rc::new(Cell::new(0)),
            Some(compressed),
        );
        let err = io::copy(&mut reader, &mut io::sink()).unwrap_err();
        assert!(matches!(
            limit_error_in(&err),
            Some(LimitError::Ratio { limit: 2, .. })
        ));
    }

    #[test]
    fn entry_counting_stops_at_the_limit() {
        let limits = limits(100, 100, 0);
        let mut usage = Usage::default();
        for _ in 0..10 {
            usage.add_entry(&limits).unwrap();
        }
        assert_eq!(
            usage.add_entry(&limits),
            Err(LimitError::Entries { limit: 10 })
        );
    }
}
