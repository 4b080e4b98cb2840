//! Errors of the registry+v1 conversion.

use apply_engine::manifest::ManifestError;

/// Why a registry+v1 bundle could not be converted into plain objects.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConvertError {
    /// `metadata/annotations.yaml` is absent.
    #[error("failed to read bundle metadata: {0} not found")]
    MissingAnnotationsFile(&'static str),
    /// `metadata/annotations.yaml` is not the expected YAML mapping.
    #[error("failed to parse {file}: {message}")]
    InvalidAnnotations {
        /// File inside the bundle.
        file: String,
        /// The parser's message.
        message: String,
    },
    /// A required annotation is missing from `metadata/annotations.yaml`.
    #[error("failed to read bundle metadata: {file} has no annotation {key:?}")]
    MissingAnnotation {
        /// File inside the bundle.
        file: String,
        /// The annotation key.
        key: &'static str,
    },
    /// The bundle's mediatype is not `registry+v1`.
    #[error(
        "failed to read bundle metadata: {file} declares mediatype {found:?}, expected \"registry+v1\""
    )]
    UnsupportedMediatype {
        /// File inside the bundle.
        file: String,
        /// The declared mediatype.
        found: String,
    },
    /// A manifest document is not a usable object.
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    /// `manifests/` holds no ClusterServiceVersion.
    #[error(
        "failed to find a ClusterServiceVersion: no document in manifests/ has kind ClusterServiceVersion"
    )]
    NoCsv,
    /// `manifests/` holds more than one ClusterServiceVersion.
    #[error(
        "failed to find a single ClusterServiceVersion: found {first_name:?} in {first_file} and {second_name:?} in {second_file}"
    )]
    MultipleCsvs {
        /// File of the first CSV.
        first_file: String,
        /// Name of the first CSV.
        first_name: String,
        /// File of the second CSV.
        second_file: String,
        /// Name of the second CSV.
        second_name: String,
    },
    /// The ClusterServiceVersion does not have the expected shape.
    #[error("failed to read ClusterServiceVersion {name:?} in {file}: {message}")]
    InvalidCsv {
        /// File inside the bundle.
        file: String,
        /// Name of the CSV.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// The CSV declares something this converter does not support (webhooks, API services,
    /// an install strategy other than `deployment`).
    #[error("failed to convert ClusterServiceVersion {name:?} in {file}: {message}")]
    UnsupportedCsv {
        /// File inside the bundle.
        file: String,
        /// Name of the CSV.
        name: String,
        /// What is not supported.
        message: String,
    },
    /// The deployment's `config` is not the expected shape.
    #[error("failed to read the deployment config: {0}")]
    InvalidConfig(String),
    /// The deployment config cannot be applied to one of the bundle's Deployments (a mount
    /// path it would use twice, or a pod template of the wrong shape).
    #[error(
        "failed to apply spec.config.deploymentConfig to Deployment {deployment:?} of ClusterServiceVersion {name:?} in {file}: {message}"
    )]
    DeploymentConfig {
        /// File of the CSV.
        file: String,
        /// Name of the CSV.
        name: String,
        /// Name of the Deployment.
        deployment: String,
        /// What is wrong.
        message: String,
    },
    /// The target namespaces are not allowed by the CSV's install modes.
    #[error(
        "failed to validate target namespaces against ClusterServiceVersion {name:?} in {file}: {message}"
    )]
    InstallMode {
        /// File of the CSV.
        file: String,
        /// Name of the CSV.
        name: String,
        /// Upstream's message, e.g. `supported install modes [OwnNamespace] do not support
        /// target namespaces [other]`.
        message: String,
    },
    /// The install namespace the bundle suggests cannot name a namespace.
    #[error(
        "failed to choose the install namespace of ClusterServiceVersion {name:?} in {file}: {message}"
    )]
    InstallNamespace {
        /// File of the CSV.
        file: String,
        /// Name of the CSV.
        name: String,
        /// What is wrong and what to do.
        message: String,
    },
    /// A manifest has a kind that OLM does not allow in bundles.
    #[error(
        "failed to convert {file}: bundle contains unsupported resource: Name: {name}, Kind: {kind}"
    )]
    UnsupportedKind {
        /// File inside the bundle.
        file: String,
        /// Kind of the object.
        kind: String,
        /// Name of the object.
        name: String,
    },
    /// Two manifests of the bundle define one object (same kind, namespace and name)
    /// differently; identical copies are installed once instead.
    #[error(
        "failed to convert the bundle: {first} and {second} both define {what}, differently; a revision holds one object per identity, so which one would win is unclear: ask the bundle's author to remove one of them"
    )]
    ConflictingDuplicate {
        /// The object (kind, name and namespace).
        what: String,
        /// The file of the first definition.
        first: String,
        /// The file of the second definition.
        second: String,
    },
    /// A generated object could not be built (a bug, or a value of the wrong shape in the CSV).
    #[error("failed to build {what}: {message}")]
    Build {
        /// The object being built (kind/name).
        what: String,
        /// The serializer's message.
        message: String,
    },
    /// A v1beta1 CustomResourceDefinition could not be converted to v1.
    #[error(
        "failed to convert CustomResourceDefinition {name:?} in {file} to apiextensions.k8s.io/v1: {message}"
    )]
    CrdConversion {
        /// File inside the bundle.
        file: String,
        /// Name of the CRD.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// A v1beta1 CustomResourceDefinition's schema breaks a rule of v1 that cannot be
    /// repaired without changing what the schema accepts.
    #[error(
        "failed to convert CustomResourceDefinition {name:?} in {file} to apiextensions.k8s.io/v1: the schema of version {version:?} cannot be made structural: {problem}"
    )]
    CrdSchema {
        /// File inside the bundle.
        file: String,
        /// Name of the CRD.
        name: String,
        /// The version whose schema it is.
        version: String,
        /// Where and why.
        problem: Box<crate::structural::SchemaError>,
    },
    /// A CustomResourceDefinition the provisioner would emit breaks a rule the API server
    /// applies to `apiextensions.k8s.io/v1` CRDs (see [`crate::crd::validation`]), so
    /// installing it would fail.
    #[error(
        "CustomResourceDefinition {name:?} in {file} cannot be installed: {field} {message}; ask the bundle's author to fix the CRD"
    )]
    InvalidCrd {
        /// File inside the bundle.
        file: String,
        /// Name of the CRD.
        name: String,
        /// The field path in the emitted v1 CRD (`spec.versions[0].schema.openAPIV3Schema...`).
        field: String,
        /// What is wrong with that field, as the rest of a sentence starting with it.
        message: String,
    },
}
