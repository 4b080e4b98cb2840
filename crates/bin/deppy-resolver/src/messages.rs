//! The wording of explanations, following OLM v0's resolver (`variable_types.go`,
//! `resolver.go`) where it has an equivalent, so that messages read as OLM users know them.

use std::fmt::Write as _;

use deppy::Identifier;
use fbc::{ConstraintError, ConstraintExpr, Gvk, VersionRange};

use crate::candidates::Requirement;

/// `a`, `a or b`, `a, b or c`: OLM's way of listing alternatives (and, with `and`, members).
fn list(ids: &[Identifier], conjunction: &str) -> String {
    let mut out = String::new();
    for (i, id) in ids.iter().enumerate() {
        if i > 0 {
            out.push_str(if i + 1 == ids.len() {
                conjunction
            } else {
                ", "
            });
        }
        out.push_str(id.as_str());
    }
    out
}

/// A request constraint's dependency on its candidates.
pub(crate) fn requires_one_of(subject: &str, candidates: &[Identifier]) -> String {
    match candidates {
        [only] => format!("{subject} requires {only}"),
        _ => format!(
            "{subject} requires at least one of {}",
            list(candidates, " or ")
        ),
    }
}

/// A `required` constraint that no bundle matches, naming the first filter nothing passed.
pub(crate) fn no_package_match(
    subject: &str,
    package: &str,
    channel: Option<&str>,
    range: Option<&VersionRange>,
    package_exists: bool,
    channel_exists: bool,
) -> String {
    let mut out = String::from("no operators found");
    match channel {
        Some(channel) if package_exists => {
            let _ = write!(out, " in channel {channel} of package {package}");
        }
        _ => {
            let _ = write!(out, " in package {package}");
        }
    }
    if let Some(range) = range.filter(|_| package_exists && channel_exists) {
        let _ = write!(out, " with version in range {range}");
    }
    let _ = write!(out, " for {subject}");
    out
}

/// A `gvkRequired` constraint that no bundle provides.
pub(crate) fn no_provider(subject: &str, gvk: &Gvk) -> String {
    format!("no operators found {} for {subject}", gvk_phrase(gvk))
}

/// An `installed` constraint whose bundle and upgrades are in no catalog.
pub(crate) fn no_installed_match(subject: &str, package: &str, version: &fbc::Version) -> String {
    format!(
        "no operators found in package {package} at version {version} or upgrading from it for {subject}"
    )
}

/// A bundle's dependency, as OLM phrases it: `bundle X requires an operator <predicate>`.
pub(crate) fn bundle_requires(bundle: &Identifier, requirement: Requirement<'_>) -> String {
    let mut out = format!("bundle {bundle} requires an operator ");
    match requirement {
        Requirement::Package { name, range } => out.push_str(&package_phrase(name, range)),
        Requirement::Gvk(gvk) => out.push_str(&gvk_phrase(gvk)),
        Requirement::Constraint(constraint) => {
            out.push_str(&describe(&constraint.expr));
            if let Some(message) = &constraint.failure_message {
                let _ = write!(out, " ({message})");
            }
        }
    }
    out
}

/// A bundle's dependency that cannot be evaluated, which rules the bundle out.
pub(crate) fn bundle_requires_unevaluable(
    bundle: &Identifier,
    requirement: Requirement<'_>,
    error: &ConstraintError,
) -> String {
    format!(
        "{}, which cannot be evaluated: {error}",
        bundle_requires(bundle, requirement)
    )
}

/// A bundle excluded by a `prohibited` constraint.
pub(crate) fn prohibited_by(bundle: &Identifier, subject: &str) -> String {
    format!("bundle {bundle} is prohibited by {subject}")
}

/// At most one bundle per package.
pub(crate) fn package_uniqueness(package: &str, bundles: &[Identifier]) -> String {
    format!(
        "there can be only one operator from package {package}: {} originate from package {package}",
        list(bundles, " and ")
    )
}

/// At most one provider per API.
pub(crate) fn gvk_uniqueness(gvk: &Gvk, bundles: &[Identifier]) -> String {
    let api = format!("{} ({}/{})", gvk.kind, gvk.group, gvk.version);
    format!(
        "there can be only one provider of {api}: {} provide {api}",
        list(bundles, " and ")
    )
}

/// OLM's phrase for an API requirement.
fn gvk_phrase(gvk: &Gvk) -> String {
    format!(
        "providing an API with group: {}, version: {}, kind: {}",
        gvk.group, gvk.version, gvk.kind
    )
}

/// OLM's phrase for a package requirement.
fn package_phrase(package: &str, range: &VersionRange) -> String {
    format!("with package: {package} and with version in range: {range}")
}

/// OLM's predicate phrases for `olm.constraint`; compound constraints join their children.
fn describe(expr: &ConstraintExpr) -> String {
    let children = |children: &[fbc::Constraint], joiner: &str| {
        let parts: Vec<String> = children
            .iter()
            .map(|child| match &child.expr {
                compound @ (ConstraintExpr::All(_)
                | ConstraintExpr::Any(_)
                | ConstraintExpr::Not(_)) => format!("({})", describe(compound)),
                simple => describe(simple),
            })
            .collect();
        parts.join(joiner)
    };
    match expr {
        ConstraintExpr::Gvk(gvk) => gvk_phrase(gvk),
        ConstraintExpr::Package {
            package_name,
            version_range,
        } => package_phrase(package_name, version_range),
        ConstraintExpr::All(list) if list.is_empty() => "matching anything".to_owned(),
        ConstraintExpr::All(list) => children(list, " and "),
        ConstraintExpr::Any(list) if list.is_empty() => "matching nothing".to_owned(),
        ConstraintExpr::Any(list) => children(list, " or "),
        ConstraintExpr::Not(list) => format!("not {}", children(list, " or ")),
        ConstraintExpr::Cel { rule } => format!("with cel rule: {rule}"),
        ConstraintExpr::Unknown(value) => format!("with constraint: {value}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(names: &[&str]) -> Vec<Identifier> {
        names.iter().map(Identifier::new).collect()
    }

    #[test]
    fn alternatives_are_listed_as_olm_lists_them() {
        assert_eq!(requires_one_of("s", &ids(&["a"])), "s requires a");
        assert_eq!(
            requires_one_of("s", &ids(&["a", "b", "c"])),
            "s requires at least one of a, b or c"
        );
        assert_eq!(
            package_uniqueness("p", &ids(&["a", "b", "c"])),
            "there can be only one operator from package p: a, b and c originate from package p"
        );
    }

    #[test]
    fn not_found_names_the_first_filter_that_matched_nothing() {
        let range = VersionRange::parse(">=2.0.0", fbc::PrereleasePolicy::OptIn).unwrap();
        let subject = "required(\"p\")";
        assert_eq!(
            no_package_match(subject, "p", Some("fast"), Some(&range), false, false),
            "no operators found in package p for required(\"p\")"
        );
        assert_eq!(
            no_package_match(subject, "p", Some("fast"), Some(&range), true, false),
            "no operators found in channel fast of package p for required(\"p\")"
        );
        assert_eq!(
            no_package_match(subject, "p", None, Some(&range), true, true),
            "no operators found in package p with version in range >=2.0.0 for required(\"p\")"
        );
    }

    #[test]
    fn compound_constraints_nest_in_parentheses() {
        let gvk = |kind: &str| {
            fbc::Constraint::gvk(Gvk {
                group: "g".into(),
                version: "v1".into(),
                kind: kind.into(),
            })
        };
        let any = fbc::Constraint {
            failure_message: None,
            expr: ConstraintExpr::Any(vec![gvk("A"), gvk("B")]),
        };
        let all = fbc::Constraint {
            failure_message: Some("needs A or B, and not C".into()),
            expr: ConstraintExpr::All(vec![
                any,
                fbc::Constraint {
                    failure_message: None,
                    expr: ConstraintExpr::Not(vec![gvk("C")]),
                },
            ]),
        };
        assert_eq!(
            bundle_requires(&Identifier::new("x"), Requirement::Constraint(&all)),
            "bundle x requires an operator (providing an API with group: g, version: v1, kind: A \
             or providing an API with group: g, version: v1, kind: B) and (not providing an API \
             with group: g, version: v1, kind: C) (needs A or B, and not C)"
        );
    }
}
