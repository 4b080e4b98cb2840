//! Offline rendering: reading a bundle directory from disk and printing converted objects
//! as a YAML stream, for `registry-provisioner render` (and its golden tests).

use std::path::{Path, PathBuf};

use kube::api::DynamicObject;
use serde_json::Value;

/// Why a bundle directory could not be read or its objects printed.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// A directory could not be listed.
    #[error("failed to list directory {path}: {source}")]
    ListDir {
        /// The directory.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A file could not be read.
    #[error("failed to read file {path}: {source}")]
    ReadFile {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A path inside the bundle is not valid UTF-8.
    #[error("failed to read file {0}: the path is not valid UTF-8")]
    NonUtf8Path(PathBuf),
    /// An object could not be written as YAML.
    #[error("failed to write object {what} as YAML: {message}")]
    Yaml {
        /// Kind and name of the object.
        what: String,
        /// The serializer's message.
        message: String,
    },
}

/// Reads every regular file under `root` (following symlinks) as `(path, bytes)` pairs,
/// paths relative to `root` with `/` separators, sorted by path.
pub fn read_dir(root: &Path) -> Result<Vec<(String, Vec<u8>)>, RenderError> {
    let mut files = Vec::new();
    let mut pending = vec![PathBuf::new()];
    while let Some(relative) = pending.pop() {
        let dir = if relative.as_os_str().is_empty() {
            root.to_path_buf()
        } else {
            root.join(&relative)
        };
        let entries = std::fs::read_dir(&dir).map_err(|source| RenderError::ListDir {
            path: dir.clone(),
            source,
        })?;
        for entry in entries {
            let entry = entry.map_err(|source| RenderError::ListDir {
                path: dir.clone(),
                source,
            })?;
            let path = entry.path();
            let inner = relative.join(entry.file_name());
            let metadata = std::fs::metadata(&path).map_err(|source| RenderError::ReadFile {
                path: path.clone(),
                source,
            })?;
            if metadata.is_dir() {
                pending.push(inner);
            } else if metadata.is_file() {
                let bytes = std::fs::read(&path).map_err(|source| RenderError::ReadFile {
                    path: path.clone(),
                    source,
                })?;
                let name = inner
                    .to_str()
                    .ok_or_else(|| RenderError::NonUtf8Path(path.clone()))?
                    .replace(std::path::MAIN_SEPARATOR, "/");
                files.push((name, bytes));
            }
        }
    }
    files.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(files)
}

/// The objects as a YAML stream: one document per object (`apiVersion`, `kind`,
/// `metadata`, then the other fields by name), separated by `---` lines.
///
/// Strings that YAML 1.1 readers (kubectl, Go's YAML libraries) could take for anything
/// else — `on`, `yes`, `3.10`, dates, empty strings — are quoted, so the output can be
/// applied as it is; multi-line strings are written as literal blocks.
pub fn to_yaml(objects: &[DynamicObject]) -> Result<String, RenderError> {
    let mut out = String::new();
    for (index, object) in objects.iter().enumerate() {
        let value = serde_json::to_value(object).map_err(|err| RenderError::Yaml {
            what: format!(
                "{} {}",
                object
                    .types
                    .as_ref()
                    .map(|t| t.kind.as_str())
                    .unwrap_or_default(),
                object.metadata.name.as_deref().unwrap_or_default()
            ),
            message: err.to_string(),
        })?;
        if index > 0 {
            out.push_str("---\n");
        }
        match value {
            Value::Object(mut map) => {
                let mut ordered: Vec<(String, Value)> = Vec::with_capacity(map.len());
                for key in ["apiVersion", "kind", "metadata"] {
                    if let Some(value) = map.remove(key) {
                        ordered.push((key.to_owned(), value));
                    }
                }
                let mut rest: Vec<(String, Value)> = map.into_iter().collect();
                rest.sort_by(|a, b| a.0.cmp(&b.0));
                ordered.extend(rest);
                write_entries(
                    &mut out,
                    &ordered
                        .iter()
                        .map(|(k, v)| (k.as_str(), v))
                        .collect::<Vec<_>>(),
                    0,
                    None,
                );
            }
            other => {
                write_value_line(&mut out, &other, 0);
            }
        }
    }
    Ok(out)
}

fn entries_of(map: &serde_json::Map<String, Value>) -> Vec<(&str, &Value)> {
    map.iter().map(|(k, v)| (k.as_str(), v)).collect()
}

fn indent(out: &mut String, width: usize) {
    out.extend(std::iter::repeat_n(' ', width));
}

/// Writes mapping entries at `width`; the first line starts with `first_prefix` instead of
/// the indentation when given (a `- ` of a sequence item).
fn write_entries(
    out: &mut String,
    entries: &[(&str, &Value)],
    width: usize,
    mut first_prefix: Option<&str>,
) {
    for &(key, value) in entries {
        match first_prefix.take() {
            Some(prefix) => out.push_str(prefix),
            None => indent(out, width),
        }
        out.push_str(&scalar_string(key));
        out.push(':');
        match value {
            Value::Object(map) if !map.is_empty() => {
                out.push('\n');
                write_entries(out, &entries_of(map), width + 2, None);
            }
            Value::Array(items) if !items.is_empty() => {
                out.push('\n');
                write_items(out, items, width);
            }
            other => {
                out.push(' ');
                write_value_line(out, other, width + 2);
            }
        }
    }
}

/// Writes sequence items, their dashes at `width`.
fn write_items(out: &mut String, items: &[Value], width: usize) {
    for item in items {
        match item {
            Value::Object(map) if !map.is_empty() => {
                let mut prefix = " ".repeat(width);
                prefix.push_str("- ");
                write_entries(out, &entries_of(map), width + 2, Some(&prefix));
            }
            Value::Array(inner) if !inner.is_empty() => {
                indent(out, width);
                out.push_str("-\n");
                write_items(out, inner, width + 2);
            }
            other => {
                indent(out, width);
                out.push_str("- ");
                write_value_line(out, other, width + 2);
            }
        }
    }
}

/// Writes a scalar (or an empty collection) after a key or dash, and the line end; block
/// strings continue on the following lines at `block_width`.
fn write_value_line(out: &mut String, value: &Value, block_width: usize) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(flag) => out.push_str(if *flag { "true" } else { "false" }),
        Value::Number(number) => out.push_str(&number.to_string()),
        Value::String(text) if is_block(text) => {
            let trailing = text.len() - text.trim_end_matches('\n').len();
            out.push_str(match trailing {
                0 => "|-",
                1 => "|",
                _ => "|+",
            });
            let body = text.strip_suffix('\n').unwrap_or(text);
            for line in body.split('\n') {
                out.push('\n');
                if !line.is_empty() {
                    indent(out, block_width);
                    out.push_str(line);
                }
            }
        }
        Value::String(text) => out.push_str(&scalar_string(text)),
        Value::Array(_) => out.push_str("[]"),
        Value::Object(_) => out.push_str("{}"),
    }
    out.push('\n');
}

/// Whether `text` reads best as a literal block: several lines, no control characters but
/// tabs, not starting with a space (which would need an indentation indicator).
fn is_block(text: &str) -> bool {
    text.contains('\n')
        && !text.trim().is_empty()
        && !text.starts_with([' ', '\t', '\n'])
        && !text
            .chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t')
}

/// `text` as a plain scalar when no YAML 1.1 or 1.2 reader can take it for anything but
/// this string, else double-quoted (JSON escapes are valid YAML).
fn scalar_string(text: &str) -> String {
    if is_plain_safe(text) {
        text.to_owned()
    } else {
        serde_json::to_string(text).unwrap_or_else(|_| format!("{text:?}"))
    }
}

fn is_plain_safe(text: &str) -> bool {
    const AMBIGUOUS: &[&str] = &[
        "y", "yes", "n", "no", "true", "false", "on", "off", "null", "~",
    ];
    let Some(first) = text.chars().next() else {
        return false;
    };
    if !first.is_ascii_alphabetic() && first != '/' && first != '_' {
        return false;
    }
    if AMBIGUOUS.iter().any(|word| text.eq_ignore_ascii_case(word)) || text.ends_with([' ', ':']) {
        return false;
    }
    if text.contains(": ") {
        return false;
    }
    text.chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_./:@+=,% ".contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(kind: &str, name: &str) -> DynamicObject {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": kind, "metadata": {"name": name}, "data": {"a": "b"},
        }))
        .unwrap()
    }

    #[test]
    fn documents_are_separated_by_dashes_and_keep_their_fields() {
        let yaml = to_yaml(&[object("ConfigMap", "a"), object("ConfigMap", "b")]).unwrap();
        assert_eq!(
            yaml,
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  a: b\n---\n\
             apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\ndata:\n  a: b\n"
        );
        assert_eq!(to_yaml(&[]).unwrap(), "");
    }

    #[test]
    fn strings_other_readers_could_misread_are_quoted() {
        for text in [
            "on",
            "Yes",
            "n",
            "~",
            "null",
            "",
            "3.10",
            "0.2.0",
            "2024-02-29T23:59:59Z",
            "-x",
            "a: b",
            "a #b",
            "trailing ",
            ":x",
            "*alias",
            "&anchor",
            "!tag",
            "{a}",
            "[a]",
            "'q'",
            "\"q\"",
            "x\ry",
            "@x",
            "%x",
            "`x",
        ] {
            assert!(!is_plain_safe(text), "{text:?} must be quoted");
            let quoted = scalar_string(text);
            let back: String = serde_yaml_ng::from_str(&quoted).unwrap();
            assert_eq!(back, text);
        }
        for text in [
            "registry.k8s.io/pause:3.10",
            "/metrics",
            "get",
            "a b",
            "http://x/y",
        ] {
            assert!(is_plain_safe(text), "{text:?} can stay plain");
        }
    }

    #[test]
    fn every_shape_reads_back_as_the_same_value() {
        let value = serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "labels": {}},
            "data": {
                "block": "line 1\n  indented\n\nlast\n",
                "strip": "a\nb",
                "keep": "a\n\n\n",
                "lead": " a\nb",
                "cr": "a\r\nb",
            },
            "list": [[1, [2, {}]], [], {"a": [{"b": null, "c": [true, 1.5]}]}, "on", ""],
            "empty": [],
            "\"odd key\"": {"yes": "no"},
        });
        let object: DynamicObject = serde_json::from_value(value.clone()).unwrap();
        let yaml = to_yaml(&[object]).unwrap();
        let back: Value = serde_yaml_ng::from_str(&yaml).unwrap();
        assert_eq!(back, value, "{yaml}");
        assert!(
            yaml.contains("  block: |\n    line 1\n      indented\n\n    last\n"),
            "{yaml}"
        );
        assert!(yaml.contains("  strip: |-\n"), "{yaml}");
        assert!(yaml.contains("  keep: |+\n"), "{yaml}");
    }

    #[test]
    fn a_missing_directory_is_an_error_naming_it() {
        let err = read_dir(Path::new("/nonexistent/bundle")).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("failed to list directory /nonexistent/bundle: "),
            "{err}"
        );
    }
}
