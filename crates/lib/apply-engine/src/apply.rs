//! The apply engine: ordered server-side apply of a bundle's objects for one
//! BundleDeployment, with collision protection and CRD upgrade safety checked before the
//! first write, an inventory of what was applied, pruning of what a pivot removed, and a
//! deletion path that never destroys user data.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use kube::core::GroupVersionKind;
use kube::discovery::{ApiCapabilities, Scope};
use kube::{Api, Client};
use rukpak_api::{CollisionProtection, InventoryEntry};
use serde_json::json;

use health::Health;
use health::checks::{CompiledChecks, judge};

use crate::collision::{self, Collision};
use crate::crd_safety;
use crate::drift::DriftWatches;
use crate::kinds::KindCache;
use crate::object::{ObjectKey, owner_labels, owning_bundle_deployment};
use crate::phase::{ApplyStep, Phase, is_crd, phase_of, sort_for_apply, sort_for_delete};
use crate::prune::{PRUNE_ANNOTATION, PRUNE_DISABLED, stale};
use crate::subset::{as_stored, is_subset};

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

    async fn discover(
        &self,
        key: &ObjectKey,
    ) -> Result<Option<(ApiResource, ApiCapabilities)>, ApplyError> {
        let gvk = GroupVersionKind::gvk(&key.group, &key.version, &key.kind);
        match self.kinds.resolve(&self.client, &gvk).await {
            Ok(found) => Ok(found),
            Err(source) => Err(ApplyError::Discovery {
                api_version: key.api_version(),
                kind: key.kind.clone(),
                source,
            }),
        }
    }

    fn api(&self, resource: &ApiResource, namespace: Option<&str>) -> Api<DynamicObject> {
        match namespace {
            Some(ns) => Api::namespaced_with(self.client.clone(), ns, resource),
            None => Api::all_with(self.client.clone(), resource),
        }
    }

    /// Resolves an object's kind and scope, defaults its namespace, and adds owner labels.
    /// `None` when its kind is not served yet (a CRD of this bundle will define it).
    async fn resolve(
        &self,
        request: &ApplyRequest,
        mut object: DynamicObject,
        cache: &mut KindsSeen,
    ) -> Result<Option<Resolved>, ApplyError> {
        let mut key = ObjectKey::of(&object);
        let cache_key = (key.group.clone(), key.version.clone(), key.kind.clone());
        let found = match cache.get(&cache_key) {
            Some(found) => found.clone(),
            None => {
                let found = self.discover(&key).await?;
                cache.insert(cache_key, found.clone());
                found
            }
        };
        let Some((resource, capabilities)) = found else {
            return Ok(None);
        };
        match capabilities.scope {
            Scope::Namespaced => {
                if object.metadata.namespace.is_none() {
                    object.metadata.namespace = Some(
                        request
                            .install_namespace
                            .clone()
                            .unwrap_or_else(|| "default".to_owned()),
                    );
                }
            }
            // A namespace on a cluster-scoped object is ignored by the server; drop it so
            // the inventory names the object correctly.
            Scope::Cluster => object.metadata.namespace = None,
        }
        key.namespace = object.metadata.namespace.clone();
        let labels = object.metadata.labels.get_or_insert_with(BTreeMap::new);
        labels.extend(owner_labels(&request.owner));
        // Server-side apply rejects these on input.
        object.metadata.resource_version = None;
        object.metadata.uid = None;
        object.metadata.managed_fields = None;
        object.metadata.creation_timestamp = None;
        stamp_applied_hash(&mut object);
        Ok(Some(Resolved {
            key,
            resource,
            object,
        }))
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

    /// Removes the objects a refused apply created (newest first), sparing what the
    /// previous revision recorded. Best effort: what cannot be removed now is logged (and
    /// stays this BundleDeployment's, so deleting it removes them).
    async fn undo_created(&self, request: &ApplyRequest, created: &[ObjectKey]) {
        let recorded: Vec<ObjectKey> = request
            .previous_inventory
            .iter()
            .map(ObjectKey::from)
            .collect();
        let mut undo: Vec<&ObjectKey> = created
            .iter()
            .filter(|key| !recorded.iter().any(|r| r.same_object(key)))
            .collect();
        sort_for_delete(&mut undo, |k| k);
        for key in undo {
            match self.remove(&request.owner, key).await {
                Ok(Removal::Kept(reason)) => {
                    tracing::warn!(bundle_deployment = %request.owner, object = %key, %reason, "kept an object of a refused install");
                }
                Ok(_) => {
                    tracing::info!(bundle_deployment = %request.owner, object = %key, "removed an object of a refused install");
                }
                Err(err) => {
                    tracing::warn!(bundle_deployment = %request.owner, object = %key, error = %kit::error_chain(&err), "failed to remove an object of a refused install");
                }
            }
        }
    }

    async fn apply_into(
        &self,
        request: &ApplyRequest,
        report: &mut ApplyReport,
    ) -> Result<(), ApplyError> {
        self.report(ApplyStep::Checking {
            objects: request.objects.len(),
        });
        let (ready, deferred, mut skipped) = self.resolve_objects(request).await?;
        let live = self.read_live(&ready, request).await?;
        let plan = preflight(
            &request.owner,
            self.author.as_deref(),
            request.collision_protection,
            ready,
            &live,
        )?;

        // A refusal (forbidden to the impersonated account, invalid) stops the install before
        // the first real write. Objects in namespaces this bundle creates can only be tried
        // once those exist, right after the foundations.
        let params = PatchParams::apply(&Self::field_manager(&request.owner)).force();
        let dry_run = PatchParams {
            dry_run: true,
            ..params.clone()
        };
        // The object written first is not dry-run: the API server refuses its real write as
        // it would refuse the dry run, and nothing has been written before it.
        let first_write = plan
            .foundations
            .iter()
            .find(|r| needs_write(r, live.get(&r.key)))
            .map(|r| &r.key);
        for item in plan
            .dry_run_first(&live)
            .filter(|r| Some(&r.key) != first_write)
        {
            self.patch(item, &dry_run).await?;
        }

        self.write_foundations(&plan, &live, &params, report)
            .await?;
        // Custom resources of the bundle's own CRDs resolve now that those are served.
        let (late, late_skipped) = self.resolve_deferred(request, deferred).await?;
        skipped.extend(late_skipped);
        // Objects that could not be dry-run before the foundations existed: those in the
        // namespaces just created and the custom resources of the CRDs just established.
        let second_batch: HashSet<ObjectKey> = plan
            .rest
            .iter()
            .filter(|r| plan.in_new_namespace(r))
            .chain(late.iter())
            .map(|r| r.key.clone())
            .collect();
        let mut rest = plan.rest;
        rest.extend(late);
        sort_for_apply(&mut rest, |r| &r.key);
        let mut applied: Vec<ObjectKey> = plan
            .foundations
            .iter()
            .chain(rest.iter())
            .map(|r| r.key.clone())
            .collect();
        sort_for_apply(&mut applied, |k| k);
        // As above, the object written next needs no dry run, unless webhooks are removed
        // before it is written.
        let next_write = if admission_prunes(request, &applied) {
            None
        } else {
            first_rest_write(&rest, &live)
        };
        for item in rest
            .iter()
            .filter(|r| second_batch.contains(&r.key) && Some(&r.key) != next_write)
        {
            self.patch(item, &dry_run).await?;
        }

        // Webhooks leaving the bundle go before the workloads change under them, and new
        // or changed ones only once their servers are ready.
        self.prune_where(request, &applied, report, |key| {
            phase_of(key) == Phase::Admission
        })
        .await?;
        // Each later phase waits until the probed objects before it (workloads rolled out,
        // objects a declared health check selects) pass; until then the apply stops here,
        // keeps what it wrote in the inventory, prunes nothing, and goes on next time.
        let mut written: Vec<&Resolved> = plan.foundations.iter().collect();
        for phase in [Phase::Configuration, Phase::Workloads, Phase::Admission] {
            let items: Vec<&Resolved> = rest.iter().filter(|r| phase_of(&r.key) == phase).collect();
            if items.is_empty() {
                continue;
            }
            let unchanged = items
                .iter()
                .all(|item| !needs_write(item, live.get(&item.key)));
            if !(request.installed_already && unchanged)
                && let Some(wait) = self
                    .gate(phase, &written, &report.after_write, &request.health_checks)
                    .await?
            {
                report.inventory = inventory_while_waiting(&written, &request.previous_inventory);
                sort_for_apply(&mut skipped, |k| k);
                report.skipped = skipped;
                report.waiting = Some(wait);
                return Ok(());
            }
            if phase == Phase::Admission
                && items
                    .iter()
                    .any(|item| needs_write(item, live.get(&item.key)))
            {
                let admission: Vec<&Resolved> = items.clone();
                self.wait_for_backends(&admission, &written).await?;
            }
            self.write_in_phases(&items, &live, &params, report).await?;
            written.extend(items);
        }

        report.inventory = applied.iter().map(InventoryEntry::from).collect();
        self.prune_where(request, &applied, report, |_| true)
            .await?;
        sort_for_apply(&mut skipped, |k| k);
        report.skipped = skipped;
        Ok(())
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

    /// Resolves every object whose kind is served; the rest (returned second) must be
    /// custom resources of a CRD in this bundle and wait for it, or optional (returned
    /// third: skipped).
    async fn resolve_objects(
        &self,
        request: &ApplyRequest,
    ) -> Result<(Vec<Resolved>, Vec<DynamicObject>, Vec<ObjectKey>), ApplyError> {
        let mut seen = HashMap::new();
        let bundle_crds: Vec<(String, String)> =
            request.objects.iter().filter_map(crd_group_kind).collect();
        let mut ready = Vec::new();
        let mut deferred = Vec::new();
        let mut skipped = Vec::new();
        for object in request.objects.clone() {
            let key = ObjectKey::of(&object);
            let optional = is_optional(&object);
            match self.resolve(request, object.clone(), &mut seen).await? {
                Some(resolved) => ready.push(resolved),
                None if bundle_crds
                    .iter()
                    .any(|(g, k)| *g == key.group && *k == key.kind) =>
                {
                    deferred.push(object)
                }
                None if optional => skipped.push(with_default_namespace(key, request)),
                None => {
                    return Err(ApplyError::UnknownKind {
                        api_version: key.api_version(),
                        kind: key.kind,
                    });
                }
            }
        }
        Ok((ready, deferred, skipped))
    }

    /// Resolves the objects [`Self::resolve_objects`] deferred, once the bundle's CRDs are
    /// established; a kind still not served is an error.
    async fn resolve_deferred(
        &self,
        request: &ApplyRequest,
        deferred: Vec<DynamicObject>,
    ) -> Result<(Vec<Resolved>, Vec<ObjectKey>), ApplyError> {
        let mut seen = HashMap::new();
        let mut late = Vec::new();
        let mut skipped = Vec::new();
        for object in deferred {
            let key = ObjectKey::of(&object);
            let optional = is_optional(&object);
            match self.resolve(request, object, &mut seen).await? {
                Some(resolved) => late.push(resolved),
                None if optional => skipped.push(with_default_namespace(key, request)),
                None => {
                    return Err(ApplyError::UnknownKind {
                        api_version: key.api_version(),
                        kind: key.kind,
                    });
                }
            }
        }
        Ok((late, skipped))
    }

    /// The live copy of every object that exists.
    ///
    /// An object this BundleDeployment applied before (in `previous`) is taken from the
    /// drift watch of its kind when that holds it; nothing in a namespace that does not
    /// exist can exist, so those are not asked for; everything else is read as the
    /// applying identity, since an object of someone else's is invisible to the watches
    /// (they only see owned objects) and must still be found for collision protection.
    async fn read_live(
        &self,
        ready: &[Resolved],
        request: &ApplyRequest,
    ) -> Result<HashMap<ObjectKey, DynamicObject>, ApplyError> {
        let mut live = HashMap::new();
        let previous: HashSet<ObjectKey> = request
            .previous_inventory
            .iter()
            .map(ObjectKey::from)
            .collect();
        let is_namespace =
            |item: &&Resolved| item.key.group.is_empty() && item.key.kind == "Namespace";
        let mut missing_namespaces = HashSet::new();
        // Namespaces first: what they say spares the reads of the objects inside them.
        for item in ready
            .iter()
            .filter(is_namespace)
            .chain(ready.iter().filter(|i| !is_namespace(i)))
        {
            if let Some(namespace) = &item.key.namespace
                && missing_namespaces.contains(namespace)
            {
                continue;
            }
            if request.absent.iter().any(|key| key.same_object(&item.key)) {
                if is_namespace(&item) {
                    missing_namespaces.insert(item.key.name.clone());
                }
                continue;
            }
            let cached = previous
                .iter()
                .any(|key| key.same_object(&item.key))
                .then(|| {
                    self.watches.as_ref().and_then(|watches| {
                        watches.cached(
                            &item.resource,
                            item.key.namespace.as_deref(),
                            &item.key.name,
                        )
                    })
                })
                .flatten();
            if let Some(cached) = cached {
                live.insert(item.key.clone(), cached);
                continue;
            }
            let api = self.api(&item.resource, item.key.namespace.as_deref());
            let existing =
                api.get_opt(&item.key.name)
                    .await
                    .map_err(|source| ApplyError::Read {
                        object: item.key.clone(),
                        source,
                    })?;
            match existing {
                Some(existing) => {
                    live.insert(item.key.clone(), existing);
                }
                None if is_namespace(&item) => {
                    missing_namespaces.insert(item.key.name.clone());
                }
                None => {}
            }
        }
        Ok(live)
    }

    /// Writes the namespaces and CRDs, then waits until those CRDs are established.
    async fn write_foundations(
        &self,
        plan: &Plan,
        live: &HashMap<ObjectKey, DynamicObject>,
        params: &PatchParams,
        report: &mut ApplyReport,
    ) -> Result<(), ApplyError> {
        if !plan.foundations.is_empty() {
            self.report(ApplyStep::Writing {
                phase: Phase::Foundations,
                objects: plan.foundations.len(),
            });
        }
        for item in &plan.foundations {
            self.write(item, live.get(&item.key), params, report)
                .await?;
        }
        let crds = plan.foundations.iter().filter(|r| is_crd(&r.key)).count();
        if crds > 0 {
            self.report(ApplyStep::WaitingForCrds { crds });
        }
        for item in plan.foundations.iter().filter(|r| is_crd(&r.key)) {
            // A CRD this apply did not change and that was established when read needs no
            // look: most reconciles of an installed bundle.
            let unchanged = !report.written.contains(&item.key);
            if unchanged
                && live
                    .get(&item.key)
                    .is_some_and(|crd| has_true_condition(&crd.data, "Established"))
            {
                continue;
            }
            self.wait_established(&item.key.name).await?;
        }
        Ok(())
    }

    /// Writes `rest` (in apply order), reporting each phase as it starts.
    async fn write_in_phases(
        &self,
        rest: &[&Resolved],
        live: &HashMap<ObjectKey, DynamicObject>,
        params: &PatchParams,
        report: &mut ApplyReport,
    ) -> Result<(), ApplyError> {
        let mut phase = None;
        for item in rest {
            let this = phase_of(&item.key);
            if phase != Some(this) {
                phase = Some(this);
                self.report(ApplyStep::Writing {
                    phase: this,
                    objects: rest.iter().filter(|r| phase_of(&r.key) == this).count(),
                });
            }
            self.write(item, live.get(&item.key), params, report)
                .await?;
        }
        Ok(())
    }

    /// Removes what the previous bundle had and `applied` does not (see [`stale`]), of the
    /// objects `which` selects.
    async fn prune_where(
        &self,
        request: &ApplyRequest,
        applied: &[ObjectKey],
        report: &mut ApplyReport,
        which: impl Fn(&ObjectKey) -> bool,
    ) -> Result<(), ApplyError> {
        let stale = stale_where(request, applied, &report.pruned, which);
        if !stale.is_empty() {
            self.report(ApplyStep::Pruning {
                objects: stale.len(),
            });
        }
        for key in stale {
            match self.remove(&request.owner, &key).await? {
                Removal::Deleted => report.pruned.push(key),
                Removal::Kept(reason) => report.kept.push((key, reason)),
                Removal::Gone => {}
            }
        }
        Ok(())
    }

    /// Patches one object unless the live copy already holds every desired field.
    async fn write(
        &self,
        item: &Resolved,
        live: Option<&DynamicObject>,
        params: &PatchParams,
        report: &mut ApplyReport,
    ) -> Result<(), ApplyError> {
        if !needs_write(item, live) {
            return Ok(());
        }
        let written = self.patch(item, params).await?;
        if let Some(watches) = &self.watches {
            watches.wrote(&item.resource, &written);
        }
        if live.is_none() {
            report.created.push(item.key.clone());
        }
        report.written.push(item.key.clone());
        report.after_write.insert(item.key.clone(), written);
        Ok(())
    }

    /// Server-side applies one object (with `params`, which may be a dry run); the object
    /// as the API server returned it.
    async fn patch(
        &self,
        item: &Resolved,
        params: &PatchParams,
    ) -> Result<DynamicObject, ApplyError> {
        self.api(&item.resource, item.key.namespace.as_deref())
            .patch(&item.key.name, params, &Patch::Apply(&item.object))
            .await
            .map_err(|source| {
                // The kind may have stopped being served since discovery was cached.
                if is_not_found(&source) {
                    self.kinds.forget(&GroupVersionKind::gvk(
                        &item.key.group,
                        &item.key.version,
                        &item.key.kind,
                    ));
                }
                ApplyError::Apply {
                    object: item.key.clone(),
                    source,
                }
            })
    }

    /// The probes before `next`: every object of `written` that a declared health check
    /// selects, or whose kind rolls out (Deployments, StatefulSets, DaemonSets, Jobs), read
    /// as the provisioner and judged; `None` when all pass.
    async fn gate(
        &self,
        next: Phase,
        written: &[&Resolved],
        after_write: &HashMap<ObjectKey, DynamicObject>,
        checks: &CompiledChecks,
    ) -> Result<Option<PhaseWait>, ApplyError> {
        let mut objects = Vec::new();
        for item in written {
            let desired = serde_json::to_value(&item.object).unwrap_or_default();
            if !(rolls_out(&item.key) || checks.selects(&desired)) {
                continue;
            }
            let live = self
                .observe(&item.key, &item.resource, after_write)
                .await
                .map_err(|source| ApplyError::Read {
                    object: item.key.clone(),
                    source,
                })?;
            let verdict = match &live {
                Some(live) => judge(checks, &serde_json::to_value(live).unwrap_or_default()),
                None => Health::Progressing("not found yet".to_owned()),
            };
            if !verdict.is_healthy() {
                // A Deployment's own status says how many replicas are missing, not why: name
                // a pod and what keeps it from Ready.
                let verdict = match (&live, &verdict) {
                    (Some(live), Health::Progressing(message) | Health::Unhealthy(message))
                        if item.key.group == "apps" && item.key.kind == "Deployment" =>
                    {
                        match self.why_pods_are_not_ready(item, live).await {
                            Some(why) => verdict.with_message(format!("{message} ({why})")),
                            None => verdict,
                        }
                    }
                    _ => verdict,
                };
                objects.push((item.key.clone(), verdict));
            }
        }
        if objects.is_empty() {
            return Ok(None);
        }
        self.report(ApplyStep::WaitingForProbes {
            phase: next,
            objects: objects.len(),
        });
        Ok(Some(PhaseWait { next, objects }))
    }

    /// The live object as the provisioner sees it: as this apply's write returned it, else
    /// as the drift watch of its kind holds it, else read from the API server.
    async fn observe(
        &self,
        key: &ObjectKey,
        resource: &ApiResource,
        after_write: &HashMap<ObjectKey, DynamicObject>,
    ) -> Result<Option<DynamicObject>, kube::Error> {
        observe(
            &self.observer,
            self.watches.as_ref(),
            key,
            resource,
            after_write,
        )
        .await
    }

    /// Whether a Ready pod the Service selects has a loopback address: a host-network pod on
    /// a node whose address is 127.0.0.1 (the local real node, `hack/clusterctl/node.go`).
    /// EndpointSlices cannot hold a loopback address (API validation refuses it), so such a
    /// backend never shows up there; the API server still reaches it through the Service.
    async fn serves_on_loopback(&self, namespace: &str, name: &str) -> Result<bool, ApplyError> {
        let read_error = |kind: &str, source| ApplyError::Read {
            object: ObjectKey {
                group: String::new(),
                version: "v1".to_owned(),
                kind: kind.to_owned(),
                namespace: Some(namespace.to_owned()),
                name: name.to_owned(),
            },
            source,
        };
        let services: Api<k8s_openapi::api::core::v1::Service> =
            Api::namespaced(self.observer.clone(), namespace);
        let Some(service) = services
            .get_opt(name)
            .await
            .map_err(|source| read_error("Service", source))?
        else {
            return Ok(false);
        };
        let selector = service
            .spec
            .and_then(|spec| spec.selector)
            .unwrap_or_default();
        if selector.is_empty() {
            return Ok(false);
        }
        let labels = selector
            .iter()
            .map(|(key, value)| format!("{key}={value}"))
            .collect::<Vec<_>>()
            .join(",");
        let pods: Api<DynamicObject> = Api::namespaced_with(
            self.observer.clone(),
            namespace,
            &ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("", "v1", "Pod"), "pods"),
        );
        let listed = pods
            .list(&ListParams::default().labels(&labels))
            .await
            .map_err(|source| read_error("Pod", source))?;
        Ok(has_ready_loopback_pod(listed.items.iter().map(|p| &p.data)))
    }

    /// What keeps a Deployment's pods from Ready, in the kubelet's words (a container
    /// waiting in `CrashLoopBackOff` or `ImagePullBackOff`, a pod not scheduled), so the
    /// status names the pod an administrator should look at. `None` when the pods cannot be
    /// read or show nothing more than "not ready yet".
    async fn why_pods_are_not_ready(
        &self,
        deployment: &Resolved,
        live: &DynamicObject,
    ) -> Option<String> {
        let labels = live
            .data
            .pointer("/spec/selector/matchLabels")?
            .as_object()?
            .iter()
            .map(|(key, value)| format!("{key}={}", value.as_str().unwrap_or_default()))
            .collect::<Vec<_>>()
            .join(",");
        let pods: Api<DynamicObject> = Api::namespaced_with(
            self.observer.clone(),
            deployment.key.namespace.as_deref()?,
            &ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("", "v1", "Pod"), "pods"),
        );
        let listed = pods
            .list(&ListParams::default().labels(&labels))
            .await
            .ok()?;
        listed.items.iter().find_map(|pod| {
            describe_unready_pod(&pod.data)
                .map(|why| format!("pod {}: {why}", kube::ResourceExt::name_any(pod)))
        })
    }

    /// Waits until every Service the `admission` objects call has a ready endpoint and
    /// every Deployment of `applied` behind it is Available, reporting what it waits for.
    async fn wait_for_backends(
        &self,
        admission: &[&Resolved],
        applied: &[&Resolved],
    ) -> Result<(), ApplyError> {
        let services = backend_services(admission.iter().map(|r| &r.object));
        if services.is_empty() {
            return Ok(());
        }
        let deployments: Vec<&Resolved> = applied
            .iter()
            .copied()
            .filter(|r| r.key.group == "apps" && r.key.kind == "Deployment")
            .collect();
        self.report(ApplyStep::WaitingForBackends {
            services: services.len(),
        });
        let deadline = tokio::time::Instant::now() + self.backend_timeout;
        loop {
            // Only the last pass says why pods are not ready: that takes a list of pods
            // per Deployment, which a pass every 500 ms should not cost.
            let last_pass = tokio::time::Instant::now() > deadline;
            let mut waiting = Vec::new();
            for (namespace, name) in &services {
                let slices: Api<DynamicObject> = Api::namespaced_with(
                    self.observer.clone(),
                    namespace,
                    &ApiResource::from_gvk_with_plural(
                        &GroupVersionKind::gvk("discovery.k8s.io", "v1", "EndpointSlice"),
                        "endpointslices",
                    ),
                );
                let listed = slices
                    .list(
                        &ListParams::default()
                            .labels(&format!("kubernetes.io/service-name={name}")),
                    )
                    .await
                    .map_err(|source| ApplyError::Read {
                        object: ObjectKey {
                            group: "discovery.k8s.io".to_owned(),
                            version: "v1".to_owned(),
                            kind: "EndpointSlice".to_owned(),
                            namespace: Some(namespace.clone()),
                            name: name.clone(),
                        },
                        source,
                    })?;
                if !has_ready_endpoint(listed.items.iter().map(|s| &s.data))
                    && !self.serves_on_loopback(namespace, name).await?
                {
                    waiting.push(format!("Service {namespace}/{name} has no ready endpoint"));
                }
            }
            for deployment in &deployments {
                let api = Api::<DynamicObject>::namespaced_with(
                    self.observer.clone(),
                    deployment.key.namespace.as_deref().unwrap_or_default(),
                    &deployment.resource,
                );
                let live =
                    api.get_opt(&deployment.key.name)
                        .await
                        .map_err(|source| ApplyError::Read {
                            object: deployment.key.clone(),
                            source,
                        })?;
                if !live
                    .as_ref()
                    .is_some_and(|d| has_true_condition(&d.data, "Available"))
                {
                    let why = match &live {
                        Some(live) if last_pass => {
                            self.why_pods_are_not_ready(deployment, live).await
                        }
                        _ => None,
                    };
                    waiting.push(match why {
                        Some(why) => format!("{} is not Available ({why})", deployment.key),
                        None => format!("{} is not Available", deployment.key),
                    });
                }
            }
            if waiting.is_empty() {
                return Ok(());
            }
            if last_pass {
                return Err(ApplyError::BackendsNotReady {
                    waiting,
                    timeout: self.backend_timeout,
                });
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    async fn wait_established(&self, name: &str) -> Result<(), ApplyError> {
        let crds: Api<CustomResourceDefinition> = Api::all(self.client.clone());
        let deadline = tokio::time::Instant::now() + CRD_ESTABLISH_TIMEOUT;
        loop {
            let crd = crds
                .get_opt(name)
                .await
                .map_err(|source| ApplyError::Read {
                    object: crd_key(name),
                    source,
                })?;
            let established = crd
                .and_then(|c| c.status)
                .and_then(|s| s.conditions)
                .unwrap_or_default()
                .iter()
                .any(|c| c.type_ == "Established" && c.status == "True");
            if established {
                return Ok(());
            }
            if tokio::time::Instant::now() > deadline {
                return Err(ApplyError::CrdNotEstablished {
                    name: name.to_owned(),
                    timeout: CRD_ESTABLISH_TIMEOUT,
                });
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Deletes every object of `inventory` that `owner` still manages, in delete order
    /// ([`sort_for_delete`]), keeping CRDs that still have custom resources and namespaces that hold
    /// anything else (both orphaned: their owner labels are removed).
    pub async fn delete_all(
        &self,
        owner: &str,
        inventory: &[InventoryEntry],
    ) -> Result<DeleteReport, ApplyError> {
        let mut keys: Vec<ObjectKey> = inventory.iter().map(ObjectKey::from).collect();
        sort_for_delete(&mut keys, |k| k);
        let mut report = DeleteReport::default();
        for key in keys {
            match self.remove(owner, &key).await? {
                Removal::Deleted => report.deleted.push(key),
                Removal::Kept(reason) => {
                    self.release(&key).await?;
                    report.orphaned.push((key, reason));
                }
                Removal::Gone => {}
            }
        }
        Ok(report)
    }

    /// Deletes one object `owner` manages, unless something would be lost.
    async fn remove(&self, owner: &str, key: &ObjectKey) -> Result<Removal, ApplyError> {
        let Some((resource, capabilities)) = self.discover(key).await? else {
            return Ok(Removal::Gone);
        };
        let namespace = match capabilities.scope {
            Scope::Namespaced => key.namespace.as_deref(),
            Scope::Cluster => None,
        };
        let api = self.api(&resource, namespace);
        let Some(live) = api
            .get_opt(&key.name)
            .await
            .map_err(|source| ApplyError::Read {
                object: key.clone(),
                source,
            })?
        else {
            return Ok(Removal::Gone);
        };
        if owning_bundle_deployment(live.metadata.labels.as_ref()) != Some(owner) {
            // Someone else took it over (or it was never ours): not ours to delete.
            return Ok(Removal::Gone);
        }
        if live
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(PRUNE_ANNOTATION))
            .map(String::as_str)
            == Some(PRUNE_DISABLED)
        {
            return Ok(Removal::Kept(format!(
                "annotated {PRUNE_ANNOTATION}={PRUNE_DISABLED}"
            )));
        }
        if is_crd(key)
            && let Some(count) = self.custom_resources_exist(&live).await?
        {
            return Ok(Removal::Kept(format!(
                "CRD still has custom resources (at least {count}); deleting it would delete them"
            )));
        }
        if key.group.is_empty()
            && key.kind == "Namespace"
            && let Some(other) = self.foreign_object_in(&key.name, owner).await?
        {
            return Ok(Removal::Kept(format!(
                "namespace holds {other}, which this BundleDeployment did not create"
            )));
        }
        match api.delete(&key.name, &DeleteParams::background()).await {
            Ok(_) => Ok(Removal::Deleted),
            Err(err) if is_not_found(&err) => Ok(Removal::Gone),
            Err(source) => Err(ApplyError::Delete {
                object: key.clone(),
                source,
            }),
        }
    }

    /// Leaves every object of `inventory` that `owner` still manages in place, removing
    /// only the ownership labels (`deletionPolicy: Orphan`); returns what it released.
    pub async fn release_all(
        &self,
        owner: &str,
        inventory: &[InventoryEntry],
    ) -> Result<Vec<ObjectKey>, ApplyError> {
        let mut released = Vec::new();
        for key in inventory.iter().map(ObjectKey::from) {
            let Some((resource, capabilities)) = self.discover(&key).await? else {
                continue;
            };
            let namespace = match capabilities.scope {
                Scope::Namespaced => key.namespace.as_deref(),
                Scope::Cluster => None,
            };
            let live = self
                .api(&resource, namespace)
                .get_opt(&key.name)
                .await
                .map_err(|source| ApplyError::Read {
                    object: key.clone(),
                    source,
                })?;
            if live.is_some_and(|l| {
                owning_bundle_deployment(l.metadata.labels.as_ref()) == Some(owner)
            }) {
                self.release(&key).await?;
                released.push(key);
            }
        }
        Ok(released)
    }

    /// Removes the owner labels from an object that is left behind.
    async fn release(&self, key: &ObjectKey) -> Result<(), ApplyError> {
        let Some((resource, _)) = self.discover(key).await? else {
            return Ok(());
        };
        let patch = json!({ "metadata": { "labels": {
            rukpak_api::labels::OWNER_KIND: null, rukpak_api::labels::OWNER_NAME: null
        }}});
        match self
            .api(&resource, key.namespace.as_deref())
            .patch(&key.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => Ok(()),
            Err(err) if is_not_found(&err) => Ok(()),
            Err(source) => Err(ApplyError::Apply {
                object: key.clone(),
                source,
            }),
        }
    }

    /// How many custom resources (up to a small number) exist for a live CRD, if any.
    async fn custom_resources_exist(
        &self,
        crd: &DynamicObject,
    ) -> Result<Option<usize>, ApplyError> {
        let Ok(crd) = to_crd(crd) else {
            return Ok(None);
        };
        let Some(version) = crd.spec.versions.iter().find(|v| v.served) else {
            return Ok(None);
        };
        let resource = ApiResource {
            group: crd.spec.group.clone(),
            version: version.name.clone(),
            api_version: format!("{}/{}", crd.spec.group, version.name),
            kind: crd.spec.names.kind.clone(),
            plural: crd.spec.names.plural.clone(),
        };
        let list = Api::<DynamicObject>::all_with(self.client.clone(), &resource)
            .list_metadata(&ListParams::default().limit(5))
            .await;
        match list {
            Ok(list) if list.items.is_empty() => Ok(None),
            Ok(list) => Ok(Some(list.items.len())),
            Err(err) if is_not_found(&err) => Ok(None),
            Err(source) => Err(ApplyError::Read {
                object: crd_key(&crd.metadata.name.unwrap_or_default()),
                source,
            }),
        }
    }

    /// The first object in `namespace` not managed by `owner` (ignoring what Kubernetes
    /// creates in every namespace), if any.
    async fn foreign_object_in(
        &self,
        namespace: &str,
        owner: &str,
    ) -> Result<Option<String>, ApplyError> {
        let discovery_failed = |source| ApplyError::Discovery {
            api_version: "*".into(),
            kind: "*".into(),
            source,
        };
        let mut group_names = vec![kube::discovery::ApiGroup::CORE_GROUP.to_owned()];
        group_names.extend(
            self.client
                .list_api_groups()
                .await
                .map_err(discovery_failed)?
                .groups
                .into_iter()
                .map(|g| g.name),
        );
        // Group by group, not `Discovery::run`: a group that vanishes between the listing and
        // its query (a CRD being deleted, typically by this very cleanup) fails the whole
        // run, and only means there is nothing of that group left to find.
        let mut groups = Vec::new();
        for name in group_names {
            match kube::discovery::group(&self.client, &name).await {
                Ok(group) => groups.push(group),
                Err(err) if is_not_found(&err) || matches!(err, kube::Error::Discovery(_)) => {}
                Err(source) => return Err(discovery_failed(source)),
            }
        }
        for group in &groups {
            for (resource, capabilities) in group.recommended_resources() {
                if capabilities.scope != Scope::Namespaced
                    || !capabilities.supports_operation(kube::discovery::verbs::LIST)
                {
                    continue;
                }
                if ["Event", "Lease", "EndpointSlice", "Endpoints"]
                    .contains(&resource.kind.as_str())
                {
                    continue;
                }
                let Ok(list) = Api::<DynamicObject>::namespaced_with(
                    self.client.clone(),
                    namespace,
                    &resource,
                )
                .list_metadata(&ListParams::default().limit(50))
                .await
                else {
                    continue;
                };
                for item in list.items {
                    let name = item.metadata.name.clone().unwrap_or_default();
                    let automatic = (resource.kind == "ConfigMap" && name == "kube-root-ca.crt")
                        || (resource.kind == "ServiceAccount" && name == "default");
                    let ours =
                        owning_bundle_deployment(item.metadata.labels.as_ref()) == Some(owner);
                    // Pods, ReplicaSets and the like belong to our workloads through owner
                    // references; they go with them.
                    let owned = item
                        .metadata
                        .owner_references
                        .as_ref()
                        .is_some_and(|r| !r.is_empty());
                    if !automatic && !ours && !owned {
                        return Ok(Some(format!("{} {namespace}/{name}", resource.kind)));
                    }
                }
            }
        }
        Ok(None)
    }
}

/// Whether `item` must be written: it is missing, or a field we set has drifted.
/// What preflight decided: the objects in apply order, split at the foundations.
struct Plan {
    /// Namespaces and CRDs, written (and the CRDs established) before anything else.
    foundations: Vec<Resolved>,
    /// Every other object whose kind is served now, in apply order.
    rest: Vec<Resolved>,
    /// Namespaces this bundle creates: objects in them cannot be dry-run before they exist.
    new_namespaces: HashSet<String>,
}

impl Plan {
    fn in_new_namespace(&self, item: &Resolved) -> bool {
        item.key
            .namespace
            .as_ref()
            .is_some_and(|ns| self.new_namespaces.contains(ns))
    }

    /// What to dry-run before the first write: every object that needs a write, except
    /// those in namespaces this bundle creates.
    fn dry_run_first<'a>(
        &'a self,
        live: &'a HashMap<ObjectKey, DynamicObject>,
    ) -> impl Iterator<Item = &'a Resolved> + 'a {
        self.foundations
            .iter()
            .chain(self.rest.iter())
            .filter(move |r| !self.in_new_namespace(r) && needs_write(r, live.get(&r.key)))
    }
}

/// Whether applying `applied` over `request`'s previous inventory removes webhook
/// configurations (or other admission objects) before the rest is written. Pure.
fn admission_prunes(request: &ApplyRequest, applied: &[ObjectKey]) -> bool {
    !stale_where(request, applied, &[], |key| {
        phase_of(key) == Phase::Admission
    })
    .is_empty()
}

/// What `request`'s previous inventory has and `applied` does not (see [`stale`]), leaving
/// out what was already pruned, of the objects `which` selects. Pure.
fn stale_where(
    request: &ApplyRequest,
    applied: &[ObjectKey],
    pruned: &[ObjectKey],
    which: impl Fn(&ObjectKey) -> bool,
) -> Vec<ObjectKey> {
    let previous: Vec<ObjectKey> = request
        .previous_inventory
        .iter()
        .map(ObjectKey::from)
        .filter(|key| !pruned.contains(key))
        .collect();
    stale(&previous, applied)
        .into_iter()
        .filter(|key| which(key))
        .collect()
}

/// The first object of `rest` that the phased writes write: phase by phase, in apply
/// order, the first that needs a write. Pure.
fn first_rest_write<'a>(
    rest: &'a [Resolved],
    live: &HashMap<ObjectKey, DynamicObject>,
) -> Option<&'a ObjectKey> {
    [Phase::Configuration, Phase::Workloads, Phase::Admission]
        .into_iter()
        .flat_map(|phase| rest.iter().filter(move |r| phase_of(&r.key) == phase))
        .find(|r| needs_write(r, live.get(&r.key)))
        .map(|r| &r.key)
}

/// Decides, before any write, whether `owner` may apply `ready` over what exists (`live`):
/// every collision and every unsafe CRD change is reported at once; otherwise the plan, in
/// apply order. Pure.
// The engine's one error type, as every (async) step returns it; boxing it here alone
// would buy nothing.
#[allow(clippy::result_large_err)]
fn preflight(
    owner: &str,
    author: Option<&str>,
    policy: CollisionProtection,
    mut ready: Vec<Resolved>,
    live: &HashMap<ObjectKey, DynamicObject>,
) -> Result<Plan, ApplyError> {
    let mut collisions = Vec::new();
    let mut violations = Vec::new();
    for item in &ready {
        let Some(existing) = live.get(&item.key) else {
            continue;
        };
        if let Some(collision) =
            collision::check(owner, author, policy, &item.key, &existing.metadata)
        {
            collisions.push(collision);
        }
        if is_crd(&item.key)
            && let (Ok(old), Ok(new)) = (to_crd(existing), to_crd(&item.object))
        {
            violations.extend(crd_safety::check(&old, &new));
        }
    }
    if !collisions.is_empty() {
        return Err(ApplyError::Collisions(collisions));
    }
    if !violations.is_empty() {
        return Err(ApplyError::UnsafeCrdUpgrade(violations));
    }
    sort_for_apply(&mut ready, |r| &r.key);
    let new_namespaces = ready
        .iter()
        .filter(|r| {
            r.key.group.is_empty() && r.key.kind == "Namespace" && !live.contains_key(&r.key)
        })
        .map(|r| r.key.name.clone())
        .collect();
    let (foundations, rest) = ready
        .into_iter()
        .partition(|r| phase_of(&r.key) == Phase::Foundations);
    Ok(Plan {
        foundations,
        rest,
        new_namespaces,
    })
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

/// Sets [`rukpak_api::labels::APPLIED_HASH`] to the hash of `object` as it is without it,
/// so that dropping a field from the desired object is seen as drift (see the constant).
fn stamp_applied_hash(object: &mut DynamicObject) {
    if let Some(annotations) = object.metadata.annotations.as_mut() {
        annotations.remove(rukpak_api::labels::APPLIED_HASH);
    }
    // Serialising a DynamicObject cannot fail; an empty hash input would only cost writes.
    let bytes = serde_json::to_vec(&*object).unwrap_or_default();
    let hash = rukpak_api::names::short_hash(&bytes);
    object
        .metadata
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(rukpak_api::labels::APPLIED_HASH.to_owned(), hash);
}

fn needs_write(item: &Resolved, live: Option<&DynamicObject>) -> bool {
    let Some(live) = live else { return true };
    match (
        serde_json::to_value(&item.object),
        serde_json::to_value(live),
    ) {
        (Ok(desired), Ok(live)) => !is_subset(&as_stored(&desired), &live),
        _ => true,
    }
}

enum Removal {
    Deleted,
    Kept(String),
    Gone,
}

/// Whether an object is marked [`OPTIONAL_ANNOTATION`]. Pure.
fn is_optional(object: &DynamicObject) -> bool {
    object
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(OPTIONAL_ANNOTATION))
        .is_some_and(|v| v == "true")
}

/// The key of an object whose kind is unknown (so its scope is too): an object naming no
/// namespace is reported in the install namespace, where it would land if namespaced.
fn with_default_namespace(mut key: ObjectKey, request: &ApplyRequest) -> ObjectKey {
    if key.namespace.is_none() {
        key.namespace = request.install_namespace.clone();
    }
    key
}

/// The Services (namespace, name) that webhook configurations and APIServices call. Pure.
fn backend_services<'a>(objects: impl Iterator<Item = &'a DynamicObject>) -> Vec<(String, String)> {
    let mut services = Vec::new();
    for object in objects {
        let references: Vec<&serde_json::Value> = match object.data.get("webhooks") {
            Some(serde_json::Value::Array(webhooks)) => webhooks
                .iter()
                .filter_map(|w| w.pointer("/clientConfig/service"))
                .collect(),
            _ => object.data.pointer("/spec/service").into_iter().collect(),
        };
        for reference in references {
            let field = |key: &str| reference.get(key).and_then(serde_json::Value::as_str);
            if let (Some(namespace), Some(name)) = (field("namespace"), field("name")) {
                let service = (namespace.to_owned(), name.to_owned());
                if !services.contains(&service) {
                    services.push(service);
                }
            }
        }
    }
    services
}

/// Whether any endpoint of these EndpointSlices is ready (a missing `ready` counts as
/// ready, as the API documents). Pure.
fn has_ready_endpoint<'a>(slices: impl Iterator<Item = &'a serde_json::Value>) -> bool {
    slices
        .filter_map(|slice| slice.get("endpoints").and_then(serde_json::Value::as_array))
        .flatten()
        .any(|endpoint| endpoint.pointer("/conditions/ready") != Some(&json!(false)))
}

/// Why one pod is not Ready, when its status says more than "starting": a container
/// waiting for a reason other than `ContainerCreating`, a container that last ended with an
/// error, or the scheduler's reason it has no node. Pure.
fn describe_unready_pod(pod: &serde_json::Value) -> Option<String> {
    if has_true_condition(pod, "Ready") {
        return None;
    }
    let text = |value: &serde_json::Value, key: &str| {
        value
            .get(key)
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let statuses = ["/status/initContainerStatuses", "/status/containerStatuses"]
        .iter()
        .filter_map(|path| pod.pointer(path).and_then(serde_json::Value::as_array))
        .flatten();
    for container in statuses {
        let name = text(container, "name");
        let exit = container
            .pointer("/lastState/terminated")
            .and_then(|ended| Some((ended.get("exitCode")?.as_i64()?, text(ended, "reason"))))
            .filter(|(code, _)| *code != 0);
        if let Some(waiting) = container.pointer("/state/waiting") {
            let reason = text(waiting, "reason");
            // The back-off message counts up ("back-off 40s ..."): leave it out, so a pod that
            // keeps crashing the same way does not rewrite the status each time.
            if reason == "CrashLoopBackOff" {
                return Some(match exit {
                    Some((code, why)) => {
                        format!(
                            "container {name} is in CrashLoopBackOff, last exit code {code} ({why})"
                        )
                    }
                    None => format!("container {name} is in CrashLoopBackOff"),
                });
            }
            // The kubelet alternates these two while it backs off: one sentence for both.
            if reason == "ErrImagePull" || reason == "ImagePullBackOff" {
                return Some(format!(
                    "container {name} cannot pull its image {} (the pod's events give the registry's answer)",
                    text(container, "image")
                ));
            }
            if !reason.is_empty() && reason != "ContainerCreating" && reason != "PodInitializing" {
                let message = text(waiting, "message");
                return Some(if message.is_empty() {
                    format!("container {name} is waiting: {reason}")
                } else {
                    format!("container {name} is waiting: {reason}: {message}")
                });
            }
        }
        if let Some((code, why)) = exit {
            return Some(format!("container {name} exited with code {code} ({why})"));
        }
    }
    pod.pointer("/status/conditions")
        .and_then(serde_json::Value::as_array)
        .into_iter()
        .flatten()
        .find(|c| {
            c.get("type") == Some(&json!("PodScheduled"))
                && c.get("status") == Some(&json!("False"))
        })
        .map(|c| format!("not scheduled: {}", text(c, "message")))
}

/// Whether any of `pods` is Ready with a loopback address (see `serves_on_loopback`). Pure.
fn has_ready_loopback_pod<'a>(pods: impl Iterator<Item = &'a serde_json::Value>) -> bool {
    pods.filter(|pod| pod.pointer("/metadata/deletionTimestamp").is_none())
        .filter(|pod| has_true_condition(pod, "Ready"))
        .filter_map(|pod| {
            pod.pointer("/status/podIP")
                .and_then(serde_json::Value::as_str)
        })
        .filter_map(|ip| ip.parse::<std::net::IpAddr>().ok())
        .any(|ip| ip.is_loopback())
}

/// Whether a Deployment reports `Available=True`. Pure.
/// Whether an object (as JSON) has the condition `type`=True: a CRD Established, a
/// Deployment Available. Pure.
fn has_true_condition(object: &serde_json::Value, type_: &str) -> bool {
    object
        .pointer("/status/conditions")
        .and_then(serde_json::Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| c.get("type") == Some(&json!(type_)) && c.get("status") == Some(&json!("True")))
}

/// Whether objects of this kind roll out pods, and so gate the phases after them.
fn rolls_out(key: &ObjectKey) -> bool {
    matches!(
        (key.group.as_str(), key.kind.as_str()),
        ("apps", "Deployment" | "StatefulSet" | "DaemonSet") | ("batch", "Job")
    )
}

/// The inventory of an apply that stopped before a phase: what it wrote, and everything the
/// previous revision had (not pruned yet), in apply order.
fn inventory_while_waiting(
    written: &[&Resolved],
    previous: &[InventoryEntry],
) -> Vec<InventoryEntry> {
    let mut keys: Vec<ObjectKey> = written.iter().map(|r| r.key.clone()).collect();
    for entry in previous {
        let key = ObjectKey::from(entry);
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    sort_for_apply(&mut keys, |k| k);
    keys.iter().map(InventoryEntry::from).collect()
}

fn crd_key(name: &str) -> ObjectKey {
    ObjectKey {
        group: "apiextensions.k8s.io".into(),
        version: "v1".into(),
        kind: "CustomResourceDefinition".into(),
        namespace: None,
        name: name.to_owned(),
    }
}

fn to_crd(object: &DynamicObject) -> Result<CustomResourceDefinition, serde_json::Error> {
    serde_json::to_value(object).and_then(serde_json::from_value)
}

/// (group, kind) a CRD object defines.
fn crd_group_kind(object: &DynamicObject) -> Option<(String, String)> {
    if !is_crd(&ObjectKey::of(object)) {
        return None;
    }
    let spec = object.data.get("spec")?;
    Some((
        spec.get("group")?.as_str()?.to_owned(),
        spec.get("names")?.get("kind")?.as_str()?.to_owned(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::owner_labels;
    use kube::ResourceExt;

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
