//! The objects an activation writes, built without a cluster: the ResolveSet ConfigMap (a
//! plain+v0 bundle whose manifests are the child BundleDeployments), the wrapper
//! BundleDeployment pointing at it, and which old ResolveSets to delete.

use std::collections::BTreeMap;

use deppy_api::ActiveResolution;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::ObjectMeta;
use kube::{Resource, ResourceExt};
use rukpak_api::{
    BundleDeployment, BundleDeploymentSpec, BundleSource, BundleSpec, BundleTemplate,
    CollisionProtection, ConfigMapRef, ConfigMapSource, DeletionPolicy, PLAIN_PROVISIONER_CLASS,
    ServiceAccountRef, SourceType, TemplateMetadata,
};

use crate::names;

/// Label on every object the activator writes for a resolution (ResolveSet ConfigMaps,
/// wrapper and child BundleDeployments): the ActiveResolution's name (shortened with a
/// hash when longer than a label value may be).
pub const RESOLUTION_LABEL: &str = "deppy.io/resolution";

/// Annotation on a ResolveSet ConfigMap: its position in the resolution's history (1 for
/// the first ResolveSet of a resolution, then one more for each new one).
pub const SEQUENCE_ANNOTATION: &str = "deppy.io/resolve-set-sequence";

/// The directory the wrapper's Bundle holds the ResolveSet's files in: plain+v0 bundles keep
/// their objects in a flat `manifests/` directory.
pub const MANIFESTS_PATH: &str = "manifests";

/// The longest ConfigMap name.
const CONFIG_MAP_NAME_MAX: usize = 253;

/// Failure to build the ResolveSet.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// A child BundleDeployment could not be written as YAML.
    #[error("failed to serialise BundleDeployment {name}")]
    Serialise {
        /// The child's name.
        name: String,
        /// Why.
        #[source]
        source: serde_yaml_ng::Error,
    },
    /// Two entities produced a child of the same name.
    #[error(
        "failed to build the ResolveSet: packages {first} and {second} both produce BundleDeployment {name}"
    )]
    DuplicateChild {
        /// The child's name.
        name: String,
        /// The package that produced it first.
        first: String,
        /// The package that produced it again.
        second: String,
    },
    /// The ActiveResolution has no uid yet (it was not read from the API server).
    #[error("failed to reference ActiveResolution {0} as owner: it has no uid")]
    NoUid(String),
    /// The install identity annotation does not name a ServiceAccount.
    #[error(
        "the annotation {annotation} must name a ServiceAccount as NAMESPACE/NAME, not {value:?}",
        annotation = deppy_api::SERVICE_ACCOUNT_ANNOTATION
    )]
    InvalidServiceAccount {
        /// The annotation's value.
        value: String,
    },
}

/// The ServiceAccount the resolution's install applies as (the annotation
/// [`deppy_api::SERVICE_ACCOUNT_ANNOTATION`]): `spec.serviceAccount` of the wrapper and of
/// every child. `None`: the provisioner classes' default identities.
pub fn install_account(
    resolution: &ActiveResolution,
) -> Result<Option<ServiceAccountRef>, BuildError> {
    resolution
        .annotations()
        .get(deppy_api::SERVICE_ACCOUNT_ANNOTATION)
        .map(|value| {
            value
                .parse()
                .map_err(|_| BuildError::InvalidServiceAccount {
                    value: value.clone(),
                })
        })
        .transpose()
}

/// The labels every object written for `resolution` carries: the resolution's own labels
/// (so selectors and administrators' labels follow the chain) plus [`RESOLUTION_LABEL`],
/// which wins.
pub fn propagated_labels(resolution: &ActiveResolution) -> BTreeMap<String, String> {
    let mut labels = resolution.labels().clone();
    labels.insert(
        RESOLUTION_LABEL.to_owned(),
        names::label_value(&resolution.name_any()),
    );
    labels
}

/// Puts `labels` under the child's own labels (its own win) on `metadata.labels` and
/// `spec.template.metadata.labels`.
fn label_child(child: &mut BundleDeployment, labels: &BTreeMap<String, String>) {
    let mut merged = labels.clone();
    merged.extend(child.labels().clone());
    child.metadata.labels = Some(merged);
    let template = child
        .spec
        .template
        .metadata
        .get_or_insert_with(TemplateMetadata::default);
    let mut merged = labels.clone();
    merged.append(&mut template.labels);
    template.labels = merged;
}

/// The ResolveSet's files: `<package>-bd.yaml` per entity, holding that entity's child
/// BundleDeployments (labelled with `labels`), as multi-document YAML.
pub fn manifests(
    children: &[(String, Vec<BundleDeployment>)],
    labels: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>, BuildError> {
    let mut names: BTreeMap<String, String> = BTreeMap::new();
    let mut files = BTreeMap::new();
    for (package, deployments) in children {
        let mut documents = Vec::new();
        for deployment in deployments {
            let mut child = deployment.clone();
            let name = child.name_any();
            if let Some(first) = names.insert(name.clone(), package.clone()) {
                return Err(BuildError::DuplicateChild {
                    name,
                    first,
                    second: package.clone(),
                });
            }
            label_child(&mut child, labels);
            child.status = None;
            let yaml = serde_yaml_ng::to_string(&child)
                .map_err(|source| BuildError::Serialise { name, source })?;
            documents.push(yaml);
        }
        files.insert(format!("{package}-bd.yaml"), documents.join("---\n"));
    }
    Ok(files)
}

/// The hash naming a ResolveSet: [`names::short_hash`] of its files, so the same decision
/// always gives the same ConfigMap.
pub fn content_hash(files: &BTreeMap<String, String>) -> String {
    let mut bytes = Vec::new();
    for (key, value) in files {
        bytes.extend_from_slice(key.as_bytes());
        bytes.push(0);
        bytes.extend_from_slice(value.as_bytes());
        bytes.push(0);
    }
    names::short_hash(&bytes)
}

/// The name of the ResolveSet ConfigMap of `resolution` with `files`:
/// `<resolution>-<content hash>`.
pub fn config_map_name(resolution: &str, files: &BTreeMap<String, String>) -> String {
    let hash = content_hash(files);
    let base = names::fit(resolution, CONFIG_MAP_NAME_MAX - hash.len() - 1);
    format!("{base}-{hash}")
}

/// The immutable ResolveSet ConfigMap in `namespace`, owned by `resolution`.
pub fn config_map(
    resolution: &ActiveResolution,
    namespace: &str,
    files: BTreeMap<String, String>,
    sequence: u64,
) -> Result<ConfigMap, BuildError> {
    let name = resolution.name_any();
    let owner = resolution
        .controller_owner_ref(&())
        .ok_or_else(|| BuildError::NoUid(name.clone()))?;
    Ok(ConfigMap {
        metadata: ObjectMeta {
            name: Some(config_map_name(&name, &files)),
            namespace: Some(namespace.to_owned()),
            labels: Some(propagated_labels(resolution)),
            annotations: Some(BTreeMap::from([(
                SEQUENCE_ANNOTATION.to_owned(),
                sequence.to_string(),
            )])),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        },
        data: Some(files),
        immutable: Some(true),
        ..ConfigMap::default()
    })
}

/// The name of the wrapper BundleDeployment of `resolution`.
pub fn wrapper_name(resolution: &str) -> String {
    names::fit(resolution, rukpak_api::BUNDLE_DEPLOYMENT_NAME_MAX)
}

/// The wrapper BundleDeployment: plain+v0, its Bundle made from ResolveSet `config_map`,
/// owned (as controller) by `resolution`.
pub fn wrapper(
    resolution: &ActiveResolution,
    config_map: &str,
    annotations: BTreeMap<String, String>,
) -> Result<BundleDeployment, BuildError> {
    let name = resolution.name_any();
    let owner = resolution
        .controller_owner_ref(&())
        .ok_or_else(|| BuildError::NoUid(name.clone()))?;
    let labels = propagated_labels(resolution);
    let service_account = install_account(resolution)?;
    Ok(BundleDeployment {
        metadata: ObjectMeta {
            name: Some(wrapper_name(&name)),
            labels: Some(labels.clone()),
            annotations: Some(annotations).filter(|a| !a.is_empty()),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        },
        spec: BundleDeploymentSpec {
            provisioner_class_name: PLAIN_PROVISIONER_CLASS.to_owned(),
            template: BundleTemplate {
                metadata: Some(TemplateMetadata {
                    labels,
                    annotations: BTreeMap::new(),
                }),
                spec: BundleSpec {
                    provisioner_class_name: PLAIN_PROVISIONER_CLASS.to_owned(),
                    source: BundleSource {
                        type_: SourceType::ConfigMaps,
                        image: None,
                        git: None,
                        http: None,
                        config_maps: Some(vec![ConfigMapSource {
                            config_map: ConfigMapRef {
                                name: config_map.to_owned(),
                            },
                            path: Some(MANIFESTS_PATH.to_owned()),
                        }]),
                        upload: None,
                    },
                },
            },
            config: None,
            install_namespace: None,
            paused: None,
            service_account,
            collision_protection: CollisionProtection::Prevent,
            deletion_policy: DeletionPolicy::Delete,
            revision_history_limit: None,
            health_checks: Vec::new(),
            progress_deadline_seconds: None,
            rollback_on_failure: None,
            upgrade_approval: Default::default(),
            approved_revision: None,
        },
        status: None,
    })
}

/// Whether `existing` already is `desired` as far as the activator sets it (same spec, and
/// its labels, annotations and owner references present), so applying it would change nothing.
pub fn wrapper_is_current(existing: &BundleDeployment, desired: &BundleDeployment) -> bool {
    let contains = |have: &BTreeMap<String, String>, want: &BTreeMap<String, String>| {
        want.iter().all(|(k, v)| have.get(k) == Some(v))
    };
    existing.spec == desired.spec
        && contains(existing.labels(), desired.labels())
        && contains(existing.annotations(), desired.annotations())
        && desired
            .owner_references()
            .iter()
            .all(|owner| existing.owner_references().contains(owner))
}

/// The ResolveSet ConfigMap a wrapper points at.
pub fn wrapper_config_map(wrapper: &BundleDeployment) -> Option<&str> {
    wrapper
        .spec
        .template
        .spec
        .source
        .config_maps
        .as_ref()?
        .first()
        .map(|source| source.config_map.name.as_str())
}

/// A ResolveSet of a resolution's history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryEntry {
    /// The ConfigMap's name.
    pub name: String,
    /// Its [`SEQUENCE_ANNOTATION`] (0 when missing or unreadable).
    pub sequence: u64,
}

impl HistoryEntry {
    /// The entry for a ResolveSet ConfigMap.
    pub fn of(config_map: &ConfigMap) -> Self {
        Self {
            name: config_map.name_any(),
            sequence: config_map
                .annotations()
                .get(SEQUENCE_ANNOTATION)
                .and_then(|s| s.parse().ok())
                .unwrap_or(0),
        }
    }
}

/// The sequence number for a new ResolveSet: one more than any in `history`.
pub fn next_sequence(history: &[HistoryEntry]) -> u64 {
    history.iter().map(|e| e.sequence).max().unwrap_or(0) + 1
}

/// The ResolveSets to delete so that `keep` remain: the oldest first, never `current`.
/// `keep` counts `current`; at least `current` is kept even when `keep` is 0.
pub fn to_delete(history: &[HistoryEntry], current: &str, keep: usize) -> Vec<String> {
    let mut older: Vec<&HistoryEntry> = history.iter().filter(|e| e.name != current).collect();
    // Newest first; the name breaks ties so the choice is deterministic.
    older.sort_by(|a, b| {
        b.sequence
            .cmp(&a.sequence)
            .then_with(|| b.name.cmp(&a.name))
    });
    older
        .into_iter()
        .skip(keep.saturating_sub(1))
        .map(|e| e.name.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classes::{ActivatorClass, PlatformOperatorClass};
    use crate::fixtures;

    fn resolution() -> ActiveResolution {
        let mut resolution: ActiveResolution = serde_json::from_value(serde_json::json!({
            "apiVersion": "deppy.io/v1alpha1",
            "kind": "ActiveResolution",
            "metadata": {
                "name": "memcached",
                "uid": "0000-1111",
                "labels": {"olmv1-test": "abc", "deppy.io/resolution": "spoofed"},
            },
            "spec": {"constraints": [{"expression": "required(\"memcached-operator\")"}]},
        }))
        .unwrap();
        resolution.metadata.generation = Some(1);
        resolution
    }

    fn children() -> Vec<(String, Vec<BundleDeployment>)> {
        ["memcached-operator", "metrics-agent"]
            .into_iter()
            .map(|package| {
                let entity = fixtures::entity(package, "1.0.0", &format!("r/{package}:1"), None);
                (
                    package.to_owned(),
                    PlatformOperatorClass.bundle_deployments(&entity).unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn the_resolve_set_holds_one_labelled_child_per_package() {
        let labels = propagated_labels(&resolution());
        assert_eq!(labels["deppy.io/resolution"], "memcached", "our label wins");
        assert_eq!(labels["olmv1-test"], "abc");
        let files = manifests(&children(), &labels).unwrap();
        assert_eq!(
            files.keys().collect::<Vec<_>>(),
            ["memcached-operator-bd.yaml", "metrics-agent-bd.yaml"]
        );
        let child: BundleDeployment =
            serde_yaml_ng::from_str(&files["metrics-agent-bd.yaml"]).unwrap();
        assert_eq!(child.name_any(), "package-metrics-agent");
        assert_eq!(child.labels()["olmv1-test"], "abc");
        assert_eq!(
            child.spec.template.metadata.as_ref().unwrap().labels["deppy.io/resolution"],
            "memcached"
        );
        let value: serde_json::Value =
            serde_yaml_ng::from_str(&files["metrics-agent-bd.yaml"]).unwrap();
        assert_eq!(value["apiVersion"], "core.rukpak.io/v1alpha1");
        assert_eq!(value["kind"], "BundleDeployment");
        assert!(value.get("status").is_none_or(serde_json::Value::is_null));
    }

    #[test]
    fn a_child_keeps_its_own_labels_over_propagated_ones() {
        let mut children = children();
        children[0].1[0].metadata.labels = Some(BTreeMap::from([(
            "olmv1-test".to_owned(),
            "own".to_owned(),
        )]));
        let files = manifests(&children, &propagated_labels(&resolution())).unwrap();
        let child: BundleDeployment =
            serde_yaml_ng::from_str(&files["memcached-operator-bd.yaml"]).unwrap();
        assert_eq!(child.labels()["olmv1-test"], "own");
    }

    #[test]
    fn two_packages_producing_one_child_name_are_refused() {
        let mut children = children();
        children[1].1[0].metadata.name = Some("package-memcached-operator".to_owned());
        let err = manifests(&children, &BTreeMap::new()).unwrap_err();
        assert!(matches!(err, BuildError::DuplicateChild { .. }), "{err}");
    }

    #[test]
    fn the_config_map_is_immutable_owned_and_named_by_its_content() {
        let resolution = resolution();
        let files = manifests(&children(), &propagated_labels(&resolution)).unwrap();
        let cm = config_map(&resolution, "rukpak-system", files.clone(), 3).unwrap();
        assert_eq!(cm.immutable, Some(true));
        assert_eq!(cm.namespace().as_deref(), Some("rukpak-system"));
        let name = cm.name_any();
        assert!(name.starts_with("memcached-"), "{name}");
        assert_eq!(name, config_map_name("memcached", &files), "stable name");
        let owner = &cm.owner_references()[0];
        assert_eq!(owner.kind, "ActiveResolution");
        assert_eq!(owner.uid, "0000-1111");
        assert_eq!(owner.controller, Some(true));
        assert_eq!(cm.labels()["deppy.io/resolution"], "memcached");
        assert_eq!(HistoryEntry::of(&cm).sequence, 3);

        let mut other = files.clone();
        other.insert("x-bd.yaml".into(), "{}".into());
        assert_ne!(config_map_name("memcached", &other), name);
    }

    #[test]
    fn the_wrapper_is_a_plain_bundle_deployment_of_the_config_map() {
        let resolution = resolution();
        let wrapper = wrapper(&resolution, "memcached-0123456789", BTreeMap::new()).unwrap();
        assert_eq!(wrapper.name_any(), "memcached");
        assert_eq!(wrapper.spec.provisioner_class_name, PLAIN_PROVISIONER_CLASS);
        assert_eq!(wrapper_config_map(&wrapper), Some("memcached-0123456789"));
        let source = &wrapper
            .spec
            .template
            .spec
            .source
            .config_maps
            .as_ref()
            .unwrap()[0];
        assert_eq!(source.path.as_deref(), Some(MANIFESTS_PATH));
        assert_eq!(wrapper.labels()["olmv1-test"], "abc");
        assert_eq!(
            wrapper.spec.template.metadata.as_ref().unwrap().labels["olmv1-test"],
            "abc"
        );
        assert_eq!(wrapper.owner_references()[0].uid, "0000-1111");
    }

    #[test]
    fn the_wrapper_applies_as_the_identity_the_resolution_names() {
        let mut resolution = resolution();
        let unnamed = wrapper(&resolution, "memcached-0123456789", BTreeMap::new()).unwrap();
        assert_eq!(unnamed.spec.service_account, None);
        resolution.annotations_mut().insert(
            deppy_api::SERVICE_ACCOUNT_ANNOTATION.into(),
            "rukpak-system/operator-installer".into(),
        );
        let named = wrapper(&resolution, "memcached-0123456789", BTreeMap::new()).unwrap();
        let account = named.spec.service_account.as_ref().unwrap();
        assert_eq!(
            (account.namespace.as_str(), account.name.as_str()),
            ("rukpak-system", "operator-installer")
        );
        assert!(
            !wrapper_is_current(&unnamed, &named),
            "a new identity re-applies the wrapper"
        );
        resolution.annotations_mut().insert(
            deppy_api::SERVICE_ACCOUNT_ANNOTATION.into(),
            "operator-installer".into(),
        );
        let err = wrapper(&resolution, "x", BTreeMap::new()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the annotation deppy.io/service-account must name a ServiceAccount as NAMESPACE/NAME, not \"operator-installer\""
        );
    }

    #[test]
    fn a_wrapper_is_current_until_the_desired_one_differs() {
        let resolution = resolution();
        let desired = wrapper(&resolution, "memcached-0123456789", BTreeMap::new()).unwrap();
        let mut existing = desired.clone();
        existing
            .metadata
            .labels
            .as_mut()
            .unwrap()
            .insert("added-by-someone".into(), "x".into());
        existing.metadata.finalizers = Some(vec!["core.rukpak.io/cleanup".into()]);
        assert!(wrapper_is_current(&existing, &desired));
        let moved = wrapper(&resolution, "memcached-9876543210", BTreeMap::new()).unwrap();
        assert!(!wrapper_is_current(&existing, &moved));
        existing
            .metadata
            .labels
            .as_mut()
            .unwrap()
            .remove("olmv1-test");
        assert!(!wrapper_is_current(&existing, &desired));
    }

    #[test]
    fn an_object_without_uid_cannot_own_anything() {
        let mut resolution = resolution();
        resolution.metadata.uid = None;
        assert!(matches!(
            wrapper(&resolution, "x", BTreeMap::new()),
            Err(BuildError::NoUid(_))
        ));
    }

    fn entry(name: &str, sequence: u64) -> HistoryEntry {
        HistoryEntry {
            name: name.to_owned(),
            sequence,
        }
    }

    #[test]
    fn history_keeps_the_newest_and_never_the_current() {
        let history = [entry("a", 1), entry("b", 2), entry("c", 3), entry("d", 4)];
        assert_eq!(to_delete(&history, "d", 2), ["b", "a"]);
        assert_eq!(to_delete(&history, "d", 5), Vec::<String>::new());
        // A pivot back to an old ResolveSet makes it current: it is kept, the oldest others go.
        assert_eq!(to_delete(&history, "a", 2), ["c", "b"]);
        assert_eq!(to_delete(&history, "c", 0), ["d", "b", "a"]);
        assert_eq!(next_sequence(&history), 5);
        assert_eq!(next_sequence(&[]), 1);
    }
}
