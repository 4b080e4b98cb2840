//! Rule 1 of [`super`]: only fields of `apiextensions.k8s.io/v1`, with values of their types.
//! The typed round trip finds fields v1 does not have; decoding one field at a time finds
//! the value of the wrong type, since serde's message names no path.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as api;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::{Checked, EMBEDDED, INT_OR_STRING, PRESERVE, Problem, V1_NAME, entry_path, join};

/// The v1 types of a CRD, to decode a part of it and to know where free-form values and
/// maps of schemas are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Shape {
    Crd,
    Spec,
    Names,
    Conversion,
    WebhookConversion,
    ClientConfig,
    Service,
    Version,
    Validation,
    Subresources,
    Scale,
    StatusSubresource,
    Column,
    SelectableField,
    Schema,
    Rule,
    ExternalDocs,
}

/// How the value of a field is read.
#[derive(Debug, Clone, Copy)]
enum Item {
    /// A scalar, a list of scalars, or a free-form value: not looked into.
    Leaf,
    Of(Shape),
    /// `additionalProperties`, `additionalItems`: a schema or a boolean.
    SchemaOrBool,
    /// `items`: a schema or a list of schemas.
    SchemaOrList,
    /// A value of `dependencies`: a schema or a list of field names.
    SchemaOrStrings,
}

/// What a field of a shape holds.
#[derive(Debug, Clone, Copy)]
enum Child {
    /// Not compared (`metadata`, typed by the manifest reader already).
    Skip,
    One(Item),
    List(Shape),
    /// A map whose keys are names (`properties`): each value is read as the item.
    Map(Item),
}

impl Shape {
    /// The v1 field names, for "did you mean".
    fn fields(self) -> &'static [&'static str] {
        match self {
            Self::Crd => &["apiVersion", "kind", "metadata", "spec", "status"],
            Self::Spec => &[
                "conversion",
                "group",
                "names",
                "preserveUnknownFields",
                "scope",
                "versions",
            ],
            Self::Names => &[
                "categories",
                "kind",
                "listKind",
                "plural",
                "shortNames",
                "singular",
            ],
            Self::Conversion => &["strategy", "webhook"],
            Self::WebhookConversion => &["clientConfig", "conversionReviewVersions"],
            Self::ClientConfig => &["caBundle", "service", "url"],
            Self::Service => &["name", "namespace", "path", "port"],
            Self::Version => &[
                "additionalPrinterColumns",
                "deprecated",
                "deprecationWarning",
                "name",
                "schema",
                "selectableFields",
                "served",
                "storage",
                "subresources",
            ],
            Self::Validation => &["openAPIV3Schema"],
            Self::Subresources => &["scale", "status"],
            Self::Scale => &[
                "labelSelectorPath",
                "specReplicasPath",
                "statusReplicasPath",
            ],
            Self::StatusSubresource => &[],
            Self::Column => &[
                "description",
                "format",
                "jsonPath",
                "name",
                "priority",
                "type",
            ],
            Self::SelectableField => &["jsonPath"],
            Self::Rule => &[
                "fieldPath",
                "message",
                "messageExpression",
                "optionalOldSelf",
                "reason",
                "rule",
            ],
            Self::ExternalDocs => &["description", "url"],
            Self::Schema => &[
                "$ref",
                "$schema",
                "additionalItems",
                "additionalProperties",
                "allOf",
                "anyOf",
                "default",
                "definitions",
                "dependencies",
                "description",
                "enum",
                "example",
                "exclusiveMaximum",
                "exclusiveMinimum",
                "externalDocs",
                "format",
                "id",
                "items",
                "maxItems",
                "maxLength",
                "maxProperties",
                "maximum",
                "minItems",
                "minLength",
                "minProperties",
                "minimum",
                "multipleOf",
                "not",
                "nullable",
                "oneOf",
                "pattern",
                "patternProperties",
                "properties",
                "required",
                "title",
                "type",
                "uniqueItems",
                EMBEDDED,
                INT_OR_STRING,
                "x-kubernetes-list-map-keys",
                "x-kubernetes-list-type",
                "x-kubernetes-map-type",
                PRESERVE,
                "x-kubernetes-validations",
            ],
        }
    }

    /// What the field `key` holds.
    fn child(self, key: &str) -> Child {
        match (self, key) {
            (Self::Crd, "metadata") => Child::Skip,
            (Self::Crd, "spec") => Child::One(Item::Of(Self::Spec)),
            (Self::Spec, "names") => Child::One(Item::Of(Self::Names)),
            (Self::Spec, "conversion") => Child::One(Item::Of(Self::Conversion)),
            (Self::Spec, "versions") => Child::List(Self::Version),
            (Self::Conversion, "webhook") => Child::One(Item::Of(Self::WebhookConversion)),
            (Self::WebhookConversion, "clientConfig") => Child::One(Item::Of(Self::ClientConfig)),
            (Self::ClientConfig, "service") => Child::One(Item::Of(Self::Service)),
            (Self::Version, "schema") => Child::One(Item::Of(Self::Validation)),
            (Self::Version, "subresources") => Child::One(Item::Of(Self::Subresources)),
            (Self::Version, "additionalPrinterColumns") => Child::List(Self::Column),
            (Self::Version, "selectableFields") => Child::List(Self::SelectableField),
            (Self::Validation, "openAPIV3Schema") => Child::One(Item::Of(Self::Schema)),
            (Self::Subresources, "scale") => Child::One(Item::Of(Self::Scale)),
            (Self::Subresources, "status") => Child::One(Item::Of(Self::StatusSubresource)),
            (Self::Schema, "properties" | "patternProperties" | "definitions") => {
                Child::Map(Item::Of(Self::Schema))
            }
            (Self::Schema, "dependencies") => Child::Map(Item::SchemaOrStrings),
            (Self::Schema, "items") => Child::One(Item::SchemaOrList),
            (Self::Schema, "additionalProperties" | "additionalItems") => {
                Child::One(Item::SchemaOrBool)
            }
            (Self::Schema, "allOf" | "anyOf" | "oneOf") => Child::List(Self::Schema),
            (Self::Schema, "not") => Child::One(Item::Of(Self::Schema)),
            (Self::Schema, "externalDocs") => Child::One(Item::Of(Self::ExternalDocs)),
            (Self::Schema, "x-kubernetes-validations") => Child::List(Self::Rule),
            // Everything else, `default`, `example` and `enum` included, is not looked into.
            _ => Child::One(Item::Leaf),
        }
    }

    /// Decodes `value` as this shape's v1 type.
    fn decode(self, value: &Value) -> Result<(), String> {
        match self {
            Self::Crd => read::<api::CustomResourceDefinition>(value),
            Self::Spec => read::<api::CustomResourceDefinitionSpec>(value),
            Self::Names => read::<api::CustomResourceDefinitionNames>(value),
            Self::Conversion => read::<api::CustomResourceConversion>(value),
            Self::WebhookConversion => read::<api::WebhookConversion>(value),
            Self::ClientConfig => read::<api::WebhookClientConfig>(value),
            Self::Service => read::<api::ServiceReference>(value),
            Self::Version => read::<api::CustomResourceDefinitionVersion>(value),
            Self::Validation => read::<api::CustomResourceValidation>(value),
            Self::Subresources => read::<api::CustomResourceSubresources>(value),
            Self::Scale => read::<api::CustomResourceSubresourceScale>(value),
            Self::StatusSubresource => read::<api::CustomResourceSubresourceStatus>(value),
            Self::Column => read::<api::CustomResourceColumnDefinition>(value),
            Self::SelectableField => read::<api::SelectableField>(value),
            Self::Schema => read::<api::JSONSchemaProps>(value),
            Self::Rule => read::<api::ValidationRule>(value),
            Self::ExternalDocs => read::<api::ExternalDocumentation>(value),
        }
    }
}

impl Item {
    fn decode(self, value: &Value) -> Result<(), String> {
        match self {
            Self::Leaf => Ok(()),
            Self::Of(shape) => shape.decode(value),
            Self::SchemaOrBool => read::<api::JSONSchemaPropsOrBool>(value),
            Self::SchemaOrList => read::<api::JSONSchemaPropsOrArray>(value),
            Self::SchemaOrStrings => read::<api::JSONSchemaPropsOrStringArray>(value),
        }
    }

    /// The shape of `value` read as this item, when it is a mapping worth looking into.
    fn shape_of(self, value: &Value) -> Option<Shape> {
        match (self, value) {
            (Self::Of(shape), Value::Object(_)) => Some(shape),
            (Self::SchemaOrBool | Self::SchemaOrList | Self::SchemaOrStrings, Value::Object(_)) => {
                Some(Shape::Schema)
            }
            _ => None,
        }
    }
}

fn read<T: DeserializeOwned>(value: &Value) -> Result<(), String> {
    T::deserialize(value)
        .map(drop)
        .map_err(|err| err.to_string())
}

/// The first field of `input` (a value of `shape`) that is not null and that `output`, its
/// typed round trip, lost.
pub(super) fn unknown_fields(shape: Shape, input: &Value, output: &Value, path: &str) -> Checked {
    let (Value::Object(input), Value::Object(output)) = (input, output) else {
        return Ok(());
    };
    for (key, value) in input {
        let child = shape.child(key);
        if value.is_null() || matches!(child, Child::Skip) {
            continue;
        }
        let here = join(path, key);
        let Some(out) = output.get(key) else {
            return Err(not_a_field(shape, key, here));
        };
        match child {
            Child::Skip => {}
            Child::One(item) => unknown_in_item(item, value, out, &here)?,
            Child::List(shape) => {
                if let (Value::Array(values), Value::Array(outs)) = (value, out) {
                    for (index, (value, out)) in values.iter().zip(outs).enumerate() {
                        unknown_fields(shape, value, out, &format!("{here}[{index}]"))?;
                    }
                }
            }
            Child::Map(item) => {
                if let (Value::Object(values), Value::Object(outs)) = (value, out) {
                    for (name, value) in values {
                        if let Some(out) = outs.get(name) {
                            unknown_in_item(item, value, out, &entry_path(&here, name))?;
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

fn unknown_in_item(item: Item, value: &Value, out: &Value, path: &str) -> Checked {
    if let (Item::SchemaOrList, Value::Array(values), Value::Array(outs)) = (item, value, out) {
        for (index, (value, out)) in values.iter().zip(outs).enumerate() {
            unknown_fields(Shape::Schema, value, out, &format!("{path}[{index}]"))?;
        }
        return Ok(());
    }
    match item.shape_of(value) {
        Some(shape) => unknown_fields(shape, value, out, path),
        None => Ok(()),
    }
}

fn not_a_field(shape: Shape, key: &str, path: String) -> Problem {
    let hint = match (shape, key) {
        (Shape::Column, "JSONPath") => Some("did you mean jsonPath? it was renamed in v1".to_owned()),
        (Shape::Spec, "validation") => Some(
            "v1 has no top-level schema: each entry of spec.versions has its own schema.openAPIV3Schema"
                .to_owned(),
        ),
        (Shape::Spec, "version") => Some("v1 lists versions only in spec.versions".to_owned()),
        (Shape::Spec, "subresources" | "additionalPrinterColumns") => {
            Some(format!("v1 sets {key} on each entry of spec.versions"))
        }
        (Shape::Conversion, "webhookClientConfig") => {
            Some("in v1 it is spec.conversion.webhook.clientConfig".to_owned())
        }
        (Shape::Conversion, "conversionReviewVersions") => {
            Some("in v1 it is spec.conversion.webhook.conversionReviewVersions".to_owned())
        }
        _ => closest(shape.fields(), key).map(|field| format!("did you mean {field}?")),
    };
    let message = match hint {
        Some(hint) => format!("is not a field of {V1_NAME} ({hint})"),
        None => format!("is not a field of {V1_NAME}"),
    };
    Problem::new(path, message)
}

/// The field of `fields` that `key` is most likely a misspelling of: the same but for case,
/// or one or two edits away (one for short names).
fn closest<'a>(fields: &[&'a str], key: &str) -> Option<&'a str> {
    if let Some(field) = fields.iter().find(|f| f.eq_ignore_ascii_case(key)) {
        return Some(field);
    }
    let limit = if key.chars().count() <= 4 { 1 } else { 2 };
    fields
        .iter()
        .map(|field| (edit_distance(field, key), *field))
        .filter(|(distance, _)| *distance <= limit)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, field)| field)
}

/// Edits (insertion, deletion, substitution, swap of neighbours) from `a` to `b`.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut rows = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in rows[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (rows[i - 1][j] + 1)
                .min(rows[i][j - 1] + 1)
                .min(rows[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = best;
        }
    }
    rows[a.len()][b.len()]
}

/// Why `value` (of `shape`, at `path`) does not decode: the deepest field whose value alone
/// fails to decode, found by decoding each field on its own (serde's message names no path).
pub(super) fn locate(shape: Shape, value: &Value, path: &str, error: String) -> Problem {
    if let Value::Object(map) = value {
        for (key, child) in map {
            if child.is_null() {
                continue;
            }
            let mut single = Map::new();
            if shape == Shape::Crd {
                // The typed CRD checks its apiVersion and kind.
                for meta in ["apiVersion", "kind"] {
                    if let Some(value) = map.get(meta) {
                        single.insert(meta.to_owned(), value.clone());
                    }
                }
            }
            single.insert(key.clone(), child.clone());
            let Err(err) = shape.decode(&Value::Object(single)) else {
                continue;
            };
            let here = join(path, key);
            return match (shape.child(key), child) {
                (Child::List(shape), Value::Array(items)) => {
                    locate_in_list(shape, items, &here, err)
                }
                (Child::One(Item::SchemaOrList), Value::Array(items)) => {
                    locate_in_list(Shape::Schema, items, &here, err)
                }
                (Child::One(item), _) => match item.shape_of(child) {
                    Some(shape) => locate(shape, child, &here, err),
                    None => wrong_type(&here, err),
                },
                (Child::Map(item), Value::Object(entries)) => entries
                    .iter()
                    .find_map(|(name, entry)| {
                        let entry_err = item.decode(entry).err()?;
                        let at = entry_path(&here, name);
                        Some(match item.shape_of(entry) {
                            Some(shape) => locate(shape, entry, &at, entry_err),
                            None => wrong_type(&at, entry_err),
                        })
                    })
                    .unwrap_or_else(|| wrong_type(&here, err)),
                _ => wrong_type(&here, err),
            };
        }
    }
    wrong_type(if path.is_empty() { "the CRD" } else { path }, error)
}

fn locate_in_list(shape: Shape, items: &[Value], path: &str, error: String) -> Problem {
    items
        .iter()
        .enumerate()
        .find_map(|(index, item)| {
            let err = shape.decode(item).err()?;
            Some(locate(shape, item, &format!("{path}[{index}]"), err))
        })
        .unwrap_or_else(|| wrong_type(path, error))
}

fn wrong_type(path: &str, error: String) -> Problem {
    Problem::new(
        path,
        format!("cannot be read as {V1_NAME} (a value of the wrong type): {error}"),
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::crd::validation::testing::*;

    #[test]
    fn a_v1beta1_field_name_is_refused_naming_the_file_crd_field_and_its_v1_name() {
        let mut crd = widget();
        let column = at(&mut crd, "/spec/versions/0/additionalPrinterColumns/0");
        column["JSONPath"] = column.as_object_mut().unwrap().remove("jsonPath").unwrap();
        assert_eq!(
            run(&crd).unwrap_err().to_string(),
            "CustomResourceDefinition \"widgets.example.com\" in manifests/widgets.crd.yaml cannot be installed: spec.versions[0].additionalPrinterColumns[0].JSONPath is not a field of apiextensions.k8s.io/v1 (did you mean jsonPath? it was renamed in v1); ask the bundle's author to fix the CRD"
        );

        let mut crd = widget();
        crd["spec"]["validation"] = json!({"openAPIV3Schema": {"type": "object"}});
        assert_eq!(
            refusal(&crd),
            (
                "spec.validation".to_owned(),
                "is not a field of apiextensions.k8s.io/v1 (v1 has no top-level schema: each entry of spec.versions has its own schema.openAPIV3Schema)".to_owned()
            )
        );
        let mut crd = widget();
        crd["spec"]["conversion"] =
            json!({"strategy": "None", "webhookClientConfig": {"url": "https://x"}});
        assert_eq!(
            refusal(&crd),
            (
                "spec.conversion.webhookClientConfig".to_owned(),
                "is not a field of apiextensions.k8s.io/v1 (in v1 it is spec.conversion.webhook.clientConfig)".to_owned()
            )
        );
    }

    #[test]
    fn unknown_fields_anywhere_in_a_schema_are_refused_with_a_suggestion() {
        let crd = with_spec_schema(json!({"type": "object", "descripton": "Typo."}));
        assert_eq!(
            refusal(&crd),
            (
                format!("{ROOT}.properties.spec.descripton"),
                "is not a field of apiextensions.k8s.io/v1 (did you mean description?)".to_owned()
            )
        );
        let crd = with_spec_schema(json!({"type": "object", "properties": {
            "a.b": {"type": "array", "items": {"type": "string", "x-kubernetes-foo": true}},
        }}));
        assert_eq!(
            refusal(&crd),
            (
                format!("{ROOT}.properties.spec.properties[a.b].items.x-kubernetes-foo"),
                "is not a field of apiextensions.k8s.io/v1".to_owned()
            )
        );
        let crd = with_spec_schema(
            json!({"type": "object", "properties": {"a": {"type": "string"}},
            "oneOf": [{"required": ["a"]}, {"properties": {"a": {"Pattern": "^x"}}}]}),
        );
        assert_eq!(
            refusal(&crd),
            (
                format!("{ROOT}.properties.spec.oneOf[1].properties.a.Pattern"),
                "is not a field of apiextensions.k8s.io/v1 (did you mean pattern?)".to_owned()
            )
        );
        let mut crd = widget();
        crd["spec"]["versions"][0]["servd"] = json!(true);
        assert_eq!(
            refusal(&crd),
            (
                "spec.versions[0].servd".to_owned(),
                "is not a field of apiextensions.k8s.io/v1 (did you mean served?)".to_owned()
            )
        );
    }

    #[test]
    fn metadata_status_and_null_fields_are_not_compared() {
        let mut crd = widget();
        crd["metadata"]["labels"] = json!({"app": "x"});
        crd["status"] = json!({"acceptedNames": {"kind": "", "plural": "", "extra": 1}, "conditions": null, "storedVersions": "v1"});
        crd["spec"]["versions"][0]["deprecated"] = Value::Null;
        crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["descripton"] = Value::Null;
        run(&crd).unwrap();
    }

    #[test]
    fn a_value_of_the_wrong_type_is_refused_naming_its_field() {
        let mut crd = widget();
        crd["spec"]["versions"][0]["served"] = json!("yes");
        assert_eq!(
            refusal(&crd),
            (
                "spec.versions[0].served".to_owned(),
                "cannot be read as apiextensions.k8s.io/v1 (a value of the wrong type): invalid type: string \"yes\", expected a boolean".to_owned()
            )
        );
        let crd = with_spec_schema(json!({"type": "object", "properties": {
            "name": {"type": "string", "maxLength": "5"},
        }}));
        let (field, message) = refusal(&crd);
        assert_eq!(
            field,
            format!("{ROOT}.properties.spec.properties.name.maxLength")
        );
        assert!(message.starts_with("cannot be read as apiextensions.k8s.io/v1 (a value of the wrong type): invalid type: string \"5\""), "{message}");
        let mut crd = widget();
        crd["spec"]["names"]["shortNames"] = json!("wd");
        assert_eq!(refusal(&crd).0, "spec.names.shortNames");
    }

    #[test]
    fn edit_distance_counts_swaps_as_one_edit() {
        assert_eq!(edit_distance("type", "tpye"), 1);
        assert_eq!(edit_distance("description", "descripton"), 1);
        assert_eq!(closest(Shape::Schema.fields(), "Type"), Some("type"));
        assert_eq!(closest(Shape::Schema.fields(), "x-kubernetes-foo"), None);
    }
}
