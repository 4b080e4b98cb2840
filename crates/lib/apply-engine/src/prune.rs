//! Pruning: objects the previous Bundle applied that the new one no longer has.

use crate::object::ObjectKey;

/// Annotation that keeps an object when it leaves the bundle (or the BundleDeployment is
/// deleted): set it to `disabled`.
pub const PRUNE_ANNOTATION: &str = "core.rukpak.io/prune";
/// The value of [`PRUNE_ANNOTATION`] that opts out of pruning.
pub const PRUNE_DISABLED: &str = "disabled";

/// The objects of `previous` that `desired` no longer contains, in reverse apply order
/// (workloads before the RBAC and namespaces they use). A version change of the same
/// object is not a removal.
pub fn stale(previous: &[ObjectKey], desired: &[ObjectKey]) -> Vec<ObjectKey> {
    let mut gone: Vec<ObjectKey> = previous
        .iter()
        .filter(|old| !desired.iter().any(|new| new.same_object(old)))
        .cloned()
        .collect();
    crate::phase::sort_for_apply(&mut gone, |k| k);
    gone.reverse();
    gone
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(group: &str, version: &str, kind: &str, name: &str) -> ObjectKey {
        ObjectKey {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
            namespace: None,
            name: name.into(),
        }
    }

    #[test]
    fn removed_objects_are_stale_in_reverse_apply_order() {
        let previous = vec![
            key("", "v1", "Namespace", "ns"),
            key("apps", "v1", "Deployment", "web"),
            key("", "v1", "ConfigMap", "kept"),
            key("", "v1", "ServiceAccount", "sa"),
        ];
        let desired = vec![key("", "v1", "ConfigMap", "kept")];
        let names: Vec<_> = stale(&previous, &desired)
            .into_iter()
            .map(|k| k.name)
            .collect();
        assert_eq!(names, ["web", "sa", "ns"]);
    }

    #[test]
    fn a_new_api_version_of_the_same_object_is_not_stale() {
        let previous = vec![key("example.com", "v1beta1", "Widget", "w")];
        let desired = vec![key("example.com", "v1", "Widget", "w")];
        assert!(stale(&previous, &desired).is_empty());
    }
}
