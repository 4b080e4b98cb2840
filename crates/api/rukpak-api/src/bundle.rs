//! Bundle: one immutable piece of content to unpack, from one source.

use api_common::{CEL_PATH_STAYS_INSIDE, Condition, ContentRef, DNS_LABEL_PATTERN, SecretRef};
use kube::{CustomResource, KubeSchema};
use serde::{Deserialize, Serialize};

/// A Bundle names content (from an image, git, http, ConfigMaps or an upload) and the
/// provisioner class that understands its format. rukpak-core unpacks it into the
/// content store; a provisioner applies it when a BundleDeployment selects it. The spec
/// cannot change after creation: to install something else, create another Bundle (a
/// BundleDeployment does this for you).
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
// Each printcolumn(...) repeats the same keys; clippy mistakes that for duplicate attributes.
#[allow(clippy::duplicated_attributes)]
#[kube(
    group = "core.rukpak.io",
    version = "v1alpha1",
    kind = "Bundle",
    plural = "bundles",
    status = "BundleStatus",
    doc = "Content to unpack from one source, and the provisioner class that understands its format. Cluster-scoped; the spec is immutable.",
    printcolumn(name = "Revision", type_ = "string", json_path = ".metadata.labels.core\\.rukpak\\.io/revision"),
    printcolumn(name = "Type", type_ = "string", json_path = ".spec.source.type"),
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp"),
    printcolumn(name = "Provisioner", type_ = "string", json_path = ".spec.provisionerClassName"),
    printcolumn(name = "Outcome", type_ = "string", json_path = ".status.revisionOutcome"),
    printcolumn(name = "Digest", type_ = "string", json_path = ".status.content.digest", priority = 1),
    validation = Rule::new("self.metadata.name.size() <= 52").message("metadata.name: Too long: may not be longer than 52 characters"),
    validation = Rule::new("self.spec == oldSelf.spec").message("spec is immutable: create a new Bundle instead"),
)]
#[serde(rename_all = "camelCase")]
pub struct BundleSpec {
    /// Name of the ProvisionerClass that unpacks and applies this Bundle, e.g.
    /// `core-rukpak-io-plain` or `core-rukpak-io-registry`. Creating a Bundle of a class
    /// requires the `use` verb on that ProvisionerClass.
    #[schemars(length(min = 1, max = 63), regex(pattern = DNS_LABEL_PATTERN))]
    pub provisioner_class_name: String,

    /// Where the content comes from.
    pub source: BundleSource,
}

/// The kind of source a Bundle's content comes from.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum SourceType {
    /// An OCI image.
    Image,
    /// A directory of a git repository.
    Git,
    /// A gzip'd tar served over http(s).
    Http,
    /// Files taken from immutable ConfigMaps.
    ConfigMaps,
    /// Content uploaded through the API server.
    Upload,
}

/// Where a Bundle's content comes from: `type` names the source and exactly the matching
/// field is set.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[x_kube(
    validation = Rule::new("[has(self.image), has(self.git), has(self.http), has(self.configMaps), has(self.upload)].filter(x, x).size() == 1").message("exactly one of image, git, http, configMaps or upload must be set"),
    validation = Rule::new("self.type == 'image' ? has(self.image) : self.type == 'git' ? has(self.git) : self.type == 'http' ? has(self.http) : self.type == 'configMaps' ? has(self.configMaps) : has(self.upload)").message("the field named by type must be set")
)]
pub struct BundleSource {
    /// The kind of source: `image`, `git`, `http`, `configMaps` or `upload`.
    #[serde(rename = "type")]
    pub type_: SourceType,

    /// Content from an OCI image: the image's filesystem is the bundle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<ImageSource>,

    /// Content from a directory of a git repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<GitSource>,

    /// Content from a gzip'd tar served over http(s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpSource>,

    /// Content from immutable ConfigMaps in the system namespace: each key becomes a file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 32))]
    pub config_maps: Option<Vec<ConfigMapSource>>,

    /// Content uploaded through the API server after the Bundle is created (see
    /// `rukpak-core upload`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upload: Option<UploadSource>,
}

/// An OCI image source.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImageSource {
    /// Image reference, by tag (`registry/repo:tag`) or, to pin content, by digest
    /// (`registry/repo@sha256:...`).
    #[serde(rename = "ref")]
    #[schemars(length(min = 1, max = 1024))]
    pub ref_: String,

    /// Secret of type `kubernetes.io/dockerconfigjson` in the system namespace holding
    /// the registry credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    pub pull_secret: Option<String>,

    /// Skip TLS verification of the registry. For tests only: it trusts any server.
    #[serde(
        rename = "insecureSkipTLSVerify",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub insecure_skip_tls_verify: Option<bool>,

    /// PEM certificates trusted in addition to the system roots when talking to the
    /// registry (a private CA).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 65536))]
    pub certificate_data: Option<String>,
}

/// A git source.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct GitSource {
    /// Repository URL (`https://`, `http://`, `ssh://` or `git://`).
    #[schemars(length(min = 1, max = 2048))]
    pub repository: String,

    /// Directory inside the repository that holds the bundle; the repository root when
    /// empty. It may not be absolute or contain `..`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = Rule::new(CEL_PATH_STAYS_INSIDE).message("directory must be a relative path inside the repository (no leading '/', no '..')"))]
    #[schemars(length(max = 1024))]
    pub directory: Option<String>,

    /// The branch, tag or commit to check out.
    #[serde(rename = "ref")]
    pub ref_: GitRef,

    /// Credentials and TLS settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<GitAuth>,
}

/// Which revision of a git repository: exactly one of branch, tag or commit.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("[has(self.branch), has(self.tag), has(self.commit)].filter(x, x).size() == 1").message("exactly one of branch, tag or commit must be set"))]
pub struct GitRef {
    /// A branch; its current head is resolved and recorded in `status.resolvedSource`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 255))]
    pub branch: Option<String>,

    /// A tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 255))]
    pub tag: Option<String>,

    /// A full commit hash: pins the content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = "^[0-9a-f]{40}([0-9a-f]{24})?$"))]
    pub commit: Option<String>,
}

/// Git credentials and TLS settings.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GitAuth {
    /// Secret in the system namespace: `username` and `password` for https, or
    /// `ssh-privatekey` and `ssh-knownhosts` for ssh.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<SecretRef>,

    /// Skip TLS verification of an https server. For tests only.
    #[serde(
        rename = "insecureSkipTLSVerify",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub insecure_skip_tls_verify: Option<bool>,
}

/// An http(s) source serving a gzip'd tar.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HttpSource {
    /// URL of the gzip'd tar.
    #[schemars(length(min = 1, max = 2048), regex(pattern = "^https?://"))]
    pub url: String,

    /// Expected sha256 of the downloaded file (64 lowercase hex digits); a mismatch fails
    /// the unpack. Setting it pins the content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = "^[0-9a-f]{64}$"))]
    pub sha256: Option<String>,

    /// Credentials and TLS settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<HttpAuth>,
}

/// Http credentials and TLS settings.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HttpAuth {
    /// Secret in the system namespace with `username` and `password` for basic auth.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<SecretRef>,

    /// Skip TLS verification of the server. For tests only.
    #[serde(
        rename = "insecureSkipTLSVerify",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub insecure_skip_tls_verify: Option<bool>,

    /// PEM certificates trusted in addition to the system roots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 65536))]
    pub certificate_data: Option<String>,
}

/// One ConfigMap whose keys become files of the bundle.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ConfigMapSource {
    /// The ConfigMap, in the system namespace. It must be immutable, so the content cannot
    /// change under the Bundle.
    pub config_map: ConfigMapRef,

    /// Directory inside the bundle where this ConfigMap's keys are written; the bundle
    /// root when empty. It may not be absolute or contain `..`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = Rule::new(CEL_PATH_STAYS_INSIDE).message("path must be relative and stay inside the bundle (no leading '/', no '..')"))]
    #[schemars(length(max = 1024))]
    pub path: Option<String>,
}

/// A ConfigMap in the system namespace.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigMapRef {
    /// Name of the ConfigMap.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
}

/// Marks a Bundle whose content is uploaded after creation. It has no fields.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default, schemars::JsonSchema)]
pub struct UploadSource {}

/// Progress of a Bundle, for `kubectl get`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, schemars::JsonSchema)]
pub enum BundlePhase {
    /// Waiting to be unpacked (or for an upload).
    Pending,
    /// Being unpacked.
    Unpacking,
    /// The content is in the content store.
    Unpacked,
    /// Unpacking failed; see the `Unpacked` condition.
    Failing,
}

/// Observed state of a Bundle.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BundleStatus {
    /// Progress: Pending, Unpacking, Unpacked or Failing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<BundlePhase>,

    /// The source pinned to what was unpacked: an image by digest, a git commit, an http
    /// URL with its sha256.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_source: Option<BundleSource>,

    /// Where the unpacked content is in the content store.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<ContentRef>,

    /// The generation of the spec this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,

    /// `Unpacked`: whether the content is in the content store, with reasons
    /// UnpackPending, Unpacking, UnpackSuccessful or UnpackFailed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "api_common::conditions_schema")]
    pub conditions: Vec<Condition>,

    /// For a BundleDeployment's Bundle: what became of it as a revision (`Progressing`,
    /// `Healthy`, `Unhealthy`, `Failed`, `Superseded`), written by the provisioner.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision_outcome: Option<RevisionOutcome>,
}

/// What became of one revision.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, schemars::JsonSchema)]
pub enum RevisionOutcome {
    /// Being applied, or waiting for its probes.
    Progressing,
    /// Every object applied and passing its probes.
    Healthy,
    /// Applied, but not every object is healthy.
    Unhealthy,
    /// Refused, failed a probe, or missed the progress deadline; not retried until the
    /// template changes.
    Failed,
    /// Replaced by a newer revision.
    Superseded,
}

impl RevisionOutcome {
    /// The name, as in the API.
    pub fn as_str(self) -> &'static str {
        match self {
            RevisionOutcome::Progressing => "Progressing",
            RevisionOutcome::Healthy => "Healthy",
            RevisionOutcome::Unhealthy => "Unhealthy",
            RevisionOutcome::Failed => "Failed",
            RevisionOutcome::Superseded => "Superseded",
        }
    }
}
