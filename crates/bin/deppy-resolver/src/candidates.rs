//! Which bundles can satisfy a requirement, and in which order they are preferred.
//!
//! The unit of choice is an [`Offer`]: a bundle as one channel of one catalog offers it, since
//! a selection (`catalog:package:version:channel`) names the channel too. A bundle in two
//! channels is two offers; at most one of them is selected, as at most one bundle per package
//! is.

use std::cmp::Ordering;

use fbc::{
    Bundle, CatalogIndex, Channel, ConstraintError, ConstraintExpr, Gvk, Version, VersionRange,
};
use foldhash::{HashSet, HashSetExt};

use crate::catalog::NamedCatalog;

/// A bundle in one channel of one catalog.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Offer<'a> {
    /// Position of the catalog in the name-sorted source list.
    pub(crate) source: usize,
    /// The bundle.
    pub(crate) bundle: &'a Bundle,
    /// The channel offering it: its blob in the catalog, so that an offer is told apart from
    /// others by address, without hashing the channel's name.
    pub(crate) channel: &'a Channel,
}

impl<'a> Offer<'a> {
    /// The name of the channel offering the bundle.
    pub(crate) fn channel_name(&self) -> &'a str {
        &self.channel.name
    }
}

/// An offer with everything the preference order looks at.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ranked<'a> {
    pub(crate) offer: Offer<'a>,
    pub(crate) catalog: &'a str,
    pub(crate) priority: i32,
    /// The bundle, its channel or its whole package carries a deprecation notice.
    pub(crate) deprecated: bool,
    /// The channel is its package's default channel in this catalog.
    pub(crate) default_channel: bool,
}

impl<'a> Ranked<'a> {
    pub(crate) fn new(sources: &[NamedCatalog<'a>], offer: Offer<'a>) -> Option<Self> {
        let source = sources.get(offer.source)?;
        let (index, package) = (source.index, offer.bundle.package.as_str());
        let channel = offer.channel_name();
        // One lookup of the package for both answers: asked for every bundle reached.
        let (deprecation, default_channel) =
            index.deprecation_and_default_channel(package, channel, &offer.bundle.name);
        Some(Self {
            offer,
            catalog: source.name,
            priority: source.priority,
            deprecated: deprecation.is_deprecated(),
            default_channel: default_channel == Some(channel),
        })
    }
}

/// The preference order of candidates, most preferred first.
///
/// Non-deprecated before deprecated; then by package name, which only matters when the
/// candidates of an API requirement span packages (deppy's OLM extension grouped by package
/// the same way); then the package's default channel before other channels; then newest
/// version first; then higher catalog priority; then catalog name, channel name and bundle
/// name, so that the order is total and independent of input order.
pub(crate) fn preference(a: &Ranked<'_>, b: &Ranked<'_>) -> Ordering {
    let (x, y) = (a.offer.bundle, b.offer.bundle);
    a.deprecated
        .cmp(&b.deprecated)
        .then_with(|| x.package.cmp(&y.package))
        .then_with(|| b.default_channel.cmp(&a.default_channel))
        .then_with(|| fbc::compare_precedence(&y.version, &x.version))
        .then_with(|| y.version.build.cmp(&x.version.build))
        .then_with(|| b.priority.cmp(&a.priority))
        .then_with(|| a.catalog.cmp(b.catalog))
        .then_with(|| a.offer.channel_name().cmp(b.offer.channel_name()))
        .then_with(|| x.name.cmp(&y.name))
}

/// Adds one offer per channel of `index` that contains each bundle (only `channel`, if given).
/// A package whose upgrade graph is broken in `index` offers nothing from it: what it would
/// upgrade to is unknown (see [`CatalogIndex::package_problems`]).
fn push_offers<'a>(
    out: &mut Vec<Offer<'a>>,
    source: usize,
    index: &'a CatalogIndex,
    bundles: impl IntoIterator<Item = &'a Bundle>,
    channel: Option<&str>,
) {
    // Bundles arrive grouped by package: whether the package is usable is asked once per
    // group, which channels hold a bundle once per bundle (by its position in the index).
    let mut package: Option<&str> = None;
    let mut usable = false;
    for bundle in bundles {
        if package != Some(bundle.package.as_str()) {
            package = Some(&bundle.package);
            usable = index.package_problems(&bundle.package).is_empty();
        }
        if !usable {
            continue;
        }
        for (held_by, _) in index.graphs_holding(bundle) {
            if channel.is_none_or(|wanted| wanted == held_by.name) {
                out.push(Offer {
                    source,
                    bundle,
                    channel: held_by,
                });
            }
        }
    }
}

/// Offers of `package`, in `channel` and `range` when given, from every source.
pub(crate) fn package<'a>(
    sources: &[NamedCatalog<'a>],
    package: &str,
    channel: Option<&str>,
    range: Option<&VersionRange>,
) -> Vec<Offer<'a>> {
    let mut out = Vec::new();
    for (source, catalog) in sources.iter().enumerate() {
        let bundles = catalog.index.bundles_matching(package, channel, range);
        push_offers(&mut out, source, catalog.index, bundles, channel);
    }
    out
}

/// Offers of bundles that provide `gvk`, from every source.
pub(crate) fn providers<'a>(sources: &[NamedCatalog<'a>], gvk: &Gvk) -> Vec<Offer<'a>> {
    let mut out = Vec::new();
    for (source, catalog) in sources.iter().enumerate() {
        push_offers(
            &mut out,
            source,
            catalog.index,
            catalog.index.providers(gvk),
            None,
        );
    }
    out
}

/// Offers of bundles that satisfy an `olm.constraint`, from every source. Fails when the
/// constraint cannot be evaluated (CEL rules, unknown kinds).
pub(crate) fn matching<'a>(
    sources: &[NamedCatalog<'a>],
    constraint: &fbc::Constraint,
) -> Result<Vec<Offer<'a>>, ConstraintError> {
    let mut out = Vec::new();
    for (source, catalog) in sources.iter().enumerate() {
        let index = catalog.index;
        let pool = pool(index, &constraint.expr)
            .unwrap_or_else(|| index.catalog().bundles.iter().collect());
        let mut matched = Vec::new();
        for bundle in pool {
            if constraint.matches(bundle)? {
                matched.push(bundle);
            }
        }
        push_offers(&mut out, source, index, matched, None);
    }
    Ok(out)
}

/// The bundles of `index` that can possibly satisfy `expr`, or `None` for "any bundle": a cheap
/// superset from the index, so that only it is evaluated rather than the whole catalog.
fn pool<'a>(index: &'a CatalogIndex, expr: &ConstraintExpr) -> Option<Vec<&'a Bundle>> {
    match expr {
        ConstraintExpr::Gvk(gvk) => Some(index.providers(gvk).collect()),
        ConstraintExpr::Package { package_name, .. } => Some(index.bundles(package_name).collect()),
        // Every child must hold, so the smallest child pool bounds the result.
        ConstraintExpr::All(children) => children
            .iter()
            .filter_map(|child| pool(index, &child.expr))
            .min_by_key(Vec::len),
        // Some child must hold: the union of their pools, unless one is unbounded.
        ConstraintExpr::Any(children) => {
            let mut union: Vec<&Bundle> = Vec::new();
            let mut seen: HashSet<(&str, &str)> = HashSet::new();
            for child in children {
                for bundle in pool(index, &child.expr)? {
                    if seen.insert((&bundle.package, &bundle.name)) {
                        union.push(bundle);
                    }
                }
            }
            Some(union)
        }
        ConstraintExpr::Not(_) | ConstraintExpr::Cel { .. } | ConstraintExpr::Unknown(_) => None,
    }
}

/// Where an installed bundle can go: its direct upgrades, and the bundle itself.
#[derive(Debug, Default)]
pub(crate) struct Upgrades<'a> {
    /// Offers that replace, skip or skipRange-include the installed bundle.
    pub(crate) successors: Vec<Offer<'a>>,
    /// Offers of the installed version itself.
    pub(crate) current: Vec<Offer<'a>>,
}

/// Why `sources` cannot offer `package`: one note per catalog whose upgrade graph for it is
/// broken (see [`fbc::CatalogIndex::package_problems`]).
pub(crate) fn invalid_graphs(sources: &[NamedCatalog<'_>], package: &str) -> Vec<String> {
    sources
        .iter()
        .filter_map(|source| {
            let problems = source.index.package_problems(package);
            (!problems.is_empty())
                .then(|| crate::messages::invalid_graph(source.name, package, problems))
        })
        .collect()
}

/// The upgrades of `package` installed at `version`, in every channel of every source.
///
/// The installed bundle is identified by version. Its name, which `replaces` and `skips`
/// refer to, is taken from every catalog that has that version; when none does, only
/// skipRange edges can lead away from it.
pub(crate) fn upgrades<'a>(
    sources: &[NamedCatalog<'a>],
    package: &str,
    version: &Version,
) -> Upgrades<'a> {
    let same_version = |bundle: &Bundle| fbc::compare_precedence(&bundle.version, version).is_eq();
    let mut names: Vec<&str> = sources
        .iter()
        .flat_map(|catalog| catalog.index.bundles(package))
        .filter(|bundle| same_version(bundle))
        .map(|bundle| bundle.name.as_str())
        .collect();
    names.sort_unstable();
    names.dedup();
    if names.is_empty() {
        // No entry has an empty name, so this matches skipRange edges only.
        names.push("");
    }

    let mut upgrades = Upgrades::default();
    for (source, catalog) in sources.iter().enumerate() {
        let index = catalog.index;
        if !index.package_problems(package).is_empty() {
            continue;
        }
        for channel in index.channels(package) {
            let Some(graph) = index.channel_graph(package, &channel.name) else {
                continue;
            };
            let offer = |bundle| Offer {
                source,
                bundle,
                channel,
            };
            for entry in graph.entries() {
                if let Some(bundle) = index.bundle(package, &entry.name)
                    && same_version(bundle)
                {
                    upgrades.current.push(offer(bundle));
                }
            }
            for name in &names {
                for entry in graph.successors(name, Some(version)) {
                    if let Some(bundle) = index.bundle(package, &entry.name)
                        && !same_version(bundle)
                    {
                        upgrades.successors.push(offer(bundle));
                    }
                }
            }
        }
    }
    upgrades
}
