//! Turning a Catalog's stored content into what is served: the parsed index, and the bundle
//! index the resolution-activator reads instead of the whole catalog.
//!
//! The content is a normalised tar.gz. It is parsed as a stream, one file at a time, each
//! file's bytes dropped once parsed ([`fbc::CatalogBuilder`]), so a large catalog is never
//! held unpacked: for a 168 MB catalog that is the difference between 165 MiB of files and
//! one file's worth. Content with links (which normalised catalogs rarely have) is read
//! through [`content::Content::files`] instead, which resolves them.

use std::io::Read;
use std::path::Path;

use catalog_api::{StoreBuilder, StoredCatalog};

use content::{Content, Limits};
use deppy_api::{BUNDLE_INDEX_FILE, BundleIndex};
use fbc::{CatalogBuilder, CatalogIndex, Detail};
use tar::EntryType;

use super::error_chain;

/// Parses `content` as a file-based catalog, keeping what resolution reads
/// ([`Detail::Resolution`]); the error is a message for the user. With `store_dir`, the
/// catalog's blobs are also written for the catalog query API as they are read; a store
/// that cannot be written is logged and left out (resolution does not need it). CPU-bound:
/// call it off the async workers.
pub(super) fn parse(
    content: &Content,
    limits: &Limits,
    store_dir: Option<&Path>,
) -> Result<(CatalogIndex, Option<StoredCatalog>), String> {
    let mut store = store_dir.and_then(|dir| {
        StoreBuilder::new(dir)
            .inspect_err(|err| {
                tracing::warn!(error = %error_chain(err), "the catalog query API will not serve this catalog");
            })
            .ok()
    });
    let index = match stream(content, limits, &mut store)? {
        Some(builder) => builder.finish_index().map_err(|err| error_chain(&err))?,
        None => {
            let files = content.files(limits).map_err(|err| error_chain(&err))?;
            // The streamed store saw only part of the archive; write it again from the files.
            store = store_dir.and_then(|dir| StoreBuilder::new(dir).ok());
            for (path, contents) in files.iter() {
                add_to_store(&mut store, path, contents);
            }
            CatalogIndex::from_files_with(files.iter(), Detail::Resolution)
                .map_err(|err| error_chain(&err))?
        }
    };
    let stored = store.and_then(|store| {
        store
            .finish(&index, content.digest().to_string())
            .inspect_err(|err| {
                tracing::warn!(error = %error_chain(err), "the catalog query API will not serve this catalog");
            })
            .ok()
    });
    Ok((index, stored))
}

/// Writes one file to the store, dropping the store (with a warning) when that fails.
fn add_to_store(store: &mut Option<StoreBuilder>, path: &str, contents: &[u8]) {
    if let Some(builder) = store
        && let Err(err) = builder.add_file(path, contents)
    {
        tracing::warn!(error = %error_chain(&err), "the catalog query API will not serve this catalog");
        *store = None;
    }
}

/// Every regular file of the archive, parsed (and stored) as it is read; `None` when the
/// archive holds an entry only the content crate's extractor handles (a link), so the
/// caller reads it that way instead.
fn stream(
    content: &Content,
    limits: &Limits,
    store: &mut Option<StoreBuilder>,
) -> Result<Option<CatalogBuilder>, String> {
    let mut builder = CatalogBuilder::new(Detail::Resolution);
    let decoder = flate2::read::MultiGzDecoder::new(std::io::BufReader::new(content.reader()));
    let mut archive = tar::Archive::new(Bounded {
        inner: decoder,
        left: limits.max_uncompressed_bytes,
        limit: limits.max_uncompressed_bytes,
    });
    let broken = |err: std::io::Error| format!("failed to read the catalog content: {err}");
    let mut entries: u64 = 0;
    let mut data = Vec::new();
    for entry in archive.entries().map_err(broken)? {
        let mut entry = entry.map_err(broken)?;
        entries += 1;
        if entries > limits.max_entries {
            return Err(format!(
                "failed to read the catalog content: more than {} entries",
                limits.max_entries
            ));
        }
        match entry.header().entry_type() {
            EntryType::Regular | EntryType::Continuous => {
                let raw = entry.path_bytes().into_owned();
                let path = content::paths::clean(&raw).map_err(|problem| {
                    format!(
                        "failed to read the catalog content: path {:?}: {}",
                        String::from_utf8_lossy(&raw),
                        problem.describe()
                    )
                })?;
                data.clear();
                entry.read_to_end(&mut data).map_err(broken)?;
                builder.add_file(&path, &data);
                add_to_store(store, &path, &data);
                // Keep the buffer for the next file unless this one was unusually large.
                if data.capacity() > 16 * 1024 * 1024 {
                    data = Vec::new();
                }
            }
            EntryType::Directory | EntryType::XGlobalHeader => {}
            _ => return Ok(None),
        }
    }
    Ok(Some(builder))
}

/// Refuses to decompress more than the limit, so hostile content cannot grow without end.
struct Bounded<R> {
    inner: R,
    left: u64,
    limit: u64,
}

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.left = self.left.checked_sub(n as u64).ok_or_else(|| {
            std::io::Error::other(format!(
                "uncompressed size exceeds the limit of {} bytes",
                self.limit
            ))
        })?;
        Ok(n)
    }
}

/// The bundle index as content: a normalised tar.gz holding [`BUNDLE_INDEX_FILE`].
pub(super) fn index_content(index: &BundleIndex, limits: &Limits) -> Result<Content, String> {
    let json = index
        .to_json()
        .map_err(|err| format!("failed to write the bundle index: {err}"))?;
    let mut extractor = content::Extractor::new(*limits);
    extractor
        .add_file(BUNDLE_INDEX_FILE, json, false)
        .and_then(|()| extractor.finish())
        .map_err(|err| format!("failed to write the bundle index: {}", error_chain(&err)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A normalised archive of `files` (and any `links`: path to target).
    fn archive(files: &[(&str, String)], links: &[(&str, &str)]) -> Content {
        let mut extractor = content::Extractor::new(Limits::default());
        for (path, text) in files {
            extractor
                .add_file(path, text.clone().into_bytes(), false)
                .unwrap();
        }
        for (path, target) in links {
            extractor.add_symlink(path, target).unwrap();
        }
        extractor.finish().unwrap()
    }

    fn package(name: &str, versions: &[&str], max: Option<&str>) -> String {
        let mut out = format!("{{\"schema\":\"olm.package\",\"name\":\"{name}\"}}\n");
        let entries: Vec<String> = versions
            .iter()
            .map(|v| format!("{{\"name\":\"{name}.v{v}\"}}"))
            .collect();
        // One head: each version replaces the one before.
        let entries: Vec<String> = entries
            .iter()
            .enumerate()
            .map(|(i, e)| match i {
                0 => e.clone(),
                _ => e.replace(
                    '}',
                    &format!(",\"replaces\":\"{name}.v{}\"}}", versions[i - 1]),
                ),
            })
            .collect();
        out.push_str(&format!(
            "{{\"schema\":\"olm.channel\",\"package\":\"{name}\",\"name\":\"stable\",\"entries\":[{}]}}\n",
            entries.join(",")
        ));
        for v in versions {
            let extra = max.map_or(String::new(), |max| {
                format!(",{{\"type\":\"olm.maxOpenShiftVersion\",\"value\":\"{max}\"}}")
            });
            out.push_str(&format!(
                "{{\"schema\":\"olm.bundle\",\"package\":\"{name}\",\"name\":\"{name}.v{v}\",\"image\":\"r/{name}:{v}\",\"properties\":[{{\"type\":\"olm.package\",\"value\":{{\"packageName\":\"{name}\",\"version\":\"{v}\"}}}},{{\"type\":\"olm.bundle.object\",\"value\":{{\"data\":\"e30=\"}}}}{extra}]}}\n"
            ));
        }
        out
    }

    fn parse_index(content: &Content, limits: &Limits) -> Result<CatalogIndex, String> {
        parse(content, limits, None).map(|(index, _)| index)
    }

    /// Every stored blob, as lines.
    fn stored_lines(stored: &StoredCatalog) -> Vec<String> {
        let all = stored.all();
        let mut text = Vec::new();
        for (start, end) in all.spans {
            text.extend_from_slice(&stored.read(start, (end - start) as usize).unwrap());
        }
        String::from_utf8(text)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn the_store_holds_the_blobs_the_index_holds_streamed_or_not() {
        let dir = tempfile::tempdir().unwrap();
        let limits = Limits::default();
        let streamed = archive(
            &[
                ("b/catalog.json", package("b", &["1.0.0"], None)),
                ("a/catalog.json", package("a", &["0.1.0"], None)),
                (
                    "a/-old.json",
                    "{\"schema\":\"olm.package\",\"name\":\"old\"}".to_owned(),
                ),
                ("a/.indexignore", "-old.json\n".to_owned()),
            ],
            &[],
        );
        let (index, stored) = parse(&streamed, &limits, Some(dir.path())).unwrap();
        let stored = stored.unwrap();
        let lines = stored_lines(&stored);
        // a's package, channel and bundle, then b's: path order; the ignored file is not served.
        assert_eq!(lines.len(), 6);
        assert_eq!(stored.blob_count(), index.catalog().packages.len() * 3);
        assert!(lines[0].contains("\"name\":\"a\""), "{lines:?}");
        assert!(!lines.iter().any(|line| line.contains("old")), "{lines:?}");
        assert_eq!(stored.etag(), streamed.digest().to_string());
        // Nothing is left in the directory: the store file has no name.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);

        let linked = archive(
            &[
                ("data/catalog.json", package("a", &["0.1.0"], None)),
                (".indexignore", "data/\n".to_owned()),
            ],
            &[("configs/catalog.json", "../data/catalog.json")],
        );
        let (_, stored) = parse(&linked, &limits, Some(dir.path())).unwrap();
        assert_eq!(stored_lines(&stored.unwrap()).len(), 3);
    }

    #[test]
    fn streaming_parses_what_the_file_map_parses() {
        let content = archive(
            &[
                ("b/catalog.json", package("b", &["1.0.0", "1.1.0"], None)),
                ("a/catalog.json", package("a", &["0.1.0"], Some("4.16"))),
                ("a/-old.json", "{ not json".to_owned()),
                ("a/.indexignore", "-old.json\n".to_owned()),
            ],
            &[],
        );
        let limits = Limits::default();
        assert!(
            stream(&content, &limits, &mut None).unwrap().is_some(),
            "streamed"
        );
        let streamed = parse_index(&content, &limits).unwrap();
        let files = content.files(&limits).unwrap();
        let whole = CatalogIndex::from_files_with(files.iter(), Detail::Resolution).unwrap();
        assert_eq!(streamed.catalog(), whole.catalog());
        assert_eq!(streamed.catalog().bundles.len(), 3);
    }

    #[test]
    fn content_with_links_is_read_through_the_file_map() {
        let content = archive(
            &[
                ("data/catalog.json", package("a", &["0.1.0"], None)),
                (".indexignore", "data/\n".to_owned()),
            ],
            &[("configs/catalog.json", "../data/catalog.json")],
        );
        let limits = Limits::default();
        assert!(stream(&content, &limits, &mut None).unwrap().is_none());
        // The link's copy is parsed, the ignored original is not.
        let index = parse_index(&content, &limits).unwrap();
        let bundles = &index.catalog().bundles;
        assert_eq!(bundles.len(), 1);
        assert_eq!(&*bundles[0].location.file, "configs/catalog.json");
    }

    #[test]
    fn streaming_stops_at_the_size_limit() {
        let content = archive(&[("a/catalog.json", package("a", &["0.1.0"], None))], &[]);
        let limits = Limits {
            max_uncompressed_bytes: 1024,
            ..Limits::default()
        };
        let err = parse_index(&content, &limits).unwrap_err();
        assert!(err.contains("exceeds the limit of 1024 bytes"), "{err}");
        let limits = Limits {
            max_entries: 1,
            ..Limits::default()
        };
        let err = parse_index(&content, &limits).unwrap_err();
        assert!(err.contains("more than 1 entries"), "{err}");
    }

    #[test]
    fn the_bundle_index_holds_what_activation_reads_and_is_deterministic() {
        let content = archive(
            &[
                ("a/catalog.json", package("a", &["0.1.0"], Some("4.16"))),
                ("b/catalog.json", package("b", &["1.0.0", "1.1.0"], None)),
            ],
            &[],
        );
        let limits = Limits::default();
        let index = BundleIndex::from_catalog(&parse_index(&content, &limits).unwrap());
        let bundle = index.find("a", "0.1.0", "stable").unwrap();
        assert_eq!(bundle.image, "r/a:0.1.0");
        assert_eq!(bundle.max_openshift_version.as_deref(), Some("4.16"));
        assert_eq!(index.find("b", "1.1.0", "stable").unwrap().name, "b.v1.1.0");
        assert_eq!(index.bundle_count(), 3);
        let stored = index_content(&index, &limits).unwrap();
        let again = index_content(
            &BundleIndex::from_catalog(&parse_index(&content, &limits).unwrap()),
            &limits,
        );
        assert_eq!(stored.digest(), again.unwrap().digest());
        let files = stored.files(&limits).unwrap();
        let back = BundleIndex::from_json(files.get(BUNDLE_INDEX_FILE).unwrap()).unwrap();
        assert_eq!(back, index);
    }
}
