//! Pieces the API crates (`rukpak-api`, `deppy-api`, `platform-api`) share, so that the
//! RukPak and Deppy API crates never need to import each other.
//!
//! - [`conditions_schema`]: the schema of a `metav1.Condition` list as a map keyed by
//!   `type`, which makes server-side apply merge conditions per type instead of
//!   replacing the list;
//! - [`ContentRef`]: where unpacked content lives in the content store;
//! - [`SecretRef`]: a reference to a Secret in the component's system namespace.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

pub use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

/// Schema for `conditions: Vec<Condition>` fields: a list-map keyed by `type`.
///
/// Use with `#[schemars(schema_with = "api_common::conditions_schema")]`.
pub fn conditions_schema(generator: &mut SchemaGenerator) -> Schema {
    let item = generator.subschema_for::<Condition>();
    json_schema!({
        "type": "array",
        "description": "Conditions describe the current state. Each type appears at most once.",
        "items": item,
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["type"],
    })
}

/// Schema for free-form object fields (provisioner parameters, class-specific config):
/// any JSON object, kept as written.
///
/// Use with `#[schemars(schema_with = "api_common::free_form_object_schema")]`.
pub fn free_form_object_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

/// Where a piece of unpacked content lives in the content store: a normalised gzip'd tar
/// split over immutable ConfigMaps in the owning component's system namespace.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContentRef {
    /// The sha256 digest of the gzip'd tar, `sha256:<64 hex digits>`. Readers verify the
    /// reassembled content against it before use.
    pub digest: String,
    /// Size of the gzip'd tar in bytes.
    pub size: i64,
    /// Number of ConfigMaps the content is split over.
    pub chunks: i32,
}

/// A reference to a Secret in the system namespace of the component that reads it.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct SecretRef {
    /// Name of the Secret.
    pub name: String,
}

impl JsonSchema for SecretRef {
    fn schema_name() -> Cow<'static, str> {
        "SecretRef".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "object",
            "description": "A Secret in the system namespace of the component that reads it.",
            "required": ["name"],
            "properties": {
                "name": {
                    "type": "string",
                    "description": "Name of the Secret.",
                    "minLength": 1,
                    "maxLength": 253,
                }
            }
        })
    }
}

/// The regular expression of a DNS-1123 label (lowercase alphanumerics and '-', starting
/// and ending alphanumeric), anchored. Upstream's PlatformOperator pattern lacked the
/// anchors and so accepted any string containing one valid character.
pub const DNS_LABEL_PATTERN: &str = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$";

/// The regular expression of a DNS-1123 subdomain (dot-separated labels), anchored: the
/// names of most objects, ServiceAccounts among them.
pub const DNS_SUBDOMAIN_PATTERN: &str =
    "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";

/// CEL: true when `self` (a relative path) stays inside its root: not absolute and no
/// `..` segment.
pub const CEL_PATH_STAYS_INSIDE: &str =
    "!self.startsWith('/') && !self.matches('(^|/)\\\\.\\\\.(/|$)')";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_are_a_list_map_keyed_by_type() {
        let mut generator = schemars::generate::SchemaSettings::openapi3().into_generator();
        let schema = conditions_schema(&mut generator);
        let value = serde_json::to_value(&schema).unwrap();
        assert_eq!(value["x-kubernetes-list-type"], "map");
        assert_eq!(value["x-kubernetes-list-map-keys"][0], "type");
    }

    #[test]
    fn content_refs_serialise_in_camel_case() {
        let value = serde_json::to_value(ContentRef {
            digest: "sha256:00".into(),
            size: 1,
            chunks: 2,
        })
        .unwrap();
        assert_eq!(value["chunks"], 2);
        assert_eq!(value["digest"], "sha256:00");
    }
}
