//! `deploymentConfig`: OLM v0's `Subscription.spec.config` (operator-controller's
//! `deploymentConfig`), applied to every Deployment of a bundle.
//!
//! Read from a BundleDeployment's `spec.config.deploymentConfig` or `render
//! --deployment-config FILE`. Parsing is strict: a field OLM's `SubscriptionConfig` does not
//! have (at any depth), a value of the wrong type and the deprecated `selector` are refused
//! with a message naming the field. The merge rules are OLM v0's
//! (`pkg/controller/operators/olm/overrides/inject`), applied to the regular containers of
//! each pod template (never to init containers, as OLM):
//!
//! - `env`: merged by name, the config's value wins; new names are appended in config order
//!   (the last of two config entries with one name wins);
//! - `envFrom`: each source is appended unless the container already has an equal one;
//! - `volumes`: merged by name into the pod spec (replacing the bundle's volume of that
//!   name), others appended;
//! - `volumeMounts`: merged by name into every container, others appended; a mount whose
//!   `mountPath` another mount of the container already uses is refused (the API server
//!   would refuse the Deployment);
//! - `tolerations`: each appended unless the pod spec already has an equal one;
//! - `resources`: replace every container's resources;
//! - `nodeSelector`: replaces the pod spec's (`{}` removes it);
//! - `affinity`: `{}` removes the pod's affinity; otherwise each of `nodeAffinity`,
//!   `podAffinity`, `podAntiAffinity` that is set replaces the pod's (`{}` removes it), the
//!   others are kept;
//! - `annotations`: added to the Deployment and its pod template, never replacing an
//!   annotation already there (the CSV's, the template's, `olm.targetNamespaces`, ...).

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{
    Affinity, EnvFromSource, EnvVar, ResourceRequirements, Toleration, Volume, VolumeMount,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use apply_engine::manifest::json_type;

/// The key of a BundleDeployment's `spec.config` holding the deployment config.
pub const DEPLOYMENT_CONFIG: &str = "deploymentConfig";

/// Where the deployment config is, for messages.
const FIELD: &str = "spec.config.deploymentConfig";

/// The fields of a deployment config, in OLM's `SubscriptionConfig` order.
pub const FIELDS: [&str; 9] = [
    "nodeSelector",
    "tolerations",
    "resources",
    "envFrom",
    "env",
    "volumes",
    "volumeMounts",
    "affinity",
    "annotations",
];

/// Customizations of the operator's Deployments, as OLM v0's `SubscriptionConfig` (without
/// its deprecated `selector`). `None` leaves that part of the Deployments as the bundle has
/// it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentConfig {
    /// Node labels the pods must match; replaces the bundle's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<BTreeMap<String, String>>,
    /// Tolerations added to the pods.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tolerations: Option<Vec<Toleration>>,
    /// Compute resources of every container; replaces the bundle's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    /// Sources of environment variables added to every container.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub env_from: Option<Vec<EnvFromSource>>,
    /// Environment variables of every container, merged by name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub env: Option<Vec<EnvVar>>,
    /// Volumes of the pods, merged by name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub volumes: Option<Vec<Volume>>,
    /// Volume mounts of every container, merged by name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub volume_mounts: Option<Vec<VolumeMount>>,
    /// Scheduling constraints of the pods, replaced per kind of affinity.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,
    /// Annotations added to the Deployments and their pods, never replacing existing ones.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
}

impl DeploymentConfig {
    /// Reads the value of `spec.config.deploymentConfig`; `null` is no config. An unknown
    /// field at any depth, `selector`, or a value of the wrong type is an error naming the
    /// field.
    pub fn from_value(value: &Value) -> Result<Option<Self>, String> {
        let map = match value {
            Value::Null => return Ok(None),
            Value::Object(map) => map,
            other => {
                return Err(format!(
                    "{FIELD} must be a mapping (the fields of OLM's SubscriptionConfig), not {}",
                    json_type(other)
                ));
            }
        };
        let mut config = Self::default();
        for (key, value) in map {
            let field = format!("{FIELD}.{key}");
            if value.is_null() && FIELDS.contains(&key.as_str()) {
                continue;
            }
            match key.as_str() {
                "nodeSelector" => config.node_selector = Some(string_map(&field, value)?),
                "annotations" => config.annotations = Some(string_map(&field, value)?),
                "tolerations" => config.tolerations = Some(list(&field, "Toleration", value)?),
                "envFrom" => config.env_from = Some(list(&field, "EnvFromSource", value)?),
                "env" => config.env = Some(list(&field, "EnvVar", value)?),
                "volumes" => {
                    let volumes: Vec<Volume> = list(&field, "Volume", value)?;
                    for (index, volume) in volumes.iter().enumerate() {
                        if let Some(first) = volumes[..index]
                            .iter()
                            .position(|other| other.name == volume.name)
                        {
                            return Err(format!(
                                "{field}[{index}]: the volume name {:?} is already used by {field}[{first}] (volume names must be unique in a pod)",
                                volume.name
                            ));
                        }
                    }
                    config.volumes = Some(volumes);
                }
                "volumeMounts" => {
                    config.volume_mounts = Some(list(&field, "VolumeMount", value)?);
                }
                "resources" => {
                    config.resources = Some(typed(
                        &field,
                        "ResourceRequirements",
                        &quantities_as_strings(value),
                    )?);
                }
                "affinity" => config.affinity = Some(typed(&field, "Affinity", value)?),
                "selector" => {
                    return Err(format!(
                        "{field} is not supported: OLM v0 never applied it to the operator's Deployments and operator-controller refuses it; remove it"
                    ));
                }
                _ => {
                    return Err(format!(
                        "{field} is not a deploymentConfig field (the fields are {})",
                        FIELDS.join(", ")
                    ));
                }
            }
        }
        Ok(Some(config))
    }

    /// Reads a deployment config written as YAML or JSON (the value of
    /// `spec.config.deploymentConfig`), as `render --deployment-config` does.
    pub fn from_yaml(text: &str) -> Result<Option<Self>, String> {
        let value: Value = serde_yaml_ng::from_str(text)
            .map_err(|err| format!("{FIELD} is not valid YAML or JSON: {err}"))?;
        Self::from_value(&value)
    }

    /// Applies the config to `deployment`, a Deployment as JSON (`metadata`, `spec`), with
    /// OLM v0's merge rules (see the module docs). Errors describe what is wrong in
    /// Deployment-relative terms.
    pub fn apply(&self, deployment: &mut Value) -> Result<(), String> {
        let pod = pod_spec(deployment)?;
        let containers = match pod.get_mut("containers") {
            None | Some(Value::Null) => None,
            Some(Value::Array(containers)) => Some(containers),
            Some(_) => return Err("spec.template.spec.containers is not a list".to_owned()),
        };
        for (index, container) in containers.into_iter().flatten().enumerate() {
            let Value::Object(container) = container else {
                return Err(format!(
                    "spec.template.spec.containers[{index}] is not a mapping"
                ));
            };
            let name = container
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            if let Some(env) = &self.env {
                merge_env(list_mut(container, "env", index)?, env)?;
            }
            if let Some(env_from) = &self.env_from {
                append_missing(list_mut(container, "envFrom", index)?, env_from)?;
            }
            if let Some(mounts) = &self.volume_mounts {
                let list = list_mut(container, "volumeMounts", index)?;
                merge_by_name(list, mounts)?;
                check_mount_paths(list, mounts, &name)?;
            }
            if let Some(resources) = &self.resources {
                container.insert("resources".to_owned(), to_value(resources)?);
            }
        }
        if let Some(volumes) = &self.volumes {
            merge_by_name(pod_list(pod, "volumes")?, volumes)?;
        }
        if let Some(tolerations) = &self.tolerations {
            append_missing(pod_list(pod, "tolerations")?, tolerations)?;
        }
        if let Some(selector) = &self.node_selector {
            if selector.is_empty() {
                pod.remove("nodeSelector");
            } else {
                pod.insert("nodeSelector".to_owned(), to_value(selector)?);
            }
        }
        if let Some(affinity) = &self.affinity {
            override_affinity(pod, affinity)?;
        }
        if let Some(annotations) = self.annotations.as_ref().filter(|a| !a.is_empty()) {
            add_annotations(deployment.get_mut("metadata"), "metadata", annotations)?;
            let template = deployment
                .pointer_mut("/spec/template/metadata")
                .ok_or_else(|| "spec.template.metadata is not a mapping".to_owned())?;
            add_annotations(Some(template), "spec.template.metadata", annotations)?;
        }
        Ok(())
    }
}

/// A mapping of strings to strings (`nodeSelector`, `annotations`).
fn string_map(field: &str, value: &Value) -> Result<BTreeMap<String, String>, String> {
    let Value::Object(map) = value else {
        return Err(format!(
            "{field} must be a mapping of strings, not {}",
            json_type(value)
        ));
    };
    map.iter()
        .map(|(key, value)| match value {
            Value::String(text) => Ok((key.clone(), text.clone())),
            other => Err(format!(
                "{field}.{key} must be a string, not {} (quote it)",
                json_type(other)
            )),
        })
        .collect()
}

/// A list of `kind`s, each item read strictly (see [`typed`]).
fn list<T: DeserializeOwned + Serialize>(
    field: &str,
    kind: &str,
    value: &Value,
) -> Result<Vec<T>, String> {
    let Value::Array(items) = value else {
        return Err(format!(
            "{field} must be a list of {kind}, not {}",
            json_type(value)
        ));
    };
    items
        .iter()
        .enumerate()
        .map(|(index, item)| typed(&format!("{field}[{index}]"), kind, item))
        .collect()
}

/// `value` read as a `kind`: a value of the wrong type is an error with serde's reason, and
/// a field the Kubernetes type does not have (which its reader would silently drop) is an
/// error naming it.
fn typed<T: DeserializeOwned + Serialize>(
    field: &str,
    kind: &str,
    value: &Value,
) -> Result<T, String> {
    let typed: T = serde_json::from_value(value.clone())
        .map_err(|err| format!("{field} is not a valid {kind}: {err}"))?;
    let known = serde_json::to_value(&typed)
        .map_err(|err| format!("{field} could not be read back as a {kind}: {err}"))?;
    if let Some(unknown) = unknown_field(field, value, &known) {
        return Err(format!("{unknown} is not a field of {kind}"));
    }
    Ok(typed)
}

/// The path of the first field of `given` (not `null`) that `known`, the same value as the
/// Kubernetes type writes it back, lacks.
fn unknown_field(path: &str, given: &Value, known: &Value) -> Option<String> {
    match (given, known) {
        (Value::Object(given), Value::Object(known)) => given.iter().find_map(|(key, value)| {
            let path = format!("{path}.{key}");
            match known.get(key) {
                None if value.is_null() => None,
                None => Some(path),
                Some(known) => unknown_field(&path, value, known),
            }
        }),
        (Value::Array(given), Value::Array(known)) => {
            given
                .iter()
                .zip(known)
                .enumerate()
                .find_map(|(index, (given, known))| {
                    unknown_field(&format!("{path}[{index}]"), given, known)
                })
        }
        _ => None,
    }
}

/// `resources` with numbers in `limits` and `requests` written as strings: Kubernetes reads
/// `cpu: 1` as the quantity "1" (and so does OLM), while the Rust type takes strings only.
fn quantities_as_strings(value: &Value) -> Value {
    let mut value = value.clone();
    for key in ["limits", "requests"] {
        if let Some(Value::Object(quantities)) = value.get_mut(key) {
            for quantity in quantities.values_mut() {
                if let Value::Number(number) = quantity {
                    *quantity = Value::String(number.to_string());
                }
            }
        }
    }
    value
}

fn to_value<T: Serialize>(value: &T) -> Result<Value, String> {
    serde_json::to_value(value).map_err(|err| format!("failed to write a config value: {err}"))
}

/// The pod spec of a Deployment as JSON, created empty when missing.
fn pod_spec(deployment: &mut Value) -> Result<&mut Map<String, Value>, String> {
    let mut current = deployment;
    let mut path = String::new();
    for key in ["spec", "template", "spec"] {
        if !path.is_empty() {
            path.push('.');
        }
        path.push_str(key);
        let map = current
            .as_object_mut()
            .ok_or_else(|| format!("{path} is not a mapping"))?;
        current = map
            .entry(key.to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
        if current.is_null() {
            *current = Value::Object(Map::new());
        }
    }
    current
        .as_object_mut()
        .ok_or_else(|| format!("{path} is not a mapping"))
}

/// The list `key` of a pod spec, created empty when missing.
fn pod_list<'m>(pod: &'m mut Map<String, Value>, key: &str) -> Result<&'m mut Vec<Value>, String> {
    ensure_list(pod, key).ok_or_else(|| format!("spec.template.spec.{key} is not a list"))
}

/// The list `key` of the container at `index`, created empty when missing.
fn list_mut<'m>(
    container: &'m mut Map<String, Value>,
    key: &str,
    index: usize,
) -> Result<&'m mut Vec<Value>, String> {
    ensure_list(container, key)
        .ok_or_else(|| format!("spec.template.spec.containers[{index}].{key} is not a list"))
}

fn ensure_list<'m>(map: &'m mut Map<String, Value>, key: &str) -> Option<&'m mut Vec<Value>> {
    let entry = map
        .entry(key.to_owned())
        .or_insert_with(|| Value::Array(Vec::new()));
    if entry.is_null() {
        *entry = Value::Array(Vec::new());
    }
    entry.as_array_mut()
}

/// The `name` of a JSON object, if any.
fn name_of(value: &Value) -> Option<&str> {
    value.get("name").and_then(Value::as_str)
}

/// OLM's env merge: a variable the container has keeps its place and takes the config's
/// value; the others are appended in config order, each once, with the last config value
/// of its name.
fn merge_env(existing: &mut Vec<Value>, config: &[EnvVar]) -> Result<(), String> {
    let mut by_name: BTreeMap<&str, &EnvVar> = BTreeMap::new();
    for var in config {
        by_name.insert(var.name.as_str(), var);
    }
    let mut placed: BTreeSet<String> = BTreeSet::new();
    for item in existing.iter_mut() {
        let Some(name) = name_of(item).map(str::to_owned) else {
            continue;
        };
        if let Some(var) = by_name.get(name.as_str()) {
            *item = to_value(var)?;
            placed.insert(name);
        }
    }
    for var in config {
        if placed.insert(var.name.clone())
            && let Some(last) = by_name.get(var.name.as_str())
        {
            existing.push(to_value(last)?);
        }
    }
    Ok(())
}

/// Appends each config item the list did not have before (compared as the Kubernetes type
/// reads them, as OLM compares them with `reflect.DeepEqual`).
fn append_missing<T: DeserializeOwned + Serialize + PartialEq>(
    existing: &mut Vec<Value>,
    config: &[T],
) -> Result<(), String> {
    let before: Vec<Option<T>> = existing
        .iter()
        .map(|item| serde_json::from_value(item.clone()).ok())
        .collect();
    for item in config {
        if !before.iter().flatten().any(|old| old == item) {
            existing.push(to_value(item)?);
        }
    }
    Ok(())
}

/// Items with a `name` (volumes, volume mounts) merged by name: an item the list had
/// before with the config item's name is replaced by it, else the config item is appended.
fn merge_by_name<T: Serialize>(existing: &mut Vec<Value>, config: &[T]) -> Result<(), String> {
    let before = existing.len();
    for item in config {
        let value = to_value(item)?;
        let name = name_of(&value).map(str::to_owned);
        match existing[..before]
            .iter()
            .position(|old| name.is_some() && name_of(old) == name.as_deref())
        {
            Some(index) => existing[index] = value,
            None => existing.push(value),
        }
    }
    Ok(())
}

/// Refuses a config mount whose `mountPath` another mount of the container uses: the API
/// server refuses such a Deployment, so it is refused here, before anything is applied.
fn check_mount_paths(
    mounts: &[Value],
    config: &[VolumeMount],
    container: &str,
) -> Result<(), String> {
    for (index, mount) in config.iter().enumerate() {
        let clash = mounts.iter().find(|other| {
            other.get("mountPath").and_then(Value::as_str) == Some(mount.mount_path.as_str())
                && name_of(other) != Some(mount.name.as_str())
        });
        if let Some(other) = clash {
            return Err(format!(
                "{FIELD}.volumeMounts[{index}] mounts volume {:?} at {:?}, where container {container:?} already mounts volume {:?}",
                mount.name,
                mount.mount_path,
                name_of(other).unwrap_or_default()
            ));
        }
    }
    Ok(())
}

/// OLM's affinity override: `{}` removes the pod's affinity; each kind of affinity the
/// config sets replaces the pod's, or removes it when the config's is `{}`; the pod's
/// affinity is removed when nothing is left.
fn override_affinity(pod: &mut Map<String, Value>, affinity: &Affinity) -> Result<(), String> {
    let kinds: [(&str, Option<Value>, bool); 3] = [
        (
            "nodeAffinity",
            affinity.node_affinity.as_ref().map(to_value).transpose()?,
            affinity.node_affinity == Some(Default::default()),
        ),
        (
            "podAffinity",
            affinity.pod_affinity.as_ref().map(to_value).transpose()?,
            affinity.pod_affinity == Some(Default::default()),
        ),
        (
            "podAntiAffinity",
            affinity
                .pod_anti_affinity
                .as_ref()
                .map(to_value)
                .transpose()?,
            affinity.pod_anti_affinity == Some(Default::default()),
        ),
    ];
    if kinds.iter().all(|(_, value, _)| value.is_none()) {
        pod.remove("affinity");
        return Ok(());
    }
    let current = pod
        .entry("affinity".to_owned())
        .or_insert_with(|| Value::Object(Map::new()));
    if current.is_null() {
        *current = Value::Object(Map::new());
    }
    let current = current
        .as_object_mut()
        .ok_or_else(|| "spec.template.spec.affinity is not a mapping".to_owned())?;
    for (key, value, empty) in kinds {
        match value {
            None => {}
            Some(_) if empty => {
                current.remove(key);
            }
            Some(value) => {
                current.insert(key.to_owned(), value);
            }
        }
    }
    current.retain(|_, value| !value.is_null());
    if current.is_empty() {
        pod.remove("affinity");
    }
    Ok(())
}

/// Adds `annotations` to the `annotations` of `metadata`, keeping every annotation already
/// there.
fn add_annotations(
    metadata: Option<&mut Value>,
    field: &str,
    annotations: &BTreeMap<String, String>,
) -> Result<(), String> {
    let metadata = metadata
        .and_then(Value::as_object_mut)
        .ok_or_else(|| format!("{field} is not a mapping"))?;
    let existing = metadata
        .entry("annotations".to_owned())
        .or_insert_with(|| Value::Object(Map::new()));
    if existing.is_null() {
        *existing = Value::Object(Map::new());
    }
    let existing = existing
        .as_object_mut()
        .ok_or_else(|| format!("{field}.annotations is not a mapping"))?;
    for (key, value) in annotations {
        existing
            .entry(key.clone())
            .or_insert_with(|| Value::String(value.clone()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config(value: Value) -> DeploymentConfig {
        DeploymentConfig::from_value(&value).unwrap().unwrap()
    }

    fn error(value: Value) -> String {
        DeploymentConfig::from_value(&value).unwrap_err()
    }

    /// A Deployment whose pod has `pod` as its spec.
    fn deployment(pod: Value) -> Value {
        json!({
            "metadata": {"name": "op"},
            "spec": {"template": {"metadata": {"annotations": {"kept": "bundle"}}, "spec": pod}},
        })
    }

    fn applied(config_value: Value, pod: Value) -> Value {
        let mut deployment = deployment(pod);
        config(config_value).apply(&mut deployment).unwrap();
        deployment
    }

    fn pod(deployment: &Value) -> &Value {
        &deployment["spec"]["template"]["spec"]
    }

    #[test]
    fn env_is_merged_by_name_with_the_config_winning_and_new_names_appended_once() {
        let out = applied(
            json!({"env": [
                {"name": "B", "value": "config"},
                {"name": "C", "value": "first"},
                {"name": "C", "value": "last"},
            ]}),
            json!({"containers": [
                {"name": "a", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]},
                {"name": "b"},
            ]}),
        );
        assert_eq!(
            pod(&out)["containers"][0]["env"],
            json!([
                {"name": "A", "value": "1"},
                {"name": "B", "value": "config"},
                {"name": "C", "value": "last"},
            ])
        );
        assert_eq!(
            pod(&out)["containers"][1]["env"],
            json!([{"name": "B", "value": "config"}, {"name": "C", "value": "last"}])
        );
    }

    #[test]
    fn init_containers_are_left_alone() {
        let init = json!([{"name": "init", "env": [{"name": "A", "value": "1"}]}]);
        let out = applied(
            json!({"env": [{"name": "A", "value": "2"}], "resources": {"limits": {"cpu": 1}}}),
            json!({"initContainers": init.clone(), "containers": [{"name": "a"}]}),
        );
        assert_eq!(pod(&out)["initContainers"], init);
        assert_eq!(
            pod(&out)["containers"][0]["resources"],
            json!({"limits": {"cpu": "1"}})
        );
    }

    #[test]
    fn env_from_is_appended_unless_the_container_has_an_equal_source() {
        let out = applied(
            json!({"envFrom": [
                {"configMapRef": {"name": "cm"}},
                {"configMapRef": {"name": "cm", "optional": false}},
                {"secretRef": {"name": "s"}, "prefix": "S_"},
            ]}),
            json!({"containers": [{"name": "a", "envFrom": [{"configMapRef": {"name": "cm"}}]}]}),
        );
        // `optional: false` is not equal to no `optional` (OLM compares with DeepEqual).
        assert_eq!(
            pod(&out)["containers"][0]["envFrom"],
            json!([
                {"configMapRef": {"name": "cm"}},
                {"configMapRef": {"name": "cm", "optional": false}},
                {"prefix": "S_", "secretRef": {"name": "s"}},
            ])
        );
    }

    #[test]
    fn volumes_are_merged_by_name_into_the_pod() {
        let out = applied(
            json!({"volumes": [
                {"name": "cache", "emptyDir": {"medium": "Memory"}},
                {"name": "ca", "configMap": {"name": "ca"}},
            ]}),
            json!({"containers": [], "volumes": [
                {"name": "cache", "emptyDir": {}},
                {"name": "certs", "secret": {"secretName": "c"}},
            ]}),
        );
        assert_eq!(
            pod(&out)["volumes"],
            json!([
                {"name": "cache", "emptyDir": {"medium": "Memory"}},
                {"name": "certs", "secret": {"secretName": "c"}},
                {"name": "ca", "configMap": {"name": "ca"}},
            ])
        );
    }

    #[test]
    fn volume_mounts_are_merged_by_name_into_every_container() {
        let out = applied(
            json!({"volumeMounts": [
                {"name": "cache", "mountPath": "/cache", "readOnly": true},
                {"name": "ca", "mountPath": "/ca"},
            ]}),
            json!({"containers": [
                {"name": "a", "volumeMounts": [{"name": "cache", "mountPath": "/cache"}]},
                {"name": "b"},
            ]}),
        );
        assert_eq!(
            pod(&out)["containers"][0]["volumeMounts"],
            json!([
                {"name": "cache", "mountPath": "/cache", "readOnly": true},
                {"name": "ca", "mountPath": "/ca"},
            ])
        );
        assert_eq!(
            pod(&out)["containers"][1]["volumeMounts"]
                .as_array()
                .unwrap()
                .len(),
            2
        );
    }

    #[test]
    fn a_volume_mount_at_a_path_the_container_already_uses_is_refused() {
        let mut deployment = deployment(json!({"containers": [
            {"name": "manager", "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}]},
        ]}));
        let err = config(json!({"volumeMounts": [{"name": "scratch", "mountPath": "/tmp"}]}))
            .apply(&mut deployment)
            .unwrap_err();
        assert_eq!(
            err,
            "spec.config.deploymentConfig.volumeMounts[0] mounts volume \"scratch\" at \"/tmp\", \
             where container \"manager\" already mounts volume \"tmp\""
        );
    }

    #[test]
    fn tolerations_are_appended_unless_already_there() {
        let existing = json!({"key": "k", "operator": "Exists", "effect": "NoSchedule"});
        let out = applied(
            json!({"tolerations": [existing.clone(), {"key": "infra", "operator": "Exists"}]}),
            json!({"containers": [], "tolerations": [existing.clone()]}),
        );
        assert_eq!(
            pod(&out)["tolerations"],
            json!([existing, {"key": "infra", "operator": "Exists"}])
        );
    }

    #[test]
    fn resources_replace_every_containers_resources() {
        let out = applied(
            json!({"resources": {"requests": {"memory": "1Gi"}}}),
            json!({"containers": [
                {"name": "a", "resources": {"limits": {"cpu": "2"}, "requests": {"cpu": "1"}}},
                {"name": "b"},
            ]}),
        );
        for index in 0..2 {
            assert_eq!(
                pod(&out)["containers"][index]["resources"],
                json!({"requests": {"memory": "1Gi"}})
            );
        }
    }

    #[test]
    fn node_selector_replaces_the_pods_and_an_empty_one_removes_it() {
        let bundle = json!({"containers": [], "nodeSelector": {"kubernetes.io/os": "linux"}});
        let out = applied(json!({"nodeSelector": {"infra": ""}}), bundle.clone());
        assert_eq!(pod(&out)["nodeSelector"], json!({"infra": ""}));
        let out = applied(json!({"nodeSelector": {}}), bundle.clone());
        assert!(pod(&out).get("nodeSelector").is_none());
        let out = applied(json!({"env": []}), bundle);
        assert_eq!(
            pod(&out)["nodeSelector"],
            json!({"kubernetes.io/os": "linux"})
        );
    }

    #[test]
    fn affinity_is_replaced_per_kind_and_an_empty_one_removes_it() {
        let node = json!({"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "a", "operator": "Exists"}]}]}});
        let anti = json!({"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "podAffinityTerm": {"topologyKey": "zone"}}]});
        let bundle = json!({"containers": [], "affinity": {"nodeAffinity": node.clone(), "podAntiAffinity": anti.clone()}});
        // A kind the config sets replaces the pod's; the others are kept.
        let other = json!({"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 2, "podAffinityTerm": {"topologyKey": "host"}}]});
        let out = applied(
            json!({"affinity": {"podAntiAffinity": other.clone()}}),
            bundle.clone(),
        );
        assert_eq!(
            pod(&out)["affinity"],
            json!({"nodeAffinity": node, "podAntiAffinity": other})
        );
        // `{}` for a kind removes it (only it: OLM v0 would drop the whole affinity for an
        // empty podAntiAffinity, a bug operator-controller does not have).
        let out = applied(json!({"affinity": {"podAntiAffinity": {}}}), bundle.clone());
        assert_eq!(pod(&out)["affinity"], json!({"nodeAffinity": node}));
        // Nothing left: no affinity.
        let out = applied(
            json!({"affinity": {"nodeAffinity": {}, "podAntiAffinity": {}}}),
            bundle.clone(),
        );
        assert!(pod(&out).get("affinity").is_none());
        // `affinity: {}` removes all of it.
        let out = applied(json!({"affinity": {}}), bundle);
        assert!(pod(&out).get("affinity").is_none());
        // A pod without affinity gets the config's.
        let out = applied(
            json!({"affinity": {"podAntiAffinity": anti.clone()}}),
            json!({"containers": []}),
        );
        assert_eq!(pod(&out)["affinity"], json!({"podAntiAffinity": anti}));
    }

    #[test]
    fn annotations_are_added_to_the_deployment_and_pod_without_replacing_any() {
        let out = applied(
            json!({"annotations": {"kept": "config", "new": "config"}}),
            json!({"containers": []}),
        );
        assert_eq!(
            out["metadata"]["annotations"],
            json!({"kept": "config", "new": "config"})
        );
        assert_eq!(
            out["spec"]["template"]["metadata"]["annotations"],
            json!({"kept": "bundle", "new": "config"})
        );
    }

    #[test]
    fn null_is_no_config_and_null_fields_are_unset() {
        assert_eq!(DeploymentConfig::from_value(&Value::Null).unwrap(), None);
        assert_eq!(
            config(json!({"env": null, "affinity": null})),
            DeploymentConfig::default()
        );
    }

    #[test]
    fn an_unknown_field_is_refused_naming_it() {
        assert_eq!(
            error(json!({"nodeSelecter": {}})),
            "spec.config.deploymentConfig.nodeSelecter is not a deploymentConfig field (the fields \
             are nodeSelector, tolerations, resources, envFrom, env, volumes, volumeMounts, \
             affinity, annotations)"
        );
        assert_eq!(
            error(json!({"env": [{"name": "A"}, {"name": "B", "valeu": "1"}]})),
            "spec.config.deploymentConfig.env[1].valeu is not a field of EnvVar"
        );
        assert_eq!(
            error(json!({"volumes": [{"name": "v", "emptyDir": {"medum": "Memory"}}]})),
            "spec.config.deploymentConfig.volumes[0].emptyDir.medum is not a field of Volume"
        );
        assert_eq!(
            error(json!({"affinity": {"nodeAfinity": {}}})),
            "spec.config.deploymentConfig.affinity.nodeAfinity is not a field of Affinity"
        );
    }

    #[test]
    fn selector_is_refused() {
        assert_eq!(
            error(json!({"selector": {"matchLabels": {"a": "b"}}})),
            "spec.config.deploymentConfig.selector is not supported: OLM v0 never applied it to \
             the operator's Deployments and operator-controller refuses it; remove it"
        );
    }

    #[test]
    fn a_wrong_type_is_refused_naming_the_field() {
        assert_eq!(
            error(json!([])),
            "spec.config.deploymentConfig must be a mapping (the fields of OLM's \
             SubscriptionConfig), not a list"
        );
        assert_eq!(
            error(json!({"env": {"name": "A"}})),
            "spec.config.deploymentConfig.env must be a list of EnvVar, not a mapping"
        );
        assert_eq!(
            error(json!({"env": [{"name": "A", "value": 5}]})),
            "spec.config.deploymentConfig.env[0] is not a valid EnvVar: invalid type: integer \
             `5`, expected a string"
        );
        assert_eq!(
            error(json!({"tolerations": [{"key": "k", "tolerationSeconds": "soon"}]})),
            "spec.config.deploymentConfig.tolerations[0] is not a valid Toleration: invalid \
             type: string \"soon\", expected i64"
        );
        assert_eq!(
            error(json!({"annotations": {"a": true}})),
            "spec.config.deploymentConfig.annotations.a must be a string, not a boolean (quote it)"
        );
        assert_eq!(
            error(json!({"nodeSelector": ["a"]})),
            "spec.config.deploymentConfig.nodeSelector must be a mapping of strings, not a list"
        );
        assert_eq!(
            error(json!({"resources": {"limits": {"cpu": [1]}}})),
            "spec.config.deploymentConfig.resources is not a valid ResourceRequirements: \
             invalid type: sequence, expected Quantity"
        );
    }

    #[test]
    fn two_config_volumes_with_one_name_are_refused() {
        assert_eq!(
            error(json!({"volumes": [
                {"name": "v", "emptyDir": {}},
                {"name": "v", "configMap": {"name": "c"}},
            ]})),
            "spec.config.deploymentConfig.volumes[1]: the volume name \"v\" is already used by \
             spec.config.deploymentConfig.volumes[0] (volume names must be unique in a pod)"
        );
    }

    #[test]
    fn yaml_and_json_files_read_alike() {
        let yaml = DeploymentConfig::from_yaml("env:\n- name: A\n  value: \"1\"\n").unwrap();
        let json =
            DeploymentConfig::from_yaml(r#"{"env": [{"name": "A", "value": "1"}]}"#).unwrap();
        assert_eq!(yaml, json);
        assert_eq!(DeploymentConfig::from_yaml("").unwrap(), None);
        assert!(
            DeploymentConfig::from_yaml("env: [")
                .unwrap_err()
                .starts_with("spec.config.deploymentConfig is not valid YAML or JSON: "),
        );
    }
}
