//! Each document of a catalog file as one line of compact JSON, with its outline, for serving
//! a catalog's blobs verbatim (the catalog query API's `all` and `metas`).
//!
//! Documents are numbered as [`crate::Location::document`] numbers them (JSON values, or YAML
//! documents with empty ones counted), so a caller can keep exactly the documents a parsed
//! catalog kept: the ones some blob's location names.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::scan::Head;

/// One document of a file.
#[derive(Debug)]
pub struct Document<'a> {
    /// 1-based position in the file, as in [`crate::Location::document`].
    pub document: usize,
    /// The blob's `schema`, when the document is an object with a string `schema`.
    pub schema: Option<String>,
    /// The blob's `package`, when it is a string.
    pub package: Option<String>,
    /// The blob's `name`, when it is a string.
    pub name: Option<String>,
    /// The document as JSON without insignificant whitespace (never a newline), so documents
    /// can be written one per line.
    pub json: Cow<'a, [u8]>,
}

/// A file that is not a stream of JSON values or YAML documents; the message names the
/// document.
#[derive(Debug, thiserror::Error)]
#[error("document {document}: {message}")]
pub struct DocumentError {
    /// 1-based position of the document that failed.
    pub document: usize,
    /// What was wrong with it.
    pub message: String,
}

/// Calls `each` with every non-empty document of `contents` (a JSON stream or multi-document
/// YAML, as catalog files are), in order. Stops at the first malformed document, or the first
/// error `each` returns.
pub fn for_each_document<E: From<DocumentError>>(
    contents: &[u8],
    mut each: impl FnMut(Document<'_>) -> Result<(), E>,
) -> Result<(), E> {
    let contents = contents.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(contents);
    let first = contents.iter().find(|b| !b.is_ascii_whitespace());
    let mut compacted = Vec::new();
    if first == Some(&b'{') {
        let stream = serde_json::Deserializer::from_slice(contents).into_iter::<&RawValue>();
        for (index, raw) in stream.enumerate() {
            let document = index + 1;
            let raw = raw.map_err(|err| DocumentError {
                document,
                message: err.to_string(),
            })?;
            let text = raw.get().as_bytes();
            let json: Cow<'_, [u8]> = if text.iter().any(u8::is_ascii_whitespace) {
                compacted.clear();
                compact(text, &mut compacted);
                Cow::Borrowed(compacted.as_slice())
            } else {
                Cow::Borrowed(text)
            };
            let head = serde_json::from_slice::<Head>(&json).map_err(|err| DocumentError {
                document,
                message: err.to_string(),
            })?;
            each(with_head(document, head, json))?;
        }
    } else {
        for (index, yaml) in serde_yaml_ng::Deserializer::from_slice(contents).enumerate() {
            let document = index + 1;
            let value = Value::deserialize(yaml).map_err(|err| DocumentError {
                document,
                message: err.to_string(),
            })?;
            if value.is_null() {
                continue;
            }
            let json = serde_json::to_vec(&value).map_err(|err| DocumentError {
                document,
                message: err.to_string(),
            })?;
            each(with_head(document, Head::of(&value), Cow::Owned(json)))?;
        }
    }
    Ok(())
}

fn with_head(document: usize, head: Head, json: Cow<'_, [u8]>) -> Document<'_> {
    let (schema, package, name) = match head {
        Head::NotAnObject => (None, None, None),
        Head::Object {
            schema,
            name,
            package,
        } => (schema, package, name),
    };
    Document {
        document,
        schema,
        package,
        name,
        json,
    }
}

/// Appends `json` (valid JSON) to `out` without the whitespace between tokens. Written by
/// hand: serde_json can only compact by building the value, which for a bundle with inlined
/// manifests is many times the work of this one pass.
fn compact(json: &[u8], out: &mut Vec<u8>) {
    out.reserve(json.len());
    let mut in_string = false;
    let mut escaped = false;
    for &byte in json {
        if in_string {
            out.push(byte);
            if escaped {
                escaped = false;
            } else if byte == b'\\' {
                escaped = true;
            } else if byte == b'"' {
                in_string = false;
            }
        } else if byte == b'"' {
            in_string = true;
            out.push(byte);
        } else if !byte.is_ascii_whitespace() {
            out.push(byte);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::Detail;
    use crate::parse::parse_files_with;

    fn collect(contents: &str) -> Result<Vec<(usize, Option<String>, String)>, DocumentError> {
        let mut out = Vec::new();
        for_each_document::<DocumentError>(contents.as_bytes(), |doc| {
            out.push((
                doc.document,
                doc.name,
                String::from_utf8(doc.json.into_owned()).unwrap(),
            ));
            Ok(())
        })?;
        Ok(out)
    }

    #[test]
    fn json_documents_are_compacted_but_strings_keep_their_spaces() {
        let docs = collect(
            "\u{feff}{ \"schema\": \"olm.package\",\n  \"name\": \"a\", \"description\": \"two  words\\\" \\\\\" }\n{\"schema\":\"olm.x\",\"name\":\"b\"}",
        )
        .unwrap();
        assert_eq!(
            docs,
            [
                (
                    1,
                    Some("a".to_owned()),
                    r#"{"schema":"olm.package","name":"a","description":"two  words\" \\"}"#
                        .to_owned()
                ),
                (
                    2,
                    Some("b".to_owned()),
                    r#"{"schema":"olm.x","name":"b"}"#.to_owned()
                ),
            ]
        );
    }

    #[test]
    fn yaml_documents_are_numbered_with_the_empty_ones_counted() {
        let docs = collect("---\n---\nschema: olm.package\nname: c\n---\nschema: olm.x\n").unwrap();
        assert_eq!(
            docs,
            [
                (
                    2,
                    Some("c".to_owned()),
                    // Keys in sorted order, as a YAML document's keys carry no order in JSON.
                    r#"{"name":"c","schema":"olm.package"}"#.to_owned()
                ),
                (3, None, r#"{"schema":"olm.x"}"#.to_owned()),
            ]
        );
    }

    #[test]
    fn document_numbers_match_the_locations_the_parser_records() {
        let json = "{\"schema\":\"olm.package\",\"name\":\"p\"}\n{\"schema\":\"olm.channel\",\"package\":\"p\",\"name\":\"s\",\"entries\":[{\"name\":\"p.v1\"}]}\n";
        let yaml = "---\n---\nschema: olm.bundle\npackage: p\nname: p.v1\nimage: r/p:1\nproperties:\n- type: olm.package\n  value: {packageName: p, version: 1.0.0}\n";
        let catalog = parse_files_with(
            [("a.json", json.as_bytes()), ("b.yaml", yaml.as_bytes())],
            Detail::Resolution,
        )
        .unwrap();
        let located: Vec<(String, usize)> = catalog
            .packages
            .iter()
            .map(|p| &p.location)
            .chain(catalog.channels.iter().map(|c| &c.location))
            .chain(catalog.bundles.iter().map(|b| &b.location))
            .map(|l| (l.file.to_string(), l.document))
            .collect();
        let mut split = Vec::new();
        for (file, text) in [("a.json", json), ("b.yaml", yaml)] {
            for (document, ..) in collect(text).unwrap() {
                split.push((file.to_owned(), document));
            }
        }
        assert_eq!(located, split);
    }

    #[test]
    fn a_malformed_document_is_named() {
        let err = collect("{\"schema\":\"a\"}\n{\"schema\": }").unwrap_err();
        assert_eq!(err.document, 2);
        let err = collect("schema: a\n---\n: : [\n").unwrap_err();
        assert_eq!(err.document, 2);
    }
}
