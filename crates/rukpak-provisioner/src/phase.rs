//! The order objects are applied in.
//!
//! Namespaces and CRDs come first, because everything else may live in them or be an
//! instance of them; the engine waits for CRDs to be Established before going on. Then
//! configuration (RBAC, ServiceAccounts, ConfigMaps, Secrets, Services, custom resources
//! and any other kind), then workloads, which need all of that to start. Admission
//! webhooks and APIServices go last: registered early, they could point at a server that
//! is not running yet and block the rest of the install.

use crate::object::ObjectKey;

/// An apply phase, in apply order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Phase {
    /// Namespaces and CustomResourceDefinitions.
    Foundations,
    /// RBAC, ServiceAccounts, configuration, Services, custom resources, other kinds.
    Configuration,
    /// Deployments, StatefulSets, DaemonSets, Jobs and other pod owners.
    Workloads,
    /// Admission webhooks, admission policies and APIServices.
    Admission,
}

/// The phase an object belongs to.
pub fn phase_of(key: &ObjectKey) -> Phase {
    match (key.group.as_str(), key.kind.as_str()) {
        ("", "Namespace") | ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            Phase::Foundations
        }
        ("apps", "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet")
        | ("batch", "Job" | "CronJob")
        | ("", "Pod" | "ReplicationController") => Phase::Workloads,
        ("admissionregistration.k8s.io", _) | ("apiregistration.k8s.io", "APIService") => {
            Phase::Admission
        }
        _ => Phase::Configuration,
    }
}

/// Rank inside the configuration phase: identities and their permissions before the
/// configuration that workloads read, so a Deployment never starts without its RBAC.
fn configuration_rank(key: &ObjectKey) -> u8 {
    match (key.group.as_str(), key.kind.as_str()) {
        ("", "ServiceAccount") => 0,
        ("rbac.authorization.k8s.io", "ClusterRole" | "Role") => 1,
        ("rbac.authorization.k8s.io", "ClusterRoleBinding" | "RoleBinding") => 2,
        ("", "Secret" | "ConfigMap") => 3,
        ("", "Service") => 4,
        _ => 5,
    }
}

/// Sorts objects into apply order: by phase, then rank, then key (deterministic).
pub fn sort_for_apply<T>(items: &mut [T], key: impl Fn(&T) -> &ObjectKey) {
    items.sort_by(|a, b| {
        let (a, b) = (key(a), key(b));
        (phase_of(a), configuration_rank(a), a).cmp(&(phase_of(b), configuration_rank(b), b))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(group: &str, kind: &str, name: &str) -> ObjectKey {
        ObjectKey {
            group: group.into(),
            version: "v1".into(),
            kind: kind.into(),
            namespace: None,
            name: name.into(),
        }
    }

    #[test]
    fn objects_sort_into_phases_then_ranks_then_names() {
        let mut keys = vec![
            key(
                "admissionregistration.k8s.io",
                "ValidatingWebhookConfiguration",
                "hook",
            ),
            key("apps", "Deployment", "operator"),
            key("example.com", "Widget", "w"),
            key("", "ConfigMap", "config"),
            key("rbac.authorization.k8s.io", "ClusterRoleBinding", "crb"),
            key("rbac.authorization.k8s.io", "ClusterRole", "cr"),
            key("", "ServiceAccount", "sa"),
            key(
                "apiextensions.k8s.io",
                "CustomResourceDefinition",
                "widgets.example.com",
            ),
            key("", "Namespace", "ns"),
            key("apiregistration.k8s.io", "APIService", "v1.example.com"),
        ];
        sort_for_apply(&mut keys, |k| k);
        let order: Vec<_> = keys.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(
            order,
            [
                "ns",
                "widgets.example.com",
                "sa",
                "cr",
                "crb",
                "config",
                "w",
                "operator",
                "hook",
                "v1.example.com"
            ]
        );
    }

    #[test]
    fn custom_resources_and_unknown_kinds_are_configuration() {
        assert_eq!(
            phase_of(&key("example.com", "Widget", "w")),
            Phase::Configuration
        );
        assert_eq!(phase_of(&key("batch", "CronJob", "c")), Phase::Workloads);
        assert_eq!(
            phase_of(&key(
                "admissionregistration.k8s.io",
                "ValidatingAdmissionPolicy",
                "p"
            )),
            Phase::Admission
        );
    }
}
