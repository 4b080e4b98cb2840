//! The sample bundles and catalog of `examples/`, published to a test registry.
//!
//! `hack/publish-examples` does the work (it is also what `make run` uses), so tests
//! exercise exactly the images an administrator sees in the quick start.

use std::process::Command;

use crate::servers::CraneRegistry;
use crate::workspace_path;

/// What [`publish`] pushed.
#[derive(Debug, Clone)]
pub struct Examples {
    /// The catalog image, for a Catalog's `spec.source.image.ref`.
    pub catalog: String,
    /// The registry (`host:port`) holding the images.
    pub registry: String,
}

impl Examples {
    /// The image of the sample bundle `<package>.v<version>`.
    pub fn bundle_image(&self, package: &str, version: &str) -> String {
        format!(
            "{}/olmv1-examples/{package}-bundle:v{version}",
            self.registry
        )
    }
}

/// Pushes every sample bundle and the sample catalog to `registry`.
pub fn publish(registry: &CraneRegistry) -> Examples {
    let script = workspace_path("hack/publish-examples");
    let output = Command::new(&script)
        .arg(&registry.addr)
        .output()
        .unwrap_or_else(|err| panic!("failed to run {}: {err}", script.display()));
    assert!(
        output.status.success(),
        "hack/publish-examples failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let catalog = stdout
        .lines()
        .last()
        .unwrap_or_else(|| panic!("hack/publish-examples printed nothing"))
        .trim()
        .to_owned();
    Examples {
        catalog,
        registry: registry.addr.clone(),
    }
}

/// Names in the sample catalog (`examples/`) that tests look for: its packages, the child
/// BundleDeployments the PlatformOperator activator class names after them, and what the
/// operators install.
pub mod sample {
    /// The operator package that depends on [`METRICS`].
    pub const MEMCACHED: &str = "memcached-operator";
    /// The dependency package.
    pub const METRICS: &str = "metrics-agent";
    /// The child BundleDeployment installing [`MEMCACHED`].
    pub const MEMCACHED_BD: &str = "package-memcached-operator";
    /// The child BundleDeployment installing [`METRICS`].
    pub const METRICS_BD: &str = "package-metrics-agent";
    /// Where [`MEMCACHED`] is installed.
    pub const MEMCACHED_NAMESPACE: &str = "memcached-operator-system";
    /// Where [`METRICS`] is installed.
    pub const METRICS_NAMESPACE: &str = "metrics-agent-system";
    /// [`MEMCACHED`]'s operator Deployment.
    pub const MEMCACHED_DEPLOYMENT: &str = "memcached-operator-controller-manager";
    /// [`METRICS`]'s operator Deployment.
    pub const METRICS_DEPLOYMENT: &str = "metrics-agent";
    /// The CRD [`MEMCACHED`] owns.
    pub const MEMCACHED_CRD: &str = "memcacheds.cache.example.com";
    /// The CRD [`METRICS`] owns.
    pub const METRICS_CRD: &str = "agents.metrics.example.com";
}
