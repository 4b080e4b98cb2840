//! The ActiveResolution controller: activate resolved ActiveResolutions of the classes this
//! process serves.
//!
//! A reconcile is a pipeline of named steps: `selected_entities` (selections to catalog
//! bundles), the class's child BundleDeployments, the ResolveSet ConfigMap
//! (`ensure_resolve_set`), the wrapper BundleDeployment (`apply_wrapper`), the history
//! (`prune_history`) and finally the status (`write_status`). The build steps are the
//! pure functions of [`crate::resolve_set`].
//!
//! Only `status.entities` and the `Activated` condition are this controller's; deppy-resolver
//! owns `selections` and `Resolved`. Each server-side applies only its own fields
//! (`kit::status`), so neither erases the other's write.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use deppy_api::conditions::{TYPE_ACTIVATED, TYPE_RESOLVED};
use deppy_api::{ActiveResolution, ActiveResolutionStatus, Catalog, ResolvedEntity};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, ObjectReference};
use kit::events::Recorder;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Api, Client, Resource, ResourceExt};
use prometheus::{IntCounter, Opts, Registry};
use rukpak_api::BundleDeployment;
use tokio_util::sync::CancellationToken;

use kit::admin::Readiness;
#[cfg(test)]
use kit::conditions::{ConditionUpdate, set_condition};
use kit::conditions::{Desired, status};
use kit::controller::News;
use kit::kube_error::KubeCallError;
use kit::metrics::ReconcileMetrics;
use kit::retry::{Backoff, Classify, Retry};

use crate::catalogs::{CatalogCache, CatalogError, find_bundle};
use crate::classes::{ActivatorClass, Classes, Entity};
use crate::resolve_set::{self, BuildError, HistoryEntry, RESOLUTION_LABEL};
use crate::{names, reasons};
use deppy_api::Selection;

/// The field manager of every write, and the Event reporter.
pub const FIELD_MANAGER: &str = "resolution-activator";

/// The prefix of every metric of this binary.
const COMPONENT: &str = "resolution_activator";

/// How long a successful activation waits before checking again without any event (a
/// safety net; every input is watched).
const RESYNC: Duration = Duration::from_secs(30 * 60);

/// How long a blocked activation (missing catalog, unmapped selection) waits before
/// checking again without any event.
const BLOCKED_RECHECK: Duration = Duration::from_secs(5 * 60);

/// Settings of the controller.
#[derive(Debug, Clone)]
pub struct Settings {
    /// RukPak's system namespace: where ResolveSet ConfigMaps are written.
    pub system_namespace: String,
    /// Deppy's system namespace: where Catalog content is stored.
    pub catalog_namespace: String,
    /// Only ActiveResolutions (and Catalogs) matching this label selector are handled.
    pub selector: Option<String>,
    /// How many ResolveSet ConfigMaps to keep per resolution, the current one included.
    pub history: usize,
    /// Limits for reading catalog content.
    pub limits: content::Limits,
}

/// The controller's metrics.
#[derive(Debug, Clone)]
pub struct Metrics {
    reconcile: ReconcileMetrics,
    resolve_sets: IntCounter,
}

impl Metrics {
    /// Creates the metrics (`resolution_activator_reconcile_total{controller,result}`,
    /// `resolution_activator_reconcile_duration_seconds`,
    /// `resolution_activator_resolve_sets_written_total`) and registers them on `registry`.
    pub fn register(registry: &Registry) -> Result<Self, prometheus::Error> {
        let reconcile = ReconcileMetrics::register(registry, COMPONENT)?;
        let resolve_sets = IntCounter::with_opts(Opts::new(
            format!("{COMPONENT}_resolve_sets_written_total"),
            "ResolveSet ConfigMaps created.",
        ))?;
        registry.register(Box::new(resolve_sets.clone()))?;
        Ok(Self {
            reconcile,
            resolve_sets,
        })
    }
}

/// A failed reconcile. Every variant is transient (an API call failed): what the user must
/// fix is reported in the `Activated` condition instead.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading a Catalog failed.
    #[error("failed to read Catalog {catalog}")]
    ReadCatalog {
        /// The Catalog.
        catalog: String,
        /// Why.
        #[source]
        source: kube::Error,
    },
    /// Reading Catalog content failed.
    #[error(transparent)]
    CatalogContent(CatalogError),
    /// Building the objects failed.
    #[error("failed to build the objects of ActiveResolution {resolution}")]
    Build {
        /// The ActiveResolution.
        resolution: String,
        /// Why.
        #[source]
        source: BuildError,
    },
    /// A call to the API server failed.
    #[error(transparent)]
    Kube(#[from] KubeCallError),
}

impl Error {
    /// The `Activated` reason reporting this error.
    fn reason(&self) -> &'static str {
        match self {
            Self::ReadCatalog { .. } | Self::CatalogContent(_) => reasons::CATALOG_UNAVAILABLE,
            Self::Build { .. } | Self::Kube(_) => reasons::APPLY_FAILED,
        }
    }
}

impl Classify for Error {
    fn retry(&self) -> Retry {
        Retry::Backoff
    }

    fn label(&self) -> &'static str {
        match self {
            Self::ReadCatalog { .. } => "read_catalog",
            Self::CatalogContent(_) => "catalog_content",
            Self::Build { .. } => "build",
            Self::Kube(err) => err.label(),
        }
    }
}

/// Everything a reconcile needs.
pub struct Context {
    client: Client,
    settings: Settings,
    classes: Classes,
    catalogs: CatalogCache,
    recorder: Recorder,
    metrics: Metrics,
    backoff: Backoff,
}

impl Context {
    /// A context for the controller.
    pub fn new(client: Client, settings: Settings, classes: Classes, metrics: Metrics) -> Self {
        let store = content::Store::new(client.clone(), &settings.catalog_namespace);
        Self {
            recorder: kit::controller::recorder(client.clone(), FIELD_MANAGER),
            catalogs: CatalogCache::new(store, settings.limits),
            client,
            settings,
            classes,
            metrics,
            backoff: Backoff::default(),
        }
    }

    async fn event(&self, reference: &ObjectReference, warning: bool, reason: &str, note: String) {
        kit::events::publish(&self.recorder, reference, warning, reason, "Activate", note).await;
    }

    fn config_maps(&self) -> Api<ConfigMap> {
        Api::namespaced(self.client.clone(), &self.settings.system_namespace)
    }
}

/// Runs the controller until `shutdown`.
pub async fn run(ctx: Arc<Context>, readiness: &Readiness, shutdown: CancellationToken) {
    let selector = ctx.settings.selector.clone();
    let config = kit::watch::config(selector.as_deref());
    // ResolveSets carry the resolution label (and the resolution's labels, so the selector
    // matches them too).
    let config_map_selector = match &selector {
        Some(selector) => format!("{RESOLUTION_LABEL},{selector}"),
        None => RESOLUTION_LABEL.to_owned(),
    };
    // Every change, status included: deppy-resolver's `Resolved` is what this acts on.
    let controller = kit::watch::on_every_change(
        Api::<ActiveResolution>::all(ctx.client.clone()),
        config.clone(),
        readiness,
        "watch:activeresolutions",
    );
    let resolutions = controller.store();
    let controller = controller
        .owns(
            Api::<BundleDeployment>::all(ctx.client.clone()),
            config.clone(),
        )
        // Not `owns`: it would map a namespaced ConfigMap to a namespaced reference to its
        // cluster-scoped owner, which the controller treats as another object and may
        // reconcile concurrently with the real one.
        .watches(
            ctx.config_maps(),
            kit::watch::config(Some(&config_map_selector)),
            |config_map: ConfigMap| owner_of(&config_map),
        )
        .watches(Api::<Catalog>::all(ctx.client.clone()), config, {
            let resolutions = resolutions.clone();
            move |catalog: Catalog| users_of(&resolutions, &catalog.name_any())
        })
        .graceful_shutdown_on(shutdown.cancelled_owned());
    controller
        .run(reconcile, error_policy, ctx)
        .inspect(kit::watch::report_controller_failures(
            readiness,
            "watch:activeresolutions",
        ))
        .for_each(|result| async move {
            if let Err(err) = result {
                tracing::debug!(error = %err, "activeresolution reconcile request failed");
            }
        })
        .await;
}

/// The ActiveResolution controlling a ResolveSet ConfigMap (a cluster-scoped reference).
fn owner_of(config_map: &ConfigMap) -> Option<ObjectRef<ActiveResolution>> {
    config_map
        .owner_references()
        .iter()
        .find(|owner| owner.controller == Some(true) && owner.kind == "ActiveResolution")
        .map(|owner| ObjectRef::new(&owner.name))
}

/// The ActiveResolutions whose selections name `catalog`.
fn users_of(
    resolutions: &Store<ActiveResolution>,
    catalog: &str,
) -> Vec<ObjectRef<ActiveResolution>> {
    let prefix = format!("{catalog}:");
    resolutions
        .state()
        .iter()
        .filter(|resolution| {
            resolution
                .status
                .as_ref()
                .is_some_and(|status| status.selections.iter().any(|s| s.starts_with(&prefix)))
        })
        .map(|resolution| ObjectRef::from_obj(resolution.as_ref()))
        .collect()
}

fn error_policy(resolution: Arc<ActiveResolution>, error: &Error, ctx: Arc<Context>) -> Action {
    kit::controller::retry_after(
        &ctx.backoff,
        "ActiveResolution",
        &resolution.name_any(),
        error,
    )
}

async fn reconcile(resolution: Arc<ActiveResolution>, ctx: Arc<Context>) -> Result<Action, Error> {
    if resolution.meta().deletion_timestamp.is_some() {
        // The wrapper and the ResolveSets go with it through their owner references.
        return Ok(Action::await_change());
    }
    let Some(class) = crate::activator_class(&resolution).and_then(|name| ctx.classes.get(name))
    else {
        // Another activator's resolution, or nobody's: not ours to touch.
        return Ok(Action::await_change());
    };
    kit::controller::timed_and_reset(
        &ctx.metrics.reconcile,
        "activeresolution",
        &ctx.backoff,
        &resolution.name_any(),
        reconcile_resolution(&resolution, class.as_ref(), &ctx),
    )
    .await
}

/// What an activation attempt came to.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    /// The wrapper points at ResolveSet `resolve_set` holding `entities`.
    Activated {
        entities: Vec<ResolvedEntity>,
        resolve_set: String,
    },
    /// Nothing was changed on the cluster; `message` says why.
    Blocked {
        reason: &'static str,
        message: String,
    },
}

impl Outcome {
    fn blocked(reason: &'static str, message: impl Into<String>) -> Self {
        Self::Blocked {
            reason,
            message: message.into(),
        }
    }
}

async fn reconcile_resolution(
    resolution: &ActiveResolution,
    class: &dyn ActivatorClass,
    ctx: &Context,
) -> Result<Action, Error> {
    let generation = resolution.meta().generation;
    let current = resolution.status.clone().unwrap_or_default();
    let resolved = kit::conditions::find(&current.conditions, TYPE_RESOLVED);
    let outcome = match resolved {
        // deppy-resolver has not looked at this spec yet: its next write brings us back.
        None => return Ok(Action::await_change()),
        Some(condition) if condition.observed_generation != generation => {
            return Ok(Action::await_change());
        }
        Some(condition) if condition.status != status::TRUE => {
            // Never act on a failed resolution: what is installed stays as it is.
            Outcome::blocked(
                reasons::NOT_RESOLVED,
                format!(
                    "not activating: Resolved is {} ({}); {}",
                    condition.status,
                    condition.reason,
                    installed_note(resolution)
                ),
            )
        }
        Some(_) => match activate(resolution, class, ctx).await {
            Ok(outcome) => outcome,
            Err(err) => {
                // Say why on the object as well as in the log, then back off.
                let outcome = Outcome::blocked(err.reason(), kit::error_chain(&err));
                let _ = write_status(resolution, &current, &outcome, ctx).await;
                return Err(err);
            }
        },
    };
    write_status(resolution, &current, &outcome, ctx).await?;
    Ok(match outcome {
        Outcome::Activated { .. } => Action::requeue(RESYNC),
        Outcome::Blocked { .. } => Action::requeue(BLOCKED_RECHECK),
    })
}

/// What stays installed while a resolution cannot be activated, for messages.
fn installed_note(resolution: &ActiveResolution) -> String {
    let entities = resolution
        .status
        .as_ref()
        .map(|s| s.entities.as_slice())
        .unwrap_or_default();
    if entities.is_empty() {
        "nothing was installed for it".to_owned()
    } else {
        let packages: Vec<&str> = entities.iter().map(|e| e.package.as_str()).collect();
        format!("the installed bundles stay ({})", packages.join(", "))
    }
}

/// Maps selections to entities, writes the ResolveSet and moves the wrapper to it.
async fn activate(
    resolution: &ActiveResolution,
    class: &dyn ActivatorClass,
    ctx: &Context,
) -> Result<Outcome, Error> {
    match activation_steps(resolution, class, ctx).await {
        Ok(outcome) | Err(Stop::Blocked(outcome)) => Ok(outcome),
        Err(Stop::Failed(err)) => Err(err),
    }
}

/// Why the steps of an activation stopped before the end.
enum Stop {
    /// A step found what only the resolution's author or the catalog can fix: the outcome
    /// says so in the `Activated` condition.
    Blocked(Outcome),
    /// A step failed in a way worth retrying.
    Failed(Error),
}

impl<E: Into<Error>> From<E> for Stop {
    fn from(err: E) -> Self {
        Self::Failed(err.into())
    }
}

/// The steps of [`activate`] in order; each may stop it with a [`Stop`].
async fn activation_steps(
    resolution: &ActiveResolution,
    class: &dyn ActivatorClass,
    ctx: &Context,
) -> Result<Outcome, Stop> {
    let name = resolution.name_any();
    let entities = selected_entities(resolution, ctx).await?;
    // Every BundleDeployment of the install applies as the identity the resolution names,
    // which its author was allowed to impersonate (resolution-activation.deppy.io).
    let account = resolve_set::install_account(resolution)
        .map_err(|err| Stop::Blocked(Outcome::blocked(reasons::APPLY_FAILED, err.to_string())))?;
    let mut children = Vec::new();
    for entity in &entities {
        match class.children(resolution, entity) {
            Ok(mut deployments) => {
                for child in &mut deployments {
                    child.spec.service_account.clone_from(&account);
                }
                children.push((entity.selection.package.clone(), deployments));
            }
            Err(err) => {
                return Err(Stop::Blocked(Outcome::blocked(
                    reasons::BUNDLE_UNSUPPORTED,
                    err.to_string(),
                )));
            }
        }
    }
    let labels = resolve_set::propagated_labels(resolution);
    let files = match resolve_set::manifests(&children, &labels) {
        Ok(files) => files,
        Err(err @ BuildError::DuplicateChild { .. }) => {
            return Err(Stop::Blocked(Outcome::blocked(
                reasons::APPLY_FAILED,
                err.to_string(),
            )));
        }
        Err(source) => {
            return Err(Stop::Failed(Error::Build {
                resolution: name,
                source,
            }));
        }
    };
    let existing = existing_wrapper(resolution, ctx).await?;
    let history = history(resolution, ctx).await?;
    let resolve_set = ensure_resolve_set(resolution, files, &history, ctx).await?;
    apply_wrapper(resolution, class, &resolve_set, existing.as_ref(), ctx).await?;
    prune_history(&history, &resolve_set, ctx).await?;
    let mut resolved: Vec<ResolvedEntity> = entities
        .iter()
        .map(|entity| ResolvedEntity {
            package: entity.selection.package.clone(),
            image: entity.bundle.image.clone(),
        })
        .collect();
    resolved.sort_by(|a, b| a.package.cmp(&b.package));
    Ok(Outcome::Activated {
        entities: resolved,
        resolve_set,
    })
}

/// Step 1: the catalog bundle of every selection, sorted by package; a selection that
/// cannot be mapped (the user's or the catalog's problem) blocks the activation.
async fn selected_entities(
    resolution: &ActiveResolution,
    ctx: &Context,
) -> Result<Vec<Entity>, Stop> {
    let texts = resolution
        .status
        .as_ref()
        .map(|s| s.selections.clone())
        .unwrap_or_default();
    if texts.is_empty() {
        return Err(Stop::Blocked(Outcome::blocked(
            reasons::SELECTION_NOT_FOUND,
            "the resolution selected no bundles: nothing to install",
        )));
    }
    let mut selections = Vec::new();
    let mut problems = Vec::new();
    for text in &texts {
        match text.parse::<Selection>() {
            Ok(selection) => selections.push(selection),
            Err(err) => problems.push(err.to_string()),
        }
    }
    if !problems.is_empty() {
        return Err(Stop::Blocked(Outcome::blocked(
            reasons::SELECTION_NOT_FOUND,
            problems.join("; "),
        )));
    }
    let catalog_names: BTreeSet<&str> = selections.iter().map(|s| s.catalog.as_str()).collect();
    let api = Api::<Catalog>::all(ctx.client.clone());
    let mut indexes = BTreeMap::new();
    let mut unavailable = Vec::new();
    for catalog_name in catalog_names {
        let catalog = api
            .get_opt(catalog_name)
            .await
            .map_err(|source| Error::ReadCatalog {
                catalog: catalog_name.to_owned(),
                source,
            })?;
        let Some(catalog) = catalog else {
            unavailable.push(format!("Catalog {catalog_name} does not exist"));
            continue;
        };
        match ctx.catalogs.index(&catalog).await {
            Ok(index) => {
                indexes.insert(catalog_name.to_owned(), index);
            }
            Err(err) if err.is_transient() => return Err(Stop::Failed(Error::CatalogContent(err))),
            Err(err) => unavailable.push(kit::error_chain(&err)),
        }
    }
    if !unavailable.is_empty() {
        return Err(Stop::Blocked(Outcome::blocked(
            reasons::CATALOG_UNAVAILABLE,
            unavailable.join("; "),
        )));
    }
    let mut entities = Vec::new();
    for selection in selections {
        let Some(index) = indexes.get(&selection.catalog) else {
            continue;
        };
        match find_bundle(index, &selection) {
            Ok(bundle) => entities.push(Entity {
                bundle: bundle.clone(),
                selection,
            }),
            Err(err) => problems.push(format!("selection {selection}: {err}")),
        }
    }
    if !problems.is_empty() {
        return Err(Stop::Blocked(Outcome::blocked(
            reasons::SELECTION_NOT_FOUND,
            problems.join("; "),
        )));
    }
    entities.sort_by(|a, b| a.selection.package.cmp(&b.selection.package));
    Ok(entities)
}

/// The BundleDeployment of the wrapper's name, if any, and whether this resolution
/// controls it (when it does not, it is left alone and the condition says so).
async fn existing_wrapper(
    resolution: &ActiveResolution,
    ctx: &Context,
) -> Result<Option<BundleDeployment>, Stop> {
    let name = resolve_set::wrapper_name(&resolution.name_any());
    let existing = Api::<BundleDeployment>::all(ctx.client.clone())
        .get_opt(&name)
        .await
        .map_err(|source| KubeCallError::new("read", format!("BundleDeployment {name}"), source))?;
    let uid = resolution.uid().unwrap_or_default();
    let controlled = |wrapper: &BundleDeployment| {
        wrapper
            .owner_references()
            .iter()
            .any(|owner| owner.controller == Some(true) && owner.uid == uid)
    };
    match existing {
        Some(wrapper) if !controlled(&wrapper) => Err(Stop::Blocked(Outcome::blocked(
            reasons::APPLY_FAILED,
            format!(
                "BundleDeployment {name} already exists and is not controlled by ActiveResolution {}; it was left untouched",
                resolution.name_any()
            ),
        ))),
        existing => Ok(existing),
    }
}

/// The resolution's ResolveSet ConfigMaps (only those it owns).
async fn history(resolution: &ActiveResolution, ctx: &Context) -> Result<Vec<HistoryEntry>, Error> {
    let name = resolution.name_any();
    let selector = format!("{RESOLUTION_LABEL}={}", names::label_value(&name));
    let list = ctx
        .config_maps()
        .list(&ListParams::default().labels(&selector))
        .await
        .map_err(|source| {
            KubeCallError::new(
                "list",
                format!(
                    "ConfigMaps {}/* of ActiveResolution {name}",
                    ctx.settings.system_namespace
                ),
                source,
            )
        })?;
    let uid = resolution.uid().unwrap_or_default();
    Ok(list
        .items
        .iter()
        .filter(|cm| cm.owner_references().iter().any(|owner| owner.uid == uid))
        .map(HistoryEntry::of)
        .collect())
}

/// Step 2: the ResolveSet ConfigMap for `files`, created unless the history already holds
/// it. Returns its name.
async fn ensure_resolve_set(
    resolution: &ActiveResolution,
    files: BTreeMap<String, String>,
    history: &[HistoryEntry],
    ctx: &Context,
) -> Result<String, Stop> {
    let name = resolution.name_any();
    let config_map_name = resolve_set::config_map_name(&name, &files);
    if history.iter().any(|entry| entry.name == config_map_name) {
        return Ok(config_map_name);
    }
    let namespace = &ctx.settings.system_namespace;
    let config_map = resolve_set::config_map(
        resolution,
        namespace,
        files,
        resolve_set::next_sequence(history),
    )
    .map_err(|source| Error::Build {
        resolution: name.clone(),
        source,
    })?;
    let object = format!("ConfigMap {namespace}/{config_map_name}");
    match ctx
        .config_maps()
        .create(&PostParams::default(), &config_map)
        .await
    {
        Ok(_) => {
            ctx.metrics.resolve_sets.inc();
            tracing::info!(active_resolution = %name, config_map = %config_map_name, "wrote ResolveSet");
            ctx.event(
                &resolution.object_ref(&()),
                false,
                "ResolveSetWritten",
                format!("wrote ResolveSet {object}"),
            )
            .await;
            Ok(config_map_name)
        }
        Err(kube::Error::Api(status)) if status.code == 409 => {
            // Same name, so same content. Ours when the list raced with its creation;
            // otherwise it belongs to another object (an earlier ActiveResolution of the
            // same name, on its way out): wait for it to go.
            let existing = ctx
                .config_maps()
                .get_opt(&config_map_name)
                .await
                .map_err(|source| KubeCallError::new("read", object.clone(), source))?;
            let uid = resolution.uid().unwrap_or_default();
            if existing.is_some_and(|cm| cm.owner_references().iter().any(|o| o.uid == uid)) {
                return Ok(config_map_name);
            }
            Err(Stop::Blocked(Outcome::blocked(
                reasons::APPLY_FAILED,
                format!(
                    "{object} exists and is not owned by this ActiveResolution; waiting for it to be deleted"
                ),
            )))
        }
        Err(source) => Err(Stop::Failed(Error::Kube(KubeCallError::new(
            "create", object, source,
        )))),
    }
}

/// Step 3: the wrapper BundleDeployment, server-side applied to point at `resolve_set`.
async fn apply_wrapper(
    resolution: &ActiveResolution,
    class: &dyn ActivatorClass,
    resolve_set: &str,
    existing: Option<&BundleDeployment>,
    ctx: &Context,
) -> Result<(), Error> {
    let wrapper = resolve_set::wrapper(resolution, resolve_set, class.wrapper_annotations())
        .map_err(|source| Error::Build {
            resolution: resolution.name_any(),
            source,
        })?;
    let name = wrapper.name_any();
    if existing.is_some_and(|existing| resolve_set::wrapper_is_current(existing, &wrapper)) {
        return Ok(());
    }
    let api = Api::<BundleDeployment>::all(ctx.client.clone());
    api.patch(
        &name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(&wrapper),
    )
    .await
    .map_err(|source| KubeCallError::new("apply", format!("BundleDeployment {name}"), source))?;
    let previous = existing.and_then(resolve_set::wrapper_config_map);
    if previous != Some(resolve_set) {
        let note = match previous {
            Some(previous) => {
                format!("moved BundleDeployment {name} from ResolveSet {previous} to {resolve_set}")
            }
            None => format!("created BundleDeployment {name} for ResolveSet {resolve_set}"),
        };
        tracing::info!(active_resolution = %resolution.name_any(), "{note}");
        ctx.event(&resolution.object_ref(&()), false, "WrapperUpdated", note)
            .await;
    }
    Ok(())
}

/// Step 4: delete ResolveSets beyond `--history`, never the current one.
async fn prune_history(
    history: &[HistoryEntry],
    current: &str,
    ctx: &Context,
) -> Result<(), Error> {
    for name in resolve_set::to_delete(history, current, ctx.settings.history) {
        match ctx
            .config_maps()
            .delete(&name, &DeleteParams::background())
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(source) => {
                return Err(Error::Kube(KubeCallError::new(
                    "delete",
                    format!("ConfigMap {}/{name}", ctx.settings.system_namespace),
                    source,
                )));
            }
        }
    }
    Ok(())
}

/// The status after `outcome`: entities (only when activated) and the `Activated`
/// condition.
fn next_status(
    current: &ActiveResolutionStatus,
    outcome: &Outcome,
    generation: Option<i64>,
) -> ActiveResolutionStatus {
    let mut next = current.clone();
    let (value, reason, message) = match outcome {
        Outcome::Activated {
            entities,
            resolve_set,
        } => {
            next.entities = entities.clone();
            let packages: Vec<String> = entities
                .iter()
                .map(|e| format!("{} ({})", e.package, e.image))
                .collect();
            (
                status::TRUE,
                reasons::ACTIVATED,
                format!("ResolveSet {resolve_set} installs {}", packages.join(", ")),
            )
        }
        Outcome::Blocked { reason, message } => (status::FALSE, *reason, message.clone()),
    };
    kit::conditions::set_all(
        &mut next.conditions,
        [Desired::new(TYPE_ACTIVATED, value, reason, message)],
        generation,
        &kit::conditions::now(),
    );
    next
}

/// Step 5: writes `entities` and `Activated` when they changed, announcing condition
/// changes with Events.
async fn write_status(
    resolution: &ActiveResolution,
    current: &ActiveResolutionStatus,
    outcome: &Outcome,
    ctx: &Context,
) -> Result<(), Error> {
    let name = resolution.name_any();
    let next = next_status(current, outcome, resolution.meta().generation);
    if next == *current {
        return Ok(());
    }
    // Only `entities` and `Activated` are ours; deppy-resolver applies the rest.
    let own = ActiveResolutionStatus {
        entities: next.entities.clone(),
        conditions: next
            .conditions
            .iter()
            .filter(|c| c.type_ == TYPE_ACTIVATED)
            .cloned()
            .collect(),
        ..ActiveResolutionStatus::default()
    };
    kit::status::apply(
        &Api::<ActiveResolution>::all(ctx.client.clone()),
        &name,
        FIELD_MANAGER,
        &own,
    )
    .await
    .map_err(|source| {
        KubeCallError::new(
            "update the status of",
            format!("ActiveResolution {name}"),
            source,
        )
    })?;
    // Only Activated is ours; Resolved is deppy-resolver's to announce.
    kit::controller::announce(
        &ctx.recorder,
        &resolution.object_ref(&()),
        &current.conditions,
        &next.conditions,
        |condition| match condition.type_.as_str() {
            TYPE_RESOLVED => News::Quiet,
            _ => News::warning_when_false(condition),
        },
    )
    .await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The writes of the steps that change the cluster (`ensure_resolve_set`,
    /// `apply_wrapper`, `prune_history`), seen through a mocked API server (no cluster).
    mod writes {
        use super::*;
        use crate::classes::PlatformOperatorClass;
        use serde_json::json;
        use testkit::mock_api::{self, Exchange};

        const WRAPPER: &str = "/apis/core.rukpak.io/v1alpha1/bundledeployments/memcached?force=true&fieldManager=resolution-activator";
        const CONFIG_MAPS: &str = "/api/v1/namespaces/rukpak-system/configmaps";
        const EVENTS: &str = "/apis/events.k8s.io/v1/namespaces/default/events";

        fn context(client: Client) -> Context {
            let settings = Settings {
                system_namespace: "rukpak-system".to_owned(),
                catalog_namespace: "deppy-system".to_owned(),
                selector: None,
                history: 2,
                limits: content::Limits::default(),
            };
            let metrics = Metrics::register(&Registry::new()).unwrap();
            Context::new(client, settings, Classes::builtin(), metrics)
        }

        fn resolution() -> ActiveResolution {
            serde_json::from_value(json!({
                "apiVersion": "deppy.io/v1alpha1",
                "kind": "ActiveResolution",
                "metadata": {"name": "memcached", "uid": "r-uid", "generation": 1},
                "spec": {"constraints": [{"expression": "required(\"memcached-operator\")"}]},
            }))
            .unwrap()
        }

        fn wrapper(resolve_set: &str) -> BundleDeployment {
            resolve_set::wrapper(&resolution(), resolve_set, BTreeMap::new()).unwrap()
        }

        fn event(reason: &str, note: &str) -> Exchange {
            Exchange::post(EVENTS)
                .body_includes(json!({
                    "type": "Normal",
                    "reason": reason,
                    "note": note,
                    "regarding": {"kind": "ActiveResolution", "name": "memcached"},
                }))
                .reply_echo()
        }

        #[tokio::test]
        async fn a_missing_wrapper_is_applied_owned_and_announced() {
            let (client, server) = mock_api::serve([
                Exchange::patch(WRAPPER)
                    .body_includes(json!({
                        "apiVersion": "core.rukpak.io/v1alpha1",
                        "kind": "BundleDeployment",
                        "metadata": {
                            "name": "memcached",
                            "ownerReferences": [{"kind": "ActiveResolution", "uid": "r-uid", "controller": true}],
                        },
                        "spec": {"template": {"spec": {"source": {
                            "type": "configMaps",
                            "configMaps": [{"configMap": {"name": "memcached-1"}}],
                        }}}},
                    }))
                    .reply_echo(),
                event(
                    "WrapperUpdated",
                    "created BundleDeployment memcached for ResolveSet memcached-1",
                ),
            ]);
            let ctx = context(client);
            server
                .run(apply_wrapper(
                    &resolution(),
                    &PlatformOperatorClass,
                    "memcached-1",
                    None,
                    &ctx,
                ))
                .await
                .unwrap();
        }

        #[tokio::test]
        async fn a_wrapper_moves_to_a_new_resolve_set_and_a_current_one_is_left_alone() {
            let old = wrapper("memcached-1");
            let (client, server) = mock_api::serve([
                Exchange::patch(WRAPPER)
                    .body_includes(json!({"spec": {"template": {"spec": {"source": {
                        "configMaps": [{"configMap": {"name": "memcached-2"}}],
                    }}}}}))
                    .reply_echo(),
                event(
                    "WrapperUpdated",
                    "moved BundleDeployment memcached from ResolveSet memcached-1 to memcached-2",
                ),
            ]);
            let ctx = context(client);
            server
                .run(async {
                    let class = PlatformOperatorClass;
                    apply_wrapper(&resolution(), &class, "memcached-2", Some(&old), &ctx).await?;
                    // Already pointing there: no request.
                    apply_wrapper(&resolution(), &class, "memcached-1", Some(&old), &ctx).await
                })
                .await
                .unwrap();
        }

        fn files() -> BTreeMap<String, String> {
            BTreeMap::from([(
                "memcached-operator-bd.yaml".to_owned(),
                "kind: x".to_owned(),
            )])
        }

        #[tokio::test]
        async fn a_new_resolve_set_is_created_immutable_and_announced() {
            let name = resolve_set::config_map_name("memcached", &files());
            let sequence = resolve_set::SEQUENCE_ANNOTATION;
            let (client, server) = mock_api::serve([
                Exchange::post(CONFIG_MAPS)
                    .body_includes(json!({
                        "metadata": {
                            "name": name,
                            "namespace": "rukpak-system",
                            "annotations": {sequence: "1"},
                            "ownerReferences": [{"kind": "ActiveResolution", "uid": "r-uid"}],
                        },
                        "immutable": true,
                        "data": files(),
                    }))
                    .reply_echo(),
                event(
                    "ResolveSetWritten",
                    &format!("wrote ResolveSet ConfigMap rukpak-system/{name}"),
                ),
            ]);
            let ctx = context(client);
            let written = server
                .run(ensure_resolve_set(&resolution(), files(), &[], &ctx))
                .await;
            assert!(matches!(written, Ok(n) if n == name));
        }

        #[tokio::test]
        async fn a_resolve_set_that_exists_is_ours_only_when_we_own_it() {
            let name = resolve_set::config_map_name("memcached", &files());
            let owned_by = |uid: &str| {
                let mut config_map =
                    resolve_set::config_map(&resolution(), "rukpak-system", files(), 1).unwrap();
                config_map.metadata.owner_references.as_mut().unwrap()[0].uid = uid.to_owned();
                config_map
            };
            let (client, server) = mock_api::serve([
                Exchange::post(CONFIG_MAPS).already_exists(),
                Exchange::get(&format!("{CONFIG_MAPS}/{name}")).reply(&owned_by("r-uid")),
                Exchange::post(CONFIG_MAPS).already_exists(),
                Exchange::get(&format!("{CONFIG_MAPS}/{name}")).reply(&owned_by("another-uid")),
            ]);
            let ctx = context(client);
            let (ours, theirs) = server
                .run(async {
                    (
                        ensure_resolve_set(&resolution(), files(), &[], &ctx).await,
                        ensure_resolve_set(&resolution(), files(), &[], &ctx).await,
                    )
                })
                .await;
            assert!(matches!(ours, Ok(n) if n == name));
            assert!(matches!(
                theirs,
                Err(Stop::Blocked(Outcome::Blocked {
                    reason: reasons::APPLY_FAILED,
                    ..
                }))
            ));
        }

        #[tokio::test]
        async fn history_beyond_the_limit_is_deleted_oldest_first_and_gone_is_fine() {
            let entry = |name: &str, sequence| HistoryEntry {
                name: name.to_owned(),
                sequence,
            };
            let history = [
                entry("memcached-a", 1),
                entry("memcached-b", 2),
                entry("memcached-c", 3),
                entry("memcached-d", 0),
            ];
            // History 2: the current one (c) and the newest other (b) stay.
            let (client, server) = mock_api::serve([
                Exchange::delete(&format!("{CONFIG_MAPS}/memcached-a"))
                    .body_includes(json!({"propagationPolicy": "Background"}))
                    .reply(&ConfigMap::default()),
                Exchange::delete(&format!("{CONFIG_MAPS}/memcached-d")).not_found(),
            ]);
            let ctx = context(client);
            server
                .run(prune_history(&history, "memcached-c", &ctx))
                .await
                .unwrap();
        }
    }

    #[test]
    fn a_resolve_set_maps_to_its_cluster_scoped_owner() {
        let config_map: ConfigMap = serde_json::from_value(serde_json::json!({
            "metadata": {
                "name": "r-0123456789",
                "namespace": "rukpak-system",
                "ownerReferences": [
                    {"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "1"},
                    {"apiVersion": "deppy.io/v1alpha1", "kind": "ActiveResolution",
                     "name": "r", "uid": "2", "controller": true},
                ],
            },
        }))
        .unwrap();
        let owner = owner_of(&config_map).unwrap();
        assert_eq!(owner.name, "r");
        assert_eq!(owner.namespace, None);
        assert!(owner_of(&ConfigMap::default()).is_none());
    }

    #[test]
    fn metrics_are_registered_under_the_component_prefix() {
        let registry = Registry::new();
        let metrics = Metrics::register(&registry).unwrap();
        metrics
            .reconcile
            .start("activeresolution")
            .finish("success");
        metrics.resolve_sets.inc();
        let names: Vec<String> = registry
            .gather()
            .iter()
            .map(|family| family.name().to_owned())
            .collect();
        for expected in [
            "resolution_activator_reconcile_total",
            "resolution_activator_reconcile_duration_seconds",
            "resolution_activator_resolve_sets_written_total",
        ] {
            assert!(
                names.iter().any(|n| n == expected),
                "{expected} in {names:?}"
            );
        }
        assert!(Metrics::register(&registry).is_err(), "registered once");
    }

    fn entity(package: &str) -> ResolvedEntity {
        ResolvedEntity {
            package: package.to_owned(),
            image: format!("r/{package}:1"),
        }
    }

    #[test]
    fn activation_records_entities_and_a_true_condition() {
        let outcome = Outcome::Activated {
            entities: vec![entity("a"), entity("b")],
            resolve_set: "res-0123456789".to_owned(),
        };
        let next = next_status(&ActiveResolutionStatus::default(), &outcome, Some(2));
        assert_eq!(next.entities, [entity("a"), entity("b")]);
        let condition = kit::conditions::find(&next.conditions, TYPE_ACTIVATED).unwrap();
        assert_eq!(condition.status, status::TRUE);
        assert_eq!(condition.reason, reasons::ACTIVATED);
        assert_eq!(condition.observed_generation, Some(2));
        assert!(
            condition.message.contains("res-0123456789"),
            "{}",
            condition.message
        );
        // Unchanged input: no write.
        assert_eq!(next_status(&next, &outcome, Some(2)), next);
    }

    #[test]
    fn a_blocked_activation_keeps_entities_and_other_conditions() {
        let mut current = ActiveResolutionStatus {
            selections: vec!["c:a:1.0.0:stable".to_owned()],
            entities: vec![entity("a")],
            ..ActiveResolutionStatus::default()
        };
        set_condition(
            &mut current.conditions,
            ConditionUpdate {
                type_: TYPE_RESOLVED,
                status: status::FALSE,
                reason: "ConstraintsNotSatisfiable",
                message: "no",
            },
            Some(3),
            &kit::conditions::now(),
        );
        let outcome = Outcome::blocked(reasons::NOT_RESOLVED, "not activating");
        let next = next_status(&current, &outcome, Some(3));
        assert_eq!(next.entities, current.entities);
        assert_eq!(next.selections, current.selections);
        assert_eq!(
            kit::conditions::find(&next.conditions, TYPE_RESOLVED),
            kit::conditions::find(&current.conditions, TYPE_RESOLVED)
        );
        let activated = kit::conditions::find(&next.conditions, TYPE_ACTIVATED).unwrap();
        assert_eq!(activated.status, status::FALSE);
        assert_eq!(activated.reason, reasons::NOT_RESOLVED);
    }
}
