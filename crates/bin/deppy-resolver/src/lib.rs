//! OLM's dependency resolution on file-based catalogs, solved by [`deppy`].
//!
//! A [`Request`] holds [`Constraint`]s (`required`, `gvkRequired`, `prohibited`,
//! `installed`, as in `ActiveResolution.spec.constraints`; the function form
//! `required("etcd", ">= 1.0.0", "stable")` parses with [`str::parse`]). A [`Resolver`]
//! resolves it against [`NamedCatalog`]s and returns a [`Resolution`]: one [`SelectedBundle`]
//! (`catalog:package:version:channel` plus the bundle image) per selected bundle, and
//! [`Stats`] on the problem's size and the time spent. When nothing fits,
//! [`ResolveError::NotSatisfiable`] explains why, one constraint per line, in OLM's words.
//!
//! ```no_run
//! use deppy_resolver::{Constraint, NamedCatalog, Request, Resolver};
//! use fbc::CatalogIndex;
//!
//! let index = CatalogIndex::from_dir("catalogs/operatorhub")?;
//! let resolver = Resolver::new([NamedCatalog::new("operatorhub", &index)])?;
//! let request = Request::new(["required(\"etcd\", \">=0.9.0\")".parse::<Constraint>()?]);
//! for selection in resolver.resolve(&request)?.selections {
//!     println!("{selection} {}", selection.image);
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Semantics
//!
//! These are OLM v0's (`pkg/controller/registry/resolver`), with the preference order of the
//! ActiveResolution design:
//!
//! - The unit of choice is a bundle in one channel of one catalog. At most one is selected per
//!   package, and at most one bundle of different packages provides the same API (`olm.gvk`).
//! - `required(package, range, channel)` selects one bundle of the package in the range and
//!   channel. Candidates are preferred non-deprecated first, then from the package's default
//!   channel, then newest, then from the catalog with higher priority, then by catalog name.
//! - A selected bundle's `olm.package.required`, `olm.gvk.required` and `olm.constraint`
//!   properties each require one more selected bundle, chosen with the same preferences
//!   (across packages, by package name first). A dependency that cannot be evaluated (a CEL
//!   rule) rules its bundle out rather than failing the resolution.
//! - `gvkRequired(group, version, kind)` requires a selected provider of the API.
//! - `prohibited(package, range)` excludes bundles.
//! - `installed(package, version)` keeps the package, at that version or at a direct upgrade
//!   (a bundle that replaces or skips it, or whose skipRange contains its version); upgrades
//!   are preferred to staying. When a failure involves an installed package,
//!   [`Unsatisfiable::summary`] says which versions its graph allows and what rules them out.
//! - With [`Resolver::with_kube_version`], bundles whose CSV `minKubeVersion` is above the
//!   cluster's version are not selected, and say so when that is why nothing fits.
//! - A package whose channel graph is broken in a catalog (a cycle, two heads; see
//!   [`fbc::CatalogIndex::package_problems`]) is offered nothing from that catalog, and the
//!   explanation names the channel and bundles.
//! - Choices follow deppy: request constraints in order (`installed` first), then each
//!   chosen bundle's dependencies breadth first, each taking its most preferred candidate that
//!   is consistent with earlier choices.

mod candidates;
mod catalog;
mod constraint;
pub mod controller;
mod error;
mod expression;
mod kube_version;
mod messages;
mod refusal;
mod requirement;
mod resolve;
mod selection;
mod stats;
mod variables;

pub use catalog::NamedCatalog;
pub use constraint::Constraint;
pub use error::{ErrorCategory, ResolveError, Unsatisfiable};
pub use expression::{ExpressionError, ExpressionProblem};
pub use kube_version::{KubeVersion, KubeVersionError};
pub use resolve::{Request, Resolution, Resolver, resolve};
pub use selection::SelectedBundle;
pub use stats::Stats;
