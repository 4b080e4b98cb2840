//! Converting `apiextensions.k8s.io/v1beta1` CustomResourceDefinitions (common in older
//! bundles, no longer served by the API server) to `apiextensions.k8s.io/v1`.
//!
//! Follows the API server's own v1beta1 -> v1 conversion: the top-level `version`,
//! `validation`, `subresources` and `additionalPrinterColumns` move into every entry of
//! `versions` (unless an entry has its own), `JSONPath` becomes `jsonPath`, the webhook
//! conversion settings move under `conversion.webhook`, and `preserveUnknownFields` (true by
//! default in v1beta1, not allowed in v1) becomes `x-kubernetes-preserve-unknown-fields` on
//! each version's schema root. A version without a schema gets one that keeps every field.

use kube::api::DynamicObject;
use serde_json::{Map, Value, json};

use crate::error::ConvertError;

/// The group/version of v1beta1 CRDs.
pub const V1BETA1: &str = "apiextensions.k8s.io/v1beta1";
/// The group/version of v1 CRDs.
pub const V1: &str = "apiextensions.k8s.io/v1";

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
    serde_json::from_value(value).map_err(|err| failed(err.to_string()))
}

fn convert_spec(spec: &mut Map<String, Value>) -> Result<(), String> {
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
