//! Making the OpenAPI schema of a converted v1beta1 CRD *structural*, as
//! `apiextensions.k8s.io/v1` requires, or saying exactly why it cannot be.
//!
//! v1beta1 accepted schemas v1 refuses (a field without `type`, `type` inside `anyOf`, ...).
//! The repairs are the ones bundle authors made by hand when they moved to v1, and only those
//! that keep what the schema accepts: a value v1beta1 accepted is accepted after the repair,
//! and nothing v1beta1 refused becomes accepted, except that `type` is added where the
//! schema's own `properties` or `items` already say what the value is.
//!
//! - a node without `type` that has `properties` or `additionalProperties` gets
//!   `type: object`; one with `items` gets `type: array`; the root is always an object;
//! - a node without `type` and without structure accepts any value: it gets
//!   `x-kubernetes-preserve-unknown-fields: true`, unless its `anyOf` is the int-or-string
//!   pattern (`{type: integer}`, `{type: string}`), which becomes
//!   `x-kubernetes-int-or-string: true`;
//! - `type: array` without `items` gets items that accept anything;
//! - where v1beta1 kept unknown fields (`preserveUnknownFields` true or absent), every object
//!   node keeps them (`x-kubernetes-preserve-unknown-fields: true`), as v1beta1 pruned nothing;
//! - inside `allOf`/`anyOf`/`oneOf`/`not`: documentation (`description`, `title`,
//!   `externalDocs`) is dropped, and a `type` equal to the node's own type is dropped;
//! - `x-kubernetes-preserve-unknown-fields: false` (v1: "must be true or undefined") is
//!   dropped; at the root, `metadata` loses its description and gets `type: object`, and
//!   `kind`/`apiVersion` get `type: string`.
//!
//! Everything else v1 refuses is a [`SchemaError`] naming the schema path.

use std::fmt;

use serde_json::{Map, Value};

/// A rule of v1's schema validation that a schema breaks and that cannot be repaired
/// without changing what the schema accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SchemaRule {
    /// A schema, or `properties`, is not a mapping; or a flag is not a boolean.
    WrongShape,
    /// A keyword v1 does not support (`$ref`, `patternProperties`, `definitions`, ...).
    UnsupportedKeyword,
    /// `type` is not one of v1's types.
    InvalidType,
    /// `items` is a list of schemas.
    ItemsList,
    /// A node without `type` has both object and array structure.
    AmbiguousType,
    /// The root is not an object, is nullable or has `additionalProperties`.
    Root,
    /// The root's `metadata` restricts more than `name` and `generateName`.
    Metadata,
    /// `kind` or `apiVersion` of a resource is not a string.
    MetaFieldType,
    /// `uniqueItems: true` (v1 forbids it).
    UniqueItems,
    /// Both `properties` and `additionalProperties` (other than `true`).
    PropertiesAndAdditionalProperties,
    /// A `type` inside `allOf`/`anyOf`/`oneOf`/`not` other than the node's own.
    JunctorType,
    /// A keyword v1 does not allow inside `allOf`/`anyOf`/`oneOf`/`not`.
    JunctorKeyword,
    /// A field or items specified inside `allOf`/`anyOf`/`oneOf`/`not` but not outside.
    JunctorFieldNotOutside,
}

impl SchemaRule {
    /// A short stable name, for reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::WrongShape => "wrong-shape",
            Self::UnsupportedKeyword => "unsupported-keyword",
            Self::InvalidType => "invalid-type",
            Self::ItemsList => "items-list",
            Self::AmbiguousType => "ambiguous-type",
            Self::Root => "root",
            Self::Metadata => "metadata",
            Self::MetaFieldType => "meta-field-type",
            Self::UniqueItems => "unique-items",
            Self::PropertiesAndAdditionalProperties => "properties-and-additional-properties",
            Self::JunctorType => "junctor-type",
            Self::JunctorKeyword => "junctor-keyword",
            Self::JunctorFieldNotOutside => "junctor-field-not-outside",
        }
    }
}

impl fmt::Display for SchemaRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a schema cannot be made structural: where, which rule, and a sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaError {
    /// The schema path in the input CRD (`spec.validation.openAPIV3Schema.properties.spec`).
    pub path: String,
    /// The rule broken.
    pub rule: SchemaRule,
    /// What is wrong, as a sentence without the path.
    pub message: String,
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

const JUNCTORS: &str = "allOf, anyOf, oneOf or not";
const TYPES: [&str; 6] = ["array", "boolean", "integer", "number", "object", "string"];
const UNSUPPORTED: [&str; 8] = [
    "$ref",
    "$schema",
    "id",
    "patternProperties",
    "dependencies",
    "additionalItems",
    "definitions",
    "schema",
];
/// Keywords only documentation, dropped inside junctors.
const DOC_ONLY: [&str; 3] = ["description", "title", "externalDocs"];
/// Keywords v1 does not allow inside junctors (besides `type` and documentation).
const JUNCTOR_FORBIDDEN: [&str; 9] = [
    "default",
    "additionalProperties",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-int-or-string",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-list-type",
    "x-kubernetes-map-type",
    "x-kubernetes-validations",
];
const FLAGS: [&str; 5] = [
    "nullable",
    "uniqueItems",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-int-or-string",
    "x-kubernetes-embedded-resource",
];
const PRESERVE: &str = "x-kubernetes-preserve-unknown-fields";
const INT_OR_STRING: &str = "x-kubernetes-int-or-string";
const EMBEDDED: &str = "x-kubernetes-embedded-resource";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Field,
    Item,
}

/// Makes `schema` (an `openAPIV3Schema`, found at `path` in the input CRD) structural in
/// place. `preserve_unknown`: v1beta1 kept unknown fields, so every object node keeps them.
pub fn make_structural(
    schema: &mut Value,
    path: &str,
    preserve_unknown: bool,
) -> Result<(), SchemaError> {
    node(schema, path, Level::Root, preserve_unknown)
}

fn fail<T>(path: &str, rule: SchemaRule, message: impl Into<String>) -> Result<T, SchemaError> {
    Err(SchemaError {
        path: path.to_owned(),
        rule,
        message: message.into(),
    })
}

/// The path of the entry `key` of the map at `path` (`properties`, ...): `.key`, or `[key]`
/// when the key is not a plain name.
pub(crate) fn entry_path(path: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '$' || c == '@');
    if plain {
        format!("{path}.{key}")
    } else {
        format!("{path}[{key}]")
    }
}

/// The path of `properties[key]` below `path`: `.properties.key`, or `.properties[key]` when
/// the key is not a plain name.
pub(crate) fn property_path(path: &str, key: &str) -> String {
    entry_path(&format!("{path}.properties"), key)
}

fn flag(map: &Map<String, Value>, key: &str) -> bool {
    map.get(key).and_then(Value::as_bool).unwrap_or(false)
}

/// Checks every node and junctor clause has: flags are booleans, no keyword v1 does not
/// support, a valid `type`, `items` a single schema, no `uniqueItems: true`; drops
/// `x-kubernetes-preserve-unknown-fields: false`.
fn common(map: &mut Map<String, Value>, path: &str) -> Result<(), SchemaError> {
    for key in FLAGS {
        match map.get(key) {
            None | Some(Value::Bool(_)) => {}
            Some(Value::Null) => {
                map.remove(key);
            }
            Some(other) => {
                return fail(
                    path,
                    SchemaRule::WrongShape,
                    format!("{key} must be true or false, not {other}"),
                );
            }
        }
    }
    if let Some(keyword) = UNSUPPORTED.iter().find(|k| map.contains_key(**k)) {
        return fail(
            path,
            SchemaRule::UnsupportedKeyword,
            format!("{keyword} is not supported in apiextensions.k8s.io/v1 schemas"),
        );
    }
    match map.get("type") {
        None => {}
        Some(Value::Null) => {
            map.remove("type");
        }
        Some(Value::String(found)) if found.is_empty() => {
            map.remove("type");
        }
        Some(Value::String(found)) if TYPES.contains(&found.as_str()) => {}
        Some(found) => {
            return fail(
                path,
                SchemaRule::InvalidType,
                format!(
                    "type {found} is not one of {} (use nullable: true for null)",
                    TYPES.join(", ")
                ),
            );
        }
    }
    match map.get("items") {
        None | Some(Value::Object(_)) => {}
        Some(Value::Null) => {
            map.remove("items");
        }
        Some(Value::Array(_)) => {
            return fail(
                path,
                SchemaRule::ItemsList,
                "items is a list of schemas; apiextensions.k8s.io/v1 allows only one schema for all items",
            );
        }
        Some(other) => {
            return fail(
                path,
                SchemaRule::WrongShape,
                format!("items must be a schema (a mapping), not {other}"),
            );
        }
    }
    match map.get("properties") {
        None | Some(Value::Object(_)) => {}
        Some(Value::Null) => {
            map.remove("properties");
        }
        Some(other) => {
            return fail(
                path,
                SchemaRule::WrongShape,
                format!("properties must be a mapping of field names to schemas, not {other}"),
            );
        }
    }
    if flag(map, "uniqueItems") {
        return fail(
            path,
            SchemaRule::UniqueItems,
            "uniqueItems: true is forbidden in apiextensions.k8s.io/v1 (dropping it would accept duplicate items)",
        );
    }
    if map.get(PRESERVE) == Some(&Value::Bool(false)) {
        map.remove(PRESERVE);
    }
    Ok(())
}

/// Whether `clauses` are exactly `{type: integer}` and `{type: string}`, in either order.
fn is_int_or_string_pair(clauses: &Value) -> bool {
    let Some(clauses) = clauses.as_array() else {
        return false;
    };
    let types: Vec<Option<&str>> = clauses
        .iter()
        .map(|clause| {
            clause
                .as_object()
                .filter(|c| c.len() == 1)
                .and_then(|c| c.get("type"))
                .and_then(Value::as_str)
        })
        .collect();
    types == [Some("integer"), Some("string")] || types == [Some("string"), Some("integer")]
}

fn int_or_string_any_of() -> Value {
    serde_json::json!([{"type": "integer"}, {"type": "string"}])
}

fn node(
    schema: &mut Value,
    path: &str,
    level: Level,
    preserve_unknown: bool,
) -> Result<(), SchemaError> {
    let Value::Object(map) = schema else {
        return fail(
            path,
            SchemaRule::WrongShape,
            format!("a schema must be a mapping, not {schema}"),
        );
    };
    common(map, path)?;
    let has_properties = map
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| !p.is_empty());
    let has_additional = map
        .get("additionalProperties")
        .is_some_and(|v| !v.is_null());
    let has_items = map.contains_key("items");
    let embedded = flag(map, EMBEDDED);

    if level == Level::Root {
        if has_additional {
            return fail(
                path,
                SchemaRule::Root,
                "additionalProperties must not be used at the root of a CRD schema",
            );
        }
        if flag(map, "nullable") {
            return fail(
                path,
                SchemaRule::Root,
                "nullable cannot be true at the root",
            );
        }
    }
    if has_properties
        && match map.get("additionalProperties") {
            None | Some(Value::Null) | Some(Value::Bool(true)) => false,
            Some(_) => true,
        }
    {
        return fail(
            path,
            SchemaRule::PropertiesAndAdditionalProperties,
            "properties and additionalProperties are mutually exclusive in apiextensions.k8s.io/v1",
        );
    }

    // The int-or-string patterns: anyOf [{type: integer}, {type: string}], or the same as
    // allOf[0].anyOf.
    let int_or_string_pattern = map.get("anyOf").is_some_and(is_int_or_string_pair)
        || map
            .get("allOf")
            .and_then(|all_of| all_of.get(0))
            .and_then(|first| first.get("anyOf"))
            .is_some_and(is_int_or_string_pair);
    if !map.contains_key("type") {
        if level == Level::Root || embedded || has_properties || has_additional {
            if has_items {
                return fail(
                    path,
                    SchemaRule::AmbiguousType,
                    "this node has no type and both object fields and array items; give it a type",
                );
            }
            map.insert("type".to_owned(), Value::String("object".to_owned()));
        } else if has_items {
            map.insert("type".to_owned(), Value::String("array".to_owned()));
        } else if int_or_string_pattern || flag(map, INT_OR_STRING) {
            map.insert(INT_OR_STRING.to_owned(), Value::Bool(true));
            map.remove(PRESERVE);
        } else {
            map.insert(PRESERVE.to_owned(), Value::Bool(true));
        }
    }
    let own_type = map.get("type").and_then(Value::as_str).map(str::to_owned);
    if level == Level::Root && own_type.as_deref() != Some("object") {
        return fail(
            path,
            SchemaRule::Root,
            format!(
                "the root of a CRD schema must have type object, not {}",
                own_type.as_deref().unwrap_or_default()
            ),
        );
    }
    if own_type.as_deref() == Some("array") && !has_items {
        map.insert("items".to_owned(), serde_json::json!({PRESERVE: true}));
    }
    if preserve_unknown && own_type.as_deref() == Some("object") && !has_additional {
        map.insert(PRESERVE.to_owned(), Value::Bool(true));
    }

    // Fields (with the special ones of a resource: the root or an embedded resource).
    let checks_meta = level == Level::Root || embedded;
    if let Some(Value::Object(properties)) = map.get_mut("properties") {
        for (key, value) in properties.iter_mut() {
            let child = property_path(path, key);
            if checks_meta && (key == "kind" || key == "apiVersion") {
                meta_string(value, &child, key)?;
            }
            if level == Level::Root && key == "metadata" {
                root_metadata(value, &child)?;
                continue;
            }
            if checks_meta && key == "metadata" {
                if let Value::Object(metadata) = value
                    && !metadata.contains_key("type")
                {
                    metadata.insert("type".to_owned(), Value::String("object".to_owned()));
                }
                if value.get("type").and_then(Value::as_str) != Some("object") {
                    return fail(
                        &child,
                        SchemaRule::Metadata,
                        "metadata of an embedded resource must have type object",
                    );
                }
            }
            node(value, &child, Level::Field, preserve_unknown)?;
        }
    }
    if let Some(items) = map.get_mut("items") {
        node(
            items,
            &format!("{path}.items"),
            Level::Item,
            preserve_unknown,
        )?;
    }
    if let Some(additional) = map.get_mut("additionalProperties")
        && additional.is_object()
    {
        node(
            additional,
            &format!("{path}.additionalProperties"),
            Level::Field,
            preserve_unknown,
        )?;
    }

    // Junctors: value validations only, their fields also specified outside.
    let mut junctors: Vec<(&'static str, Value)> = Vec::new();
    for key in ["allOf", "anyOf", "oneOf", "not"] {
        if let Some(value) = map.remove(key) {
            junctors.push((key, value));
        }
    }
    let result = junctors_of(map, &mut junctors, path);
    for (key, value) in junctors {
        map.insert(key.to_owned(), value);
    }
    result
}

/// Checks and repairs the junctors of the structural node `node` at `path`.
fn junctors_of(
    node: &Map<String, Value>,
    junctors: &mut [(&'static str, Value)],
    path: &str,
) -> Result<(), SchemaError> {
    for (key, value) in junctors.iter_mut() {
        let key = *key;
        if key == "not" {
            clause(value, node, &format!("{path}.not"))?;
            continue;
        }
        // The int-or-string pattern keeps its types (v1 wants integer first; the order of
        // anyOf does not matter).
        if key == "anyOf" && is_int_or_string_pair(value) {
            *value = int_or_string_any_of();
            continue;
        }
        let Value::Array(clauses) = value else {
            return fail(
                &format!("{path}.{key}"),
                SchemaRule::WrongShape,
                format!("{key} must be a list of schemas"),
            );
        };
        for (index, item) in clauses.iter_mut().enumerate() {
            let item_path = format!("{path}.{key}[{index}]");
            // So does the other one: allOf[0].anyOf.
            if key == "allOf"
                && index == 0
                && let Value::Object(first) = item
                && first.get("anyOf").is_some_and(is_int_or_string_pair)
            {
                first.remove("anyOf");
                let mut rest = Value::Object(std::mem::take(first));
                let checked = clause(&mut rest, node, &item_path);
                if let Value::Object(rest) = rest {
                    *first = rest;
                }
                first.insert("anyOf".to_owned(), int_or_string_any_of());
                checked?;
                continue;
            }
            clause(item, node, &item_path)?;
        }
    }
    Ok(())
}

/// Checks and repairs one junctor clause, against the structural `node` it applies to.
fn clause(value: &mut Value, node: &Map<String, Value>, path: &str) -> Result<(), SchemaError> {
    let Value::Object(map) = value else {
        return fail(
            path,
            SchemaRule::WrongShape,
            format!("a schema must be a mapping, not {value}"),
        );
    };
    common(map, path)?;
    for key in DOC_ONLY {
        map.remove(key);
    }
    if map.get("nullable") == Some(&Value::Bool(false)) {
        map.remove("nullable");
    }
    let own_type = node.get("type").and_then(Value::as_str);
    if let Some(found) = map.get("type").and_then(Value::as_str) {
        if Some(found) == own_type {
            map.remove("type");
        } else {
            return fail(
                path,
                SchemaRule::JunctorType,
                match own_type {
                    Some(own) => format!(
                        "type {found:?} inside {JUNCTORS} is not allowed in apiextensions.k8s.io/v1 (only the node's own type, {own:?}, could be dropped here)"
                    ),
                    None => format!(
                        "type {found:?} inside {JUNCTORS} is not allowed in apiextensions.k8s.io/v1, and the node has no type of its own"
                    ),
                },
            );
        }
    }
    if flag(map, "nullable") {
        return fail(
            path,
            SchemaRule::JunctorKeyword,
            format!("nullable: true inside {JUNCTORS} is not allowed in apiextensions.k8s.io/v1"),
        );
    }
    if let Some(keyword) = JUNCTOR_FORBIDDEN.iter().find(|k| map.contains_key(**k)) {
        return fail(
            path,
            SchemaRule::JunctorKeyword,
            format!("{keyword} inside {JUNCTORS} is not allowed in apiextensions.k8s.io/v1"),
        );
    }
    if let Some(Value::Object(properties)) = map.get_mut("properties") {
        let outside = node.get("properties").and_then(Value::as_object);
        for (key, sub) in properties.iter_mut() {
            let sub_path = property_path(path, key);
            if key == "metadata" {
                return fail(
                    &sub_path,
                    SchemaRule::JunctorKeyword,
                    format!("metadata must not be specified inside {JUNCTORS}"),
                );
            }
            let Some(Value::Object(field)) = outside.and_then(|o| o.get(key)) else {
                return fail(
                    &sub_path,
                    SchemaRule::JunctorFieldNotOutside,
                    format!(
                        "the field {key:?} is specified inside {JUNCTORS} but not in the node's own properties; apiextensions.k8s.io/v1 requires every field to be specified outside them"
                    ),
                );
            };
            clause(sub, field, &sub_path)?;
        }
    }
    if let Some(items) = map.get_mut("items") {
        let items_path = format!("{path}.items");
        let Some(Value::Object(outside)) = node.get("items") else {
            return fail(
                &items_path,
                SchemaRule::JunctorFieldNotOutside,
                format!(
                    "items are specified inside {JUNCTORS} but not on the node itself; apiextensions.k8s.io/v1 requires them outside too"
                ),
            );
        };
        clause(items, outside, &items_path)?;
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        if let Some(value) = map.get_mut(key) {
            let Value::Array(clauses) = value else {
                return fail(
                    &format!("{path}.{key}"),
                    SchemaRule::WrongShape,
                    format!("{key} must be a list of schemas"),
                );
            };
            for (index, item) in clauses.iter_mut().enumerate() {
                clause(item, node, &format!("{path}.{key}[{index}]"))?;
            }
        }
    }
    if let Some(not) = map.get_mut("not") {
        clause(not, node, &format!("{path}.not"))?;
    }
    Ok(())
}

/// `kind` and `apiVersion` of a resource are strings.
fn meta_string(value: &mut Value, path: &str, key: &str) -> Result<(), SchemaError> {
    if let Value::Object(map) = value
        && map.get("type").is_none_or(Value::is_null)
    {
        map.insert("type".to_owned(), Value::String("string".to_owned()));
    }
    match value.get("type").and_then(Value::as_str) {
        Some("string") => Ok(()),
        _ => fail(
            path,
            SchemaRule::MetaFieldType,
            format!("{key} of a resource must have type string"),
        ),
    }
}

/// The root's `metadata`: `type: object` and at most restrictions of `name` and
/// `generateName`; its documentation is dropped.
fn root_metadata(value: &mut Value, path: &str) -> Result<(), SchemaError> {
    let Value::Object(map) = value else {
        return fail(
            path,
            SchemaRule::WrongShape,
            format!("a schema must be a mapping, not {value}"),
        );
    };
    for key in DOC_ONLY {
        map.remove(key);
    }
    if map.get(PRESERVE) == Some(&Value::Bool(false)) {
        map.remove(PRESERVE);
    }
    match map.get("type") {
        None | Some(Value::Null) => {
            map.insert("type".to_owned(), Value::String("object".to_owned()));
        }
        Some(Value::String(t)) if t == "object" => {}
        Some(other) => {
            return fail(
                path,
                SchemaRule::Metadata,
                format!("metadata must have type object, not {other}"),
            );
        }
    }
    let mut extra: Vec<String> = map
        .keys()
        .filter(|key| *key != "type" && *key != "properties")
        .cloned()
        .collect();
    if let Some(properties) = map.get("properties") {
        match properties.as_object() {
            Some(properties) => extra.extend(
                properties
                    .keys()
                    .filter(|key| *key != "name" && *key != "generateName")
                    .map(|key| format!("properties.{key}")),
            ),
            None => extra.push("properties".to_owned()),
        }
    }
    if extra.is_empty() {
        Ok(())
    } else {
        fail(
            path,
            SchemaRule::Metadata,
            format!(
                "metadata at the root may only restrict name and generateName in apiextensions.k8s.io/v1, but it sets {}",
                extra.join(", ")
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const ROOT: &str = "spec.validation.openAPIV3Schema";

    fn repaired(schema: Value, preserve_unknown: bool) -> Value {
        let mut schema = schema;
        make_structural(&mut schema, ROOT, preserve_unknown).unwrap();
        schema
    }

    fn refused(schema: Value) -> SchemaError {
        let mut schema = schema;
        make_structural(&mut schema, ROOT, false).unwrap_err()
    }

    #[test]
    fn a_structural_schema_is_left_as_it_is() {
        let schema = json!({
            "type": "object",
            "properties": {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "metadata": {"type": "object"},
                "spec": {
                    "type": "object",
                    "required": ["size"],
                    "properties": {
                        "size": {"type": "integer", "minimum": 1},
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                        "ports": {"type": "array", "items": {"type": "integer"}},
                        "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
                        "mode": {"type": "string", "oneOf": [{"pattern": "^a"}, {"pattern": "^b"}]},
                    },
                    "oneOf": [{"required": ["size"]}, {"properties": {"size": {"maximum": 3}}}],
                },
            },
        });
        assert_eq!(repaired(schema.clone(), false), schema);
    }

    #[test]
    fn nodes_with_properties_or_additional_properties_become_objects() {
        let schema = repaired(
            json!({"properties": {
                "spec": {"properties": {"size": {"type": "integer"}}},
                "selector": {"additionalProperties": {"type": "string"}},
            }}),
            false,
        );
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["properties"]["spec"]["type"], "object");
        assert_eq!(schema["properties"]["selector"]["type"], "object");
        assert!(schema["properties"]["spec"].get(PRESERVE).is_none());
    }

    #[test]
    fn nodes_with_items_become_arrays_and_arrays_without_items_accept_any_item() {
        let schema = repaired(
            json!({"type": "object", "properties": {
                "hosts": {"items": {"type": "string"}},
                "anything": {"type": "array"},
            }}),
            false,
        );
        assert_eq!(schema["properties"]["hosts"]["type"], "array");
        assert_eq!(
            schema["properties"]["anything"]["items"],
            json!({PRESERVE: true})
        );
    }

    #[test]
    fn a_field_without_type_or_structure_keeps_any_value() {
        let schema = repaired(
            json!({"type": "object", "properties": {
                "config": {"description": "Free-form configuration."},
                "choice": {"oneOf": [{"required": ["a"]}, {"required": ["b"]}]},
            }}),
            false,
        );
        assert_eq!(
            schema["properties"]["config"],
            json!({"description": "Free-form configuration.", PRESERVE: true})
        );
        assert_eq!(schema["properties"]["choice"][PRESERVE], true);
    }

    #[test]
    fn the_int_or_string_any_of_becomes_x_kubernetes_int_or_string_in_v1s_order() {
        let schema = repaired(
            json!({"type": "object", "properties": {
                "maxUnavailable": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
                "port": {"allOf": [{"anyOf": [{"type": "integer"}, {"type": "string"}]}, {"pattern": "^[0-9a-z]+$"}]},
            }}),
            false,
        );
        assert_eq!(
            schema["properties"]["maxUnavailable"],
            json!({"anyOf": [{"type": "integer"}, {"type": "string"}], INT_OR_STRING: true})
        );
        assert_eq!(schema["properties"]["port"][INT_OR_STRING], true);
        assert!(schema["properties"]["port"].get(PRESERVE).is_none());
    }

    #[test]
    fn kept_unknown_fields_are_kept_in_every_object_not_only_at_the_root() {
        let schema = repaired(
            json!({"properties": {
                "metadata": {"type": "object"},
                "spec": {"type": "object", "description": "v1beta1 pruned nothing here."},
                "status": {"properties": {"phase": {"type": "string"}}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            }}),
            true,
        );
        assert_eq!(schema[PRESERVE], true);
        assert_eq!(schema["properties"]["spec"][PRESERVE], true);
        assert_eq!(schema["properties"]["status"][PRESERVE], true);
        assert!(schema["properties"]["labels"].get(PRESERVE).is_none());
        assert!(
            schema["properties"]["status"]["properties"]["phase"]
                .get(PRESERVE)
                .is_none()
        );
        assert_eq!(schema["properties"]["metadata"], json!({"type": "object"}));
    }

    #[test]
    fn documentation_and_the_nodes_own_type_are_dropped_inside_junctors() {
        let schema = repaired(
            json!({"type": "object", "properties": {"spec": {
                "type": "object",
                "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                "oneOf": [
                    {"type": "object", "description": "Only a.", "required": ["a"]},
                    {"title": "Only b", "required": ["b"], "properties": {"b": {"type": "string", "minLength": 1}}},
                ],
            }}}),
            false,
        );
        assert_eq!(
            schema["properties"]["spec"]["oneOf"],
            json!([{"required": ["a"]}, {"required": ["b"], "properties": {"b": {"minLength": 1}}}])
        );
    }

    #[test]
    fn preserve_unknown_fields_false_is_dropped_as_v1_wants_true_or_nothing() {
        let schema = repaired(
            json!({"type": "object", PRESERVE: false, "properties": {"spec": {"type": "object", PRESERVE: false}}}),
            false,
        );
        assert!(schema.get(PRESERVE).is_none());
        assert!(schema["properties"]["spec"].get(PRESERVE).is_none());
    }

    #[test]
    fn root_metadata_kind_and_api_version_are_given_their_types() {
        let schema = repaired(
            json!({"properties": {
                "metadata": {"description": "Standard object metadata.", "properties": {"name": {"maxLength": 63}}},
                "kind": {"description": "Kind."},
                "apiVersion": {},
            }}),
            true,
        );
        assert_eq!(
            schema["properties"]["metadata"],
            json!({"type": "object", "properties": {"name": {"maxLength": 63}}})
        );
        assert_eq!(schema["properties"]["kind"]["type"], "string");
        assert_eq!(schema["properties"]["apiVersion"]["type"], "string");
        assert!(schema["properties"]["kind"].get(PRESERVE).is_none());
    }

    #[test]
    fn a_type_inside_a_junctor_other_than_the_nodes_own_is_refused() {
        let err = refused(json!({"type": "object", "properties": {"spec": {
            "type": "object",
            "anyOf": [{"type": "string"}, {"type": "object"}],
        }}}));
        assert_eq!(err.rule, SchemaRule::JunctorType);
        assert_eq!(
            err.path,
            "spec.validation.openAPIV3Schema.properties.spec.anyOf[0]"
        );
        assert_eq!(
            err.to_string(),
            "spec.validation.openAPIV3Schema.properties.spec.anyOf[0]: type \"string\" inside allOf, anyOf, oneOf or not is not allowed in apiextensions.k8s.io/v1 (only the node's own type, \"object\", could be dropped here)"
        );
    }

    #[test]
    fn forbidden_keywords_inside_junctors_are_refused() {
        for (keyword, value) in [
            ("default", json!("x")),
            ("nullable", json!(true)),
            ("additionalProperties", json!({"type": "string"})),
            ("x-kubernetes-list-type", json!("set")),
        ] {
            let mut inner = Map::new();
            inner.insert(keyword.to_owned(), value);
            let err = refused(json!({"type": "object", "properties": {"spec": {
                "type": "object", "allOf": [{}, inner],
            }}}));
            assert_eq!(err.rule, SchemaRule::JunctorKeyword, "{keyword}");
            assert_eq!(err.path, format!("{ROOT}.properties.spec.allOf[1]"));
            assert!(err.message.starts_with(keyword), "{err}");
        }
    }

    #[test]
    fn a_field_only_inside_a_junctor_is_refused() {
        let err = refused(json!({"type": "object", "properties": {"spec": {
            "type": "object",
            "properties": {"a": {"type": "string"}},
            "oneOf": [{"properties": {"a": {"minLength": 1}}}, {"properties": {"b": {"minLength": 1}}}],
        }}}));
        assert_eq!(err.rule, SchemaRule::JunctorFieldNotOutside);
        assert_eq!(
            err.path,
            format!("{ROOT}.properties.spec.oneOf[1].properties.b")
        );
        let items = refused(json!({"type": "object", "properties": {"list": {
            "anyOf": [{"items": {"minimum": 1}}],
        }}}));
        assert_eq!(items.rule, SchemaRule::JunctorFieldNotOutside);
        assert_eq!(items.path, format!("{ROOT}.properties.list.anyOf[0].items"));
    }

    #[test]
    fn root_metadata_restricting_more_than_name_is_refused() {
        let err = refused(json!({"type": "object", "properties": {"metadata": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "labels": {"type": "object"}},
        }}}));
        assert_eq!(err.rule, SchemaRule::Metadata);
        assert_eq!(err.path, format!("{ROOT}.properties.metadata"));
        assert!(
            err.message.ends_with("but it sets properties.labels"),
            "{err}"
        );
    }

    #[test]
    fn schemas_v1_never_accepts_are_refused_with_their_rule() {
        let cases = [
            (
                json!({"type": "array", "items": {"type": "string"}}),
                SchemaRule::Root,
                ROOT.to_owned(),
            ),
            (
                json!({"type": "object", "nullable": true}),
                SchemaRule::Root,
                ROOT.to_owned(),
            ),
            (
                json!({"type": "object", "properties": {"a": {"type": "null"}}}),
                SchemaRule::InvalidType,
                format!("{ROOT}.properties.a"),
            ),
            (
                json!({"type": "object", "properties": {"a": {"$ref": "#/definitions/x"}}}),
                SchemaRule::UnsupportedKeyword,
                format!("{ROOT}.properties.a"),
            ),
            (
                json!({"type": "object", "properties": {"a": {"type": "array", "items": [{"type": "string"}]}}}),
                SchemaRule::ItemsList,
                format!("{ROOT}.properties.a"),
            ),
            (
                json!({"type": "object", "properties": {"a": {"properties": {"b": {}}, "items": {}}}}),
                SchemaRule::AmbiguousType,
                format!("{ROOT}.properties.a"),
            ),
            (
                json!({"type": "object", "properties": {"a": {"type": "array", "uniqueItems": true, "items": {"type": "string"}}}}),
                SchemaRule::UniqueItems,
                format!("{ROOT}.properties.a"),
            ),
            (
                json!({"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {}}, "additionalProperties": false}}}),
                SchemaRule::PropertiesAndAdditionalProperties,
                format!("{ROOT}.properties.a"),
            ),
            (
                json!({"type": "object", "properties": {"kind": {"type": "integer"}}}),
                SchemaRule::MetaFieldType,
                format!("{ROOT}.properties.kind"),
            ),
            (
                json!({"type": "object", "properties": {"a": "string"}}),
                SchemaRule::WrongShape,
                format!("{ROOT}.properties.a"),
            ),
            (
                json!({"type": "object", "properties": {"a.b": {"type": 3}}}),
                SchemaRule::InvalidType,
                format!("{ROOT}.properties[a.b]"),
            ),
        ];
        for (schema, rule, path) in cases {
            let err = refused(schema.clone());
            assert_eq!(
                (err.rule, err.path.as_str()),
                (rule, path.as_str()),
                "{schema}: {err}"
            );
            assert!(!err.message.contains("Object {"), "{err}");
        }
    }
}
