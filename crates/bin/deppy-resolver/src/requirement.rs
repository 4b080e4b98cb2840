//! The dependencies a bundle declares (`olm.package.required`, `olm.gvk.required`,
//! `olm.constraint`), borrowed from the catalog: what the problem builder finds candidates
//! for and what explanations name.

use fbc::{Bundle, Gvk, Property, VersionRange};

/// One dependency a bundle declares, borrowed from the catalog.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Requirement<'a> {
    /// `olm.package.required`.
    Package {
        name: &'a str,
        range: &'a VersionRange,
    },
    /// `olm.gvk.required`.
    Gvk(&'a Gvk),
    /// `olm.constraint`.
    Constraint(&'a fbc::Constraint),
}

/// The bundle's dependencies in property order: what `Bundle::requirements` lists, without
/// cloning every range for every bundle visited.
pub(crate) fn requirements(bundle: &Bundle) -> impl Iterator<Item = Requirement<'_>> {
    bundle
        .properties
        .iter()
        .filter_map(|property| match property {
            Property::PackageRequired(required) => Some(Requirement::Package {
                name: &required.package_name,
                range: &required.version_range,
            }),
            Property::GvkRequired(gvk) => Some(Requirement::Gvk(gvk)),
            Property::Constraint(constraint) => Some(Requirement::Constraint(constraint)),
            _ => None,
        })
}
