//! The wording of explanations, following OLM v0's resolver (`variable_types.go`,
//! `resolver.go`) where it has an equivalent, so that messages read as OLM users know them.

use std::fmt::Write as _;

use deppy::{Description, Identifier, list};
use fbc::{ConstraintError, ConstraintExpr, Gvk, IndexError, Version, VersionRange};

use crate::kube_version::{KubeVersion, Unfit};
use crate::requirement::Requirement;

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

/// Why `catalog` offers nothing of `package`: the channels whose upgrade graph is broken
/// (each an [`IndexError::Channel`]).
pub(crate) fn invalid_graph(catalog: &str, package: &str, problems: &[IndexError]) -> String {
    let channels: Vec<String> = problems
        .iter()
        .map(|problem| match problem {
            IndexError::Channel {
                channel, source, ..
            } => format!("the upgrade graph of channel {channel} is invalid ({source})"),
            other => other.to_string(),
        })
        .collect();
    format!(
        "catalog {catalog} cannot offer package {package} until it is fixed: {}",
        channels.join("; ")
    )
}

/// A message followed by notes (each a sentence of its own), joined by `; `.
pub(crate) fn with_notes(message: String, notes: &[String]) -> String {
    if notes.is_empty() {
        return message;
    }
    format!("{message}; {}", notes.join("; "))
}

/// A bundle that needs a newer Kubernetes than the cluster runs, or whose minimum cannot be
/// read.
pub(crate) fn unfit_for_cluster(
    bundle: &Identifier,
    unfit: Unfit<'_>,
    cluster: KubeVersion,
) -> String {
    match unfit {
        Unfit::NeedsNewer(minimum) => format!(
            "bundle {bundle} requires Kubernetes >= {minimum} (minKubeVersion) and this cluster \
             runs {cluster}"
        ),
        Unfit::Unreadable(minimum) => format!(
            "bundle {bundle} has minKubeVersion {minimum:?}, which is not a Kubernetes version, \
             so it cannot be installed on any cluster"
        ),
    }
}

/// Why one version an installed package could move to cannot be chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reason<'a> {
    /// A `required` constraint on the package whose range and channel exclude it.
    Request {
        range: Option<&'a VersionRange>,
        channel: Option<&'a str>,
    },
    /// A `prohibited` constraint (in function form) excludes it.
    Prohibited(&'a str),
    /// It cannot run on the cluster.
    Kubernetes(Unfit<'a>, KubeVersion),
}

impl Reason<'_> {
    /// "is not in range R of channel C", and so on: what follows a version.
    fn phrase(&self) -> String {
        match self {
            Self::Request { range, channel } => format!("is not {}", place(*range, *channel)),
            Self::Prohibited(id) => format!("is excluded by {id}"),
            Self::Kubernetes(Unfit::NeedsNewer(minimum), cluster) => format!(
                "requires Kubernetes >= {minimum} (minKubeVersion) and this cluster runs {cluster}"
            ),
            Self::Kubernetes(Unfit::Unreadable(minimum), _) => {
                format!("has minKubeVersion {minimum:?}, which is not a Kubernetes version")
            }
        }
    }
}

/// "in range R of channel C", "in range R", "in channel C".
fn place(range: Option<&VersionRange>, channel: Option<&str>) -> String {
    match (range, channel) {
        (Some(range), Some(channel)) => format!("in range {range} of channel {channel}"),
        (Some(range), None) => format!("in range {range}"),
        (None, Some(channel)) => format!("in channel {channel}"),
        (None, None) => "requested".to_owned(),
    }
}

/// Where an installed package may go and why none of it is possible: the sentence that
/// names the way out.
///
/// `allowed` lists the versions its upgrade graph allows, oldest first, each with why it
/// cannot be chosen (empty when it could be, or nothing is known against it); `stay` says
/// whether the installed version itself is among them, i.e. still in a catalog.
pub(crate) fn installed_refusal(
    package: &str,
    version: &Version,
    stay: bool,
    allowed: &[(&Version, Vec<Reason<'_>>)],
) -> String {
    let names: Vec<String> = allowed
        .iter()
        .map(|(v, _)| {
            if stay && *v == version {
                format!("{v} (stay)")
            } else {
                v.to_string()
            }
        })
        .collect();
    let one = allowed.len() == 1;
    let mut out = format!("package {package} is installed at {version}");
    if !stay {
        out.push_str(", which no catalog offers any more");
    }
    let _ = write!(
        out,
        "; the upgrade graph allows {}{} from it",
        if one { "only " } else { "" },
        list(&names, " or ")
    );
    if allowed.iter().any(|(_, reasons)| reasons.is_empty()) {
        return out;
    }
    let first = &allowed[0].1;
    let same = allowed.iter().all(|(_, reasons)| reasons == first);
    match first.as_slice() {
        // The common case, worded for it: one request excludes every version.
        [Reason::Request { range, channel }] if same => {
            let place = place(*range, *channel);
            if one {
                let _ = write!(out, ", and it is not {place}");
            } else {
                let _ = write!(out, ", and none of these is {place}");
            }
        }
        [Reason::Prohibited(id)] if same => {
            let _ = write!(
                out,
                ", and {id} excludes {}",
                if one { "it" } else { "all of them" }
            );
        }
        [reason] if one => {
            let _ = write!(out, ", and it {}", reason.phrase());
        }
        _ => {
            let each: Vec<String> = allowed
                .iter()
                .map(|(v, reasons)| {
                    let phrases: Vec<String> = reasons.iter().map(Reason::phrase).collect();
                    format!("{v} {}", phrases.join(" and "))
                })
                .collect();
            let _ = write!(
                out,
                ", and none of these can be chosen: {}",
                each.join("; ")
            );
        }
    }
    out
}

/// An installed package that no catalog offers, at its version or as an upgrade from it.
/// `broken` explains catalogs that cannot offer the package at all ([`invalid_graph`]).
pub(crate) fn installed_unavailable(package: &str, version: &Version, broken: &[String]) -> String {
    if broken.is_empty() {
        format!(
            "package {package} is installed at {version}, which no catalog offers any more, \
             and no bundle in any catalog upgrades from it; nothing can be resolved for it, and \
             what runs stays as it is"
        )
    } else {
        format!(
            "package {package} is installed at {version}, but {}; nothing can be resolved for \
             it, and what runs stays as it is",
            broken.join("; ")
        )
    }
}

/// A bundle's dependency, as OLM phrases it: `bundle X requires an operator <predicate>`.
pub(crate) fn bundle_requires(bundle: &Identifier, requirement: Requirement<'_>) -> String {
    format!(
        "{BUNDLE_REQUIRES_LEAD}{bundle}{}",
        requires_phrase(requirement)
    )
}

/// What [`bundle_requires`] puts before the bundle.
pub(crate) const BUNDLE_REQUIRES_LEAD: &str = "bundle ";

/// What [`bundle_requires`] puts after the bundle: the same for every bundle with this
/// requirement.
pub(crate) fn requires_phrase(requirement: Requirement<'_>) -> String {
    let mut out = String::from(" requires an operator ");
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

/// At most one bundle per package; the bundles are the rule's own list, written out only
/// when an explanation is read.
pub(crate) fn package_uniqueness(package: &str) -> Description {
    Description::Listing {
        before: format!("there can be only one operator from package {package}: "),
        conjunction: " and ",
        after: format!(" originate from package {package}"),
    }
}

/// At most one provider per API; the providers are the rule's own list, as for
/// [`package_uniqueness`].
pub(crate) fn gvk_uniqueness(gvk: &Gvk) -> Description {
    let api = format!("{} ({}/{})", gvk.kind, gvk.group, gvk.version);
    Description::Listing {
        before: format!("there can be only one provider of {api}: "),
        conjunction: " and ",
        after: format!(" provide {api}"),
    }
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
        let subject = Identifier::new("unique package p");
        assert_eq!(
            package_uniqueness("p").render(&subject, &ids(&["a", "b", "c"])),
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

    fn version(text: &str) -> Version {
        text.parse().unwrap()
    }

    #[test]
    fn a_refused_installed_package_lists_where_its_graph_allows_it_to_go() {
        let range = VersionRange::parse("<0.2.0", fbc::PrereleasePolicy::OptIn).unwrap();
        let (installed, next) = (version("0.2.0"), version("0.3.0"));
        let request = || Reason::Request {
            range: Some(&range),
            channel: Some("stable"),
        };
        assert_eq!(
            installed_refusal(
                "memcached-operator",
                &installed,
                true,
                &[(&installed, vec![request()]), (&next, vec![request()])],
            ),
            "package memcached-operator is installed at 0.2.0; the upgrade graph allows 0.2.0 \
             (stay) or 0.3.0 from it, and none of these is in range <0.2.0 of channel stable"
        );
        assert_eq!(
            installed_refusal(
                "redis-operator",
                &installed,
                true,
                &[(&installed, vec![request()])]
            ),
            "package redis-operator is installed at 0.2.0; the upgrade graph allows only 0.2.0 \
             (stay) from it, and it is not in range <0.2.0 of channel stable"
        );
        // Without the installed bundle in any catalog, only its upgrades are listed.
        let prohibited = r#"prohibited("p", ">=0.3.0")"#;
        assert_eq!(
            installed_refusal(
                "p",
                &installed,
                false,
                &[(&next, vec![Reason::Prohibited(prohibited)])]
            ),
            "package p is installed at 0.2.0, which no catalog offers any more; the upgrade graph \
             allows only 0.3.0 from it, and prohibited(\"p\", \">=0.3.0\") excludes it"
        );
    }

    #[test]
    fn a_refusal_with_mixed_reasons_gives_each_version_its_own() {
        let range = VersionRange::parse(">=0.4.0", fbc::PrereleasePolicy::OptIn).unwrap();
        let (installed, next) = (version("0.3.0"), version("0.4.0"));
        let cluster = KubeVersion::new(1, 36, 4);
        let reasons = [
            (
                &installed,
                vec![Reason::Request {
                    range: Some(&range),
                    channel: None,
                }],
            ),
            (
                &next,
                vec![Reason::Kubernetes(
                    Unfit::NeedsNewer(KubeVersion::new(1, 40, 0)),
                    cluster,
                )],
            ),
        ];
        assert_eq!(
            installed_refusal("p", &installed, true, &reasons),
            "package p is installed at 0.3.0; the upgrade graph allows 0.3.0 (stay) or 0.4.0 from \
             it, and none of these can be chosen: 0.3.0 is not in range >=0.4.0; 0.4.0 requires \
             Kubernetes >= 1.40.0 (minKubeVersion) and this cluster runs 1.36.4"
        );
        // When some version is not ruled out by what the summary knows, the solver's
        // explanation says the rest.
        let open = [(&installed, Vec::new()), (&next, reasons[1].1.clone())];
        assert_eq!(
            installed_refusal("p", &installed, true, &open),
            "package p is installed at 0.3.0; the upgrade graph allows 0.3.0 (stay) or 0.4.0 from it"
        );
    }

    #[test]
    fn an_installed_package_no_catalog_offers_is_left_running() {
        assert_eq!(
            installed_unavailable("legacy-operator", &version("1.0.0"), &[]),
            "package legacy-operator is installed at 1.0.0, which no catalog offers any more, and \
             no bundle in any catalog upgrades from it; nothing can be resolved for it, and what \
             runs stays as it is"
        );
        let broken = invalid_graph(
            "graphs",
            "looped",
            &[IndexError::Channel {
                package: "looped".into(),
                channel: "stable".into(),
                location: fbc::Location::default(),
                source: fbc::ChannelError::Cycle(vec!["a".into(), "b".into(), "a".into()]),
            }],
        );
        assert_eq!(
            broken,
            "catalog graphs cannot offer package looped until it is fixed: the upgrade graph of \
             channel stable is invalid (upgrade edges form a cycle: a -> b -> a)"
        );
        assert_eq!(
            installed_unavailable("looped", &version("1.0.0"), &[broken]),
            "package looped is installed at 1.0.0, but catalog graphs cannot offer package looped \
             until it is fixed: the upgrade graph of channel stable is invalid (upgrade edges form \
             a cycle: a -> b -> a); nothing can be resolved for it, and what runs stays as it is"
        );
    }

    #[test]
    fn a_bundle_for_a_newer_cluster_says_both_versions() {
        let bundle = Identifier::new("upgrades:memcached-operator:0.4.0:candidate");
        let cluster = KubeVersion::new(1, 36, 4);
        assert_eq!(
            unfit_for_cluster(
                &bundle,
                Unfit::NeedsNewer(KubeVersion::new(1, 40, 0)),
                cluster
            ),
            "bundle upgrades:memcached-operator:0.4.0:candidate requires Kubernetes >= 1.40.0 \
             (minKubeVersion) and this cluster runs 1.36.4"
        );
        assert_eq!(
            unfit_for_cluster(&bundle, Unfit::Unreadable("latest"), cluster),
            "bundle upgrades:memcached-operator:0.4.0:candidate has minKubeVersion \"latest\", \
             which is not a Kubernetes version, so it cannot be installed on any cluster"
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
