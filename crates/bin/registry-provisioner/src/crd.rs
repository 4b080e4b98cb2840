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
//! [`UNAPPROVED`]. Schemas are not made structural: one v1 refuses fails when applied.

use kube::api::DynamicObject;
use serde_json::{Map, Value, json};

use crate::error::ConvertError;

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
fn is_protected_group(group: &str) -> bool {
    ["k8s.io", "kubernetes.io"]
        .iter()
        .any(|domain| group == *domain || group.ends_with(&format!(".{domain}")))
}

/// `crd` as a v1 CRD: unchanged unless it is v1beta1.
pub fn to_v1(file: &str, crd: &DynamicObject) -> Result<DynamicObject, ConvertError> {
    let is_v1beta1 = crd
        .types
        .as_ref()
        .is_some_and(|types| types.api_version == V1BETA1);
    if !is_v1beta1 {
        return Ok(crd.clone());
    }
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
    convert_spec(spec).map_err(failed)?;
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

fn convert_spec(spec: &mut Map<String, Value>) -> Result<(), String> {
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
        return Err("spec.versions is not a list".to_owned());
    };
    if versions.is_empty() {
        let Some(Value::String(name)) = version else {
            return Err("spec.version and spec.versions are both missing".to_owned());
        };
        versions.push(json!({"name": name, "served": true, "storage": true}));
    }
    for entry in versions.iter_mut() {
        let Value::Object(entry) = entry else {
            return Err("an entry of spec.versions is not an object".to_owned());
        };
        if !entry.contains_key("schema") {
            let schema = validation
                .clone()
                .unwrap_or_else(|| json!({"openAPIV3Schema": {"type": "object"}}));
            entry.insert("schema".to_owned(), schema);
        }
        if preserve_unknown
            && let Some(Value::Object(root)) = entry
                .get_mut("schema")
                .and_then(|s| s.get_mut("openAPIV3Schema"))
        {
            root.insert(
                "x-kubernetes-preserve-unknown-fields".to_owned(),
                Value::Bool(true),
            );
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
}
