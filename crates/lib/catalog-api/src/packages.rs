//! The `packages` query: one entry per package with what a person choosing an operator
//! reads first (description, icon presence, channels and their heads, versions,
//! deprecations, problems), which catalogd leaves to each client to work out from every blob.
//!
//! Built once per catalog from the parsed index and, for what the index does not keep
//! (descriptions and icons), from the package blobs as the store writes them.

use std::collections::HashMap;

use bytes::Bytes;
use fbc::{CatalogIndex, compare_precedence};
use serde::{Deserialize, Serialize};

/// How much of a description the summary keeps; the whole text is in the package's blob
/// (`metas?schema=olm.package&package=P`).
const DESCRIPTION_CHARS: usize = 300;

/// What a package blob says that the index does not keep.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PackageExtras {
    pub(crate) description: Option<String>,
    pub(crate) has_icon: bool,
}

impl PackageExtras {
    /// Reads an `olm.package` blob's description and icon presence.
    pub(crate) fn of(json: &[u8]) -> Self {
        #[derive(Deserialize)]
        struct Blob {
            description: Option<String>,
            icon: Option<serde::de::IgnoredAny>,
        }
        match serde_json::from_slice::<Blob>(json) {
            Ok(blob) => Self {
                description: blob.description.map(|text| shorten(&text)),
                has_icon: blob.icon.is_some(),
            },
            Err(_) => Self::default(),
        }
    }
}

/// The first paragraph, cut at [`DESCRIPTION_CHARS`] on a character boundary.
fn shorten(text: &str) -> String {
    let paragraph = text.trim().split("\n\n").next().unwrap_or_default().trim();
    match paragraph.char_indices().nth(DESCRIPTION_CHARS) {
        Some((cut, _)) => format!("{}…", &paragraph[..cut]),
        None => paragraph.to_owned(),
    }
}

/// One package of the `packages` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PackageSummary {
    /// Package name.
    pub name: String,
    /// The first paragraph of its description, shortened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether the package blob has an icon.
    pub has_icon: bool,
    /// The channel used when an install names none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_channel: Option<String>,
    /// Channels, by name.
    pub channels: Vec<ChannelSummary>,
    /// Bundle versions, newest first.
    pub versions: Vec<String>,
    /// The package's deprecation message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecation: Option<String>,
    /// Why the package cannot be installed from this catalog (a broken upgrade graph);
    /// empty when it can.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

/// One channel of a [`PackageSummary`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChannelSummary {
    /// Channel name.
    pub name: String,
    /// The bundle an install from this channel gets; absent when the graph is broken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<String>,
    /// The head bundle's version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_version: Option<String>,
    /// How many bundles the channel has.
    pub bundles: usize,
    /// The channel's deprecation message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecation: Option<String>,
}

/// Every package of `index`, by name, as JSON.
pub(crate) fn summary(index: &CatalogIndex, extras: &HashMap<String, PackageExtras>) -> Bytes {
    let packages: Vec<PackageSummary> = index
        .packages()
        .map(|package| {
            let name = &package.name;
            let extra = extras.get(name.as_str()).cloned().unwrap_or_default();
            let mut versions: Vec<&fbc::Version> =
                index.bundles(name).map(|bundle| &bundle.version).collect();
            versions.sort_by(|a, b| compare_precedence(b, a));
            versions.dedup();
            PackageSummary {
                name: name.clone(),
                description: extra.description,
                has_icon: extra.has_icon,
                default_channel: package.default_channel.clone(),
                channels: index
                    .channels(name)
                    .map(|channel| {
                        let head = index
                            .channel_graph(name, &channel.name)
                            .map(|graph| graph.head().name.clone());
                        ChannelSummary {
                            head_version: head
                                .as_deref()
                                .and_then(|head| index.bundle(name, head))
                                .map(|bundle| bundle.version.to_string()),
                            head,
                            name: channel.name.clone(),
                            bundles: channel.entries.len(),
                            deprecation: index
                                .channel_deprecation(name, &channel.name)
                                .map(str::to_owned),
                        }
                    })
                    .collect(),
                versions: versions.iter().map(ToString::to_string).collect(),
                deprecation: index.package_deprecation(name).map(str::to_owned),
                problems: index
                    .package_problems(name)
                    .iter()
                    .map(ToString::to_string)
                    .collect(),
            }
        })
        .collect();
    // Serialising plain structs of strings cannot fail.
    Bytes::from(serde_json::to_vec(&packages).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn extras_keep_the_first_paragraph_and_whether_there_is_an_icon() {
        let extras = PackageExtras::of(
            br#"{"schema":"olm.package","name":"p","description":"  First part.\n\nSecond part.","icon":{"base64data":"AA==","mediatype":"image/png"}}"#,
        );
        assert_eq!(
            extras,
            PackageExtras {
                description: Some("First part.".to_owned()),
                has_icon: true
            }
        );
        let long = "é".repeat(400);
        let extras = PackageExtras::of(format!(r#"{{"description":"{long}"}}"#).as_bytes());
        let description = extras.description.unwrap();
        assert_eq!(description.chars().count(), DESCRIPTION_CHARS + 1);
        assert!(description.ends_with('…'));
        assert!(!extras.has_icon);
    }

    #[test]
    fn the_summary_has_heads_versions_newest_first_and_deprecations() {
        let catalog = r#"{"schema":"olm.package","name":"p","defaultChannel":"stable"}
{"schema":"olm.channel","package":"p","name":"stable","entries":[{"name":"p.v1.0.0"},{"name":"p.v1.10.0","replaces":"p.v1.0.0"}]}
{"schema":"olm.channel","package":"p","name":"old","entries":[{"name":"p.v1.0.0"}]}
{"schema":"olm.bundle","package":"p","name":"p.v1.0.0","image":"r/p:1","properties":[{"type":"olm.package","value":{"packageName":"p","version":"1.0.0"}}]}
{"schema":"olm.bundle","package":"p","name":"p.v1.10.0","image":"r/p:2","properties":[{"type":"olm.package","value":{"packageName":"p","version":"1.10.0"}}]}
{"schema":"olm.deprecations","package":"p","entries":[{"reference":{"schema":"olm.channel","name":"old"},"message":"use stable"}]}
"#;
        let index = CatalogIndex::from_files([("c.json", catalog)]).unwrap();
        let extras = HashMap::from([(
            "p".to_owned(),
            PackageExtras {
                description: Some("d".to_owned()),
                has_icon: false,
            },
        )]);
        let parsed: Vec<PackageSummary> =
            serde_json::from_slice(&summary(&index, &extras)).unwrap();
        assert_eq!(parsed.len(), 1);
        let p = &parsed[0];
        assert_eq!(p.versions, ["1.10.0", "1.0.0"]);
        assert_eq!(p.default_channel.as_deref(), Some("stable"));
        assert_eq!(p.description.as_deref(), Some("d"));
        let stable = p.channels.iter().find(|c| c.name == "stable").unwrap();
        assert_eq!(stable.head.as_deref(), Some("p.v1.10.0"));
        assert_eq!(stable.head_version.as_deref(), Some("1.10.0"));
        assert_eq!(stable.bundles, 2);
        assert_eq!(stable.deprecation, None);
        let old = p.channels.iter().find(|c| c.name == "old").unwrap();
        assert_eq!(old.deprecation.as_deref(), Some("use stable"));
        assert!(p.problems.is_empty());
    }
}
