//! The BundleDeployment controller every provisioner runs. A provisioner supplies only a
//! [`BundleFormat`] (how unpacked content becomes objects); finding the Bundle, loading
//! its content, applying, pruning, drift correction, health, finalization and status are
//! the same for all.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kit::events::Recorder;
use kube::api::DynamicObject;
use kube::core::PartialObjectMeta;
use kube::runtime::controller::Action;
use kube::runtime::finalizer::{Event as Finalizer, finalizer};
use kube::runtime::reflector::{ObjectRef, Store, store::Writer};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Resource, ResourceExt};
use rukpak_api::conditions::{TYPE_UNPACKED, reasons::UNPACK_FAILED};
use rukpak_api::labels::OWNER_NAME;
use rukpak_api::{
    Bundle, BundleDeployment, BundleDeploymentStatus, BundlePhase, DeletionPolicy, InventoryEntry,
    ProvisionerClass, bundle_name, template_hash,
};
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::sync::CancellationToken;

use health::Health;
use health::checks::{CompiledChecks, judge};
use kit::admin::Readiness;
use kit::metrics::ReconcileMetrics;
use kit::retry::{Backoff, Classify, Retry};

use crate::apply::{Applier, ApplyError, ApplyReport, ApplyRequest};
use crate::content_cache::ContentCache;
use crate::drift::DriftWatches;
use crate::identity;
use crate::kinds::KindCache;
use crate::object::ObjectKey;
use crate::revisions::{Progress, Target, seconds_to_deadline};
use crate::status::{Outcome, RevisionStep, next_status, shows_progress, with_revisions};
use crate::warnings::{SharedClients, Warnings, recording_warnings};

/// An apply that takes longer than this shows its steps in status (`Progressing`); a
/// quicker one only writes its outcome.
const SHOW_PROGRESS_AFTER: Duration = Duration::from_secs(2);

/// Finalizer on every BundleDeployment a provisioner manages: its objects are removed
/// (keeping user data) before the BundleDeployment goes.
pub const FINALIZER: &str = "core.rukpak.io/delete-objects";

/// How a provisioner turns unpacked bundle content into objects.
pub trait BundleFormat: Send + Sync + 'static {
    /// The provisioner id this format serves (a ProvisionerClass's `spec.provisioner`).
    fn provisioner_id(&self) -> &'static str;

    /// The objects to apply for `deployment` from the bundle's files. The error message is
    /// shown to the user on the `HasValidBundle` condition.
    fn objects(
        &self,
        files: &content::FileMap,
        deployment: &BundleDeployment,
    ) -> Result<Vec<DynamicObject>, String>;

    /// The objects to apply and the install namespace (the default namespace of namespaced
    /// objects; created when missing and then removed with the bundle, unless it holds
    /// anything else). `class_parameters` is the ProvisionerClass's `spec.parameters`. The
    /// default is [`Self::objects`] and `spec.installNamespace`; formats that derive the
    /// namespace from the bundle itself, or read class parameters, override this.
    fn plan(
        &self,
        files: &content::FileMap,
        deployment: &BundleDeployment,
        class_parameters: Option<&serde_json::Value>,
    ) -> Result<Plan, String> {
        let _ = class_parameters;
        Ok(Plan {
            objects: self.objects(files, deployment)?,
            install_namespace: deployment.spec.install_namespace.clone(),
            adjustments: Vec::new(),
        })
    }
}

/// What a [`BundleFormat`] makes of a bundle for one BundleDeployment.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// The objects to apply.
    pub objects: Vec<DynamicObject>,
    /// The install namespace, if any.
    pub install_namespace: Option<String>,
    /// What the format changed from the bundle as written so it installs safely, as
    /// sentences; kept in `status.adjustments` and announced by an Event when they change.
    pub adjustments: Vec<String>,
}

/// Settings of the controller.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Namespace of the content store.
    pub system_namespace: String,
    /// How often an unchanged BundleDeployment is re-checked for drift the watches missed.
    pub resync: Duration,
    /// Limits for reading unpacked content.
    pub limits: content::Limits,
    /// Only handle BundleDeployments matching this label selector (for sharding, or
    /// several instances on one cluster).
    pub selector: Option<String>,
    /// The ServiceAccount a BundleDeployment without `spec.serviceAccount` applies as;
    /// `None`: the provisioner's own identity. See [`crate::identity`].
    pub default_service_account: Option<rukpak_api::ServiceAccountRef>,
    /// Namespace of the ConfigMap the default identity is published in for the admission
    /// policy (the namespace its binding names; see [`crate::identity`]).
    pub identity_namespace: String,
    /// At most this many BundleDeployments are reconciled at once (0: no limit), so many
    /// slow or failing ones cannot take every worker from the rest.
    pub concurrency: u16,
    /// Lifetimes of the built-in webhook certificates (see [`crate::certificates`]).
    pub certificates: crate::certificates::Policy,
    /// Triggers of one BundleDeployment that arrive within this time of each other make one
    /// reconcile (a Bundle's unpacking steps, the watch events of several objects).
    pub debounce: Duration,
    /// At most this many bytes of unpacked bundle content are kept in memory between
    /// reconciles (see [`crate::content_cache`]).
    pub content_cache_bytes: u64,
}

/// Everything a reconcile needs.
pub struct Context<F> {
    client: Client,
    config: kube::Config,
    format: F,
    settings: Settings,
    store: content::store::Store,
    drift: DriftWatches,
    recorder: Recorder,
    metrics: ReconcileMetrics,
    backoff: Backoff,
    kinds: Arc<KindCache>,
    clients: SharedClients,
    /// The user name the API server authenticates this provisioner as, learned on first
    /// need: the author of what it writes as itself.
    own_username: tokio::sync::OnceCell<String>,
    /// The field manager of this provisioner's status writes (and its Events' reporter).
    field_manager: String,
    /// Every ProvisionerClass, as its watch last saw it.
    classes: Store<ProvisionerClass>,
    /// Every Bundle owned by a BundleDeployment, as its watch last saw it.
    bundles: Store<Bundle>,
    /// The writers of those two stores, taken by [`run`], which starts their watches.
    writers: std::sync::Mutex<Option<(Writer<ProvisionerClass>, Writer<Bundle>)>>,
    contents: ContentCache,
}

/// A failed reconcile.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading or writing the BundleDeployment or its Bundle failed.
    #[error("failed to {verb} {object}")]
    Kube {
        /// What we tried.
        verb: &'static str,
        /// Which object.
        object: String,
        /// Why.
        #[source]
        source: kube::Error,
    },
    /// The finalizer machinery failed.
    #[error("failed to run the finalizer of {0}")]
    Finalizer(
        String,
        #[source] Box<kube::runtime::finalizer::Error<Error>>,
    ),
    /// Removing applied objects on deletion failed.
    #[error("failed to delete the objects of {0}")]
    Cleanup(String, #[source] Box<ApplyError>),
    /// A client for applying could not be built.
    #[error("failed to create a client acting as {0}")]
    Client(String, #[source] kube::Error),
}

impl Classify for Error {
    fn retry(&self) -> Retry {
        Retry::Backoff
    }

    fn label(&self) -> &'static str {
        match self {
            Self::Kube { .. } => "kube",
            Self::Finalizer(..) => "finalizer",
            Self::Cleanup(..) => "cleanup",
            Self::Client(..) => "client",
        }
    }
}

impl<F: BundleFormat> Context<F> {
    /// Builds the context. `config` is the provisioner's own client configuration; clients
    /// impersonating a BundleDeployment's ServiceAccount are derived from it.
    pub fn new(
        client: Client,
        config: kube::Config,
        format: F,
        settings: Settings,
        metrics: ReconcileMetrics,
        drift: DriftWatches,
    ) -> Self {
        let classes = Writer::default();
        let bundles = Writer::default();
        Self {
            classes: classes.as_reader(),
            bundles: bundles.as_reader(),
            writers: std::sync::Mutex::new(Some((classes, bundles))),
            contents: ContentCache::new(settings.content_cache_bytes),
            store: content::store::Store::new(client.clone(), &settings.system_namespace),
            recorder: kit::controller::recorder(
                client.clone(),
                &format!("{}-provisioner", format.provisioner_id()),
            ),
            field_manager: format!("{}-provisioner", format.provisioner_id()),
            client,
            config,
            format,
            settings,
            drift,
            metrics,
            backoff: Backoff::default(),
            kinds: Arc::new(KindCache::new()),
            clients: SharedClients::default(),
            own_username: tokio::sync::OnceCell::new(),
        }
    }

    /// The applier for a BundleDeployment, acting as the identity it applies as (see
    /// [`crate::identity`]), and the sink of the API server warnings its writes receive.
    async fn applier_for(
        &self,
        deployment: &BundleDeployment,
    ) -> Result<(Applier, Warnings), Error> {
        let account =
            identity::account_for(deployment, self.settings.default_service_account.as_ref());
        let identity = match account {
            Some(account) => format!("ServiceAccount {account}"),
            None => "the provisioner".to_owned(),
        };
        // Who the API server records as the author of what this applier creates, so that
        // it knows its own child BundleDeployments (see [`crate::collision`]).
        let author = match account {
            Some(account) => account.username(),
            None => self
                .own_username
                .get_or_try_init(|| identity::whoami(&self.client))
                .await
                .map_err(|source| Error::Kube {
                    verb: "learn",
                    object: "the provisioner's own user name".to_owned(),
                    source,
                })?
                .clone(),
        };
        let shared = self
            .clients
            .get_or_build(&identity, || match account {
                Some(account) => identity::impersonating(&self.config, account),
                None => self.config.clone(),
            })
            .map_err(|source| Error::Client(identity, source))?;
        let (client, warnings) = recording_warnings(&shared);
        Ok((
            Applier::new(client, self.kinds.clone())
                .with_observer(self.client.clone())
                .with_watches(self.drift.clone())
                .with_author(author),
            warnings,
        ))
    }

    async fn event(
        &self,
        deployment: &BundleDeployment,
        warning: bool,
        reason: &str,
        note: String,
    ) {
        let reference = deployment.object_ref(&());
        kit::events::publish(
            &self.recorder,
            &reference,
            warning,
            reason,
            "Reconcile",
            note,
        )
        .await;
    }
}

/// Runs the controller until `shutdown`.
///
/// What a reconcile reads it reads from memory where a watch keeps it: ProvisionerClasses,
/// the Bundles of BundleDeployments, the objects applied (see [`crate::drift`]) and
/// unpacked content (see [`crate::content_cache`]). Its triggers are the changes that can
/// change what it does: what an author wrote on the BundleDeployment, the unpacking of its
/// Bundle, and changes to the applied objects that are not this process's own writes;
/// triggers within [`Settings::debounce`] of each other make one reconcile.
pub async fn run<F: BundleFormat>(
    ctx: Arc<Context<F>>,
    requests: tokio::sync::mpsc::Receiver<ObjectRef<BundleDeployment>>,
    readiness: &Readiness,
    shutdown: CancellationToken,
) {
    let writers = ctx
        .writers
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take();
    let Some((class_writer, bundle_writer)) = writers else {
        tracing::error!("the BundleDeployment controller of this context runs already");
        return;
    };
    tokio::spawn(identity::publish(
        ctx.client.clone(),
        ctx.format.provisioner_id().to_owned(),
        ctx.settings.default_service_account.clone(),
        ctx.settings.identity_namespace.clone(),
        shutdown.clone(),
    ));
    let classes = kit::watch::cached(
        Api::<ProvisionerClass>::all(ctx.client.clone()),
        watcher::Config::default(),
        class_writer,
        readiness,
        "watch:provisionerclasses",
    )
    .touched_objects();
    let (class_requests, from_classes) = tokio::sync::mpsc::channel(1024);
    let bundles = kit::watch::cached(
        Api::<Bundle>::all(ctx.client.clone()),
        watcher::Config::default().labels(OWNER_NAME),
        bundle_writer,
        readiness,
        "watch:bundles",
    )
    .touched_objects()
    .predicate_filter(unpack_progress, Default::default());
    let (bundle_requests, from_bundles) = tokio::sync::mpsc::channel(1024);
    tokio::spawn(kit::watch::forward(
        bundles,
        |bundle: &Bundle| {
            bundle
                .labels()
                .get(OWNER_NAME)
                .map(|owner| ObjectRef::new(owner))
        },
        bundle_requests,
        shutdown.clone(),
    ));

    let deployments: Api<BundleDeployment> = Api::all(ctx.client.clone());
    let config = kit::watch::config(ctx.settings.selector.as_deref());
    let controller = kit::watch::on_spec_changes_except_finalizers(
        deployments,
        config,
        readiness,
        "watch:bundledeployments",
    )
    .with_config(
        kube::runtime::controller::Config::default()
            .concurrency(ctx.settings.concurrency)
            .debounce(ctx.settings.debounce),
    );
    // A class appearing or changing (its provisioner, its parameters) concerns the
    // BundleDeployments that name it.
    let of_class = controller.store();
    tokio::spawn(kit::watch::forward(
        classes,
        move |class: &ProvisionerClass| {
            let name = class.name_any();
            of_class
                .state()
                .iter()
                .filter(|d| d.spec.provisioner_class_name == name)
                .map(|d| ObjectRef::from_obj(d.as_ref()))
                .collect::<Vec<_>>()
        },
        class_requests,
        shutdown.clone(),
    ));
    // A CRD appearing (or becoming Established) may serve a kind an optional object waits
    // for: reconcile the BundleDeployments that skipped one of its group. Metadata only: the
    // group is in the CRD's name, and whole CRDs can be megabytes each.
    let store = controller.store();
    let crds = watcher(
        Api::<PartialObjectMeta<CustomResourceDefinition>>::all(ctx.client.clone()),
        watcher::Config::default(),
    )
    .default_backoff()
    .touched_objects();
    let controller = controller
        .watches_stream(crds, move |crd| {
            waiting_for_group(&store.state(), crd_group(&crd.name_any()))
        })
        .reconcile_on(futures::stream::select(
            ReceiverStream::new(requests),
            futures::stream::select(
                ReceiverStream::new(from_bundles),
                ReceiverStream::new(from_classes),
            ),
        ))
        .graceful_shutdown_on(shutdown.cancelled_owned());
    controller
        .run(reconcile, error_policy, ctx)
        .for_each(|result| async move {
            if let Err(err) = result {
                tracing::debug!(error = %err, "reconcile request failed");
            }
        })
        .await;
}

/// A predicate (for `predicate_filter`) on a Bundle that changes when what its
/// BundleDeployment reads of it does: which Bundle it is, its spec, whether it is being
/// deleted, its phase and content, and its `Unpacked` condition (shown while it unpacks or
/// fails). Not `revisionOutcome`, which the provisioner writes itself. Pure.
fn unpack_progress(bundle: &Bundle) -> Option<u64> {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    let meta = bundle.meta();
    meta.uid.hash(&mut hasher);
    meta.generation.hash(&mut hasher);
    meta.deletion_timestamp.is_some().hash(&mut hasher);
    if let Some(status) = &bundle.status {
        status.phase.map(|p| p as u8).hash(&mut hasher);
        status.content.as_ref().map(|c| &c.digest).hash(&mut hasher);
        if let Some(unpacked) = kit::conditions::find(&status.conditions, TYPE_UNPACKED) {
            (&unpacked.status, &unpacked.reason, &unpacked.message).hash(&mut hasher);
        }
    }
    Some(hasher.finish())
}

/// The BundleDeployment with [`FINALIZER`]: as it is when it has it or is being deleted,
/// else after adding it (a merge patch on the resourceVersion read, so that finalizers
/// another controller changed meanwhile are never overwritten: the patch then conflicts
/// and the reconcile is retried).
async fn with_finalizer(
    api: &Api<BundleDeployment>,
    deployment: Arc<BundleDeployment>,
) -> Result<Arc<BundleDeployment>, kube::Error> {
    let finalizers = deployment.finalizers();
    if deployment.meta().deletion_timestamp.is_some() || finalizers.iter().any(|f| f == FINALIZER) {
        return Ok(deployment);
    }
    let mut with = finalizers.to_vec();
    with.push(FINALIZER.to_owned());
    let patch = serde_json::json!({
        "metadata": {
            "resourceVersion": deployment.resource_version(),
            "finalizers": with,
        }
    });
    let patched = api
        .patch(
            &deployment.name_any(),
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&patch),
        )
        .await?;
    Ok(Arc::new(patched))
}

/// The API group a CRD defines: its name is `<plural>.<group>`. Pure.
fn crd_group(name: &str) -> &str {
    name.split_once('.').map_or("", |(_, group)| group)
}

/// The BundleDeployments that skipped an optional object of `group`. Pure.
fn waiting_for_group(
    deployments: &[Arc<BundleDeployment>],
    group: &str,
) -> Vec<kube::runtime::reflector::ObjectRef<BundleDeployment>> {
    deployments
        .iter()
        .filter(|d| {
            d.status
                .as_ref()
                .is_some_and(|s| s.skipped.iter().any(|e| e.group == group))
        })
        .map(|d| kube::runtime::reflector::ObjectRef::from_obj(d.as_ref()))
        .collect()
}

fn error_policy<F: BundleFormat>(
    deployment: Arc<BundleDeployment>,
    error: &Error,
    ctx: Arc<Context<F>>,
) -> Action {
    kit::controller::retry_after(
        &ctx.backoff,
        "BundleDeployment",
        &deployment.name_any(),
        error,
    )
}

async fn reconcile<F: BundleFormat>(
    deployment: Arc<BundleDeployment>,
    ctx: Arc<Context<F>>,
) -> Result<Action, Error> {
    // What is read from watches must have been listed once: before that, a missing Bundle
    // or class would only mean "not seen yet".
    for ready in [
        kit::watch::until_listed(&ctx.classes).await,
        kit::watch::until_listed(&ctx.bundles).await,
    ] {
        if ready.is_err() {
            return Ok(Action::requeue(Duration::from_secs(1)));
        }
    }
    // Only BundleDeployments whose class this provisioner serves; the others are not
    // reconciles of this controller, and not counted as such.
    let class = ctx
        .classes
        .get(&ObjectRef::new(&deployment.spec.provisioner_class_name));
    let Some(class) = class.filter(|c| c.spec.provisioner == ctx.format.provisioner_id()) else {
        return Ok(Action::await_change());
    };
    let parameters = class.spec.parameters.as_ref();
    kit::controller::timed(&ctx.metrics, "bundledeployment", async {
        let api: Api<BundleDeployment> = Api::all(ctx.client.clone());
        let name = deployment.name_any();
        // The finalizer is added here and the work goes on in the same reconcile; kube's
        // `finalizer` would add it and wait for the watch event of that write.
        let deployment = match with_finalizer(&api, deployment).await {
            Ok(deployment) => deployment,
            Err(source) => {
                return Err(Error::Kube {
                    verb: "add the finalizer to",
                    object: format!("BundleDeployment {name}"),
                    source,
                });
            }
        };
        let result = finalizer(&api, FINALIZER, deployment, |event| async {
            match event {
                Finalizer::Apply(deployment) => apply(&deployment, &ctx, parameters).await,
                Finalizer::Cleanup(deployment) => cleanup(&deployment, &ctx).await,
            }
        })
        .await;
        match result {
            // The object went away between the cleanup and the finalizer's removal (another
            // finalizer was last, or the cleanup of a stale request): the work is done.
            Err(kube::runtime::finalizer::Error::RemoveFinalizer(kube::Error::Api(status)))
                if status.code == 404 =>
            {
                Ok(Action::await_change())
            }
            // Each step resets the backoff itself, after a success: an apply failure is an
            // Ok outcome (reported in status) that must keep backing off.
            Ok(action) => Ok(action),
            Err(err) => Err(Error::Finalizer(name, Box::new(err))),
        }
    })
    .await
}

async fn apply<F: BundleFormat>(
    deployment: &BundleDeployment,
    ctx: &Context<F>,
    class_parameters: Option<&serde_json::Value>,
) -> Result<Action, Error> {
    let name = deployment.name_any();
    let current = deployment.status.clone().unwrap_or_default();
    // The status last written while the apply ran, if any: what the server holds now.
    let mut in_flight = None;
    // When certificates want a look before the next resync (a rotation step is due).
    let mut recheck_after = None;
    let step = if deployment.spec.paused == Some(true) {
        Step::only(Outcome::Paused)
    } else {
        install(
            deployment,
            ctx,
            class_parameters,
            &current,
            &mut in_flight,
            &mut recheck_after,
        )
        .await?
    };
    // A new BundleDeployment whose Bundle rukpak-core has not created or unpacked yet gets no
    // status for its first moments: the Bundle's watch event usually comes within them, and
    // each status write is a request and an Event. Past that, the wait is news.
    if let Some(wait) = quiet_start_left(deployment, &step.outcome, std::time::SystemTime::now()) {
        return Ok(Action::requeue(wait));
    }
    let now = kit::conditions::now();
    let generation = deployment.meta().generation;
    let mut next = next_status(&current, &step.outcome, generation, &now);
    let failure = step.revision.as_ref().and_then(|revision| {
        with_revisions(
            &mut next,
            &current,
            revision,
            &deployment.spec,
            generation,
            &now,
        )
    });
    if next != *in_flight.as_ref().unwrap_or(&current) {
        announce(deployment, ctx, &current, &next).await;
        kit::status::apply(
            &Api::<BundleDeployment>::all(ctx.client.clone()),
            &name,
            &ctx.field_manager,
            &next,
        )
        .await
        .map_err(|source| Error::Kube {
            verb: "update the status of",
            object: format!("BundleDeployment {name}"),
            source,
        })?;
    }
    mark_bundles(ctx, &step.bundles, &next.revisions).await;
    if !matches!(step.outcome, Outcome::ApplyFailed { .. }) {
        ctx.backoff.reset(&name);
    }
    // A failed revision with rollbackOnFailure: the next reconcile applies the last healthy
    // one. It is the next step of this one, not a retry.
    let rolls_back_next = failure.is_some()
        && deployment.spec.rollback_on_failure == Some(true)
        && matches!(
            step.revision.as_ref().map(|r| &r.target),
            Some(Target::Current { .. })
        )
        && step.revision.as_ref().is_some_and(|r| {
            crate::revisions::last_known_good(
                &next,
                &step.bundles,
                r.target.applies().unwrap_or_default(),
            )
            .is_some()
        });
    if rolls_back_next {
        return Ok(Action::requeue(Duration::from_secs(1)));
    }
    // A rollout with a deadline is looked at again when the deadline passes.
    let deadline = step
        .revision
        .as_ref()
        .and_then(|r| r.applied.as_ref())
        .and_then(|(bundle, _, _)| {
            seconds_to_deadline(
                &next.revisions,
                bundle,
                deployment.spec.progress_deadline_seconds,
                &now,
            )
        })
        .map(Duration::from_secs);
    let soonest = |action: Duration| deadline.map_or(action, |d| d.min(action));
    Ok(match step.outcome {
        Outcome::Paused => Action::await_change(),
        // Unpacking progress arrives through the Bundle watch.
        Outcome::BundleMissing { .. } | Outcome::BundleNotUnpacked { .. } => {
            Action::requeue(ctx.settings.resync)
        }
        Outcome::LoadFailed { .. } | Outcome::InvalidHealthChecks { .. } => Action::await_change(),
        Outcome::ApplyFailed { .. } => Action::requeue(soonest(ctx.backoff.next_delay(&name))),
        // Status changes of the objects waited for arrive through the drift watches; the
        // requeue is a fallback.
        Outcome::Waiting { failed: false, .. } => {
            Action::requeue(soonest(PROBE_RECHECK.min(ctx.settings.resync)))
        }
        Outcome::Waiting { failed: true, .. } => {
            Action::requeue(soonest(ctx.backoff.next_delay(&name)))
        }
        Outcome::AwaitingApproval { .. } => Action::requeue(ctx.settings.resync),
        // Only written while an apply runs; a reconcile never ends on it.
        Outcome::Applying { .. } => Action::requeue(ctx.settings.resync),
        Outcome::Installed { .. } => Action::requeue(soonest(
            recheck_after.map_or(ctx.settings.resync, |soon| soon.min(ctx.settings.resync)),
        )),
    })
}

/// How long a new BundleDeployment waits for its Bundle before its status says so.
const QUIET_START: Duration = Duration::from_secs(10);

/// How much of [`QUIET_START`] is left for `deployment`, if it has no status yet and
/// `outcome` only says its Bundle is missing or still unpacking (not failing). Pure.
fn quiet_start_left(
    deployment: &BundleDeployment,
    outcome: &Outcome,
    now: std::time::SystemTime,
) -> Option<Duration> {
    if deployment.status.is_some() {
        return None;
    }
    if !matches!(
        outcome,
        Outcome::BundleMissing { .. } | Outcome::BundleNotUnpacked { failed: false, .. }
    ) {
        return None;
    }
    let created = std::time::SystemTime::from(deployment.meta().creation_timestamp.as_ref()?.0);
    let age = now.duration_since(created).unwrap_or_default();
    QUIET_START.checked_sub(age).filter(|left| !left.is_zero())
}

/// How often an apply waiting for probes looks again if no watch event came first.
const PROBE_RECHECK: Duration = Duration::from_secs(15);

/// What one reconcile did: the outcome for status, what it decided about revisions, and
/// the BundleDeployment's Bundles (read once, for the revision outcomes they show).
struct Step {
    outcome: Outcome,
    revision: Option<RevisionStep>,
    bundles: Vec<Bundle>,
}

impl Step {
    fn only(outcome: Outcome) -> Self {
        Self {
            outcome,
            revision: None,
            bundles: Vec::new(),
        }
    }
}

/// Shows each revision's outcome on its Bundle (`status.revisionOutcome`, for `kubectl get
/// bundles`), writing only the ones that changed. Best effort: the BundleDeployment's
/// status is the record; a failed write is logged and tried again next reconcile.
async fn mark_bundles<F: BundleFormat>(
    ctx: &Context<F>,
    bundles: &[Bundle],
    records: &[rukpak_api::RevisionRecord],
) {
    let api: Api<Bundle> = Api::all(ctx.client.clone());
    for bundle in bundles {
        let name = bundle.name_any();
        let Some(record) = crate::revisions::find(records, &name) else {
            continue;
        };
        let shown = bundle.status.as_ref().and_then(|s| s.revision_outcome);
        if shown == Some(record.outcome) {
            continue;
        }
        let patch = serde_json::json!({
            "apiVersion": "core.rukpak.io/v1alpha1",
            "kind": "Bundle",
            "status": { "revisionOutcome": record.outcome.as_str() },
        });
        let params = kube::api::PatchParams::apply(&format!("{}-revisions", ctx.field_manager));
        if let Err(err) = api
            .patch_status(&name, &params, &kube::api::Patch::Apply(&patch))
            .await
        {
            tracing::debug!(bundle = %name, error = %error_chain(&err), "failed to show the revision outcome on the Bundle");
        }
    }
}

/// Finds the Bundle of the current template, decides which revision to apply (see
/// [`crate::revisions`]), reviews one that waits for approval, and applies.
async fn install<F: BundleFormat>(
    deployment: &BundleDeployment,
    ctx: &Context<F>,
    class_parameters: Option<&serde_json::Value>,
    current: &BundleDeploymentStatus,
    in_flight: &mut Option<BundleDeploymentStatus>,
    recheck_after: &mut Option<Duration>,
) -> Result<Step, Error> {
    let name = deployment.name_any();
    let desired = bundle_name(&name, &template_hash(&deployment.spec.template));
    let bundles: Vec<Bundle> = ctx
        .bundles
        .state_filter(|b| b.labels().get(OWNER_NAME) == Some(&name))
        .into_iter()
        .map(|b| Bundle::clone(&b))
        .collect();
    let Some(found) = bundles.iter().find(|b| b.name_any() == desired) else {
        return Ok(Step::only(Outcome::BundleMissing { bundle: desired }));
    };
    if let Err(outcome) = unpacked_content(&desired, found.status.as_ref()) {
        return Ok(Step::only(*outcome));
    }
    let checks = match CompiledChecks::compile(&deployment.spec.health_checks) {
        Ok(checks) => Arc::new(checks),
        Err(message) => return Ok(Step::only(Outcome::InvalidHealthChecks { message })),
    };
    let target = crate::revisions::choose(&deployment.spec, current, found, &bundles);
    let pending = match &target {
        // Content does not change under a digest: a complete review of the same revision is
        // kept, so the drift events of what runs meanwhile do not each reload the content and
        // dry-run every object again. An incomplete one (refusals) is worked out again.
        Target::AwaitApproval {
            pending, digest, ..
        } => match current
            .pending_revision
            .as_ref()
            .filter(|p| p.digest == *digest && p.bundle == *pending && p.refused.is_empty())
        {
            Some(reviewed) => Some(reviewed.clone()),
            None => Some(
                review_pending(
                    ctx,
                    deployment,
                    class_parameters,
                    current,
                    found,
                    pending,
                    digest,
                    &checks,
                )
                .await,
            ),
        },
        _ => None,
    };
    let Some(applied) = target
        .applies()
        .and_then(|n| bundles.iter().find(|b| b.name_any() == n))
    else {
        let digest = crate::revisions::digest_of(found)
            .unwrap_or_default()
            .to_owned();
        return Ok(Step {
            outcome: Outcome::AwaitingApproval {
                bundle: desired,
                digest,
            },
            revision: Some(RevisionStep {
                target,
                applied: None,
                progress: Progress::Progressing,
                pending,
            }),
            bundles,
        });
    };
    let (outcome, progress) = apply_bundle(
        ctx,
        deployment,
        class_parameters,
        current,
        applied,
        checks,
        in_flight,
        recheck_after,
    )
    .await?;
    let revision = RevisionStep {
        applied: Some((
            applied.name_any(),
            crate::revisions::revision_of(applied),
            crate::revisions::digest_of(applied)
                .unwrap_or_default()
                .to_owned(),
        )),
        target,
        progress,
        pending,
    };
    Ok(Step {
        outcome,
        revision: Some(revision),
        bundles,
    })
}

/// What applying the revision `pending` (the unpacked Bundle `bundle`, content `digest`)
/// would change, for an administrator to approve: objects added, changed and removed,
/// RBAC permissions granted, and writes the API server refuses in a dry run. Nothing is
/// written. A failure to compute it is shown as a refusal, so it is never approved blind.
#[allow(clippy::too_many_arguments)]
async fn review_pending<F: BundleFormat>(
    ctx: &Context<F>,
    deployment: &BundleDeployment,
    class_parameters: Option<&serde_json::Value>,
    current: &BundleDeploymentStatus,
    bundle: &Bundle,
    pending: &str,
    digest: &str,
    checks: &Arc<CompiledChecks>,
) -> rukpak_api::PendingRevision {
    let mut summary = rukpak_api::PendingRevision {
        revision: crate::revisions::revision_of(bundle),
        bundle: pending.to_owned(),
        digest: digest.to_owned(),
        ..Default::default()
    };
    let reviewed = async {
        let content_ref = unpacked_content(pending, bundle.status.as_ref())
            .map_err(|_| "the Bundle is not unpacked".to_owned())?;
        let files = load(ctx, &content_ref).await?;
        let Plan {
            mut objects,
            install_namespace,
            adjustments: _,
        } = ctx.format.plan(&files, deployment, class_parameters)?;
        let mut absent = Vec::new();
        if let Some((namespace, missing)) =
            install_namespace_to_manage(ctx, deployment, install_namespace.as_deref(), &objects)
                .await
                .map_err(|err| error_chain(&err))?
        {
            if missing {
                absent.push(ObjectKey::of(&namespace));
            }
            objects.insert(0, namespace);
        }
        let (applier, _warnings) = ctx
            .applier_for(deployment)
            .await
            .map_err(|err| error_chain(&err))?;
        applier
            .review(&ApplyRequest {
                owner: deployment.name_any(),
                objects,
                install_namespace,
                collision_protection: deployment.spec.collision_protection,
                previous_inventory: current.inventory.clone(),
                health_checks: checks.clone(),
                absent,
                installed_already: false,
            })
            .await
            .map_err(|err| error_chain(&err))
    };
    match reviewed.await {
        Ok(review) => {
            let proposed: Vec<crate::review::Proposed<'_>> = review
                .objects
                .iter()
                .map(|o| crate::review::Proposed {
                    key: o.key.clone(),
                    desired: &o.desired,
                    live: o.live.as_ref(),
                    differs: o.differs,
                })
                .collect();
            let previous: Vec<ObjectKey> = current.inventory.iter().map(ObjectKey::from).collect();
            summary = crate::review::changes(&proposed, &previous).into_pending(
                summary.revision,
                pending,
                digest,
                review.refused,
            );
        }
        Err(message) => summary.refused.push(format!(
            "the changes could not be worked out, so this revision cannot be reviewed: {message}"
        )),
    }
    summary
}

/// Loads `bundle` and applies its objects; the outcome for status and what it means for
/// the revision.
#[allow(clippy::too_many_arguments)]
async fn apply_bundle<F: BundleFormat>(
    ctx: &Context<F>,
    deployment: &BundleDeployment,
    class_parameters: Option<&serde_json::Value>,
    current: &BundleDeploymentStatus,
    found: &Bundle,
    checks: Arc<CompiledChecks>,
    in_flight: &mut Option<BundleDeploymentStatus>,
    recheck_after: &mut Option<Duration>,
) -> Result<(Outcome, Progress), Error> {
    let bundle = found.name_any();
    let content_ref = match unpacked_content(&bundle, found.status.as_ref()) {
        Ok(content_ref) => content_ref,
        Err(outcome) => return Ok((*outcome, Progress::Retrying)),
    };
    let files = match load(ctx, &content_ref).await {
        Ok(files) => files,
        Err(message) => return Ok((Outcome::LoadFailed { bundle, message }, Progress::Retrying)),
    };
    let Plan {
        mut objects,
        install_namespace,
        adjustments,
    } = match ctx.format.plan(&files, deployment, class_parameters) {
        Ok(plan) => plan,
        Err(message) => {
            return Ok((
                Outcome::LoadFailed {
                    bundle,
                    message: message.clone(),
                },
                Progress::Failed(message),
            ));
        }
    };
    let mut absent = Vec::new();
    if let Some((namespace, missing)) =
        install_namespace_to_manage(ctx, deployment, install_namespace.as_deref(), &objects).await?
    {
        if missing {
            absent.push(ObjectKey::of(&namespace));
        }
        objects.insert(0, namespace);
    }
    let (applier, warnings) = ctx.applier_for(deployment).await?;
    // Certificates are read and decided as the deployment's identity, before anything is
    // written, so the webhook configurations go out with the CA that verifies their server.
    let certificates = match crate::certificates::provide(
        applier.client(),
        &deployment.name_any(),
        install_namespace.as_deref(),
        &mut objects,
        &ctx.settings.certificates,
    )
    .await
    {
        Ok(provided) => provided,
        Err(crate::certificates::CertificateError::Request(message)) => {
            return Ok((Outcome::LoadFailed { bundle, message }, Progress::Retrying));
        }
        Err(err) => {
            let message = error_chain(&err);
            return Ok((
                Outcome::ApplyFailed {
                    bundle,
                    message: message.clone(),
                },
                Progress::Failed(message),
            ));
        }
    };
    let request = ApplyRequest {
        owner: deployment.name_any(),
        objects,
        install_namespace,
        collision_protection: deployment.spec.collision_protection,
        previous_inventory: current.inventory.clone(),
        health_checks: checks.clone(),
        absent,
        installed_already: crate::status::installed_already(current, &bundle),
    };
    let applied = if shows_progress(current, &bundle, deployment.meta().generation) {
        apply_showing_progress(
            ctx, deployment, current, &bundle, applier, request, in_flight,
        )
        .await
    } else {
        applier.apply(request).await
    };
    let report = match applied {
        Ok(report) => report,
        Err(err) => {
            let message = error_chain(&err);
            let progress = if err.is_terminal() {
                Progress::Failed(message.clone())
            } else {
                Progress::Retrying
            };
            return Ok((Outcome::ApplyFailed { bundle, message }, progress));
        }
    };
    let warnings = warnings.take();
    announce_apply(ctx, deployment, &warnings, &report.kept).await;
    if adjustments != current.adjustments && !adjustments.is_empty() {
        ctx.event(
            deployment,
            false,
            "BundleAdjusted",
            format!(
                "the {bundle} Bundle was adjusted to install safely: {}",
                adjustments.join("; ")
            ),
        )
        .await;
    }
    let skipped: Vec<InventoryEntry> = report.skipped.iter().map(InventoryEntry::from).collect();
    if skipped != current.skipped && !skipped.is_empty() {
        ctx.event(
            deployment,
            false,
            "OptionalSkipped",
            format!(
                "skipped {} optional object(s) whose kind the cluster does not serve: {}",
                skipped.len(),
                report
                    .skipped
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )
        .await;
    }
    for (reason, warning, message) in &certificates.changes {
        ctx.event(deployment, *warning, reason, message.clone())
            .await;
    }
    *recheck_after = certificates.recheck_after;
    if let Some(wait) = &report.waiting {
        // Watch what is waited for, so its status changes wake this BundleDeployment.
        watch_kinds(ctx, &report.inventory).await;
        let message = wait.message();
        let progress = if wait.failed() {
            Progress::Failed(format!("a probe failed: {message}"))
        } else {
            Progress::Progressing
        };
        return Ok((
            Outcome::Waiting {
                bundle,
                message,
                failed: wait.failed(),
                inventory: report.inventory,
                skipped,
                adjustments,
            },
            progress,
        ));
    }
    let overall = judge_health(ctx, &report.inventory, &report.after_write, &checks).await;
    let progress = match &overall {
        Health::Healthy => Progress::Healthy,
        Health::Progressing(message) => Progress::NotHealthy {
            failing: false,
            message: message.clone(),
        },
        Health::Unhealthy(message) => Progress::NotHealthy {
            failing: true,
            message: message.clone(),
        },
    };
    Ok((
        Outcome::Installed {
            bundle,
            inventory: report.inventory,
            healthy: overall.is_healthy(),
            health_message: overall.message().unwrap_or_default().to_owned(),
            warnings,
            kept: report
                .kept
                .iter()
                .map(|(key, reason)| format!("{key}: {reason}"))
                .collect(),
            skipped,
            adjustments,
        },
        progress,
    ))
}

/// The content of the Bundle `bundle` (with `status`), or the outcome that says why there is
/// none yet. Pure.
fn unpacked_content(
    bundle: &str,
    status: Option<&rukpak_api::BundleStatus>,
) -> Result<rukpak_api::ContentRef, Box<Outcome>> {
    let status = status.cloned().unwrap_or_default();
    let unpacked = kit::conditions::find(&status.conditions, TYPE_UNPACKED);
    status
        .content
        .clone()
        .filter(|_| status.phase == Some(BundlePhase::Unpacked))
        .ok_or_else(|| {
            Box::new(Outcome::BundleNotUnpacked {
                failed: unpacked.is_some_and(|c| c.reason == UNPACK_FAILED),
                message: unpacked
                    .map(|c| c.message.clone())
                    .unwrap_or_else(|| "unpacking has not started".to_owned()),
                bundle: bundle.to_owned(),
            })
        })
}

/// Events for what an apply left for a person to know: the API server's warnings and the
/// objects kept instead of pruned.
async fn announce_apply<F: BundleFormat>(
    ctx: &Context<F>,
    deployment: &BundleDeployment,
    warnings: &[String],
    kept: &[(ObjectKey, String)],
) {
    for warning in warnings {
        ctx.event(
            deployment,
            true,
            "APIWarning",
            format!("the API server warned: {warning}"),
        )
        .await;
    }
    for (key, reason) in kept {
        ctx.event(
            deployment,
            false,
            "PruneSkipped",
            format!("kept {key}: {reason}"),
        )
        .await;
    }
}

/// Makes sure every kind of `inventory` is watched (drift, and status changes that move a
/// probe or health along).
async fn watch_kinds<F: BundleFormat>(ctx: &Context<F>, inventory: &[InventoryEntry]) {
    for entry in inventory {
        let key = ObjectKey::from(entry);
        let gvk = kube::core::GroupVersionKind::gvk(&key.group, &key.version, &key.kind);
        if let Ok(Some((resource, _))) = ctx.kinds.resolve(&ctx.client, &gvk).await {
            ctx.drift.ensure(&resource);
        }
    }
}

/// Watches every kind applied (drift), then judges health from the live objects: a
/// declared health check where one selects the object, else the built-in rules.
async fn judge_health<F: BundleFormat>(
    ctx: &Context<F>,
    inventory: &[rukpak_api::InventoryEntry],
    after_write: &std::collections::HashMap<ObjectKey, DynamicObject>,
    checks: &CompiledChecks,
) -> Health {
    let mut verdicts = Vec::new();
    for entry in inventory {
        let key = ObjectKey::from(entry);
        let gvk = kube::core::GroupVersionKind::gvk(&key.group, &key.version, &key.kind);
        let Ok(Some((resource, _))) = ctx.kinds.resolve(&ctx.client, &gvk).await else {
            continue;
        };
        ctx.drift.ensure(&resource);
        let live =
            crate::apply::observe(&ctx.client, Some(&ctx.drift), &key, &resource, after_write)
                .await;
        let verdict = match live {
            Ok(Some(live)) if checks.is_empty() => health::evaluate(&live),
            Ok(Some(live)) => judge(checks, &serde_json::to_value(&live).unwrap_or_default()),
            Ok(None) => Health::Unhealthy("not found".to_owned()),
            Err(err) => Health::Progressing(format!("failed to read: {err}")),
        };
        verdicts.push((key.to_string(), verdict));
    }
    health::aggregate(verdicts)
}

/// Runs the apply; once it has taken [`SHOW_PROGRESS_AFTER`], writes each step it starts
/// into status (`Progressing`), recording the last status written in `in_flight`.
/// Best effort: a failed status write is logged and the apply goes on.
async fn apply_showing_progress<F: BundleFormat>(
    ctx: &Context<F>,
    deployment: &BundleDeployment,
    current: &BundleDeploymentStatus,
    bundle: &str,
    applier: Applier,
    request: ApplyRequest,
    in_flight: &mut Option<BundleDeploymentStatus>,
) -> Result<ApplyReport, ApplyError> {
    let (progress, mut steps) = tokio::sync::watch::channel(None);
    let applier = applier.with_progress(progress);
    let apply = applier.apply(request);
    tokio::pin!(apply);
    let quiet = tokio::time::sleep(SHOW_PROGRESS_AFTER);
    tokio::pin!(quiet);
    let mut showing = false;
    loop {
        tokio::select! {
            biased;
            result = &mut apply => return result,
            () = &mut quiet, if !showing => showing = true,
            changed = steps.changed(), if showing => {
                // The sender went with the finished apply, which the next turn returns.
                if changed.is_err() {
                    continue;
                }
            }
        }
        let Some(step) = steps.borrow_and_update().clone() else {
            continue;
        };
        let next = next_status(
            current,
            &Outcome::Applying {
                bundle: bundle.to_owned(),
                step: step.to_string(),
            },
            deployment.meta().generation,
            &kit::conditions::now(),
        );
        if in_flight.as_ref() == Some(&next) {
            continue;
        }
        let name = deployment.name_any();
        match kit::status::apply(
            &Api::<BundleDeployment>::all(ctx.client.clone()),
            &name,
            &ctx.field_manager,
            &next,
        )
        .await
        {
            Ok(_) => *in_flight = Some(next),
            Err(err) => {
                tracing::debug!(bundle_deployment = %name, error = %error_chain(&err), "failed to show the apply step in status")
            }
        }
    }
}

/// The Namespace object to add for the install namespace (`spec.installNamespace`, or the
/// format's [`Plan::install_namespace`]): when it is missing, or was created by this
/// BundleDeployment before, it is managed like the bundle's own objects (and so removed
/// with them, unless it holds anything else). An existing namespace of someone else's is
/// used as it is and never claimed.
async fn install_namespace_to_manage<F: BundleFormat>(
    ctx: &Context<F>,
    deployment: &BundleDeployment,
    install_namespace: Option<&str>,
    objects: &[DynamicObject],
) -> Result<Option<(DynamicObject, bool)>, Error> {
    let Some(name) = install_namespace else {
        return Ok(None);
    };
    let in_bundle = objects.iter().any(|o| {
        o.types
            .as_ref()
            .is_some_and(|t| t.api_version == "v1" && t.kind == "Namespace")
            && o.metadata.name.as_deref() == Some(name)
    });
    if in_bundle {
        return Ok(None);
    }
    let namespace = serde_json::json!({ "apiVersion": "v1", "kind": "Namespace", "metadata": { "name": name } });
    // The drift watch of Namespaces holds the ones BundleDeployments manage: one this
    // BundleDeployment manages needs no read.
    let resource = kube::api::ApiResource::erase::<k8s_openapi::api::core::v1::Namespace>(&());
    if ctx.drift.cached(&resource, None, name).is_some_and(|ns| {
        crate::object::owning_bundle_deployment(ns.metadata.labels.as_ref())
            == Some(deployment.name_any().as_str())
    }) {
        return Ok(serde_json::from_value(namespace).ok().map(|ns| (ns, false)));
    }
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(ctx.client.clone());
    let existing = namespaces
        .get_opt(name)
        .await
        .map_err(|source| Error::Kube {
            verb: "read",
            object: format!("Namespace {name}"),
            source,
        })?;
    let ours = existing.as_ref().is_none_or(|ns| {
        crate::object::owning_bundle_deployment(ns.metadata.labels.as_ref())
            == Some(deployment.name_any().as_str())
    });
    if !ours {
        return Ok(None);
    }
    let missing = existing.is_none();
    Ok(serde_json::from_value(namespace)
        .ok()
        .map(|ns| (ns, missing)))
}

/// Reads and verifies the Bundle's content; the error is a message for the user.
async fn load<F: BundleFormat>(
    ctx: &Context<F>,
    content_ref: &rukpak_api::ContentRef,
) -> Result<Arc<content::FileMap>, String> {
    if let Some(files) = ctx.contents.get(&content_ref.digest) {
        return Ok(files);
    }
    let digest: content::Digest = content_ref
        .digest
        .parse()
        .map_err(|err| format!("invalid content digest {}: {err}", content_ref.digest))?;
    let content = ctx
        .store
        .read(&digest)
        .await
        .map_err(|err| error_chain(&err))?;
    let files = content
        .files(&ctx.settings.limits)
        .map_err(|err| error_chain(&err))?;
    Ok(ctx.contents.insert(&content_ref.digest, files))
}

/// Emits an Event for each condition whose status or reason changed. Progressing is a
/// running commentary on the others (and False is good news for it): not Events.
async fn announce<F: BundleFormat>(
    deployment: &BundleDeployment,
    ctx: &Context<F>,
    before: &BundleDeploymentStatus,
    after: &BundleDeploymentStatus,
) {
    // A valid bundle is only news when it was not: `HasValidBundle` turning True goes
    // without an Event (`Installed` tells the story), its turning False does not.
    let news: Vec<_> = after
        .conditions
        .iter()
        .filter(|c| {
            !(c.type_ == rukpak_api::conditions::TYPE_HAS_VALID_BUNDLE
                && c.status == kit::conditions::status::TRUE)
        })
        .cloned()
        .collect();
    kit::controller::announce(
        &ctx.recorder,
        &deployment.object_ref(&()),
        &before.conditions,
        &news,
        &[rukpak_api::conditions::TYPE_PROGRESSING],
    )
    .await;
}

async fn cleanup<F: BundleFormat>(
    deployment: &BundleDeployment,
    ctx: &Context<F>,
) -> Result<Action, Error> {
    let name = deployment.name_any();
    let inventory = deployment.status.clone().unwrap_or_default().inventory;
    // Deletion uses the provisioner's identity: a ServiceAccount that lost its rights must
    // not strand objects.
    let applier = Applier::new(ctx.client.clone(), ctx.kinds.clone());
    if deployment.spec.deletion_policy == DeletionPolicy::Orphan {
        let released = applier
            .release_all(&name, &inventory)
            .await
            .map_err(|err| Error::Cleanup(name.clone(), Box::new(err)))?;
        if !released.is_empty() {
            ctx.event(
                deployment,
                false,
                "Orphaned",
                format!(
                    "deletionPolicy is Orphan: left {} object(s) in place without ownership labels",
                    released.len()
                ),
            )
            .await;
        }
        ctx.backoff.reset(&name);
        return Ok(Action::await_change());
    }
    let report = applier
        .delete_all(&name, &inventory)
        .await
        .map_err(|err| Error::Cleanup(name.clone(), Box::new(err)))?;
    for (key, reason) in &report.orphaned {
        ctx.event(
            deployment,
            true,
            "Orphaned",
            format!("left {key} in place: {reason}"),
        )
        .await;
    }
    ctx.backoff.reset(&name);
    Ok(Action::await_change())
}

pub use kit::error_chain;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crd_wakes_the_deployments_that_skipped_a_kind_of_its_group() {
        let deployment = |name: &str, skipped_group: Option<&str>| {
            let mut value = serde_json::json!({
                "apiVersion": "core.rukpak.io/v1alpha1", "kind": "BundleDeployment",
                "metadata": {"name": name},
                "spec": {"provisionerClassName": "p", "template": {"spec": {
                    "provisionerClassName": "p", "source": {"type": "image", "image": {"ref": "r"}}}}},
            });
            if let Some(group) = skipped_group {
                value["status"] = serde_json::json!({"skipped": [{"group": group, "version": "v1",
                    "kind": "ServiceMonitor", "namespace": "ns", "name": "m"}]});
            }
            Arc::new(serde_json::from_value::<BundleDeployment>(value).unwrap())
        };
        let all = vec![
            deployment("monitored", Some("monitoring.coreos.com")),
            deployment("plain", None),
            deployment("other", Some("example.com")),
        ];
        assert_eq!(
            crd_group("servicemonitors.monitoring.coreos.com"),
            "monitoring.coreos.com"
        );
        let woken: Vec<String> =
            waiting_for_group(&all, crd_group("servicemonitors.monitoring.coreos.com"))
                .into_iter()
                .map(|r| r.name)
                .collect();
        assert_eq!(woken, ["monitored"]);
        assert!(waiting_for_group(&all, crd_group("widgets.unrelated.io")).is_empty());
    }

    fn status(value: serde_json::Value) -> rukpak_api::BundleStatus {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn only_an_unpacked_bundle_has_content_and_otherwise_its_own_message_is_shown() {
        let unpacked = status(serde_json::json!({
            "phase": "Unpacked",
            "content": { "digest": format!("sha256:{}", "0".repeat(64)), "size": 1, "chunks": 1 }
        }));
        assert!(unpacked_content("b", Some(&unpacked)).is_ok());

        let failing = status(serde_json::json!({
            "phase": "Failing",
            "conditions": [{ "type": "Unpacked", "status": "False", "reason": "UnpackFailed",
                "message": "refused to connect", "lastTransitionTime": "2026-01-01T00:00:00Z" }]
        }));
        assert_eq!(
            *unpacked_content("b", Some(&failing)).unwrap_err(),
            Outcome::BundleNotUnpacked {
                bundle: "b".into(),
                failed: true,
                message: "refused to connect".into()
            }
        );
        assert_eq!(
            *unpacked_content("b", None).unwrap_err(),
            Outcome::BundleNotUnpacked {
                bundle: "b".into(),
                failed: false,
                message: "unpacking has not started".into()
            }
        );
    }
}
