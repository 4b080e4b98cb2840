//! Bytes that stay in memory while they are small and move to an unnamed temporary file
//! when they grow: the normalised archive being written, content read back from the
//! store, and the file data of content being assembled.
//!
//! The files are created with `tempfile::tempfile_in` (`O_TMPFILE` on Linux): they have
//! no name, so nothing is left behind on success, on failure or when the process dies,
//! and no other process can open them. When no temporary file can be created (a
//! read-only file system without a writable work directory) the bytes stay in memory, as
//! they always did before spooling, and a warning says how to give the process a
//! directory.

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;

/// Bytes held in memory before a [`Spool`] moves them to a file.
pub(crate) const DEFAULT_SPOOL_THRESHOLD: usize = 4 * 1024 * 1024;

/// Finished bytes: in memory, or in an unnamed temporary file shared by every clone.
#[derive(Debug, Clone)]
pub(crate) enum Body {
    /// Small enough to keep.
    Memory(Bytes),
    /// `len` bytes at the start of the file.
    File { file: Arc<File>, len: u64 },
}

impl Body {
    /// Number of bytes.
    pub(crate) fn len(&self) -> u64 {
        match self {
            Body::Memory(data) => data.len() as u64,
            Body::File { len, .. } => *len,
        }
    }

    /// Reads at most `buf.len()` bytes at `offset`; fewer only at the end.
    pub(crate) fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let len = self.len();
        if offset >= len {
            return Ok(0);
        }
        let wanted = usize::try_from(len - offset)
            .unwrap_or(usize::MAX)
            .min(buf.len());
        match self {
            Body::Memory(data) => {
                let start = usize::try_from(offset).unwrap_or(usize::MAX);
                buf[..wanted].copy_from_slice(&data[start..start + wanted]);
                Ok(wanted)
            }
            Body::File { file, .. } => {
                file.read_exact_at(&mut buf[..wanted], offset)?;
                Ok(wanted)
            }
        }
    }

    /// `len` bytes at `offset` (fewer at the end) as one buffer.
    pub(crate) fn slice(&self, offset: u64, len: usize) -> io::Result<Bytes> {
        match self {
            Body::Memory(data) => {
                let start = usize::try_from(offset)
                    .unwrap_or(usize::MAX)
                    .min(data.len());
                let end = start.saturating_add(len).min(data.len());
                Ok(data.slice(start..end))
            }
            Body::File { .. } => {
                let available = self.len().saturating_sub(offset);
                let len = usize::try_from(available).unwrap_or(usize::MAX).min(len);
                let mut buf = vec![0u8; len];
                let read = self.read_at(offset, &mut buf)?;
                buf.truncate(read);
                Ok(Bytes::from(buf))
            }
        }
    }

    /// All bytes in one buffer.
    pub(crate) fn to_bytes(&self) -> io::Result<Bytes> {
        match self {
            Body::Memory(data) => Ok(data.clone()),
            Body::File { len, .. } => {
                self.slice(0, usize::try_from(*len).map_err(io::Error::other)?)
            }
        }
    }

    /// A reader from the start.
    pub(crate) fn reader(&self) -> BodyReader {
        BodyReader {
            body: self.clone(),
            offset: 0,
        }
    }
}

/// Reads a [`Body`] from the start; clones of a file body read independently (positioned
/// reads, no shared cursor).
#[derive(Debug)]
pub(crate) struct BodyReader {
    body: Body,
    offset: u64,
}

impl Read for BodyReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.body.read_at(self.offset, buf)?;
        self.offset += n as u64;
        Ok(n)
    }
}

/// Where spooled bytes go once they pass the threshold.
#[derive(Debug, Clone, Default)]
pub(crate) struct SpoolDir(Option<PathBuf>);

impl SpoolDir {
    /// A directory, or `None` for the system's temporary directory.
    pub(crate) fn new(dir: Option<PathBuf>) -> Self {
        Self(dir)
    }

    /// An unnamed temporary file in the directory, or `None` (with a warning) when none
    /// can be created there.
    pub(crate) fn create(&self) -> Option<File> {
        let dir: PathBuf = match &self.0 {
            Some(dir) => dir.clone(),
            None => std::env::temp_dir(),
        };
        match create_in(&dir) {
            Ok(file) => Some(file),
            Err(err) => {
                // Once per process: the same directory fails the same way every time.
                static WARNED: std::sync::atomic::AtomicBool =
                    std::sync::atomic::AtomicBool::new(false);
                if WARNED.swap(true, std::sync::atomic::Ordering::Relaxed) {
                    return None;
                }
                tracing::warn!(
                    dir = %dir.display(),
                    error = %err,
                    "cannot create a temporary file; keeping content in memory (give the process a writable work directory to bound its memory)"
                );
                None
            }
        }
    }
}

fn create_in(dir: &Path) -> io::Result<File> {
    std::fs::create_dir_all(dir)?;
    tempfile::tempfile_in(dir)
}

/// A writer that keeps up to `threshold` bytes in memory and then moves everything to an
/// unnamed temporary file.
#[derive(Debug)]
pub(crate) struct Spool {
    dir: SpoolDir,
    threshold: usize,
    memory: Vec<u8>,
    file: Option<BufWriter<File>>,
    /// A file could not be created: stay in memory from now on.
    no_file: bool,
    len: u64,
}

impl Spool {
    /// An empty spool.
    pub(crate) fn new(dir: SpoolDir, threshold: usize) -> Self {
        Self {
            dir,
            threshold,
            memory: Vec::new(),
            file: None,
            no_file: false,
            len: 0,
        }
    }

    /// The finished bytes.
    pub(crate) fn finish(self) -> io::Result<Body> {
        match self.file {
            None => Ok(Body::Memory(Bytes::from(self.memory))),
            Some(writer) => {
                let file = writer.into_inner().map_err(|err| err.into_error())?;
                Ok(Body::File {
                    file: Arc::new(file),
                    len: self.len,
                })
            }
        }
    }

    /// Whether the bytes went to a file.
    #[cfg(test)]
    pub(crate) fn is_spilled(&self) -> bool {
        self.file.is_some()
    }
}

impl Write for Spool {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if let Some(file) = &mut self.file {
            file.write_all(buf)?;
        } else {
            if !self.no_file && self.memory.len().saturating_add(buf.len()) > self.threshold {
                match self.dir.create() {
                    Some(file) => {
                        let mut writer = BufWriter::with_capacity(256 * 1024, file);
                        writer.write_all(&self.memory)?;
                        writer.write_all(buf)?;
                        self.memory = Vec::new();
                        self.file = Some(writer);
                        self.len += buf.len() as u64;
                        return Ok(buf.len());
                    }
                    None => self.no_file = true,
                }
            }
            self.memory.extend_from_slice(buf);
        }
        self.len += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.file {
            Some(file) => file.flush(),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_spools_stay_in_memory_and_large_ones_move_to_an_unnamed_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut small = Spool::new(SpoolDir::new(Some(dir.path().to_owned())), 10);
        small.write_all(b"0123456789").unwrap();
        assert!(!small.is_spilled());
        assert!(matches!(small.finish().unwrap(), Body::Memory(_)));

        let mut large = Spool::new(SpoolDir::new(Some(dir.path().to_owned())), 10);
        large.write_all(b"01234").unwrap();
        large.write_all(b"56789ab").unwrap();
        assert!(large.is_spilled());
        let body = large.finish().unwrap();
        assert!(matches!(body, Body::File { len: 12, .. }));
        assert_eq!(&body.to_bytes().unwrap()[..], b"0123456789ab");
        assert_eq!(&body.slice(10, 5).unwrap()[..], b"ab");
        let mut read = Vec::new();
        body.reader().read_to_end(&mut read).unwrap();
        assert_eq!(read, b"0123456789ab");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "the temporary file has no name"
        );
    }

    #[test]
    fn an_unwritable_directory_keeps_the_bytes_in_memory() {
        let dir = tempfile::tempdir().unwrap();
        let not_a_dir = dir.path().join("file");
        std::fs::write(&not_a_dir, b"x").unwrap();
        let mut spool = Spool::new(SpoolDir::new(Some(not_a_dir)), 2);
        spool.write_all(b"hello").unwrap();
        assert_eq!(&spool.finish().unwrap().to_bytes().unwrap()[..], b"hello");
    }
}
