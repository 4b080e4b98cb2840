//! The summary of a failed resolution: for each installed package the failure involves, where
//! its upgrade graph allows it to go and what rules every such version out, in one sentence.
//! The solver's explanation lists the constraints; this says what a person can change.

use std::collections::HashSet;

use deppy::AppliedConstraint;
use fbc::Version;

use crate::candidates::{self, Offer};
use crate::catalog::NamedCatalog;
use crate::constraint::Checked;
use crate::kube_version::{self, KubeVersion};
use crate::messages::{self, Reason};

/// One sentence per `installed` constraint the explanation `core` involves, in request
/// order: those in the core, and those on the package of a `required` constraint in it (a
/// range that matches nothing at all explains itself, but the person still needs to see
/// where the installed version can go).
pub(crate) fn summarise(
    sources: &[NamedCatalog<'_>],
    constraints: &[Checked<'_>],
    core: &[AppliedConstraint],
    kube: Option<KubeVersion>,
) -> Vec<String> {
    let involved: HashSet<&str> = core.iter().map(|c| c.subject.as_str()).collect();
    let required: HashSet<&str> = constraints
        .iter()
        .filter_map(|constraint| match constraint {
            Checked::Required { id, package, .. } if involved.contains(id.as_str()) => {
                Some(*package)
            }
            _ => None,
        })
        .collect();
    constraints
        .iter()
        .filter_map(|constraint| match constraint {
            Checked::Installed {
                id,
                package,
                version,
            } if involved.contains(id.as_str()) || required.contains(package) => {
                Some(installed(sources, constraints, package, version, kube))
            }
            _ => None,
        })
        .collect()
}

fn installed(
    sources: &[NamedCatalog<'_>],
    constraints: &[Checked<'_>],
    package: &str,
    version: &Version,
    kube: Option<KubeVersion>,
) -> String {
    let upgrades = candidates::upgrades(sources, package, version);
    if upgrades.current.is_empty() && upgrades.successors.is_empty() {
        let broken = candidates::invalid_graphs(sources, package);
        return messages::installed_unavailable(package, version, &broken);
    }
    let stay = !upgrades.current.is_empty();
    let reachable: Vec<Offer<'_>> = upgrades
        .current
        .iter()
        .chain(&upgrades.successors)
        .copied()
        .collect();
    let mut versions: Vec<&Version> = reachable.iter().map(|o| &o.bundle.version).collect();
    versions.sort_by(|a, b| fbc::compare_precedence(a, b).then_with(|| a.build.cmp(&b.build)));
    versions.dedup();
    // A version is ruled out when each of its offers (one per channel and catalog) is; its
    // reasons are those of all its offers, without repeats.
    let allowed: Vec<(&Version, Vec<Reason<'_>>)> = versions
        .into_iter()
        .map(|v| {
            let mut reasons: Vec<Reason<'_>> = Vec::new();
            for offer in reachable.iter().filter(|o| &o.bundle.version == v) {
                let Some(reason) = reason(constraints, package, offer, kube) else {
                    return (v, Vec::new());
                };
                if !reasons.contains(&reason) {
                    reasons.push(reason);
                }
            }
            (v, reasons)
        })
        .collect();
    messages::installed_refusal(package, version, stay, &allowed)
}

/// The first reason `offer` of `package` cannot be chosen: a `required` constraint on the
/// package that excludes it, a `prohibited` one, or the cluster's Kubernetes version.
fn reason<'a>(
    constraints: &'a [Checked<'_>],
    package: &str,
    offer: &Offer<'a>,
    kube: Option<KubeVersion>,
) -> Option<Reason<'a>> {
    let version = &offer.bundle.version;
    let in_range =
        |range: &Option<fbc::VersionRange>| range.as_ref().is_none_or(|r| r.matches(version));
    for constraint in constraints {
        match constraint {
            Checked::Required {
                package: p,
                range,
                channel,
                ..
            } if *p == package
                && !(in_range(range) && channel.is_none_or(|c| offer.channel_name() == c)) =>
            {
                return Some(Reason::Request {
                    range: range.as_ref(),
                    channel: *channel,
                });
            }
            Checked::Prohibited {
                id,
                package: p,
                range,
            } if *p == package && in_range(range) => return Some(Reason::Prohibited(id)),
            _ => {}
        }
    }
    let cluster = kube?;
    kube_version::unfit(offer.bundle, cluster).map(|unfit| Reason::Kubernetes(unfit, cluster))
}
