//! The applier: ordered server-side apply of a bundle's objects for one owner, with
//! collision protection and CRD upgrade safety checked before the first write, an
//! inventory of what was applied, pruning of what a pivot removed, and a deletion path
//! that never destroys user data. [`Applier::apply`] runs the steps of its modules in
//! order:
//!
//! - `plan`: kinds resolved, live copies read, `preflight` (pure) decides or refuses;
//! - `write`: dry runs, the foundations, the rest in phases, pruning, undo on failure;
//! - `wait`: CRDs Established, webhook and API service servers ready, phase probes;
//! - `delete`: deletion and release on uninstall, keeping user data.

use std::collections::HashMap;
use std::time::Duration;

use kube::api::{ApiResource, DynamicObject, PatchParams};
use kube::discovery::ApiCapabilities;
use kube::{Api, Client};
use rukpak_api::{CollisionProtection, InventoryEntry};

use health::Health;
use health::checks::CompiledChecks;

use crate::collision::Collision;
use crate::crd_safety;
use crate::drift::DriftWatches;
use crate::kinds::KindCache;
use crate::object::ObjectKey;
use crate::phase::{ApplyStep, Phase};

mod delete;
mod plan;
mod wait;
mod write;

use delete::*;
use plan::*;
use wait::*;

/// On an object: apply it only where the cluster serves its kind (e.g. a ServiceMonitor
/// where Prometheus is installed); elsewhere it is skipped, reported in status, and applied
/// once a CRD of its group appears.
pub const OPTIONAL_ANNOTATION: &str = "core.rukpak.io/optional";

/// How long to wait for a CRD of the bundle to become Established.
const CRD_ESTABLISH_TIMEOUT: Duration = Duration::from_secs(60);
/// How long one apply waits for the servers behind its webhooks and API services before
/// giving up until the next attempt.
const BACKEND_READY_TIMEOUT: Duration = Duration::from_secs(60);

/// A failed apply. Nothing after the failing step was written.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// A kind is not served by the API server and no CRD in the bundle defines it.
    #[error("failed to find kind {kind} in API group version {api_version}: is its CRD installed?")]
    UnknownKind {
        /// The object's apiVersion.
        api_version: String,
        /// The object's kind.
        kind: String,
    },
    /// Discovery failed for another reason.
    #[error("failed to discover {api_version} {kind}")]
    Discovery {
        /// The object's apiVersion.
        api_version: String,
        /// The object's kind.
        kind: String,
        /// Why.
        #[source]
        source: kube::Error,
    },
    /// Existing objects may not be taken over; nothing was written.
    #[error("{}", join_lines(.0))]
    Collisions(Vec<Collision>),
    /// CRD updates would break existing custom resources; nothing was written.
    #[error("unsafe CRD upgrade: {}", join_lines(.0))]
    UnsafeCrdUpgrade(Vec<crd_safety::Violation>),
    /// The API server refused one object.
    #[error("failed to apply {object}")]
    Apply {
        /// The object.
        object: ObjectKey,
        /// Why.
        #[source]
        source: kube::Error,
    },
    /// Reading an object failed.
    #[error("failed to read {object}")]
    Read {
        /// The object.
        object: ObjectKey,
        /// Why.
        #[source]
        source: kube::Error,
    },
    /// A CRD of the bundle did not become Established in time.
    #[error("CRD {name} did not become Established within {timeout:?}")]
    CrdNotEstablished {
        /// CRD name.
        name: String,
        /// How long we waited.
        timeout: Duration,
    },
    /// The servers behind the bundle's webhooks or API services are not ready, so those
    /// were not registered (a webhook without its server can block writes cluster-wide).
    #[error(
        "webhooks and API services are not registered until their servers are ready, and after {} s: {}",
        .timeout.as_secs(),
        join_lines(.waiting)
    )]
    BackendsNotReady {
        /// What is not ready, as sentences.
        waiting: Vec<String>,
        /// How long we waited.
        timeout: Duration,
    },
    /// Deleting an object failed.
    #[error("failed to delete {object}")]
    Delete {
        /// The object.
        object: ObjectKey,
        /// Why.
        #[source]
        source: kube::Error,
    },
}

fn join_lines<T: std::fmt::Display>(items: &[T]) -> String {
    items
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

impl ApplyError {
    /// Whether retrying without a spec or content change cannot help.
    pub fn is_terminal(&self) -> bool {
        match self {
            Self::Collisions(_) | Self::UnsafeCrdUpgrade(_) | Self::UnknownKind { .. } => true,
            Self::Apply { source, .. } => is_client_error(source),
            _ => false,
        }
    }
}

/// A 4xx other than conflicts and throttling: the request itself is wrong.
fn is_client_error(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(status) if (400..500).contains(&status.code) && status.code != 409 && status.code != 429)
}

fn is_not_found(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(status) if status.code == 404)
}

/// What one BundleDeployment wants applied.
#[derive(Debug, Clone)]
pub struct ApplyRequest {
    /// Name of the BundleDeployment.
    pub owner: String,
    /// The bundle's objects.
    pub objects: Vec<DynamicObject>,
    /// Namespace for namespaced objects that name none.
    pub install_namespace: Option<String>,
    /// Policy for objects that already exist.
    pub collision_protection: CollisionProtection,
    /// What the previous apply recorded, for pruning.
    pub previous_inventory: Vec<InventoryEntry>,
    /// Declared health checks (`spec.healthChecks`): probes between phases, overriding the
    /// built-in rules for the kinds they select.
    pub health_checks: std::sync::Arc<CompiledChecks>,
    /// Objects the caller read moments ago and found missing (the install namespace): not
    /// read again.
    pub absent: Vec<ObjectKey>,
    /// This revision is installed already and the apply repairs drift. Then a phase whose
    /// objects are all live and unchanged is not held back by the probes before it: holding
    /// back what is already there protects nothing, and would report an installed revision as
    /// failing to install when, say, its Deployment loses a pod (its health says that).
    pub installed_already: bool,
}

/// What an apply did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ApplyReport {
    /// Every object of the bundle, as applied (namespaces defaulted), in apply order.
    pub inventory: Vec<InventoryEntry>,
    /// Objects patched because they were missing or had drifted.
    pub written: Vec<ObjectKey>,
    /// The objects of `written` that did not exist before: what a refused apply removes.
    pub created: Vec<ObjectKey>,
    /// The objects of `written` as the API server returned them from the write: fresher
    /// than any watch, for the health verdict of the same reconcile.
    pub after_write: HashMap<ObjectKey, DynamicObject>,
    /// Objects pruned because the bundle no longer has them.
    pub pruned: Vec<ObjectKey>,
    /// Objects that left the bundle but were kept, with the reason (opt-out annotation, a
    /// CRD that still has custom resources).
    pub kept: Vec<(ObjectKey, String)>,
    /// Optional objects not applied because the cluster does not serve their kind.
    pub skipped: Vec<ObjectKey>,
    /// Set when the apply stopped before a phase because objects of earlier phases do not
    /// pass their probes yet; the next apply goes on from there. Nothing was pruned, and
    /// `inventory` holds what was written and what the previous revision had.
    pub waiting: Option<PhaseWait>,
}

/// A phase held back by the probes of the objects before it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhaseWait {
    /// The phase not written yet.
    pub next: Phase,
    /// The objects of earlier phases that do not pass, with their verdicts.
    pub objects: Vec<(ObjectKey, Health)>,
}

impl PhaseWait {
    /// Whether a probe reports a failure (rather than "not ready yet").
    pub fn failed(&self) -> bool {
        self.objects
            .iter()
            .any(|(_, health)| matches!(health, Health::Unhealthy(_)))
    }

    /// A sentence naming the phase and what it waits for.
    pub fn message(&self) -> String {
        let verdict = health::aggregate(self.objects.iter().map(|(key, health)| {
            (
                health::display_ref(&key.group, &key.kind, key.namespace.as_deref(), &key.name),
                health.clone(),
            )
        }));
        format!(
            "phase {} of {} ({}) waits for {}",
            self.next.number(),
            Phase::ALL.len(),
            self.next.describe(),
            verdict.message().unwrap_or("its probes"),
        )
    }
}

/// What applying would do ([`Applier::review`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Review {
    /// Every object of the bundle.
    pub objects: Vec<ReviewedObject>,
    /// Why applying would fail, as sentences.
    pub refused: Vec<String>,
}

/// One object of a review.
#[derive(Debug, Clone, PartialEq)]
pub struct ReviewedObject {
    /// Which object.
    pub key: ObjectKey,
    /// The object as it would be applied.
    pub desired: serde_json::Value,
    /// The object as it is, if it exists.
    pub live: Option<serde_json::Value>,
    /// Whether applying would write it.
    pub differs: bool,
}

/// What deleting a BundleDeployment's objects did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeleteReport {
    /// Objects deleted.
    pub deleted: Vec<ObjectKey>,
    /// Objects left in place, with the reason.
    pub orphaned: Vec<(ObjectKey, String)>,
}

/// What one apply learned of kinds, by (group, version, kind); `None` when the kind is not
/// served (yet: a CRD of the bundle may define it).
type KindsSeen = HashMap<(String, String, String), Option<(ApiResource, ApiCapabilities)>>;

/// One object ready to apply.
struct Resolved {
    key: ObjectKey,
    resource: ApiResource,
    object: DynamicObject,
}

/// Applies objects through one client (the provisioner's own, or one impersonating the
/// BundleDeployment's ServiceAccount).
#[derive(Clone)]
pub struct Applier {
    client: Client,
    /// Reads the state of what was applied (Deployment availability, Service endpoints)
    /// to decide when webhooks may be registered; the provisioner's own identity, since a
    /// tenant's account need not be allowed to read endpoints.
    observer: Client,
    kinds: std::sync::Arc<KindCache>,
    /// What the drift watches saw of the objects applied before (read instead of a GET
    /// each), and where this applier's writes are recorded so their own watch events
    /// trigger nothing. None: every read goes to the API server.
    watches: Option<DriftWatches>,
    progress: Option<tokio::sync::watch::Sender<Option<ApplyStep>>>,
    backend_timeout: Duration,
    /// The user name the API server records as the author of what this applier creates;
    /// an existing BundleDeployment is taken for its own only when this user created it.
    author: Option<String>,
}

impl Applier {
    /// An applier writing through `client`, resolving kinds through `kinds` (shared by
    /// every apply of the process).
    pub fn new(client: Client, kinds: std::sync::Arc<KindCache>) -> Self {
        Self {
            observer: client.clone(),
            client,
            kinds,
            watches: None,
            progress: None,
            backend_timeout: BACKEND_READY_TIMEOUT,
            author: None,
        }
    }

    /// Reads objects this BundleDeployment applied before from `watches` when they hold
    /// them, and records every write there (see [`crate::drift`]).
    pub fn with_watches(mut self, watches: DriftWatches) -> Self {
        self.watches = Some(watches);
        self
    }

    /// Reads the state of applied workloads and Services through `observer` instead of the
    /// applying client.
    pub fn with_observer(mut self, observer: Client) -> Self {
        self.observer = observer;
        self
    }

    /// Sets the user name this applier writes as (see [`crate::collision`]).
    pub fn with_author(mut self, author: String) -> Self {
        self.author = Some(author);
        self
    }

    /// The client objects are written with (the identity the BundleDeployment applies as).
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Reports each step of [`Self::apply`] on `progress` as it starts.
    pub fn with_progress(
        mut self,
        progress: tokio::sync::watch::Sender<Option<ApplyStep>>,
    ) -> Self {
        self.progress = Some(progress);
        self
    }

    fn report(&self, step: ApplyStep) {
        if let Some(progress) = &self.progress {
            progress.send_replace(Some(step));
        }
    }

    /// The field manager of one BundleDeployment's writes.
    pub fn field_manager(owner: &str) -> String {
        format!("bundledeployment/{owner}")
    }

    fn api(&self, resource: &ApiResource, namespace: Option<&str>) -> Api<DynamicObject> {
        match namespace {
            Some(ns) => Api::namespaced_with(self.client.clone(), ns, resource),
            None => Api::all_with(self.client.clone(), resource),
        }
    }

    /// Applies the bundle: resolve every object's kind → read what exists → preflight (pure:
    /// collisions, CRD upgrade safety, order; nothing is written when it fails) → dry-run
    /// every write but the next one (the API server refuses that one before anything else
    /// is written, as its dry run would) → apply in phases, waiting for CRDs after the
    /// foundations → prune what the previous bundle had and this one does not.
    ///
    /// A refusal after the first writes (an object in a namespace the bundle creates, or a
    /// custom resource of a CRD it adds, can only be tried once those exist) removes what
    /// this apply created, so a refused install leaves nothing behind: no namespace, no CRD
    /// that would block the next bundle shipping it. Objects that existed before, and those
    /// the previous revision recorded, stay.
    pub async fn apply(&self, request: ApplyRequest) -> Result<ApplyReport, ApplyError> {
        let mut report = ApplyReport::default();
        match self.apply_into(&request, &mut report).await {
            Ok(()) => Ok(report),
            Err(err) => {
                if err.is_terminal() {
                    self.undo_created(&request, &report.created).await;
                }
                Err(err)
            }
        }
    }

    /// What applying `request` would do, without writing: every object with its live copy
    /// and whether it needs a write, and every refusal (collisions, unsafe CRD changes,
    /// writes the API server refuses in a dry run). Custom resources of CRDs the bundle
    /// adds are listed as new; they cannot be dry-run before their CRD exists.
    pub async fn review(&self, request: &ApplyRequest) -> Result<Review, ApplyError> {
        let (ready, deferred, _skipped) = self.resolve_objects(request).await?;
        let live = self.read_live(&ready, request).await?;
        let mut review = Review::default();
        for item in &ready {
            let existing = live.get(&item.key);
            review.objects.push(ReviewedObject {
                key: item.key.clone(),
                desired: serde_json::to_value(&item.object).unwrap_or_default(),
                live: existing.map(|l| serde_json::to_value(l).unwrap_or_default()),
                differs: needs_write(item, existing),
            });
        }
        for object in &deferred {
            review.objects.push(ReviewedObject {
                key: with_default_namespace(ObjectKey::of(object), request),
                desired: serde_json::to_value(object).unwrap_or_default(),
                live: None,
                differs: true,
            });
        }
        match preflight(
            &request.owner,
            self.author.as_deref(),
            request.collision_protection,
            ready,
            &live,
        ) {
            Ok(plan) => {
                let dry_run = PatchParams {
                    dry_run: true,
                    ..PatchParams::apply(&Self::field_manager(&request.owner)).force()
                };
                for item in plan.dry_run_first(&live) {
                    if let Err(err) = self.patch(item, &dry_run).await {
                        review.refused.push(kit::error_chain(&err));
                    }
                }
            }
            Err(err) => review.refused.push(kit::error_chain(&err)),
        }
        Ok(review)
    }
}

/// The live object as `observer` sees it: as a write of this reconcile returned it, else as
/// the drift watch of its kind holds it, else read from the API server.
pub async fn observe(
    observer: &Client,
    watches: Option<&DriftWatches>,
    key: &ObjectKey,
    resource: &ApiResource,
    after_write: &HashMap<ObjectKey, DynamicObject>,
) -> Result<Option<DynamicObject>, kube::Error> {
    if let Some(fresh) = after_write.get(key) {
        return Ok(Some(fresh.clone()));
    }
    if let Some(cached) =
        watches.and_then(|w| w.cached(resource, key.namespace.as_deref(), &key.name))
    {
        return Ok(Some(cached));
    }
    let api: Api<DynamicObject> = match &key.namespace {
        Some(ns) => Api::namespaced_with(observer.clone(), ns, resource),
        None => Api::all_with(observer.clone(), resource),
    };
    api.get_opt(&key.name).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::owner_labels;
    use kube::ResourceExt;
    use kube::core::GroupVersionKind;
    use serde_json::json;
    use std::collections::HashSet;

    #[test]
    fn a_dropped_field_changes_the_applied_hash_so_the_write_is_not_skipped() {
        // A child BundleDeployment whose spec.config was taken away: the desired object is
        // a subset of the live one, which still has the config.
        let object = |config: Option<serde_json::Value>| -> DynamicObject {
            let mut value = json!({
                "apiVersion": "core.rukpak.io/v1alpha1", "kind": "BundleDeployment",
                "metadata": {"name": "child", "annotations": {"keep": "me"}},
                "spec": {"provisionerClassName": "core-rukpak-io-registry"}
            });
            if let Some(config) = config {
                value["spec"]["config"] = config;
            }
            serde_json::from_value(value).unwrap()
        };
        let mut with = object(Some(json!({"deploymentConfig": {"env": []}})));
        let mut without = object(None);
        stamp_applied_hash(&mut with);
        stamp_applied_hash(&mut without);
        let hash = |o: &DynamicObject| {
            o.annotations()
                .get(rukpak_api::labels::APPLIED_HASH)
                .cloned()
        };
        assert_ne!(hash(&with), hash(&without));
        assert_eq!(
            with.annotations().get("keep").map(String::as_str),
            Some("me")
        );
        // Without the hash, the smaller object would read as already applied.
        let live = serde_json::to_value(&with).unwrap();
        let mut bare = object(None);
        assert!(crate::subset::is_subset(
            &serde_json::to_value(&bare).unwrap(),
            &live
        ));
        assert!(!crate::subset::is_subset(
            &serde_json::to_value(&without).unwrap(),
            &live
        ));
        // Stamping is stable: the same object gets the same hash, whatever it carried before.
        let first = hash(&without);
        stamp_applied_hash(&mut without);
        assert_eq!(hash(&without), first);
        stamp_applied_hash(&mut bare);
        assert_eq!(hash(&bare), first);
    }

    /// An object as resolve() leaves it: kind resolved, namespace defaulted, owner labels.
    fn resolved(api_version: &str, kind: &str, namespace: Option<&str>, name: &str) -> Resolved {
        let object: DynamicObject = serde_json::from_value(json!({
            "apiVersion": api_version, "kind": kind,
            "metadata": { "name": name, "namespace": namespace, "labels": owner_labels("mine") },
            "data": { "key": "value" }
        }))
        .unwrap();
        let key = ObjectKey::of(&object);
        let gvk = GroupVersionKind::gvk(&key.group, &key.version, &key.kind);
        Resolved {
            key,
            resource: ApiResource::from_gvk(&gvk),
            object,
        }
    }

    /// What the cluster holds for `item`, labelled as owned by `owner`.
    fn live_copy(item: &Resolved, owner: Option<&str>) -> DynamicObject {
        let mut object = item.object.clone();
        object.metadata.labels = owner.map(owner_labels);
        object
    }

    fn crd(name: &str, scope: &str) -> Resolved {
        let (plural, group) = name.split_once('.').unwrap();
        let mut item = resolved(
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition",
            None,
            name,
        );
        item.object.data = json!({ "spec": {
            "group": group, "scope": scope,
            "names": { "kind": "Widget", "plural": plural },
            "versions": [{ "name": "v1", "served": true, "storage": true,
                "schema": { "openAPIV3Schema": { "type": "object" } } }]
        }});
        item
    }

    fn names(items: &[Resolved]) -> Vec<&str> {
        items.iter().map(|r| r.key.name.as_str()).collect()
    }

    #[test]
    fn the_plan_puts_foundations_first_and_the_rest_in_apply_order() {
        let ready = vec![
            resolved("apps/v1", "Deployment", Some("team"), "operator"),
            resolved("v1", "ConfigMap", Some("team"), "settings"),
            crd("widgets.example.com", "Namespaced"),
            resolved("v1", "ServiceAccount", Some("team"), "operator"),
            resolved("v1", "Namespace", None, "team"),
        ];
        let plan = preflight(
            "mine",
            None,
            CollisionProtection::Prevent,
            ready,
            &HashMap::new(),
        )
        .unwrap();
        assert_eq!(names(&plan.foundations), ["team", "widgets.example.com"]);
        assert_eq!(names(&plan.rest), ["operator", "settings", "operator"]);
        assert_eq!(plan.rest[0].key.kind, "ServiceAccount");
        assert_eq!(plan.new_namespaces, HashSet::from(["team".to_owned()]));
    }

    #[test]
    fn the_next_write_is_the_first_changed_object_of_the_earliest_phase() {
        let deployment = resolved("apps/v1", "Deployment", Some("team"), "operator");
        let unchanged = resolved("v1", "ConfigMap", Some("team"), "same");
        let changed = resolved("v1", "ConfigMap", Some("team"), "settings");
        let webhook = resolved(
            "admissionregistration.k8s.io/v1",
            "ValidatingWebhookConfiguration",
            None,
            "check",
        );
        let mut live = HashMap::new();
        live.insert(unchanged.key.clone(), live_copy(&unchanged, Some("mine")));
        // Apply order, as the apply sorts it; the Deployment is a later phase.
        let rest = vec![unchanged, changed, deployment, webhook];
        assert_eq!(
            first_rest_write(&rest, &live).map(|k| k.name.as_str()),
            Some("settings")
        );
        live.insert(rest[1].key.clone(), live_copy(&rest[1], Some("mine")));
        assert_eq!(
            first_rest_write(&rest, &live).map(|k| k.name.as_str()),
            Some("operator"),
            "configuration unchanged: the workload is next"
        );
        for item in &rest {
            live.insert(item.key.clone(), live_copy(item, Some("mine")));
        }
        assert_eq!(first_rest_write(&rest, &live), None, "nothing to write");
    }

    #[test]
    fn removing_a_webhook_comes_before_the_next_write() {
        let webhook = resolved(
            "admissionregistration.k8s.io/v1",
            "ValidatingWebhookConfiguration",
            None,
            "check",
        );
        let config = resolved("v1", "ConfigMap", Some("team"), "settings");
        let request = |previous: &[&Resolved]| ApplyRequest {
            owner: "mine".to_owned(),
            objects: Vec::new(),
            install_namespace: None,
            collision_protection: CollisionProtection::Prevent,
            previous_inventory: previous
                .iter()
                .map(|r| InventoryEntry::from(&r.key))
                .collect(),
            health_checks: std::sync::Arc::default(),
            absent: Vec::new(),
            installed_already: false,
        };
        let applied = [config.key.clone()];
        assert!(admission_prunes(&request(&[&webhook, &config]), &applied));
        assert!(!admission_prunes(&request(&[&config]), &applied));
        assert!(
            !admission_prunes(&request(&[]), &applied),
            "a first install"
        );
    }

    #[test]
    fn objects_in_new_namespaces_and_unchanged_objects_are_not_dry_run_first() {
        let unchanged = resolved("v1", "ConfigMap", Some("existing"), "same");
        let changed = resolved("v1", "ConfigMap", Some("existing"), "changed");
        let mut live = HashMap::new();
        live.insert(unchanged.key.clone(), live_copy(&unchanged, Some("mine")));
        let mut old = live_copy(&changed, Some("mine"));
        old.data = json!({ "data": { "key": "old" } });
        live.insert(changed.key.clone(), old);
        let ready = vec![
            resolved("v1", "Namespace", None, "fresh"),
            resolved("v1", "ConfigMap", Some("fresh"), "inside"),
            unchanged,
            changed,
        ];
        let plan = preflight("mine", None, CollisionProtection::Prevent, ready, &live).unwrap();
        let first: Vec<&str> = plan
            .dry_run_first(&live)
            .map(|r| r.key.name.as_str())
            .collect();
        assert_eq!(first, ["fresh", "changed"]);
        // "inside" waits for its namespace; it is dry-run right after the foundations.
        let waiting: Vec<&str> = plan
            .rest
            .iter()
            .filter(|r| plan.in_new_namespace(r))
            .map(|r| r.key.name.as_str())
            .collect();
        assert_eq!(waiting, ["inside"]);
    }

    #[test]
    fn every_collision_is_reported_at_once_and_nothing_is_planned() {
        let theirs = resolved("v1", "ConfigMap", Some("ns"), "theirs");
        let unmanaged = resolved("v1", "Secret", Some("ns"), "unmanaged");
        let mine = resolved("v1", "ConfigMap", Some("ns"), "mine");
        let mut live = HashMap::new();
        live.insert(theirs.key.clone(), live_copy(&theirs, Some("other")));
        live.insert(unmanaged.key.clone(), live_copy(&unmanaged, None));
        live.insert(mine.key.clone(), live_copy(&mine, Some("mine")));
        let Err(ApplyError::Collisions(collisions)) = preflight(
            "mine",
            None,
            CollisionProtection::Prevent,
            vec![theirs, unmanaged, mine],
            &live,
        ) else {
            panic!("collisions were not refused");
        };
        let held: Vec<&str> = collisions.iter().map(|c| c.object.name.as_str()).collect();
        assert_eq!(held, ["theirs", "unmanaged"]);
        assert!(collisions[0].holder.contains("BundleDeployment other"));
    }

    #[test]
    fn an_unsafe_crd_upgrade_is_refused_before_any_write() {
        let desired = crd("widgets.example.com", "Cluster");
        let existing = live_copy(&crd("widgets.example.com", "Namespaced"), Some("mine"));
        let live = HashMap::from([(desired.key.clone(), existing)]);
        let refused = preflight(
            "mine",
            None,
            CollisionProtection::Prevent,
            vec![desired],
            &live,
        );
        let Err(ApplyError::UnsafeCrdUpgrade(violations)) = refused else {
            panic!("the scope change was not refused");
        };
        assert_eq!(violations[0].crd, "widgets.example.com");
    }

    #[test]
    fn only_a_ready_pod_with_a_loopback_address_serves_on_loopback() {
        let pod = |ip: &str, ready: &str| json!({"status": {"podIP": ip, "conditions": [{"type": "Ready", "status": ready}]}});
        assert!(has_ready_loopback_pod([pod("127.0.0.1", "True")].iter()));
        assert!(has_ready_loopback_pod(
            [pod("10.0.0.1", "True"), pod("::1", "True")].iter()
        ));
        assert!(!has_ready_loopback_pod([pod("127.0.0.1", "False")].iter()));
        assert!(!has_ready_loopback_pod([pod("10.0.0.1", "True")].iter()));
        let mut leaving = pod("127.0.0.1", "True");
        leaving["metadata"] = json!({"deletionTimestamp": "2026-01-01T00:00:00Z"});
        assert!(!has_ready_loopback_pod([leaving].iter()));
        assert!(!has_ready_loopback_pod([json!({})].iter()));
    }

    #[test]
    fn an_unready_pod_is_described_in_the_kubelets_words() {
        let crashing = json!({"status": {
            "conditions": [{"type": "Ready", "status": "False"}],
            "containerStatuses": [{"name": "manager",
                "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 10s restarting failed container"}},
                "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}}}]}});
        assert_eq!(
            describe_unready_pod(&crashing).as_deref(),
            Some("container manager is in CrashLoopBackOff, last exit code 1 (Error)")
        );
        let pulling = |reason: &str| {
            json!({"status": {"containerStatuses": [{"name": "manager",
            "image": "example.com/op:v1", "state": {"waiting": {"reason": reason, "message": "not found"}}}]}})
        };
        assert_eq!(
            describe_unready_pod(&pulling("ErrImagePull")).as_deref(),
            Some(
                "container manager cannot pull its image example.com/op:v1 (the pod's events give the registry's answer)"
            )
        );
        assert_eq!(
            describe_unready_pod(&pulling("ImagePullBackOff")),
            describe_unready_pod(&pulling("ErrImagePull")),
            "the kubelet's back-off must not rewrite the status"
        );
        let config = json!({"status": {"containerStatuses": [{"name": "manager",
            "state": {"waiting": {"reason": "CreateContainerConfigError", "message": "secret \"creds\" not found"}}}]}});
        assert_eq!(
            describe_unready_pod(&config).as_deref(),
            Some(
                "container manager is waiting: CreateContainerConfigError: secret \"creds\" not found"
            )
        );
        let restarted = json!({"status": {"containerStatuses": [{"name": "manager",
            "state": {"running": {}}, "lastState": {"terminated": {"exitCode": 2, "reason": "Error"}}}]}});
        assert_eq!(
            describe_unready_pod(&restarted).as_deref(),
            Some("container manager exited with code 2 (Error)")
        );
        let unscheduled = json!({"status": {"conditions": [{"type": "PodScheduled", "status": "False",
            "message": "0/2 nodes are available"}]}});
        assert_eq!(
            describe_unready_pod(&unscheduled).as_deref(),
            Some("not scheduled: 0/2 nodes are available")
        );
        let starting = json!({"status": {"containerStatuses": [{"name": "manager",
            "state": {"waiting": {"reason": "ContainerCreating"}}}]}});
        assert_eq!(describe_unready_pod(&starting), None);
        let ready = json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}});
        assert_eq!(describe_unready_pod(&ready), None);
    }
}
