//! Generating plain objects from a parsed bundle.
//!
//! One object per identity (group, kind, namespace, name): manifests that repeat an object
//! identically are installed once; a manifest that defines an object the conversion
//! generates (the webhook Service `<deployment>-service`, its certificate Secret, a
//! permission's Role) gives way to the generated one, as OLM v0's generated objects replace
//! the bundle's; manifests that define one object differently are refused, naming both
//! files. Fields a CSV's deployment spec has that Kubernetes does not are dropped, as OLM
//! drops them (see [`crate::undeclared`]). Each of these is reported as an adjustment.
//!
//! Output order (stable for the same bundle and options): ServiceAccounts, Roles,
//! RoleBindings, ClusterRoles, ClusterRoleBindings, CustomResourceDefinitions, the other
//! manifests (file then document order), webhook Services and certificate objects,
//! Deployments, then webhook configurations and APIServices (see [`crate::webhooks`]). CRDs are kept verbatim, except that
//! `apiextensions.k8s.io/v1beta1` ones are converted to v1 (see [`crate::crd`]).
//!
//! Names: generated Roles, RoleBindings, ClusterRoles and ClusterRoleBindings are named as
//! operator-controller's registry+v1 renderer names them: `<base>-<hash>`, where `<base>` is
//! `<csv name>-<service account>` (`default` when the CSV leaves the account empty) and
//! `<hash>` is the SHA-224 of the permission as Go's `json.Encoder` writes it, as a base-36
//! number. Go writes the permission `{"serviceAccountName":...,"rules":[...]}` with each
//! rule's fields in `PolicyRule` order (`verbs`, then `apiGroups`, `resources`,
//! `resourceNames`, `nonResourceURLs` when not empty), escapes `<`, `>` and `&`, and ends
//! with a newline; [`go_permission_json`] writes those exact bytes. When `<base>` and
//! `<hash>` together are longer than 63 characters, `<base>` is cut to `62 - <hash length>`
//! bytes, exactly as upstream (which can leave a `-` or `.` before the hash, and gives a
//! 64-character name when the two are exactly 63 long; RBAC names may be that long). A
//! binding has the name of its role. In AllNamespaces mode a promoted permission is hashed
//! with its added namespaces rule, so its name differs from the Role it would have been.

use std::collections::{BTreeMap, BTreeSet};

use kube::api::DynamicObject;
use serde_json::{Value, json};
use sha2::{Digest, Sha224};

use crate::bundle::{Bundle, Permission};
use crate::deployment_config::DeploymentConfig;
use crate::error::ConvertError;
use crate::webhooks;

/// The annotation on the operator's pod template listing its target namespaces
/// (comma-separated; empty for all namespaces).
pub const TARGET_NAMESPACES_ANNOTATION: &str = "olm.targetNamespaces";

/// The annotation on the operator's pod template naming its install namespace (OLM v0 puts
/// its OperatorGroup's namespace there); operators read it through the downward API.
pub const OPERATOR_NAMESPACE_ANNOTATION: &str = "olm.operatorNamespace";

/// The `revisionHistoryLimit` of every operator Deployment, as OLM sets it (replacing the
/// CSV's), so old ReplicaSets do not pile up across upgrades.
pub const REVISION_HISTORY_LIMIT: i64 = 1;

/// The longest object name.
const MAX_NAME_LENGTH: usize = 63;

/// Namespaced kinds OLM allows among a bundle's manifests (operator-registry's supported
/// resources); they are moved into the install namespace.
pub const NAMESPACED_KINDS: &[&str] = &[
    "ConfigMap",
    "NetworkPolicy",
    "PodDisruptionBudget",
    "PrometheusRule",
    "Role",
    "RoleBinding",
    "Secret",
    "Service",
    "ServiceAccount",
    "ServiceMonitor",
    "VerticalPodAutoscaler",
];

/// Cluster-scoped kinds OLM allows among a bundle's manifests, besides CRDs.
pub const CLUSTER_KINDS: &[&str] = &[
    "ClusterRole",
    "ClusterRoleBinding",
    "ConsoleCLIDownload",
    "ConsoleLink",
    "ConsoleQuickStart",
    "ConsoleYAMLSample",
    "PriorityClass",
];

pub use crate::bundle::CRD_KIND;

/// The objects of a bundle and what was changed from the bundle as written.
#[derive(Debug, Clone, Default)]
pub struct Generated {
    /// The plain objects, in output order.
    pub objects: Vec<DynamicObject>,
    /// The changes, as sentences naming the object and where it comes from.
    pub adjustments: Vec<String>,
}

/// Where an object of the output comes from, for messages and precedence.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Origin {
    /// A manifest of the bundle, by file.
    Manifest(String),
    /// Made by the conversion from the CSV.
    Generated,
}

/// Builds the plain objects of `bundle` installed in `install_namespace` for `targets`
/// (already validated; `[""]` means all namespaces), with `config` applied to every
/// Deployment.
pub fn generate(
    bundle: &Bundle,
    install_namespace: &str,
    targets: &[String],
    config: Option<&DeploymentConfig>,
    settings: &webhooks::Settings<'_>,
) -> Result<Generated, ConvertError> {
    let csv = &bundle.csv;
    let csv_name = csv.metadata.name.as_str();
    let invalid_csv = |message: String| ConvertError::InvalidCsv {
        file: bundle.csv_file.clone(),
        name: csv_name.to_owned(),
        message,
    };
    let unsupported = |message: &str| ConvertError::UnsupportedCsv {
        file: bundle.csv_file.clone(),
        name: csv_name.to_owned(),
        message: message.to_owned(),
    };
    if csv.spec.install.strategy != "deployment" {
        return Err(unsupported(&format!(
            "install strategy {:?} is not supported, only \"deployment\"",
            csv.spec.install.strategy
        )));
    }
    let strategy = &csv.spec.install.spec;
    if let Some(name) = duplicate(strategy.deployments.iter().map(|d| d.name.as_str())) {
        return Err(invalid_csv(format!(
            "spec.install.spec.deployments has two Deployments named {name:?}"
        )));
    }
    let webhooks = webhooks::render(
        bundle,
        &webhooks::Context {
            install_namespace,
            targets,
            provider: settings.provider,
            protected_namespaces: settings.protected_namespaces,
            selector_policy: settings.selector_policy,
        },
    )
    .map_err(invalid_csv)?;
    let all_namespaces = targets.iter().all(String::is_empty);

    // Each permission with the CSV field it comes from, for messages.
    let field = |list: &str, index: usize| format!("spec.install.spec.{list}[{index}]");
    let mut permissions: Vec<(String, Permission)> = Vec::new();
    let mut cluster_permissions: Vec<(String, Permission)> = strategy
        .cluster_permissions
        .iter()
        .enumerate()
        .map(|(index, p)| (field("clusterPermissions", index), p.clone()))
        .collect();
    for (index, permission) in strategy.permissions.iter().enumerate() {
        let field = field("permissions", index);
        if all_namespaces {
            // Watching all namespaces needs the namespaced rules everywhere, plus reading
            // the namespaces themselves, as upstream adds.
            let mut promoted = permission.clone();
            promoted.rules.get_or_insert_with(Vec::new).push(json!({
                "apiGroups": [""],
                "resources": ["namespaces"],
                "verbs": ["get", "list", "watch"],
            }));
            cluster_permissions.push((field, promoted));
        } else {
            permissions.push((field, permission.clone()));
        }
    }

    let mut service_accounts: BTreeSet<&str> = BTreeSet::new();
    for deployment in &strategy.deployments {
        let account = deployment
            .spec
            .pointer("/template/spec/serviceAccountName")
            .and_then(Value::as_str)
            .unwrap_or_default();
        service_accounts.insert(account);
    }
    for permission in strategy
        .permissions
        .iter()
        .chain(&strategy.cluster_permissions)
    {
        service_accounts.insert(permission.service_account());
    }

    // A ServiceAccount the bundle ships itself is not generated a second time.
    let shipped: BTreeSet<&str> = bundle
        .others
        .iter()
        .filter(|(_, o)| o.types.as_ref().is_some_and(|t| t.kind == "ServiceAccount"))
        .filter_map(|(_, o)| o.metadata.name.as_deref())
        .collect();
    let mut objects: Vec<Value> = Vec::new();
    for account in service_accounts
        .into_iter()
        .filter(|sa| !sa.is_empty() && *sa != "default" && !shipped.contains(sa))
    {
        objects.push(json!({
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": account, "namespace": install_namespace},
        }));
    }

    let mut roles = Vec::new();
    let mut role_bindings = Vec::new();
    for (field, permission) in &permissions {
        let name = permission_name(csv_name, field, permission).map_err(invalid_csv)?;
        for namespace in targets {
            roles.push(json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "Role",
                "metadata": {"name": name, "namespace": namespace},
                "rules": permission.rules(),
            }));
            role_bindings.push(json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": {"name": name, "namespace": namespace},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
                "subjects": [subject(permission, install_namespace)],
            }));
        }
    }
    let mut cluster_roles = Vec::new();
    let mut cluster_role_bindings = Vec::new();
    for (field, permission) in &cluster_permissions {
        let name = permission_name(csv_name, field, permission).map_err(invalid_csv)?;
        cluster_roles.push(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": name},
            "rules": permission.rules(),
        }));
        cluster_role_bindings.push(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": [subject(permission, install_namespace)],
        }));
    }
    objects.extend(roles);
    objects.extend(role_bindings);
    objects.extend(cluster_roles);
    objects.extend(cluster_role_bindings);

    let mut adjustments = webhooks.adjustments.clone();
    let mut generated: Vec<(Origin, DynamicObject)> = objects
        .into_iter()
        .map(|object| to_object(object).map(|object| (Origin::Generated, object)))
        .collect::<Result<_, _>>()?;

    let mut crds = Vec::new();
    let mut others = Vec::new();
    for (file, object) in &bundle.others {
        let kind = object
            .types
            .as_ref()
            .map(|types| types.kind.as_str())
            .unwrap_or_default();
        if kind == CRD_KIND {
            let mut crd = crate::crd::to_v1(file, object)?;
            let name = crd.metadata.name.clone().unwrap_or_default();
            if let Some((conversion, annotations)) = webhooks.conversions.get(&name) {
                if crd.data.pointer("/spec/preserveUnknownFields") == Some(&Value::Bool(true)) {
                    return Err(invalid_csv(format!(
                        "spec.webhookdefinitions converts CRD {name:?} (in {file}), which sets \
                         spec.preserveUnknownFields: true; the API server only calls a \
                         conversion webhook for CRDs that do not"
                    )));
                }
                crd.data["spec"]["conversion"] = conversion.clone();
                crd.metadata
                    .annotations
                    .get_or_insert_with(BTreeMap::new)
                    .extend(annotations.clone());
            }
            crds.push((Origin::Manifest(file.clone()), crd));
        } else if NAMESPACED_KINDS.contains(&kind) {
            let mut object = object.clone();
            object.metadata.namespace = Some(install_namespace.to_owned());
            others.push((Origin::Manifest(file.clone()), object));
        } else if CLUSTER_KINDS.contains(&kind) {
            others.push((Origin::Manifest(file.clone()), object.clone()));
        } else {
            return Err(ConvertError::UnsupportedKind {
                file: file.clone(),
                kind: kind.to_owned(),
                name: object.metadata.name.clone().unwrap_or_default(),
            });
        }
    }
    generated.extend(crds);
    generated.extend(others);
    let (services_and_certificates, admission): (Vec<Value>, Vec<Value>) = webhooks
        .objects
        .into_iter()
        .partition(|o| !matches!(o["kind"].as_str(), Some(k) if k.ends_with("WebhookConfiguration") || k == "APIService"));
    for object in services_and_certificates {
        generated.push((Origin::Generated, to_object(object)?));
    }

    let target_list = targets.join(",");
    for (index, deployment) in strategy.deployments.iter().enumerate() {
        let mut spec = deployment.spec.clone();
        let dropped =
            crate::undeclared::remove::<k8s_openapi::api::apps::v1::DeploymentSpec>(&mut spec);
        if !dropped.is_empty() {
            adjustments.push(format!(
                "Deployment {} (spec.install.spec.deployments[{index}]): dropped {}, which \
                 Kubernetes does not have and the API server would refuse (OLM drops {} too)",
                deployment.name,
                dropped
                    .iter()
                    .map(|field| format!("spec.{}", field.path))
                    .collect::<Vec<_>>()
                    .join(", "),
                if dropped.len() == 1 { "it" } else { "them" },
            ));
        }
        let mut annotations: BTreeMap<String, Value> = csv
            .metadata
            .annotations
            .iter()
            .map(|(key, value)| (key.clone(), Value::String(value.clone())))
            .collect();
        if let Some(Value::Object(existing)) = spec.pointer("/template/metadata/annotations") {
            annotations.extend(existing.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        annotations.insert(
            TARGET_NAMESPACES_ANNOTATION.to_owned(),
            Value::String(target_list.clone()),
        );
        annotations.insert(
            OPERATOR_NAMESPACE_ANNOTATION.to_owned(),
            Value::String(install_namespace.to_owned()),
        );
        let invalid = |field: &str| ConvertError::InvalidCsv {
            file: bundle.csv_file.clone(),
            name: csv_name.to_owned(),
            message: format!(
                "spec.install.spec.deployments[{}].spec.{field} is not an object",
                deployment.name
            ),
        };
        let template = ensure_object(&mut spec, "template").ok_or_else(|| invalid("template"))?;
        let metadata =
            ensure_object(template, "metadata").ok_or_else(|| invalid("template.metadata"))?;
        if let Value::Object(map) = metadata {
            map.insert(
                "annotations".to_owned(),
                Value::Object(annotations.into_iter().collect()),
            );
        }
        if let Value::Object(spec) = &mut spec {
            spec.insert(
                "revisionHistoryLimit".to_owned(),
                Value::from(REVISION_HISTORY_LIMIT),
            );
        }
        let mut metadata = json!({"name": deployment.name, "namespace": install_namespace});
        if !deployment.label.is_empty() {
            metadata["labels"] = json!(deployment.label);
        }
        let mut object = json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": metadata,
            "spec": spec,
        });
        if let Some(secret) = webhooks.cert_secrets.get(&deployment.name) {
            webhooks::mount_certificates(&mut object, secret).map_err(|message| {
                invalid_csv(format!(
                    "spec.install.spec.deployments[{}]: {message}",
                    deployment.name
                ))
            })?;
        }
        if let Some(config) = config {
            config
                .apply(&mut object)
                .map_err(|message| ConvertError::DeploymentConfig {
                    file: bundle.csv_file.clone(),
                    name: csv_name.to_owned(),
                    deployment: deployment.name.clone(),
                    message,
                })?;
        }
        generated.push((Origin::Generated, to_object(object)?));
    }
    for object in admission {
        generated.push((Origin::Generated, to_object(object)?));
    }
    let (objects, duplicates) = one_per_identity(generated)?;
    adjustments.extend(duplicates);
    Ok(Generated {
        objects,
        adjustments,
    })
}

/// An object's identity: API group, kind, namespace and name (two versions of one group
/// name the same object).
fn identity(object: &DynamicObject) -> (String, String, String, String) {
    let (group, kind) = object
        .types
        .as_ref()
        .map_or_else(Default::default, |types| {
            let group = types
                .api_version
                .rsplit_once('/')
                .map_or("", |(group, _)| group);
            (group.to_owned(), types.kind.clone())
        });
    (
        group,
        kind,
        object.metadata.namespace.clone().unwrap_or_default(),
        object.metadata.name.clone().unwrap_or_default(),
    )
}

/// `kind "name"` or `kind "name" in namespace "ns"`, for messages.
fn describe(object: &DynamicObject) -> String {
    let (_, kind, namespace, name) = identity(object);
    if namespace.is_empty() {
        format!("{kind} {name:?}")
    } else {
        format!("{kind} {name:?} in namespace {namespace:?}")
    }
}

/// Keeps one object per identity (see the module docs): the first of identical manifests,
/// the generated one over a manifest's; manifests that differ are refused. The objects in
/// their order, and a sentence per object left out.
fn one_per_identity(
    objects: Vec<(Origin, DynamicObject)>,
) -> Result<(Vec<DynamicObject>, Vec<String>), ConvertError> {
    let mut kept: Vec<(Origin, DynamicObject)> = Vec::with_capacity(objects.len());
    let mut index: BTreeMap<(String, String, String, String), usize> = BTreeMap::new();
    let mut adjustments = Vec::new();
    for (origin, object) in objects {
        let key = identity(&object);
        let Some(&at) = index.get(&key) else {
            index.insert(key, kept.len());
            kept.push((origin, object));
            continue;
        };
        let (first_origin, first) = &kept[at];
        match (first_origin, &origin) {
            (Origin::Manifest(first_file), Origin::Manifest(file)) => {
                if serde_json::to_value(first).ok() != serde_json::to_value(&object).ok() {
                    return Err(ConvertError::ConflictingDuplicate {
                        what: describe(&object),
                        first: first_file.clone(),
                        second: file.clone(),
                    });
                }
                adjustments.push(format!(
                    "{} is defined identically in {first_file} and {file}; it is installed once",
                    describe(&object)
                ));
            }
            (Origin::Manifest(file), Origin::Generated) => {
                adjustments.push(format!(
                    "{} of {file} is replaced by the one generated from the CSV, as OLM \
                     replaces it",
                    describe(&object)
                ));
                kept.remove(at);
                index.clear();
                for (position, (_, object)) in kept.iter().enumerate() {
                    index.insert(identity(object), position);
                }
                index.insert(key, kept.len());
                kept.push((origin, object));
            }
            (Origin::Generated, Origin::Manifest(file)) => adjustments.push(format!(
                "{} of {file} is replaced by the one generated from the CSV, as OLM replaces it",
                describe(&object)
            )),
            // The conversion never makes one object twice; keep the first if it did.
            (Origin::Generated, Origin::Generated) => {}
        }
    }
    Ok((
        kept.into_iter().map(|(_, object)| object).collect(),
        adjustments,
    ))
}

/// The first name that appears twice.
fn duplicate<'a>(names: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let mut seen = BTreeSet::new();
    names.into_iter().find(|name| !seen.insert(*name))
}

/// The member `key` of the object `value` (created empty when missing), or `None` when
/// `value` or the member is not an object.
fn ensure_object<'v>(value: &'v mut Value, key: &str) -> Option<&'v mut Value> {
    let map = value.as_object_mut()?;
    let member = map
        .entry(key.to_owned())
        .or_insert_with(|| Value::Object(serde_json::Map::new()));
    member.is_object().then_some(member)
}

fn subject(permission: &Permission, install_namespace: &str) -> Value {
    json!({
        "kind": "ServiceAccount",
        "name": permission.service_account(),
        "namespace": install_namespace,
    })
}

fn to_object(value: Value) -> Result<DynamicObject, ConvertError> {
    let what = format!(
        "{} {}",
        value["kind"].as_str().unwrap_or_default(),
        value["metadata"]["name"].as_str().unwrap_or_default()
    );
    serde_json::from_value(value).map_err(|err| ConvertError::Build {
        what,
        message: err.to_string(),
    })
}

/// The name of the Role/ClusterRole (and binding) of `permission`, read from the CSV field
/// `field`: `<csv>-<service account>-<hash>` as upstream computes it (see the module docs).
fn permission_name(csv_name: &str, field: &str, permission: &Permission) -> Result<String, String> {
    let base = format!("{csv_name}-{}", permission.service_account());
    let json = go_permission_json(field, permission)?;
    Ok(hashed_name(&base, json.as_bytes()))
}

/// `<base>-<base36 sha224 of data>`, as upstream's `ObjectNameForBaseAndSuffix`: when the
/// two are longer than 63 bytes together, `base` is cut to `62 - <hash length>` bytes.
pub(crate) fn hashed_name(base: &str, data: &[u8]) -> String {
    let hash = base36(&Sha224::digest(data));
    let mut base = base;
    if base.len() + hash.len() > MAX_NAME_LENGTH {
        let mut cut = MAX_NAME_LENGTH.saturating_sub(hash.len() + 1);
        // Names are ASCII; never split a character of anything else.
        while !base.is_char_boundary(cut) {
            cut -= 1;
        }
        base = &base[..cut];
    }
    format!("{base}-{hash}")
}

/// The fields of an RBAC `PolicyRule` in Go's declaration order, and whether Go leaves the
/// field out when it is empty (`omitempty`).
const POLICY_RULE_FIELDS: [(&str, bool); 5] = [
    ("verbs", false),
    ("apiGroups", true),
    ("resources", true),
    ("resourceNames", true),
    ("nonResourceURLs", true),
];

/// The bytes Go's `json.NewEncoder(w).Encode(permission)` writes for a
/// `StrategyDeploymentPermissions` decoded from this permission: what upstream hashes.
/// Fields Go's types do not have are left out, as Go drops them when it reads the CSV; a
/// rule field that is not a list of strings is an error naming `field`.
fn go_permission_json(field: &str, permission: &Permission) -> Result<String, String> {
    let mut out = String::from("{\"serviceAccountName\":");
    go_string(&mut out, &permission.service_account_name);
    out.push_str(",\"rules\":");
    match &permission.rules {
        // A nil slice: the CSV has no `rules`, or `rules: null`.
        None => out.push_str("null"),
        Some(rules) => {
            out.push('[');
            for (index, rule) in rules.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                go_policy_rule(&mut out, &format!("{field}.rules[{index}]"), rule)?;
            }
            out.push(']');
        }
    }
    out.push_str("}\n");
    Ok(out)
}

fn go_policy_rule(out: &mut String, field: &str, rule: &Value) -> Result<(), String> {
    let Some(rule) = rule.as_object() else {
        return Err(format!("{field} must be a mapping (a PolicyRule)"));
    };
    out.push('{');
    let mut first = true;
    for (key, omit_empty) in POLICY_RULE_FIELDS {
        let list = match rule.get(key) {
            None | Some(Value::Null) => None,
            Some(Value::Array(items)) => Some(items),
            Some(_) => return Err(format!("{field}.{key} must be a list of strings")),
        };
        if omit_empty && list.is_none_or(|items| items.is_empty()) {
            continue;
        }
        if !first {
            out.push(',');
        }
        first = false;
        go_string(out, key);
        out.push(':');
        let Some(items) = list else {
            out.push_str("null");
            continue;
        };
        out.push('[');
        for (index, item) in items.iter().enumerate() {
            if index > 0 {
                out.push(',');
            }
            match item {
                Value::String(text) => go_string(out, text),
                // Go reads `null` in a string list as "".
                Value::Null => go_string(out, ""),
                _ => {
                    return Err(format!(
                        "{field}.{key}[{index}] must be a string, not {}",
                        apply_engine::manifest::json_type(item)
                    ));
                }
            }
        }
        out.push(']');
    }
    out.push('}');
    Ok(())
}

/// `text` as a JSON string the way Go's `encoding/json` writes it (HTML escaping on).
fn go_string(out: &mut String, text: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push('"');
    for ch in text.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' | '\u{0}'..='\u{1f}' => {
                let code = u32::from(ch);
                out.push_str("\\u");
                for shift in [12, 8, 4, 0] {
                    out.push(char::from(HEX[((code >> shift) & 0xf) as usize]));
                }
            }
            other => out.push(other),
        }
    }
    out.push('"');
}

/// The big-endian unsigned number `bytes` in base 36 (digits then lowercase letters).
fn base36(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut number: Vec<u8> = bytes.to_vec();
    let mut out = Vec::new();
    while number.iter().any(|&b| b != 0) {
        let mut remainder: u32 = 0;
        for byte in &mut number {
            let current = (remainder << 8) | u32::from(*byte);
            *byte = u8::try_from(current / 36).unwrap_or(0);
            remainder = current % 36;
        }
        out.push(DIGITS[remainder as usize]);
    }
    if out.is_empty() {
        out.push(b'0');
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base36_writes_big_endian_numbers_without_leading_zeros() {
        assert_eq!(base36(&[0]), "0");
        assert_eq!(base36(&[0, 35]), "z");
        // 256 = 7 * 36 + 4
        assert_eq!(base36(&[1, 0]), "74");
        assert_eq!(base36(&[0xff, 0xff, 0xff, 0xff]), "1z141z3");
    }

    /// The hash of upstream's `DeepHashObject` for a few values, as its own tests pin them:
    /// SHA-224 of Go's JSON plus newline, in base 36.
    #[test]
    fn the_hash_is_base36_sha224_of_go_json_with_its_newline() {
        let hash = |data: &[u8]| base36(&Sha224::digest(data));
        assert_eq!(
            hash(b"\"a\"\n"),
            "1lu1qv1451mq7gv9upu1cx8ffffi07rel5xvbvvc44dh"
        );
        assert_eq!(
            hash(b"null\n"),
            "2im0kl1kwvzn46sr4cdtkvmdzrlurvj51xdzhwdht8l0"
        );
        assert_eq!(
            hash(b"{}\n"),
            "16jfjhihxbzhfhs1k5mimq740kvioi98pfbea9q6qtf9"
        );
    }

    fn permission(yaml: &str) -> Permission {
        serde_yaml_ng::from_str(yaml).unwrap()
    }

    /// Computed by hand from upstream's algorithm (`sha224sum` of the JSON below, written in
    /// base 36; the 62-byte base cut to 63 - 42 - 1 = 20 bytes).
    #[test]
    fn a_permission_gets_the_name_upstream_gives_it() {
        let permission = permission(
            "serviceAccountName: memcached-operator-controller-manager\n\
             rules:\n\
             - apiGroups: ['']\n  resources: [pods]\n  verbs: [get, list]\n  unknownField: x\n",
        );
        let field = "spec.install.spec.permissions[0]";
        assert_eq!(
            go_permission_json(field, &permission).unwrap(),
            "{\"serviceAccountName\":\"memcached-operator-controller-manager\",\"rules\":\
             [{\"verbs\":[\"get\",\"list\"],\"apiGroups\":[\"\"],\"resources\":[\"pods\"]}]}\n"
        );
        assert_eq!(
            permission_name("memcached-operator.v0.0.1", field, &permission).unwrap(),
            "memcached-operator.v-knqgzwcpnbgrl2irwyzwnhb3v03zfe5pzk0xoogwu2"
        );
    }

    #[test]
    fn go_json_tells_missing_null_and_empty_lists_apart_as_go_does() {
        let field = "spec.install.spec.clusterPermissions[1]";
        let json = |yaml: &str| go_permission_json(field, &permission(yaml)).unwrap();
        assert_eq!(
            json("serviceAccountName: sa\n"),
            "{\"serviceAccountName\":\"sa\",\"rules\":null}\n"
        );
        assert_eq!(
            json("serviceAccountName: sa\nrules: null\n"),
            json("serviceAccountName: sa\n")
        );
        assert_eq!(
            json("rules: []\n"),
            "{\"serviceAccountName\":\"\",\"rules\":[]}\n"
        );
        // `verbs` is written even when missing (Go has no omitempty on it); empty lists of
        // the other fields are left out.
        assert_eq!(
            json("rules: [{apiGroups: [], nonResourceURLs: ['/metrics<&>']}]\n"),
            "{\"serviceAccountName\":\"\",\"rules\":[{\"verbs\":null,\
             \"nonResourceURLs\":[\"/metrics\\u003c\\u0026\\u003e\"]}]}\n"
        );
        assert_eq!(
            json("rules: [{verbs: []}]\n"),
            "{\"serviceAccountName\":\"\",\"rules\":[{\"verbs\":[]}]}\n"
        );
    }

    #[test]
    fn go_strings_escape_as_go_does() {
        let mut out = String::new();
        go_string(&mut out, "a\"b\\c\n\t\u{1}\u{8}\u{2028}é");
        assert_eq!(out, "\"a\\\"b\\\\c\\n\\t\\u0001\\b\\u2028é\"");
    }

    #[test]
    fn a_rule_field_of_the_wrong_shape_is_an_error_naming_the_csv_field() {
        let field = "spec.install.spec.permissions[2]";
        let err = go_permission_json(field, &permission("rules: [{verbs: get}]\n")).unwrap_err();
        assert_eq!(
            err,
            "spec.install.spec.permissions[2].rules[0].verbs must be a list of strings"
        );
        let err = go_permission_json(
            field,
            &permission("rules: [{verbs: [get]}, {resources: [1]}]\n"),
        )
        .unwrap_err();
        assert_eq!(
            err,
            "spec.install.spec.permissions[2].rules[1].resources[0] must be a string, not a number"
        );
        let err = go_permission_json(field, &permission("rules: [get]\n")).unwrap_err();
        assert_eq!(
            err,
            "spec.install.spec.permissions[2].rules[0] must be a mapping (a PolicyRule)"
        );
    }

    #[test]
    fn hashed_names_cut_the_base_exactly_as_upstream() {
        let hash = base36(&Sha224::digest(b"x"));
        let short = hashed_name("csv-sa", b"x");
        assert_eq!(short, format!("csv-sa-{hash}"));
        // Cut to 62 - hash length bytes, even when that leaves a dot before the dash.
        let long_base = format!("{}.{}", "a".repeat(61 - hash.len()), "b".repeat(40));
        let long = hashed_name(&long_base, b"x");
        assert_eq!(long, format!("{}.-{hash}", "a".repeat(61 - hash.len())));
        assert_eq!(long.len(), MAX_NAME_LENGTH);
        // Base and hash exactly 63 long together are not cut: the name is 64 long.
        let exact = hashed_name(&"c".repeat(MAX_NAME_LENGTH - hash.len()), b"x");
        assert_eq!(exact.len(), MAX_NAME_LENGTH + 1);
        assert_ne!(hashed_name("csv-sa", b"x"), hashed_name("csv-sa", b"y"));
    }
}
