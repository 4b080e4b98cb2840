//! Reading a registry+v1 bundle: `metadata/annotations.yaml` and the documents of
//! `manifests/`, split into the one ClusterServiceVersion and everything else.

use std::collections::BTreeMap;

use kube::api::DynamicObject;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use crate::error::ConvertError;

/// The bundle's metadata file.
pub const ANNOTATIONS_FILE: &str = "metadata/annotations.yaml";
/// The directory holding the bundle's manifests.
pub const MANIFESTS_DIR: &str = "manifests/";
/// Annotation naming the bundle's package.
pub const PACKAGE_ANNOTATION: &str = "operators.operatorframework.io.bundle.package.v1";
/// Annotation naming the bundle's format.
pub const MEDIATYPE_ANNOTATION: &str = "operators.operatorframework.io.bundle.mediatype.v1";
/// The only mediatype this crate converts.
pub const REGISTRY_V1: &str = "registry+v1";
/// The UTF-8 byte order mark some editors put at the start of files.
const UTF8_BOM: &[u8] = b"\xef\xbb\xbf";

/// Kind of the ClusterServiceVersion.
pub const CSV_KIND: &str = "ClusterServiceVersion";
/// Kind of CustomResourceDefinitions.
pub const CRD_KIND: &str = "CustomResourceDefinition";

/// A parsed registry+v1 bundle.
#[derive(Debug, Clone)]
pub struct Bundle {
    /// The package name from `metadata/annotations.yaml`.
    pub package: String,
    /// The ClusterServiceVersion.
    pub csv: Csv,
    /// File the CSV was read from.
    pub csv_file: String,
    /// Every other manifest document, with its file, in file then document order.
    pub others: Vec<(String, DynamicObject)>,
}

/// The parts of a ClusterServiceVersion the conversion uses; other fields are ignored.
///
/// `null` in a list, map, string or flag field reads as empty, as OLM's Go reader leaves a
/// field at its zero value on `null` (some published bundles write `installModes: null` or
/// an annotation with no value).
#[derive(Debug, Clone, Deserialize)]
pub struct Csv {
    /// The CSV's metadata.
    pub metadata: CsvMeta,
    /// The CSV's spec.
    pub spec: CsvSpec,
}

/// Name and annotations of a CSV.
#[derive(Debug, Clone, Deserialize)]
pub struct CsvMeta {
    /// The CSV's name.
    pub name: String,
    /// The CSV's annotations (an annotation without a value reads as `""`).
    #[serde(default, deserialize_with = "string_map")]
    pub annotations: BTreeMap<String, String>,
}

/// The spec of a CSV.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CsvSpec {
    /// Supported and unsupported install modes.
    #[serde(default, deserialize_with = "null_as_default")]
    pub install_modes: Vec<InstallMode>,
    /// The install strategy.
    pub install: Install,
    /// Admission and conversion webhooks, kept verbatim: [`crate::webhooks`] reads each
    /// entry itself, so a bad one is refused naming its field.
    #[serde(default, deserialize_with = "null_as_default")]
    pub webhookdefinitions: Vec<Value>,
    /// API services; the owned ones are served by the operator (see [`crate::webhooks`]).
    #[serde(default, deserialize_with = "null_as_default")]
    pub apiservicedefinitions: ApiServiceDefinitions,
    /// The CRDs the operator owns and requires.
    #[serde(default, deserialize_with = "null_as_default")]
    pub customresourcedefinitions: CrdDefinitions,
}

/// `spec.customresourcedefinitions`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct CrdDefinitions {
    /// CRDs the operator owns (a conversion webhook may only serve these).
    #[serde(default, deserialize_with = "null_as_default")]
    pub owned: Vec<OwnedCrd>,
}

/// One entry of `spec.customresourcedefinitions.owned`; other fields are ignored.
#[derive(Debug, Clone, Deserialize)]
pub struct OwnedCrd {
    /// The CRD's name (`<plural>.<group>`).
    #[serde(default, deserialize_with = "null_as_default")]
    pub name: String,
}

/// One entry of `spec.installModes`.
#[derive(Debug, Clone, Deserialize)]
pub struct InstallMode {
    /// `AllNamespaces`, `OwnNamespace`, `SingleNamespace` or `MultiNamespace`.
    #[serde(rename = "type", default, deserialize_with = "null_as_default")]
    pub mode: String,
    /// Whether the operator supports this mode.
    #[serde(default, deserialize_with = "null_as_default")]
    pub supported: bool,
}

/// `spec.apiservicedefinitions`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ApiServiceDefinitions {
    /// API services the operator serves, kept verbatim (read by [`crate::webhooks`]).
    #[serde(default, deserialize_with = "null_as_default")]
    pub owned: Vec<Value>,
}

/// `spec.install`.
#[derive(Debug, Clone, Deserialize)]
pub struct Install {
    /// The strategy name; only `deployment` exists.
    #[serde(default, deserialize_with = "null_as_default")]
    pub strategy: String,
    /// The strategy's details.
    #[serde(default, deserialize_with = "null_as_default")]
    pub spec: StrategySpec,
}

/// `spec.install.spec` of the `deployment` strategy.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StrategySpec {
    /// Namespaced permissions, one entry per ServiceAccount.
    #[serde(default, deserialize_with = "null_as_default")]
    pub permissions: Vec<Permission>,
    /// Cluster permissions, one entry per ServiceAccount.
    #[serde(default, deserialize_with = "null_as_default")]
    pub cluster_permissions: Vec<Permission>,
    /// The operator's Deployments.
    #[serde(default, deserialize_with = "null_as_default")]
    pub deployments: Vec<DeploymentEntry>,
}

/// RBAC rules granted to one ServiceAccount.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Permission {
    /// The ServiceAccount, in the install namespace; empty means `default`.
    #[serde(default, deserialize_with = "null_as_default")]
    pub service_account_name: String,
    /// The rules, kept verbatim; `None` when missing or `null` (no rules). Kept apart from
    /// `[]` because upstream's name hash tells the two apart (see [`crate::objects`]).
    #[serde(default)]
    pub rules: Option<Vec<Value>>,
}

impl Permission {
    /// The ServiceAccount, `default` when the CSV leaves it empty (as upstream).
    pub fn service_account(&self) -> &str {
        if self.service_account_name.is_empty() {
            "default"
        } else {
            &self.service_account_name
        }
    }

    /// The rules; none when the CSV has none or `null`.
    pub fn rules(&self) -> &[Value] {
        self.rules.as_deref().unwrap_or_default()
    }
}

/// One Deployment of the install strategy.
#[derive(Debug, Clone, Deserialize)]
pub struct DeploymentEntry {
    /// The Deployment's name.
    pub name: String,
    /// The Deployment's labels (a label without a value reads as `""`).
    #[serde(default, deserialize_with = "string_map")]
    pub label: BTreeMap<String, String>,
    /// The Deployment's spec, kept verbatim.
    pub spec: Value,
}

#[derive(Deserialize)]
struct AnnotationsFile {
    #[serde(default, deserialize_with = "string_map")]
    annotations: BTreeMap<String, String>,
}

/// Reads `null` as `T`'s default (an empty list, string or map, `false`), as Go's
/// `encoding/json` leaves a field at its zero value when it reads `null`.
pub(crate) fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// A string map in which `null` (the map, or a value: `key:` with nothing after it) reads
/// as empty, as Go reads it into a `map[string]string`.
fn string_map<'de, D>(deserializer: D) -> Result<BTreeMap<String, String>, D::Error>
where
    D: Deserializer<'de>,
{
    let map: Option<BTreeMap<String, Option<String>>> = Option::deserialize(deserializer)?;
    Ok(map
        .unwrap_or_default()
        .into_iter()
        .map(|(key, value)| (key, value.unwrap_or_default()))
        .collect())
}

/// Reads a bundle from its files as `(path, bytes)` pairs, paths relative to the bundle
/// root (`metadata/annotations.yaml`, `manifests/csv.yaml`). Files elsewhere are ignored.
pub fn read<'a>(
    files: impl IntoIterator<Item = (&'a str, &'a [u8])>,
) -> Result<Bundle, ConvertError> {
    let mut annotations = None;
    let mut manifests: Vec<(&str, &[u8])> = Vec::new();
    for (path, bytes) in files {
        if path == ANNOTATIONS_FILE {
            annotations = Some(bytes);
        } else if path.starts_with(MANIFESTS_DIR) {
            manifests.push((path, bytes));
        }
    }
    manifests.sort_by(|a, b| a.0.cmp(b.0));
    let annotations = annotations.ok_or(ConvertError::MissingAnnotationsFile(ANNOTATIONS_FILE))?;
    let package = read_annotations(annotations)?;

    let mut csv: Option<(String, DynamicObject)> = None;
    let mut others = Vec::new();
    for (path, bytes) in manifests {
        // Editors on Windows start files with a byte order mark; YAML allows it.
        let bytes = bytes.strip_prefix(UTF8_BOM).unwrap_or(bytes);
        for object in apply_engine::manifest::parse_documents(path, bytes)? {
            let is_csv = object
                .types
                .as_ref()
                .is_some_and(|types| types.kind == CSV_KIND);
            if !is_csv {
                others.push((path.to_owned(), object));
                continue;
            }
            if let Some((first_file, first)) = &csv {
                return Err(ConvertError::MultipleCsvs {
                    first_file: first_file.clone(),
                    first_name: first.metadata.name.clone().unwrap_or_default(),
                    second_file: path.to_owned(),
                    second_name: object.metadata.name.clone().unwrap_or_default(),
                });
            }
            csv = Some((path.to_owned(), object));
        }
    }
    let (csv_file, csv_object) = csv.ok_or(ConvertError::NoCsv)?;
    let name = csv_object.metadata.name.clone().unwrap_or_default();
    let value = serde_json::to_value(&csv_object).map_err(|err| ConvertError::InvalidCsv {
        file: csv_file.clone(),
        name: name.clone(),
        message: err.to_string(),
    })?;
    let csv: Csv = serde_json::from_value(value).map_err(|err| ConvertError::InvalidCsv {
        file: csv_file.clone(),
        name: name.clone(),
        message: err.to_string(),
    })?;
    Ok(Bundle {
        package,
        csv,
        csv_file,
        others,
    })
}

/// Checks the mediatype and returns the package name.
fn read_annotations(bytes: &[u8]) -> Result<String, ConvertError> {
    let invalid = |message: String| ConvertError::InvalidAnnotations {
        file: ANNOTATIONS_FILE.to_owned(),
        message,
    };
    let bytes = bytes.strip_prefix(UTF8_BOM).unwrap_or(bytes);
    let text = std::str::from_utf8(bytes).map_err(|err| invalid(format!("not UTF-8: {err}")))?;
    let file: AnnotationsFile =
        serde_yaml_ng::from_str(text).map_err(|err| invalid(err.to_string()))?;
    let get = |key: &'static str| {
        file.annotations
            .get(key)
            .cloned()
            .ok_or(ConvertError::MissingAnnotation {
                file: ANNOTATIONS_FILE.to_owned(),
                key,
            })
    };
    let mediatype = get(MEDIATYPE_ANNOTATION)?;
    if mediatype != REGISTRY_V1 {
        return Err(ConvertError::UnsupportedMediatype {
            file: ANNOTATIONS_FILE.to_owned(),
            found: mediatype,
        });
    }
    get(PACKAGE_ANNOTATION)
}
