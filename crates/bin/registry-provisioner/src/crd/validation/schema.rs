//! Rule 3 of [`super`]: structural schemas, as v1 wants them without repair, and the schema
//! rules [`crate::structural`] does not cover.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::{Checked, EMBEDDED, INT_OR_STRING, PRESERVE, Problem, V1_NAME, property_path, refuse};
use crate::structural::{self, SchemaError, SchemaRule};

/// The fields allowed at the root of a schema whose version has the status subresource
/// (the API server extracts `properties.status` for `/status`, so nothing else may validate).
const STATUS_ROOT_FIELDS: [&str; 22] = [
    "description",
    "type",
    "format",
    "title",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "multipleOf",
    "required",
    "items",
    "properties",
    "externalDocs",
    "example",
    PRESERVE,
    "x-kubernetes-validations",
];

fn flag(map: &Map<String, Value>, key: &str) -> bool {
    map.get(key).and_then(Value::as_bool).unwrap_or(false)
}

/// The schemas directly below a schema node (fields, items, junctor clauses, ...).
fn child_schemas_mut(map: &mut Map<String, Value>) -> Vec<&mut Value> {
    let mut children = Vec::new();
    for (key, value) in map.iter_mut() {
        match (key.as_str(), value) {
            (
                "properties" | "patternProperties" | "definitions" | "dependencies",
                Value::Object(entries),
            ) => children.extend(entries.values_mut().filter(|entry| entry.is_object())),
            (
                "items" | "additionalProperties" | "additionalItems" | "not",
                value @ Value::Object(_),
            ) => children.push(value),
            ("items" | "allOf" | "anyOf" | "oneOf", Value::Array(items)) => {
                children.extend(items.iter_mut());
            }
            _ => {}
        }
    }
    children
}

/// Whether `value` of the schema field `key` is what Go decodes as the field's zero value,
/// which the API server treats as absent (`""`, `false`, an empty list or map of a field that
/// is not a pointer). `x-kubernetes-preserve-unknown-fields: false`, `$ref: ""` and
/// `dependencies: {}` are pointers or checked as set, so they are not zero.
fn is_go_zero(key: &str, value: &Value) -> bool {
    match value {
        Value::String(text) => {
            text.is_empty()
                && matches!(
                    key,
                    "description" | "type" | "title" | "format" | "pattern" | "id" | "$schema"
                )
        }
        Value::Bool(false) => matches!(
            key,
            "nullable"
                | "uniqueItems"
                | "exclusiveMaximum"
                | "exclusiveMinimum"
                | EMBEDDED
                | INT_OR_STRING
        ),
        Value::Array(items) => {
            items.is_empty()
                && matches!(
                    key,
                    "required"
                        | "allOf"
                        | "anyOf"
                        | "oneOf"
                        | "enum"
                        | "items"
                        | "x-kubernetes-list-map-keys"
                        | "x-kubernetes-validations"
                )
        }
        Value::Object(entries) => {
            entries.is_empty() && matches!(key, "properties" | "patternProperties" | "definitions")
        }
        _ => false,
    }
}

/// Drops every zero value (see [`is_go_zero`]) from the schema, so that what the API server
/// reads alike looks alike here.
fn drop_zero_values(schema: &mut Value) {
    let Value::Object(map) = schema else {
        return;
    };
    map.retain(|key, value| !is_go_zero(key, value));
    for child in child_schemas_mut(map) {
        drop_zero_values(child);
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Field,
    Item,
}

/// Gives the type its structure implies to every untyped node with
/// `x-kubernetes-preserve-unknown-fields: true` (the API server requires no type there, but
/// `make_structural` would add it, which must not count as a refusal), outside junctors and
/// the `kind`/`apiVersion`/`metadata` of resources (whose types are checked). Nodes that look
/// like both an object and an array are listed in `ambiguous` instead.
fn type_preserved_nodes(
    schema: &mut Value,
    path: &str,
    level: Level,
    meta: bool,
    ambiguous: &mut Vec<String>,
) {
    let Value::Object(map) = schema else {
        return;
    };
    let embedded = flag(map, EMBEDDED);
    if !meta && !embedded && flag(map, PRESERVE) && !map.contains_key("type") {
        let object = level == Level::Root
            || map
                .get("properties")
                .and_then(Value::as_object)
                .is_some_and(|properties| !properties.is_empty())
            || map
                .get("additionalProperties")
                .is_some_and(|value| !value.is_null());
        let array = map.contains_key("items");
        let implied = match (object, array) {
            (true, true) => {
                ambiguous.push(path.to_owned());
                None
            }
            (true, false) => Some("object"),
            (false, true) => Some("array"),
            (false, false) => None,
        };
        if let Some(implied) = implied {
            map.insert("type".to_owned(), Value::String(implied.to_owned()));
        }
    }
    let resource = level == Level::Root || embedded;
    if let Some(Value::Object(properties)) = map.get_mut("properties") {
        for (key, child) in properties.iter_mut() {
            let meta = resource && matches!(key.as_str(), "kind" | "apiVersion" | "metadata");
            type_preserved_nodes(
                child,
                &property_path(path, key),
                Level::Field,
                meta,
                ambiguous,
            );
        }
    }
    if let Some(items) = map.get_mut("items") {
        type_preserved_nodes(
            items,
            &format!("{path}.items"),
            Level::Item,
            false,
            ambiguous,
        );
    }
    if let Some(additional) = map.get_mut("additionalProperties") {
        type_preserved_nodes(
            additional,
            &format!("{path}.additionalProperties"),
            Level::Field,
            false,
            ambiguous,
        );
    }
}

/// Checks the schema of a version (the typed round trip of `openAPIV3Schema`, at `path`);
/// `status`: the version has the status subresource.
pub(super) fn check_schema(schema: &Value, path: &str, status: bool) -> Checked {
    let mut normalized = schema.clone();
    drop_zero_values(&mut normalized);

    let mut baseline = normalized.clone();
    let mut ambiguous = Vec::new();
    type_preserved_nodes(&mut baseline, path, Level::Root, false, &mut ambiguous);
    let mut repaired = baseline.clone();
    match structural::make_structural(&mut repaired, path, false) {
        Ok(()) => first_refused_change(&baseline, &repaired, path, false)?,
        // An untyped node with both fields and items is fine when it keeps unknown fields;
        // `make_structural` cannot go on past it, so the structural rules are not checked
        // further (accepting rather than guessing).
        Err(err) if err.rule == SchemaRule::AmbiguousType && ambiguous.contains(&err.path) => {}
        Err(err) => return Err(schema_error(err)),
    }
    other_schema_rules(&normalized, path, Some(Level::Root), status)
}

fn schema_error(err: SchemaError) -> Problem {
    // `structural`'s messages speak of repairing v1beta1 schemas where these two rules are
    // concerned; v1 repairs nothing, so say what v1 wants instead.
    match err.rule {
        SchemaRule::JunctorType => Problem::new(
            format!("{}.type", err.path),
            format!(
                "is not allowed inside allOf, anyOf, oneOf or not in {V1_NAME} (the type belongs on the field itself; only the int-or-string pattern anyOf: [{{type: integer}}, {{type: string}}] may have types)"
            ),
        ),
        SchemaRule::UniqueItems => Problem::new(
            format!("{}.uniqueItems", err.path),
            format!("is true, which {V1_NAME} forbids (checking it is quadratic)"),
        ),
        _ => Problem::new(
            err.path,
            format!(
                "is not a structural schema as {V1_NAME} requires: {}",
                err.message
            ),
        ),
    }
}

/// The first difference between a schema (`before`, at `path`) and what `make_structural`
/// made of it (`after`) that the API server would refuse; `junctor`: inside
/// `allOf`/`anyOf`/`oneOf`/`not`.
fn first_refused_change(before: &Value, after: &Value, path: &str, junctor: bool) -> Checked {
    let (Value::Object(old), Value::Object(new)) = (before, after) else {
        if before == after {
            return Ok(());
        }
        return refuse(
            path,
            format!("is not allowed in a structural schema of {V1_NAME}"),
        );
    };
    let keys: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    for key in keys {
        let (was, is) = (old.get(key.as_str()), new.get(key.as_str()));
        if was == is {
            continue;
        }
        match (key.as_str(), was, is) {
            ("properties", Some(Value::Object(was)), Some(Value::Object(is))) => {
                let names: BTreeSet<&String> = was.keys().chain(is.keys()).collect();
                for name in names {
                    let at = property_path(path, name);
                    match (was.get(name.as_str()), is.get(name.as_str())) {
                        (Some(was), Some(is)) => first_refused_change(was, is, &at, junctor)?,
                        _ => {
                            return refuse(
                                at,
                                format!("is not allowed in a structural schema of {V1_NAME}"),
                            );
                        }
                    }
                }
            }
            (
                "items" | "additionalProperties" | "not",
                Some(was @ Value::Object(_)),
                Some(is @ Value::Object(_)),
            ) => first_refused_change(
                was,
                is,
                &format!("{path}.{key}"),
                junctor || key.as_str() == "not",
            )?,
            ("allOf" | "anyOf" | "oneOf", Some(Value::Array(was)), Some(Value::Array(is)))
                if was.len() == is.len() =>
            {
                for (index, (was, is)) in was.iter().zip(is).enumerate() {
                    first_refused_change(was, is, &format!("{path}.{key}[{index}]"), true)?;
                }
            }
            _ => refused_change(old, path, key, was, is, junctor)?,
        }
    }
    Ok(())
}

/// Whether the change of `key` of the node `old` (at `path`) from `was` to `is` means the API
/// server would refuse the node, and why.
fn refused_change(
    old: &Map<String, Value>,
    path: &str,
    key: &str,
    was: Option<&Value>,
    is: Option<&Value>,
    junctor: bool,
) -> Checked {
    let field = format!("{path}.{key}");
    let untyped = !old.contains_key("type");
    let junctor_rule = "inside allOf, anyOf, oneOf or not";
    match (key, was, is) {
        // Allowed there by the API server; `make_structural` drops it anyway.
        ("externalDocs", Some(_), None) if junctor => Ok(()),
        // An untyped node keeping unknown fields needs no int-or-string marker.
        (INT_OR_STRING, None, Some(_)) if !junctor && untyped && flag(old, PRESERVE) => Ok(()),
        (PRESERVE, Some(Value::Bool(true)), None)
            if !junctor && untyped && !flag(old, INT_OR_STRING) =>
        {
            Ok(())
        }
        ("type", None, Some(implied)) => refuse(
            path,
            format!(
                "has no type ({V1_NAME} requires structural schemas; here type: {})",
                implied.as_str().unwrap_or_default()
            ),
        ),
        (PRESERVE, None, Some(_)) => refuse(
            path,
            format!(
                "has no type ({V1_NAME} requires structural schemas: give it a type, or x-kubernetes-preserve-unknown-fields: true if it takes any value)"
            ),
        ),
        (INT_OR_STRING, None, Some(_)) => refuse(
            path,
            format!(
                "has no type ({V1_NAME} requires structural schemas: for an integer or a string, set x-kubernetes-int-or-string: true)"
            ),
        ),
        ("items", None, Some(_)) => refuse(
            path,
            format!(
                "is an array without items ({V1_NAME} requires an items schema; items: {{x-kubernetes-preserve-unknown-fields: true}} takes anything)"
            ),
        ),
        (PRESERVE, Some(Value::Bool(false)), None) => refuse(
            field,
            format!("is false; {V1_NAME} allows only true or leaving it out"),
        ),
        (PRESERVE, Some(_), None) => refuse(
            field,
            "must not be true together with x-kubernetes-int-or-string: true",
        ),
        ("type", Some(_), None) if junctor => refuse(
            field,
            format!(
                "is not allowed {junctor_rule} in {V1_NAME} (the type belongs on the field itself)"
            ),
        ),
        ("type", Some(_), Some(_)) if junctor => refuse(
            field,
            format!(
                "is not allowed {junctor_rule} in {V1_NAME}, except in the int-or-string pattern anyOf: [{{type: integer}}, {{type: string}}], in that order"
            ),
        ),
        ("description" | "title" | "externalDocs", Some(_), None) if junctor => refuse(
            field,
            format!(
                "is not allowed {junctor_rule} in {V1_NAME} (documentation belongs on the field itself)"
            ),
        ),
        ("description" | "title" | "externalDocs", Some(_), None) => refuse(
            field,
            format!(
                "is not allowed: the schema of metadata at the root may only restrict name and generateName in {V1_NAME}"
            ),
        ),
        _ => refuse(
            field,
            format!("is not allowed in a structural schema of {V1_NAME}"),
        ),
    }
}

/// The rules `make_structural` does not check, on the schema at `path` (`level`: where the
/// node is in the structure, `None` inside junctors; `status`: the version has the status
/// subresource).
fn other_schema_rules(schema: &Value, path: &str, level: Option<Level>, status: bool) -> Checked {
    let Value::Object(map) = schema else {
        return Ok(());
    };
    if level == Some(Level::Root)
        && status
        && let Some(key) = map
            .keys()
            .find(|key| !STATUS_ROOT_FIELDS.contains(&key.as_str()))
    {
        return refuse(
            format!("{path}.{key}"),
            format!(
                "is not allowed at the root of the schema of a version with the status subresource (allowed there: {})",
                STATUS_ROOT_FIELDS.join(", ")
            ),
        );
    }
    if level.is_some() {
        if flag(map, PRESERVE) && flag(map, INT_OR_STRING) {
            return refuse(
                format!("{path}.{PRESERVE}"),
                "must not be true together with x-kubernetes-int-or-string: true",
            );
        }
        if flag(map, EMBEDDED) {
            let has_properties = map
                .get("properties")
                .and_then(Value::as_object)
                .is_some_and(|properties| !properties.is_empty());
            if !flag(map, PRESERVE) && !has_properties {
                return refuse(
                    format!("{path}.properties"),
                    "must not be empty for an x-kubernetes-embedded-resource without x-kubernetes-preserve-unknown-fields: true",
                );
            }
            if map.contains_key("additionalProperties") {
                return refuse(
                    format!("{path}.additionalProperties"),
                    "must not be used with x-kubernetes-embedded-resource",
                );
            }
        }
    }
    list_and_map_types(map, path)?;
    validation_rules(map, path)?;

    let inner = |child: Level| level.map(|_| child);
    for (key, value) in map {
        match (key.as_str(), value) {
            ("properties", Value::Object(properties)) => {
                for (name, property) in properties {
                    other_schema_rules(
                        property,
                        &property_path(path, name),
                        inner(Level::Field),
                        false,
                    )?;
                }
            }
            ("items", Value::Object(_)) => {
                other_schema_rules(value, &format!("{path}.items"), inner(Level::Item), false)?;
            }
            ("additionalProperties", Value::Object(_)) => other_schema_rules(
                value,
                &format!("{path}.additionalProperties"),
                inner(Level::Field),
                false,
            )?,
            ("allOf" | "anyOf" | "oneOf", Value::Array(clauses)) => {
                for (index, clause) in clauses.iter().enumerate() {
                    other_schema_rules(clause, &format!("{path}.{key}[{index}]"), None, false)?;
                }
            }
            ("not", Value::Object(_)) => {
                other_schema_rules(value, &format!("{path}.not"), None, false)?;
            }
            _ => {}
        }
    }
    Ok(())
}

fn text<'a>(map: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    map.get(key).and_then(Value::as_str)
}

/// `x-kubernetes-map-type`, `x-kubernetes-list-type` and `x-kubernetes-list-map-keys`.
fn list_and_map_types(map: &Map<String, Value>, path: &str) -> Checked {
    let own_type = text(map, "type").unwrap_or_default();
    let type_is = |wanted: &str, because: &str| {
        let found = if own_type.is_empty() {
            "is missing".to_owned()
        } else {
            format!("is {own_type:?}")
        };
        Problem::new(
            format!("{path}.type"),
            format!("{found}; it must be {wanted} when {because} is set"),
        )
    };
    if let Some(map_type) = text(map, "x-kubernetes-map-type") {
        if own_type != "object" {
            return Err(type_is("object", "x-kubernetes-map-type"));
        }
        if !matches!(map_type, "atomic" | "granular") {
            return refuse(
                format!("{path}.x-kubernetes-map-type"),
                format!("{map_type:?} is not one of atomic and granular"),
            );
        }
    }
    let list_type = text(map, "x-kubernetes-list-type");
    if let Some(list_type) = list_type {
        if own_type != "array" {
            return Err(type_is("array", "x-kubernetes-list-type"));
        }
        if !matches!(list_type, "atomic" | "set" | "map") {
            return refuse(
                format!("{path}.x-kubernetes-list-type"),
                format!("{list_type:?} is not one of atomic, set and map"),
            );
        }
    }
    let keys: Vec<&str> = map
        .get("x-kubernetes-list-map-keys")
        .and_then(Value::as_array)
        .map(|keys| keys.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if !keys.is_empty() && list_type != Some("map") {
        return refuse(
            format!("{path}.x-kubernetes-list-type"),
            "must be map when x-kubernetes-list-map-keys is set",
        );
    }
    let items = map.get("items").and_then(Value::as_object);
    let item_flag = |items: &Map<String, Value>, key: &str| flag(items, key);
    if matches!(list_type, Some("set" | "map")) && items.is_some_and(|i| item_flag(i, "nullable")) {
        return refuse(
            format!("{path}.items.nullable"),
            format!(
                "cannot be true when x-kubernetes-list-type is {}",
                list_type.unwrap_or_default()
            ),
        );
    }
    match list_type {
        Some("map") => {
            if keys.is_empty() {
                return refuse(
                    format!("{path}.x-kubernetes-list-map-keys"),
                    "must not be empty when x-kubernetes-list-type is map",
                );
            }
            let Some(items) = items else {
                return refuse(
                    format!("{path}.items"),
                    "must be a single schema when x-kubernetes-list-type is map",
                );
            };
            if text(items, "type") != Some("object") {
                return refuse(
                    format!("{path}.items.type"),
                    "must be object when x-kubernetes-list-type is map",
                );
            }
            let properties = items.get("properties").and_then(Value::as_object);
            let required: Vec<&str> = items
                .get("required")
                .and_then(Value::as_array)
                .map(|names| names.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let mut seen = BTreeSet::new();
            for key in &keys {
                if !seen.insert(*key) {
                    return refuse(
                        format!("{path}.x-kubernetes-list-map-keys"),
                        format!("lists {key:?} twice"),
                    );
                }
                let at = property_path(&format!("{path}.items"), key);
                let Some(property) = properties
                    .and_then(|properties| properties.get(*key))
                    .and_then(Value::as_object)
                else {
                    return refuse(
                        format!("{path}.x-kubernetes-list-map-keys"),
                        format!("names {key:?}, which is not a property of the items"),
                    );
                };
                if matches!(text(property, "type"), Some("array" | "object")) {
                    return refuse(
                        format!("{at}.type"),
                        "must be a scalar type: the property is a key of x-kubernetes-list-map-keys",
                    );
                }
                if !required.contains(key) && !property.contains_key("default") {
                    return refuse(
                        at,
                        "is a key of x-kubernetes-list-map-keys, so it must be required or have a default",
                    );
                }
                if flag(property, "nullable") {
                    return refuse(
                        format!("{at}.nullable"),
                        "cannot be true: the property is a key of x-kubernetes-list-map-keys",
                    );
                }
            }
        }
        Some("set") if own_type == "array" => {
            if let Some(items) = items {
                match text(items, "type") {
                    Some("array")
                        if text(items, "x-kubernetes-list-type")
                            .is_some_and(|inner| inner != "atomic") =>
                    {
                        return refuse(
                            format!("{path}.items.x-kubernetes-list-type"),
                            "must be atomic for the items of a list with x-kubernetes-list-type: set",
                        );
                    }
                    Some("object") if text(items, "x-kubernetes-map-type") != Some("atomic") => {
                        return refuse(
                            format!("{path}.items.x-kubernetes-map-type"),
                            "must be atomic for the items of a list with x-kubernetes-list-type: set",
                        );
                    }
                    _ => {}
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// The shape of the `x-kubernetes-validations` entries (their CEL is not compiled here).
fn validation_rules(map: &Map<String, Value>, path: &str) -> Checked {
    const REASONS: [&str; 4] = [
        "FieldValueRequired",
        "FieldValueForbidden",
        "FieldValueInvalid",
        "FieldValueDuplicate",
    ];
    let has_line_break = |text: &str| text.contains(['\n', '\r']);
    let Some(Value::Array(rules)) = map.get("x-kubernetes-validations") else {
        return Ok(());
    };
    for (index, rule) in rules.iter().enumerate() {
        let Value::Object(rule) = rule else {
            continue;
        };
        let at = format!("{path}.x-kubernetes-validations[{index}]");
        let expression = text(rule, "rule").unwrap_or_default().trim();
        let raw_message = text(rule, "message").unwrap_or_default();
        let message = raw_message.trim();
        if expression.is_empty() {
            return refuse(format!("{at}.rule"), "is required");
        }
        if !raw_message.is_empty() && message.is_empty() {
            return refuse(format!("{at}.message"), "must not be blank when set");
        }
        if has_line_break(message) {
            return refuse(format!("{at}.message"), "must not contain line breaks");
        }
        if has_line_break(expression) && message.is_empty() {
            return refuse(
                format!("{at}.message"),
                "is required when the rule has line breaks",
            );
        }
        let message_expression = text(rule, "messageExpression").unwrap_or_default();
        if !message_expression.is_empty() && message_expression.trim().is_empty() {
            return refuse(
                format!("{at}.messageExpression"),
                "must not be blank when set",
            );
        }
        if let Some(reason) = text(rule, "reason")
            && !REASONS.contains(&reason)
        {
            return refuse(
                format!("{at}.reason"),
                format!("{reason:?} is not one of {}", REASONS.join(", ")),
            );
        }
        let field_path = text(rule, "fieldPath").unwrap_or_default();
        if !field_path.is_empty() && field_path.trim().is_empty() {
            return refuse(format!("{at}.fieldPath"), "must not be blank when set");
        }
        if has_line_break(field_path) {
            return refuse(format!("{at}.fieldPath"), "must not contain line breaks");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::crd::validation::testing::*;

    #[test]
    fn non_structural_schemas_are_refused_naming_the_node_and_what_is_missing() {
        let no_type = "has no type (apiextensions.k8s.io/v1 requires structural schemas: give it a type, or x-kubernetes-preserve-unknown-fields: true if it takes any value)";
        let junctor = "is not allowed inside allOf, anyOf, oneOf or not in apiextensions.k8s.io/v1";
        let spec = format!("{ROOT}.properties.spec");
        let cases = [
            (json!({"type": "object", "properties": {"size": {"minimum": 1}}}), format!("{spec}.properties.size"), no_type.to_owned()),
            (json!({"properties": {"size": {"type": "integer"}}}), spec.clone(), "has no type (apiextensions.k8s.io/v1 requires structural schemas; here type: object)".to_owned()),
            (json!({"type": "object", "properties": {"hosts": {"items": {"type": "string"}}}}), format!("{spec}.properties.hosts"), "has no type (apiextensions.k8s.io/v1 requires structural schemas; here type: array)".to_owned()),
            (json!({"type": "object", "properties": {"port": {"anyOf": [{"type": "integer"}, {"type": "string"}]}}}), format!("{spec}.properties.port"), "has no type (apiextensions.k8s.io/v1 requires structural schemas: for an integer or a string, set x-kubernetes-int-or-string: true)".to_owned()),
            (json!({"type": "object", "properties": {"value": {"anyOf": [{"type": "string"}, {"type": "boolean"}]}}}), format!("{spec}.properties.value.anyOf[0].type"), format!("{junctor} (the type belongs on the field itself; only the int-or-string pattern anyOf: [{{type: integer}}, {{type: string}}] may have types)")),
            (json!({"type": "object", "properties": {"a": {"type": "string"}}, "oneOf": [{"type": "object", "required": ["a"]}]}), format!("{spec}.oneOf[0].type"), format!("{junctor} (the type belongs on the field itself)")),
            (json!({"type": "object", "properties": {"port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "string"}, {"type": "integer"}]}}}), format!("{spec}.properties.port.anyOf[0].type"), format!("{junctor}, except in the int-or-string pattern anyOf: [{{type: integer}}, {{type: string}}], in that order")),
            (json!({"type": "object", "properties": {"a": {"type": "string"}}, "anyOf": [{"description": "Only a.", "required": ["a"]}]}), format!("{spec}.anyOf[0].description"), format!("{junctor} (documentation belongs on the field itself)")),
            (json!({"type": "object", "properties": {"zones": {"type": "array", "uniqueItems": true, "items": {"type": "string"}}}}), format!("{spec}.properties.zones.uniqueItems"), "is true, which apiextensions.k8s.io/v1 forbids (checking it is quadratic)".to_owned()),
            (json!({"type": "object", "properties": {"a": {"$ref": "#/definitions/a"}}}), format!("{spec}.properties.a"), "is not a structural schema as apiextensions.k8s.io/v1 requires: $ref is not supported in apiextensions.k8s.io/v1 schemas".to_owned()),
            (json!({"type": "object", "properties": {"a": {"type": "object", "patternProperties": {"^x": {"type": "string"}}}}}), format!("{spec}.properties.a"), "is not a structural schema as apiextensions.k8s.io/v1 requires: patternProperties is not supported in apiextensions.k8s.io/v1 schemas".to_owned()),
            (json!({"type": "object", "x-kubernetes-preserve-unknown-fields": false}), format!("{spec}.x-kubernetes-preserve-unknown-fields"), "is false; apiextensions.k8s.io/v1 allows only true or leaving it out".to_owned()),
            (json!({"type": "object", "properties": {"args": {"type": "array"}}}), format!("{spec}.properties.args"), "is an array without items (apiextensions.k8s.io/v1 requires an items schema; items: {x-kubernetes-preserve-unknown-fields: true} takes anything)".to_owned()),
            (json!({"type": "object", "properties": {"a": {"type": "null"}}}), format!("{spec}.properties.a"), "is not a structural schema as apiextensions.k8s.io/v1 requires: type \"null\" is not one of array, boolean, integer, number, object, string (use nullable: true for null)".to_owned()),
            (json!({"type": "object", "properties": {"a": {"type": "string", "x-kubernetes-int-or-string": true, "x-kubernetes-preserve-unknown-fields": true}}}), format!("{spec}.properties.a.x-kubernetes-preserve-unknown-fields"), "must not be true together with x-kubernetes-int-or-string: true".to_owned()),
            (json!({"type": "object", "properties": {"a": {"type": "object", "x-kubernetes-embedded-resource": true}}}), format!("{spec}.properties.a.properties"), "must not be empty for an x-kubernetes-embedded-resource without x-kubernetes-preserve-unknown-fields: true".to_owned()),
            (json!({"type": "object", "x-kubernetes-list-type": "set"}), format!("{spec}.type"), "is \"object\"; it must be array when x-kubernetes-list-type is set".to_owned()),
            (json!({"type": "object", "properties": {"ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"], "items": {"type": "object", "properties": {"name": {"type": "string"}}}}}}), format!("{spec}.properties.ports.items.properties.name"), "is a key of x-kubernetes-list-map-keys, so it must be required or have a default".to_owned()),
            (json!({"type": "object", "properties": {"tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "object"}}}}), format!("{spec}.properties.tags.items.x-kubernetes-map-type"), "must be atomic for the items of a list with x-kubernetes-list-type: set".to_owned()),
            (json!({"type": "object", "x-kubernetes-map-type": "shallow"}), format!("{spec}.x-kubernetes-map-type"), "\"shallow\" is not one of atomic and granular".to_owned()),
            (json!({"type": "object", "x-kubernetes-validations": [{"rule": " "}]}), format!("{spec}.x-kubernetes-validations[0].rule"), "is required".to_owned()),
            (json!({"type": "object", "x-kubernetes-validations": [{"rule": "self.a ||\nself.b"}]}), format!("{spec}.x-kubernetes-validations[0].message"), "is required when the rule has line breaks".to_owned()),
            (json!({"type": "object", "x-kubernetes-validations": [{"rule": "true", "reason": "Bad"}]}), format!("{spec}.x-kubernetes-validations[0].reason"), "\"Bad\" is not one of FieldValueRequired, FieldValueForbidden, FieldValueInvalid, FieldValueDuplicate".to_owned()),
        ];
        for (schema, field, message) in cases {
            let crd = with_spec_schema(schema.clone());
            assert_eq!(refusal(&crd), (field, message), "{schema}");
        }
    }

    #[test]
    fn the_schema_root_and_root_metadata_follow_v1s_rules() {
        let mut crd = widget();
        remove(&mut crd, "/spec/versions/0/schema/openAPIV3Schema/type");
        assert_eq!(
            refusal(&crd),
            (ROOT.to_owned(), "has no type (apiextensions.k8s.io/v1 requires structural schemas; here type: object)".to_owned())
        );
        let mut crd = widget();
        crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["metadata"] =
            json!({"type": "object", "description": "Standard object metadata."});
        assert_eq!(
            refusal(&crd),
            (format!("{ROOT}.properties.metadata.description"), "is not allowed: the schema of metadata at the root may only restrict name and generateName in apiextensions.k8s.io/v1".to_owned())
        );
        let mut crd = widget();
        crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["metadata"] =
            json!({"type": "object", "properties": {"labels": {"type": "object"}}});
        assert_eq!(refusal(&crd).0, format!("{ROOT}.properties.metadata"));
        let mut crd = widget();
        crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["kind"] =
            json!({"type": "integer"});
        assert_eq!(refusal(&crd).0, format!("{ROOT}.properties.kind"));
        // With the status subresource, the root may not carry other value validations.
        let mut crd = widget();
        crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["anyOf"] =
            json!([{"required": ["spec"]}, {"required": ["status"]}]);
        assert_eq!(
            refusal(&crd),
            (format!("{ROOT}.anyOf"), "is not allowed at the root of the schema of a version with the status subresource (allowed there: description, type, format, title, maximum, exclusiveMaximum, minimum, exclusiveMinimum, maxLength, minLength, pattern, maxItems, minItems, uniqueItems, multipleOf, required, items, properties, externalDocs, example, x-kubernetes-preserve-unknown-fields, x-kubernetes-validations)".to_owned())
        );
        remove(&mut crd, "/spec/versions/0/subresources");
        run(&crd).unwrap();
    }

    #[test]
    fn what_the_api_server_reads_as_absent_or_allows_is_not_refused() {
        for schema in [
            // No type needed where unknown fields are kept, whatever the structure says.
            json!({"x-kubernetes-preserve-unknown-fields": true, "properties": {"a": {"type": "string"}}}),
            json!({"x-kubernetes-preserve-unknown-fields": true, "items": {"type": "string"}}),
            json!({"x-kubernetes-preserve-unknown-fields": true, "properties": {"a": {"type": "string"}}, "items": {"type": "string"}}),
            json!({"x-kubernetes-preserve-unknown-fields": true, "anyOf": [{"type": "integer"}, {"type": "string"}]}),
            json!({"x-kubernetes-int-or-string": true}),
            // Zero values are absent values to Go.
            json!({"type": "object", "description": "", "nullable": false, "uniqueItems": false, "x-kubernetes-embedded-resource": false, "required": [], "allOf": [], "properties": {}, "patternProperties": {}, "definitions": {}, "id": "", "$schema": ""}),
            json!({"type": "object", "properties": {"a": {"type": "string"}}, "allOf": [{"description": "", "title": "", "nullable": false, "externalDocs": {"url": "https://example.com"}, "required": ["a"]}]}),
            json!({"type": "string", "anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": true}),
        ] {
            run(&with_spec_schema(schema.clone())).unwrap_or_else(|err| panic!("{schema}: {err}"));
        }
        let mut crd = widget();
        crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"] =
            json!({"x-kubernetes-preserve-unknown-fields": true});
        run(&crd).unwrap();
    }
}
