//! Where the file data of content being assembled lives, so that memory stays bounded
//! whatever the size of the content:
//!
//! - small files are kept in memory up to a budget (most bundles never touch the disk);
//! - small files past the budget are appended, as they are, to an unnamed spill file;
//! - large files ([`SEGMENT_MIN`] and more) are deflated on a second thread while the
//!   archive is still being read, into a second unnamed spill file, as the independent
//!   deflate segments the normalised archive is made of (`crate::deflate`): writing the
//!   archive then only copies them. Reading (inflating) and compressing so use both
//!   cores, and no large file is ever whole in memory.
//!
//! Spill files have no name (see [`crate::spool`]): they vanish when the extractor is
//! dropped, whether it finished or failed.

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::os::unix::fs::FileExt;
use std::sync::mpsc::{Receiver, SyncSender};
use std::thread::JoinHandle;

use bytes::Bytes;

use crate::deflate::{FEED, SEGMENT_MIN, Segment, SegmentWriter};
use crate::spool::SpoolDir;

/// Bytes of small files kept in memory by default before they are spilled.
pub(crate) const DEFAULT_MEMORY_BUDGET: u64 = 8 * 1024 * 1024;
/// Chunks of a large file queued for the compressing thread (each [`FEED`] bytes).
const QUEUED_CHUNKS: usize = 16;

/// The data of one regular file of the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FileData {
    /// In memory.
    Memory(Bytes),
    /// `len` bytes at `offset` of the raw spill file.
    Raw { offset: u64, len: u64 },
    /// `len` uncompressed bytes, deflated as segment `id` of the segment spill file.
    Segment { id: usize, len: u64 },
}

impl FileData {
    /// Uncompressed size.
    pub(crate) fn len(&self) -> u64 {
        match self {
            FileData::Memory(data) => data.len() as u64,
            FileData::Raw { len, .. } | FileData::Segment { len, .. } => *len,
        }
    }
}

/// Spilling and precompressing of file data while content is assembled.
#[derive(Debug)]
pub(crate) struct Spill {
    dir: SpoolDir,
    /// Small-file bytes that may stay in memory; `u64::MAX` keeps everything in memory.
    memory_budget: u64,
    in_memory: u64,
    /// Deflate large files on the worker (off when everything stays in memory, e.g.
    /// when content is read back as files).
    precompress: bool,
    raw: Option<RawSpill>,
    worker: Option<Worker>,
    next_segment: usize,
    /// No spill file can be created here: keep everything in memory.
    unavailable: bool,
}

#[derive(Debug)]
struct RawSpill {
    file: BufWriter<File>,
    len: u64,
}

#[derive(Debug)]
struct Worker {
    jobs: SyncSender<Job>,
    handle: JoinHandle<io::Result<(File, Vec<Segment>)>>,
}

enum Job {
    Data(Vec<u8>),
    End,
}

/// The spill files of finished content, for writing the normalised archive.
#[derive(Debug, Default)]
pub(crate) struct Spilled {
    raw: Option<File>,
    segments: Option<(File, Vec<Segment>)>,
}

impl Spill {
    /// Spills into `dir` past `memory_budget` bytes of small files, precompressing large
    /// files on a second thread.
    pub(crate) fn new(dir: SpoolDir, memory_budget: u64) -> Self {
        Self {
            dir,
            memory_budget,
            in_memory: 0,
            precompress: true,
            raw: None,
            worker: None,
            next_segment: 0,
            unavailable: false,
        }
    }

    /// Everything in memory, nothing precompressed (for reading content back as files).
    pub(crate) fn in_memory() -> Self {
        Self {
            precompress: false,
            memory_budget: u64::MAX,
            ..Self::new(SpoolDir::default(), u64::MAX)
        }
    }

    /// Changes where spill files go and how much stays in memory.
    pub(crate) fn configure(&mut self, dir: SpoolDir, memory_budget: u64) {
        self.dir = dir;
        self.memory_budget = memory_budget;
    }

    /// Takes the data of one file of `size` bytes (from its header) from `reader`.
    pub(crate) fn take(
        &mut self,
        reader: &mut impl Read,
        size: u64,
    ) -> Result<FileData, TakeError> {
        if size >= SEGMENT_MIN && self.precompress && !self.unavailable {
            if self.worker.is_none() {
                self.worker = self.start_worker();
            }
            if let Some(worker) = &self.worker {
                return match send_segment(worker, reader, &mut self.next_segment) {
                    Err(TakeError::Write(stopped)) => {
                        Err(TakeError::Write(self.worker_error(stopped)))
                    }
                    other => other,
                };
            }
        }
        let fits = self.in_memory.saturating_add(size) <= self.memory_budget;
        if !fits && !self.unavailable && self.raw.is_none() {
            match self.dir.create() {
                Some(file) => {
                    self.raw = Some(RawSpill {
                        file: BufWriter::with_capacity(256 * 1024, file),
                        len: 0,
                    })
                }
                None => self.unavailable = true,
            }
        }
        match &mut self.raw {
            Some(raw) if !fits => {
                let offset = raw.len;
                let len = copy(reader, &mut raw.file)?;
                raw.len += len;
                Ok(FileData::Raw { offset, len })
            }
            _ => self.keep(reader, size),
        }
    }

    /// Why the worker stopped taking chunks (its own error, if it had one).
    fn worker_error(&mut self, stopped: io::Error) -> io::Error {
        match self.worker.take() {
            Some(worker) => {
                drop(worker.jobs);
                match join(worker.handle) {
                    Err(err) => err,
                    Ok(_) => stopped,
                }
            }
            None => stopped,
        }
    }

    fn keep(&mut self, reader: &mut impl Read, size: u64) -> Result<FileData, TakeError> {
        // The header's size is not trusted for the allocation: a lying header would
        // otherwise reserve memory the data never fills.
        let capacity = usize::try_from(size.min(8 * 1024 * 1024)).unwrap_or(0);
        let mut data = Vec::with_capacity(capacity);
        reader.read_to_end(&mut data).map_err(TakeError::Read)?;
        self.in_memory = self.in_memory.saturating_add(data.len() as u64);
        Ok(FileData::Memory(Bytes::from(data)))
    }

    fn start_worker(&mut self) -> Option<Worker> {
        let Some(file) = self.dir.create() else {
            self.unavailable = true;
            return None;
        };
        let (jobs, queue) = std::sync::mpsc::sync_channel(QUEUED_CHUNKS);
        match std::thread::Builder::new()
            .name("content-deflate".to_owned())
            .spawn(move || compress_segments(file, queue))
        {
            Ok(handle) => Some(Worker { jobs, handle }),
            Err(err) => {
                tracing::warn!(error = %err, "cannot start a compression thread; compressing on one thread");
                self.precompress = false;
                None
            }
        }
    }

    /// Waits for the compressing thread and returns the spill files.
    pub(crate) fn finish(self) -> io::Result<Spilled> {
        let raw = match self.raw {
            Some(raw) => Some(raw.file.into_inner().map_err(|err| err.into_error())?),
            None => None,
        };
        let segments = match self.worker {
            Some(worker) => {
                drop(worker.jobs);
                Some(join(worker.handle)?)
            }
            None => None,
        };
        Ok(Spilled { raw, segments })
    }
}

fn join(handle: JoinHandle<io::Result<(File, Vec<Segment>)>>) -> io::Result<(File, Vec<Segment>)> {
    handle
        .join()
        .map_err(|_| io::Error::other("the compression thread panicked"))?
}

/// Why file data could not be taken: reading it (bad or too large content) or keeping it
/// (local storage).
#[derive(Debug)]
pub(crate) enum TakeError {
    /// Reading from the archive failed.
    Read(io::Error),
    /// Spilling failed.
    Write(io::Error),
}

/// Copies `reader` to `writer`, telling reading errors from writing errors.
fn copy(reader: &mut impl Read, writer: &mut impl Write) -> Result<u64, TakeError> {
    let mut buf = vec![0u8; FEED];
    let mut total = 0u64;
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => return Ok(total),
            Ok(n) => n,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(TakeError::Read(err)),
        };
        writer.write_all(&buf[..n]).map_err(TakeError::Write)?;
        total += n as u64;
    }
}

/// Streams one large file to the worker in [`FEED`]-byte chunks (always full but the
/// last, so the compressed bytes never depend on how the archive reader split reads).
fn send_segment(
    worker: &Worker,
    reader: &mut impl Read,
    next: &mut usize,
) -> Result<FileData, TakeError> {
    let gone = || TakeError::Write(io::Error::other("the compression thread stopped"));
    let mut len = 0u64;
    loop {
        let mut chunk = vec![0u8; FEED];
        let mut filled = 0;
        while filled < FEED {
            match reader.read(&mut chunk[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) => return Err(TakeError::Read(err)),
            }
        }
        if filled == 0 {
            break;
        }
        chunk.truncate(filled);
        len += filled as u64;
        worker.jobs.send(Job::Data(chunk)).map_err(|_| gone())?;
        if filled < FEED {
            break;
        }
    }
    worker.jobs.send(Job::End).map_err(|_| gone())?;
    let id = *next;
    *next += 1;
    Ok(FileData::Segment { id, len })
}

/// The worker: deflates each file's chunks into a segment of the spill file.
fn compress_segments(file: File, jobs: Receiver<Job>) -> io::Result<(File, Vec<Segment>)> {
    let mut out = Counting {
        inner: BufWriter::with_capacity(256 * 1024, file),
        written: 0,
    };
    let mut segments = Vec::new();
    // One writer for every segment, restarted at each file's first chunk.
    let mut writer: Option<SegmentWriter> = None;
    let mut open = false;
    for job in jobs {
        let current = writer.get_or_insert_with(|| SegmentWriter::new(out.written));
        if !open {
            current.restart(out.written);
            open = true;
        }
        match job {
            Job::Data(chunk) => current.push(&chunk, &mut out)?,
            Job::End => {
                segments.push(current.finish(&mut out)?);
                open = false;
            }
        }
    }
    let file = out.inner.into_inner().map_err(|err| err.into_error())?;
    Ok((file, segments))
}

/// Counts what is written through it (the offsets of segments in the spill file).
struct Counting<W> {
    inner: W,
    written: u64,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl Spilled {
    /// Bytes of a small file, wherever they are.
    pub(crate) fn load(&self, data: &FileData) -> io::Result<Bytes> {
        match data {
            FileData::Memory(bytes) => Ok(bytes.clone()),
            FileData::Raw { offset, len } => {
                let file = self
                    .raw
                    .as_ref()
                    .ok_or_else(|| io::Error::other("the spill file is missing"))?;
                let mut buf = vec![0u8; usize::try_from(*len).map_err(io::Error::other)?];
                file.read_exact_at(&mut buf, *offset)?;
                Ok(Bytes::from(buf))
            }
            FileData::Segment { .. } => Err(io::Error::other(
                "a precompressed file cannot be read back uncompressed",
            )),
        }
    }

    /// Calls `f` with the bytes of a small or in-memory file in [`FEED`]-byte chunks.
    pub(crate) fn for_each_chunk(
        &self,
        data: &FileData,
        mut f: impl FnMut(&[u8]) -> io::Result<()>,
    ) -> io::Result<()> {
        match data {
            FileData::Memory(bytes) => bytes.chunks(FEED).try_for_each(f),
            FileData::Raw { offset, len } => {
                let file = self
                    .raw
                    .as_ref()
                    .ok_or_else(|| io::Error::other("the spill file is missing"))?;
                let mut buf = vec![0u8; FEED];
                let mut done = 0u64;
                while done < *len {
                    let n = usize::try_from(*len - done).unwrap_or(FEED).min(FEED);
                    file.read_exact_at(&mut buf[..n], offset + done)?;
                    f(&buf[..n])?;
                    done += n as u64;
                }
                Ok(())
            }
            FileData::Segment { .. } => Err(io::Error::other(
                "a precompressed file cannot be read back uncompressed",
            )),
        }
    }

    /// The spill file and the place of precompressed segment `id`.
    pub(crate) fn segment(&self, id: usize) -> io::Result<(&File, &Segment)> {
        let (file, segments) = self
            .segments
            .as_ref()
            .ok_or_else(|| io::Error::other("the segment spill file is missing"))?;
        let segment = segments
            .get(id)
            .ok_or_else(|| io::Error::other(format!("segment {id} is missing")))?;
        Ok((file, segment))
    }
}
