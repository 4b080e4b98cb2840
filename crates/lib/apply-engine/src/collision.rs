//! Collision protection: whether a BundleDeployment may take over an object that already
//! exists. Decided before any write, so a conflict never leaves a partial install.
//!
//! Applied objects carry owner labels, not owner references: an owner reference would let
//! the garbage collector delete CRDs (and every custom resource with them) when a
//! BundleDeployment goes away, which is the upstream bug this project avoids.
//!
//! A BundleDeployment that applies BundleDeployments (a ResolveSet's wrapper) never takes
//! one over, whatever its policy: owner labels are only words anyone allowed to create a
//! BundleDeployment can write, and a child squatted under the name of a future child would
//! otherwise be adopted with its author's `serviceAccount` and health checks. An existing
//! child is its own only when the author the API server recorded
//! ([`rukpak_api::labels::CREATED_BY`], which nobody can forge or change) is the identity
//! this apply writes as; only a child created before authors were recorded goes by its
//! owner labels alone. Owner references would prove it as well, but would let
//! the garbage collector delete the children of a wrapper deleted with `deletionPolicy:
//! Orphan`.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use rukpak_api::CollisionProtection;

use crate::object::{ObjectKey, owning_bundle_deployment};
use rukpak_api::labels::CREATED_BY;

/// Why an existing object may not be taken over.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{object} already exists and {holder}{}", policy_note(.policy))]
pub struct Collision {
    /// The object.
    pub object: ObjectKey,
    /// Who holds it, in words ("is managed by BundleDeployment x", ...).
    pub holder: String,
    /// The policy that refused; `None` when no policy allows it (another BundleDeployment).
    pub policy: Option<CollisionProtection>,
}

fn policy_note(policy: &Option<CollisionProtection>) -> String {
    policy.map_or_else(String::new, |policy| {
        format!("; collisionProtection {policy:?} forbids taking it over")
    })
}

/// Decides whether BundleDeployment `owner`, writing as the user `author`, may apply over
/// the existing object `key` with metadata `existing`: the collision, if it may not.
/// Objects it already manages are always allowed; a BundleDeployment only when `author`
/// created it.
pub fn check(
    owner: &str,
    author: Option<&str>,
    policy: CollisionProtection,
    key: &ObjectKey,
    existing: &ObjectMeta,
) -> Option<Collision> {
    let (holder, policy) = if is_bundle_deployment(key) {
        (decide_child(owner, author, existing)?, None)
    } else {
        (decide(owner, policy, existing)?, Some(policy))
    };
    Some(Collision {
        object: key.clone(),
        holder,
        policy,
    })
}

fn is_bundle_deployment(key: &ObjectKey) -> bool {
    key.group == "core.rukpak.io" && key.kind == "BundleDeployment"
}

/// The holder description when a child BundleDeployment is not this one's own.
fn decide_child(owner: &str, author: Option<&str>, existing: &ObjectMeta) -> Option<String> {
    let created_by = existing
        .annotations
        .as_ref()
        .and_then(|a| a.get(CREATED_BY))
        .map(String::as_str);
    let labelled = owning_bundle_deployment(existing.labels.as_ref());
    // Without a recorded author (created before the author policy was in force, or on a
    // cluster without it) the owner labels are all there is to go by.
    if labelled == Some(owner) && (created_by.is_none() || created_by == author) {
        return None;
    }
    let writer = author.map_or_else(
        || "this BundleDeployment's identity".to_owned(),
        |user| format!("\"{user}\", the identity this BundleDeployment applies as"),
    );
    let why = match (created_by, labelled) {
        (Some(user), _) if created_by != author => {
            format!("was created by user \"{user}\", not by {writer}")
        }
        // Created by this identity, but for another wrapper: naming the creator would read
        // "created by X, not by X".
        (Some(_), Some(other)) => format!("is managed by BundleDeployment {other}"),
        (None, Some(other)) => format!("is managed by BundleDeployment {other}, not by {writer}"),
        (Some(_), None) => "is not managed by this BundleDeployment".to_owned(),
        (None, None) => format!("is not managed by this BundleDeployment, not by {writer}"),
    };
    Some(format!(
        "{why}; a BundleDeployment never takes over another one (delete or rename it)"
    ))
}

/// The holder description when taking over is refused.
fn decide(owner: &str, policy: CollisionProtection, existing: &ObjectMeta) -> Option<String> {
    if let Some(other) = owning_bundle_deployment(existing.labels.as_ref()) {
        if other == owner {
            return None;
        }
        // Two BundleDeployments fighting over one object would flap forever; only an
        // explicit None accepts that risk.
        return match policy {
            CollisionProtection::None => None,
            _ => Some(format!("is managed by BundleDeployment {other}")),
        };
    }
    let controller = existing
        .owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true));
    match (policy, controller) {
        (CollisionProtection::None, _) => None,
        (CollisionProtection::IfNoController, None) => None,
        (CollisionProtection::IfNoController, Some(c)) => {
            Some(format!("is controlled by {} {}", c.kind, c.name))
        }
        (CollisionProtection::Prevent, Some(c)) => {
            Some(format!("is controlled by {} {}", c.kind, c.name))
        }
        (CollisionProtection::Prevent, None) => {
            Some("is not managed by this BundleDeployment".to_owned())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::owner_labels;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    fn key() -> ObjectKey {
        ObjectKey {
            group: "apps".into(),
            version: "v1".into(),
            kind: "Deployment".into(),
            namespace: Some("ns".into()),
            name: "web".into(),
        }
    }

    fn labelled(owner: &str) -> ObjectMeta {
        ObjectMeta {
            labels: Some(owner_labels(owner)),
            ..ObjectMeta::default()
        }
    }

    fn controlled() -> ObjectMeta {
        ObjectMeta {
            owner_references: Some(vec![OwnerReference {
                api_version: "apps/v1".into(),
                kind: "ReplicaSet".into(),
                name: "rs".into(),
                uid: "u".into(),
                controller: Some(true),
                block_owner_deletion: None,
            }]),
            ..ObjectMeta::default()
        }
    }

    #[test]
    fn objects_a_bundle_deployment_manages_are_always_its_own() {
        for policy in [
            CollisionProtection::Prevent,
            CollisionProtection::IfNoController,
            CollisionProtection::None,
        ] {
            assert_eq!(check("a", None, policy, &key(), &labelled("a")), None);
        }
    }

    #[test]
    fn another_bundle_deployments_object_is_refused_unless_policy_is_none() {
        let err = check(
            "a",
            None,
            CollisionProtection::Prevent,
            &key(),
            &labelled("b"),
        )
        .unwrap();
        assert_eq!(
            err.to_string(),
            "Deployment.apps ns/web already exists and is managed by BundleDeployment b; collisionProtection Prevent forbids taking it over"
        );
        assert!(
            check(
                "a",
                None,
                CollisionProtection::IfNoController,
                &key(),
                &labelled("b")
            )
            .is_some()
        );
        assert!(check("a", None, CollisionProtection::None, &key(), &labelled("b")).is_none());
    }

    #[test]
    fn unmanaged_objects_follow_the_policy() {
        let free = ObjectMeta::default();
        assert!(
            check("a", None, CollisionProtection::Prevent, &key(), &free)
                .unwrap()
                .to_string()
                .contains("is not managed by this BundleDeployment")
        );
        assert!(
            check(
                "a",
                None,
                CollisionProtection::IfNoController,
                &key(),
                &free
            )
            .is_none()
        );
        let err = check(
            "a",
            None,
            CollisionProtection::IfNoController,
            &key(),
            &controlled(),
        )
        .unwrap();
        assert!(
            err.to_string().contains("is controlled by ReplicaSet rs"),
            "{err}"
        );
        assert!(check("a", None, CollisionProtection::None, &key(), &controlled()).is_none());
    }

    fn child(owner: &str, created_by: Option<&str>) -> ObjectMeta {
        ObjectMeta {
            labels: Some(owner_labels(owner)),
            annotations: created_by.map(|user| {
                [(CREATED_BY.to_owned(), user.to_owned())]
                    .into_iter()
                    .collect()
            }),
            ..ObjectMeta::default()
        }
    }

    fn child_key() -> ObjectKey {
        ObjectKey {
            group: "core.rukpak.io".into(),
            version: "v1alpha1".into(),
            kind: "BundleDeployment".into(),
            namespace: None,
            name: "package-memcached-operator".into(),
        }
    }

    #[test]
    fn a_child_bundle_deployment_is_its_own_only_when_its_identity_created_it() {
        let me = "system:serviceaccount:rukpak-system:plain-provisioner";
        for policy in [
            CollisionProtection::Prevent,
            CollisionProtection::IfNoController,
            CollisionProtection::None,
        ] {
            assert_eq!(
                check(
                    "wrapper",
                    Some(me),
                    policy,
                    &child_key(),
                    &child("wrapper", Some(me))
                ),
                None
            );
            // Forged owner labels on a child someone else created: refused whatever the policy.
            let squatted = check(
                "wrapper",
                Some(me),
                policy,
                &child_key(),
                &child("wrapper", Some("mallory")),
            )
            .unwrap();
            assert_eq!(
                squatted.to_string(),
                format!(
                    "BundleDeployment.core.rukpak.io package-memcached-operator already exists and was created by user \"mallory\", \
                     not by \"{me}\", the identity this BundleDeployment applies as; a BundleDeployment never takes over \
                     another one (delete or rename it)"
                )
            );
            // Created before authors were recorded: its owner labels decide.
            assert_eq!(
                check(
                    "wrapper",
                    Some(me),
                    policy,
                    &child_key(),
                    &child("wrapper", None)
                ),
                None
            );
            assert!(
                check(
                    "wrapper",
                    Some(me),
                    policy,
                    &child_key(),
                    &child("other", None)
                )
                .unwrap()
                .to_string()
                .contains("is managed by BundleDeployment other"),
            );
            // Its own identity, but another wrapper's child.
            assert!(
                check(
                    "wrapper",
                    Some(me),
                    policy,
                    &child_key(),
                    &child("other", Some(me))
                )
                .is_some()
            );
            // The applier's identity unknown: never its own.
            assert!(
                check(
                    "wrapper",
                    None,
                    policy,
                    &child_key(),
                    &child("wrapper", Some(me))
                )
                .is_some()
            );
        }
    }

    #[test]
    fn a_child_of_another_wrapper_made_by_the_same_identity_names_that_wrapper() {
        let me = "system:serviceaccount:rukpak-system:plain-provisioner";
        let taken = check(
            "wrapper",
            Some(me),
            CollisionProtection::IfNoController,
            &child_key(),
            &child("other-wrapper", Some(me)),
        )
        .unwrap()
        .to_string();
        assert!(
            taken.contains("is managed by BundleDeployment other-wrapper;"),
            "{taken}"
        );
        assert!(!taken.contains("was created by"), "{taken}");
    }
}
