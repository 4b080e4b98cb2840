//! The `PlatformOperator` class: one registry+v1 BundleDeployment per selected bundle,
//! named after its package (`package-<package>`, see
//! [`platform_api::package_bundle_deployment`]).
//!
//! Naming children after the package (not the resolution) is deliberate: two resolutions
//! that select the same package produce the same child name, and the plain provisioner's
//! collision protection then fails the second wrapper with a clear message while the
//! first installation stays untouched. One operator package is installed once per cluster.
//! The `package-` prefix keeps a child from taking its wrapper's name (the wrapper is named
//! after the resolution, which a PlatformOperator often names after the package).

use std::collections::BTreeMap;

use deppy_api::ActiveResolution;
use kube::ResourceExt;
use kube::api::ObjectMeta;
use rukpak_api::{
    BundleDeployment, BundleDeploymentSpec, BundleSource, BundleSpec, BundleTemplate,
    CollisionProtection, DeletionPolicy, ImageSource, REGISTRY_PROVISIONER_CLASS, SourceType,
    TemplateMetadata,
};

use super::{ActivatorClass, ClassError, Entity};

/// The class name, as in the activator-class annotation.
pub const NAME: &str = "PlatformOperator";

/// See the [module documentation](self).
#[derive(Debug, Clone, Copy, Default)]
pub struct PlatformOperatorClass;

impl ActivatorClass for PlatformOperatorClass {
    fn name(&self) -> &'static str {
        NAME
    }

    /// The PlatformOperator's `spec.config` (the resolution's
    /// [`platform_api::CONFIG_ANNOTATION`]) goes to the child of the package the resolution
    /// requires first, the PlatformOperator's own, as `spec.config.deploymentConfig`;
    /// dependencies run as their bundles say, as OLM v0 applies a Subscription's config to
    /// its own operator only.
    fn children(
        &self,
        resolution: &ActiveResolution,
        entity: &Entity,
    ) -> Result<Vec<BundleDeployment>, ClassError> {
        let mut children = self.bundle_deployments(entity)?;
        // Approval covers every child: a dependency's upgrade changes what runs as much as
        // the operator's own.
        if let Some(text) = resolution
            .annotations()
            .get(platform_api::APPROVAL_ANNOTATION)
        {
            let approval: platform_api::Approval =
                serde_json::from_str(text).map_err(|err| ClassError {
                    selection: entity.selection.to_string(),
                    bundle: entity.bundle.name.clone(),
                    reason: format!(
                        "the annotation {} does not hold a PlatformOperator's approval settings: {err}",
                        platform_api::APPROVAL_ANNOTATION
                    ),
                })?;
            for child in &mut children {
                child.spec.upgrade_approval = approval.upgrade_approval;
                child.spec.approved_revision = approval.approved_revision.clone();
            }
        }
        let own_package = resolution
            .spec
            .constraints
            .iter()
            .find_map(|c| c.required.as_ref())
            .map(|required| required.name.as_str());
        let Some(text) = resolution
            .annotations()
            .get(platform_api::CONFIG_ANNOTATION)
        else {
            return Ok(children);
        };
        if own_package != Some(entity.selection.package.as_str()) {
            return Ok(children);
        }
        let config: platform_api::OperatorConfig =
            serde_json::from_str(text).map_err(|err| ClassError {
                selection: entity.selection.to_string(),
                bundle: entity.bundle.name.clone(),
                reason: format!(
                    "the annotation {} does not hold a PlatformOperator spec.config: {err}",
                    platform_api::CONFIG_ANNOTATION
                ),
            })?;
        if let Some(deployment_config) = config.deployment_config {
            for child in &mut children {
                child.spec.config =
                    Some(serde_json::json!({ "deploymentConfig": deployment_config }));
            }
        }
        Ok(children)
    }

    fn bundle_deployments(&self, entity: &Entity) -> Result<Vec<BundleDeployment>, ClassError> {
        let bundle = &entity.bundle;
        if bundle.image.is_empty() {
            return Err(ClassError {
                selection: entity.selection.to_string(),
                bundle: bundle.name.clone(),
                reason: "the catalog lists no bundle image (bundles that only inline their \
                         manifests cannot be installed)"
                    .to_owned(),
            });
        }
        let mut annotations = BTreeMap::new();
        if let Some(version) = bundle.max_openshift_version.as_deref() {
            annotations.insert(
                platform_api::MAX_OPENSHIFT_VERSION_ANNOTATION.to_owned(),
                version.to_owned(),
            );
        }
        let name = rukpak_api::names::bundle_deployment_name(
            &platform_api::package_bundle_deployment(&entity.selection.package),
        );
        // On the template, so the Bundle made from it carries them too: once that Bundle
        // is active, platform-operators reads from here what is installed.
        let bundle_annotations = BTreeMap::from([
            (
                platform_api::PACKAGE_ANNOTATION.to_owned(),
                entity.selection.package.clone(),
            ),
            (
                platform_api::BUNDLE_VERSION_ANNOTATION.to_owned(),
                entity.selection.version.clone(),
            ),
        ]);
        Ok(vec![BundleDeployment {
            metadata: ObjectMeta {
                name: Some(name),
                annotations: Some(annotations).filter(|a| !a.is_empty()),
                ..ObjectMeta::default()
            },
            spec: BundleDeploymentSpec {
                provisioner_class_name: REGISTRY_PROVISIONER_CLASS.to_owned(),
                template: BundleTemplate {
                    metadata: Some(TemplateMetadata {
                        labels: BTreeMap::new(),
                        annotations: bundle_annotations,
                    }),
                    spec: BundleSpec {
                        provisioner_class_name: REGISTRY_PROVISIONER_CLASS.to_owned(),
                        source: BundleSource {
                            type_: SourceType::Image,
                            image: Some(ImageSource {
                                ref_: bundle.image.clone(),
                                ..ImageSource::default()
                            }),
                            git: None,
                            http: None,
                            config_maps: None,
                            upload: None,
                        },
                    },
                },
                config: None,
                install_namespace: None,
                paused: None,
                service_account: None,
                // Adopts objects nobody manages, such as a CRD an earlier uninstall kept
                // because it held custom resources, so reinstalling the operator works;
                // objects another BundleDeployment manages are still refused.
                collision_protection: CollisionProtection::IfNoController,
                deletion_policy: DeletionPolicy::Delete,
                revision_history_limit: None,
                health_checks: Vec::new(),
                progress_deadline_seconds: None,
                rollback_on_failure: None,
                upgrade_approval: Default::default(),
                approved_revision: None,
            },
            status: None,
        }])
    }
}

#[cfg(test)]
mod tests {
    use deppy_api::{ActiveResolutionSpec, Constraint, PackageRequirement};

    fn resolution(config: Option<&str>) -> ActiveResolution {
        let mut resolution = ActiveResolution::new(
            "memcached",
            ActiveResolutionSpec {
                sources: vec![],
                constraints: vec![Constraint {
                    required: Some(PackageRequirement {
                        name: "memcached-operator".into(),
                        ..Default::default()
                    }),
                    ..Default::default()
                }],
            },
        );
        if let Some(config) = config {
            resolution
                .annotations_mut()
                .insert(platform_api::CONFIG_ANNOTATION.into(), config.into());
        }
        resolution
    }

    #[test]
    fn the_operators_config_reaches_its_own_child_only() {
        let config = r#"{"deploymentConfig":{"env":[{"name":"LOG_LEVEL","value":"debug"}]}}"#;
        let own = entity("memcached-operator", "0.2.0", "r/m:v0.2.0", None);
        let child = PlatformOperatorClass
            .children(&resolution(Some(config)), &own)
            .unwrap()
            .remove(0);
        assert_eq!(
            child.spec.config,
            Some(
                serde_json::json!({"deploymentConfig": {"env": [{"name": "LOG_LEVEL", "value": "debug"}]}})
            )
        );
        let dependency = entity("metrics-agent", "1.1.0", "r/a:v1.1.0", None);
        let child = PlatformOperatorClass
            .children(&resolution(Some(config)), &dependency)
            .unwrap()
            .remove(0);
        assert_eq!(child.spec.config, None);
        let child = PlatformOperatorClass
            .children(&resolution(None), &own)
            .unwrap()
            .remove(0);
        assert_eq!(child.spec.config, None);
        let err = PlatformOperatorClass
            .children(&resolution(Some("not json")), &own)
            .unwrap_err();
        assert!(
            err.to_string().contains(platform_api::CONFIG_ANNOTATION),
            "{err}"
        );
    }

    use super::*;
    use crate::fixtures::entity;

    #[test]
    fn a_child_is_named_after_the_package_and_pinned_to_the_bundle_image() {
        let entity = entity(
            "memcached-operator",
            "0.2.0",
            "r/memcached-bundle:v0.2.0",
            None,
        );
        let children = PlatformOperatorClass.bundle_deployments(&entity).unwrap();
        assert_eq!(children.len(), 1);
        let child = &children[0];
        assert_eq!(
            child.metadata.name.as_deref(),
            Some("package-memcached-operator")
        );
        assert_eq!(
            child.spec.provisioner_class_name,
            REGISTRY_PROVISIONER_CLASS
        );
        let spec = &child.spec.template.spec;
        assert_eq!(spec.provisioner_class_name, REGISTRY_PROVISIONER_CLASS);
        assert_eq!(spec.source.type_, SourceType::Image);
        assert_eq!(
            spec.source.image.as_ref().unwrap().ref_,
            "r/memcached-bundle:v0.2.0"
        );
        let annotations = &child.spec.template.metadata.as_ref().unwrap().annotations;
        assert_eq!(
            annotations
                .get(platform_api::PACKAGE_ANNOTATION)
                .map(String::as_str),
            Some("memcached-operator")
        );
        assert_eq!(
            annotations
                .get(platform_api::BUNDLE_VERSION_ANNOTATION)
                .map(String::as_str),
            Some("0.2.0")
        );
        assert!(child.metadata.annotations.is_none());
    }

    #[test]
    fn max_openshift_version_becomes_an_annotation() {
        let entity = entity("memcached-operator", "0.1.0", "r/b:v0.1.0", Some("4.16"));
        let child = PlatformOperatorClass
            .bundle_deployments(&entity)
            .unwrap()
            .remove(0);
        assert_eq!(
            child
                .metadata
                .annotations
                .unwrap()
                .get(platform_api::MAX_OPENSHIFT_VERSION_ANNOTATION)
                .map(String::as_str),
            Some("4.16")
        );
    }

    #[test]
    fn a_bundle_without_an_image_is_refused_by_name() {
        let entity = entity("inline", "1.0.0", "", None);
        let err = PlatformOperatorClass
            .bundle_deployments(&entity)
            .unwrap_err();
        assert_eq!(err.bundle, "inline.v1.0.0");
        assert!(err.to_string().contains("no bundle image"), "{err}");
    }

    #[test]
    fn long_package_names_still_fit_a_bundle_deployment_name() {
        let package = "a-very-long-operator-package-name-that-is-fifty-six-chars";
        let entity = entity(package, "1.0.0", "r/b:1", None);
        let child = PlatformOperatorClass
            .bundle_deployments(&entity)
            .unwrap()
            .remove(0);
        let name = child.metadata.name.unwrap();
        assert!(
            name.len() <= rukpak_api::BUNDLE_DEPLOYMENT_NAME_MAX,
            "{name}"
        );
        assert!(name.starts_with("package-a-very-long"), "{name}");
    }
}
