//! Which PlatformOperator may install a package.
//!
//! The resolution activator names each child BundleDeployment after its package, so two
//! PlatformOperators installing the same package would collide (the apply engine refuses
//! the second). Rather than let the second one's install fail on that collision, the
//! PlatformOperator controller decides up front, and the loser installs nothing:
//!
//! 1. A package is *held* by the PlatformOperator whose wrapper BundleDeployment applied
//!    the child BundleDeployment named after the package (its owner labels say so). That
//!    PlatformOperator keeps it, whoever asks later, directly or as a dependency.
//! 2. Otherwise, among PlatformOperators asking for the package, one whose
//!    ActiveResolution already requests it wins, then the oldest, then the first by name.
//!    Ordering by creation keeps the decision stable: a newcomer never displaces an
//!    earlier PlatformOperator.

use deppy_api::ActiveResolution;
use platform_api::PlatformOperator;
use rukpak_api::BundleDeployment;
use rukpak_api::labels::{OWNER_KIND, OWNER_NAME};

use crate::names;

/// Value of the owner-kind label on objects a BundleDeployment applied.
const OWNER_KIND_BUNDLE_DEPLOYMENT: &str = "BundleDeployment";

/// The verdict for one PlatformOperator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ownership {
    /// The PlatformOperator may install its package.
    Proceed,
    /// Another PlatformOperator has the package; the message says which.
    Duplicate(String),
}

/// What the decision reads from the caches.
pub trait View {
    /// Every PlatformOperator (including the one being decided).
    fn operators(&self) -> Vec<std::sync::Arc<PlatformOperator>>;
    /// The ActiveResolution named `name`.
    fn resolution(&self, name: &str) -> Option<std::sync::Arc<ActiveResolution>>;
    /// The BundleDeployment named `name`.
    fn deployment(&self, name: &str) -> Option<std::sync::Arc<BundleDeployment>>;
}

/// The name of the wrapper BundleDeployment that applied `deployment`, if any.
pub fn applied_by(deployment: &BundleDeployment) -> Option<&str> {
    let labels = deployment.metadata.labels.as_ref()?;
    if labels.get(OWNER_KIND).map(String::as_str) != Some(OWNER_KIND_BUNDLE_DEPLOYMENT) {
        return None;
    }
    labels.get(OWNER_NAME).map(String::as_str)
}

/// Whether `resolution` is `operator`'s (owned by it, by UID).
pub fn is_owned_by(resolution: &ActiveResolution, operator: &PlatformOperator) -> bool {
    let Some(uid) = operator.metadata.uid.as_deref() else {
        return false;
    };
    resolution
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|owner| owner.uid == uid && owner.controller == Some(true))
}

/// The package `resolution` requires (its first `required` constraint).
pub fn required_package(resolution: &ActiveResolution) -> Option<&str> {
    resolution
        .spec
        .constraints
        .iter()
        .find_map(|c| c.required.as_ref())
        .map(|r| r.name.as_str())
}

fn alive(operator: &PlatformOperator) -> bool {
    operator.metadata.deletion_timestamp.is_none()
}

/// The PlatformOperator whose wrapper BundleDeployment is `wrapper`.
pub fn operator_of_wrapper(
    view: &dyn View,
    wrapper: &str,
) -> Option<std::sync::Arc<PlatformOperator>> {
    view.operators().into_iter().find(|o| {
        o.metadata
            .name
            .as_deref()
            .is_some_and(|name| names::wrapper(name) == wrapper)
    })
}

/// The PlatformOperator (other than `except`) that holds `package`: the one whose wrapper
/// applied the child BundleDeployment of that package. Returns its name and package.
pub fn holder(view: &dyn View, package: &str, except: &str) -> Option<(String, String)> {
    let child = view.deployment(&names::child(package))?;
    let wrapper = applied_by(&child)?;
    if wrapper == names::wrapper(except) {
        return None;
    }
    operator_of_wrapper(view, wrapper)
        .filter(|o| alive(o))
        .map(|o| {
            (
                o.metadata.name.clone().unwrap_or_default(),
                o.spec.package.name.clone(),
            )
        })
}

/// Who gets `operator`'s package.
pub fn decide(view: &dyn View, operator: &PlatformOperator) -> Ownership {
    let name = operator.metadata.name.as_deref().unwrap_or_default();
    let package = operator.spec.package.name.as_str();
    if let Some(child) = view.deployment(&names::child(package))
        && applied_by(&child) == Some(names::wrapper(name).as_str())
    {
        return Ownership::Proceed;
    }
    if let Some((other, other_package)) = holder(view, package, name) {
        return Ownership::Duplicate(if other_package == package {
            format!("package {package} is already installed by PlatformOperator {other}")
        } else {
            format!(
                "package {package} is already installed by PlatformOperator {other} (as a dependency of {other_package})"
            )
        });
    }
    let requests = |o: &PlatformOperator| {
        o.metadata.name.as_deref().is_some_and(|n| {
            view.resolution(n)
                .is_some_and(|r| is_owned_by(&r, o) && required_package(&r) == Some(package))
        })
    };
    let rank = |o: &PlatformOperator| {
        (
            !requests(o),
            o.metadata.creation_timestamp.clone().map(|t| t.0),
            o.metadata.name.clone(),
        )
    };
    let mine = rank(operator);
    let winner = view
        .operators()
        .into_iter()
        .filter(|o| o.metadata.name.as_deref() != Some(name))
        .filter(|o| alive(o) && o.spec.package.name == package)
        .filter(|o| rank(o) < mine)
        .min_by_key(|o| rank(o));
    match winner {
        Some(other) => Ownership::Duplicate(format!(
            "package {package} is already requested by PlatformOperator {}",
            other.metadata.name.as_deref().unwrap_or_default()
        )),
        None => Ownership::Proceed,
    }
}

/// After `operator`'s install failed: the first package of its resolution that another
/// PlatformOperator holds, as a message (e.g. a dependency another one installed
/// directly).
pub fn conflict(
    view: &dyn View,
    operator: &PlatformOperator,
    resolution: &ActiveResolution,
) -> Option<String> {
    let name = operator.metadata.name.as_deref().unwrap_or_default();
    let package = operator.spec.package.name.as_str();
    crate::status::resolved_packages(resolution)
        .into_iter()
        .find_map(|dependency| {
            let (other, other_package) = holder(view, &dependency, name)?;
            let by = if other_package == dependency {
                format!("PlatformOperator {other}")
            } else {
                format!("PlatformOperator {other} (as a dependency of {other_package})")
            };
            Some(if dependency == package {
                format!("package {package} is already installed by {by}")
            } else {
                format!(
                    "package {dependency} (a dependency of {package}) is already installed by {by}"
                )
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::collections::BTreeMap;
    use std::sync::Arc;

    use deppy_api::{
        ActiveResolutionSpec, ActiveResolutionStatus, Constraint, PackageRequirement,
        ResolvedEntity,
    };
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};
    use kube::Resource;
    use platform_api::{Package, PlatformOperatorSpec};

    #[derive(Default)]
    struct Cache {
        operators: Vec<Arc<PlatformOperator>>,
        resolutions: BTreeMap<String, Arc<ActiveResolution>>,
        deployments: BTreeMap<String, Arc<BundleDeployment>>,
    }

    impl View for Cache {
        fn operators(&self) -> Vec<Arc<PlatformOperator>> {
            self.operators.clone()
        }
        fn resolution(&self, name: &str) -> Option<Arc<ActiveResolution>> {
            self.resolutions.get(name).cloned()
        }
        fn deployment(&self, name: &str) -> Option<Arc<BundleDeployment>> {
            self.deployments.get(name).cloned()
        }
    }

    fn operator(name: &str, package: &str, created: i64) -> PlatformOperator {
        let mut operator = PlatformOperator::new(
            name,
            PlatformOperatorSpec {
                package: Package {
                    name: package.into(),
                    ..Default::default()
                },
                config: None,
                upgrade_approval: None,
                approved_revision: None,
            },
        );
        operator.metadata.uid = Some(format!("uid-{name}"));
        operator.metadata.creation_timestamp = Some(Time(
            k8s_openapi::jiff::Timestamp::from_second(created).unwrap(),
        ));
        operator
    }

    fn resolution_for(operator: &PlatformOperator, entities: &[&str]) -> ActiveResolution {
        let mut resolution = ActiveResolution::new(
            operator.metadata.name.as_deref().unwrap(),
            ActiveResolutionSpec {
                sources: vec![],
                constraints: vec![Constraint {
                    required: Some(PackageRequirement {
                        name: operator.spec.package.name.clone(),
                        ..Default::default()
                    }),
                    ..Default::default()
                }],
            },
        );
        resolution.metadata.owner_references = Some(vec![OwnerReference {
            controller: Some(true),
            ..operator.controller_owner_ref(&()).unwrap()
        }]);
        resolution.status = Some(ActiveResolutionStatus {
            entities: entities
                .iter()
                .map(|p| ResolvedEntity {
                    package: (*p).into(),
                    image: "img".into(),
                })
                .collect(),
            ..Default::default()
        });
        resolution
    }

    fn child(package: &str, wrapper: &str) -> BundleDeployment {
        let mut deployment: BundleDeployment = serde_json::from_value(serde_json::json!({
            "apiVersion": "core.rukpak.io/v1alpha1",
            "kind": "BundleDeployment",
            "metadata": {"name": names::child(package), "labels": {OWNER_KIND: "BundleDeployment", OWNER_NAME: wrapper}},
            "spec": {
                "provisionerClassName": "core-rukpak-io-registry",
                "template": {"spec": {"provisionerClassName": "core-rukpak-io-registry", "source": {"type": "image", "image": {"ref": "img"}}}}
            }
        }))
        .unwrap();
        deployment.metadata.generation = Some(1);
        deployment
    }

    fn cache(operators: Vec<PlatformOperator>) -> Cache {
        Cache {
            operators: operators.into_iter().map(Arc::new).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn a_lone_platform_operator_proceeds() {
        let a = operator("a", "memcached-operator", 10);
        assert_eq!(decide(&cache(vec![a.clone()]), &a), Ownership::Proceed);
    }

    #[test]
    fn the_older_of_two_requests_wins_until_the_newer_one_has_installed() {
        let a = operator("a", "memcached-operator", 10);
        let b = operator("b", "memcached-operator", 20);
        let view = cache(vec![a.clone(), b.clone()]);
        assert_eq!(decide(&view, &a), Ownership::Proceed);
        assert_eq!(
            decide(&view, &b),
            Ownership::Duplicate(
                "package memcached-operator is already requested by PlatformOperator a".into()
            )
        );
        // b got there first (its resolution requests the package): b keeps it.
        let mut view = view;
        view.resolutions
            .insert("b".into(), Arc::new(resolution_for(&b, &[])));
        assert_eq!(decide(&view, &b), Ownership::Proceed);
        assert!(
            matches!(decide(&view, &a), Ownership::Duplicate(m) if m.ends_with("PlatformOperator b"))
        );
    }

    #[test]
    fn the_platform_operator_whose_wrapper_applied_the_child_holds_the_package() {
        let a = operator("a", "memcached-operator", 30);
        let b = operator("b", "memcached-operator", 20);
        let mut view = cache(vec![a.clone(), b.clone()]);
        view.deployments.insert(
            names::child("memcached-operator"),
            Arc::new(child("memcached-operator", "a")),
        );
        // b is older, but a installed it.
        assert_eq!(decide(&view, &a), Ownership::Proceed);
        assert_eq!(
            decide(&view, &b),
            Ownership::Duplicate(
                "package memcached-operator is already installed by PlatformOperator a".into()
            )
        );
    }

    #[test]
    fn a_dependency_installed_by_another_platform_operator_is_taken() {
        let a = operator("a", "memcached-operator", 10);
        let b = operator("b", "metrics-agent", 20);
        let mut view = cache(vec![a.clone(), b.clone()]);
        view.deployments.insert(
            names::child("metrics-agent"),
            Arc::new(child("metrics-agent", "a")),
        );
        assert_eq!(
            decide(&view, &b),
            Ownership::Duplicate(
                "package metrics-agent is already installed by PlatformOperator a (as a dependency of memcached-operator)".into()
            )
        );
        // The other way round: b installed metrics-agent, a's resolution also selects it.
        let mut view = cache(vec![a.clone(), b.clone()]);
        view.deployments.insert(
            names::child("metrics-agent"),
            Arc::new(child("metrics-agent", "b")),
        );
        assert_eq!(decide(&view, &a), Ownership::Proceed);
        let resolution = resolution_for(&a, &["memcached-operator", "metrics-agent"]);
        assert_eq!(
            conflict(&view, &a, &resolution).as_deref(),
            Some(
                "package metrics-agent (a dependency of memcached-operator) is already installed by PlatformOperator b"
            )
        );
    }

    #[test]
    fn a_holder_being_deleted_no_longer_holds() {
        let mut a = operator("a", "memcached-operator", 10);
        a.metadata.deletion_timestamp = a.metadata.creation_timestamp.clone();
        let b = operator("b", "memcached-operator", 20);
        let mut view = cache(vec![a, b.clone()]);
        view.deployments.insert(
            names::child("memcached-operator"),
            Arc::new(child("memcached-operator", "a")),
        );
        assert_eq!(decide(&view, &b), Ownership::Proceed);
    }

    #[test]
    fn resolutions_count_only_when_owned_by_the_platform_operator() {
        let a = operator("a", "p", 10);
        let mut foreign = resolution_for(&a, &[]);
        foreign.metadata.owner_references = None;
        assert!(!is_owned_by(&foreign, &a));
        assert!(is_owned_by(&resolution_for(&a, &[]), &a));
        assert_eq!(required_package(&foreign), Some("p"));
    }
}
