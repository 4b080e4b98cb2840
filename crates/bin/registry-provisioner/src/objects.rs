//! Generating plain objects from a parsed bundle.
//!
//! Output order (stable for the same bundle and options): ServiceAccounts, Roles,
//! RoleBindings, ClusterRoles, ClusterRoleBindings, CustomResourceDefinitions, the other
//! manifests (file then document order), Deployments. CRDs are kept verbatim, except that
//! `apiextensions.k8s.io/v1beta1` ones are converted to v1 (see [`crate::crd`]).
//!
//! Names: generated Roles, RoleBindings, ClusterRoles and ClusterRoleBindings are named
//! `<csv name>-<service account>-<hash>`, where `<hash>` is the base-36 SHA-224 of the
//! permission's JSON (`{"rules": [...], "serviceAccountName": ...}`, keys sorted). When the
//! result is longer than 63 characters the `<csv name>-<service account>` part is cut so the
//! hash stays whole (as upstream's `generateName`; the JSON differs from Go's, so the hashes
//! are not upstream's). A binding has the name of its role. In AllNamespaces mode a promoted
//! permission is hashed with its added namespaces rule, so its name differs from the Role it
//! would have been.

use std::collections::{BTreeMap, BTreeSet};

use kube::api::DynamicObject;
use serde_json::{Value, json};
use sha2::{Digest, Sha224};

use crate::bundle::{Bundle, Permission};
use crate::error::ConvertError;

/// The annotation on the operator's pod template listing its target namespaces
/// (comma-separated; empty for all namespaces).
pub const TARGET_NAMESPACES_ANNOTATION: &str = "olm.targetNamespaces";

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

/// Kind of CustomResourceDefinitions.
pub const CRD_KIND: &str = "CustomResourceDefinition";

/// Builds the plain objects of `bundle` installed in `install_namespace` for `targets`
/// (already validated; `[""]` means all namespaces).
pub fn generate(
    bundle: &Bundle,
    install_namespace: &str,
    targets: &[String],
) -> Result<Vec<DynamicObject>, ConvertError> {
    let csv = &bundle.csv;
    let csv_name = csv.metadata.name.as_str();
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
    if !csv.spec.webhookdefinitions.is_empty() {
        return Err(unsupported("webhookDefinitions are not supported"));
    }
    if !csv.spec.apiservicedefinitions.owned.is_empty() {
        return Err(unsupported("owned apiServiceDefinitions are not supported"));
    }
    let strategy = &csv.spec.install.spec;
    let all_namespaces = targets.iter().all(String::is_empty);

    let mut permissions: Vec<Permission> = Vec::new();
    let mut cluster_permissions: Vec<Permission> = strategy.cluster_permissions.clone();
    if all_namespaces {
        // Watching all namespaces needs the namespaced rules everywhere, plus reading the
        // namespaces themselves (upstream intended this rule but appended it to a copy).
        for permission in &strategy.permissions {
            let mut promoted = permission.clone();
            promoted.rules.push(json!({
                "apiGroups": [""],
                "resources": ["namespaces"],
                "verbs": ["get", "list", "watch"],
            }));
            cluster_permissions.push(promoted);
        }
    } else {
        permissions.clone_from(&strategy.permissions);
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
        service_accounts.insert(&permission.service_account_name);
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
    for permission in &permissions {
        let name = permission_name(csv_name, permission)?;
        for namespace in targets {
            roles.push(json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "Role",
                "metadata": {"name": name, "namespace": namespace},
                "rules": permission.rules,
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
    for permission in &cluster_permissions {
        let name = permission_name(csv_name, permission)?;
        cluster_roles.push(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": name},
            "rules": permission.rules,
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

    let mut generated: Vec<DynamicObject> = objects
        .into_iter()
        .map(to_object)
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
            crds.push(crate::crd::to_v1(file, object)?);
        } else if NAMESPACED_KINDS.contains(&kind) {
            let mut object = object.clone();
            object.metadata.namespace = Some(install_namespace.to_owned());
            others.push(object);
        } else if CLUSTER_KINDS.contains(&kind) {
            others.push(object.clone());
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

    let target_list = targets.join(",");
    for deployment in &strategy.deployments {
        let mut spec = deployment.spec.clone();
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
        let mut metadata = json!({"name": deployment.name, "namespace": install_namespace});
        if !deployment.label.is_empty() {
            metadata["labels"] = json!(deployment.label);
        }
        generated.push(to_object(json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": metadata,
            "spec": spec,
        }))?);
    }
    Ok(generated)
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
        "name": permission.service_account_name,
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

/// `<csv>-<service account>-<base36 sha224 of the permission>`, at most 63 characters.
fn permission_name(csv_name: &str, permission: &Permission) -> Result<String, ConvertError> {
    let base = format!("{csv_name}-{}", permission.service_account_name);
    let json = serde_json::to_vec(permission).map_err(|err| ConvertError::Build {
        what: format!("name for the permissions of {base}"),
        message: err.to_string(),
    })?;
    Ok(hashed_name(&base, &json))
}

/// `<base>-<base36 sha224 of data>`, the base cut so the whole fits 63 characters.
pub(crate) fn hashed_name(base: &str, data: &[u8]) -> String {
    let hash = base36(&Sha224::digest(data));
    let room = MAX_NAME_LENGTH.saturating_sub(hash.len() + 1);
    let mut cut = base.len().min(room);
    while !base.is_char_boundary(cut) {
        cut -= 1;
    }
    let base = base[..cut].trim_end_matches(['-', '.']);
    format!("{base}-{hash}")
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

    #[test]
    fn hashed_names_cut_the_base_and_never_leave_a_dash_or_dot_before_the_hash() {
        let short = hashed_name("csv-sa", b"x");
        assert!(short.starts_with("csv-sa-"), "{short}");
        let long = hashed_name(&format!("{}.{}", "a".repeat(17), "b".repeat(40)), b"x");
        assert!(long.len() <= MAX_NAME_LENGTH, "{long}");
        assert!(long.starts_with(&format!("{}-", "a".repeat(17))), "{long}");
        assert!(!long.contains(".-"), "{long}");
        assert_ne!(hashed_name("csv-sa", b"x"), hashed_name("csv-sa", b"y"));
    }
}
