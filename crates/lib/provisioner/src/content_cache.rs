//! The files of stored bundle content, kept in memory by digest.
//!
//! Content never changes under its digest, so what was read, verified and unpacked once
//! is good for every later reconcile: without this, each reconcile of every
//! BundleDeployment read all chunks of its content from the API server, hashed them and
//! decompressed them again. The cache holds at most a configured number of unpacked bytes
//! and forgets the least recently used content first; content larger than the whole
//! budget is never kept.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use content::FileMap;

/// Unpacked content by digest, least recently used first out.
#[derive(Debug)]
pub struct ContentCache {
    max_bytes: u64,
    /// Most recently used last: (digest, files, their size in bytes).
    entries: Mutex<VecDeque<(String, Arc<FileMap>, u64)>>,
}

impl ContentCache {
    /// A cache holding at most `max_bytes` of unpacked files (0 keeps nothing).
    pub fn new(max_bytes: u64) -> Self {
        Self {
            max_bytes,
            entries: Mutex::default(),
        }
    }

    /// The files of `digest`, if kept; marks them as just used.
    pub fn get(&self, digest: &str) -> Option<Arc<FileMap>> {
        let mut entries = self.lock();
        let position = entries.iter().position(|(d, _, _)| d == digest)?;
        let entry = entries.remove(position)?;
        let files = entry.1.clone();
        entries.push_back(entry);
        Some(files)
    }

    /// Keeps the files of `digest`, forgetting the least recently used content until the
    /// budget holds; returns them shared.
    pub fn insert(&self, digest: &str, files: FileMap) -> Arc<FileMap> {
        let files = Arc::new(files);
        let size = files_size(&files);
        if size > self.max_bytes {
            return files;
        }
        let mut entries = self.lock();
        entries.retain(|(d, _, _)| d != digest);
        let mut held: u64 = entries.iter().map(|(_, _, s)| s).sum();
        while held + size > self.max_bytes {
            match entries.pop_front() {
                Some((_, _, freed)) => held -= freed,
                None => break,
            }
        }
        entries.push_back((digest.to_owned(), files.clone(), size));
        files
    }

    /// How many bytes of files are kept.
    pub fn held_bytes(&self) -> u64 {
        self.lock().iter().map(|(_, _, s)| s).sum()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<(String, Arc<FileMap>, u64)>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What keeping `files` costs: their bytes plus a little for each path.
fn files_size(files: &FileMap) -> u64 {
    files
        .iter()
        .map(|(path, data)| (path.len() + data.len() + 64) as u64)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(bytes: usize) -> FileMap {
        let mut extractor = content::Extractor::new(content::Limits::default());
        extractor
            .add_file("manifests/a.yaml", vec![b'x'; bytes], false)
            .unwrap();
        extractor
            .finish()
            .unwrap()
            .files(&content::Limits::default())
            .unwrap()
    }

    #[test]
    fn the_least_recently_used_content_goes_first_when_the_budget_is_full() {
        let cache = ContentCache::new(3_000);
        cache.insert("a", files(900));
        cache.insert("b", files(900));
        cache.insert("c", files(900));
        assert!(
            cache.get("a").is_some(),
            "a is used again, so b is now the oldest"
        );
        cache.insert("d", files(900));
        assert!(cache.get("b").is_none());
        assert!(cache.get("a").is_some() && cache.get("c").is_some() && cache.get("d").is_some());
        assert!(cache.held_bytes() <= 3_000, "{}", cache.held_bytes());
    }

    #[test]
    fn content_larger_than_the_budget_is_returned_but_not_kept() {
        let cache = ContentCache::new(1_000);
        let big = cache.insert("big", files(5_000));
        assert_eq!(big.len(), 1);
        assert!(cache.get("big").is_none());
        assert_eq!(cache.held_bytes(), 0);
    }

    #[test]
    fn inserting_the_same_digest_twice_keeps_one_entry() {
        let cache = ContentCache::new(10_000);
        cache.insert("a", files(100));
        let once = cache.held_bytes();
        cache.insert("a", files(100));
        assert_eq!(cache.held_bytes(), once);
    }
}
