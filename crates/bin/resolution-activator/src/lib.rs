//! The resolution activator: turns resolved ActiveResolutions into units that RukPak
//! installs, pivots and deletes as one.
//!
//! For each ActiveResolution whose `deppy.io/activator-class` annotation names a
//! class this process serves (see [`classes`]), once deppy-resolver has set `Resolved=True`:
//!
//! 1. every selection (`catalog:package:version:channel`, [`deppy_api::Selection`]) is looked up in its
//!    Catalog's bundle index, read from Deppy's content store ([`catalogs`]);
//! 2. the class turns each selected bundle into child BundleDeployments;
//! 3. they are written as an immutable ResolveSet ConfigMap in RukPak's system namespace, one
//!    `<package>-bd.yaml` per entity, named `<resolution>-<content hash>` ([`resolve_set`]);
//! 4. the wrapper BundleDeployment (named after the resolution, plain+v0, owned by the
//!    ActiveResolution) is pointed at it, so RukPak pivots the children: new ones are
//!    applied, unselected ones pruned;
//! 5. the last `--history` ResolveSets are kept as the record of past decisions;
//! 6. `status.entities` and the `Activated` condition say what happened.
//!
//! A resolution that is not `Resolved=True` is never acted on: what is installed stays.
//! The [`controller`] runs it all; `resolution-activator run` is the binary.

pub mod catalogs;
pub mod classes;
pub mod controller;
pub mod names;
pub mod resolve_set;

#[cfg(test)]
mod fixtures;

pub use classes::{ActivatorClass, Classes, Entity};
pub use controller::{Context, Metrics, Settings};
pub use deppy_api::Selection;

/// The activator class `resolution` names in [`deppy_api::ACTIVATOR_CLASS_ANNOTATION`].
pub fn activator_class(resolution: &deppy_api::ActiveResolution) -> Option<&str> {
    use kube::ResourceExt;
    resolution
        .annotations()
        .get(deppy_api::ACTIVATOR_CLASS_ANNOTATION)
        .map(String::as_str)
}

/// Reasons of the `Activated` condition on ActiveResolutions (also the Event reasons); they
/// live in the API crate, next to their condition.
pub use deppy_api::conditions::activated as reasons;
