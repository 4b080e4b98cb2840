//! What an installed bundle can upgrade to along a catalog's upgrade graph (`replaces`,
//! `skips`, `skipRange`), in one step and in several, as the resolver allows an installed
//! operator to move. `kubectl olm upgrades` prints it; the catalog query API serves it.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde::{Deserialize, Serialize};

use crate::{CatalogIndex, Version};

/// The upgrades of one installed version, in one catalog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Upgrades {
    /// The catalog.
    pub catalog: String,
    /// The package.
    pub package: String,
    /// The installed bundle.
    pub from: Step,
    /// The channel the upgrades are limited to, if one was given.
    pub channel: Option<String>,
    /// What it can upgrade to directly, newest first.
    pub next: Vec<Step>,
    /// Everything it can reach in one or more upgrades, newest first.
    pub reachable: Vec<Step>,
}

/// One bundle on the way.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    /// The bundle name.
    pub bundle: String,
    /// Its version.
    pub version: String,
    /// The channels that lead to it (for `from`: the channels it is in).
    pub channels: Vec<String>,
    /// The catalog's deprecation notice on the bundle.
    pub deprecated: Option<String>,
}

/// The upgrades of `package` at `version` in `index` (the catalog named `catalog`): its
/// direct successors and everything reachable in more steps, along `channel` only when
/// given. `None` when the catalog has no bundle of that version. Pure.
pub fn upgrades_from(
    index: &CatalogIndex,
    catalog: &str,
    package: &str,
    version: &Version,
    channel: Option<&str>,
) -> Option<Upgrades> {
    let installed = index.bundles(package).find(|b| b.version == *version)?;
    let step = |name: &str, channels: BTreeSet<String>| -> Option<Step> {
        let bundle = index.bundle(package, name)?;
        Some(Step {
            bundle: name.to_owned(),
            version: bundle.version.to_string(),
            channels: channels.into_iter().collect(),
            deprecated: index.bundle_deprecation(package, name).map(str::to_owned),
        })
    };
    let next_of =
        |name: &str, version: &Version| successors(index, package, channel, name, version);
    let direct = next_of(&installed.name, &installed.version);
    // Breadth first over the graph: every bundle reachable, with the channels of the
    // edges that reach it.
    let mut reached: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut queue: VecDeque<(String, Version)> = VecDeque::new();
    queue.push_back((installed.name.clone(), installed.version.clone()));
    while let Some((name, version)) = queue.pop_front() {
        for (to, to_version, channels) in next_of(&name, &version) {
            let seen = reached.contains_key(&to);
            reached.entry(to.clone()).or_default().extend(channels);
            if !seen && to != installed.name {
                queue.push_back((to, to_version));
            }
        }
    }
    reached.remove(&installed.name);
    let newest_first = |steps: &mut Vec<Step>| {
        steps.sort_by(|a, b| {
            let parse = |s: &Step| s.version.parse::<Version>().ok();
            parse(b).cmp(&parse(a))
        });
    };
    let mut next: Vec<Step> = direct
        .into_iter()
        .filter_map(|(name, _, channels)| step(&name, channels))
        .collect();
    newest_first(&mut next);
    let mut reachable: Vec<Step> = reached
        .into_iter()
        .filter_map(|(name, channels)| step(&name, channels))
        .collect();
    newest_first(&mut reachable);
    let from_channels: BTreeSet<String> = index
        .bundle_channels(package, &installed.name)
        .into_iter()
        .map(|c| c.name.clone())
        .collect();
    Some(Upgrades {
        catalog: catalog.to_owned(),
        package: package.to_owned(),
        from: step(&installed.name, from_channels)?,
        channel: channel.map(str::to_owned),
        next,
        reachable,
    })
}

/// The bundles `name` (at `version`) upgrades to directly, each with the channels whose
/// edges lead there; only `channel`'s edges when one is given.
fn successors(
    index: &CatalogIndex,
    package: &str,
    channel: Option<&str>,
    name: &str,
    version: &Version,
) -> Vec<(String, Version, BTreeSet<String>)> {
    let mut found: BTreeMap<String, (Version, BTreeSet<String>)> = BTreeMap::new();
    for graph_channel in index.channels(package) {
        if channel.is_some_and(|wanted| wanted != graph_channel.name) {
            continue;
        }
        let Some(graph) = index.channel_graph(package, &graph_channel.name) else {
            continue;
        };
        for entry in graph.successors(name, Some(version)) {
            let Some(bundle) = index.bundle(package, &entry.name) else {
                continue;
            };
            found
                .entry(entry.name.clone())
                .or_insert_with(|| (bundle.version.clone(), BTreeSet::new()))
                .1
                .insert(graph_channel.name.clone());
        }
    }
    found
        .into_iter()
        .map(|(name, (version, channels))| (name, version, channels))
        .collect()
}
