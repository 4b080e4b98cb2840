//! One catalog's blobs on disk, one compact JSON document per line, with a small index of
//! where each blob is, so queries read only the lines they return.
//!
//! The file is created unnamed in the store directory (`O_TMPFILE`): it has no path, so
//! nothing is left behind by a crash, and it lives exactly as long as the last
//! [`StoredCatalog`] handle. A response holds its handle until it has sent the last byte, so
//! a catalog replaced while it is read is read to the end as it was (no torn responses),
//! and its disk space is freed when the last such reader finishes.
//!
//! Memory: the index holds offsets and interned names (a few dozen bytes a blob, about 1 MB
//! for 10,000 bundles); the blobs themselves stay on disk and in the page cache.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;
use std::time::SystemTime;

use bytes::Bytes;
use fbc::{CatalogIndex, DocumentError};

use crate::packages::{PackageExtras, summary};

/// Writing or reading the store's file failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The store directory or the file could not be written or read.
    #[error("failed to {action} the catalog store file in {dir}")]
    Io {
        /// What was being done ("create", "write", "read").
        action: &'static str,
        /// The store directory.
        dir: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
}

/// Where one blob is, and what a query can select it by.
#[derive(Debug, Clone)]
struct Entry {
    schema: Option<Arc<str>>,
    package: Option<Arc<str>>,
    name: Option<Arc<str>>,
    /// Byte offset of the blob's line in the file.
    offset: u64,
    /// Length of the line, newline included.
    len: u32,
}

/// A blob written but not yet known to be kept: kept blobs are the ones the parsed catalog
/// has a location for (a `.indexignore` read later may hide files written earlier).
#[derive(Debug)]
struct Written {
    file: Arc<str>,
    document: usize,
    entry: Entry,
}

/// Writes a catalog's files into a new store file, one at a time as they are read.
#[derive(Debug)]
pub struct StoreBuilder {
    dir: String,
    out: BufWriter<File>,
    written: u64,
    blobs: Vec<Written>,
    names: HashMap<String, Arc<str>>,
    extras: HashMap<String, PackageExtras>,
}

impl StoreBuilder {
    /// Starts a store file in `dir` (which must exist and be writable).
    pub fn new(dir: &Path) -> Result<Self, StoreError> {
        let display = dir.display().to_string();
        let file = tempfile::tempfile_in(dir).map_err(|source| StoreError::Io {
            action: "create",
            dir: display.clone(),
            source,
        })?;
        Ok(Self {
            dir: display,
            out: BufWriter::with_capacity(256 * 1024, file),
            written: 0,
            blobs: Vec::new(),
            names: HashMap::new(),
            extras: HashMap::new(),
        })
    }

    /// Writes every document of one catalog file (path relative to the catalog root, as in
    /// the archive). A file that does not split into documents is left out from its first
    /// malformed document on: the catalog's own parse reports it, or a `.indexignore` hides it.
    pub fn add_file(&mut self, path: &str, contents: &[u8]) -> Result<(), StoreError> {
        let Some(path) = fbc::normalize_path(path) else {
            return Ok(());
        };
        if path.rsplit('/').next() == Some(fbc::INDEX_IGNORE) {
            return Ok(());
        }
        let file: Arc<str> = path.into();
        let result = fbc::for_each_document(contents, |doc| -> Result<(), Stop> {
            let len = doc.json.len() as u64 + 1;
            let io = |source| {
                Stop::Store(StoreError::Io {
                    action: "write",
                    dir: self.dir.clone(),
                    source,
                })
            };
            if doc.schema.as_deref() == Some(fbc::SCHEMA_PACKAGE)
                && let Some(name) = &doc.name
            {
                self.extras
                    .insert(name.clone(), PackageExtras::of(&doc.json));
            }
            self.out.write_all(&doc.json).map_err(io)?;
            self.out.write_all(b"\n").map_err(io)?;
            let entry = Entry {
                schema: doc.schema.map(|s| intern(&mut self.names, s)),
                package: doc.package.map(|s| intern(&mut self.names, s)),
                name: doc.name.map(|s| intern(&mut self.names, s)),
                offset: self.written,
                // A single document over 4 GiB is far past every content limit.
                len: u32::try_from(len).unwrap_or(u32::MAX),
            };
            self.written += len;
            self.blobs.push(Written {
                file: file.clone(),
                document: doc.document,
                entry,
            });
            Ok(())
        });
        match result {
            Ok(()) | Err(Stop::Malformed(_)) => Ok(()),
            Err(Stop::Store(err)) => Err(err),
        }
    }

    /// The store of the blobs `index` (parsed from the same files) holds, in its order (path
    /// order, then document order). `etag` identifies the content, e.g. its digest.
    pub fn finish(self, index: &CatalogIndex, etag: String) -> Result<StoredCatalog, StoreError> {
        let catalog = index.catalog();
        let located: HashSet<(&str, usize)> = catalog
            .packages
            .iter()
            .map(|blob| &blob.location)
            .chain(catalog.channels.iter().map(|blob| &blob.location))
            .chain(catalog.bundles.iter().map(|blob| &blob.location))
            .chain(catalog.deprecations.iter().map(|blob| &blob.location))
            .chain(catalog.others.iter().map(|blob| &blob.location))
            .map(|location| (&*location.file, location.document))
            .collect();
        let packages = summary(index, &self.extras);
        self.finish_kept(
            |file, document| located.contains(&(file, document)),
            etag,
            packages,
        )
    }

    /// The store of the blobs `kept(file, document)` accepts, in path order, then document
    /// order; `packages` is the JSON the `packages` query returns.
    fn finish_kept(
        mut self,
        kept: impl Fn(&str, usize) -> bool,
        etag: String,
        packages: Bytes,
    ) -> Result<StoredCatalog, StoreError> {
        let io = |action, source| StoreError::Io {
            action,
            dir: self.dir.clone(),
            source,
        };
        self.out.flush().map_err(|err| io("write", err))?;
        let file = self
            .out
            .into_inner()
            .map_err(|err| io("write", err.into_error()))?;
        let mut blobs: Vec<Written> = self
            .blobs
            .into_iter()
            .filter(|blob| kept(&blob.file, blob.document))
            .collect();
        blobs.sort_by(|a, b| (&*a.file, a.document).cmp(&(&*b.file, b.document)));
        let entries: Vec<Entry> = blobs.into_iter().map(|blob| blob.entry).collect();
        let mut by_package: HashMap<Arc<str>, Vec<u32>> = HashMap::new();
        for (at, entry) in entries.iter().enumerate() {
            if let Some(package) = &entry.package {
                by_package
                    .entry(package.clone())
                    .or_default()
                    .push(at as u32);
            }
        }
        let packages_named: HashSet<Arc<str>> = by_package
            .keys()
            .cloned()
            .chain(entries.iter().filter_map(|entry| {
                (entry.schema.as_deref() == Some(fbc::SCHEMA_PACKAGE))
                    .then(|| entry.name.clone())
                    .flatten()
            }))
            .collect();
        let all = spans(&entries, 0..entries.len() as u32);
        Ok(StoredCatalog {
            file,
            dir: self.dir,
            entries,
            by_package,
            packages_named,
            all,
            etag,
            modified: SystemTime::now(),
            packages,
        })
    }
}

/// Why splitting a file stopped.
enum Stop {
    Malformed(#[allow(dead_code)] DocumentError),
    Store(StoreError),
}

impl From<DocumentError> for Stop {
    fn from(err: DocumentError) -> Self {
        Stop::Malformed(err)
    }
}

fn intern(names: &mut HashMap<String, Arc<str>>, name: String) -> Arc<str> {
    if let Some(shared) = names.get(&name) {
        return shared.clone();
    }
    let shared: Arc<str> = name.as_str().into();
    names.insert(name, shared.clone());
    shared
}

/// Byte ranges of the file, in order, with adjacent lines merged.
fn spans(entries: &[Entry], selected: impl IntoIterator<Item = u32>) -> Vec<(u64, u64)> {
    let mut spans: Vec<(u64, u64)> = Vec::new();
    for at in selected {
        let Some(entry) = entries.get(at as usize) else {
            continue;
        };
        let end = entry.offset + u64::from(entry.len);
        match spans.last_mut() {
            Some(last) if last.1 == entry.offset => last.1 = end,
            _ => spans.push((entry.offset, end)),
        }
    }
    spans
}

/// A `metas` query: each field, when set, must equal the blob's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// The blob's `schema`.
    pub schema: Option<String>,
    /// The blob's `package`.
    pub package: Option<String>,
    /// The blob's `name`.
    pub name: Option<String>,
}

impl Filter {
    fn accepts(&self, entry: &Entry) -> bool {
        let matches = |want: &Option<String>, have: &Option<Arc<str>>| {
            want.as_deref()
                .is_none_or(|want| have.as_deref() == Some(want))
        };
        matches(&self.schema, &entry.schema)
            && matches(&self.package, &entry.package)
            && matches(&self.name, &entry.name)
    }
}

/// One catalog's blobs, ready to be served; see the [module documentation](self).
#[derive(Debug)]
pub struct StoredCatalog {
    file: File,
    dir: String,
    entries: Vec<Entry>,
    by_package: HashMap<Arc<str>, Vec<u32>>,
    /// Every package some blob belongs to (by its `package`, or as its `olm.package`).
    packages_named: HashSet<Arc<str>>,
    all: Vec<(u64, u64)>,
    etag: String,
    modified: SystemTime,
    packages: Bytes,
}

/// The byte ranges a response sends, in order, and their total length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    /// `(start, end)` byte ranges of the store file.
    pub spans: Vec<(u64, u64)>,
    /// Total bytes.
    pub len: u64,
}

impl Selection {
    fn of(spans: Vec<(u64, u64)>) -> Self {
        let len = spans.iter().map(|(start, end)| end - start).sum();
        Self { spans, len }
    }
}

impl StoredCatalog {
    /// Every blob.
    pub fn all(&self) -> Selection {
        Selection::of(self.all.clone())
    }

    /// The blobs `filter` accepts; looked up by package when it names one.
    pub fn select(&self, filter: &Filter) -> Selection {
        let candidates: Box<dyn Iterator<Item = u32> + '_> = match &filter.package {
            Some(package) => Box::new(
                self.by_package
                    .get(package.as_str())
                    .into_iter()
                    .flatten()
                    .copied(),
            ),
            None => Box::new(0..self.entries.len() as u32),
        };
        let selected = candidates.filter(|&at| {
            self.entries
                .get(at as usize)
                .is_some_and(|entry| filter.accepts(entry))
        });
        Selection::of(spans(&self.entries, selected))
    }

    /// Reads `len` bytes at `offset` of the store file. Blocking: call it off the async
    /// workers.
    pub fn read(&self, offset: u64, len: usize) -> Result<Bytes, StoreError> {
        let mut buf = vec![0; len];
        self.file
            .read_exact_at(&mut buf, offset)
            .map_err(|source| StoreError::Io {
                action: "read",
                dir: self.dir.clone(),
                source,
            })?;
        Ok(Bytes::from(buf))
    }

    /// The content's identity, for `ETag`.
    pub fn etag(&self) -> &str {
        &self.etag
    }

    /// When this content started being served, for `Last-Modified`.
    pub fn modified(&self) -> SystemTime {
        self.modified
    }

    /// The `packages` summary (JSON).
    pub fn packages(&self) -> Bytes {
        self.packages.clone()
    }

    /// Whether any blob belongs to `package` (names it as its `package`, or is its
    /// `olm.package` blob).
    pub fn has_package(&self, package: &str) -> bool {
        self.packages_named.contains(package)
    }

    /// How many blobs are stored.
    pub fn blob_count(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn read_all(store: &StoredCatalog, selection: &Selection) -> String {
        let mut out = Vec::new();
        for (start, end) in &selection.spans {
            out.extend_from_slice(&store.read(*start, (end - start) as usize).unwrap());
        }
        assert_eq!(out.len() as u64, selection.len);
        String::from_utf8(out).unwrap()
    }

    fn build(files: &[(&str, &str)], kept: impl Fn(&str, usize) -> bool) -> StoredCatalog {
        let dir = tempfile::tempdir().unwrap();
        let mut builder = StoreBuilder::new(dir.path()).unwrap();
        for (path, contents) in files {
            builder.add_file(path, contents.as_bytes()).unwrap();
        }
        builder
            .finish_kept(kept, "\"d\"".to_owned(), Bytes::new())
            .unwrap()
    }

    #[test]
    fn blobs_are_served_in_path_order_and_filtered_by_each_field() {
        let store = build(
            &[
                (
                    "./b/catalog.yaml",
                    "schema: olm.package\nname: b\n---\nschema: olm.bundle\npackage: b\nname: b.v1\n",
                ),
                (
                    "a/catalog.json",
                    "{\"schema\":\"olm.package\",\"name\":\"a\"}\n{ \"schema\": \"olm.bundle\", \"package\": \"a\", \"name\": \"a.v1\" }",
                ),
                ("a/.indexignore", "nothing\n"),
                ("a/", ""),
            ],
            |_, _| true,
        );
        assert_eq!(store.blob_count(), 4);
        assert_eq!(
            read_all(&store, &store.all()),
            "{\"schema\":\"olm.package\",\"name\":\"a\"}\n\
             {\"schema\":\"olm.bundle\",\"package\":\"a\",\"name\":\"a.v1\"}\n\
             {\"name\":\"b\",\"schema\":\"olm.package\"}\n\
             {\"name\":\"b.v1\",\"package\":\"b\",\"schema\":\"olm.bundle\"}\n"
        );
        let bundles_of_a = Filter {
            schema: Some("olm.bundle".into()),
            package: Some("a".into()),
            name: None,
        };
        assert_eq!(
            read_all(&store, &store.select(&bundles_of_a)),
            "{\"schema\":\"olm.bundle\",\"package\":\"a\",\"name\":\"a.v1\"}\n"
        );
        let packages = Filter {
            schema: Some("olm.package".into()),
            ..Filter::default()
        };
        assert_eq!(store.select(&packages).spans.len(), 2);
        let by_name = Filter {
            name: Some("b".into()),
            ..Filter::default()
        };
        assert_eq!(
            read_all(&store, &store.select(&by_name)),
            "{\"name\":\"b\",\"schema\":\"olm.package\"}\n"
        );
        let unknown = Filter {
            package: Some("zzz".into()),
            ..Filter::default()
        };
        assert_eq!(store.select(&unknown), Selection::of(Vec::new()));
        assert!(store.has_package("a") && store.has_package("b"));
        assert!(!store.has_package("zzz") && !store.has_package("a.v1"));
    }

    #[test]
    fn only_kept_documents_are_served() {
        let store = build(
            &[
                (
                    "x.json",
                    "{\"schema\":\"a\",\"name\":\"1\"}{\"schema\":\"a\",\"name\":\"2\"}",
                ),
                ("-hidden.json", "{\"schema\":\"a\",\"name\":\"3\"}"),
                ("broken.json", "{\"schema\":\"a\",\"name\":\"4\"} { nope"),
            ],
            |file, document| file == "x.json" && document == 2 || file == "broken.json",
        );
        assert_eq!(
            read_all(&store, &store.all()),
            "{\"schema\":\"a\",\"name\":\"4\"}\n{\"schema\":\"a\",\"name\":\"2\"}\n"
        );
    }

    #[test]
    fn adjacent_lines_are_read_as_one_span() {
        let store = build(
            &[(
                "c.json",
                "{\"schema\":\"a\",\"package\":\"p\"}{\"schema\":\"a\",\"package\":\"p\"}{\"schema\":\"a\",\"package\":\"q\"}",
            )],
            |_, _| true,
        );
        assert_eq!(store.all().spans.len(), 1);
        let p = Filter {
            package: Some("p".into()),
            ..Filter::default()
        };
        // Two lines of 28 bytes and a newline each.
        assert_eq!(store.select(&p).spans, vec![(0, 58)]);
    }
}
