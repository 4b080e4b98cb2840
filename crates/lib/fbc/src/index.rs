//! A validated, queryable catalog.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::Path;

use foldhash::{HashSet, HashSetExt};
use semver::Version;

use crate::channel::{ChannelError, ChannelGraph};
use crate::detail::Detail;
use crate::error::ParseError;
use crate::gvk::Gvk;
use crate::location::Location;
use crate::model::{Bundle, Catalog, Channel, DeprecationReference, Package};
use crate::name_index::NameIndex;
use crate::parallel;
use crate::parse::{parse_dir_with, parse_files_with};
use crate::range::{VersionRange, compare_precedence};

/// One rule a catalog breaks.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum IndexError {
    /// Two `olm.package` blobs share a name.
    #[error("{location}: duplicate package {name:?} (first defined at {first})")]
    DuplicatePackage {
        /// Package name.
        name: String,
        /// The duplicate.
        location: Location,
        /// The first definition.
        first: Location,
    },
    /// Two channels of a package share a name.
    #[error(
        "{location}: duplicate channel {name:?} in package {package:?} (first defined at {first})"
    )]
    DuplicateChannel {
        /// Package name.
        package: String,
        /// Channel name.
        name: String,
        /// The duplicate.
        location: Location,
        /// The first definition.
        first: Location,
    },
    /// Two bundles of a package share a name.
    #[error(
        "{location}: duplicate bundle {name:?} in package {package:?} (first defined at {first})"
    )]
    DuplicateBundle {
        /// Package name.
        package: String,
        /// Bundle name.
        name: String,
        /// The duplicate.
        location: Location,
        /// The first definition.
        first: Location,
    },
    /// A package has two `olm.deprecations` blobs.
    #[error("{location}: second olm.deprecations for package {package:?} (first at {first})")]
    DuplicateDeprecations {
        /// Package name.
        package: String,
        /// The duplicate.
        location: Location,
        /// The first definition.
        first: Location,
    },
    /// A blob belongs to a package that has no `olm.package` blob.
    #[error("{location}: unknown package {package:?}")]
    UnknownPackage {
        /// The package named.
        package: String,
        /// The blob naming it.
        location: Location,
    },
    /// A package's `defaultChannel` names no channel of the package.
    #[error("{location}: default channel {channel:?} of package {package:?} does not exist")]
    UnknownDefaultChannel {
        /// Package name.
        package: String,
        /// The default channel named.
        channel: String,
        /// The package blob.
        location: Location,
    },
    /// A package has no channel.
    #[error("{location}: package {package:?} has no channels")]
    PackageWithoutChannels {
        /// Package name.
        package: String,
        /// The package blob.
        location: Location,
    },
    /// A bundle names no image and inlines no objects.
    #[error("{location}: bundle {name:?} has no image")]
    BundleWithoutImage {
        /// Bundle name.
        name: String,
        /// The bundle blob.
        location: Location,
    },
    /// A bundle is in no channel of its package.
    #[error("{location}: bundle {name:?} is not in any channel of package {package:?}")]
    BundleNotInChannel {
        /// Package name.
        package: String,
        /// Bundle name.
        name: String,
        /// The bundle blob.
        location: Location,
    },
    /// Several bundles of a package have the same version.
    #[error("package {package:?} has several bundles with version {version}: {}", bundles.join(", "))]
    DuplicateVersion {
        /// Package name.
        package: String,
        /// The shared version.
        version: Version,
        /// The bundles sharing it.
        bundles: Vec<String>,
    },
    /// A channel's graph is invalid.
    #[error("{location}: invalid channel {channel:?} of package {package:?}")]
    Channel {
        /// Package name.
        package: String,
        /// Channel name.
        channel: String,
        /// The channel blob.
        location: Location,
        /// What is wrong with the graph.
        #[source]
        source: ChannelError,
    },
    /// A deprecation notice names a channel or bundle the package does not have.
    #[error("{location}: cannot deprecate {reference:?} of package {package:?}: it does not exist")]
    UnknownDeprecationTarget {
        /// Package name.
        package: String,
        /// The reference.
        reference: DeprecationReference,
        /// The deprecations blob.
        location: Location,
    },
    /// Two deprecation notices of a package refer to the same object.
    #[error("{location}: duplicate deprecation of {reference:?} in package {package:?}")]
    DuplicateDeprecationEntry {
        /// Package name.
        package: String,
        /// The reference.
        reference: DeprecationReference,
        /// The deprecations blob.
        location: Location,
    },
}

/// The deprecation notices that apply to a package, a channel of it and a bundle of it (see
/// [`CatalogIndex::deprecation`]): each message, or `None` when that level is not deprecated.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Deprecation<'a> {
    /// The notice on the whole package.
    pub package: Option<&'a str>,
    /// The notice on the channel.
    pub channel: Option<&'a str>,
    /// The notice on the bundle.
    pub bundle: Option<&'a str>,
}

impl Deprecation<'_> {
    /// Whether any notice applies (operator-controller's `Deprecated` condition).
    pub fn is_deprecated(&self) -> bool {
        self.package.is_some() || self.channel.is_some() || self.bundle.is_some()
    }
}

/// A catalog that breaks one or more rules; every problem found is listed.
#[derive(Debug, Clone, PartialEq)]
pub struct CatalogError {
    /// The problems: duplicate packages; bundles' and then channels' problems, in file order;
    /// each package's own (channels, default channel, versions) in package name order; then
    /// deprecations' problems in file order.
    pub problems: Vec<IndexError>,
}

impl fmt::Display for CatalogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid catalog ({} problems)", self.problems.len())?;
        for problem in &self.problems {
            write!(f, "\n- {problem}")?;
            let mut source = std::error::Error::source(problem);
            while let Some(cause) = source {
                write!(f, ": {cause}")?;
                source = cause.source();
            }
        }
        Ok(())
    }
}

impl std::error::Error for CatalogError {}

/// A failure to load and index a catalog.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The files could not be parsed.
    #[error("failed to parse catalog")]
    Parse(#[from] ParseError),
    /// The parsed catalog breaks cross-blob rules.
    #[error(transparent)]
    Invalid(#[from] CatalogError),
}

/// A validated catalog with lookups by package, channel, bundle name and provided API,
/// deprecation notices, and upgrade successors.
///
/// Building it checks the rules that span blobs, as operator-registry does when it turns a
/// declarative config into its model, and reports every problem found, not only the first:
/// unique package, channel (per package) and bundle (per package) names and bundle versions;
/// channels, bundles and deprecations belong to a declared package; a declared default channel
/// exists; every package has a channel; every bundle has an image (or inline objects) and is
/// in some channel; every channel graph is valid ([`ChannelGraph`]); at most one
/// `olm.deprecations` per package, whose entries name existing channels and bundles, once.
///
/// One exception: a channel whose entries all exist but whose upgrade edges are broken (a
/// cycle, several heads, stranded entries) does not fail the catalog. It makes its package
/// unusable for resolution ([`CatalogIndex::package_problems`]) and every other package of the
/// catalog stays served, so that one publisher's mistake does not take a whole catalog away.
#[derive(Debug, Clone)]
pub struct CatalogIndex {
    catalog: Catalog,
    /// One entry per package name (its first `olm.package` blob), in name order.
    packages: Vec<PackageIndex>,
    /// Package name -> position in `packages`. The resolver looks a package up several times
    /// for every bundle it reaches; a hash probe is one comparison of the name, where an
    /// ordered map compared it with a dozen others.
    by_name: foldhash::HashMap<String, usize>,
    providers: foldhash::HashMap<Gvk, Api>,
    /// The channels that hold each bundle (see [`CatalogIndex::graphs_holding`]).
    placement: Placement,
    /// The [`ApiId`] of each API each bundle provides, in property order (see
    /// [`CatalogIndex::provided_apis`]).
    provided: ByBundle<ApiId>,
}

/// A number that stands for one API (group, version and kind) among those a catalog's
/// bundles provide: equal numbers from one [`CatalogIndex`] are equal APIs. Comparing and
/// hashing it reads no strings. An API's three strings each sit behind their own pointer,
/// and hashing and comparing them was about 15% of building a resolution problem at 22k
/// variables in a profile, most of it waiting for memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ApiId(u32);

/// One provided API: its number and its providers, by package name, then newest first.
#[derive(Debug, Clone)]
struct Api {
    id: ApiId,
    providers: Vec<usize>,
}

/// Which channels hold each bundle of the catalog, by the bundle's position in
/// `catalog.bundles`: the resolver asks it of every candidate it considers, and hashing the
/// bundle's name into each channel's graph was about 7% of resolving 22k variables. Each
/// value is (slot in `packages`, slot in that package's `channels`), in channel-name order.
type Placement = ByBundle<(u32, u32)>;

/// Values by bundle position in `catalog.bundles`, all in one list: bundle `b` has the values
/// `values[starts[b]..starts[b + 1]]`. Positions are 32-bit to keep it small (a few hundred
/// KiB for 50,000 bundles); a catalog too large for that has none (every lookup answers
/// `None`), and callers then find the answer another way.
#[derive(Debug, Clone)]
struct ByBundle<T> {
    starts: Vec<u32>,
    values: Vec<T>,
}

/// No table: every lookup answers `None`. (Derived, it would ask `T: Default`, and a default
/// [`ApiId`] would be some real API's number.)
impl<T> Default for ByBundle<T> {
    fn default() -> Self {
        Self {
            starts: Vec::new(),
            values: Vec::new(),
        }
    }
}

impl<T: Copy> ByBundle<T> {
    /// From (bundle position, value) pairs, each bundle's values in the order given.
    /// `pairs` is called twice and must give the same pairs both times.
    fn new<I: Iterator<Item = (usize, T)>>(bundles: usize, pairs: impl Fn() -> I) -> Self {
        Self::try_new(bundles, pairs).unwrap_or_default()
    }

    fn try_new<I: Iterator<Item = (usize, T)>>(
        bundles: usize,
        pairs: impl Fn() -> I,
    ) -> Option<Self> {
        // A counting sort by bundle: count each bundle's values, turn the counts into start
        // positions, then place each value at its bundle's next free position.
        let mut starts = vec![0_u32; bundles.checked_add(1)?];
        for (bundle, _) in pairs() {
            let count = starts.get_mut(bundle)?;
            *count = count.checked_add(1)?;
        }
        let mut total = 0_u32;
        for start in &mut starts {
            let count = *start;
            *start = total;
            total = total.checked_add(count)?;
        }
        let mut next = starts.clone();
        // Every slot is overwritten below; the first value only fills them until then.
        let mut values = match pairs().next() {
            Some((_, first)) => vec![first; usize::try_from(total).ok()?],
            None => Vec::new(),
        };
        for (bundle, value) in pairs() {
            let at = next.get_mut(bundle)?;
            *values.get_mut(usize::try_from(*at).ok()?)? = value;
            *at += 1;
        }
        Some(Self { starts, values })
    }

    /// Bundle `bundle`'s values, if the catalog has a table.
    fn get(&self, bundle: usize) -> Option<&[T]> {
        let start = usize::try_from(*self.starts.get(bundle)?).ok()?;
        let end = usize::try_from(*self.starts.get(bundle.checked_add(1)?)?).ok()?;
        self.values.get(start..end)
    }
}

#[derive(Debug, Clone, Default)]
struct PackageIndex {
    package: usize,
    /// (index in `catalog.channels`, graph) of each channel with a valid graph, by channel
    /// name. A list, not a map: a package has a channel or two, and an ordered map's node
    /// (room for eleven channels and their graphs) was 1.4 KiB per package, 6% of a whole
    /// 22k-variable resolve's heap.
    channels: Vec<(usize, ChannelGraph)>,
    /// Indices in `catalog.bundles`, newest version first.
    bundles: Vec<usize>,
    /// Bundle name -> index in `catalog.bundles` (see [`bundle_name`]).
    bundle_by_name: NameIndex,
    package_deprecation: Option<String>,
    channel_deprecations: foldhash::HashMap<String, String>,
    bundle_deprecations: foldhash::HashMap<String, String>,
    /// Channels whose upgrade graph is invalid ([`ChannelError::is_graph_error`]), as
    /// [`IndexError::Channel`]; the package cannot be resolved from this catalog.
    problems: Vec<IndexError>,
}

impl PackageIndex {
    /// The notices on the package, on its channel `channel` and on its bundle `bundle`.
    fn deprecation(&self, channel: Option<&str>, bundle: Option<&str>) -> Deprecation<'_> {
        Deprecation {
            package: self.package_deprecation.as_deref(),
            channel: channel
                .and_then(|channel| self.channel_deprecations.get(channel))
                .map(String::as_str),
            bundle: bundle
                .and_then(|bundle| self.bundle_deprecations.get(bundle))
                .map(String::as_str),
        }
    }
}

/// The blobs that name one package, as indices into the catalog's lists, in catalog order.
#[derive(Debug, Default)]
struct Members {
    /// Index in `catalog.packages` of the package's (first) blob.
    package: usize,
    bundles: Vec<usize>,
    channels: Vec<usize>,
    deprecations: Vec<usize>,
}

/// When a problem is reported: [`CatalogError::problems`] lists them by stage, then by the
/// position of the blob (or, for [`Stage::Contents`], the package name) they concern, whatever
/// order the packages were indexed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Stage {
    /// Duplicate package blobs, by blob.
    Packages,
    /// Bundles without an image, of unknown packages, or repeated; by bundle blob.
    Bundles,
    /// Channels of unknown packages, repeated, or with an invalid entry list; by channel blob.
    Channels,
    /// What a package holds as a whole (channels, default channel, versions); by package name.
    Contents,
    /// Deprecation blobs and their entries, by deprecation blob.
    Deprecations,
}

/// A problem and where it sorts among the others.
struct Found {
    stage: Stage,
    at: usize,
    problem: IndexError,
}

impl Found {
    fn new(stage: Stage, at: usize, problem: IndexError) -> Self {
        Self { stage, at, problem }
    }
}

impl CatalogIndex {
    /// Validates `catalog` and indexes it.
    ///
    /// Blobs are grouped by package in one pass; each package is then indexed on its own,
    /// on every core (its channel graphs are most of the work).
    pub fn new(catalog: Catalog) -> Result<Self, CatalogError> {
        let mut found = Vec::new();
        let members = group_by_package(&catalog, &mut found);
        let indexed = parallel::map_in_order(
            &members,
            16,
            |members| index_package(&catalog, members),
            |_| false,
        );
        let mut packages = Vec::with_capacity(indexed.len());
        let mut provided: Vec<Provided<'_>> = Vec::with_capacity(indexed.len());
        let mut holding = Vec::with_capacity(indexed.len());
        for (slot, (index, mut problems, apis, held)) in indexed.into_iter().enumerate() {
            for problem in &mut problems {
                if problem.stage == Stage::Contents {
                    problem.at = slot;
                }
            }
            found.extend(problems);
            packages.push(index);
            provided.push(apis);
            holding.push(held);
        }
        if !found.is_empty() {
            // Stable: problems of one blob keep the order they were found in.
            found.sort_by_key(|found| (found.stage, found.at));
            return Err(CatalogError {
                problems: found.into_iter().map(|found| found.problem).collect(),
            });
        }

        // Packages in name order, each with its providers newest first, as before the
        // packages were indexed apart. Each API is numbered as it is first met; each
        // package's own numbering of its APIs is turned into these numbers once per API.
        let mut providers: foldhash::HashMap<Gvk, Api> = foldhash::HashMap::default();
        let mut numbered = Vec::with_capacity(provided.len());
        for Provided { apis, by_bundle } in provided {
            let mut ids = Vec::with_capacity(apis.len());
            for (gvk, bundles) in apis {
                let id = match providers.get_mut(gvk) {
                    Some(api) => {
                        api.providers.extend(bundles);
                        api.id
                    }
                    None => {
                        // More than 2^32 APIs cannot be held in memory.
                        let id = ApiId(u32::try_from(providers.len()).unwrap_or(u32::MAX));
                        let api = Api {
                            id,
                            providers: bundles,
                        };
                        providers.insert(gvk.clone(), api);
                        id
                    }
                };
                ids.push(id);
            }
            numbered.push((ids, by_bundle));
        }
        let provided = ByBundle::new(catalog.bundles.len(), || {
            numbered.iter().flat_map(|(ids, by_bundle)| {
                by_bundle
                    .iter()
                    .filter_map(|&(bundle, slot)| Some((bundle, *ids.get(slot)?)))
            })
        });
        let by_name = packages
            .iter()
            .enumerate()
            .map(|(slot, index)| (catalog.packages[index.package].name.clone(), slot))
            .collect();
        // Every slot fits in 32 bits when the counts do (a package slot per package, a
        // channel slot per channel); a catalog too large for that has no placement, so that
        // no bundle is left with only some of its channels.
        let fits =
            u32::try_from(holding.len()).is_ok() && u32::try_from(catalog.channels.len()).is_ok();
        let placement = if !fits {
            Placement::default()
        } else {
            Placement::new(catalog.bundles.len(), || {
                holding.iter().enumerate().flat_map(|(package, pairs)| {
                    pairs.iter().filter_map(move |&(bundle, channel)| {
                        Some((
                            bundle,
                            (u32::try_from(package).ok()?, u32::try_from(channel).ok()?),
                        ))
                    })
                })
            })
        };
        Ok(Self {
            catalog,
            packages,
            by_name,
            providers,
            placement,
            provided,
        })
    }

    /// The index of package `name`.
    fn entry(&self, name: &str) -> Option<&PackageIndex> {
        self.by_name.get(name).map(|&slot| &self.packages[slot])
    }

    /// The indexed channel `name` of `package`: its position in `catalog.channels` and graph.
    fn indexed_channel(&self, package: &str, name: &str) -> Option<&(usize, ChannelGraph)> {
        let channels = &self.entry(package)?.channels;
        let found = channels
            .binary_search_by(|(c, _)| self.catalog.channels[*c].name.as_str().cmp(name))
            .ok()?;
        channels.get(found)
    }

    /// Parses the catalog directory at `root` and indexes it.
    pub fn from_dir(root: impl AsRef<Path>) -> Result<Self, LoadError> {
        Self::from_dir_with(root, Detail::Full)
    }

    /// Parses the catalog directory at `root`, keeping what `detail` says, and indexes it.
    pub fn from_dir_with(root: impl AsRef<Path>, detail: Detail) -> Result<Self, LoadError> {
        // Listing, parsing and indexing share one set of threads.
        let root = root.as_ref();
        parallel::with_workers(|| Ok(Self::new(parse_dir_with(root, detail)?)?))
    }

    /// Parses in-memory catalog files (see [`crate::parse_files`]) and indexes them.
    pub fn from_files<I, P, C>(files: I) -> Result<Self, LoadError>
    where
        I: IntoIterator<Item = (P, C)>,
        P: AsRef<str>,
        C: AsRef<[u8]>,
    {
        Self::from_files_with(files, Detail::Full)
    }

    /// Parses in-memory catalog files, keeping what `detail` says, and indexes them.
    pub fn from_files_with<I, P, C>(files: I, detail: Detail) -> Result<Self, LoadError>
    where
        I: IntoIterator<Item = (P, C)>,
        P: AsRef<str>,
        C: AsRef<[u8]>,
    {
        Ok(Self::new(parse_files_with(files, detail)?)?)
    }

    /// The underlying catalog, including blobs of unknown schemas.
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// Gives the catalog back.
    pub fn into_catalog(self) -> Catalog {
        self.catalog
    }

    /// Packages, by name.
    pub fn packages(&self) -> impl Iterator<Item = &Package> {
        self.packages
            .iter()
            .map(|p| &self.catalog.packages[p.package])
    }

    /// The package called `name`.
    pub fn package(&self, name: &str) -> Option<&Package> {
        self.entry(name).map(|p| &self.catalog.packages[p.package])
    }

    /// The package's default channel, if it declares one.
    pub fn default_channel(&self, package: &str) -> Option<&Channel> {
        let name = self.package(package)?.default_channel.as_deref()?;
        self.channel(package, name)
    }

    /// The package's channels, by name.
    pub fn channels(&self, package: &str) -> impl Iterator<Item = &Channel> {
        self.entry(package)
            .into_iter()
            .flat_map(|p| &p.channels)
            .map(|(c, _)| &self.catalog.channels[*c])
    }

    /// The channel `name` of `package`.
    pub fn channel(&self, package: &str, name: &str) -> Option<&Channel> {
        let (c, _) = self.indexed_channel(package, name)?;
        Some(&self.catalog.channels[*c])
    }

    /// The upgrade graph of channel `name` of `package`.
    pub fn channel_graph(&self, package: &str, name: &str) -> Option<&ChannelGraph> {
        Some(&self.indexed_channel(package, name)?.1)
    }

    /// The package's bundles, newest version first (ties by name).
    pub fn bundles(&self, package: &str) -> impl Iterator<Item = &Bundle> {
        self.entry(package)
            .into_iter()
            .flat_map(|p| &p.bundles)
            .map(|b| &self.catalog.bundles[*b])
    }

    /// The bundle `name` of `package`.
    pub fn bundle(&self, package: &str, name: &str) -> Option<&Bundle> {
        let b = self
            .entry(package)?
            .bundle_by_name
            .get(name, bundle_name(&self.catalog))?;
        Some(&self.catalog.bundles[b])
    }

    /// The channels of `package` that contain bundle `name`, by channel name.
    pub fn bundle_channels(&self, package: &str, name: &str) -> Vec<&Channel> {
        self.bundle(package, name)
            .into_iter()
            .flat_map(|bundle| self.graphs_holding(bundle))
            .map(|(channel, _)| channel)
            .collect()
    }

    /// The channels of `bundle`'s package whose upgrade graph holds it, with the graphs, by
    /// channel name. For a bundle of this catalog (from [`CatalogIndex::bundles`],
    /// [`CatalogIndex::providers`] and the like) the answer is looked up by position, without
    /// reading the bundle's name; any other bundle is looked up by package and name.
    pub fn graphs_holding<'s>(
        &'s self,
        bundle: &'s Bundle,
    ) -> impl Iterator<Item = (&'s Channel, &'s ChannelGraph)> + 's {
        let placed = self
            .position_of(bundle)
            .and_then(|position| self.placement.get(position));
        let by_name = match placed {
            Some(_) => None,
            None => self.entry(&bundle.package),
        };
        let by_position = placed
            .into_iter()
            .flatten()
            .filter_map(|&(package, channel)| {
                let package = self.packages.get(usize::try_from(package).ok()?)?;
                package.channels.get(usize::try_from(channel).ok()?)
            });
        let by_name = by_name
            .into_iter()
            .flat_map(|package| &package.channels)
            .filter(|(_, graph)| graph.contains(&bundle.name));
        by_position
            .chain(by_name)
            .map(|(c, graph)| (&self.catalog.channels[*c], graph))
    }

    /// The position of `bundle` in `catalog.bundles`, if it is one of them (the same object,
    /// not an equal one).
    fn position_of(&self, bundle: &Bundle) -> Option<usize> {
        let first = self.catalog.bundles.as_ptr().addr();
        let offset = std::ptr::from_ref(bundle).addr().checked_sub(first)?;
        let position = offset / std::mem::size_of::<Bundle>().max(1);
        self.catalog
            .bundles
            .get(position)
            .filter(|found| std::ptr::eq(*found, bundle))
            .map(|_| position)
    }

    /// Bundles providing `gvk` (`olm.gvk`), by package name, then newest version first.
    pub fn providers(&self, gvk: &Gvk) -> impl Iterator<Item = &Bundle> {
        self.providers
            .get(gvk)
            .into_iter()
            .flat_map(|api| &api.providers)
            .map(|b| &self.catalog.bundles[*b])
    }

    /// The APIs `bundle` provides (its `olm.gvk` properties, in order), each with its
    /// [`ApiId`] in this catalog. For a bundle of this catalog the numbers are looked up by
    /// position, without reading the APIs' strings; any other bundle's APIs are looked up by
    /// value, and those this catalog does not provide are left out.
    pub fn provided_apis<'s>(
        &'s self,
        bundle: &'s Bundle,
    ) -> impl Iterator<Item = (ApiId, &'s Gvk)> + 's {
        let placed = self
            .position_of(bundle)
            .and_then(|position| self.provided.get(position));
        let by_value = match placed {
            Some(_) => None,
            None => Some(
                bundle
                    .provided_gvks()
                    .filter_map(|gvk| Some((self.providers.get(gvk)?.id, gvk))),
            ),
        };
        let by_position = placed.map(|ids| ids.iter().copied().zip(bundle.provided_gvks()));
        by_position
            .into_iter()
            .flatten()
            .chain(by_value.into_iter().flatten())
    }

    /// How many packages the catalog has (each counted once, whatever its blobs).
    pub fn package_count(&self) -> usize {
        self.packages.len()
    }

    /// How many distinct APIs (`olm.gvk`) the catalog's bundles provide.
    pub fn provided_api_count(&self) -> usize {
        self.providers.len()
    }

    /// Bundles of `package` that are in `channel` (any channel when `None`) and whose version
    /// is in `range` (any version when `None`), newest first.
    pub fn bundles_matching(
        &self,
        package: &str,
        channel: Option<&str>,
        range: Option<&VersionRange>,
    ) -> Vec<&Bundle> {
        let graph = match channel {
            Some(name) => match self.channel_graph(package, name) {
                Some(graph) => Some(graph),
                None => return Vec::new(),
            },
            None => None,
        };
        self.bundles(package)
            .filter(|b| graph.is_none_or(|g| g.contains(&b.name)))
            .filter(|b| range.is_none_or(|r| r.matches(&b.version)))
            .collect()
    }

    /// Bundles of `package` a bundle can upgrade to directly, following replaces, skips and
    /// skipRange in `channel` (in every channel of the package when `None`), newest first.
    /// The bundle is identified by name and version and need not be in this catalog, as an
    /// installed bundle may not be.
    pub fn successors(
        &self,
        package: &str,
        channel: Option<&str>,
        name: &str,
        version: Option<&Version>,
    ) -> Vec<&Bundle> {
        let Some(index) = self.entry(package) else {
            return Vec::new();
        };
        let names: BTreeSet<&str> = index
            .channels
            .iter()
            .filter(|(c, _)| channel.is_none_or(|wanted| wanted == self.catalog.channels[*c].name))
            .flat_map(|(_, graph)| graph.successors(name, version))
            .map(|entry| entry.name.as_str())
            .collect();
        self.bundles(package)
            .filter(|b| names.contains(b.name.as_str()))
            .collect()
    }

    /// Why `package` must not be resolved from this catalog: its channels whose upgrade graph
    /// is invalid (a cycle, several heads, stranded entries), each an [`IndexError::Channel`]
    /// naming the channel and the bundles. Empty for a sound (or unknown) package.
    ///
    /// Such channels are left out of [`CatalogIndex::channels`] and
    /// [`CatalogIndex::channel_graph`]; the package's bundles stay listed, so that what was
    /// installed from it can still be looked up.
    pub fn package_problems(&self, package: &str) -> &[IndexError] {
        self.entry(package)
            .map_or(&[][..], |p| p.problems.as_slice())
    }

    /// The packages with an invalid channel graph and their problems (see
    /// [`CatalogIndex::package_problems`]), by package name.
    pub fn unusable_packages(&self) -> impl Iterator<Item = (&str, &[IndexError])> {
        self.packages
            .iter()
            .filter(|p| !p.problems.is_empty())
            .map(|p| {
                let name = self.catalog.packages[p.package].name.as_str();
                (name, p.problems.as_slice())
            })
    }

    /// Every deprecation notice that applies to a choice of `package`, optionally narrowed to
    /// a `channel` and a `bundle` (by name): the package's own, the channel's and the
    /// bundle's, each with its message. This is what a status reports as `Deprecated`,
    /// `PackageDeprecated`, `ChannelDeprecated` and `BundleDeprecated`, and what ranks a
    /// candidate last among otherwise equal ones.
    pub fn deprecation(
        &self,
        package: &str,
        channel: Option<&str>,
        bundle: Option<&str>,
    ) -> Deprecation<'_> {
        // One lookup of the package for all three levels: the resolver asks this for every
        // bundle it reaches.
        self.entry(package)
            .map(|entry| entry.deprecation(channel, bundle))
            .unwrap_or_default()
    }

    /// [`CatalogIndex::deprecation`] of a bundle in a channel, and the package's default
    /// channel: what a resolver asks of every bundle it reaches, with one lookup of the
    /// package.
    pub fn deprecation_and_default_channel(
        &self,
        package: &str,
        channel: &str,
        bundle: &str,
    ) -> (Deprecation<'_>, Option<&str>) {
        let Some(entry) = self.entry(package) else {
            return (Deprecation::default(), None);
        };
        let default_channel = self.catalog.packages[entry.package]
            .default_channel
            .as_deref();
        (
            entry.deprecation(Some(channel), Some(bundle)),
            default_channel,
        )
    }

    /// The deprecation message of the whole package, if deprecated.
    pub fn package_deprecation(&self, package: &str) -> Option<&str> {
        self.entry(package)?.package_deprecation.as_deref()
    }

    /// The deprecation message of a channel, if deprecated.
    pub fn channel_deprecation(&self, package: &str, channel: &str) -> Option<&str> {
        self.entry(package)?
            .channel_deprecations
            .get(channel)
            .map(String::as_str)
    }

    /// The deprecation message of a bundle, if deprecated.
    pub fn bundle_deprecation(&self, package: &str, bundle: &str) -> Option<&str> {
        self.entry(package)?
            .bundle_deprecations
            .get(bundle)
            .map(String::as_str)
    }
}

/// Groups the catalog's blobs by the package they name, in package name order, reporting
/// duplicate packages, bundles without an image, and blobs of undeclared packages.
fn group_by_package(catalog: &Catalog, found: &mut Vec<Found>) -> Vec<Members> {
    let mut slots: foldhash::HashMap<&str, usize> = foldhash::HashMap::default();
    let mut firsts = Vec::new();
    for (i, package) in catalog.packages.iter().enumerate() {
        if let Some(&slot) = slots.get(package.name.as_str()) {
            let first: usize = firsts[slot];
            found.push(Found::new(
                Stage::Packages,
                i,
                IndexError::DuplicatePackage {
                    name: package.name.clone(),
                    location: package.location.clone(),
                    first: catalog.packages[first].location.clone(),
                },
            ));
        } else {
            slots.insert(&package.name, firsts.len());
            firsts.push(i);
        }
    }
    // Slots in name order, so that the index lists packages by name.
    let mut by_name: Vec<usize> = (0..firsts.len()).collect();
    by_name.sort_unstable_by_key(|&slot| catalog.packages[firsts[slot]].name.as_str());
    let mut rank = vec![0; by_name.len()];
    for (position, &slot) in by_name.iter().enumerate() {
        rank[slot] = position;
    }
    let mut members: Vec<Members> = by_name
        .iter()
        .map(|&slot| Members {
            package: firsts[slot],
            ..Members::default()
        })
        .collect();
    let member_of =
        |found: &mut Vec<Found>, package: &str, stage: Stage, at: usize, location: &Location| {
            let slot = slots.get(package).map(|&slot| rank[slot]);
            if slot.is_none() {
                found.push(Found::new(
                    stage,
                    at,
                    IndexError::UnknownPackage {
                        package: package.to_owned(),
                        location: location.clone(),
                    },
                ));
            }
            slot
        };

    for (i, bundle) in catalog.bundles.iter().enumerate() {
        if bundle.image.is_empty() && !bundle.has_inline_objects() {
            found.push(Found::new(
                Stage::Bundles,
                i,
                IndexError::BundleWithoutImage {
                    name: bundle.name.clone(),
                    location: bundle.location.clone(),
                },
            ));
        }
        if let Some(slot) = member_of(found, &bundle.package, Stage::Bundles, i, &bundle.location) {
            members[slot].bundles.push(i);
        }
    }
    for (i, channel) in catalog.channels.iter().enumerate() {
        if let Some(slot) = member_of(
            found,
            &channel.package,
            Stage::Channels,
            i,
            &channel.location,
        ) {
            members[slot].channels.push(i);
        }
    }
    for (i, deprecations) in catalog.deprecations.iter().enumerate() {
        let location = &deprecations.location;
        if let Some(slot) = member_of(
            found,
            &deprecations.package,
            Stage::Deprecations,
            i,
            location,
        ) {
            members[slot].deprecations.push(i);
        }
    }
    members
}

/// What one package provides: each API with its providers, in first-mention order (an API's
/// slot is its position here), and (bundle position, API slot) for every `olm.gvk` property
/// of every bundle, in property order.
struct Provided<'c> {
    apis: Vec<(&'c Gvk, Vec<usize>)>,
    by_bundle: Vec<(usize, usize)>,
}

/// Indexes one package from its blobs: its index, the problems found, and the bundles
/// providing each API it provides (see [`providers_in`]). Problems of [`Stage::Contents`] are
/// found in the order that stage lists them in; their position is the caller's to set.
fn index_package<'c>(
    catalog: &'c Catalog,
    members: &Members,
) -> (PackageIndex, Vec<Found>, Provided<'c>, Vec<(usize, usize)>) {
    let mut index = PackageIndex {
        package: members.package,
        ..PackageIndex::default()
    };
    let mut found = Vec::new();
    index_bundles(catalog, members, &mut index, &mut found);
    index_channels(catalog, members, &mut index, &mut found);
    check_contents(catalog, members, &index, &mut found);
    index_deprecations(catalog, members, &mut index, &mut found);
    let provided = providers_in(catalog, &index.bundles);
    let holding = holding_in(catalog, &index);
    (index, found, provided, holding)
}

/// (bundle position, channel slot) for every entry of the package's channel graphs whose
/// bundle exists, for [`Placement`].
fn holding_in(catalog: &Catalog, index: &PackageIndex) -> Vec<(usize, usize)> {
    let mut holding = Vec::with_capacity(index.bundles.len());
    for (slot, (_, graph)) in index.channels.iter().enumerate() {
        for entry in graph.entries() {
            if let Some(bundle) = index.bundle_by_name.get(&entry.name, bundle_name(catalog)) {
                holding.push((bundle, slot));
            }
        }
    }
    holding
}

/// The bundles among `bundles` that provide each API, in first-mention order. Built here,
/// while each package is indexed on its own, so that the catalog-wide map is merged from a
/// few entries per package instead of one per bundle and API.
fn providers_in<'c>(catalog: &'c Catalog, bundles: &[usize]) -> Provided<'c> {
    let mut apis: Vec<(&Gvk, Vec<usize>)> = Vec::new();
    let mut by_bundle = Vec::with_capacity(bundles.len());
    let mut slots: foldhash::HashMap<&Gvk, usize> = foldhash::HashMap::default();
    for &b in bundles {
        for gvk in catalog.bundles[b].provided_gvks() {
            let slot = match slots.get(gvk) {
                // A bundle listing an API twice is one provider.
                Some(&slot) if apis[slot].1.last() != Some(&b) => {
                    apis[slot].1.push(b);
                    slot
                }
                Some(&slot) => slot,
                None => {
                    slots.insert(gvk, apis.len());
                    apis.push((gvk, vec![b]));
                    apis.len() - 1
                }
            };
            by_bundle.push((b, slot));
        }
    }
    Provided { apis, by_bundle }
}

/// The name of each bundle of `catalog` by position, for [`PackageIndex::bundle_by_name`].
fn bundle_name<'c>(catalog: &'c Catalog) -> impl Fn(usize) -> &'c str {
    |b| catalog.bundles[b].name.as_str()
}

fn index_bundles(
    catalog: &Catalog,
    members: &Members,
    index: &mut PackageIndex,
    found: &mut Vec<Found>,
) {
    index.bundle_by_name = NameIndex::with_capacity(members.bundles.len());
    for &i in &members.bundles {
        let bundle = &catalog.bundles[i];
        if let Some(first) = index.bundle_by_name.insert(i, bundle_name(catalog)) {
            found.push(Found::new(
                Stage::Bundles,
                i,
                IndexError::DuplicateBundle {
                    package: bundle.package.clone(),
                    name: bundle.name.clone(),
                    location: bundle.location.clone(),
                    first: catalog.bundles[first].location.clone(),
                },
            ));
            continue;
        }
        index.bundles.push(i);
    }
    index.bundles.sort_by(|&a, &b| {
        let (a, b) = (&catalog.bundles[a], &catalog.bundles[b]);
        compare_precedence(&b.version, &a.version)
            .then_with(|| b.version.build.cmp(&a.version.build))
            .then_with(|| a.name.cmp(&b.name))
    });
}

fn index_channels(
    catalog: &Catalog,
    members: &Members,
    index: &mut PackageIndex,
    found: &mut Vec<Found>,
) {
    // Channels indexed so far, by name: a package with many channels is checked for
    // repeats without a scan per channel.
    let mut indexed: foldhash::HashMap<&str, usize> = foldhash::HashMap::default();
    for &i in &members.channels {
        let channel = &catalog.channels[i];
        if let Some(first) = indexed.get(channel.name.as_str()) {
            found.push(Found::new(
                Stage::Channels,
                i,
                IndexError::DuplicateChannel {
                    package: channel.package.clone(),
                    name: channel.name.clone(),
                    location: channel.location.clone(),
                    first: catalog.channels[*first].location.clone(),
                },
            ));
            continue;
        }
        let bundle_by_name = &index.bundle_by_name;
        let version_of = |name: &str| {
            bundle_by_name
                .get(name, bundle_name(catalog))
                .map(|b| &catalog.bundles[b].version)
        };
        match ChannelGraph::new(channel, version_of) {
            Ok(graph) => {
                indexed.insert(&channel.name, i);
                index.channels.push((i, graph));
            }
            Err(source) => {
                let graph_error = source.is_graph_error();
                let problem = IndexError::Channel {
                    package: channel.package.clone(),
                    channel: channel.name.clone(),
                    location: channel.location.clone(),
                    source,
                };
                // A broken upgrade graph spoils its package, not the whole catalog: the
                // package is kept out of resolution (see `package_problems`) and every
                // other package stays usable.
                if graph_error {
                    index.problems.push(problem);
                } else {
                    found.push(Found::new(Stage::Channels, i, problem));
                }
            }
        }
    }
    // Names are unique here, so the order is total.
    index.channels.sort_unstable_by(|(a, _), (b, _)| {
        catalog.channels[*a].name.cmp(&catalog.channels[*b].name)
    });
}

fn check_contents(
    catalog: &Catalog,
    members: &Members,
    index: &PackageIndex,
    found: &mut Vec<Found>,
) {
    let package = &catalog.packages[index.package];
    let name = &package.name;
    let mut problem = |problem| found.push(Found::new(Stage::Contents, 0, problem));
    // Every declared channel counts here, also those that failed validation and were not
    // indexed, so that their bundles and the default channel are not reported a second time.
    let channels = || members.channels.iter().map(|&c| &catalog.channels[c]);
    if members.channels.is_empty() {
        problem(IndexError::PackageWithoutChannels {
            package: name.clone(),
            location: package.location.clone(),
        });
    }
    if let Some(default) = &package.default_channel
        && !channels().any(|c| &c.name == default)
    {
        problem(IndexError::UnknownDefaultChannel {
            package: name.clone(),
            channel: default.clone(),
            location: package.location.clone(),
        });
    }
    let in_some_channel: HashSet<&str> = channels()
        .flat_map(|c| c.entries.iter().map(|e| e.name.as_str()))
        .collect();
    let mut by_version: BTreeMap<&Version, Vec<String>> = BTreeMap::new();
    for &b in &index.bundles {
        let bundle = &catalog.bundles[b];
        by_version
            .entry(&bundle.version)
            .or_default()
            .push(bundle.name.clone());
        if !in_some_channel.contains(bundle.name.as_str()) {
            problem(IndexError::BundleNotInChannel {
                package: name.clone(),
                name: bundle.name.clone(),
                location: bundle.location.clone(),
            });
        }
    }
    for (version, mut bundles) in by_version {
        if bundles.len() > 1 {
            bundles.sort();
            problem(IndexError::DuplicateVersion {
                package: name.clone(),
                version: version.clone(),
                bundles,
            });
        }
    }
}

fn index_deprecations(
    catalog: &Catalog,
    members: &Members,
    index: &mut PackageIndex,
    found: &mut Vec<Found>,
) {
    let Some((&first, rest)) = members.deprecations.split_first() else {
        return;
    };
    let first_location = &catalog.deprecations[first].location;
    for &i in rest {
        let deprecations = &catalog.deprecations[i];
        found.push(Found::new(
            Stage::Deprecations,
            i,
            IndexError::DuplicateDeprecations {
                package: deprecations.package.clone(),
                location: deprecations.location.clone(),
                first: first_location.clone(),
            },
        ));
    }
    let deprecations = &catalog.deprecations[first];
    let declared_channel = |name: &str| {
        members
            .channels
            .iter()
            .any(|&c| catalog.channels[c].name == name)
    };
    let mut seen = HashSet::new();
    for entry in &deprecations.entries {
        let package = deprecations.package.clone();
        let reference = entry.reference.clone();
        let location = deprecations.location.clone();
        if !seen.insert(&entry.reference) {
            found.push(Found::new(
                Stage::Deprecations,
                first,
                IndexError::DuplicateDeprecationEntry {
                    package,
                    reference,
                    location,
                },
            ));
            continue;
        }
        let message = entry.message.clone();
        let exists = match &entry.reference {
            DeprecationReference::Package => {
                index.package_deprecation = Some(message);
                true
            }
            DeprecationReference::Channel(name) => {
                index.channel_deprecations.insert(name.clone(), message);
                declared_channel(name)
            }
            DeprecationReference::Bundle(name) => {
                index.bundle_deprecations.insert(name.clone(), message);
                index
                    .bundle_by_name
                    .get(name, bundle_name(catalog))
                    .is_some()
            }
        };
        if !exists {
            found.push(Found::new(
                Stage::Deprecations,
                first,
                IndexError::UnknownDeprecationTarget {
                    package,
                    reference,
                    location,
                },
            ));
        }
    }
}
