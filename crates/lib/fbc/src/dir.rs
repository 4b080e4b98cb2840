//! A catalog directory on disk: listing its files and reading them, relative to its root.
//!
//! A catalog is usually thousands of package directories holding one file each, so listing
//! and reading it is mostly system calls. Each directory and file is opened relative to the
//! root's descriptor (the kernel walks the path below the root, two components in the usual
//! layout, instead of the whole path), a directory is read without the `fstat` that
//! `std::fs::read_dir` adds, and a file is read into a buffer its reader reuses, without the
//! `statx` that `std::fs::read` makes to size a fresh one: four calls per file or directory
//! (open, two reads, close) instead of five.

use std::ffi::CStr;
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags};

use crate::error::ParseError;

/// The first size of a buffer to read catalog files into: most are smaller, and a buffer
/// grows to the largest file its reader meets.
const READ_BUFFER: usize = 64 * 1024;

/// An open catalog directory.
pub(crate) struct CatalogDir<'p> {
    path: &'p Path,
    fd: OwnedFd,
}

impl<'p> CatalogDir<'p> {
    /// Opens the catalog directory at `path`.
    pub(crate) fn open(path: &'p Path) -> Result<Self, ParseError> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let fd = rustix::fs::open(path, flags, Mode::empty())
            .map_err(|errno| read_error(path.to_path_buf(), errno.into()))?;
        Ok(Self { path, fd })
    }

    /// The root's own files and directories, as names relative to it, in no particular
    /// order.
    pub(crate) fn top_level(&self) -> Result<(Vec<String>, Vec<String>), ParseError> {
        let (mut files, mut directories) = (Vec::new(), Vec::new());
        self.list("", &mut files, &mut directories)?;
        Ok((files, directories))
    }

    /// The files under directory `rel`, at any depth, as `/`-separated paths relative to
    /// the root, in no particular order.
    pub(crate) fn files_under(&self, rel: &str) -> Result<Vec<String>, ParseError> {
        let (mut files, mut directories) = (Vec::new(), vec![rel.to_owned()]);
        while let Some(directory) = directories.pop() {
            self.list(&directory, &mut files, &mut directories)?;
        }
        Ok(files)
    }

    /// Reads the file at `rel` into `buffer` (replacing what it held) and returns its bytes.
    pub(crate) fn read<'b>(
        &self,
        rel: &str,
        buffer: &'b mut Vec<u8>,
    ) -> Result<&'b [u8], ParseError> {
        let flags = OFlags::RDONLY | OFlags::CLOEXEC;
        let length = rustix::fs::openat(&self.fd, rel, flags, Mode::empty())
            .map_err(io::Error::from)
            .and_then(|fd| fill(File::from(fd), buffer))
            .map_err(|error| read_error(self.path.join(rel), error))?;
        Ok(&buffer[..length])
    }

    /// Adds the files of directory `rel` to `files` and its subdirectories to `directories`.
    /// Symbolic links to files are followed; symbolic links to directories are not, as with
    /// Go's `fs.WalkDir` that operator-registry uses.
    fn list(
        &self,
        rel: &str,
        files: &mut Vec<String>,
        directories: &mut Vec<String>,
    ) -> Result<(), ParseError> {
        let error =
            |rel: &str, errno: rustix::io::Errno| read_error(self.path.join(rel), errno.into());
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let at = if rel.is_empty() { "." } else { rel };
        let fd =
            rustix::fs::openat(&self.fd, at, flags, Mode::empty()).map_err(|e| error(rel, e))?;
        let entries = Dir::new(fd).map_err(|e| error(rel, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| error(rel, e))?;
            let name = entry.file_name();
            if is_dot_or_dot_dot(name) {
                continue;
            }
            let name = String::from_utf8_lossy(name.to_bytes());
            let child = if rel.is_empty() {
                name.into_owned()
            } else {
                format!("{rel}/{name}")
            };
            let file_type = match entry.file_type() {
                // Not every file system says in the listing.
                FileType::Unknown => self.file_type(&child, AtFlags::SYMLINK_NOFOLLOW),
                known => Ok(known),
            }
            .map_err(|e| error(&child, e))?;
            match file_type {
                FileType::Directory => directories.push(child),
                FileType::RegularFile => files.push(child),
                FileType::Symlink
                    if self
                        .file_type(&child, AtFlags::empty())
                        .is_ok_and(|target| target == FileType::RegularFile) =>
                {
                    files.push(child);
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn file_type(&self, rel: &str, flags: AtFlags) -> rustix::io::Result<FileType> {
        let stat = rustix::fs::statat(&self.fd, rel, flags)?;
        Ok(FileType::from_raw_mode(stat.st_mode))
    }
}

/// Reads `file` to its end into `buffer`, growing it as needed, and returns the length read.
/// The buffer is zeroed only where it grows: a reader's later files overwrite what its
/// earlier ones left. (`File::read_to_end` would not zero, but asks the file's size first,
/// a `statx` per file; other readers' `read_to_end` reads at most 8 KiB at first.)
fn fill(mut file: File, buffer: &mut Vec<u8>) -> io::Result<usize> {
    if buffer.len() < READ_BUFFER {
        buffer.resize(READ_BUFFER, 0);
    }
    let mut filled = 0;
    loop {
        if filled == buffer.len() {
            // Larger than every file before it: only now is its size worth asking, so that a
            // large single-file catalog takes its own size and not up to twice that.
            let size = file.metadata().map_or(0, |m| m.len());
            let size = usize::try_from(size).unwrap_or(usize::MAX);
            let grown = size.saturating_add(1).max(buffer.len() + READ_BUFFER);
            buffer.resize(grown, 0);
        }
        match file.read(&mut buffer[filled..]) {
            Ok(0) => return Ok(filled),
            Ok(read) => filled += read,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
}

fn is_dot_or_dot_dot(name: &CStr) -> bool {
    matches!(name.to_bytes(), b"." | b"..")
}

fn read_error(path: PathBuf, source: io::Error) -> ParseError {
    ParseError::Read { path, source }
}
