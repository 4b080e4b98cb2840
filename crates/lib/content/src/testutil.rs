//! Test fixtures: a tar writer that can also write the malicious archives the `tar`
//! crate's safe builder refuses to produce.

use std::io::Write;

use flate2::Compression;
use flate2::write::GzEncoder;
use tar::{EntryType, Header};

/// Builds tar archives entry by entry; metadata setters apply to later entries.
pub(crate) struct TarBuilder {
    builder: tar::Builder<Vec<u8>>,
    mtime: u64,
    uid: u64,
    user: String,
    mode: u32,
}

impl TarBuilder {
    pub(crate) fn new() -> Self {
        Self {
            builder: tar::Builder::new(Vec::new()),
            mtime: 0,
            uid: 0,
            user: String::new(),
            mode: 0o644,
        }
    }

    pub(crate) fn mtime(mut self, mtime: u64) -> Self {
        self.mtime = mtime;
        self
    }

    pub(crate) fn owner(mut self, uid: u64, user: &str) -> Self {
        self.uid = uid;
        self.user = user.to_owned();
        self
    }

    pub(crate) fn mode(mut self, mode: u32) -> Self {
        self.mode = mode;
        self
    }

    fn header(&self, entry_type: EntryType, size: u64) -> Header {
        let mut header = Header::new_gnu();
        header.set_entry_type(entry_type);
        header.set_size(size);
        header.set_mtime(self.mtime);
        header.set_uid(self.uid);
        header.set_gid(self.uid);
        header.set_mode(self.mode);
        header.set_username(&self.user).unwrap();
        header
    }

    fn append(mut self, mut header: Header, path: &str, link: Option<&str>, data: &[u8]) -> Self {
        if path.len() < 100 && link.is_none_or(|l| l.len() < 100) {
            // Raw names: `..` and absolute paths go in as they are.
            let gnu = header.as_gnu_mut().unwrap();
            gnu.name = [0; 100];
            gnu.name[..path.len()].copy_from_slice(path.as_bytes());
            if let Some(link) = link {
                gnu.linkname = [0; 100];
                gnu.linkname[..link.len()].copy_from_slice(link.as_bytes());
            }
            header.set_cksum();
            self.builder.append(&header, data).unwrap();
        } else if let Some(link) = link {
            self.builder.append_link(&mut header, path, link).unwrap();
        } else {
            self.builder.append_data(&mut header, path, data).unwrap();
        }
        self
    }

    pub(crate) fn file(self, path: &str, data: &[u8]) -> Self {
        let header = self.header(EntryType::Regular, data.len() as u64);
        self.append(header, path, None, data)
    }

    pub(crate) fn dir(self, path: &str) -> Self {
        let header = self.header(EntryType::Directory, 0);
        self.append(header, path, None, &[])
    }

    pub(crate) fn symlink(self, path: &str, target: &str) -> Self {
        let header = self.header(EntryType::Symlink, 0);
        self.append(header, path, Some(target), &[])
    }

    pub(crate) fn hard_link(self, path: &str, target: &str) -> Self {
        let header = self.header(EntryType::Link, 0);
        self.append(header, path, Some(target), &[])
    }

    pub(crate) fn special(self, path: &str, entry_type: EntryType) -> Self {
        let header = self.header(entry_type, 0);
        self.append(header, path, None, &[])
    }

    /// A regular file whose header claims `size` bytes that never follow.
    pub(crate) fn lying_size(mut self, path: &str, size: u64) -> Self {
        let mut header = self.header(EntryType::Regular, size);
        let gnu = header.as_gnu_mut().unwrap();
        gnu.name[..path.len()].copy_from_slice(path.as_bytes());
        header.set_cksum();
        self.builder.get_mut().extend_from_slice(header.as_bytes());
        self
    }

    pub(crate) fn build(self) -> Vec<u8> {
        self.builder.into_inner().unwrap()
    }
}

/// gzip with the default level (and not the normalised header settings).
pub(crate) fn gzip(data: &[u8]) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
    encoder.write_all(data).unwrap();
    encoder.finish().unwrap()
}

/// `len` bytes no compressor can shorten, the same for the same seed (xorshift: enough to
/// defeat deflate, no dependency on rand here).
pub(crate) fn random(len: usize, seed: u8) -> Vec<u8> {
    let mut state = u64::from(seed) | 1 << 40;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect()
}
