//! ActiveResolution: constraints to resolve against the Catalogs, and the result.

use api_common::Condition;
use kube::{CustomResource, KubeSchema};
use serde::{Deserialize, Serialize};

/// Pattern of an operator package name.
const PACKAGE_PATTERN: &str = "^[a-zA-Z0-9]([-a-zA-Z0-9._]*[a-zA-Z0-9])?$";

/// Pattern of the function form: `required("package"[, "versionRange"[, "channel"]])`.
pub const EXPRESSION_PATTERN: &str =
    r#"^\s*required\(\s*"[a-zA-Z0-9]([-a-zA-Z0-9._]*[a-zA-Z0-9])?"\s*(,\s*"[^"]*"\s*){0,2}\)\s*$"#;

/// An ActiveResolution asks Deppy which bundles satisfy its constraints. deppy-resolver
/// writes the answer to `status.selections` and keeps it current as Catalogs change. When
/// the `deppy.io/activator-class` annotation names an activator, that activator
/// turns the selections into installable `status.entities`.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
// Each printcolumn(...) repeats the same keys; clippy mistakes that for duplicate attributes.
#[allow(clippy::duplicated_attributes)]
#[kube(
    group = "deppy.io",
    version = "v1alpha1",
    kind = "ActiveResolution",
    plural = "activeresolutions",
    shortname = "ar",
    status = "ActiveResolutionStatus",
    doc = "Constraints to resolve against the Catalogs; the status holds the selected bundles. Cluster-scoped.",
    printcolumn(
        name = "Resolved",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Resolved\")].status"
    ),
    printcolumn(
        name = "Reason",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Resolved\")].reason",
        priority = 1
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct ActiveResolutionSpec {
    /// Names of the Catalogs to resolve against; all Catalogs when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    pub sources: Vec<String>,

    /// What the resolution must satisfy. Each entry sets exactly one kind of constraint.
    #[schemars(length(min = 1, max = 256))]
    pub constraints: Vec<Constraint>,
}

/// One constraint: exactly one of its fields is set.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("[has(self.required), has(self.gvkRequired), has(self.prohibited), has(self.installed), has(self.expression)].filter(x, x).size() == 1").message("each constraint sets exactly one of required, gvkRequired, prohibited, installed or expression"))]
pub struct Constraint {
    /// A package that must be installed, optionally limited to a version range and a
    /// channel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<PackageRequirement>,

    /// An API (group, version, kind) that some selected bundle must provide.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gvk_required: Option<GvkRequirement>,

    /// A package (optionally only some versions) that must not be selected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prohibited: Option<ProhibitedPackage>,

    /// A package already installed at a version: only that version or an upgrade from it
    /// (along the channel's replaces/skips/skipRange edges) may be selected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub installed: Option<InstalledPackage>,

    /// The function form, `required("package", ">= 1.0.0", "stable")`: the version range
    /// and channel are optional.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 512), regex(pattern = EXPRESSION_PATTERN))]
    pub expression: Option<String>,
}

/// A required package.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PackageRequirement {
    /// Package name.
    #[schemars(length(min = 1, max = 255), regex(pattern = PACKAGE_PATTERN))]
    pub name: String,

    /// Version range, e.g. `>=1.0.0 <2.0.0`, `~1.2`, `1.2.x || 1.4.0`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 256))]
    pub version_range: Option<String>,

    /// Channel to choose from; the package's default channel is preferred otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 255))]
    pub channel: Option<String>,
}

/// A required API.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GvkRequirement {
    /// API group; empty for the core group.
    #[serde(default)]
    #[schemars(length(max = 253))]
    pub group: String,

    /// API version.
    #[schemars(length(min = 1, max = 63))]
    pub version: String,

    /// Kind.
    #[schemars(length(min = 1, max = 63))]
    pub kind: String,
}

/// A package excluded from the selection.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProhibitedPackage {
    /// Package name.
    #[schemars(length(min = 1, max = 255), regex(pattern = PACKAGE_PATTERN))]
    pub name: String,

    /// Only these versions are excluded; all versions when empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 256))]
    pub version_range: Option<String>,
}

/// A package already installed at a known version.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstalledPackage {
    /// Package name.
    #[schemars(length(min = 1, max = 255), regex(pattern = PACKAGE_PATTERN))]
    pub name: String,

    /// The installed version.
    #[schemars(length(min = 1, max = 128))]
    pub version: String,
}

/// Observed state of an ActiveResolution.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ActiveResolutionStatus {
    /// The selected bundles as `catalog:package:version:channel`, sorted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub selections: Vec<String>,

    /// Installable units for the selections, filled by the activator named in the
    /// `deppy.io/activator-class` annotation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub entities: Vec<ResolvedEntity>,

    /// Deprecation notices (the catalogs' `olm.deprecations`) that apply to the selected
    /// bundles: one entry per selection that has any, sorted by package. Kept, like
    /// `selections`, while a later spec does not resolve.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deprecations: Vec<SelectionDeprecation>,

    /// The generation of the spec this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,

    /// `Resolved` (reasons Succeeded, ConstraintsNotSatisfiable, SourceUnavailable,
    /// InvalidSpec) and `Activated`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "api_common::conditions_schema")]
    pub conditions: Vec<Condition>,
}

/// The deprecation notices that apply to one selected bundle: its package's, the channel's
/// it was selected through, and its own. At least one is set.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SelectionDeprecation {
    /// The selected bundle's package.
    pub package: String,
    /// The channel it was selected through.
    pub channel: String,
    /// The selected bundle's name.
    pub bundle: String,
    /// The catalog's message when the whole package is deprecated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package_message: Option<String>,
    /// The catalog's message when the channel is deprecated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel_message: Option<String>,
    /// The catalog's message when the bundle is deprecated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bundle_message: Option<String>,
}

/// One installable unit of a resolution.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResolvedEntity {
    /// Package name.
    pub package: String,
    /// The bundle image to install, by digest where the catalog gives one.
    pub image: String,
}
