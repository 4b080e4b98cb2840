//! Checking every CustomResourceDefinition the provisioner emits (shipped as
//! `apiextensions.k8s.io/v1`, or converted from v1beta1 by [`crate::crd`]) against the rules
//! the API server applies when a v1 CRD is created, so that a CRD it would refuse is refused
//! by `render`, naming the bundle file, the CRD and the field, instead of failing the install.
//!
//! The rules are the API server's (`k8s.io/apiextensions-apiserver`: the CRD validation of
//! `pkg/apis/apiextensions/validation` and the structural schema rules of
//! `pkg/apiserver/schema`). They are checked in this order, and the first problem is reported:
//!
//! 1. **Fields.** The CRD is decoded as the typed v1 CRD and encoded again: a field of the
//!    input the round trip lost is not a field of v1 (a v1beta1 name such as `JSONPath`, a
//!    typo such as `descripton` inside a schema). `metadata` and `status` (the API server's to
//!    write) are not compared, and free-form values (`default`, `example`, `enum`) are never
//!    looked into. A value of the wrong type is refused naming its field.
//! 2. **The spec.** Group, names, scope, `metadata.name` = `<plural>.<group>`, the
//!    `api-approved.kubernetes.io` annotation of Kubernetes project groups, no
//!    `preserveUnknownFields: true`, at least one version, unique DNS-label version names,
//!    exactly one storage version, a schema for every version, printer columns, scale
//!    subresource paths, `deprecationWarning` only on deprecated versions, at most 8
//!    selectable fields, and the conversion settings (`None`, or `Webhook` with one of `url`
//!    and `service` and a recognised `conversionReviewVersions`).
//! 3. **Schemas.** v1 requires structural schemas and repairs nothing. Each version's schema
//!    goes through [`crate::structural::make_structural`] (adding nothing for unknown fields): a
//!    schema it refuses is refused, and so is one it has to change, naming the first node
//!    changed. Its changes the API server does not ask for are not counted: a node with
//!    `x-kubernetes-preserve-unknown-fields: true` needs no `type` (so an untyped one with
//!    `properties` or `items`, or the int-or-string `anyOf` without
//!    `x-kubernetes-int-or-string`, is accepted), `externalDocs` is allowed inside
//!    `allOf`/`anyOf`/`oneOf`/`not`, and values Go reads as absent (`""`, `false`, `[]`,
//!    empty `patternProperties`/`definitions`) are absent. Then the rules `structural`
//!    does not cover: `x-kubernetes-int-or-string` with `x-kubernetes-preserve-unknown-fields`,
//!    embedded resources, `x-kubernetes-list-type` / `-list-map-keys` / `-map-type`, the
//!    shape of `x-kubernetes-validations` entries, and the fields allowed at the schema root
//!    of a version with the status subresource.
//!
//! Not checked (the API server may still refuse them): that CEL rules compile and stay within
//! their cost limits, that `pattern` is a valid RE2 expression, that `default`s are valid and
//! survive pruning, what selectable fields point at, and webhook URLs and paths beyond their
//! first character or scheme.
//!
//! Code: `validation/fields.rs` (1), `validation/spec.rs` (2),
//! `validation/schema.rs` (3).

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as api;
use kube::api::DynamicObject;
use serde::Deserialize;
use serde_json::Value;

use crate::crd::{API_APPROVED_ANNOTATION, V1};
use crate::error::ConvertError;

mod fields;
mod schema;
mod spec;

const PRESERVE: &str = "x-kubernetes-preserve-unknown-fields";
const INT_OR_STRING: &str = "x-kubernetes-int-or-string";
const EMBEDDED: &str = "x-kubernetes-embedded-resource";
const V1_NAME: &str = "apiextensions.k8s.io/v1";

/// A field the API server would refuse, and why (the rest of a sentence starting with it).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Problem {
    field: String,
    message: String,
}

impl Problem {
    fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
        }
    }
}

type Checked = Result<(), Problem>;

fn refuse(field: impl Into<String>, message: impl Into<String>) -> Checked {
    Err(Problem::new(field, message))
}

/// Checks `crd` against the API server's rules for `apiextensions.k8s.io/v1` CRDs (see the
/// module documentation); `file` is where it is in the bundle, for the message. Objects of
/// another apiVersion are left to the API server.
pub fn check(file: &str, crd: &DynamicObject) -> Result<(), ConvertError> {
    let is_v1 = crd
        .types
        .as_ref()
        .is_some_and(|types| types.api_version == V1);
    if !is_v1 {
        return Ok(());
    }
    check_object(crd).map_err(|problem| ConvertError::InvalidCrd {
        file: file.to_owned(),
        name: crd.metadata.name.clone().unwrap_or_default(),
        field: problem.field,
        message: problem.message,
    })
}

fn check_object(crd: &DynamicObject) -> Checked {
    let mut input = serde_json::to_value(crd)
        .map_err(|err| Problem::new("the CRD", format!("cannot be encoded: {err}")))?;
    // `status` is the API server's to write; what a bundle ships there is no reason to refuse.
    if let Value::Object(object) = &mut input {
        object.remove("status");
    }
    let typed = api::CustomResourceDefinition::deserialize(&input)
        .map_err(|err| fields::locate(fields::Shape::Crd, &input, "", err.to_string()))?;
    let round_trip = serde_json::to_value(&typed)
        .map_err(|err| Problem::new("the CRD", format!("cannot be encoded: {err}")))?;
    fields::unknown_fields(fields::Shape::Crd, &input, &round_trip, "")?;

    let approval = crd
        .metadata
        .annotations
        .as_ref()
        .and_then(|annotations| annotations.get(API_APPROVED_ANNOTATION))
        .map(String::as_str);
    let name = crd.metadata.name.as_deref().unwrap_or_default();
    spec::check_spec(name, approval, &typed.spec)?;

    for (index, version) in typed.spec.versions.iter().enumerate() {
        let Some(schema) = version
            .schema
            .as_ref()
            .and_then(|schema| schema.open_api_v3_schema.as_ref())
        else {
            continue;
        };
        let schema = serde_json::to_value(schema).map_err(|err| {
            Problem::new(
                format!("spec.versions[{index}].schema.openAPIV3Schema"),
                format!("cannot be encoded: {err}"),
            )
        })?;
        let status = version
            .subresources
            .as_ref()
            .is_some_and(|subresources| subresources.status.is_some());
        schema::check_schema(
            &schema,
            &format!("spec.versions[{index}].schema.openAPIV3Schema"),
            status,
        )?;
    }
    Ok(())
}

/// `path.key`, or `key` at the top.
fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

pub(super) use crate::structural::{entry_path, property_path};

/// What the tests of every rule share: a small valid CRD to break, and running the check.
#[cfg(test)]
mod testing {
    use super::*;

    pub(super) const FILE: &str = "manifests/widgets.crd.yaml";
    pub(super) const ROOT: &str = "spec.versions[0].schema.openAPIV3Schema";

    /// A small valid v1 CRD, to break one rule at a time.
    pub(super) fn widget() -> Value {
        serde_yaml_ng::from_str(
            r"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    additionalPrinterColumns:
    - {name: Phase, type: string, jsonPath: .status.phase}
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
          status:
            type: object
            properties:
              phase: {type: string}
",
        )
        .unwrap()
    }

    pub(super) fn run(crd: &Value) -> Result<(), ConvertError> {
        let object: DynamicObject = serde_json::from_value(crd.clone()).unwrap();
        check(FILE, &object)
    }

    /// The field and message of the refusal of `crd`.
    pub(super) fn refusal(crd: &Value) -> (String, String) {
        match run(crd) {
            Err(ConvertError::InvalidCrd { field, message, .. }) => (field, message),
            other => panic!("not refused as invalid: {other:?}"),
        }
    }

    pub(super) fn at<'a>(crd: &'a mut Value, pointer: &str) -> &'a mut Value {
        crd.pointer_mut(pointer)
            .unwrap_or_else(|| panic!("{pointer}"))
    }

    pub(super) fn remove(crd: &mut Value, pointer: &str) {
        let (parent, key) = pointer.rsplit_once('/').unwrap();
        at(crd, parent)
            .as_object_mut()
            .unwrap()
            .remove(key)
            .unwrap();
    }

    /// `widget()` with `schema` as `properties.spec` of its schema.
    pub(super) fn with_spec_schema(schema: Value) -> Value {
        let mut crd = widget();
        *at(
            &mut crd,
            "/spec/versions/0/schema/openAPIV3Schema/properties/spec",
        ) = schema;
        crd
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::testing::*;
    use super::*;

    const BIG: &str = r##"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.storage.k8s.io
  annotations:
    api-approved.kubernetes.io: https://github.com/kubernetes/enhancements/pull/1111
    controller-gen.kubebuilder.io/version: v0.16.0
spec:
  group: storage.k8s.io
  names:
    kind: Gadget
    listKind: GadgetList
    plural: gadgets
    singular: gadget
    shortNames: [gd]
    categories: [all, gizmos]
  scope: Cluster
  conversion:
    strategy: Webhook
    webhook:
      conversionReviewVersions: [v1, v1beta1]
      clientConfig:
        service: {namespace: system, name: webhook-service, path: /convert, port: 9443}
        caBundle: Cg==
  versions:
  - name: v1alpha1
    served: false
    storage: false
    deprecated: true
    deprecationWarning: storage.k8s.io/v1alpha1 Gadget is deprecated
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
  - name: v1
    served: true
    storage: true
    selectableFields:
    - jsonPath: .spec.mode
    additionalPrinterColumns:
    - {name: Mode, type: string, jsonPath: .spec.mode, priority: 0, description: The mode.}
    - {name: Size, type: integer, format: int32, jsonPath: .spec.size}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.size, statusReplicasPath: .status.size, labelSelectorPath: .status.selector}
    schema:
      openAPIV3Schema:
        description: A gadget.
        type: object
        required: [spec]
        x-kubernetes-validations:
        - rule: self.metadata.name.size() <= 63
          message: the name is too long
        properties:
          apiVersion: {type: string, description: APIVersion of the object.}
          kind: {type: string}
          metadata:
            type: object
            properties:
              name: {type: string, maxLength: 63}
          spec:
            type: object
            description: The desired state.
            x-kubernetes-validations:
            - rule: "!has(self.replicas) || self.replicas >= 0"
              messageExpression: "'replicas must not be negative, not ' + string(self.replicas)"
              reason: FieldValueInvalid
              fieldPath: .replicas
            - rule: |
                self.mode == 'a' ||
                self.mode == 'b'
              message: mode must be a or b
            - rule: self.size == oldSelf.size
              optionalOldSelf: true
              message: size is immutable
            properties:
              mode: {type: string, enum: [a, b], default: a}
              size: {type: integer, format: int32, minimum: 0, maximum: 100, default: 3}
              replicas: {type: integer, nullable: true}
              ratio: {type: number, multipleOf: 0.5, minimum: 0, exclusiveMinimum: true}
              maxUnavailable:
                x-kubernetes-int-or-string: true
                anyOf: [{type: integer}, {type: string}]
                pattern: ^[0-9]+%?$
              port:
                x-kubernetes-int-or-string: true
                allOf:
                - anyOf: [{type: integer}, {type: string}]
                - pattern: ^[a-z0-9]+$
              legacyPort:
                x-kubernetes-preserve-unknown-fields: true
                anyOf: [{type: integer}, {type: string}]
              config:
                description: Free-form configuration.
                x-kubernetes-preserve-unknown-fields: true
              raw:
                x-kubernetes-preserve-unknown-fields: true
                properties:
                  known: {type: string}
              rawList:
                x-kubernetes-preserve-unknown-fields: true
                items: {type: string}
              template:
                type: object
                x-kubernetes-embedded-resource: true
                x-kubernetes-preserve-unknown-fields: true
              pod:
                type: object
                x-kubernetes-embedded-resource: true
                properties:
                  apiVersion: {type: string}
                  kind: {type: string}
                  metadata: {type: object}
                  spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
              labels:
                type: object
                additionalProperties: {type: string}
                x-kubernetes-map-type: granular
              selector:
                type: object
                x-kubernetes-map-type: atomic
                properties:
                  matchLabels: {type: object, additionalProperties: {type: string}}
              tags:
                type: array
                items: {type: string}
                x-kubernetes-list-type: set
                maxItems: 16
              owners:
                type: array
                x-kubernetes-list-type: set
                items:
                  type: object
                  x-kubernetes-map-type: atomic
                  properties:
                    name: {type: string}
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name, protocol]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    protocol: {type: string, default: TCP}
                    port: {type: integer}
              matrix:
                type: array
                items:
                  type: array
                  items: {type: number}
              settings:
                type: object
                x-kubernetes-preserve-unknown-fields: true
                default:
                  descripton: not a typo, just data
                  x-kubernetes-foo: bar
                  nested: {JSONPath: .x, $ref: "#/definitions/a", type: null}
                example: {type: whatever, properties: 1, uniqueItems: true}
              choice:
                type: object
                enum:
                - {kind: small, properties: {a: 1}}
                - {kind: large, JSONPath: .y, anyOf: [{type: string}]}
                properties:
                  kind: {type: string}
              either:
                type: object
                properties:
                  a: {type: string}
                  b: {type: string}
                oneOf:
                - required: [a]
                - required: [b]
                  properties:
                    b: {minLength: 1}
                anyOf:
                - externalDocs: {url: "https://example.com/either"}
                  required: [a]
                - description: ""
                  nullable: false
                  required: [b]
                not:
                  required: [c]
              extra:
                type: object
                additionalProperties: true
              empty:
                type: object
                patternProperties: {}
                definitions: {}
                x-kubernetes-int-or-string: false
              docs:
                type: string
                title: Docs
                externalDocs: {description: More, url: "https://example.com/docs"}
                example: hello
          status:
            type: object
            properties:
              size: {type: integer}
              selector: {type: string}
              conditions:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [type]
                items:
                  type: object
                  required: [type, status]
                  properties:
                    type: {type: string}
                    status: {type: string, enum: ["True", "False", Unknown]}
                    lastTransitionTime: {type: string, format: date-time}
status:
  acceptedNames: {kind: Gadget, plural: gadgets, notAField: true}
  storedVersions: [v1]
"##;

    #[test]
    fn a_big_valid_crd_passes() {
        let crd: Value = serde_yaml_ng::from_str(BIG).unwrap();
        run(&crd).unwrap();
        run(&widget()).unwrap();
    }

    #[test]
    fn crds_of_other_api_versions_are_left_to_the_api_server() {
        let mut crd = widget();
        crd["apiVersion"] = json!("apiextensions.k8s.io/v1beta1");
        crd["spec"]["validation"] = json!({"openAPIV3Schema": {}});
        run(&crd).unwrap();
    }
}
