//! `upgrades <package> --from <version>`: what a bundle can upgrade to, in one step and in
//! several, along the catalog's upgrade graph (`replaces`, `skips`, `skipRange`), as the
//! resolver allows an installed operator to move.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use fbc::{CatalogIndex, Version};
use serde::Serialize;

use crate::catalogs::Catalog;

/// The upgrades of one installed version, in one catalog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
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

/// Why no upgrades could be listed, as a sentence.
pub type Refusal = String;

/// The upgrades of `package` at `from` in each catalog that has that version. Pure.
pub fn upgrades(
    catalogs: &[Catalog],
    package: &str,
    from: &str,
    channel: Option<&str>,
) -> Result<Vec<Upgrades>, Refusal> {
    let version: Version = from
        .trim_start_matches('v')
        .parse()
        .map_err(|err| format!("{from} is not a version (semver, e.g. 1.2.3): {err}"))?;
    let found: Vec<Upgrades> = catalogs
        .iter()
        .filter_map(|catalog| in_catalog(catalog, package, &version, channel))
        .collect();
    if found.is_empty() {
        let with_package = catalogs.iter().any(|c| c.index.package(package).is_some());
        return Err(if with_package {
            format!(
                "version {version} of package {package} is in none of the catalogs, so nothing is known of its upgrades; list its versions with `kubectl olm show {package}`"
            )
        } else {
            format!("package {package} is in none of the catalogs")
        });
    }
    Ok(found)
}

fn in_catalog(
    catalog: &Catalog,
    package: &str,
    version: &Version,
    channel: Option<&str>,
) -> Option<Upgrades> {
    let index = &catalog.index;
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
        catalog: catalog.name.clone(),
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

/// What a PlatformOperator runs and how it may move: `upgrades NAME` without `--from`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Installed {
    /// The PlatformOperator.
    pub platform_operator: String,
    /// Its package.
    pub package: String,
    /// The version running, from its status.
    pub version: String,
    /// The channel it follows, when it names one (else the package's default).
    pub channel: Option<String>,
    /// The versions it accepts (`spec.package.versionRange`).
    pub version_range: Option<String>,
    /// `CatalogProvided` or `SelfCertified`.
    pub policy: String,
    /// The PlatformOperator's `Progressing` condition, as the resolver and installer put
    /// it: `status`, `reason` and `message` (why an upgrade is blocked, for one).
    pub progressing: Option<Progress>,
    /// The upgrades of the running version, per catalog that has it.
    pub upgrades: Vec<Upgrades>,
}

/// A condition, as the controllers wrote it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Progress {
    /// `True` or `False`.
    pub status: String,
    /// The reason, e.g. `UpgradeBlocked`.
    pub reason: String,
    /// The message.
    pub message: String,
}

/// The PlatformOperator's package, running version and settings; the error is a sentence.
/// Pure.
pub fn installed_of(
    platform_operator: &platform_api::PlatformOperator,
) -> Result<Installed, Refusal> {
    let name = platform_operator.metadata.name.clone().unwrap_or_default();
    let package = &platform_operator.spec.package;
    let status = platform_operator.status.clone().unwrap_or_default();
    let version = status
        .installed_bundles
        .iter()
        .find(|bundle| bundle.package == package.name)
        .map(|bundle| bundle.version.clone())
        .ok_or_else(|| {
            format!(
                "PlatformOperator {name} has nothing of package {} installed yet; see `kubectl olm status {name}`",
                package.name
            )
        })?;
    let progressing = status
        .conditions
        .iter()
        .find(|c| c.type_ == "Progressing")
        .map(|c| Progress {
            status: c.status.clone(),
            reason: c.reason.clone(),
            message: c.message.clone(),
        });
    Ok(Installed {
        platform_operator: name,
        package: package.name.clone(),
        version,
        channel: package.channel.clone(),
        version_range: package.version_range.clone(),
        policy: match package.upgrade_constraint_policy {
            platform_api::UpgradeConstraintPolicy::CatalogProvided => "CatalogProvided",
            platform_api::UpgradeConstraintPolicy::SelfCertified => "SelfCertified",
        }
        .to_owned(),
        progressing,
        upgrades: Vec::new(),
    })
}
