//! The registry+v1 provisioner: converts OLM operator bundles (a ClusterServiceVersion,
//! CRDs and other manifests under `manifests/`, `metadata/annotations.yaml`) into plain
//! Kubernetes objects, without a cluster, for the shared apply engine (`apply-engine`).
//!
//! The conversion follows operator-controller's registry+v1 rules (see
//! [`objects`] for the output order and naming scheme, [`install_modes`] for namespaces).
//! [`render`] reads bundle directories and writes YAML for `registry-provisioner render`;
//! [`RegistryFormat`] is what `registry-provisioner run` gives the apply engine. See
//! `docs/registry-provisioner.md`.

pub mod bundle;
pub mod crd;
pub mod deployment_config;
pub mod error;
pub mod install_modes;
pub mod objects;
pub mod render;
pub mod structural;
pub mod undeclared;
pub mod webhooks;

use kube::api::DynamicObject;
use provisioner::{BundleFormat, Plan};
use rukpak_api::BundleDeployment;

pub use deployment_config::DeploymentConfig;
pub use error::ConvertError;
pub use webhooks::{CertProvider, SelectorPolicy};

/// The provisioner id of registry+v1 bundles.
pub const PROVISIONER_ID: &str = rukpak_api::REGISTRY_PROVISIONER_CLASS;

/// The key of a BundleDeployment's `spec.config` listing the target namespaces.
pub const TARGET_NAMESPACES_CONFIG: &str = "targetNamespaces";

/// The key of a BundleDeployment's `spec.config` naming the install namespace, used when
/// `spec.installNamespace` is not set.
pub const INSTALL_NAMESPACE_CONFIG: &str = "installNamespace";

/// The key of a BundleDeployment's `spec.config`, and of a ProvisionerClass's
/// `spec.parameters`, choosing the [`SelectorPolicy`] of webhooks that reach the protected
/// namespaces (`exclude-protected` or `as-written`); the deployment's wins.
pub const WEBHOOK_NAMESPACE_SELECTOR_CONFIG: &str = "webhookNamespaceSelector";

/// The key of a ProvisionerClass's `spec.parameters` listing namespaces to protect from
/// webhooks besides `kube-system`, `kube-node-lease` and the installer's own.
pub const PROTECTED_NAMESPACES_PARAMETER: &str = "protectedNamespaces";

/// How to convert a bundle.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Options {
    /// The install namespace; when `None`, the CSV's suggested namespace or
    /// `<package>-system`.
    pub install_namespace: Option<String>,
    /// The namespaces the operator watches; empty for the default (all namespaces when
    /// supported, else its own namespace). `""` stands for all namespaces.
    pub target_namespaces: Vec<String>,
    /// OLM v0's `Subscription.spec.config`, applied to every Deployment of the bundle (see
    /// [`deployment_config`]).
    pub deployment_config: Option<DeploymentConfig>,
    /// Who makes the serving certificates of webhooks and API services.
    pub cert_provider: CertProvider,
    /// Namespaces besides `kube-system` and `kube-node-lease` whose system objects no
    /// webhook may intercept (the installer's own, and those the administrator lists).
    pub protected_namespaces: Vec<String>,
    /// Whether webhooks reaching the protected namespaces are kept out of them; `None`:
    /// the default, [`SelectorPolicy::ExcludeProtected`].
    pub webhook_namespace_selector: Option<SelectorPolicy>,
}

impl Options {
    /// Options from a BundleDeployment: `spec.installNamespace` (else
    /// `spec.config.installNamespace`), `spec.config.targetNamespaces` (a list of strings)
    /// and `spec.config.deploymentConfig` (read strictly, see [`DeploymentConfig::from_value`]).
    pub fn from_deployment(deployment: &BundleDeployment) -> Result<Self, ConvertError> {
        let mut install_namespace = deployment.spec.install_namespace.clone();
        let mut target_namespaces = Vec::new();
        let mut deployment_config = None;
        let mut webhook_namespace_selector = None;
        if let Some(config) = &deployment.spec.config {
            if !config.is_object() {
                return Err(ConvertError::InvalidConfig(
                    "spec.config must be an object".to_owned(),
                ));
            }
            if let Some(value) = config.get(TARGET_NAMESPACES_CONFIG) {
                target_namespaces = serde_json::from_value(value.clone()).map_err(|err| {
                    ConvertError::InvalidConfig(format!(
                        "spec.config.{TARGET_NAMESPACES_CONFIG} must be a list of strings: {err}"
                    ))
                })?;
            }
            if install_namespace.is_none()
                && let Some(value) = config.get(INSTALL_NAMESPACE_CONFIG)
            {
                let namespace = value.as_str().ok_or_else(|| {
                    ConvertError::InvalidConfig(format!(
                        "spec.config.{INSTALL_NAMESPACE_CONFIG} must be a string"
                    ))
                })?;
                install_namespace = Some(namespace.to_owned());
            }
            if let Some(value) = config.get(deployment_config::DEPLOYMENT_CONFIG) {
                deployment_config =
                    DeploymentConfig::from_value(value).map_err(ConvertError::InvalidConfig)?;
            }
            webhook_namespace_selector =
                selector_policy(config.get(WEBHOOK_NAMESPACE_SELECTOR_CONFIG)).map_err(|why| {
                    ConvertError::InvalidConfig(format!(
                        "spec.config.{WEBHOOK_NAMESPACE_SELECTOR_CONFIG} {why}"
                    ))
                })?;
        }
        Ok(Self {
            install_namespace,
            target_namespaces,
            deployment_config,
            webhook_namespace_selector,
            ..Self::default()
        })
    }
}

/// The result of converting a bundle: the objects and the namespaces they were made for.
#[derive(Debug, Clone)]
pub struct Conversion {
    /// The install namespace (of the operator's Deployments, ServiceAccounts and other
    /// namespaced manifests).
    pub install_namespace: String,
    /// The namespaces the operator watches, sorted; `[""]` for all namespaces.
    pub target_namespaces: Vec<String>,
    /// The plain objects, in a deterministic order (see [`objects`]).
    pub objects: Vec<DynamicObject>,
    /// What was changed from the bundle as written so it installs safely and as OLM
    /// installs it, as sentences naming the object and the CSV field.
    pub adjustments: Vec<String>,
}

/// A policy given as a string (absent or null: none). The error completes a sentence
/// starting with the field's name.
fn selector_policy(value: Option<&serde_json::Value>) -> Result<Option<SelectorPolicy>, String> {
    match value {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::String(name)) => name
            .parse()
            .map(Some)
            .map_err(|err: String| format!("is not valid: {err}")),
        Some(other) => Err(format!(
            "must be a string (one of {}), found {other}",
            SelectorPolicy::NAMES.join(", ")
        )),
    }
}

/// Converts a registry+v1 bundle given as `(path, bytes)` pairs (paths relative to the
/// bundle root) into plain objects, in a deterministic order, with the namespaces used.
pub fn conversion<'a>(
    files: impl IntoIterator<Item = (&'a str, &'a [u8])>,
    options: &Options,
) -> Result<Conversion, ConvertError> {
    let bundle = bundle::read(files)?;
    let namespace = install_modes::install_namespace(&bundle, options.install_namespace.as_deref())
        .map_err(|message| ConvertError::InstallNamespace {
            file: bundle.csv_file.clone(),
            name: bundle.csv.metadata.name.clone(),
            message,
        })?;
    let targets =
        install_modes::target_namespaces(&bundle, &namespace, &options.target_namespaces)?;
    let generated = objects::generate(
        &bundle,
        &namespace,
        &targets,
        options.deployment_config.as_ref(),
        &webhooks::Settings {
            provider: options.cert_provider,
            protected_namespaces: &options.protected_namespaces,
            selector_policy: options.webhook_namespace_selector.unwrap_or_default(),
        },
    )?;
    Ok(Conversion {
        install_namespace: namespace,
        target_namespaces: targets,
        objects: generated.objects,
        adjustments: generated.adjustments,
    })
}

/// Converts a registry+v1 bundle given as `(path, bytes)` pairs (paths relative to the
/// bundle root) into plain objects, in a deterministic order.
pub fn convert<'a>(
    files: impl IntoIterator<Item = (&'a str, &'a [u8])>,
    options: &Options,
) -> Result<Vec<DynamicObject>, ConvertError> {
    conversion(files, options).map(|conversion| conversion.objects)
}

/// The key of a ProvisionerClass's `spec.parameters` choosing the certificate provider of
/// the BundleDeployments of that class (see [`CertProvider`]).
pub const CERT_PROVIDER_PARAMETER: &str = "certificateProvider";

/// The registry+v1 format: the bundle is converted into plain objects.
#[derive(Debug, Clone, Default)]
pub struct RegistryFormat {
    /// The certificate provider when the class names none.
    pub cert_provider: CertProvider,
    /// Namespaces besides `kube-system` and `kube-node-lease` no webhook may intercept
    /// system objects in (the installer's own and the `--protected-namespaces` flag's); a
    /// class's `spec.parameters.protectedNamespaces` adds to them.
    pub protected_namespaces: Vec<String>,
    /// The selector policy when neither the BundleDeployment nor its class chooses one.
    pub selector_policy: SelectorPolicy,
}

impl RegistryFormat {
    /// The certificate provider for a class: its `spec.parameters.certificateProvider`, else
    /// the provisioner's default.
    pub fn cert_provider_for(
        &self,
        class_parameters: Option<&serde_json::Value>,
    ) -> Result<CertProvider, String> {
        match class_parameters.and_then(|p| p.get(CERT_PROVIDER_PARAMETER)) {
            None | Some(serde_json::Value::Null) => Ok(self.cert_provider),
            Some(serde_json::Value::String(name)) => name.parse().map_err(|err| {
                format!("the ProvisionerClass's spec.parameters.{CERT_PROVIDER_PARAMETER}: {err}")
            }),
            Some(other) => Err(format!(
                "the ProvisionerClass's spec.parameters.{CERT_PROVIDER_PARAMETER} must be a \
                 string (one of {}), found {other}",
                CertProvider::NAMES.join(", ")
            )),
        }
    }

    /// The selector policy for a class when the BundleDeployment chooses none: its
    /// `spec.parameters.webhookNamespaceSelector`, else the provisioner's default.
    pub fn selector_policy_for(
        &self,
        class_parameters: Option<&serde_json::Value>,
    ) -> Result<SelectorPolicy, String> {
        selector_policy(class_parameters.and_then(|p| p.get(WEBHOOK_NAMESPACE_SELECTOR_CONFIG)))
            .map(|chosen| chosen.unwrap_or(self.selector_policy))
            .map_err(|why| {
                format!(
                    "the ProvisionerClass's spec.parameters.{WEBHOOK_NAMESPACE_SELECTOR_CONFIG} {why}"
                )
            })
    }

    /// The protected namespaces for a class: the provisioner's, then the class's
    /// `spec.parameters.protectedNamespaces` (a list of namespace names).
    pub fn protected_namespaces_for(
        &self,
        class_parameters: Option<&serde_json::Value>,
    ) -> Result<Vec<String>, String> {
        let mut namespaces = self.protected_namespaces.clone();
        match class_parameters.and_then(|p| p.get(PROTECTED_NAMESPACES_PARAMETER)) {
            None | Some(serde_json::Value::Null) => {}
            Some(value) => {
                let listed: Vec<String> = serde_json::from_value(value.clone()).map_err(|_| {
                    format!(
                        "the ProvisionerClass's spec.parameters.{PROTECTED_NAMESPACES_PARAMETER} \
                         must be a list of namespace names, found {value}"
                    )
                })?;
                namespaces.extend(listed);
            }
        }
        Ok(namespaces)
    }
}

impl BundleFormat for RegistryFormat {
    fn provisioner_id(&self) -> &'static str {
        PROVISIONER_ID
    }

    fn objects(
        &self,
        files: &content::FileMap,
        deployment: &BundleDeployment,
    ) -> Result<Vec<DynamicObject>, String> {
        self.plan(files, deployment, None).map(|plan| plan.objects)
    }

    /// The objects, and the install namespace the bundle resolved to (from the
    /// deployment, else the CSV's suggested namespace, else `<package>-system`): the engine
    /// creates it when missing and removes it with the bundle unless it holds anything else.
    fn plan(
        &self,
        files: &content::FileMap,
        deployment: &BundleDeployment,
        class_parameters: Option<&serde_json::Value>,
    ) -> Result<Plan, String> {
        let chosen = Options::from_deployment(deployment).map_err(|err| err.to_string())?;
        let webhook_namespace_selector = match chosen.webhook_namespace_selector {
            Some(policy) => policy,
            None => self.selector_policy_for(class_parameters)?,
        };
        let options = Options {
            cert_provider: self.cert_provider_for(class_parameters)?,
            protected_namespaces: self.protected_namespaces_for(class_parameters)?,
            webhook_namespace_selector: Some(webhook_namespace_selector),
            ..chosen
        };
        let conversion = conversion(
            files.iter().map(|(path, bytes)| (path, bytes.as_ref())),
            &options,
        )
        .map_err(|err| err.to_string())?;
        Ok(Plan {
            objects: conversion.objects,
            install_namespace: Some(conversion.install_namespace),
            adjustments: conversion.adjustments,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployment(install_namespace: Option<&str>, config: serde_json::Value) -> BundleDeployment {
        let mut spec = json!({
            "provisionerClassName": PROVISIONER_ID,
            "template": {"spec": {
                "provisionerClassName": PROVISIONER_ID,
                "source": {"type": "image", "image": {"ref": "quay.io/example/bundle:v1"}},
            }},
            "config": config,
        });
        if let Some(namespace) = install_namespace {
            spec["installNamespace"] = json!(namespace);
        }
        serde_json::from_value(json!({
            "apiVersion": "core.rukpak.io/v1alpha1",
            "kind": "BundleDeployment",
            "metadata": {"name": "memcached"},
            "spec": spec,
        }))
        .unwrap()
    }

    #[test]
    fn options_read_install_namespace_and_target_namespaces_from_the_deployment() {
        let options = Options::from_deployment(&deployment(
            Some("ops"),
            json!({"targetNamespaces": ["a", "b"]}),
        ))
        .unwrap();
        assert_eq!(options.install_namespace.as_deref(), Some("ops"));
        assert_eq!(options.target_namespaces, ["a", "b"]);
    }

    #[test]
    fn spec_install_namespace_wins_over_the_config_one() {
        let config = json!({"installNamespace": "from-config"});
        let explicit = Options::from_deployment(&deployment(Some("ops"), config.clone())).unwrap();
        assert_eq!(explicit.install_namespace.as_deref(), Some("ops"));
        let fallback = Options::from_deployment(&deployment(None, config)).unwrap();
        assert_eq!(fallback.install_namespace.as_deref(), Some("from-config"));
        assert!(fallback.target_namespaces.is_empty());
    }

    #[test]
    fn target_namespaces_that_are_not_a_list_of_strings_are_rejected() {
        let err = Options::from_deployment(&deployment(None, json!({"targetNamespaces": "a"})))
            .unwrap_err();
        assert!(err.to_string().starts_with(
            "failed to read the deployment config: spec.config.targetNamespaces must be a list of strings"
        ), "{err}");
    }

    #[test]
    fn options_read_the_deployment_config() {
        let options = Options::from_deployment(&deployment(
            None,
            json!({"deploymentConfig": {
                "env": [{"name": "LOG_LEVEL", "value": "debug"}],
                "nodeSelector": {"infra": ""},
            }}),
        ))
        .unwrap();
        let config = options.deployment_config.unwrap();
        assert_eq!(config.env.unwrap()[0].name, "LOG_LEVEL");
        assert_eq!(config.node_selector.unwrap()["infra"], "");
        let none =
            Options::from_deployment(&deployment(None, json!({"deploymentConfig": null}))).unwrap();
        assert_eq!(none.deployment_config, None);
    }

    #[test]
    fn an_invalid_deployment_config_is_refused_naming_the_field() {
        let err = Options::from_deployment(&deployment(
            None,
            json!({"deploymentConfig": {"tolerations": [{"key": "k", "operater": "Exists"}]}}),
        ))
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "failed to read the deployment config: \
             spec.config.deploymentConfig.tolerations[0].operater is not a field of Toleration"
        );
        let err = Options::from_deployment(&deployment(
            None,
            json!({"deploymentConfig": {"resources": "small"}}),
        ))
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "failed to read the deployment config: spec.config.deploymentConfig.resources is \
             not a valid ResourceRequirements: invalid type: string \"small\", expected \
             ResourceRequirements"
        );
    }

    #[test]
    fn the_format_serves_the_registry_provisioner_class() {
        assert_eq!(
            RegistryFormat::default().provisioner_id(),
            "core-rukpak-io-registry"
        );
    }

    #[test]
    fn the_class_chooses_the_certificate_provider() {
        let format = RegistryFormat::default();
        assert_eq!(
            format.cert_provider_for(None).unwrap(),
            CertProvider::BuiltIn
        );
        let chosen = json!({"certificateProvider": "service-ca"});
        assert_eq!(
            format.cert_provider_for(Some(&chosen)).unwrap(),
            CertProvider::ServiceCa
        );
        let wrong = json!({"certificateProvider": 3});
        assert_eq!(
            format.cert_provider_for(Some(&wrong)).unwrap_err(),
            "the ProvisionerClass's spec.parameters.certificateProvider must be a string \
             (one of builtin, cert-manager, service-ca), found 3"
        );
    }
}
