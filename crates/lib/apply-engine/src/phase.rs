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

impl Phase {
    /// Every phase, in apply order.
    pub const ALL: [Phase; 4] = [
        Phase::Foundations,
        Phase::Configuration,
        Phase::Workloads,
        Phase::Admission,
    ];

    /// Its place in apply order, from 1.
    pub fn number(self) -> usize {
        Self::ALL.iter().position(|p| *p == self).unwrap_or(0) + 1
    }

    /// What it holds, in a few words (for status messages).
    pub fn describe(self) -> &'static str {
        match self {
            Phase::Foundations => "namespaces and CRDs",
            Phase::Configuration => "RBAC, configuration and custom resources",
            Phase::Workloads => "workloads",
            Phase::Admission => "webhooks and API services",
        }
    }
}

/// The step an apply is on, reported while it runs (see [`crate::apply::Applier::with_progress`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApplyStep {
    /// Collisions, CRD upgrade safety and a dry run of every write, before the first one.
    Checking {
        /// How many objects the bundle has.
        objects: usize,
    },
    /// Writing the objects of one phase.
    Writing {
        /// The phase.
        phase: Phase,
        /// How many objects it has.
        objects: usize,
    },
    /// Waiting for the bundle's CRDs to be Established.
    WaitingForCrds {
        /// How many.
        crds: usize,
    },
    /// Waiting for the servers behind webhooks and API services before registering them.
    WaitingForBackends {
        /// How many Services they call.
        services: usize,
    },
    /// The objects of earlier phases do not pass their probes yet; the phase waits.
    WaitingForProbes {
        /// The phase that waits.
        phase: Phase,
        /// How many objects it waits for.
        objects: usize,
    },
    /// Removing what the previous Bundle had and this one does not.
    Pruning {
        /// How many objects.
        objects: usize,
    },
}

impl std::fmt::Display for ApplyStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let plural = |n: usize| if n == 1 { "" } else { "s" };
        match self {
            Self::Checking { objects } => write!(
                f,
                "checking {objects} object{} before the first write (collisions, CRD upgrade safety, dry run)",
                plural(*objects)
            ),
            Self::Writing { phase, objects } => write!(
                f,
                "applying phase {} of {} ({}, {objects} object{})",
                phase.number(),
                Phase::ALL.len(),
                phase.describe(),
                plural(*objects)
            ),
            Self::WaitingForCrds { crds } => write!(
                f,
                "waiting for {crds} CustomResourceDefinition{} to be established",
                plural(*crds)
            ),
            Self::WaitingForBackends { services } => write!(
                f,
                "waiting for the server{} behind {services} webhook Service{} to be ready before registering the webhooks",
                plural(*services),
                plural(*services)
            ),
            Self::WaitingForProbes { phase, objects } => write!(
                f,
                "phase {} of {} ({}) waits for {objects} object{} before it to be ready",
                phase.number(),
                Phase::ALL.len(),
                phase.describe(),
                plural(*objects)
            ),
            Self::Pruning { objects } => write!(
                f,
                "removing {objects} object{} the previous bundle had",
                plural(*objects)
            ),
        }
    }
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

/// Sorts objects into delete order: the reverse of apply order, except that
/// CustomResourceDefinitions go right after the admission phase, before the workloads. A
/// CRD's conversion webhook is served by the bundle's own workload; deleted first, the
/// server would be gone while the API server still calls it for every read and write of
/// the CRD's other versions. Only CRDs without custom resources are deleted, so the
/// workloads need nothing from them.
pub fn sort_for_delete<T>(items: &mut [T], key: impl Fn(&T) -> &ObjectKey) {
    sort_for_apply(items, &key);
    items.reverse();
    // Stable: everything else keeps its reverse apply order.
    items.sort_by_key(|item| {
        let key = key(item);
        match (phase_of(key), is_crd(key)) {
            (Phase::Admission, _) => 0,
            (_, true) => 1,
            _ => 2,
        }
    });
}

/// Whether `key` names a CustomResourceDefinition.
pub(crate) fn is_crd(key: &ObjectKey) -> bool {
    key.group == "apiextensions.k8s.io" && key.kind == "CustomResourceDefinition"
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
    fn deletion_removes_webhooks_then_crds_then_the_rest_in_reverse_ending_with_namespaces() {
        let mut keys = vec![
            key("", "Namespace", "ns"),
            key("apiextensions.k8s.io", "CustomResourceDefinition", "crd"),
            key("", "ServiceAccount", "sa"),
            key("", "Service", "svc"),
            key("apps", "Deployment", "operator"),
            key(
                "admissionregistration.k8s.io",
                "ValidatingWebhookConfiguration",
                "hook",
            ),
        ];
        sort_for_delete(&mut keys, |k| k);
        let kinds: Vec<&str> = keys.iter().map(|k| k.kind.as_str()).collect();
        assert_eq!(
            kinds,
            [
                "ValidatingWebhookConfiguration",
                "CustomResourceDefinition",
                "Deployment",
                "Service",
                "ServiceAccount",
                "Namespace"
            ]
        );
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

    #[test]
    fn steps_read_as_phrases() {
        assert_eq!(
            ApplyStep::Writing {
                phase: Phase::Workloads,
                objects: 1
            }
            .to_string(),
            "applying phase 3 of 4 (workloads, 1 object)"
        );
        assert_eq!(
            ApplyStep::WaitingForCrds { crds: 2 }.to_string(),
            "waiting for 2 CustomResourceDefinitions to be established"
        );
        assert_eq!(Phase::Foundations.number(), 1);
        assert_eq!(Phase::Admission.number(), 4);
    }
}
