//! The declarative catalog model: one value per blob, as parsed, before cross-blob validation.
//!
//! Fields are public so tests and callers can build catalogs in code; [`crate::CatalogIndex`]
//! checks the rules that span blobs (duplicates, references, channel graphs).

use std::sync::Arc;

use semver::Version;
use serde_json::Value;

use crate::constraint::Constraint;
use crate::gvk::Gvk;
use crate::location::Location;
use crate::property::{CsvMetadata, Property, TYPE_BUNDLE_OBJECT};

/// Schema of package blobs.
pub const SCHEMA_PACKAGE: &str = "olm.package";
/// Schema of channel blobs.
pub const SCHEMA_CHANNEL: &str = "olm.channel";
/// Schema of bundle blobs.
pub const SCHEMA_BUNDLE: &str = "olm.bundle";
/// Schema of deprecation blobs.
pub const SCHEMA_DEPRECATIONS: &str = "olm.deprecations";

/// Every blob of a file-based catalog, grouped by schema, in file-path then document order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Catalog {
    /// `olm.package` blobs.
    pub packages: Vec<Package>,
    /// `olm.channel` blobs.
    pub channels: Vec<Channel>,
    /// `olm.bundle` blobs.
    pub bundles: Vec<Bundle>,
    /// `olm.deprecations` blobs.
    pub deprecations: Vec<Deprecations>,
    /// Blobs of any other schema, kept verbatim.
    pub others: Vec<Meta>,
}

impl Catalog {
    /// Moves every blob of `other` after this catalog's own.
    pub(crate) fn append(&mut self, mut other: Catalog) {
        self.packages.append(&mut other.packages);
        self.channels.append(&mut other.channels);
        self.bundles.append(&mut other.bundles);
        self.deprecations.append(&mut other.deprecations);
        self.others.append(&mut other.others);
    }

    /// The parts' blobs in order, in lists of exactly their total length: appending part
    /// after part doubled each list as it grew (copying every blob each time, into fresh
    /// memory) and shrinking it to fit copied it once more.
    pub(crate) fn concat(parts: Vec<Catalog>) -> Catalog {
        let total = |count: fn(&Catalog) -> usize| parts.iter().map(count).sum::<usize>();
        let mut catalog = Catalog {
            packages: Vec::with_capacity(total(|c| c.packages.len())),
            channels: Vec::with_capacity(total(|c| c.channels.len())),
            bundles: Vec::with_capacity(total(|c| c.bundles.len())),
            deprecations: Vec::with_capacity(total(|c| c.deprecations.len())),
            others: Vec::with_capacity(total(|c| c.others.len())),
        };
        for part in parts {
            catalog.append(part);
        }
        catalog
    }

    /// Moves every blob out into a catalog whose lists are exactly their length, leaving this
    /// one empty with its room, to gather the next blobs in.
    pub(crate) fn take_exact(&mut self) -> Catalog {
        fn exact<T>(list: &mut Vec<T>) -> Vec<T> {
            let mut taken = Vec::with_capacity(list.len());
            taken.append(list);
            taken
        }
        Catalog {
            packages: exact(&mut self.packages),
            channels: exact(&mut self.channels),
            bundles: exact(&mut self.bundles),
            deprecations: exact(&mut self.deprecations),
            others: exact(&mut self.others),
        }
    }

    /// Gives back what the lists grew beyond their length while parsing: up to half of each,
    /// for as long as the catalog is held.
    pub(crate) fn shrink_to_fit(&mut self) {
        self.packages.shrink_to_fit();
        self.channels.shrink_to_fit();
        self.bundles.shrink_to_fit();
        self.deprecations.shrink_to_fit();
        self.others.shrink_to_fit();
    }
}

/// An `olm.package` blob.
#[derive(Debug, Clone, PartialEq)]
pub struct Package {
    /// Package name.
    pub name: String,
    /// The channel to use when a request names none. Optional in the format; when set, it must
    /// name a channel of the package.
    pub default_channel: Option<String>,
    /// Markdown description (not kept with [`crate::Detail::Resolution`]).
    pub description: Option<String>,
    /// Icon (not kept with [`crate::Detail::Resolution`]).
    pub icon: Option<Icon>,
    /// Properties.
    pub properties: Vec<Property>,
    /// Where the blob came from.
    pub location: Location,
}

/// A package icon.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct Icon {
    /// Base64-encoded image data.
    #[serde(default)]
    pub base64data: String,
    /// Media type, e.g. `image/svg+xml`.
    #[serde(default)]
    pub mediatype: String,
}

/// An `olm.channel` blob.
#[derive(Debug, Clone, PartialEq)]
pub struct Channel {
    /// The package the channel belongs to.
    pub package: String,
    /// Channel name.
    pub name: String,
    /// Bundles in the channel with their upgrade edges. Shared with the channel's
    /// [`crate::ChannelGraph`] rather than copied into it: the graph of every channel of a
    /// large catalog is held as long as the catalog is.
    pub entries: Arc<[ChannelEntry]>,
    /// Properties.
    pub properties: Vec<Property>,
    /// Where the blob came from.
    pub location: Location,
}

/// One bundle's membership in a channel, with the edges that lead to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelEntry {
    /// Bundle name.
    pub name: String,
    /// The bundle this one replaces: that bundle can upgrade to this one.
    pub replaces: Option<String>,
    /// Bundles this one skips: each can upgrade to this one.
    pub skips: Vec<String>,
    /// Bundles whose version is in this range can upgrade to this one (blang semantics).
    pub skip_range: Option<crate::range::VersionRange>,
}

/// An `olm.bundle` blob.
#[derive(Debug, Clone, PartialEq)]
pub struct Bundle {
    /// The package the bundle belongs to.
    pub package: String,
    /// Bundle name (in OLM v0, the CSV name).
    pub name: String,
    /// Bundle image reference; empty only for bundles that inline their objects.
    pub image: String,
    /// Images the bundle uses (not kept with [`crate::Detail::Resolution`]).
    pub related_images: Vec<RelatedImage>,
    /// The version from the bundle's single `olm.package` property.
    pub version: Version,
    /// Properties, including the `olm.package` one.
    pub properties: Vec<Property>,
    /// Where the blob came from.
    pub location: Location,
}

impl Bundle {
    /// APIs the bundle provides (`olm.gvk`).
    pub fn provided_gvks(&self) -> impl Iterator<Item = &Gvk> {
        self.properties.iter().filter_map(|p| match p {
            Property::Gvk(gvk) => Some(gvk.as_ref()),
            _ => None,
        })
    }

    /// Every dependency the bundle declares, as constraints: `olm.package.required`,
    /// `olm.gvk.required` and `olm.constraint`, in property order. Each must be satisfied by
    /// some bundle for this one to be installable.
    pub fn requirements(&self) -> Vec<Constraint> {
        self.properties
            .iter()
            .filter_map(|p| match p {
                Property::PackageRequired(req) => Some(Constraint::package(
                    req.package_name.clone(),
                    req.version_range.clone(),
                )),
                Property::GvkRequired(gvk) => Some(Constraint::gvk(gvk.as_ref().clone())),
                Property::Constraint(c) => Some(c.as_ref().clone()),
                _ => None,
            })
            .collect()
    }

    /// The `olm.csv.metadata` property, if present and kept in full ([`crate::Detail::Full`]);
    /// [`Bundle::min_kube_version`] reads what either detail keeps.
    pub fn csv_metadata(&self) -> Option<&CsvMetadata> {
        self.properties.iter().find_map(|p| match p {
            Property::CsvMetadata(m) => Some(m.as_ref()),
            _ => None,
        })
    }

    /// The `minKubeVersion` of the `olm.csv.metadata` property as written, if present.
    pub fn min_kube_version(&self) -> Option<&str> {
        self.properties.iter().find_map(|p| match p {
            Property::CsvMetadata(m) => m.min_kube_version.as_deref(),
            Property::CsvMinKubeVersion(v) => v.as_deref(),
            _ => None,
        })
    }

    /// The `olm.maxOpenShiftVersion` property as written, if present.
    pub fn max_openshift_version(&self) -> Option<&str> {
        self.properties.iter().find_map(|p| match p {
            Property::MaxOpenShiftVersion(v) => Some(v.as_str()),
            _ => None,
        })
    }

    /// Whether the bundle inlines its manifests (`olm.bundle.object`) instead of naming only
    /// an image.
    pub fn has_inline_objects(&self) -> bool {
        self.properties
            .iter()
            .any(|p| p.type_name() == TYPE_BUNDLE_OBJECT)
    }
}

/// An image a bundle uses.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct RelatedImage {
    /// Optional name.
    #[serde(default)]
    pub name: Option<String>,
    /// Image reference.
    pub image: String,
}

/// An `olm.deprecations` blob: deprecation notices for one package.
#[derive(Debug, Clone, PartialEq)]
pub struct Deprecations {
    /// The package the notices are about.
    pub package: String,
    /// The notices.
    pub entries: Vec<DeprecationEntry>,
    /// Where the blob came from.
    pub location: Location,
}

/// One deprecation notice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeprecationEntry {
    /// What is deprecated.
    pub reference: DeprecationReference,
    /// The message to show users.
    pub message: String,
}

/// The object a deprecation notice refers to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum DeprecationReference {
    /// The whole package.
    Package,
    /// A channel of the package, by name.
    Channel(String),
    /// A bundle of the package, by name.
    Bundle(String),
}

/// A blob whose schema this crate does not model, kept verbatim.
#[derive(Debug, Clone, PartialEq)]
pub struct Meta {
    /// The blob's `schema`.
    pub schema: String,
    /// The blob's `package`, if any.
    pub package: Option<String>,
    /// The blob's `name`, if any.
    pub name: Option<String>,
    /// The whole blob (`null` with [`crate::Detail::Resolution`]).
    pub blob: Value,
    /// Where the blob came from.
    pub location: Location,
}
