//! The subset of OpenShift's `config.openshift.io/v1` ClusterVersion that the project
//! reads: the cluster's current version, for the aggregated ClusterOperator's
//! `Upgradeable` condition. On OpenShift the cluster-version operator owns the CRD and the
//! object (named `version`); elsewhere `deploy/compat/` installs a CRD generated from these
//! types so tests can stand one up.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Name of the one ClusterVersion object of an OpenShift cluster.
pub const CLUSTER_VERSION_NAME: &str = "version";

/// ClusterVersion describes the version of the cluster. Only the fields the project reads
/// are modelled; on OpenShift the real CRD keeps the rest.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[kube(
    group = "config.openshift.io",
    version = "v1",
    kind = "ClusterVersion",
    plural = "clusterversions",
    status = "ClusterVersionStatus",
    doc = "The version of the cluster (compatible subset of OpenShift's ClusterVersion). Cluster-scoped; the object is named `version`.",
    printcolumn(
        name = "Version",
        type_ = "string",
        json_path = ".status.desired.version"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterVersionSpec {
    /// The update channel, e.g. `stable-4.16`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
}

/// Observed state of a ClusterVersion.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterVersionStatus {
    /// The release the cluster is reconciling towards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desired: Option<Release>,

    /// Updates applied to the cluster, newest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<UpdateHistory>,
}

/// A release of the cluster.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default, JsonSchema)]
pub struct Release {
    /// Semantic version of the release, e.g. `4.16.3`.
    #[serde(default)]
    pub version: String,
}

/// One update of the cluster.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default, JsonSchema)]
pub struct UpdateHistory {
    /// `Completed` once every component runs the version, `Partial` otherwise.
    #[serde(default)]
    pub state: String,
    /// Semantic version of the release.
    #[serde(default)]
    pub version: String,
}

impl ClusterVersionStatus {
    /// The version the cluster runs: the newest `Completed` update in the history, else
    /// the desired release; `None` when neither names a version.
    pub fn current_version(&self) -> Option<&str> {
        self.history
            .iter()
            .find(|update| update.state == "Completed" && !update.version.is_empty())
            .map(|update| update.version.as_str())
            .or_else(|| {
                self.desired
                    .as_ref()
                    .map(|release| release.version.as_str())
                    .filter(|version| !version.is_empty())
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_current_version_is_the_newest_completed_update_else_the_desired_one() {
        let mut status = ClusterVersionStatus {
            desired: Some(Release {
                version: "4.17.0".into(),
            }),
            history: vec![
                UpdateHistory {
                    state: "Partial".into(),
                    version: "4.17.0".into(),
                },
                UpdateHistory {
                    state: "Completed".into(),
                    version: "4.16.5".into(),
                },
            ],
        };
        assert_eq!(status.current_version(), Some("4.16.5"));
        status.history.clear();
        assert_eq!(status.current_version(), Some("4.17.0"));
        assert_eq!(ClusterVersionStatus::default().current_version(), None);
    }
}
