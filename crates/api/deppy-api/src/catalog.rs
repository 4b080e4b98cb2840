//! Catalog: a file-based catalog of operator packages and bundles.

use api_common::{Condition, ContentRef, DNS_LABEL_PATTERN};
use kube::{CustomResource, KubeSchema};
use serde::{Deserialize, Serialize};

/// A Catalog makes a file-based catalog (from an image or a ConfigMap) available for
/// resolution. deppy-resolver fetches and parses it, stores the content in the content
/// store, and re-polls tag references every `pollInterval`.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
// Each printcolumn(...) repeats the same keys; clippy mistakes that for duplicate attributes.
#[allow(clippy::duplicated_attributes)]
#[kube(
    group = "deppy.io",
    version = "v1alpha1",
    kind = "Catalog",
    plural = "catalogs",
    status = "CatalogStatus",
    doc = "A file-based catalog of operator packages, from an image or a ConfigMap, available for resolution. Cluster-scoped.",
    printcolumn(name = "Serving", type_ = "string", json_path = ".status.conditions[?(@.type==\"Serving\")].status"),
    printcolumn(name = "Packages", type_ = "integer", json_path = ".status.packages"),
    printcolumn(name = "Bundles", type_ = "integer", json_path = ".status.bundles", priority = 1),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp"),
    validation = Rule::new("self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$') && self.metadata.name.size() <= 63").message("metadata.name must be a DNS label: it appears in selections as <catalog>:<package>:<version>:<channel>"),
)]
#[serde(rename_all = "camelCase")]
pub struct CatalogSpec {
    /// Where the catalog comes from.
    pub source: CatalogSource,

    /// Preference between catalogs offering the same package: higher wins when everything
    /// else is equal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = -1000, max = 1000))]
    pub priority: Option<i32>,

    /// How often a tag image reference is checked for new content, e.g. `10m`. Digest
    /// references never change and are not polled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = "^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"))]
    pub poll_interval: Option<String>,
}

/// Where a catalog comes from: exactly one of image or configMap.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("has(self.image) != has(self.configMap)").message("exactly one of image or configMap must be set"))]
pub struct CatalogSource {
    /// A catalog image: a file-based catalog under `/configs` of the image filesystem.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<ImageCatalogSource>,

    /// A catalog in an immutable ConfigMap: each key is one file of the catalog.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map: Option<ConfigMapCatalogSource>,
}

/// A catalog image.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImageCatalogSource {
    /// Image reference by tag or digest.
    #[serde(rename = "ref")]
    #[schemars(length(min = 1, max = 1024))]
    pub ref_: String,

    /// Secret of type `kubernetes.io/dockerconfigjson` in deppy's system namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    pub pull_secret: Option<String>,

    /// Skip TLS verification of the registry. For tests only.
    #[serde(
        rename = "insecureSkipTLSVerify",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub insecure_skip_tls_verify: Option<bool>,
}

/// A catalog held in a ConfigMap.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigMapCatalogSource {
    /// Name of the ConfigMap.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,

    /// Namespace of the ConfigMap.
    #[schemars(length(min = 1, max = 63), regex(pattern = DNS_LABEL_PATTERN))]
    pub namespace: String,
}

/// Observed state of a Catalog.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CatalogStatus {
    /// The source pinned to what was fetched: an image by digest, a ConfigMap by
    /// resourceVersion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_source: Option<String>,

    /// Where the catalog content is in the content store.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<ContentRef>,

    /// Where the catalog's bundle index is in the content store: for each package its
    /// channels and, for each bundle, its version, image and `olm.maxOpenShiftVersion`
    /// (`deppy_api::BundleIndex`, one JSON file). deppy-resolver writes it with the content;
    /// the resolution-activator reads it instead of the whole catalog. Absent while the
    /// catalog is not served, and on Catalogs served by a deppy-resolver that predates it
    /// (readers then parse the content).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bundle_index: Option<ContentRef>,

    /// Where the catalog's content can be read over HTTPS (the catalog query API), as
    /// catalogd publishes it. Absent while the catalog is not served, and when
    /// deppy-resolver runs without the API.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub urls: Option<CatalogUrls>,

    /// Number of packages in the catalog.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packages: Option<i64>,

    /// Number of bundles in the catalog.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bundles: Option<i64>,

    /// When the source was last checked for new content (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_polled: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,

    /// The generation of the spec this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,

    /// `Unpacked` and `Serving`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "api_common::conditions_schema")]
    pub conditions: Vec<Condition>,
}

/// The addresses of a served catalog's content.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CatalogUrls {
    /// The catalog's base URL, e.g.
    /// `https://deppy-catalogs.deppy-system.svc/catalogs/operatorhub`. Append `/api/v1/all`
    /// for every blob, `/api/v1/metas?schema=&package=&name=` for some, or
    /// `/api/v1/packages` for a summary of each package, or
    /// `/api/v1/upgrades?package=&from=` for what a version upgrades to. Reading needs a bearer token whose
    /// user may `get` `catalogs/content` in API group `catalogs.deppy.io` for this Catalog.
    /// The same paths are served through the Kubernetes API server under
    /// `/apis/catalogs.deppy.io/v1/catalogs/NAME/content`, with any kubeconfig.
    pub base: String,
}
