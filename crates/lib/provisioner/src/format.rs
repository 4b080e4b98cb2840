//! How a provisioner turns unpacked bundle content into objects: the one thing each
//! provisioner writes itself.

use kube::api::DynamicObject;
use rukpak_api::BundleDeployment;

/// How a provisioner turns unpacked bundle content into objects.
pub trait BundleFormat: Send + Sync + 'static {
    /// The provisioner id this format serves (a ProvisionerClass's `spec.provisioner`).
    fn provisioner_id(&self) -> &'static str;

    /// The objects to apply for `deployment` from the bundle's files. The error message is
    /// shown to the user on the `HasValidBundle` condition.
    fn objects(
        &self,
        files: &content::FileMap,
        deployment: &BundleDeployment,
    ) -> Result<Vec<DynamicObject>, String>;

    /// The objects to apply and the install namespace (the default namespace of namespaced
    /// objects; created when missing and then removed with the bundle, unless it holds
    /// anything else). `class_parameters` is the ProvisionerClass's `spec.parameters`. The
    /// default is [`Self::objects`] and `spec.installNamespace`; formats that derive the
    /// namespace from the bundle itself, or read class parameters, override this.
    fn plan(
        &self,
        files: &content::FileMap,
        deployment: &BundleDeployment,
        class_parameters: Option<&serde_json::Value>,
    ) -> Result<Plan, String> {
        let _ = class_parameters;
        Ok(Plan {
            objects: self.objects(files, deployment)?,
            install_namespace: deployment.spec.install_namespace.clone(),
            adjustments: Vec::new(),
        })
    }
}

/// What a [`BundleFormat`] makes of a bundle for one BundleDeployment.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// The objects to apply.
    pub objects: Vec<DynamicObject>,
    /// The install namespace, if any.
    pub install_namespace: Option<String>,
    /// What the format changed from the bundle as written so it installs safely, as
    /// sentences; kept in `status.adjustments` and announced by an Event when they change.
    pub adjustments: Vec<String>,
}
