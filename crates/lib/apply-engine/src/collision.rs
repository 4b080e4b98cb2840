//! Collision protection: whether a BundleDeployment may take over an object that already
//! exists. Decided before any write, so a conflict never leaves a partial install.
//!
//! Applied objects carry owner labels, not owner references: an owner reference would let
//! the garbage collector delete CRDs (and every custom resource with them) when a
//! BundleDeployment goes away, which is the upstream bug this project avoids.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use rukpak_api::CollisionProtection;

use crate::object::{ObjectKey, owning_bundle_deployment};

/// Why an existing object may not be taken over.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{object} already exists and {holder}; collisionProtection {policy:?} forbids taking it over"
)]
pub struct Collision {
    /// The object.
    pub object: ObjectKey,
    /// Who holds it, in words ("is managed by BundleDeployment x", ...).
    pub holder: String,
    /// The policy that refused.
    pub policy: CollisionProtection,
}

/// Decides whether BundleDeployment `owner` may apply over the existing object `key`
/// with metadata `existing`: the collision, if it may not. Objects it already manages are
/// always allowed.
pub fn check(
    owner: &str,
    policy: CollisionProtection,
    key: &ObjectKey,
    existing: &ObjectMeta,
) -> Option<Collision> {
    let verdict = decide(owner, policy, existing)?;
    Some(Collision {
        object: key.clone(),
        holder: verdict,
        policy,
    })
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
            assert_eq!(check("a", policy, &key(), &labelled("a")), None);
        }
    }

    #[test]
    fn another_bundle_deployments_object_is_refused_unless_policy_is_none() {
        let err = check("a", CollisionProtection::Prevent, &key(), &labelled("b")).unwrap();
        assert_eq!(
            err.to_string(),
            "Deployment.apps ns/web already exists and is managed by BundleDeployment b; collisionProtection Prevent forbids taking it over"
        );
        assert!(
            check(
                "a",
                CollisionProtection::IfNoController,
                &key(),
                &labelled("b")
            )
            .is_some()
        );
        assert!(check("a", CollisionProtection::None, &key(), &labelled("b")).is_none());
    }

    #[test]
    fn unmanaged_objects_follow_the_policy() {
        let free = ObjectMeta::default();
        assert!(
            check("a", CollisionProtection::Prevent, &key(), &free)
                .unwrap()
                .to_string()
                .contains("is not managed by this BundleDeployment")
        );
        assert!(check("a", CollisionProtection::IfNoController, &key(), &free).is_none());
        let err = check(
            "a",
            CollisionProtection::IfNoController,
            &key(),
            &controlled(),
        )
        .unwrap();
        assert!(
            err.to_string().contains("is controlled by ReplicaSet rs"),
            "{err}"
        );
        assert!(check("a", CollisionProtection::None, &key(), &controlled()).is_none());
    }
}
