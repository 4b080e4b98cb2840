//! The Kubernetes group/version/kind that catalogs name APIs by: what a bundle provides
//! (`olm.gvk`) and what it requires (`olm.gvk.required`, `olm.constraint`).

use serde::Deserialize;

/// A Kubernetes group/version/kind, as `olm.gvk`, `olm.gvk.required` and `olm.constraint`
/// write it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize)]
pub struct Gvk {
    /// API group; empty for the core group.
    #[serde(default)]
    pub group: String,
    /// API version, e.g. `v1alpha1`.
    pub version: String,
    /// Kind, e.g. `EtcdCluster`.
    pub kind: String,
}

impl std::fmt::Display for Gvk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "group: {}, version: {}, kind: {}",
            self.group, self.version, self.kind
        )
    }
}
