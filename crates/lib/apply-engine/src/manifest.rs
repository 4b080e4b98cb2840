//! Parsing bundle manifests: YAML or JSON files with one or more documents, each a
//! Kubernetes object.
//!
//! YAML is read as OLM's Go reader (sigs.k8s.io/yaml) reads it where it matters for bundles:
//! merge keys (`<<: *base`, `<<: [*a, *b]`) are applied, and an annotation or label written
//! without a value (`key:`) is the empty string.

use kube::api::DynamicObject;
use serde::Deserialize;
use serde_json::{Map, Value};

/// The YAML 1.1 merge key.
const MERGE_KEY: &str = "<<";

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

/// Parses every document of one manifest file. Empty documents (a lone `---`, comments,
/// `null`) are skipped; every other document must be an object with `apiVersion`, `kind` and
/// `metadata.name`. A `List` kind is not unwrapped: bundles list objects one per document.
/// Merge keys are applied (see [`apply_merge_keys`]); `null` annotation and label values
/// read as `""`.
pub fn parse_documents(file: &str, bytes: &[u8]) -> Result<Vec<DynamicObject>, ManifestError> {
    let text = std::str::from_utf8(bytes).map_err(|err| ManifestError::Syntax {
        file: file.to_owned(),
        document: 1,
        message: format!("not UTF-8: {err}"),
    })?;
    // A byte order mark (editors on Windows write one) is not part of the first key, as
    // kubectl reads it. Found by the generated-input tests (tests/proptest_manifest.rs).
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    // Only a file that mentions the merge key can use it: the others skip the walk.
    let may_merge = text.contains(MERGE_KEY);
    let mut objects = Vec::new();
    for (index, document) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
        let number = index + 1;
        let syntax = |message: String| ManifestError::Syntax {
            file: file.to_owned(),
            document: number,
            message,
        };
        let mut value = Value::deserialize(document).map_err(|err| syntax(err.to_string()))?;
        if value.is_null() {
            continue;
        }
        if may_merge {
            apply_merge_keys(&mut value).map_err(|err| syntax(err.to_string()))?;
        }
        empty_null_strings(&mut value);
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

/// A merge key whose value cannot be merged, and where it is.
#[derive(Debug)]
pub struct MergeError {
    /// Keys and indices from the merge key up to the document root.
    path_from_inside: Vec<String>,
    /// What the merge key holds instead of mappings.
    found: &'static str,
}

impl MergeError {
    /// The same error, one level further out: inside `segment` (`.key` or `[index]`).
    fn within(mut self, segment: String) -> Self {
        self.path_from_inside.push(segment);
        self
    }
}

impl std::fmt::Display for MergeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let path: String = self
            .path_from_inside
            .iter()
            .rev()
            .map(String::as_str)
            .collect();
        let place = if path.is_empty() {
            "at the top level".to_owned()
        } else {
            format!("in {}", path.trim_start_matches('.'))
        };
        write!(
            f,
            "the YAML merge key `<<` {place} holds {}: it must be a mapping or a list of \
             mappings (for example `<<: *base` or `<<: [*a, *b]`)",
            self.found
        )
    }
}

impl std::error::Error for MergeError {}

/// Applies YAML merge keys everywhere in `value`, as YAML 1.1 readers do: the mapping (or
/// each mapping of the list) under `<<` adds its entries to the mapping holding the key,
/// keys written in that mapping win over merged ones, and an earlier mapping of a list wins
/// over a later one. Merged mappings have their own merge keys applied first. The `<<` key
/// itself is removed, so it never reaches an object.
///
/// Aliases are already expanded by the YAML reader, which bounds their size and nesting.
pub fn apply_merge_keys(value: &mut Value) -> Result<(), MergeError> {
    match value {
        Value::Array(items) => {
            for (index, item) in items.iter_mut().enumerate() {
                apply_merge_keys(item).map_err(|err| err.within(format!("[{index}]")))?;
            }
        }
        Value::Object(map) => {
            // Children first: that includes the merge key's own value, so chained merges
            // (`base2: {<<: *base1, ...}`) arrive complete.
            for (key, child) in map.iter_mut() {
                apply_merge_keys(child).map_err(|err| err.within(format!(".{key}")))?;
            }
            let Some(merged) = map.remove(MERGE_KEY) else {
                return Ok(());
            };
            let not_mapping = |value: &Value| MergeError {
                path_from_inside: Vec::new(),
                found: json_type(value),
            };
            let sources: Vec<Map<String, Value>> = match merged {
                Value::Object(source) => vec![source],
                Value::Array(items) => items
                    .into_iter()
                    .enumerate()
                    .map(|(index, item)| match item {
                        Value::Object(source) => Ok(source),
                        other => Err(not_mapping(&other)
                            .within(format!("[{index}]"))
                            .within(format!(".{MERGE_KEY}"))),
                    })
                    .collect::<Result<_, _>>()?,
                other => return Err(not_mapping(&other).within(format!(".{MERGE_KEY}"))),
            };
            for source in sources {
                for (key, entry) in source {
                    map.entry(key).or_insert(entry);
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// The kind of JSON value `value` is, for messages ("a list", "a mapping", ...).
pub fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "nothing (null)",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// `metadata.annotations` and `metadata.labels` values written without a value (`key:`, read
/// as `null`) become `""`, as Go reads them into its string maps.
fn empty_null_strings(object: &mut Value) {
    let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    for field in ["annotations", "labels"] {
        if let Some(Value::Object(map)) = metadata.get_mut(field) {
            for entry in map.values_mut().filter(|entry| entry.is_null()) {
                *entry = Value::String(String::new());
            }
        }
    }
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

    fn one(yaml: &str) -> serde_json::Value {
        let objects = parse_documents("manifests/merge.yaml", yaml.as_bytes()).unwrap();
        assert_eq!(objects.len(), 1);
        serde_json::to_value(&objects[0]).unwrap()
    }

    fn has_merge_key(value: &Value) -> bool {
        match value {
            Value::Object(map) => map.contains_key(MERGE_KEY) || map.values().any(has_merge_key),
            Value::Array(items) => items.iter().any(has_merge_key),
            _ => false,
        }
    }

    #[test]
    fn a_merge_key_adds_the_aliased_mapping_and_written_keys_win() {
        let value = one(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  labels: &labels\n    app: x\n    tier: web\n  annotations:\n    <<: *labels\n    tier: api\n",
        );
        assert_eq!(
            value["metadata"]["annotations"],
            serde_json::json!({"app": "x", "tier": "api"})
        );
        assert!(!has_merge_key(&value), "{value}");
    }

    #[test]
    fn a_key_written_before_the_merge_key_wins_too() {
        let value = one(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\nbase: &base {a: from-base, b: from-base}\ndata:\n  a: written\n  <<: *base\n",
        );
        assert_eq!(
            value["data"],
            serde_json::json!({"a": "written", "b": "from-base"})
        );
    }

    #[test]
    fn in_a_list_of_merged_mappings_the_earlier_one_wins() {
        let value = one(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\nx: &x {k: from-x, only-x: 1}\ny: &y {k: from-y, only-y: 2}\ndata:\n  <<: [*x, *y]\n",
        );
        assert_eq!(
            value["data"],
            serde_json::json!({"k": "from-x", "only-x": 1, "only-y": 2})
        );
    }

    #[test]
    fn chained_merges_in_a_crd_schema_leave_no_merge_key() {
        let yaml = "\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  versions:
  - name: v1
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: &int {type: integer, minimum: 0}
              replicas: &replicas
                <<: *int
                maximum: 5
              workers:
                <<: [*replicas, {description: ignored, default: 1}]
                description: worker count
";
        let value = one(yaml);
        let properties = &value["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
            ["properties"];
        assert_eq!(
            properties["replicas"],
            serde_json::json!({"type": "integer", "minimum": 0, "maximum": 5})
        );
        assert_eq!(
            properties["workers"],
            serde_json::json!({"type": "integer", "minimum": 0, "maximum": 5, "default": 1, "description": "worker count"})
        );
        assert!(!has_merge_key(&value), "{value}");
    }

    #[test]
    fn a_merge_key_holding_a_scalar_is_an_error_naming_where_it_is() {
        let yaml =
            b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata:\n  <<: just-a-string\n";
        let err = parse_documents("manifests/cm.yaml", yaml)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "failed to parse manifests/cm.yaml (document 1): the YAML merge key `<<` in data.<< holds a string: it must be a mapping or a list of mappings (for example `<<: *base` or `<<: [*a, *b]`)"
        );
        let yaml = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\nitems:\n- <<: [{a: 1}, [nested]]\n";
        let err = parse_documents("manifests/cm.yaml", yaml)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("`<<` in items[0].<<[1] holds a list:"),
            "{err}"
        );
    }

    #[test]
    fn a_quoted_merge_key_in_a_value_is_only_text() {
        let value =
            one("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {shift: 'a << b'}\n");
        assert_eq!(value["data"]["shift"], "a << b");
    }

    #[test]
    fn annotations_and_labels_without_a_value_are_empty_strings() {
        let value = one(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  annotations:\n    createdAt:\n    description: ~\n  labels:\n    tier:\n",
        );
        assert_eq!(
            value["metadata"]["annotations"],
            serde_json::json!({"createdAt": "", "description": ""})
        );
        assert_eq!(value["metadata"]["labels"], serde_json::json!({"tier": ""}));
    }

    #[test]
    fn files_and_documents_holding_nothing_are_skipped() {
        for text in [
            "",
            "\n",
            "# only a comment\n",
            "---\n",
            "--- # a comment\n",
            "---\n# a\n---\n# b\n",
            "null\n",
            "~\n---\n",
            "---\n...\n",
            "\r\n# windows\r\n---\r\n",
        ] {
            let objects = parse_documents("manifests/empty.yaml", text.as_bytes())
                .unwrap_or_else(|err| panic!("{text:?}: {err}"));
            assert!(objects.is_empty(), "{text:?}");
        }
    }
}
