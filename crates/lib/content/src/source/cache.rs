//! The image cache: normalised content keyed by image manifest digest, on local disk,
//! so an image pinned by digest is pulled once and a tag that did not move costs one
//! manifest request.
//!
//! Entries are written atomically (temporary file, then rename; the digest file last)
//! and verified against their digest when read, so a torn or corrupted entry is a miss,
//! never wrong content. The directory can be deleted at any time.

use std::io;
use std::path::{Path, PathBuf};

use crate::content::Content;
use crate::digest::Digest;

/// A directory of cached content.
#[derive(Debug, Clone)]
pub struct ImageCache {
    dir: PathBuf,
}

impl ImageCache {
    /// A cache in `dir` (created on first write).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The cache key for an image manifest digest and the directory selected from the
    /// image; `None` when the digest has characters that do not belong in a file name.
    pub fn key(manifest_digest: &str, directory: &str) -> Option<String> {
        let (algorithm, hex) = manifest_digest.split_once(':')?;
        let plain = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric());
        if !plain(algorithm) || !plain(hex) {
            return None;
        }
        Some(if directory.is_empty() {
            format!("{algorithm}-{hex}")
        } else {
            format!(
                "{algorithm}-{hex}-{}",
                Digest::of(directory.as_bytes()).short(16)
            )
        })
    }

    /// The cached content for `key`, if present and intact. A corrupted entry is
    /// removed and reported as a miss. The content is read from the cache file (hashed
    /// once, never loaded whole): entries are only ever replaced by renaming, so the
    /// file opened here does not change.
    pub async fn get(&self, key: &str) -> io::Result<Option<Content>> {
        let digest_path = self.path(key, "digest");
        let digest = match tokio::fs::read_to_string(&digest_path).await {
            Ok(text) => text,
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(err) => return Err(err),
        };
        let data_path = self.path(key, "tar.gz");
        let verified = match digest.trim().parse::<Digest>() {
            Ok(digest) => tokio::task::spawn_blocking(move || {
                let file = match std::fs::File::open(&data_path) {
                    Ok(file) => file,
                    Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
                    Err(err) => return Err(err),
                };
                Ok(Some(Content::verified_file(file, &digest)?.ok()))
            })
            .await
            .map_err(io::Error::other)??,
            Err(_) => Some(None),
        };
        let Some(verified) = verified else {
            return Ok(None);
        };
        if verified.is_none() {
            tracing::warn!(key, dir = %self.dir.display(), "removing corrupted image cache entry");
            self.remove(key).await?;
        }
        Ok(verified)
    }

    /// Stores content under `key`, streaming it to the file.
    pub async fn put(&self, key: &str, content: &Content) -> io::Result<()> {
        tokio::fs::create_dir_all(&self.dir).await?;
        let path = self.path(key, "tar.gz");
        let mut reader = content.reader();
        tokio::task::spawn_blocking(move || {
            // A torn file is caught by the digest check on read, so no fsync.
            let temporary = temporary_path(&path);
            let mut file = std::fs::File::create(&temporary)?;
            io::copy(&mut reader, &mut file)?;
            std::fs::rename(&temporary, &path)
        })
        .await
        .map_err(io::Error::other)??;
        write_atomically(
            &self.path(key, "digest"),
            content.digest().to_string().as_bytes(),
        )
        .await
    }

    /// Removes the entry for `key` (missing entries are fine).
    pub async fn remove(&self, key: &str) -> io::Result<()> {
        for extension in ["digest", "tar.gz"] {
            match tokio::fs::remove_file(self.path(key, extension)).await {
                Ok(()) => {}
                Err(err) if err.kind() == io::ErrorKind::NotFound => {}
                Err(err) => return Err(err),
            }
        }
        Ok(())
    }

    fn path(&self, key: &str, extension: &str) -> PathBuf {
        self.dir.join(format!("{key}.{extension}"))
    }
}

fn temporary_path(path: &Path) -> PathBuf {
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(format!(".tmp-{}", std::process::id()));
    PathBuf::from(temporary)
}

async fn write_atomically(path: &Path, data: &[u8]) -> io::Result<()> {
    let temporary = temporary_path(path);
    tokio::fs::write(&temporary, data).await?;
    tokio::fs::rename(&temporary, path).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::Limits;
    use crate::testutil::TarBuilder;

    #[test]
    fn keys_depend_on_the_directory_and_refuse_odd_digests() {
        let digest = format!("sha256:{}", "a".repeat(64));
        assert_eq!(
            ImageCache::key(&digest, "").unwrap(),
            format!("sha256-{}", "a".repeat(64))
        );
        assert_ne!(
            ImageCache::key(&digest, "configs"),
            ImageCache::key(&digest, "")
        );
        assert_eq!(ImageCache::key("sha256:../../etc", ""), None);
        assert_eq!(ImageCache::key("nodigest", ""), None);
    }

    #[tokio::test]
    async fn entries_round_trip_and_corrupted_ones_are_misses() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ImageCache::new(dir.path().join("cache"));
        let content = Content::normalize(
            &TarBuilder::new().file("a", b"1").build()[..],
            &Limits::default(),
        )
        .unwrap();
        assert_eq!(cache.get("k").await.unwrap(), None);
        cache.put("k", &content).await.unwrap();
        assert_eq!(cache.get("k").await.unwrap(), Some(content));

        std::fs::write(dir.path().join("cache/k.tar.gz"), b"garbage").unwrap();
        assert_eq!(cache.get("k").await.unwrap(), None);
        assert!(
            !dir.path().join("cache/k.digest").exists(),
            "corrupted entry removed"
        );
    }
}
