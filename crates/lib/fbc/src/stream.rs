//! Building a catalog from files handed over one at a time, in any order, so that a caller
//! reading an archive can drop each file's bytes as soon as it is parsed.
//!
//! [`crate::parse_files`] needs every file at once because a `.indexignore` may hide files
//! that come before it (in an archive sorted by path, `dir/-a.json` precedes
//! `dir/.indexignore`). [`CatalogBuilder`] instead parses each file when it arrives into a
//! catalog of its own, keeps only that (small with [`Detail::Resolution`]), and applies the
//! ignore rules and the path order when it is finished. The result, errors included, is what
//! [`crate::parse_files_with`] gives for the same files.

use std::collections::BTreeMap;

use crate::detail::Detail;
use crate::error::ParseError;
use crate::ignore::IndexIgnore;
use crate::index::{CatalogIndex, LoadError};
use crate::model::Catalog;
use crate::parse::{add_ignore, is_index_ignore, normalize_path, parse_into_with};

/// Accumulates catalog files; see the [module documentation](self).
#[derive(Debug, Default)]
pub struct CatalogBuilder {
    detail: Detail,
    /// Each file's blobs (or its first error), by path; a repeated path keeps both, in the
    /// order given, as `parse_files` does.
    files: BTreeMap<(String, usize), Result<Catalog, ParseError>>,
    /// `.indexignore` contents by path, applied when finished.
    ignores: BTreeMap<(String, usize), Vec<u8>>,
    added: usize,
}

impl CatalogBuilder {
    /// A builder keeping what `detail` says of each blob.
    pub fn new(detail: Detail) -> Self {
        Self {
            detail,
            ..Self::default()
        }
    }

    /// Parses one file (path `/`-separated and relative to the catalog root, as for
    /// [`crate::parse_files`]); `contents` is not needed afterwards. A file that does not
    /// parse is reported by [`CatalogBuilder::finish`] unless a `.indexignore` hides it.
    pub fn add_file(&mut self, path: &str, contents: &[u8]) {
        let Some(path) = normalize_path(path) else {
            return;
        };
        self.added += 1;
        let key = (path.to_owned(), self.added);
        if is_index_ignore(path) {
            self.ignores.insert(key, contents.to_vec());
            return;
        }
        let mut catalog = Catalog::default();
        let parsed = parse_into_with(&mut catalog, path, contents, self.detail).map(|()| {
            catalog.shrink_to_fit();
            catalog
        });
        self.files.insert(key, parsed);
    }

    /// The catalog of every file no `.indexignore` hides, in path order; the first error in
    /// that order (after any `.indexignore` error) otherwise.
    pub fn finish(self) -> Result<Catalog, ParseError> {
        let mut ignore = IndexIgnore::default();
        for ((path, _), contents) in &self.ignores {
            add_ignore(&mut ignore, path, contents)?;
        }
        let mut parts = Vec::with_capacity(self.files.len());
        for ((path, _), parsed) in self.files {
            if !ignore.is_ignored(&path) {
                parts.push(parsed?);
            }
        }
        Ok(Catalog::concat(parts))
    }

    /// [`CatalogBuilder::finish`], then validated and indexed ([`CatalogIndex::new`]).
    pub fn finish_index(self) -> Result<CatalogIndex, LoadError> {
        Ok(CatalogIndex::new(self.finish()?)?)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::parse::parse_files_with;

    fn package(name: &str) -> String {
        format!(
            r#"{{"schema":"olm.package","name":"{name}"}}
{{"schema":"olm.channel","package":"{name}","name":"stable","entries":[{{"name":"{name}.v1.0.0"}}]}}
{{"schema":"olm.bundle","package":"{name}","name":"{name}.v1.0.0","image":"r/{name}:1","properties":[{{"type":"olm.package","value":{{"packageName":"{name}","version":"1.0.0"}}}}]}}
"#
        )
    }

    fn both(files: &[(&str, String)]) -> (Result<Catalog, String>, Result<Catalog, String>) {
        let whole = parse_files_with(
            files.iter().map(|(p, c)| (*p, c.as_bytes())),
            Detail::Resolution,
        )
        .map_err(|e| format!("{e:?}"));
        let mut builder = CatalogBuilder::new(Detail::Resolution);
        // Reverse order: the builder must not depend on the order files arrive in.
        for (path, contents) in files.iter().rev() {
            builder.add_file(path, contents.as_bytes());
        }
        (whole, builder.finish().map_err(|e| format!("{e:?}")))
    }

    #[test]
    fn files_in_any_order_give_what_parse_files_gives() {
        let files = [
            ("b/catalog.json", package("b")),
            ("./a/catalog.json", package("a")),
            ("c/", String::new()),
            (
                "c/catalog.yaml",
                "---\nschema: olm.package\nname: c\n".to_owned(),
            ),
        ];
        let (whole, streamed) = both(&files);
        let whole = whole.unwrap();
        assert_eq!(streamed.unwrap(), whole);
        let names: Vec<&str> = whole.packages.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "c"]);
    }

    #[test]
    fn an_indexignore_hides_files_that_come_before_it_in_path_order() {
        let files = [
            ("d/-broken.json", "{ not json".to_owned()),
            ("d/.indexignore", "-broken.json\n".to_owned()),
            ("d/catalog.json", package("d")),
        ];
        let (whole, streamed) = both(&files);
        assert_eq!(streamed.unwrap(), whole.unwrap());
    }

    #[test]
    fn the_first_error_in_path_order_is_reported() {
        let files = [
            ("a/catalog.json", package("a")),
            ("b/catalog.json", "{\"schema\": 1}".to_owned()),
            ("c/catalog.json", "{ not json".to_owned()),
        ];
        let (whole, streamed) = both(&files);
        let whole = whole.unwrap_err();
        assert!(whole.contains("b/catalog.json"), "{whole}");
        assert_eq!(streamed.unwrap_err(), whole);
    }
}
