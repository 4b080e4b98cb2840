//! What a PlatformOperator has installed, and the constraints that keep its next
//! resolution on the catalog's upgrade graph. Pure; no cluster access.
//!
//! The installed version of a package is read from what is really applied, never from the
//! last resolution's wish: a child BundleDeployment's template carries the package and
//! version it was made for (written by the resolution activator's PlatformOperator class),
//! and that version counts as installed only once the Bundle of that very template is the
//! child's active Bundle. While a child is moving to a new template (unpacking, applying,
//! or refused), the version the PlatformOperator last reported as installed
//! (`status.installedBundles`) stays, so a failed or slow pivot never loosens the
//! constraint. (The status, not the ActiveResolution's constraints: with `SelfCertified`
//! the own package has no constraint there, yet what runs must still be known.)
//!
//! Each installed package becomes an `installed` constraint of the ActiveResolution:
//! deppy-resolver then only keeps that version or moves to a direct successor along the
//! channel's `replaces`, `skips` or `skipRange` edges. A fresh install has none. With
//! `upgradeConstraintPolicy: SelfCertified`, the PlatformOperator's own package gets none
//! either (any version in range, downgrades included); dependencies keep theirs.

use std::collections::BTreeMap;

use deppy_api::{Constraint, InstalledPackage, PackageRequirement};
use platform_api::{InstalledBundle, PlatformOperator, UpgradeConstraintPolicy};
use rukpak_api::BundleDeployment;

/// The package and version a child BundleDeployment's template was made for.
fn template_bundle(child: &BundleDeployment) -> Option<InstalledBundle> {
    let annotations = &child.spec.template.metadata.as_ref()?.annotations;
    Some(InstalledBundle {
        package: annotations.get(platform_api::PACKAGE_ANNOTATION)?.clone(),
        version: annotations
            .get(platform_api::BUNDLE_VERSION_ANNOTATION)?
            .clone(),
    })
}

/// Whether the child's active Bundle is the one made from its current template.
fn template_is_active(child: &BundleDeployment) -> bool {
    let Some(active) = child
        .status
        .as_ref()
        .and_then(|s| s.active_bundle.as_deref())
    else {
        return false;
    };
    let Some(name) = child.metadata.name.as_deref() else {
        return false;
    };
    let hash = rukpak_api::template::template_hash(&child.spec.template);
    active == rukpak_api::template::bundle_name(name, &hash)
}

/// Whether the child has installed anything at all (some Bundle is active).
fn has_active_bundle(child: &BundleDeployment) -> bool {
    child
        .status
        .as_ref()
        .is_some_and(|s| s.active_bundle.is_some())
}

/// What `operator` last reported as installed, by package.
pub fn previously_installed(operator: &PlatformOperator) -> BTreeMap<String, String> {
    operator
        .status
        .iter()
        .flat_map(|s| s.installed_bundles.iter())
        .map(|b| (b.package.clone(), b.version.clone()))
        .collect()
}

/// What is installed, sorted by package: for each child BundleDeployment, the version of
/// its template once that template's Bundle is active; while a child with an active
/// Bundle moves to a new template, the version `previous` names for its package.
pub fn installed_bundles(
    children: &[(String, Option<&BundleDeployment>)],
    previous: &BTreeMap<String, String>,
) -> Vec<InstalledBundle> {
    let mut installed: BTreeMap<String, String> = BTreeMap::new();
    for child in children.iter().filter_map(|(_, child)| *child) {
        let Some(bundle) = template_bundle(child) else {
            // Made before templates carried their version: nothing to go on.
            continue;
        };
        if template_is_active(child) {
            installed.insert(bundle.package, bundle.version);
        } else if has_active_bundle(child)
            && let Some(version) = previous.get(&bundle.package)
        {
            installed.insert(bundle.package, version.clone());
        }
    }
    installed
        .into_iter()
        .map(|(package, version)| InstalledBundle { package, version })
        .collect()
}

/// The ActiveResolution's constraints: the package `operator` asks for, then one
/// `installed` constraint per installed bundle (sorted by package), except for the
/// operator's own package when its policy is `SelfCertified`.
pub fn constraints(operator: &PlatformOperator, installed: &[InstalledBundle]) -> Vec<Constraint> {
    let package = &operator.spec.package;
    let mut constraints = vec![Constraint {
        required: Some(PackageRequirement {
            name: package.name.clone(),
            version_range: package.version_range.clone(),
            channel: package.channel.clone(),
        }),
        ..Constraint::default()
    }];
    let self_certified =
        package.upgrade_constraint_policy == UpgradeConstraintPolicy::SelfCertified;
    constraints.extend(
        installed
            .iter()
            .filter(|bundle| !(self_certified && bundle.package == package.name))
            .map(|bundle| Constraint {
                installed: Some(InstalledPackage {
                    name: bundle.package.clone(),
                    version: bundle.version.clone(),
                }),
                ..Constraint::default()
            }),
    );
    constraints
}

/// `installed`, as a sentence fragment: `memcached-operator 0.2.0 and metrics-agent 1.1.0`.
pub fn describe(installed: &[InstalledBundle]) -> String {
    let parts: Vec<String> = installed
        .iter()
        .map(|b| format!("{} {}", b.package, b.version))
        .collect();
    match parts.as_slice() {
        [] => "nothing".to_owned(),
        [only] => only.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use platform_api::{Package, PlatformOperatorSpec};
    use serde_json::json;

    /// A child made for `package` `version`, whose active Bundle is the one of its
    /// template (`active: Some(true)`), another one (`Some(false)`), or none.
    fn child(package: &str, version: &str, active: Option<bool>) -> BundleDeployment {
        let mut child: BundleDeployment = serde_json::from_value(json!({
            "apiVersion": "core.rukpak.io/v1alpha1",
            "kind": "BundleDeployment",
            "metadata": {"name": format!("package-{package}")},
            "spec": {
                "provisionerClassName": "core-rukpak-io-registry",
                "template": {
                    "metadata": {"annotations": {
                        (platform_api::PACKAGE_ANNOTATION): package,
                        (platform_api::BUNDLE_VERSION_ANNOTATION): version,
                    }},
                    "spec": {"provisionerClassName": "core-rukpak-io-registry",
                             "source": {"type": "image", "image": {"ref": format!("r/{package}:v{version}")}}}
                }
            }
        }))
        .unwrap();
        let hash = rukpak_api::template::template_hash(&child.spec.template);
        let active = match active {
            Some(true) => Some(rukpak_api::template::bundle_name(
                child.metadata.name.as_deref().unwrap(),
                &hash,
            )),
            Some(false) => Some(format!("package-{package}-0123456789")),
            None => None,
        };
        child.status = Some(rukpak_api::BundleDeploymentStatus {
            active_bundle: active,
            ..Default::default()
        });
        child
    }

    fn bundle(package: &str, version: &str) -> InstalledBundle {
        InstalledBundle {
            package: package.into(),
            version: version.into(),
        }
    }

    fn observed(children: &[BundleDeployment]) -> Vec<(String, Option<&BundleDeployment>)> {
        children
            .iter()
            .map(|c| (c.metadata.name.clone().unwrap(), Some(c)))
            .collect()
    }

    #[test]
    fn a_child_counts_as_installed_once_its_template_bundle_is_active() {
        let children = [
            child("memcached-operator", "0.2.0", Some(true)),
            child("metrics-agent", "1.1.0", Some(true)),
        ];
        assert_eq!(
            installed_bundles(&observed(&children), &BTreeMap::new()),
            [
                bundle("memcached-operator", "0.2.0"),
                bundle("metrics-agent", "1.1.0")
            ]
        );
    }

    #[test]
    fn a_fresh_install_in_flight_has_nothing_installed() {
        let children = [child("memcached-operator", "0.2.0", None)];
        let previous = BTreeMap::from([("memcached-operator".into(), "0.1.0".into())]);
        assert!(installed_bundles(&observed(&children), &previous).is_empty());
        // A child not created yet counts as nothing either.
        assert!(installed_bundles(&[("package-x".into(), None)], &previous).is_empty());
    }

    #[test]
    fn a_pivot_in_flight_or_refused_keeps_the_previously_installed_version() {
        // The child's template asks for 0.2.0 but an older Bundle is still active.
        let children = [child("memcached-operator", "0.2.0", Some(false))];
        let previous = BTreeMap::from([("memcached-operator".into(), "0.1.0".into())]);
        assert_eq!(
            installed_bundles(&observed(&children), &previous),
            [bundle("memcached-operator", "0.1.0")]
        );
        // Without a previous version there is nothing known to keep.
        assert!(installed_bundles(&observed(&children), &BTreeMap::new()).is_empty());
    }

    #[test]
    fn what_was_installed_is_read_from_the_operators_own_status() {
        let mut operator = operator(UpgradeConstraintPolicy::SelfCertified);
        assert!(previously_installed(&operator).is_empty());
        operator.status = Some(platform_api::PlatformOperatorStatus {
            installed_bundles: vec![bundle("memcached-operator", "0.2.0")],
            ..Default::default()
        });
        assert_eq!(
            previously_installed(&operator),
            BTreeMap::from([("memcached-operator".to_owned(), "0.2.0".to_owned())])
        );
    }

    #[test]
    fn a_child_without_version_annotations_is_skipped() {
        let mut old = child("memcached-operator", "0.1.0", Some(true));
        old.spec.template.metadata = None;
        assert!(installed_bundles(&observed(&[old]), &BTreeMap::new()).is_empty());
    }

    fn operator(policy: UpgradeConstraintPolicy) -> PlatformOperator {
        PlatformOperator::new(
            "memcached",
            PlatformOperatorSpec {
                package: Package {
                    name: "memcached-operator".into(),
                    channel: Some("stable".into()),
                    version_range: Some("<0.2.0".into()),
                    upgrade_constraint_policy: policy,
                },
                config: None,
                upgrade_approval: None,
                approved_revision: None,
            },
        )
    }

    #[test]
    fn installed_bundles_become_installed_constraints_except_a_self_certified_package() {
        let installed = [
            bundle("memcached-operator", "0.2.0"),
            bundle("metrics-agent", "1.1.0"),
        ];
        let required = json!({"required": {"name": "memcached-operator", "versionRange": "<0.2.0", "channel": "stable"}});
        let own = json!({"installed": {"name": "memcached-operator", "version": "0.2.0"}});
        let dependency = json!({"installed": {"name": "metrics-agent", "version": "1.1.0"}});
        for (policy, expected) in [
            (
                UpgradeConstraintPolicy::CatalogProvided,
                json!([required, own, dependency]),
            ),
            // Only the operator's own package is freed; dependencies keep their graph.
            (
                UpgradeConstraintPolicy::SelfCertified,
                json!([required, dependency]),
            ),
        ] {
            let value = serde_json::to_value(constraints(&operator(policy), &installed)).unwrap();
            assert_eq!(value, expected, "{policy:?}");
        }
        assert_eq!(
            constraints(&operator(UpgradeConstraintPolicy::CatalogProvided), &[]).len(),
            1,
            "a fresh install only requires the package"
        );
    }

    #[test]
    fn installed_bundles_read_as_a_list() {
        assert_eq!(describe(&[]), "nothing");
        assert_eq!(describe(&[bundle("a", "1.0.0")]), "a 1.0.0");
        assert_eq!(
            describe(&[
                bundle("a", "1.0.0"),
                bundle("b", "2.0.0"),
                bundle("c", "3.0.0")
            ]),
            "a 1.0.0, b 2.0.0 and c 3.0.0"
        );
    }
}
