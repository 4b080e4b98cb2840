//! Converting `apiextensions.k8s.io/v1beta1` CustomResourceDefinitions (common in older
//! bundles, no longer served by the API server) to `apiextensions.k8s.io/v1`.
//!
//! Follows the API server's own v1beta1 -> v1 conversion: the top-level `version`,
//! `validation`, `subresources` and `additionalPrinterColumns` move into every entry of
//! `versions` (unless an entry has its own), `JSONPath` becomes `jsonPath`, the webhook
//! conversion settings move under `conversion.webhook`, and `preserveUnknownFields` (true by
//! default in v1beta1, not allowed in v1) becomes `x-kubernetes-preserve-unknown-fields` on
//! each version's schema root. A version without a schema gets one that keeps every field.
//!
//! v1 also requires what v1beta1 defaulted or did not check: a missing `scope` becomes
//! `Namespaced` (v1beta1's default), and a CRD of a group the Kubernetes project owns
//! (`*.k8s.io`, `*.kubernetes.io`) keeps its `api-approved.kubernetes.io` annotation or gets
//! [`UNAPPROVED`].
//!
//! v1 requires structural schemas: each version's schema is repaired as
//! [`crate::structural`] describes, or the CRD is refused with the schema path and rule.
//!
//! Every CRD [`to_v1`] returns, converted or shipped as v1, has passed
//! [`crate::crd::validation`]: the checks the API server makes when a v1 CRD is created.

use kube::api::DynamicObject;
use serde_json::{Map, Value, json};

pub mod validation;

use crate::error::ConvertError;
use crate::structural::{self, SchemaError};

/// Why a v1beta1 spec could not be converted.
enum SpecError {
    /// The spec's shape.
    Shape(String),
    /// A version's schema cannot be made structural.
    Schema {
        version: String,
        problem: SchemaError,
    },
}

/// The group/version of v1beta1 CRDs.
pub const V1BETA1: &str = "apiextensions.k8s.io/v1beta1";
/// The group/version of v1 CRDs.
pub const V1: &str = "apiextensions.k8s.io/v1";

/// The annotation v1 requires on CRDs of the Kubernetes project's groups.
pub const API_APPROVED_ANNOTATION: &str = "api-approved.kubernetes.io";

/// The value given to [`API_APPROVED_ANNOTATION`] when a converted CRD has none (the API
/// server accepts values starting with `unapproved`).
pub const UNAPPROVED: &str = "unapproved, converted from a v1beta1 bundle CRD";

/// Whether `group` is one of the Kubernetes project's (v1 requires
/// [`API_APPROVED_ANNOTATION`] on CRDs of those groups).
pub(crate) fn is_protected_group(group: &str) -> bool {
    ["k8s.io", "kubernetes.io"]
        .iter()
        .any(|domain| group == *domain || group.ends_with(&format!(".{domain}")))
}

/// `crd` as a v1 CRD: unchanged unless it is v1beta1. Either way the result is then checked
/// against the API server's rules for v1 CRDs ([`crate::crd::validation`]), so a CRD it would
/// refuse is refused here, naming the field.
pub fn to_v1(file: &str, crd: &DynamicObject) -> Result<DynamicObject, ConvertError> {
    let is_v1beta1 = crd
        .types
        .as_ref()
        .is_some_and(|types| types.api_version == V1BETA1);
    if !is_v1beta1 {
        crate::crd::validation::check(file, crd)?;
        return Ok(crd.clone());
    }
    let converted = from_v1beta1(file, crd)?;
    crate::crd::validation::check(file, &converted).map_err(|err| match err {
        // The path is in the converted CRD, not in the bundle's v1beta1 text: say so.
        ConvertError::InvalidCrd {
            file,
            name,
            field,
            message,
        } => ConvertError::InvalidCrd {
            file,
            name,
            field,
            message: format!("{message} (the path is in the CRD as converted from v1beta1 to v1)"),
        },
        other => other,
    })?;
    Ok(converted)
}

/// `crd`, a v1beta1 CRD, converted to v1 (see the module documentation).
fn from_v1beta1(file: &str, crd: &DynamicObject) -> Result<DynamicObject, ConvertError> {
    let name = crd.metadata.name.clone().unwrap_or_default();
    let failed = |message: String| ConvertError::CrdConversion {
        file: file.to_owned(),
        name: name.clone(),
        message,
    };
    let mut value = serde_json::to_value(crd).map_err(|err| failed(err.to_string()))?;
    let Some(object) = value.as_object_mut() else {
        return Err(failed("not an object".to_owned()));
    };
    object.insert("apiVersion".to_owned(), Value::String(V1.to_owned()));
    object.remove("status");
    let Some(Value::Object(spec)) = object.get_mut("spec") else {
        return Err(failed("spec is missing or not an object".to_owned()));
    };
    convert_spec(spec).map_err(|err| match err {
        SpecError::Shape(message) => failed(message),
        SpecError::Schema { version, problem } => ConvertError::CrdSchema {
            file: file.to_owned(),
            name: name.clone(),
            version,
            problem: Box::new(problem),
        },
    })?;
    let group = spec
        .get("group")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if is_protected_group(group) {
        let metadata = object
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()));
        let annotations = metadata
            .as_object_mut()
            .map(|metadata| {
                metadata
                    .entry("annotations")
                    .or_insert_with(|| Value::Object(Map::new()))
            })
            .and_then(Value::as_object_mut)
            .ok_or_else(|| failed("metadata.annotations is not a mapping".to_owned()))?;
        let given = annotations
            .get(API_APPROVED_ANNOTATION)
            .and_then(Value::as_str)
            .is_some_and(|value| !value.is_empty());
        if !given {
            annotations.insert(
                API_APPROVED_ANNOTATION.to_owned(),
                Value::String(UNAPPROVED.to_owned()),
            );
        }
    }
    serde_json::from_value(value).map_err(|err| failed(err.to_string()))
}

fn convert_spec(spec: &mut Map<String, Value>) -> Result<(), SpecError> {
    let shape = |message: &str| SpecError::Shape(message.to_owned());
    if spec.get("scope").is_none_or(Value::is_null) {
        spec.insert("scope".to_owned(), Value::String("Namespaced".to_owned()));
    }
    let version = spec.remove("version");
    let validation = spec.remove("validation");
    let subresources = spec.remove("subresources");
    let columns = spec.remove("additionalPrinterColumns");
    let preserve_unknown = spec
        .remove("preserveUnknownFields")
        .and_then(|value| value.as_bool())
        .unwrap_or(true);

    let versions = spec
        .entry("versions")
        .or_insert_with(|| Value::Array(Vec::new()));
    let Value::Array(versions) = versions else {
        return Err(shape("spec.versions is not a list"));
    };
    if versions.is_empty() {
        let Some(Value::String(name)) = version else {
            return Err(shape("spec.version and spec.versions are both missing"));
        };
        versions.push(json!({"name": name, "served": true, "storage": true}));
    }
    for (index, entry) in versions.iter_mut().enumerate() {
        let Value::Object(entry) = entry else {
            return Err(shape("an entry of spec.versions is not an object"));
        };
        let version = entry
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        // Where the schema is in the input, for messages.
        let mut path = format!("spec.versions[{index}].schema.openAPIV3Schema");
        if entry.get("schema").is_none_or(Value::is_null) {
            // Without any schema nothing is validated or pruned: every field is kept.
            let schema = match &validation {
                Some(validation) if !validation.is_null() => {
                    path = "spec.validation.openAPIV3Schema".to_owned();
                    validation.clone()
                }
                _ => json!({"openAPIV3Schema": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": true,
                }}),
            };
            entry.insert("schema".to_owned(), schema);
        }
        match entry.get_mut("schema") {
            Some(Value::Object(schema)) => match schema.get_mut("openAPIV3Schema") {
                Some(root) if !root.is_null() => {
                    structural::make_structural(root, &path, preserve_unknown).map_err(
                        |problem| SpecError::Schema {
                            version: version.clone(),
                            problem,
                        },
                    )?;
                }
                _ => {
                    schema.insert(
                        "openAPIV3Schema".to_owned(),
                        json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
                    );
                }
            },
            _ => {
                return Err(shape(
                    "spec.validation (or a version's schema) is not an object",
                ));
            }
        }
        if let Some(subresources) = &subresources {
            entry
                .entry("subresources")
                .or_insert_with(|| subresources.clone());
        }
        if let Some(columns) = &columns {
            entry
                .entry("additionalPrinterColumns")
                .or_insert_with(|| columns.clone());
        }
        if let Some(Value::Array(columns)) = entry.get_mut("additionalPrinterColumns") {
            for column in columns.iter_mut().filter_map(Value::as_object_mut) {
                if let Some(path) = column.remove("JSONPath") {
                    column.insert("jsonPath".to_owned(), path);
                }
            }
        }
    }

    if let Some(Value::Object(conversion)) = spec.get_mut("conversion") {
        let review_versions = conversion.remove("conversionReviewVersions");
        let client_config = conversion.remove("webhookClientConfig");
        if conversion.get("strategy").and_then(Value::as_str) == Some("Webhook") {
            let mut webhook = Map::new();
            webhook.insert(
                "conversionReviewVersions".to_owned(),
                review_versions.unwrap_or_else(|| json!(["v1beta1"])),
            );
            if let Some(client_config) = client_config {
                webhook.insert("clientConfig".to_owned(), client_config);
            }
            conversion.insert("webhook".to_owned(), Value::Object(webhook));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn convert(yaml: &str) -> Result<Value, ConvertError> {
        let crd: DynamicObject = serde_yaml_ng::from_str(yaml).unwrap();
        to_v1("manifests/crd.yaml", &crd).map(|crd| serde_json::to_value(crd).unwrap())
    }

    fn v1beta1(group: &str, extra: &str) -> String {
        format!(
            "apiVersion: apiextensions.k8s.io/v1beta1\nkind: CustomResourceDefinition\n\
             metadata:\n  name: things.{group}\n{extra}spec:\n  group: {group}\n  \
             version: v1\n  names: {{kind: Thing, plural: things}}\n"
        )
    }

    #[test]
    fn a_missing_scope_becomes_namespaced_as_v1beta1_defaulted_it() {
        let crd = convert(&v1beta1("example.com", "")).unwrap();
        assert_eq!(crd["spec"]["scope"], "Namespaced");
        let cluster = convert(
            &v1beta1("example.com", "")
                .replace("  version: v1\n", "  version: v1\n  scope: Cluster\n"),
        )
        .unwrap();
        assert_eq!(cluster["spec"]["scope"], "Cluster");
    }

    #[test]
    fn kubernetes_project_groups_get_the_api_approved_annotation() {
        for group in ["snapshot.storage.k8s.io", "x.kubernetes.io", "k8s.io"] {
            let crd = convert(&v1beta1(group, "")).unwrap();
            assert_eq!(
                crd["metadata"]["annotations"][API_APPROVED_ANNOTATION],
                "unapproved, converted from a v1beta1 bundle CRD",
                "{group}"
            );
        }
        let kept = convert(&v1beta1(
            "metrics.k8s.io",
            "  annotations:\n    api-approved.kubernetes.io: https://github.com/kubernetes/enhancements/pull/1111\n",
        ))
        .unwrap();
        assert_eq!(
            kept["metadata"]["annotations"][API_APPROVED_ANNOTATION],
            "https://github.com/kubernetes/enhancements/pull/1111"
        );
    }

    #[test]
    fn other_groups_get_no_api_approved_annotation() {
        for group in ["example.com", "notk8s.io", "k8s.io.example.com"] {
            let crd = convert(&v1beta1(group, "")).unwrap();
            assert!(
                crd["metadata"]["annotations"][API_APPROVED_ANNOTATION].is_null(),
                "{group}: {crd}"
            );
        }
    }

    #[test]
    fn a_schema_that_cannot_be_made_structural_is_refused_naming_crd_version_and_path() {
        let top_level = v1beta1("example.com", "").replace(
            "  version: v1\n",
            "  version: v1\n  validation:\n    openAPIV3Schema:\n      properties:\n        spec:\n          anyOf:\n          - type: string\n          - type: object\n",
        );
        let err = convert(&top_level).unwrap_err();
        assert_eq!(
            err.to_string(),
            "failed to convert CustomResourceDefinition \"things.example.com\" in manifests/crd.yaml to apiextensions.k8s.io/v1: the schema of version \"v1\" cannot be made structural: spec.validation.openAPIV3Schema.properties.spec.anyOf[0]: type \"string\" inside allOf, anyOf, oneOf or not is not allowed in apiextensions.k8s.io/v1, and the node has no type of its own"
        );
        let per_version = v1beta1("example.com", "").replace(
            "  version: v1\n",
            "  versions:\n  - name: v1\n    served: true\n    storage: false\n  - name: v2\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        properties:\n          metadata:\n            properties:\n              labels: {type: object}\n",
        );
        let ConvertError::CrdSchema {
            version, problem, ..
        } = convert(&per_version).unwrap_err()
        else {
            panic!("not a schema error");
        };
        assert_eq!(version, "v2");
        assert_eq!(
            problem.path,
            "spec.versions[1].schema.openAPIV3Schema.properties.metadata"
        );
    }

    #[test]
    fn schemas_are_repaired_and_a_version_without_one_keeps_every_field() {
        let crd = convert(&v1beta1("example.com", "").replace(
            "  version: v1\n",
            "  version: v1\n  preserveUnknownFields: false\n  validation:\n    openAPIV3Schema:\n      properties:\n        spec:\n          properties:\n            replicas: {type: integer}\n",
        ))
        .unwrap();
        let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["properties"]["spec"]["type"], "object");
        assert!(schema.get("x-kubernetes-preserve-unknown-fields").is_none());

        let without = convert(&v1beta1("example.com", "").replace(
            "  version: v1\n",
            "  version: v1\n  preserveUnknownFields: false\n",
        ))
        .unwrap();
        assert_eq!(
            without["spec"]["versions"][0]["schema"]["openAPIV3Schema"],
            json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
        );
    }
}
