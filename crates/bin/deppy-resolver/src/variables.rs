//! Turns a request and its catalogs into deppy variables, the way OLM v0's resolver does.
//!
//! - Each request constraint (`required`, `gvkRequired`, `installed`) becomes a mandatory
//!   variable named by its function form, with one dependency on its candidate offers in
//!   preference order. Nothing matching gives an empty dependency with a "no operators found"
//!   message. `installed` constraints come first, so their (narrower) choice is made before
//!   any `required` choice has to be undone.
//! - Each reachable offer becomes a variable named by its selection string, with one
//!   dependency per `olm.package.required`, `olm.gvk.required` and `olm.constraint` of its
//!   bundle, found breadth first from the request's candidates; unreachable bundles are left
//!   out, as OLM leaves them out. `prohibited` constraints prohibit the offers they match.
//! - Uniqueness: at most one offer per package, and at most one provider per API among
//!   offers of different packages (within a package, package uniqueness already says so).

use std::collections::VecDeque;
use std::sync::Arc;

use deppy::{Constraint as Rule, Description, Identifier, Identifiers, Variable};
use fbc::{ApiId, Bundle, Channel, Gvk, VersionRange};

use crate::candidates::{self, Offer, Ranked, preference};
use crate::catalog::NamedCatalog;
use crate::constraint::Checked;
use crate::kube_version::{self, KubeVersion};
use crate::messages;
use crate::requirement::{self, Requirement};

/// A reachable offer, as a solver variable.
#[derive(Debug)]
pub(crate) struct Node<'a> {
    pub(crate) ranked: Ranked<'a>,
    pub(crate) id: Identifier,
    constraints: Vec<Rule>,
}

/// The solver input plus the offers behind its bundle variables.
pub(crate) struct Problem<'a> {
    pub(crate) variables: Vec<Variable>,
    /// Variable `first_bundle + i` is `bundles[i]`.
    pub(crate) bundles: Vec<Node<'a>>,
    pub(crate) first_bundle: usize,
}

/// Requirements whose candidate lists several dependents share; deppy writes a shared list
/// out once. Keys borrow from the catalog, so a lookup allocates nothing.
#[derive(Debug, PartialEq, Eq, Hash)]
enum Shared<'a> {
    /// Package and range text; catalog ranges all use the same pre-release policy.
    Package(&'a str, &'a str),
    Gvk(&'a Gvk),
}

struct Builder<'s, 'a> {
    sources: &'s [NamedCatalog<'a>],
    /// The cluster's Kubernetes version, when bundles are to be checked against it.
    kube_version: Option<KubeVersion>,
    nodes: Vec<Node<'a>>,
    /// (source, bundle, channel) -> position in `nodes`. A bundle and a channel are each one
    /// object of their catalog's index, so their addresses identify them without hashing
    /// their names.
    positions: foldhash::HashMap<(usize, *const Bundle, *const Channel), usize>,
    /// Nodes whose dependencies are not yet built.
    pending: VecDeque<usize>,
    /// Each shared requirement's candidates and the wording of its dependency after the
    /// bundle's name (see [`Description::AboutSubject`]).
    shared: foldhash::HashMap<Shared<'a>, (Identifiers, Arc<str>)>,
    /// Node positions by package and by provided API, for the uniqueness constraints. Filled
    /// as each node is made and its dependencies built, while its bundle is in cache: a
    /// separate pass over every node's bundle afterwards was a sixth of building at 22k
    /// variables, nearly all of it waiting for memory.
    by_package: foldhash::HashMap<&'a str, Vec<usize>>,
    /// By (source, the API's number in that source's index): hashing two numbers instead of
    /// an API's three strings. The same API in two catalogs is joined in
    /// [`Builder::uniqueness`].
    by_api: foldhash::HashMap<(usize, ApiId), (&'a Gvk, Vec<usize>)>,
    /// Where each node's name is written before it is copied into its [`Identifier`].
    id: String,
}

/// Builds the problem for already checked, de-duplicated constraints.
pub(crate) fn build<'a>(
    sources: &[NamedCatalog<'a>],
    constraints: &[Checked<'_>],
    kube_version: Option<KubeVersion>,
) -> Problem<'a> {
    // Room for every bundle of every source: a large request reaches most of them, and
    // growing the lists as nodes are added copied them into fresh memory again and again
    // (at 22k variables, 2.5 MiB of the build's 12). What a small request leaves unused is
    // never touched, so it costs address space, not memory.
    let bundles = sources
        .iter()
        .map(|source| source.index.catalog().bundles.len())
        .sum();
    // The same for the uniqueness lists: room for every package and API of every source, so
    // that neither map is rehashed as it grows (rehashing was 5% of building at 22k
    // variables in a profile).
    let packages = sources.iter().map(|s| s.index.package_count()).sum();
    let apis = sources.iter().map(|s| s.index.provided_api_count()).sum();
    let mut builder = Builder {
        sources,
        kube_version,
        nodes: Vec::with_capacity(bundles),
        positions: foldhash::HashMap::with_capacity_and_hasher(bundles, Default::default()),
        pending: VecDeque::new(),
        // A catalog's bundles mostly require packages and APIs that it has: room for one
        // shared list per package and API, so that the map is not rehashed as it grows.
        shared: foldhash::HashMap::with_capacity_and_hasher(packages + apis, Default::default()),
        by_package: foldhash::HashMap::with_capacity_and_hasher(packages, Default::default()),
        by_api: foldhash::HashMap::with_capacity_and_hasher(apis, Default::default()),
        id: String::new(),
    };
    let installed = constraints
        .iter()
        .filter(|c| matches!(c, Checked::Installed { .. }));
    let others = constraints
        .iter()
        .filter(|c| !matches!(c, Checked::Installed { .. }));
    let mut variables: Vec<Variable> = installed
        .chain(others)
        .filter_map(|constraint| builder.request_variable(constraint))
        .collect();

    while let Some(position) = builder.pending.pop_front() {
        builder.add_dependencies(position);
    }
    builder.prohibit(constraints);
    let uniqueness = builder.uniqueness();

    let first_bundle = variables.len();
    variables.extend(builder.nodes.iter_mut().map(|node| Variable {
        id: node.id.clone(),
        constraints: std::mem::take(&mut node.constraints),
    }));
    variables.extend(uniqueness);
    Problem {
        variables,
        bundles: builder.nodes,
        first_bundle,
    }
}

/// Writes a bundle variable's name, `catalog:package:version:channel` (the selection string),
/// into `id`, replacing what it held. The caller keeps one string for every node and copies
/// each name out once, into its [`Identifier`]. `write!` with the version's `Display` went
/// through the formatting machinery for each of the version's parts, about 2% of a whole run
/// at 22k variables; the numbers are written with `itoa` instead, in the form `Display` uses.
fn write_node_id(id: &mut String, catalog: &str, bundle: &Bundle, channel: &str) {
    let version = &bundle.version;
    let mut numbers = [
        itoa::Buffer::new(),
        itoa::Buffer::new(),
        itoa::Buffer::new(),
    ];
    let [major, minor, patch] = &mut numbers;
    let parts = [
        catalog,
        ":",
        &bundle.package,
        ":",
        major.format(version.major),
        ".",
        minor.format(version.minor),
        ".",
        patch.format(version.patch),
    ];
    id.clear();
    for part in parts {
        id.push_str(part);
    }
    if !version.pre.is_empty() {
        id.push('-');
        id.push_str(version.pre.as_str());
    }
    if !version.build.is_empty() {
        id.push('+');
        id.push_str(version.build.as_str());
    }
    id.push(':');
    id.push_str(channel);
}

impl<'a> Builder<'_, 'a> {
    /// The position of `offer`'s node, creating it (and queueing its dependencies) if new.
    fn node(&mut self, offer: Offer<'a>) -> Option<usize> {
        let key = (
            offer.source,
            std::ptr::from_ref(offer.bundle),
            std::ptr::from_ref(offer.channel),
        );
        if let Some(&position) = self.positions.get(&key) {
            return Some(position);
        }
        let ranked = Ranked::new(self.sources, offer)?;
        write_node_id(
            &mut self.id,
            ranked.catalog,
            offer.bundle,
            offer.channel_name(),
        );
        let id = Identifier::new(&self.id);
        let mut constraints = Vec::new();
        if let Some(cluster) = self.kube_version
            && let Some(unfit) = kube_version::unfit(offer.bundle, cluster)
        {
            let message = messages::unfit_for_cluster(&id, unfit, cluster);
            constraints.push(Rule::Prohibited.described(message));
        }
        let position = self.nodes.len();
        self.nodes.push(Node {
            ranked,
            id,
            constraints,
        });
        self.positions.insert(key, position);
        self.by_package
            .entry(&offer.bundle.package)
            .or_default()
            .push(position);
        self.pending.push_back(position);
        Some(position)
    }

    /// Node positions for `offers`, most preferred first, without repeats.
    fn ranked(&mut self, offers: Vec<Offer<'a>>) -> Vec<usize> {
        let mut positions: Vec<usize> = offers
            .into_iter()
            .filter_map(|offer| self.node(offer))
            .collect();
        let nodes = &self.nodes;
        positions.sort_by(|&a, &b| preference(&nodes[a].ranked, &nodes[b].ranked));
        positions.dedup();
        positions
    }

    fn ids(&self, positions: &[usize]) -> Identifiers {
        positions
            .iter()
            .map(|&p| self.nodes[p].id.clone())
            .collect()
    }

    fn request_variable(&mut self, constraint: &Checked<'_>) -> Option<Variable> {
        let sources = self.sources;
        let subject = constraint.id();
        let (candidates, none_found) = match constraint {
            Checked::Required {
                package,
                range,
                channel,
                ..
            } => {
                let offers = candidates::package(sources, package, *channel, range.as_ref());
                let found = self.ranked(offers);
                let message = || {
                    let indexes = || sources.iter().map(|s| s.index);
                    let package_exists = indexes().any(|i| i.package(package).is_some());
                    let channel_exists = channel.is_none_or(|channel| {
                        indexes().any(|i| i.channel_graph(package, channel).is_some())
                    });
                    let message = messages::no_package_match(
                        subject,
                        package,
                        *channel,
                        range.as_ref(),
                        package_exists,
                        channel_exists,
                    );
                    messages::with_notes(
                        message,
                        &candidates::invalid_graphs(self.sources, package),
                    )
                };
                let none_found = found.is_empty().then(message);
                (found, none_found)
            }
            Checked::GvkRequired { gvk, .. } => {
                let found = self.ranked(candidates::providers(sources, gvk));
                let none_found = found
                    .is_empty()
                    .then(|| messages::no_provider(subject, gvk));
                (found, none_found)
            }
            Checked::Installed {
                package, version, ..
            } => {
                let upgrades = candidates::upgrades(sources, package, version);
                // Upgrades first, staying put last, as OLM v0 and operator-controller do.
                let mut found = self.ranked(upgrades.successors);
                for position in self.ranked(upgrades.current) {
                    if !found.contains(&position) {
                        found.push(position);
                    }
                }
                let none_found = found.is_empty().then(|| {
                    let message = messages::no_installed_match(subject, package, version);
                    messages::with_notes(
                        message,
                        &candidates::invalid_graphs(self.sources, package),
                    )
                });
                (found, none_found)
            }
            Checked::Prohibited { .. } => return None,
        };
        let ids = self.ids(&candidates);
        let dependency = match none_found {
            Some(message) => Rule::Dependency(ids).described(message),
            None => {
                let message = messages::requires_one_of(subject, &ids);
                Rule::Dependency(ids).described(message)
            }
        };
        Some(Variable::new(subject).mandatory().with(dependency))
    }

    /// One dependency per requirement of the node's bundle.
    fn add_dependencies(&mut self, position: usize) {
        let Offer { source, bundle, .. } = self.nodes[position].ranked.offer;
        for (api, gvk) in self.sources[source].index.provided_apis(bundle) {
            self.by_api
                .entry((source, api))
                .or_insert_with(|| (gvk, Vec::new()))
                .1
                .push(position);
        }
        let subject = self.nodes[position].id.clone();
        // Exactly as many as there will be: one list per reachable bundle, held until solved
        // (pushing one by one leaves room for four).
        self.nodes[position]
            .constraints
            .reserve_exact(requirement::requirements(bundle).count());
        for requirement in requirement::requirements(bundle) {
            let rule = match self.requirement_candidates(requirement) {
                Ok((ids, _)) if ids.is_empty() => {
                    let message = messages::with_notes(
                        messages::bundle_requires(&subject, requirement),
                        &self.requirement_notes(requirement),
                    );
                    Rule::Dependency(ids).described(message)
                }
                Ok((ids, rest)) => Rule::Dependency(ids).described(Description::AboutSubject {
                    lead: messages::BUNDLE_REQUIRES_LEAD,
                    rest,
                }),
                // A dependency nobody can check rules its bundle out, with the reason, instead
                // of failing the whole resolution: another bundle may do.
                Err(error) => Rule::Dependency(Identifiers::from([])).described(
                    messages::bundle_requires_unevaluable(&subject, requirement, &error),
                ),
            };
            self.nodes[position].constraints.push(rule);
        }
    }

    /// The requirement's candidates, most preferred first, and the wording of a bundle's
    /// dependency on them after the bundle's name.
    fn requirement_candidates(
        &mut self,
        requirement: Requirement<'a>,
    ) -> Result<(Identifiers, Arc<str>), fbc::ConstraintError> {
        let key = match requirement {
            Requirement::Package { name, range } => Some(Shared::Package(name, range.as_str())),
            Requirement::Gvk(gvk) => Some(Shared::Gvk(gvk)),
            Requirement::Constraint(_) => None,
        };
        if let Some(shared) = key.as_ref().and_then(|key| self.shared.get(key)) {
            return Ok(shared.clone());
        }
        let offers = match requirement {
            Requirement::Package { name, range } => {
                candidates::package(self.sources, name, None, Some(range))
            }
            Requirement::Gvk(gvk) => candidates::providers(self.sources, gvk),
            Requirement::Constraint(constraint) => candidates::matching(self.sources, constraint)?,
        };
        let positions = self.ranked(offers);
        let ids = self.ids(&positions);
        let rest: Arc<str> = messages::requires_phrase(requirement).into();
        if let Some(key) = key {
            self.shared.insert(key, (ids.clone(), rest.clone()));
        }
        Ok((ids, rest))
    }

    /// Why a requirement with no candidate may have had some: catalogs whose upgrade graph
    /// for the package (or a provider's package) is broken.
    fn requirement_notes(&self, requirement: Requirement<'a>) -> Vec<String> {
        match requirement {
            Requirement::Package { name, .. } => candidates::invalid_graphs(self.sources, name),
            Requirement::Gvk(gvk) => {
                let mut packages: Vec<&str> = self
                    .sources
                    .iter()
                    .flat_map(|source| source.index.providers(gvk))
                    .map(|bundle| bundle.package.as_str())
                    .collect();
                packages.sort_unstable();
                packages.dedup();
                packages
                    .into_iter()
                    .flat_map(|package| candidates::invalid_graphs(self.sources, package))
                    .collect()
            }
            Requirement::Constraint(_) => Vec::new(),
        }
    }

    fn prohibit(&mut self, constraints: &[Checked<'_>]) {
        for constraint in constraints {
            let Checked::Prohibited { id, package, range } = constraint else {
                continue;
            };
            for node in &mut self.nodes {
                let bundle = node.ranked.offer.bundle;
                if bundle.package == *package
                    && range
                        .as_ref()
                        .is_none_or(|r: &VersionRange| r.matches(&bundle.version))
                {
                    let message = messages::prohibited_by(&node.id, id);
                    node.constraints.push(Rule::Prohibited.described(message));
                }
            }
        }
    }

    /// OLM's invariants: one bundle per package, one provider per API.
    fn uniqueness(&mut self) -> Vec<Variable> {
        // In name order, for stable output.
        let mut packages: Vec<(&str, Vec<usize>)> = self.by_package.drain().collect();
        packages.sort_unstable_by_key(|(package, _)| *package);
        let mut apis: Vec<(&Gvk, Vec<usize>)> = self.by_api.drain().map(|(_, api)| api).collect();
        apis.sort_unstable_by_key(|(gvk, _)| *gvk);
        // One list per API, whichever catalogs provide it (the order of positions within a
        // list does not matter: the list is sorted by name below).
        apis.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            if same {
                kept.1.append(&mut later.1);
            }
            same
        });
        let mut variables = Vec::new();
        for (package, positions) in packages {
            if positions.len() > 1 {
                let ids = self.sorted_ids(&positions);
                let message = messages::package_uniqueness(package);
                variables.push(
                    Variable::new(format!("unique package {package}")).with(
                        Rule::AtMost {
                            n: 1,
                            ids: ids.into(),
                        }
                        .described(message),
                    ),
                );
            }
        }
        for (gvk, positions) in apis {
            let first = self.nodes[positions[0]].ranked.offer.bundle;
            let packages_differ = positions
                .iter()
                .any(|&p| self.nodes[p].ranked.offer.bundle.package != first.package);
            if packages_differ {
                let ids = self.sorted_ids(&positions);
                let message = messages::gvk_uniqueness(gvk);
                variables.push(
                    Variable::new(format!(
                        "unique api {} ({}/{})",
                        gvk.kind, gvk.group, gvk.version
                    ))
                    .with(
                        Rule::AtMost {
                            n: 1,
                            ids: ids.into(),
                        }
                        .described(message),
                    ),
                );
            }
        }
        variables
    }

    /// Identifiers sorted by name, as OLM sorts uniqueness lists (#3491) for stable messages.
    fn sorted_ids(&self, positions: &[usize]) -> Vec<Identifier> {
        let mut ids: Vec<Identifier> = positions
            .iter()
            .map(|&p| self.nodes[p].id.clone())
            .collect();
        ids.sort();
        ids
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bundle(version: &str) -> Bundle {
        Bundle {
            package: "etcd".to_owned(),
            name: "etcdoperator.v0.9.4".to_owned(),
            image: "quay.io/example/etcd-bundle:v0.9.4".to_owned(),
            related_images: Vec::new(),
            version: version.parse().unwrap(),
            properties: Vec::new(),
            location: fbc::Location::new("etcd/catalog.json", 1),
        }
    }

    #[test]
    fn a_node_id_is_the_selection_string_whatever_the_version_length() {
        let mut id = String::from("left over from the node before");
        for version in [
            "0.9.4",
            "0.0.0",
            "1.22.0-rc.1",
            "1.0.0+build.7",
            "1.0.0-0.3.7",
            "18446744073709551615.18446744073709551615.18446744073709551615",
            "10.200.3000-alpha.1.beta.2.gamma.3+build.20261127.sha.0123456789abcdef",
        ] {
            let bundle = bundle(version);
            write_node_id(&mut id, "operatorhub", &bundle, "stable-v1");
            assert_eq!(id, format!("operatorhub:etcd:{version}:stable-v1"));
            // The same text as the version's own `Display`, which the rest of the resolver
            // (selections, messages) writes.
            assert_eq!(id, format!("operatorhub:etcd:{}:stable-v1", bundle.version));
        }
    }
}
