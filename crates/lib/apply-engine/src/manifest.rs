//! Parsing bundle manifests: YAML or JSON files with one or more documents, each a
//! Kubernetes object.

use kube::api::DynamicObject;
use serde::Deserialize;

/// A manifest document that is not a usable object.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ManifestError {
    /// The document is not valid YAML or JSON.
    #[error("failed to parse {file} (document {document}): {message}")]
    Syntax {
        /// File inside the bundle.
        file: String,
        /// 1-based document number within the file.
        document: usize,
        /// The parser's message.
        message: String,
    },
    /// The document parses but lacks what every object needs.
    #[error("invalid object in {file} (document {document}): {message}")]
    Object {
        /// File inside the bundle.
        file: String,
        /// 1-based document number within the file.
        document: usize,
        /// What is missing or wrong.
        message: String,
    },
}

/// Parses every document of one manifest file. Empty documents (a lone `---`, comments)
/// are skipped; every other document must be an object with `apiVersion`, `kind` and
/// `metadata.name`. A `List` kind is not unwrapped: bundles list objects one per document.
pub fn parse_documents(file: &str, bytes: &[u8]) -> Result<Vec<DynamicObject>, ManifestError> {
    let text = std::str::from_utf8(bytes).map_err(|err| ManifestError::Syntax {
        file: file.to_owned(),
        document: 1,
        message: format!("not UTF-8: {err}"),
    })?;
    // A byte order mark (editors on Windows write one) is not part of the first key, as
    // kubectl reads it. Found by the generated-input tests (tests/proptest_manifest.rs).
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut objects = Vec::new();
    for (index, document) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
        let number = index + 1;
        let value =
            serde_json::Value::deserialize(document).map_err(|err| ManifestError::Syntax {
                file: file.to_owned(),
                document: number,
                message: err.to_string(),
            })?;
        if value.is_null() {
            continue;
        }
        let invalid = |message: String| ManifestError::Object {
            file: file.to_owned(),
            document: number,
            message,
        };
        if !value.is_object() {
            return Err(invalid(
                "expected a Kubernetes object (a mapping)".to_owned(),
            ));
        }
        for (field, what) in [("apiVersion", "apiVersion"), ("kind", "kind")] {
            if value
                .get(field)
                .and_then(|v| v.as_str())
                .is_none_or(str::is_empty)
            {
                return Err(invalid(format!("missing {what}")));
            }
        }
        let object: DynamicObject =
            serde_json::from_value(value).map_err(|err| invalid(err.to_string()))?;
        if object
            .metadata
            .name
            .as_deref()
            .unwrap_or_default()
            .is_empty()
        {
            let kind = object
                .types
                .as_ref()
                .map(|t| t.kind.as_str())
                .unwrap_or_default();
            return Err(invalid(format!("{kind} has no metadata.name")));
        }
        objects.push(object);
    }
    Ok(objects)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leading_byte_order_mark_is_not_part_of_the_first_key() {
        let objects = parse_documents(
            "bom.yaml",
            "\u{feff}apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n".as_bytes(),
        )
        .unwrap();
        assert_eq!(objects[0].metadata.name.as_deref(), Some("a"));
    }

    #[test]
    fn multi_document_yaml_yields_each_object_and_skips_empty_documents() {
        let yaml = b"---\n# a comment\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: b}\n---\n";
        let objects = parse_documents("manifests/all.yaml", yaml).unwrap();
        let names: Vec<_> = objects
            .iter()
            .map(|o| o.metadata.name.clone().unwrap())
            .collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(objects[1].types.as_ref().unwrap().kind, "Secret");
    }

    #[test]
    fn json_documents_parse_too() {
        let json = br#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ns"}}"#;
        assert_eq!(parse_documents("manifests/ns.json", json).unwrap().len(), 1);
    }

    #[test]
    fn syntax_errors_name_the_file_and_document() {
        let yaml = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\nkind: [unclosed\n";
        let err = parse_documents("manifests/bad.yaml", yaml).unwrap_err();
        assert!(
            matches!(err, ManifestError::Syntax { document: 2, .. }),
            "{err}"
        );
        assert!(
            err.to_string()
                .starts_with("failed to parse manifests/bad.yaml (document 2)")
        );
    }

    #[test]
    fn objects_need_api_version_kind_and_name() {
        let cases: [(&[u8], &str); 4] = [
            (
                b"kind: ConfigMap\nmetadata: {name: a}\n",
                "missing apiVersion",
            ),
            (b"apiVersion: v1\nmetadata: {name: a}\n", "missing kind"),
            (
                b"apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n",
                "ConfigMap has no metadata.name",
            ),
            (b"- just\n- a list\n", "expected a Kubernetes object"),
        ];
        for (yaml, want) in cases {
            let err = parse_documents("f.yaml", yaml).unwrap_err().to_string();
            assert!(err.contains(want), "{err} lacks {want}");
        }
    }
}
