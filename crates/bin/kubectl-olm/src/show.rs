//! `show <package>`: a package's channels, versions, deprecations and upgrade graph, in
//! every catalog that has it.

use fbc::CatalogIndex;
use serde::Serialize;

use crate::catalogs::Catalog;
use crate::search::first_line;

/// A package as one catalog has it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PackageView {
    /// The catalog.
    pub catalog: String,
    /// The package name.
    pub package: String,
    /// The first line of its description.
    pub summary: String,
    /// Its default channel, if the catalog names one.
    pub default_channel: Option<String>,
    /// The catalog's deprecation notice on the package.
    pub deprecated: Option<String>,
    /// Whether the catalog has an icon for it.
    pub icon: bool,
    /// Its channels, by name.
    pub channels: Vec<ChannelView>,
    /// Why some of its channels cannot be resolved from this catalog (a broken upgrade
    /// graph), as sentences.
    pub problems: Vec<String>,
}

/// One channel of a package.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChannelView {
    /// The channel name.
    pub name: String,
    /// The bundle at its head (what installing from the channel gets).
    pub head: Option<VersionView>,
    /// The catalog's deprecation notice on the channel.
    pub deprecated: Option<String>,
    /// Its bundles, newest version first.
    pub versions: Vec<VersionView>,
    /// Its upgrade edges: from which bundle to which, as the resolver follows them.
    pub upgrades: Vec<Upgrade>,
}

/// One bundle of a channel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VersionView {
    /// The bundle name.
    pub bundle: String,
    /// Its version.
    pub version: String,
    /// The catalog's deprecation notice on the bundle.
    pub deprecated: Option<String>,
}

/// One upgrade edge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Upgrade {
    /// The bundle upgraded from.
    pub from: String,
    /// The bundle upgraded to.
    pub to: String,
}

/// `package` in each of `catalogs` that has it. Pure.
pub fn show(catalogs: &[Catalog], package: &str) -> Vec<PackageView> {
    catalogs
        .iter()
        .filter_map(|catalog| view(&catalog.name, &catalog.index, package))
        .collect()
}

fn view(catalog: &str, index: &CatalogIndex, name: &str) -> Option<PackageView> {
    let package = index.package(name)?;
    let version_of = |bundle: &str| {
        index.bundle(name, bundle).map(|b| VersionView {
            bundle: bundle.to_owned(),
            version: b.version.to_string(),
            deprecated: index.bundle_deprecation(name, bundle).map(str::to_owned),
        })
    };
    let mut channels: Vec<ChannelView> = index
        .catalog()
        .channels
        .iter()
        .filter(|c| c.package == name)
        .map(|channel| {
            let graph = index.channel_graph(name, &channel.name);
            let mut versions: Vec<(fbc::Version, VersionView)> = channel
                .entries
                .iter()
                .filter_map(|entry| {
                    let bundle = index.bundle(name, &entry.name)?;
                    Some((bundle.version.clone(), version_of(&entry.name)?))
                })
                .collect();
            versions.sort_by(|a, b| b.0.cmp(&a.0));
            ChannelView {
                name: channel.name.clone(),
                head: graph.and_then(|g| version_of(&g.head().name)),
                deprecated: index
                    .channel_deprecation(name, &channel.name)
                    .map(str::to_owned),
                versions: versions.into_iter().map(|(_, v)| v).collect(),
                upgrades: graph
                    .map(|g| {
                        g.edges()
                            .into_iter()
                            .map(|(from, to)| Upgrade {
                                from: from.to_owned(),
                                to: to.to_owned(),
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
            }
        })
        .collect();
    channels.sort_by(|a, b| a.name.cmp(&b.name));
    Some(PackageView {
        catalog: catalog.to_owned(),
        package: name.to_owned(),
        summary: first_line(package.description.as_deref().unwrap_or_default()),
        default_channel: package.default_channel.clone(),
        deprecated: index.package_deprecation(name).map(str::to_owned),
        icon: package
            .icon
            .as_ref()
            .is_some_and(|icon| !icon.base64data.is_empty()),
        channels,
        problems: index
            .package_problems(name)
            .iter()
            .map(ToString::to_string)
            .collect(),
    })
}
