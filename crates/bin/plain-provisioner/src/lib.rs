//! The plain+v0 provisioner: installs bundles that are a flat `manifests/` directory of
//! Kubernetes objects, through the shared apply engine (`apply-engine`).

pub mod format;

use apply_engine::controller::BundleFormat;
use kube::api::DynamicObject;
use rukpak_api::BundleDeployment;

/// The provisioner id of plain+v0 bundles.
pub const PROVISIONER_ID: &str = rukpak_api::PLAIN_PROVISIONER_CLASS;

/// The plain+v0 format: the bundle's objects are applied as they are.
#[derive(Debug, Clone, Copy, Default)]
pub struct PlainFormat;

impl BundleFormat for PlainFormat {
    fn provisioner_id(&self) -> &'static str {
        PROVISIONER_ID
    }

    fn objects(
        &self,
        files: &content::FileMap,
        _: &BundleDeployment,
    ) -> Result<Vec<DynamicObject>, String> {
        format::objects(
            files.iter().map(|(path, bytes)| (path, bytes.as_ref())),
            files.dirs(),
        )
        .map_err(|err| err.to_string())
    }
}
