//! The entry point: check the request, build the problem, solve, and report selections or an
//! explanation together with the problem's size and the time spent.

use std::collections::HashSet;
use std::time::Instant;

use deppy::{SolveError, Solver};

use crate::catalog::{self, NamedCatalog};
use crate::constraint::{Checked, Constraint};
use crate::error::{ResolveError, Unsatisfiable};
use crate::kube_version::KubeVersion;
use crate::refusal;
use crate::selection::SelectedBundle;
use crate::stats::Stats;
use crate::variables::{self, Node, Problem};

/// What to resolve: constraints, and optionally which catalogs to draw from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Request {
    /// Names of the catalogs to use; all catalogs when empty (`ActiveResolution.spec.sources`).
    pub sources: Vec<String>,
    /// What the selection must satisfy. Repeated constraints count once.
    pub constraints: Vec<Constraint>,
}

impl Request {
    /// A request over all catalogs.
    pub fn new(constraints: impl IntoIterator<Item = Constraint>) -> Self {
        Self {
            sources: Vec::new(),
            constraints: constraints.into_iter().collect(),
        }
    }

    /// The same request restricted to the named catalogs.
    #[must_use]
    pub fn with_sources<S: Into<String>>(mut self, sources: impl IntoIterator<Item = S>) -> Self {
        self.sources = sources.into_iter().map(Into::into).collect();
        self
    }
}

/// The bundles a request resolved to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolution {
    /// The selected bundles, at most one per package, sorted by their
    /// `catalog:package:version:channel` form.
    pub selections: Vec<SelectedBundle>,
    /// Size of the problem and time spent.
    pub stats: Stats,
}

impl Resolution {
    /// The selections as `catalog:package:version:channel` strings, sorted, as
    /// `ActiveResolution.status.selections` holds them.
    pub fn selection_strings(&self) -> Vec<String> {
        self.selections.iter().map(ToString::to_string).collect()
    }
}

/// Resolves requests against a fixed set of catalogs.
///
/// Construction checks the catalog names once; [`Resolver::resolve`] can then be called for
/// any number of requests. Answers depend only on the catalogs' content, names and priorities
/// and on the request, never on the order catalogs or constraints were supplied in (apart
/// from which equally valid explanation lines come first).
#[derive(Debug, Clone)]
pub struct Resolver<'a> {
    catalogs: Vec<NamedCatalog<'a>>,
    kube_version: Option<KubeVersion>,
    /// Whether each resolution's working memory is left to the process's exit.
    one_shot: bool,
}

impl<'a> Resolver<'a> {
    /// Checks that every catalog has a distinct name usable in selections.
    pub fn new(catalogs: impl IntoIterator<Item = NamedCatalog<'a>>) -> Result<Self, ResolveError> {
        Ok(Self {
            catalogs: catalog::validate(catalogs)?,
            kube_version: None,
            one_shot: false,
        })
    }

    /// The same resolver for a cluster at `version`: bundles whose CSV `minKubeVersion`
    /// (in their `olm.csv.metadata` property) is newer, or not a version, are not selected.
    /// `None`, the default, selects regardless of `minKubeVersion`.
    #[must_use]
    pub fn with_kube_version(self, version: Option<KubeVersion>) -> Self {
        Self {
            kube_version: version,
            ..self
        }
    }

    /// The same resolver for a process that resolves and then exits, such as the `resolve`
    /// command: what each resolution builds (every reachable bundle's variable, its
    /// constraints and their messages) is not freed afterwards, one allocation at a time, but
    /// left for the process's exit to take back whole. Freeing it took 2–3 ms of a 90 ms
    /// `resolve` run at 22k variables. A process that keeps running must not use this: each
    /// resolution would keep its memory until the process ends.
    #[must_use]
    pub fn for_one_shot_process(self) -> Self {
        Self {
            one_shot: true,
            ..self
        }
    }

    /// The catalogs, sorted by name.
    pub fn catalogs(&self) -> &[NamedCatalog<'a>] {
        &self.catalogs
    }

    /// The deprecation notices of `resolution`'s selections, as
    /// `ActiveResolution.status.deprecations` holds them: one entry per selection with any
    /// notice from the catalog it was selected from, in selection order.
    pub fn deprecations(&self, resolution: &Resolution) -> Vec<deppy_api::SelectionDeprecation> {
        resolution
            .selections
            .iter()
            .filter_map(|selected| {
                let catalog = self.catalogs.iter().find(|c| c.name == selected.catalog)?;
                let notice = catalog.index.deprecation(
                    &selected.package,
                    Some(&selected.channel),
                    Some(&selected.bundle),
                );
                notice
                    .is_deprecated()
                    .then(|| deppy_api::SelectionDeprecation {
                        package: selected.package.clone(),
                        channel: selected.channel.clone(),
                        bundle: selected.bundle.clone(),
                        package_message: notice.package.map(str::to_owned),
                        channel_message: notice.channel.map(str::to_owned),
                        bundle_message: notice.bundle.map(str::to_owned),
                    })
            })
            .collect()
    }

    /// Selects bundles that satisfy `request`, or explains why none do.
    ///
    /// Errors distinguish bad input ([`crate::ErrorCategory::InvalidInput`]: an unparsable range
    /// or version, an unknown source) from [`ResolveError::NotSatisfiable`], which carries the
    /// explanation and the problem's size.
    pub fn resolve(&self, request: &Request) -> Result<Resolution, ResolveError> {
        let mut working = Working::default();
        let outcome = self.resolve_into(request, &mut working);
        if self.one_shot {
            std::mem::forget(working);
        }
        outcome
    }

    /// [`Resolver::resolve`], leaving what it builds along the way in `working` for the
    /// caller to free or not.
    fn resolve_into(
        &self,
        request: &Request,
        working: &mut Working<'a>,
    ) -> Result<Resolution, ResolveError> {
        let started = Instant::now();
        let sources = catalog::select(&self.catalogs, &request.sources)?;
        let constraints = check(&request.constraints)?;
        let Problem {
            variables,
            bundles,
            first_bundle,
        } = variables::build(&sources, &constraints, self.kube_version);
        let mut stats = Stats {
            variables: variables.len(),
            bundles: bundles.len(),
            constraints: variables.iter().map(|v| v.constraints.len()).sum(),
            build_duration: started.elapsed(),
            ..Stats::default()
        };

        working.bundles = bundles;
        let bundles = &working.bundles;
        let solving = Instant::now();
        let solver = working
            .solver
            .insert(Solver::new(variables).map_err(ResolveError::Solver)?);
        let solved = solver.solve();
        stats.solve_duration = solving.elapsed();
        stats.duration = started.elapsed();
        let solution = match solved {
            Ok(solution) => solution,
            Err(SolveError::NotSatisfiable(core)) => {
                let summary = refusal::summarise(
                    &sources,
                    &constraints,
                    core.constraints(),
                    self.kube_version,
                );
                stats.duration = started.elapsed();
                return Err(ResolveError::NotSatisfiable(Box::new(Unsatisfiable {
                    summary,
                    explanation: core.constraints().iter().map(ToString::to_string).collect(),
                    stats,
                })));
            }
            Err(other) => return Err(ResolveError::Solver(other)),
        };
        let solver_stats = solution.stats();
        stats.clauses = Some(solver_stats.clauses);
        stats.sat_variables = Some(solver_stats.sat_variables);
        stats.sat_calls = Some(solver_stats.sat_calls);

        let mut selections: Vec<SelectedBundle> = solution
            .indices()
            .iter()
            .filter_map(|&i| bundles.get(i.checked_sub(first_bundle)?))
            .map(|node| {
                let bundle = node.ranked.offer.bundle;
                SelectedBundle {
                    catalog: node.ranked.catalog.to_owned(),
                    package: bundle.package.clone(),
                    version: bundle.version.clone(),
                    channel: node.ranked.offer.channel_name().to_owned(),
                    bundle: bundle.name.clone(),
                    image: bundle.image.clone(),
                }
            })
            .collect();
        selections.sort_by_cached_key(ToString::to_string);
        Ok(Resolution { selections, stats })
    }
}

/// What one resolution builds besides its answer: the solver with every variable, and the
/// offer behind each bundle variable.
#[derive(Default)]
struct Working<'a> {
    solver: Option<Solver>,
    bundles: Vec<Node<'a>>,
}

/// Resolves one request; see [`Resolver::resolve`].
pub fn resolve(
    catalogs: &[NamedCatalog<'_>],
    request: &Request,
) -> Result<Resolution, ResolveError> {
    Resolver::new(catalogs.iter().copied())?.resolve(request)
}

/// Checks every constraint and drops repeats (same canonical form), keeping the first.
fn check(constraints: &[Constraint]) -> Result<Vec<Checked<'_>>, ResolveError> {
    let mut seen = HashSet::new();
    let mut checked = Vec::with_capacity(constraints.len());
    for constraint in constraints {
        let constraint = constraint.check()?;
        if seen.insert(constraint.id().to_owned()) {
            checked.push(constraint);
        }
    }
    Ok(checked)
}
