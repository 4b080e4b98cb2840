//! Judges the health of applied objects from their live state, with no client and no I/O:
//! the built-in rule per kind (this module) and the declared health checks ([`checks`]: CEL
//! from `spec.healthChecks`) that override them. The apply engine reads the objects and asks.
//!
//! Rules: one per kind, as pure functions over the live object.
//!
//! The engine reads each object it applied (as a [`DynamicObject`], or as raw JSON through
//! [`evaluate_value`]), judges it with [`evaluate`], and folds the verdicts into the
//! BundleDeployment's `Healthy` condition with [`aggregate`].
//!
//! A verdict is one of three ([`Health`]):
//!
//! - *healthy*: the object reached the state its spec asks for;
//! - *progressing*: it has not reached it yet and reports no failure (a rollout under way,
//!   status that describes an older generation, a paused rollout, a suspended Job);
//! - *unhealthy*: it reports a failure (a failed condition, an exceeded progress deadline,
//!   a Deployment that lost availability after its rollout finished, an object being deleted).
//!
//! Both non-healthy verdicts make `Healthy` False; the split only sharpens the message and
//! lets the engine tell "wait" from "someone must act".
//!
//! Rules never wait on signals that some clusters never produce (a LoadBalancer Service's
//! ingress address, a PersistentVolumeClaim bound with `WaitForFirstConsumer`): a health check
//! that can hang forever is a known complaint about other tools (Flux, Argo CD), and such
//! objects would keep a BundleDeployment unhealthy for no fault of its own.

pub mod checks;

use std::fmt;

use kube::core::DynamicObject;
use rukpak_api::conditions::{TYPE_HEALTHY, TYPE_INSTALLED};
use serde_json::Value;

/// How many non-healthy objects [`aggregate`] lists before it summarises the rest.
pub const MAX_LISTED: usize = 10;

/// Longest per-object message [`aggregate`] keeps (in characters), so that a few verbose
/// objects cannot push a condition message towards the API's 32 KiB limit.
pub const MAX_ENTRY_CHARS: usize = 1024;

/// The health verdict for one object, or for a set of objects (see [`aggregate`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Health {
    /// The object reached the state its spec asks for.
    Healthy,
    /// The object has not reached its desired state yet and reports no failure. The message
    /// says what it waits for.
    Progressing(String),
    /// The object reports a failure. The message says what failed, with the object's own
    /// reason and message where it gives them.
    Unhealthy(String),
}

impl Health {
    /// Whether this is [`Health::Healthy`].
    pub fn is_healthy(&self) -> bool {
        matches!(self, Health::Healthy)
    }

    /// The message of a non-healthy verdict; `None` when healthy.
    pub fn message(&self) -> Option<&str> {
        match self {
            Health::Healthy => None,
            Health::Progressing(message) | Health::Unhealthy(message) => Some(message),
        }
    }

    /// The same verdict with another message (a healthy verdict has none and stays as it is).
    pub fn with_message(&self, message: String) -> Health {
        match self {
            Health::Healthy => Health::Healthy,
            Health::Progressing(_) => Health::Progressing(message),
            Health::Unhealthy(_) => Health::Unhealthy(message),
        }
    }

    /// Ordering key for aggregation: the worse verdict sorts first.
    fn severity(&self) -> u8 {
        match self {
            Health::Unhealthy(_) => 0,
            Health::Progressing(_) => 1,
            Health::Healthy => 2,
        }
    }
}

impl fmt::Display for Health {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Health::Healthy => f.write_str("healthy"),
            Health::Progressing(message) => write!(f, "progressing: {message}"),
            Health::Unhealthy(message) => write!(f, "unhealthy: {message}"),
        }
    }
}

/// Judges one live object, as read from the API server.
///
/// The kind comes from the object's `apiVersion`/`kind` (`types`); an object without them is
/// judged by the generic rules only (conditions `Ready`/`Available`).
pub fn evaluate(obj: &DynamicObject) -> Health {
    let (group, kind) = match &obj.types {
        Some(types) => (group_of(&types.api_version), types.kind.as_str()),
        None => ("", ""),
    };
    let object = Object {
        group,
        kind,
        generation: obj.metadata.generation,
        deleting: obj.metadata.deletion_timestamp.is_some(),
        spec: field(&obj.data, "spec"),
        status: field(&obj.data, "status"),
    };
    evaluate_object(&object)
}

/// Judges one live object given as JSON (`apiVersion`, `kind`, `metadata`, `spec`, `status`);
/// the same rules as [`evaluate`], for callers that hold raw JSON.
pub fn evaluate_value(obj: &Value) -> Health {
    let api_version = field(obj, "apiVersion").as_str().unwrap_or_default();
    let metadata = field(obj, "metadata");
    let object = Object {
        group: group_of(api_version),
        kind: field(obj, "kind").as_str().unwrap_or_default(),
        generation: field(metadata, "generation").as_i64(),
        deleting: !field(metadata, "deletionTimestamp").is_null(),
        spec: field(obj, "spec"),
        status: field(obj, "status"),
    };
    evaluate_object(&object)
}

/// A readable reference to an object for health messages: `Deployment etcd-system/etcd-operator`,
/// `ClusterRole admin-extra`, `BundleDeployment.core.rukpak.io child`.
///
/// The group is left out for the core group and the groups Kubernetes ships (`apps`, `batch`,
/// `*.k8s.io`), whose kind names are familiar; custom groups are kept (`kind.group`, as
/// `kubectl get` spells them) because two CRDs may share a kind name.
pub fn display_ref(group: &str, kind: &str, namespace: Option<&str>, name: &str) -> String {
    let builtin = group.is_empty() || !group.contains('.') || group.ends_with(".k8s.io");
    let kind = if builtin {
        kind.to_string()
    } else {
        format!("{kind}.{group}")
    };
    match namespace {
        Some(namespace) if !namespace.is_empty() => format!("{kind} {namespace}/{name}"),
        _ => format!("{kind} {name}"),
    }
}

/// [`display_ref`] for a live object.
pub fn object_ref(obj: &DynamicObject) -> String {
    let (group, kind) = match &obj.types {
        Some(types) => (group_of(&types.api_version), types.kind.as_str()),
        None => ("", ""),
    };
    display_ref(
        group,
        kind,
        obj.metadata.namespace.as_deref(),
        obj.metadata.name.as_deref().unwrap_or_default(),
    )
}

/// Folds per-object verdicts into one verdict for the whole set.
///
/// The set is unhealthy when any object is, else progressing when any object is, else healthy
/// (an empty set is healthy). The message lists every non-healthy object as `<reference>:
/// <message>`, joined with `; `: unhealthy objects first, then progressing ones, each group
/// sorted by reference, so the message is the same for the same inputs in any order. At most
/// [`MAX_LISTED`] objects are listed, then `and N more`; each object's message is cut to
/// [`MAX_ENTRY_CHARS`] characters.
pub fn aggregate(items: impl IntoIterator<Item = (String, Health)>) -> Health {
    let mut failing: Vec<(String, Health)> = items
        .into_iter()
        .filter(|(_, health)| !health.is_healthy())
        .collect();
    if failing.is_empty() {
        return Health::Healthy;
    }
    failing.sort_by(|(a_ref, a), (b_ref, b)| {
        (a.severity(), a_ref, a.message()).cmp(&(b.severity(), b_ref, b.message()))
    });
    let any_unhealthy = failing
        .iter()
        .any(|(_, health)| matches!(health, Health::Unhealthy(_)));

    let mut entries: Vec<String> = failing
        .iter()
        .take(MAX_LISTED)
        .map(|(reference, health)| {
            let message = truncate(health.message().unwrap_or_default(), MAX_ENTRY_CHARS);
            format!("{reference}: {message}")
        })
        .collect();
    if failing.len() > MAX_LISTED {
        entries.push(format!("and {} more", failing.len() - MAX_LISTED));
    }
    let message = entries.join("; ");
    if any_unhealthy {
        Health::Unhealthy(message)
    } else {
        Health::Progressing(message)
    }
}

/// The parts of an object the rules read, whatever form the object came in.
struct Object<'a> {
    group: &'a str,
    kind: &'a str,
    generation: Option<i64>,
    deleting: bool,
    spec: &'a Value,
    status: &'a Value,
}

/// Stands in for absent fields, so rules read missing and null the same way.
static NULL: Value = Value::Null;

fn field<'a>(value: &'a Value, key: &str) -> &'a Value {
    value.get(key).unwrap_or(&NULL)
}

fn int_at(value: &Value, pointer: &str) -> Option<i64> {
    value.pointer(pointer).and_then(Value::as_i64)
}

fn str_at<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The group of an `apiVersion`: `apps/v1` -> `apps`, `v1` -> `` (core).
fn group_of(api_version: &str) -> &str {
    api_version
        .rsplit_once('/')
        .map(|(group, _)| group)
        .unwrap_or_default()
}

fn truncate(message: &str, max_chars: usize) -> String {
    match message.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{}…", &message[..cut]),
        None => message.to_string(),
    }
}

/// One entry of `status.conditions`, with absent fields read as empty.
struct Condition<'a> {
    type_: &'a str,
    status: &'a str,
    reason: &'a str,
    message: &'a str,
    observed_generation: Option<i64>,
}

impl Condition<'_> {
    fn is(&self, status: &str) -> bool {
        self.status == status
    }

    /// `<what> (<reason>): <message>`, leaving out what the condition does not say.
    fn explain(&self, what: &str) -> String {
        let mut text = what.to_string();
        if !self.reason.is_empty() {
            text.push_str(&format!(" ({})", self.reason));
        }
        if !self.message.is_empty() {
            text.push_str(&format!(": {}", self.message));
        }
        text
    }
}

fn condition<'a>(status: &'a Value, type_: &str) -> Option<Condition<'a>> {
    status
        .get("conditions")?
        .as_array()?
        .iter()
        .find(|c| field(c, "type").as_str() == Some(type_))
        .map(|c| Condition {
            type_: field(c, "type").as_str().unwrap_or_default(),
            status: field(c, "status").as_str().unwrap_or_default(),
            reason: field(c, "reason").as_str().unwrap_or_default(),
            message: field(c, "message").as_str().unwrap_or_default(),
            observed_generation: field(c, "observedGeneration").as_i64(),
        })
}

fn evaluate_object(o: &Object<'_>) -> Health {
    if o.kind == "Namespace" && o.group.is_empty() {
        // A terminating Namespace refuses new objects, so everything the bundle puts in it
        // fails; it gets its own message with the namespace controller's reason.
        return namespace(o);
    }
    if o.deleting {
        // The bundle wants the object to exist; one on its way out is not what was applied.
        return Health::Unhealthy("is being deleted".to_string());
    }
    if let Some(stale) = stale_status(o) {
        return stale;
    }
    match (o.group, o.kind) {
        ("apps", "Deployment") => deployment(o),
        ("apps", "StatefulSet") => stateful_set(o),
        ("apps", "DaemonSet") => daemon_set(o),
        ("batch", "Job") => job(o),
        ("apiextensions.k8s.io", "CustomResourceDefinition") => crd(o),
        ("apiregistration.k8s.io", "APIService") => api_service(o),
        (rukpak_api::GROUP, "BundleDeployment") => bundle_deployment(o),
        ("", "Pod") => pod(o),
        ("", "PersistentVolumeClaim") => persistent_volume_claim(o),
        _ => generic(o),
    }
}

/// Status written for an older generation says nothing about the current spec: never call
/// it healthy (or unhealthy) until the object's controller has caught up.
fn stale_status(o: &Object<'_>) -> Option<Health> {
    let observed = field(o.status, "observedGeneration").as_i64()?;
    let generation = o.generation?;
    (observed < generation).then(|| {
        Health::Progressing(format!(
            "waiting for the controller to observe generation {generation} (status describes generation {observed})"
        ))
    })
}

/// The same staleness check for a condition that carries its own `observedGeneration`.
fn stale_condition(o: &Object<'_>, c: &Condition<'_>) -> Option<Health> {
    let observed = c.observed_generation?;
    let generation = o.generation?;
    (observed < generation).then(|| {
        Health::Progressing(format!(
            "{} condition describes generation {observed}, the object is at generation {generation}",
            c.type_
        ))
    })
}

/// Available and rolled out for the current generation, following `kubectl rollout status`;
/// an exceeded progress deadline, or lost availability after the rollout finished, is a
/// failure.
fn deployment(o: &Object<'_>) -> Health {
    if o.status.get("observedGeneration").is_none() {
        return Health::Progressing(
            "waiting for the Deployment controller to report status".to_string(),
        );
    }
    let replicas = int_at(o.spec, "/replicas").unwrap_or(1);
    let updated = int_at(o.status, "/updatedReplicas").unwrap_or(0);
    let total = int_at(o.status, "/replicas").unwrap_or(0);
    let available = int_at(o.status, "/availableReplicas").unwrap_or(0);
    let progressing = condition(o.status, "Progressing");
    let available_condition = condition(o.status, "Available");
    // The target is the larger of the two so that surge replicas also have to be available.
    let target = replicas.max(updated);
    let counts = format!("{available}/{target} replicas available");

    if let Some(p) = progressing
        .as_ref()
        .filter(|p| p.reason == "ProgressDeadlineExceeded")
    {
        let mut message = format!("rollout exceeded its progress deadline ({counts})");
        if !p.message.is_empty() {
            message.push_str(&format!(": {}", p.message));
        }
        return Health::Unhealthy(message);
    }

    let paused = o
        .spec
        .get("paused")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let paused_note = if paused { " (rollout paused)" } else { "" };
    if updated < replicas {
        return Health::Progressing(format!(
            "rollout in progress: {updated} of {replicas} replicas updated{paused_note}"
        ));
    }
    if total > updated {
        return Health::Progressing(format!(
            "rollout in progress: {} old replicas pending termination{paused_note}",
            total - updated
        ));
    }

    let unavailable_reason = available_condition
        .as_ref()
        .filter(|c| c.is("False") && !c.reason.is_empty())
        .map(|c| format!(" ({})", c.reason))
        .unwrap_or_default();
    // The Deployment controller keeps Progressing at NewReplicaSetAvailable once a rollout
    // completes and no longer checks the deadline, so losing availability afterwards (pods
    // crashing, a node gone) would otherwise read as "progressing" forever.
    let rollout_finished = progressing
        .as_ref()
        .is_some_and(|p| p.is("True") && p.reason == "NewReplicaSetAvailable");
    let condition_false = available_condition.as_ref().is_some_and(|c| c.is("False"));
    if available < target || condition_false {
        let message = format!("{counts}{unavailable_reason}");
        return if rollout_finished && condition_false {
            Health::Unhealthy(message)
        } else {
            Health::Progressing(message)
        };
    }
    match available_condition {
        Some(c) if c.is("True") => Health::Healthy,
        Some(c) => Health::Progressing(c.explain(&format!("Available is {}", c.status))),
        None => Health::Progressing("Available condition not reported yet".to_string()),
    }
}

/// Ready and rolled out, following `kubectl rollout status`: for RollingUpdate, the replicas
/// at or above the partition run the update revision; OnDelete updates only when pods are
/// deleted, so only readiness is waited for.
fn stateful_set(o: &Object<'_>) -> Health {
    // kubectl treats an observedGeneration of 0 as "not observed yet" too.
    if int_at(o.status, "/observedGeneration").unwrap_or(0) == 0 {
        return Health::Progressing(
            "waiting for the StatefulSet controller to report status".to_string(),
        );
    }
    let replicas = int_at(o.spec, "/replicas").unwrap_or(1);
    let ready = int_at(o.status, "/readyReplicas").unwrap_or(0);
    let updated = int_at(o.status, "/updatedReplicas").unwrap_or(0);
    if ready < replicas {
        return Health::Progressing(format!("{ready}/{replicas} replicas ready"));
    }
    if str_at(o.spec, "/updateStrategy/type") == "OnDelete" {
        return Health::Healthy;
    }
    if o.spec.pointer("/updateStrategy/rollingUpdate").is_some() {
        let partition = int_at(o.spec, "/updateStrategy/rollingUpdate/partition").unwrap_or(0);
        let target = (replicas - partition).max(0);
        if updated < target {
            let note = if partition > 0 {
                format!(" (partition {partition})")
            } else {
                String::new()
            };
            return Health::Progressing(format!(
                "rollout in progress: {updated} of {target} replicas updated{note}"
            ));
        }
        return Health::Healthy;
    }
    let current_revision = str_at(o.status, "/currentRevision");
    let update_revision = str_at(o.status, "/updateRevision");
    if current_revision != update_revision {
        return Health::Progressing(format!(
            "rollout in progress: {updated} of {replicas} replicas at revision {update_revision}"
        ));
    }
    Health::Healthy
}

/// Every scheduled pod updated (RollingUpdate) and available, following
/// `kubectl rollout status`.
fn daemon_set(o: &Object<'_>) -> Health {
    if o.status.get("observedGeneration").is_none() {
        return Health::Progressing(
            "waiting for the DaemonSet controller to report status".to_string(),
        );
    }
    let desired = int_at(o.status, "/desiredNumberScheduled").unwrap_or(0);
    let updated = int_at(o.status, "/updatedNumberScheduled").unwrap_or(0);
    let available = int_at(o.status, "/numberAvailable").unwrap_or(0);
    // OnDelete never updates running pods by itself; waiting for it would hang.
    if str_at(o.spec, "/updateStrategy/type") != "OnDelete" && updated < desired {
        return Health::Progressing(format!(
            "rollout in progress: {updated} of {desired} pods updated"
        ));
    }
    if available < desired {
        return Health::Progressing(format!("{available}/{desired} pods available"));
    }
    Health::Healthy
}

/// Complete is healthy, Failed (or about to fail) is not, anything else still runs.
fn job(o: &Object<'_>) -> Health {
    if let Some(c) = condition(o.status, "Failed").filter(|c| c.is("True")) {
        return Health::Unhealthy(c.explain("job failed"));
    }
    // FailureTarget precedes Failed while the Job controller terminates the pods.
    if let Some(c) = condition(o.status, "FailureTarget").filter(|c| c.is("True")) {
        return Health::Unhealthy(c.explain("job is failing"));
    }
    if condition(o.status, "Complete").is_some_and(|c| c.is("True")) {
        return Health::Healthy;
    }
    if o.spec.get("suspend").and_then(Value::as_bool) == Some(true) {
        return Health::Progressing("job is suspended".to_string());
    }
    let active = int_at(o.status, "/active").unwrap_or(0);
    let succeeded = int_at(o.status, "/succeeded").unwrap_or(0);
    let failed = int_at(o.status, "/failed").unwrap_or(0);
    let completions = int_at(o.spec, "/completions")
        .map(|c| format!(" of {c}"))
        .unwrap_or_default();
    Health::Progressing(format!(
        "job not complete: {succeeded}{completions} succeeded, {active} active, {failed} failed"
    ))
}

/// Established, with its names accepted (a name conflict keeps it from ever being served).
fn crd(o: &Object<'_>) -> Health {
    if let Some(c) = condition(o.status, "NamesAccepted").filter(|c| c.is("False")) {
        return Health::Unhealthy(c.explain("names not accepted"));
    }
    match condition(o.status, "Established") {
        Some(c) if c.is("True") => Health::Healthy,
        Some(c) => Health::Progressing(c.explain("not established yet")),
        None => Health::Progressing("not established yet".to_string()),
    }
}

/// Available: the aggregator reaches the service behind it.
fn api_service(o: &Object<'_>) -> Health {
    match condition(o.status, "Available") {
        Some(c) if c.is("True") => Health::Healthy,
        Some(c) if c.is("False") => Health::Unhealthy(c.explain("not available")),
        Some(c) => Health::Progressing(c.explain(&format!("Available is {}", c.status))),
        None => Health::Progressing("availability not reported yet".to_string()),
    }
}

/// A child BundleDeployment is healthy when it is both Installed and Healthy; otherwise the
/// message names the failing condition and carries its reason and message, so a wrapper
/// BundleDeployment tells which child failed and why.
fn bundle_deployment(o: &Object<'_>) -> Health {
    for type_ in [TYPE_INSTALLED, TYPE_HEALTHY] {
        let Some(c) = condition(o.status, type_) else {
            return Health::Progressing(format!("{type_} condition not reported yet"));
        };
        if let Some(stale) = stale_condition(o, &c) {
            return stale;
        }
        match c.status {
            "True" => {}
            "False" => return Health::Unhealthy(c.explain(&format!("{type_} is False"))),
            other => return Health::Progressing(c.explain(&format!("{type_} is {other}"))),
        }
    }
    Health::Healthy
}

/// Conditions the namespace controller sets while it cannot finish deleting a namespace.
const NAMESPACE_DELETION_CONDITIONS: [&str; 5] = [
    "NamespaceDeletionDiscoveryFailure",
    "NamespaceDeletionGroupVersionParsingFailure",
    "NamespaceDeletionContentFailure",
    "NamespaceContentRemaining",
    "NamespaceFinalizersRemaining",
];

fn namespace(o: &Object<'_>) -> Health {
    if o.deleting || str_at(o.status, "/phase") == "Terminating" {
        let blocker = NAMESPACE_DELETION_CONDITIONS
            .iter()
            .filter_map(|type_| condition(o.status, type_))
            .find(|c| c.is("True"));
        return Health::Unhealthy(match blocker {
            Some(c) => c.explain("namespace is terminating"),
            None => "namespace is terminating".to_string(),
        });
    }
    Health::Healthy
}

/// Container waiting reasons that will not clear by themselves.
const STUCK_WAITING_REASONS: [&str; 6] = [
    "CrashLoopBackOff",
    "ImagePullBackOff",
    "ErrImagePull",
    "InvalidImageName",
    "CreateContainerConfigError",
    "CreateContainerError",
];

/// Ready, or finished successfully; a failed pod or a container stuck waiting is a failure.
fn pod(o: &Object<'_>) -> Health {
    let phase = str_at(o.status, "/phase");
    match phase {
        "Failed" => {
            let reason = str_at(o.status, "/reason");
            let message = str_at(o.status, "/message");
            let c = Condition {
                type_: "",
                status: "",
                reason,
                message,
                observed_generation: None,
            };
            return Health::Unhealthy(c.explain("pod failed"));
        }
        // A pod that ran to completion (restartPolicy Never/OnFailure) did its job.
        "Succeeded" => return Health::Healthy,
        _ => {}
    }
    let containers = ["/initContainerStatuses", "/containerStatuses"]
        .iter()
        .filter_map(|pointer| o.status.pointer(pointer).and_then(Value::as_array))
        .flatten();
    for container in containers {
        let reason = str_at(container, "/state/waiting/reason");
        if STUCK_WAITING_REASONS.contains(&reason) {
            let c = Condition {
                type_: "",
                status: "",
                reason,
                message: str_at(container, "/state/waiting/message"),
                observed_generation: None,
            };
            let name = str_at(container, "/name");
            return Health::Unhealthy(c.explain(&format!("container {name} is waiting")));
        }
    }
    match condition(o.status, "Ready") {
        Some(c) if c.is("True") => Health::Healthy,
        Some(c) => Health::Progressing(c.explain("not ready")),
        None if phase.is_empty() => Health::Progressing("not scheduled yet".to_string()),
        None => Health::Progressing(format!("not ready (phase {phase})")),
    }
}

/// Only a claim that lost its volume is judged. A Pending claim is not waited for: with
/// `WaitForFirstConsumer` it stays Pending until a pod uses it, which may never happen.
fn persistent_volume_claim(o: &Object<'_>) -> Health {
    if str_at(o.status, "/phase") == "Lost" {
        return Health::Unhealthy("claim lost its volume (phase Lost)".to_string());
    }
    Health::Healthy
}

/// Any other kind: kstatus-style `Stalled`, then `Ready`, else `Available`, else
/// `Reconciling`; a kind without these conditions (ConfigMap, Secret, RBAC, Service...) is
/// healthy once it exists.
fn generic(o: &Object<'_>) -> Health {
    if let Some(c) = condition(o.status, "Stalled").filter(|c| c.is("True")) {
        return Health::Unhealthy(c.explain("stalled"));
    }
    for type_ in ["Ready", "Available"] {
        if let Some(c) = condition(o.status, type_) {
            if let Some(stale) = stale_condition(o, &c) {
                return stale;
            }
            return match c.status {
                "True" => Health::Healthy,
                "False" => Health::Unhealthy(c.explain(&format!("{type_} is False"))),
                other => Health::Progressing(c.explain(&format!("{type_} is {other}"))),
            };
        }
    }
    if let Some(c) = condition(o.status, "Reconciling").filter(|c| c.is("True")) {
        return Health::Progressing(c.explain("reconciling"));
    }
    Health::Healthy
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployment_fixture(
        generation: i64,
        spec_replicas: Option<i64>,
        status: Value,
    ) -> serde_json::Value {
        let mut spec = json!({"selector": {"matchLabels": {"app": "etcd-operator"}}});
        if let Some(replicas) = spec_replicas {
            spec["replicas"] = json!(replicas);
        }
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "etcd-operator", "namespace": "etcd-system", "generation": generation},
            "spec": spec,
            "status": status,
        })
    }

    fn available_deployment_status(generation: i64, replicas: i64) -> Value {
        json!({
            "observedGeneration": generation,
            "replicas": replicas,
            "updatedReplicas": replicas,
            "readyReplicas": replicas,
            "availableReplicas": replicas,
            "conditions": [
                {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
                 "message": "Deployment has minimum availability."},
                {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable",
                 "message": "ReplicaSet \"etcd-operator-5d8f\" has successfully progressed."},
            ],
        })
    }

    fn unhealthy(health: &Health) -> &str {
        match health {
            Health::Unhealthy(message) => message,
            other => panic!("expected Unhealthy, got {other:?}"),
        }
    }

    fn progressing(health: &Health) -> &str {
        match health {
            Health::Progressing(message) => message,
            other => panic!("expected Progressing, got {other:?}"),
        }
    }

    // --- Deployment ---

    #[test]
    fn deployment_available_and_rolled_out_is_healthy() {
        let obj = deployment_fixture(2, Some(3), available_deployment_status(2, 3));
        assert_eq!(evaluate_value(&obj), Health::Healthy);
    }

    #[test]
    fn deployment_without_replicas_defaults_to_one() {
        let mut status = available_deployment_status(1, 1);
        status["availableReplicas"] = json!(0);
        let obj = deployment_fixture(1, None, status);
        assert_eq!(progressing(&evaluate_value(&obj)), "0/1 replicas available");
    }

    #[test]
    fn deployment_scaled_to_zero_is_healthy() {
        let status = json!({
            "observedGeneration": 4,
            "conditions": [
                {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
                {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"},
            ],
        });
        let obj = deployment_fixture(4, Some(0), status);
        assert_eq!(evaluate_value(&obj), Health::Healthy);
    }

    #[test]
    fn deployment_with_stale_observed_generation_is_progressing_even_if_available() {
        let obj = deployment_fixture(3, Some(1), available_deployment_status(2, 1));
        assert_eq!(
            progressing(&evaluate_value(&obj)),
            "waiting for the controller to observe generation 3 (status describes generation 2)"
        );
    }

    #[test]
    fn deployment_without_status_is_progressing() {
        let mut obj = deployment_fixture(1, Some(1), Value::Null);
        obj.as_object_mut().map(|o| o.remove("status"));
        assert_eq!(
            progressing(&evaluate_value(&obj)),
            "waiting for the Deployment controller to report status"
        );
    }

    #[test]
    fn deployment_fresh_install_waiting_for_pods_is_progressing_with_the_available_reason() {
        let status = json!({
            "observedGeneration": 1,
            "replicas": 1,
            "updatedReplicas": 1,
            "unavailableReplicas": 1,
            "conditions": [
                {"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable",
                 "message": "Deployment does not have minimum availability."},
                {"type": "Progressing", "status": "True", "reason": "ReplicaSetUpdated"},
            ],
        });
        let obj = deployment_fixture(1, Some(1), status);
        assert_eq!(
            progressing(&evaluate_value(&obj)),
            "0/1 replicas available (MinimumReplicasUnavailable)"
        );
    }

    #[test]
    fn deployment_losing_availability_after_its_rollout_finished_is_unhealthy() {
        let status = json!({
            "observedGeneration": 1,
            "replicas": 1,
            "updatedReplicas": 1,
            "unavailableReplicas": 1,
            "conditions": [
                {"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable"},
                {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"},
            ],
        });
        let obj = deployment_fixture(1, Some(1), status);
        assert_eq!(
            unhealthy(&evaluate_value(&obj)),
            "0/1 replicas available (MinimumReplicasUnavailable)"
        );
    }

    #[test]
    fn deployment_past_its_progress_deadline_is_unhealthy_with_the_controller_message() {
        let status = json!({
            "observedGeneration": 2,
            "replicas": 3,
            "updatedReplicas": 1,
            "availableReplicas": 1,
            "conditions": [
                {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
                {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
                 "message": "ReplicaSet \"etcd-operator-7c9\" has timed out progressing."},
            ],
        });
        let obj = deployment_fixture(2, Some(2), status);
        assert_eq!(
            unhealthy(&evaluate_value(&obj)),
            "rollout exceeded its progress deadline (1/2 replicas available): ReplicaSet \"etcd-operator-7c9\" has timed out progressing."
        );
    }

    #[test]
    fn deployment_with_too_few_updated_replicas_is_progressing() {
        let mut status = available_deployment_status(2, 3);
        status["updatedReplicas"] = json!(1);
        let obj = deployment_fixture(2, Some(3), status);
        assert_eq!(
            progressing(&evaluate_value(&obj)),
            "rollout in progress: 1 of 3 replicas updated"
        );
    }

    #[test]
    fn deployment_with_old_replicas_left_is_progressing() {
        let mut status = available_deployment_status(2, 2);
        status["replicas"] = json!(3);
        let obj = deployment_fixture(2, Some(2), status);
        assert_eq!(
            progressing(&evaluate_value(&obj)),
            "rollout in progress: 1 old replicas pending termination"
        );
    }

    #[test]
    fn paused_deployment_mid_rollout_is_progressing_and_says_it_is_paused() {
        let mut status = available_deployment_status(2, 2);
        status["updatedReplicas"] = json!(0);
        let mut obj = deployment_fixture(2, Some(2), status);
        obj["spec"]["paused"] = json!(true);
        assert_eq!(
            progressing(&evaluate_value(&obj)),
            "rollout in progress: 0 of 2 replicas updated (rollout paused)"
        );
    }

    #[test]
    fn paused_deployment_with_a_finished_rollout_is_healthy() {
        let mut obj = deployment_fixture(2, Some(2), available_deployment_status(2, 2));
        obj["spec"]["paused"] = json!(true);
        assert_eq!(evaluate_value(&obj), Health::Healthy);
    }

    #[test]
    fn deployment_without_available_condition_is_progressing() {
        let mut status = available_deployment_status(1, 1);
        status["conditions"] = json!([]);
        let obj = deployment_fixture(1, Some(1), status);
        assert_eq!(
            progressing(&evaluate_value(&obj)),
            "Available condition not reported yet"
        );
    }

    #[test]
    fn deployment_read_as_dynamic_object_gets_the_same_verdict() {
        let mut status = available_deployment_status(1, 1);
        status["availableReplicas"] = json!(0);
        let value = deployment_fixture(1, Some(1), status);
        let obj: DynamicObject = serde_json::from_value(value.clone()).unwrap();
        assert_eq!(evaluate(&obj), evaluate_value(&value));
        assert!(!evaluate(&obj).is_healthy());
    }

    // --- StatefulSet ---

    fn stateful_set_fixture(spec: Value, status: Value) -> Value {
        json!({
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": "etcd", "namespace": "etcd-system", "generation": 2},
            "spec": spec,
            "status": status,
        })
    }

    #[test]
    fn stateful_set_rolled_out_is_healthy() {
        let obj = stateful_set_fixture(
            json!({"replicas": 3, "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}}),
            json!({"observedGeneration": 2, "replicas": 3, "readyReplicas": 3, "updatedReplicas": 3,
                   "currentRevision": "etcd-6f9", "updateRevision": "etcd-6f9"}),
        );
        assert_eq!(evaluate_value(&obj), Health::Healthy);
    }

    #[test]
    fn stateful_set_with_unready_replicas_is_progressing() {
        let obj = stateful_set_fixture(
            json!({"replicas": 3}),
            json!({"observedGeneration": 2, "replicas": 3, "readyReplicas": 1, "updatedReplicas": 3}),
        );
        assert_eq!(progressing(&evaluate_value(&obj)), "1/3 replicas ready");
    }

    #[test]
    fn stateful_set_without_observed_generation_is_progressing() {
        let obj = stateful_set_fixture(
            json!({"replicas": 1}),
            json!({"replicas": 1, "readyReplicas": 1}),
        );
        assert_eq!(
            progressing(&evaluate_value(&obj)),
            "waiting for the StatefulSet controller to report status"
        );
        let mut zero = obj.clone();
        zero["metadata"]
            .as_object_mut()
            .map(|m| m.remove("generation"));
        zero["status"]["observedGeneration"] = json!(0);
        assert_eq!(
            progressing(&evaluate_value(&zero)),
            "waiting for the StatefulSet controller to report status"
        );
    }

    #[test]
    fn stateful_set_partitioned_rollout_is_complete_once_replicas_above_the_partition_are_updated()
    {
        let spec = json!({"replicas": 5, "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 3}}});
        let waiting = stateful_set_fixture(
            spec.clone(),
            json!({"observedGeneration": 2, "readyReplicas": 5, "updatedReplicas": 1,
                   "currentRevision": "etcd-1", "updateRevision": "etcd-2"}),
        );
        assert_eq!(
            progressing(&evaluate_value(&waiting)),
            "rollout in progress: 1 of 2 replicas updated (partition 3)"
        );
        let done = stateful_set_fixture(
            spec,
            json!({"observedGeneration": 2, "readyReplicas": 5, "updatedReplicas": 2,
                   "currentRevision": "etcd-1", "updateRevision": "etcd-2"}),
        );
        assert_eq!(evaluate_value(&done), Health::Healthy);
    }

    #[test]
    fn stateful_set_without_rolling_update_block_waits_for_the_update_revision() {
        let obj = stateful_set_fixture(
            json!({"replicas": 2}),
            json!({"observedGeneration": 2, "readyReplicas": 2, "updatedReplicas": 1,
                   "currentRevision": "etcd-1", "updateRevision": "etcd-2"}),
        );
        assert_eq!(
            progressing(&evaluate_value(&obj)),
            "rollout in progress: 1 of 2 replicas at revision etcd-2"
        );
    }

    #[test]
    fn stateful_set_on_delete_is_healthy_once_ready_even_with_old_revisions() {
        let obj = stateful_set_fixture(
            json!({"replicas": 2, "updateStrategy": {"type": "OnDelete"}}),
            json!({"observedGeneration": 2, "readyReplicas": 2, "updatedReplicas": 0,
                   "currentRevision": "etcd-1", "updateRevision": "etcd-2"}),
        );
        assert_eq!(evaluate_value(&obj), Health::Healthy);
    }

    // --- DaemonSet ---

    fn daemon_set_fixture(strategy: &str, status: Value) -> Value {
        json!({
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": "node-agent", "namespace": "agents", "generation": 1},
            "spec": {"updateStrategy": {"type": strategy}},
            "status": status,
        })
    }

    #[test]
    fn daemon_set_with_every_pod_updated_and_available_is_healthy() {
        let obj = daemon_set_fixture(
            "RollingUpdate",
            json!({"observedGeneration": 1, "desiredNumberScheduled": 3,
                   "updatedNumberScheduled": 3, "numberAvailable": 3}),
        );
        assert_eq!(evaluate_value(&obj), Health::Healthy);
    }

    #[test]
    fn daemon_set_mid_rollout_is_progressing() {
        let obj = daemon_set_fixture(
            "RollingUpdate",
            json!({"observedGeneration": 1, "desiredNumberScheduled": 3,
                   "updatedNumberScheduled": 2, "numberAvailable": 3}),
        );
        assert_eq!(
            progressing(&evaluate_value(&obj)),
            "rollout in progress: 2 of 3 pods updated"
        );
    }

    #[test]
    fn daemon_set_with_unavailable_pods_is_progressing() {
        let obj = daemon_set_fixture(
            "OnDelete",
            json!({"observedGeneration": 1, "desiredNumberScheduled": 3,
                   "updatedNumberScheduled": 0, "numberAvailable": 1}),
        );
        assert_eq!(progressing(&evaluate_value(&obj)), "1/3 pods available");
    }

    #[test]
    fn daemon_set_on_delete_does_not_wait_for_updated_pods() {
        let obj = daemon_set_fixture(
            "OnDelete",
            json!({"observedGeneration": 1, "desiredNumberScheduled": 3,
                   "updatedNumberScheduled": 0, "numberAvailable": 3}),
        );
        assert_eq!(evaluate_value(&obj), Health::Healthy);
    }

    #[test]
    fn daemon_set_on_no_nodes_is_healthy() {
        let obj = daemon_set_fixture(
            "RollingUpdate",
            json!({"observedGeneration": 1, "desiredNumberScheduled": 0, "numberAvailable": 0}),
        );
        assert_eq!(evaluate_value(&obj), Health::Healthy);
    }

    // --- Job ---

    fn job_fixture(spec: Value, status: Value) -> Value {
        json!({
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "migrate", "namespace": "app", "generation": 1},
            "spec": spec,
            "status": status,
        })
    }

    #[test]
    fn completed_job_is_healthy() {
        let obj = job_fixture(
            json!({"completions": 1}),
            json!({"succeeded": 1, "conditions": [
                {"type": "SuccessCriteriaMet", "status": "True"},
                {"type": "Complete", "status": "True"},
            ]}),
        );
        assert_eq!(evaluate_value(&obj), Health::Healthy);
    }

    #[test]
    fn failed_job_is_unhealthy_with_its_reason_and_message() {
        let obj = job_fixture(
            json!({"backoffLimit": 2}),
            json!({"failed": 3, "conditions": [
                {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
                 "message": "Job has reached the specified backoff limit"},
            ]}),
        );
        assert_eq!(
            unhealthy(&evaluate_value(&obj)),
            "job failed (BackoffLimitExceeded): Job has reached the specified backoff limit"
        );
    }

    #[test]
    fn job_with_failure_target_is_unhealthy_before_failed_is_set() {
        let obj = job_fixture(
            json!({}),
            json!({"conditions": [
                {"type": "FailureTarget", "status": "True", "reason": "DeadlineExceeded",
                 "message": "Job was active longer than specified deadline"},
            ]}),
        );
        assert_eq!(
            unhealthy(&evaluate_value(&obj)),
            "job is failing (DeadlineExceeded): Job was active longer than specified deadline"
        );
    }

    #[test]
    fn running_job_is_progressing_with_counts() {
        let obj = job_fixture(
            json!({"completions": 3}),
            json!({"active": 1, "succeeded": 1, "failed": 1}),
        );
        assert_eq!(
            progressing(&evaluate_value(&obj)),
            "job not complete: 1 of 3 succeeded, 1 active, 1 failed"
        );
    }

    #[test]
    fn suspended_job_is_progressing_and_says_so() {
        let obj = job_fixture(
            json!({"suspend": true}),
            json!({"conditions": [{"type": "Suspended", "status": "True"}]}),
        );
        assert_eq!(progressing(&evaluate_value(&obj)), "job is suspended");
    }

    // --- CustomResourceDefinition ---

    fn crd_fixture(conditions: Value) -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "etcdclusters.etcd.database.coreos.com", "generation": 1},
            "spec": {},
            "status": {"conditions": conditions},
        })
    }

    #[test]
    fn established_crd_is_healthy() {
        let obj = crd_fixture(json!([
            {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts"},
            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted"},
        ]));
        assert_eq!(evaluate_value(&obj), Health::Healthy);
    }

    #[test]
    fn crd_not_yet_established_is_progressing() {
        let obj = crd_fixture(json!([
            {"type": "Established", "status": "False", "reason": "Installing",
             "message": "the initial names have been accepted"},
        ]));
        assert_eq!(
            progressing(&evaluate_value(&obj)),
            "not established yet (Installing): the initial names have been accepted"
        );
    }

    #[test]
    fn crd_with_rejected_names_is_unhealthy() {
        let obj = crd_fixture(json!([
            {"type": "NamesAccepted", "status": "False", "reason": "MultipleNamesConflict",
             "message": "\"etcd\" is already in use"},
            {"type": "Established", "status": "False", "reason": "NotAccepted"},
        ]));
        assert_eq!(
            unhealthy(&evaluate_value(&obj)),
            "names not accepted (MultipleNamesConflict): \"etcd\" is already in use"
        );
    }

    #[test]
    fn crd_without_conditions_is_progressing() {
        let obj = crd_fixture(json!([]));
        assert_eq!(progressing(&evaluate_value(&obj)), "not established yet");
    }

    // --- APIService ---

    fn api_service_fixture(conditions: Value) -> Value {
        json!({
            "apiVersion": "apiregistration.k8s.io/v1",
            "kind": "APIService",
            "metadata": {"name": "v1beta1.metrics.k8s.io"},
            "spec": {"group": "metrics.k8s.io", "version": "v1beta1"},
            "status": {"conditions": conditions},
        })
    }

    #[test]
    fn available_api_service_is_healthy() {
        let obj = api_service_fixture(
            json!([{"type": "Available", "status": "True", "reason": "Passed"}]),
        );
        assert_eq!(evaluate_value(&obj), Health::Healthy);
    }

    #[test]
    fn unavailable_api_service_is_unhealthy_with_reason() {
        let obj = api_service_fixture(json!([
            {"type": "Available", "status": "False", "reason": "MissingEndpoints",
             "message": "endpoints for service/metrics-server in \"kube-system\" have no addresses"},
        ]));
        assert_eq!(
            unhealthy(&evaluate_value(&obj)),
            "not available (MissingEndpoints): endpoints for service/metrics-server in \"kube-system\" have no addresses"
        );
    }

    #[test]
    fn api_service_without_status_is_progressing() {
        let obj = api_service_fixture(json!([]));
        assert_eq!(
            progressing(&evaluate_value(&obj)),
            "availability not reported yet"
        );
    }

    // --- child BundleDeployment ---

    fn bundle_deployment_fixture(generation: i64, status: Value) -> Value {
        json!({
            "apiVersion": "core.rukpak.io/v1alpha1",
            "kind": "BundleDeployment",
            "metadata": {"name": "etcd-operator", "generation": generation},
            "spec": {"provisionerClassName": "core-rukpak-io-plain"},
            "status": status,
        })
    }

    #[test]
    fn child_bundle_deployment_installed_and_healthy_is_healthy() {
        let obj = bundle_deployment_fixture(
            2,
            json!({"observedGeneration": 2, "conditions": [
                {"type": "Installed", "status": "True", "reason": "InstallationSucceeded", "observedGeneration": 2},
                {"type": "Healthy", "status": "True", "reason": "Healthy", "observedGeneration": 2},
            ]}),
        );
        assert_eq!(evaluate_value(&obj), Health::Healthy);
    }

    #[test]
    fn child_bundle_deployment_that_failed_to_install_names_the_installed_condition() {
        let obj = bundle_deployment_fixture(
            1,
            json!({"observedGeneration": 1, "conditions": [
                {"type": "Installed", "status": "False", "reason": "InstallFailed",
                 "message": "failed to apply Deployment etcd-system/etcd-operator: forbidden"},
                {"type": "Healthy", "status": "False", "reason": "InstallationStatusFalse"},
            ]}),
        );
        assert_eq!(
            unhealthy(&evaluate_value(&obj)),
            "Installed is False (InstallFailed): failed to apply Deployment etcd-system/etcd-operator: forbidden"
        );
    }

    #[test]
    fn child_bundle_deployment_unhealthy_message_is_propagated() {
        let obj = bundle_deployment_fixture(
            1,
            json!({"observedGeneration": 1, "conditions": [
                {"type": "Installed", "status": "True", "reason": "InstallationSucceeded"},
                {"type": "Healthy", "status": "False", "reason": "Unhealthy",
                 "message": "Deployment etcd-system/etcd-operator: 0/1 replicas available (MinimumReplicasUnavailable)"},
            ]}),
        );
        let health = evaluate_value(&obj);
        let wrapped = aggregate([(
            display_ref("core.rukpak.io", "BundleDeployment", None, "etcd-operator"),
            health,
        )]);
        assert_eq!(
            unhealthy(&wrapped),
            "BundleDeployment.core.rukpak.io etcd-operator: Healthy is False (Unhealthy): Deployment etcd-system/etcd-operator: 0/1 replicas available (MinimumReplicasUnavailable)"
        );
    }

    #[test]
    fn child_bundle_deployment_with_stale_status_is_progressing() {
        let obj = bundle_deployment_fixture(
            3,
            json!({"observedGeneration": 2, "conditions": [
                {"type": "Installed", "status": "True", "reason": "InstallationSucceeded"},
                {"type": "Healthy", "status": "True", "reason": "Healthy"},
            ]}),
        );
        assert!(progressing(&evaluate_value(&obj)).contains("observe generation 3"));
    }

    #[test]
    fn child_bundle_deployment_with_a_stale_condition_is_progressing() {
        let obj = bundle_deployment_fixture(
            3,
            json!({"conditions": [
                {"type": "Installed", "status": "True", "reason": "InstallationSucceeded", "observedGeneration": 3},
                {"type": "Healthy", "status": "True", "reason": "Healthy", "observedGeneration": 2},
            ]}),
        );
        assert_eq!(
            progressing(&evaluate_value(&obj)),
            "Healthy condition describes generation 2, the object is at generation 3"
        );
    }

    #[test]
    fn child_bundle_deployment_without_conditions_is_progressing() {
        let obj = bundle_deployment_fixture(1, json!({}));
        assert_eq!(
            progressing(&evaluate_value(&obj)),
            "Installed condition not reported yet"
        );
    }

    // --- Namespace, Pod, PVC, deletion ---

    #[test]
    fn terminating_namespace_is_unhealthy_with_the_blocking_condition() {
        let obj = json!({
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "etcd-system", "deletionTimestamp": "2024-05-01T10:00:00Z"},
            "status": {"phase": "Terminating", "conditions": [
                {"type": "NamespaceContentRemaining", "status": "False", "reason": "ContentRemoved"},
                {"type": "NamespaceFinalizersRemaining", "status": "True", "reason": "SomeFinalizersRemain",
                 "message": "Some content in the namespace has finalizers remaining: example.com/cleanup in 1 resource instances"},
            ]},
        });
        assert_eq!(
            unhealthy(&evaluate_value(&obj)),
            "namespace is terminating (SomeFinalizersRemain): Some content in the namespace has finalizers remaining: example.com/cleanup in 1 resource instances"
        );
    }

    #[test]
    fn active_namespace_is_healthy() {
        let obj = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"},
                         "status": {"phase": "Active"}});
        assert_eq!(evaluate_value(&obj), Health::Healthy);
    }

    #[test]
    fn object_being_deleted_is_unhealthy() {
        let obj = json!({"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"name": "cfg", "namespace": "a", "deletionTimestamp": "2024-05-01T10:00:00Z",
                                      "finalizers": ["example.com/keep"]}});
        assert_eq!(unhealthy(&evaluate_value(&obj)), "is being deleted");
    }

    fn pod_fixture(status: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "a"},
               "spec": {"containers": [{"name": "main", "image": "busybox"}]}, "status": status})
    }

    #[test]
    fn ready_pod_is_healthy() {
        let obj = pod_fixture(
            json!({"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}),
        );
        assert_eq!(evaluate_value(&obj), Health::Healthy);
    }

    #[test]
    fn failed_pod_is_unhealthy() {
        let obj = pod_fixture(json!({"phase": "Failed", "reason": "Evicted",
                                     "message": "The node was low on resource: memory."}));
        assert_eq!(
            unhealthy(&evaluate_value(&obj)),
            "pod failed (Evicted): The node was low on resource: memory."
        );
    }

    #[test]
    fn crash_looping_pod_is_unhealthy() {
        let obj = pod_fixture(json!({
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "False", "reason": "ContainersNotReady"}],
            "containerStatuses": [{"name": "main", "ready": false, "restartCount": 5,
                "state": {"waiting": {"reason": "CrashLoopBackOff",
                                      "message": "back-off 2m40s restarting failed container"}}}],
        }));
        assert_eq!(
            unhealthy(&evaluate_value(&obj)),
            "container main is waiting (CrashLoopBackOff): back-off 2m40s restarting failed container"
        );
    }

    #[test]
    fn starting_pod_is_progressing() {
        let obj = pod_fixture(json!({"phase": "Pending", "conditions": [
            {"type": "Ready", "status": "False", "reason": "ContainersNotReady",
             "message": "containers with unready status: [main]"}]}));
        assert_eq!(
            progressing(&evaluate_value(&obj)),
            "not ready (ContainersNotReady): containers with unready status: [main]"
        );
    }

    #[test]
    fn succeeded_pod_is_healthy() {
        let obj = pod_fixture(
            json!({"phase": "Succeeded", "conditions": [{"type": "Ready", "status": "False"}]}),
        );
        assert_eq!(evaluate_value(&obj), Health::Healthy);
    }

    #[test]
    fn pending_claim_is_not_waited_for_but_a_lost_claim_is_unhealthy() {
        let pending = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                             "metadata": {"name": "data", "namespace": "a"}, "status": {"phase": "Pending"}});
        assert_eq!(evaluate_value(&pending), Health::Healthy);
        let lost = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                          "metadata": {"name": "data", "namespace": "a"}, "status": {"phase": "Lost"}});
        assert_eq!(
            unhealthy(&evaluate_value(&lost)),
            "claim lost its volume (phase Lost)"
        );
    }

    // --- generic rules ---

    #[test]
    fn kinds_without_conditions_are_healthy() {
        for (api_version, kind) in [
            ("v1", "ConfigMap"),
            ("v1", "Secret"),
            ("v1", "ServiceAccount"),
            ("v1", "Service"),
            ("rbac.authorization.k8s.io/v1", "ClusterRole"),
            ("rbac.authorization.k8s.io/v1", "RoleBinding"),
        ] {
            let obj = json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": "x", "namespace": "a"}});
            assert_eq!(evaluate_value(&obj), Health::Healthy, "{kind}");
        }
    }

    #[test]
    fn load_balancer_service_without_an_address_is_healthy() {
        let obj = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "lb", "namespace": "a"},
                         "spec": {"type": "LoadBalancer"}, "status": {"loadBalancer": {}}});
        assert_eq!(evaluate_value(&obj), Health::Healthy);
    }

    fn custom_resource(generation: i64, status: Value) -> Value {
        json!({"apiVersion": "etcd.database.coreos.com/v1beta2", "kind": "EtcdCluster",
               "metadata": {"name": "example", "namespace": "etcd-system", "generation": generation},
               "spec": {"size": 3}, "status": status})
    }

    #[test]
    fn custom_resource_with_ready_true_is_healthy() {
        let obj = custom_resource(
            1,
            json!({"conditions": [{"type": "Ready", "status": "True"}]}),
        );
        assert_eq!(evaluate_value(&obj), Health::Healthy);
    }

    #[test]
    fn custom_resource_with_ready_false_is_unhealthy_with_reason_and_message() {
        let obj = custom_resource(
            1,
            json!({"conditions": [{"type": "Ready", "status": "False", "reason": "QuorumLost",
                                   "message": "2 of 3 members are down"}]}),
        );
        assert_eq!(
            unhealthy(&evaluate_value(&obj)),
            "Ready is False (QuorumLost): 2 of 3 members are down"
        );
    }

    #[test]
    fn custom_resource_with_ready_unknown_is_progressing() {
        let obj = custom_resource(
            1,
            json!({"conditions": [{"type": "Ready", "status": "Unknown", "reason": "Reconciling"}]}),
        );
        assert_eq!(
            progressing(&evaluate_value(&obj)),
            "Ready is Unknown (Reconciling)"
        );
    }

    #[test]
    fn custom_resource_with_only_available_false_is_unhealthy() {
        let obj = custom_resource(
            1,
            json!({"conditions": [{"type": "Available", "status": "False", "reason": "NoMembers"}]}),
        );
        assert_eq!(
            unhealthy(&evaluate_value(&obj)),
            "Available is False (NoMembers)"
        );
    }

    #[test]
    fn ready_condition_wins_over_available() {
        let obj = custom_resource(
            1,
            json!({"conditions": [
                {"type": "Available", "status": "False"},
                {"type": "Ready", "status": "True"},
            ]}),
        );
        assert_eq!(evaluate_value(&obj), Health::Healthy);
    }

    #[test]
    fn custom_resource_with_stale_observed_generation_is_never_healthy() {
        let obj = custom_resource(
            5,
            json!({"observedGeneration": 4, "conditions": [{"type": "Ready", "status": "True"}]}),
        );
        assert!(progressing(&evaluate_value(&obj)).starts_with("waiting for the controller"));
    }

    #[test]
    fn custom_resource_with_a_stale_ready_condition_is_progressing() {
        let obj = custom_resource(
            5,
            json!({"conditions": [{"type": "Ready", "status": "True", "observedGeneration": 4}]}),
        );
        assert_eq!(
            progressing(&evaluate_value(&obj)),
            "Ready condition describes generation 4, the object is at generation 5"
        );
    }

    #[test]
    fn stalled_custom_resource_is_unhealthy() {
        let obj = custom_resource(
            1,
            json!({"conditions": [{"type": "Stalled", "status": "True", "reason": "InvalidSpec",
                                   "message": "size must be odd"}]}),
        );
        assert_eq!(
            unhealthy(&evaluate_value(&obj)),
            "stalled (InvalidSpec): size must be odd"
        );
    }

    #[test]
    fn reconciling_custom_resource_without_ready_is_progressing() {
        let obj = custom_resource(
            1,
            json!({"conditions": [{"type": "Reconciling", "status": "True"}]}),
        );
        assert_eq!(progressing(&evaluate_value(&obj)), "reconciling");
    }

    #[test]
    fn object_without_type_information_uses_generic_rules() {
        let obj: DynamicObject = serde_json::from_value(json!({
            "metadata": {"name": "x"},
            "status": {"conditions": [{"type": "Ready", "status": "False", "reason": "Broken"}]},
        }))
        .unwrap();
        assert_eq!(unhealthy(&evaluate(&obj)), "Ready is False (Broken)");
    }

    // --- references and aggregation ---

    #[test]
    fn references_leave_out_builtin_groups_and_keep_custom_ones() {
        assert_eq!(
            display_ref("apps", "Deployment", Some("etcd-system"), "etcd-operator"),
            "Deployment etcd-system/etcd-operator"
        );
        assert_eq!(
            display_ref("rbac.authorization.k8s.io", "ClusterRole", None, "admin"),
            "ClusterRole admin"
        );
        assert_eq!(
            display_ref(
                "etcd.database.coreos.com",
                "EtcdCluster",
                Some("etcd-system"),
                "example"
            ),
            "EtcdCluster.etcd.database.coreos.com etcd-system/example"
        );
        let obj: DynamicObject = serde_json::from_value(deployment_fixture(
            1,
            Some(1),
            available_deployment_status(1, 1),
        ))
        .unwrap();
        assert_eq!(object_ref(&obj), "Deployment etcd-system/etcd-operator");
    }

    #[test]
    fn aggregate_of_nothing_or_only_healthy_objects_is_healthy() {
        assert_eq!(aggregate(Vec::new()), Health::Healthy);
        assert_eq!(
            aggregate([("ConfigMap a/b".to_string(), Health::Healthy)]),
            Health::Healthy
        );
    }

    #[test]
    fn aggregate_is_progressing_when_nothing_failed() {
        let health = aggregate([
            ("ConfigMap a/b".to_string(), Health::Healthy),
            (
                "Deployment a/web".to_string(),
                Health::Progressing("1/2 replicas available".to_string()),
            ),
        ]);
        assert_eq!(
            health,
            Health::Progressing("Deployment a/web: 1/2 replicas available".to_string())
        );
    }

    #[test]
    fn aggregate_lists_unhealthy_first_then_sorted_by_reference_in_any_input_order() {
        let items = vec![
            (
                "StatefulSet a/db".to_string(),
                Health::Progressing("1/3 replicas ready".to_string()),
            ),
            (
                "Job a/migrate".to_string(),
                Health::Unhealthy("job failed (BackoffLimitExceeded)".to_string()),
            ),
            ("ConfigMap a/cfg".to_string(), Health::Healthy),
            (
                "Deployment a/api".to_string(),
                Health::Progressing("0/1 replicas available".to_string()),
            ),
        ];
        let expected = Health::Unhealthy(
            "Job a/migrate: job failed (BackoffLimitExceeded); Deployment a/api: 0/1 replicas available; StatefulSet a/db: 1/3 replicas ready"
                .to_string(),
        );
        let mut reversed = items.clone();
        reversed.reverse();
        assert_eq!(aggregate(items), expected);
        assert_eq!(aggregate(reversed), expected);
    }

    #[test]
    fn aggregate_truncates_after_ten_objects() {
        let items: Vec<(String, Health)> = (0..13)
            .map(|i| {
                (
                    format!("ConfigMap a/cm-{i:02}"),
                    Health::Unhealthy("is being deleted".to_string()),
                )
            })
            .collect();
        let message = unhealthy(&aggregate(items)).to_string();
        assert!(message.starts_with("ConfigMap a/cm-00: is being deleted; "));
        assert!(message.contains("ConfigMap a/cm-09: is being deleted; and 3 more"));
        assert!(!message.contains("cm-10"));
        assert!(message.ends_with("and 3 more"));
    }

    #[test]
    fn aggregate_cuts_very_long_messages() {
        let long = "é".repeat(MAX_ENTRY_CHARS + 50);
        let health = aggregate([("Pod a/p".to_string(), Health::Unhealthy(long))]);
        let message = unhealthy(&health);
        assert_eq!(
            message.chars().count(),
            "Pod a/p: ".len() + MAX_ENTRY_CHARS + 1
        );
        assert!(message.ends_with('…'));
    }

    #[test]
    fn health_message_and_display_describe_the_verdict() {
        let health = Health::Progressing("1/3 replicas ready".to_string());
        assert_eq!(health.message(), Some("1/3 replicas ready"));
        assert_eq!(health.to_string(), "progressing: 1/3 replicas ready");
        assert_eq!(Health::Healthy.message(), None);
        assert!(Health::Healthy.is_healthy());
        assert!(!health.is_healthy());
    }
}
