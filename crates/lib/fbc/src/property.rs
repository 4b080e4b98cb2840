//! Typed properties (`{"type": ..., "value": ...}`) carried by bundles, packages and channels.
//!
//! Known property types are decoded and validated; any other type is kept verbatim as
//! [`Property::Other`], because catalogs routinely carry properties this crate does not interpret,
//! or, when parsing keeps only what resolution reads ([`Detail::Resolution`]), as
//! [`Property::Omitted`], its type without its value.

use std::borrow::Cow;
use std::collections::BTreeMap;

use semver::Version;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::constraint::{self, Constraint};
use crate::csv_check::MinKubeVersion;
use crate::detail::Detail;
use crate::gvk::Gvk;
use crate::range::{PrereleasePolicy, RangeError, VersionRange};
use crate::scan::without_position;

/// `olm.package`: the bundle's package and version.
pub const TYPE_PACKAGE: &str = "olm.package";
/// `olm.gvk`: an API the bundle provides.
pub const TYPE_GVK: &str = "olm.gvk";
/// `olm.package.required`: a package (in a version range) the bundle needs.
pub const TYPE_PACKAGE_REQUIRED: &str = "olm.package.required";
/// `olm.gvk.required`: an API the bundle needs.
pub const TYPE_GVK_REQUIRED: &str = "olm.gvk.required";
/// `olm.constraint`: a generic, possibly compound, dependency.
pub const TYPE_CONSTRAINT: &str = "olm.constraint";
/// `olm.maxOpenShiftVersion`: the newest OpenShift minor the bundle supports.
pub const TYPE_MAX_OPENSHIFT_VERSION: &str = "olm.maxOpenShiftVersion";
/// `olm.csv.metadata`: CSV metadata copied into the catalog.
pub const TYPE_CSV_METADATA: &str = "olm.csv.metadata";
/// `olm.bundle.object`: a base64 manifest inlined into the catalog (deprecated upstream).
pub const TYPE_BUNDLE_OBJECT: &str = "olm.bundle.object";

/// One property of a blob.
///
/// Large variants are boxed so that the enum stays 40 bytes: every bundle holds a list of
/// these, and a catalog has tens of thousands of bundles.
#[derive(Debug, Clone, PartialEq)]
pub enum Property {
    /// `olm.package`.
    Package(Box<PackageProperty>),
    /// `olm.gvk`.
    Gvk(Box<Gvk>),
    /// `olm.package.required`.
    PackageRequired(PackageRequired),
    /// `olm.gvk.required`.
    GvkRequired(Box<Gvk>),
    /// `olm.constraint`.
    Constraint(Box<Constraint>),
    /// `olm.maxOpenShiftVersion`, as written (catalogs use both strings and numbers).
    MaxOpenShiftVersion(String),
    /// `olm.csv.metadata`, in full ([`Detail::Full`]).
    CsvMetadata(Box<CsvMetadata>),
    /// `olm.csv.metadata` as [`Detail::Resolution`] keeps it: only its `minKubeVersion`, the
    /// one field resolution reads (a whole [`CsvMetadata`], empty but for that, is ~200 bytes
    /// per bundle).
    CsvMinKubeVersion(Option<Box<str>>),
    /// Any other type, kept verbatim.
    Other {
        /// The property's `type`.
        type_name: String,
        /// The property's `value`.
        value: Box<Value>,
    },
    /// A property whose value was not kept, only its type: what [`Detail::Resolution`]
    /// makes of `olm.bundle.object` and of types this crate does not interpret.
    Omitted {
        /// The property's `type`.
        type_name: Cow<'static, str>,
    },
}

impl Property {
    /// The property's `type` as it appears in the catalog.
    pub fn type_name(&self) -> &str {
        match self {
            Property::Package(_) => TYPE_PACKAGE,
            Property::Gvk(_) => TYPE_GVK,
            Property::PackageRequired(_) => TYPE_PACKAGE_REQUIRED,
            Property::GvkRequired(_) => TYPE_GVK_REQUIRED,
            Property::Constraint(_) => TYPE_CONSTRAINT,
            Property::MaxOpenShiftVersion(_) => TYPE_MAX_OPENSHIFT_VERSION,
            Property::CsvMetadata(_) | Property::CsvMinKubeVersion(_) => TYPE_CSV_METADATA,
            Property::Other { type_name, .. } => type_name,
            Property::Omitted { type_name } => type_name,
        }
    }
}

/// The value of `olm.package`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackageProperty {
    /// The package the bundle belongs to.
    pub package_name: String,
    /// The bundle's version (strict semver, as operator-registry requires).
    pub version: Version,
    /// The optional `release` newer opm versions add; kept as written, not interpreted.
    pub release: Option<String>,
}

/// The value of `olm.package.required`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackageRequired {
    /// The package needed.
    pub package_name: String,
    /// The acceptable versions (blang semantics: [`PrereleasePolicy::Ordered`]).
    pub version_range: VersionRange,
}

/// The value of `olm.csv.metadata`. The fields a resolver or UI reads are typed; everything
/// else is kept in `extra`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CsvMetadata {
    /// Human-readable name.
    #[serde(default)]
    pub display_name: Option<String>,
    /// Long description (markdown).
    #[serde(default)]
    pub description: Option<String>,
    /// Search keywords.
    #[serde(default)]
    pub keywords: Vec<String>,
    /// Maturity, e.g. `stable`.
    #[serde(default)]
    pub maturity: Option<String>,
    /// Minimum Kubernetes version the bundle supports.
    #[serde(default)]
    pub min_kube_version: Option<String>,
    /// Install modes the operator supports.
    #[serde(default)]
    pub install_modes: Vec<InstallMode>,
    /// CSV annotations.
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
    /// CSV labels.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// Every other field, verbatim.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// One CSV install mode.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct InstallMode {
    /// `OwnNamespace`, `SingleNamespace`, `MultiNamespace` or `AllNamespaces`.
    #[serde(rename = "type")]
    pub mode: String,
    /// Whether the operator supports it.
    pub supported: bool,
}

/// Why a known property's value was rejected.
#[derive(Debug, thiserror::Error)]
pub enum PropertyError {
    /// The value does not have the expected shape.
    #[error("value does not match the {type_name} format")]
    Shape {
        /// The property type.
        type_name: String,
        /// The decoding failure.
        #[source]
        source: serde_json::Error,
    },
    /// A version is not strict semver.
    #[error("version {version:?} is not valid semver")]
    Version {
        /// The version as written.
        version: String,
        /// The semver failure.
        #[source]
        source: semver::Error,
    },
    /// A version range cannot be parsed.
    #[error("invalid version range")]
    Range(#[source] RangeError),
    /// An `olm.constraint` is malformed.
    #[error(transparent)]
    Constraint(#[from] constraint::ConstraintParseError),
    /// `olm.maxOpenShiftVersion` is neither a string nor a number.
    #[error("olm.maxOpenShiftVersion must be a string or a number")]
    MaxOpenShiftVersion,
}

/// A property before interpretation. Its value is held as read: for a JSON file, a slice of
/// the file's text, so that a value that is not kept (a base64 manifest, say) is never copied.
#[derive(Debug, Deserialize)]
#[serde(bound(deserialize = "V: Deserialize<'de>"))]
pub(crate) struct RawProperty<'a, V> {
    #[serde(rename = "type", borrow)]
    pub type_name: Cow<'a, str>,
    /// `None` when absent or `null`.
    #[serde(default)]
    pub value: Option<V>,
}

/// A JSON value as read, before it is interpreted: a slice of JSON text, or a value (what a
/// YAML document is read into).
pub(crate) trait RawJson {
    /// The value as `T`; errors carry no position (see [`without_position`]).
    fn read<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error>;

    /// The value itself.
    fn to_value(&self) -> Result<Value, serde_json::Error>;
}

impl RawJson for &RawValue {
    fn read<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_str(self.get()).map_err(without_position)
    }

    fn to_value(&self) -> Result<Value, serde_json::Error> {
        serde_json::from_str(self.get())
    }
}

impl RawJson for Value {
    fn read<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        T::deserialize(self)
    }

    fn to_value(&self) -> Result<Value, serde_json::Error> {
        Ok(self.clone())
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawPackageProperty {
    package_name: String,
    version: String,
    #[serde(default)]
    release: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawPackageRequired {
    package_name: String,
    version_range: String,
}

/// Parses a strict semver version, as operator-registry does for bundle versions.
pub(crate) fn parse_version(text: &str) -> Result<Version, PropertyError> {
    Version::parse(text).map_err(|source| PropertyError::Version {
        version: text.to_owned(),
        source,
    })
}

/// Where [`interpret`] reads a property's value from. It reads the value exactly once, in
/// one of three ways.
pub(crate) trait ValueSource {
    /// The value as `T`.
    fn shape<T: DeserializeOwned>(&mut self, type_name: &str) -> Result<T, PropertyError>;

    /// The value itself; only small values are read this way, since only what resolution
    /// does not read can be large.
    fn value(&mut self, type_name: &str) -> Result<Value, PropertyError>;

    /// Passes over a value that is not kept (checked only as JSON).
    fn skip(&mut self, type_name: &str) -> Result<(), PropertyError>;
}

/// A property held as read: its value was checked as JSON when it was read.
impl<V: RawJson> ValueSource for &RawProperty<'_, V> {
    /// An absent value is `null`.
    fn shape<T: DeserializeOwned>(&mut self, type_name: &str) -> Result<T, PropertyError> {
        match &self.value {
            Some(value) => value.read(),
            None => Value::Null.read(),
        }
        .map_err(|source| shape_error(type_name, source))
    }

    fn value(&mut self, type_name: &str) -> Result<Value, PropertyError> {
        match &self.value {
            Some(value) => value.to_value(),
            None => Ok(Value::Null),
        }
        .map_err(|source| shape_error(type_name, source))
    }

    fn skip(&mut self, _: &str) -> Result<(), PropertyError> {
        Ok(())
    }
}

/// A value of the wrong shape for its type.
pub(crate) fn shape_error(type_name: &str, source: serde_json::Error) -> PropertyError {
    PropertyError::Shape {
        type_name: type_name.to_owned(),
        source,
    }
}

impl<V: RawJson> RawProperty<'_, V> {
    /// The typed property, or why its value is invalid; `detail` says whether values this
    /// crate does not read are kept.
    pub(crate) fn interpret(&self, detail: Detail) -> Result<Property, PropertyError> {
        interpret(&self.type_name, &mut &*self, detail)
    }
}

/// The typed property of type `type_name` with the value `source` gives, or why the value is
/// invalid; `detail` says whether values this crate does not read are kept.
pub(crate) fn interpret(
    type_name: &str,
    source: &mut impl ValueSource,
    detail: Detail,
) -> Result<Property, PropertyError> {
    Ok(match type_name {
        TYPE_PACKAGE => {
            let p: RawPackageProperty = source.shape(type_name)?;
            Property::Package(Box::new(PackageProperty {
                version: parse_version(&p.version)?,
                package_name: p.package_name,
                release: p.release.filter(|r| !r.is_empty()),
            }))
        }
        TYPE_GVK => Property::Gvk(Box::new(source.shape(type_name)?)),
        TYPE_GVK_REQUIRED => Property::GvkRequired(Box::new(source.shape(type_name)?)),
        TYPE_PACKAGE_REQUIRED => {
            let p: RawPackageRequired = source.shape(type_name)?;
            let version_range = VersionRange::parse(&p.version_range, PrereleasePolicy::Ordered)
                .map_err(PropertyError::Range)?;
            Property::PackageRequired(PackageRequired {
                package_name: p.package_name,
                version_range,
            })
        }
        TYPE_CONSTRAINT => {
            Property::Constraint(Box::new(Constraint::from_value(&source.value(type_name)?)?))
        }
        TYPE_MAX_OPENSHIFT_VERSION => {
            Property::MaxOpenShiftVersion(match source.value(type_name)? {
                Value::String(s) => s,
                Value::Number(n) => n.to_string(),
                _ => return Err(PropertyError::MaxOpenShiftVersion),
            })
        }
        TYPE_CSV_METADATA => match detail {
            Detail::Full => Property::CsvMetadata(Box::new(source.shape(type_name)?)),
            // Checked in full either way, so that both details accept the same catalogs.
            Detail::Resolution => Property::CsvMinKubeVersion(
                source
                    .shape::<MinKubeVersion>(type_name)?
                    .0
                    .map(String::into_boxed_str),
            ),
        },
        _ => match detail {
            Detail::Full => Property::Other {
                type_name: type_name.to_owned(),
                value: Box::new(source.value(type_name)?),
            },
            Detail::Resolution => {
                source.skip(type_name)?;
                Property::Omitted {
                    // The type every bundle repeats costs no allocation.
                    type_name: if type_name == TYPE_BUNDLE_OBJECT {
                        Cow::Borrowed(TYPE_BUNDLE_OBJECT)
                    } else {
                        Cow::Owned(type_name.to_owned())
                    },
                }
            }
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_property_stays_small() {
        // A new inline variant larger than this belongs in a Box (see the type's docs).
        assert!(std::mem::size_of::<Property>() <= 40);
    }
}
