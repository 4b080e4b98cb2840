//! The PlatformOperator controller.
//!
//! For each PlatformOperator `foo` it keeps an ActiveResolution `foo` (owned by the
//! PlatformOperator, activator class `PlatformOperator`, one `required` constraint from
//! `spec.package`, the PlatformOperator's labels), so that a spec change re-resolves and
//! upgrades. deppy-resolver resolves it; resolution-activator turns it into the wrapper
//! BundleDeployment `foo` whose children (one per package) RukPak installs. This
//! controller reads that chain back into the `Installed` condition (see
//! [`crate::status::installed`]). Deletion cascades through owner references.

use kube::runtime::WatchStreamExt;
use std::collections::BTreeMap;
use std::sync::Arc;

use deppy_api::ActiveResolution;
use futures::{Stream, StreamExt};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{DeleteParams, Patch, PatchParams, Preconditions};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::{Api, Resource, ResourceExt};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kit::controller::News;
use kit::retry::{Classify, Retry};
use platform_api::conditions::{TYPE_DEPRECATED, TYPE_INSTALLED, TYPE_PROGRESSING, reasons};
use platform_api::{
    ActiveBundleDeployment, InstalledBundle, PlatformOperator, PlatformOperatorStatus,
};
use rukpak_api::BundleDeployment;

use super::{Caches, Context, MANAGER, error_chain};
use crate::names;
use crate::ownership::{self, Ownership};
use crate::status::{self, Installed, Observed};
use crate::upgrade;
use kit::conditions::Desired;

/// The activator class of the ActiveResolutions this controller creates.
pub const ACTIVATOR_CLASS: &str = "PlatformOperator";

/// A failed PlatformOperator reconcile.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Creating or updating the ActiveResolution failed.
    #[error("failed to apply ActiveResolution {0}")]
    ApplyResolution(String, #[source] kube::Error),
    /// Deleting the ActiveResolution of a duplicate PlatformOperator failed.
    #[error("failed to delete ActiveResolution {0}")]
    DeleteResolution(String, #[source] kube::Error),
    /// An ActiveResolution of the same name exists and belongs to something else.
    #[error(
        "failed to adopt ActiveResolution {0}: it exists and is not owned by PlatformOperator {0}"
    )]
    ForeignResolution(String),
    /// The PlatformOperator has no UID (it was never stored).
    #[error("failed to reference PlatformOperator {0}: it has no uid")]
    NoUid(String),
    /// Writing the status failed.
    #[error("failed to update the status of PlatformOperator {0}")]
    Status(String, #[source] kube::Error),
}

impl Classify for Error {
    fn retry(&self) -> Retry {
        match self {
            Self::ForeignResolution(_) | Self::NoUid(_) => Retry::WaitForChange,
            _ => Retry::Backoff,
        }
    }

    fn label(&self) -> &'static str {
        match self {
            Self::ApplyResolution(..) => "apply_resolution",
            Self::DeleteResolution(..) => "delete_resolution",
            Self::ForeignResolution(_) => "foreign_resolution",
            Self::NoUid(_) => "no_uid",
            Self::Status(..) => "status",
        }
    }
}

/// Runs the controller until `shutdown`.
pub(super) async fn run(
    ctx: Arc<Context>,
    operators: impl Stream<Item = Result<PlatformOperator, kube::runtime::watcher::Error>>
    + Send
    + 'static,
    resolutions: impl Stream<Item = Result<ActiveResolution, kube::runtime::watcher::Error>>
    + Send
    + 'static,
    deployments: impl Stream<Item = Result<BundleDeployment, kube::runtime::watcher::Error>>
    + Send
    + 'static,
    requeues: impl Stream<Item = ObjectRef<PlatformOperator>> + Send + 'static,
    shutdown: CancellationToken,
) {
    Controller::for_stream(
        // Not on its own status writes; progress arrives through the owned resolution and
        // the watched BundleDeployments.
        operators.predicate_filter(kit::watch::authored, Default::default()),
        ctx.caches.operators.clone(),
    )
        .trigger_backoff(kit::watch::WatchBackoff::default())
        .owns_stream(resolutions)
        .watches_stream(deployments, {
            let caches = ctx.caches.clone();
            move |deployment| owners(&caches, &deployment)
        })
        .reconcile_on(requeues)
        .graceful_shutdown_on(shutdown.cancelled_owned())
        .run(reconcile, error_policy, ctx)
        .for_each(|result| async move {
            if let Err(err) = result {
                tracing::debug!(error = %error_chain(&err), "platformoperator reconcile request failed");
            }
        })
        .await;
}

/// The PlatformOperators a BundleDeployment concerns: the one whose wrapper it is, and
/// the one whose wrapper applied it (its owner labels name the wrapper).
fn owners(caches: &Caches, deployment: &BundleDeployment) -> Vec<ObjectRef<PlatformOperator>> {
    let name = deployment.name_any();
    [Some(name.as_str()), ownership::applied_by(deployment)]
        .into_iter()
        .flatten()
        .filter_map(|wrapper| ownership::operator_of_wrapper(caches, wrapper))
        .map(|operator| ObjectRef::from_obj(operator.as_ref()))
        .collect()
}

/// Queues every PlatformOperator whose package another one has: whether it still does
/// depends on objects that are not its own.
pub(super) fn requeue_duplicates(
    ctx: &Context,
    requeue: &mpsc::UnboundedSender<ObjectRef<PlatformOperator>>,
) {
    for operator in ctx.caches.operators.state() {
        let duplicate = operator
            .status
            .as_ref()
            .and_then(|s| kit::conditions::find(&s.conditions, TYPE_INSTALLED))
            .is_some_and(|c| c.reason == reasons::DUPLICATE_PACKAGE);
        if duplicate {
            let _ = requeue.send(ObjectRef::from_obj(operator.as_ref()));
        }
    }
}

fn error_policy(operator: Arc<PlatformOperator>, error: &Error, ctx: Arc<Context>) -> Action {
    let key = format!("po/{}", operator.name_any());
    kit::controller::retry_after(&ctx.backoff, "PlatformOperator", &key, error)
}

async fn reconcile(operator: Arc<PlatformOperator>, ctx: Arc<Context>) -> Result<Action, Error> {
    // Deciding who has a package, or that the ActiveResolution is missing, needs complete
    // caches: a restart must never mistake a half-listed cluster for an empty one.
    if !ctx.caches_synced().await {
        return Ok(Action::await_change());
    }
    kit::controller::timed_and_reset(
        &ctx.metrics.reconcile,
        "platformoperator",
        &ctx.backoff,
        &format!("po/{}", operator.name_any()),
        reconcile_operator(&operator, &ctx),
    )
    .await
}

async fn reconcile_operator(operator: &PlatformOperator, ctx: &Context) -> Result<Action, Error> {
    if operator.meta().deletion_timestamp.is_some() {
        // Garbage collection removes the ActiveResolution and everything below it.
        return Ok(Action::await_change());
    }
    let name = operator.name_any();
    let chain = Chain::read(operator, ctx);
    let mut resolution = None;
    let mut duplicate = None;
    let mut failure = None;
    match ownership::decide(&ctx.caches, operator) {
        Ownership::Duplicate(message) => {
            remove_resolution(operator, ctx).await?;
            duplicate = Some(message);
        }
        Ownership::Proceed => match ensure_resolution(operator, &chain.installed, ctx).await {
            Ok(ensured) => resolution = ensured,
            Err(err) => failure = Some(err),
        },
    }
    let children = chain.borrowed_children();
    let observed = Observed {
        name: &name,
        resolution: resolution.as_deref(),
        wrapper: chain.wrapper.as_deref(),
        children: &children,
        installed: &chain.installed,
    };
    let installed = match (duplicate, &failure) {
        (Some(message), _) => Installed::duplicate(message),
        (None, Some(err)) => Installed::install_failed(error_chain(err)),
        (None, None) => observe(operator, &observed, ctx),
    };
    let progressing = status::progressing(&observed, &installed);
    let mut conditions = vec![installed.condition(), progressing.condition()];
    conditions.extend(status::deprecation_conditions(
        observed.resolution,
        &operator.spec.package.name,
    ));
    write_status(operator, &installed, &conditions, &chain.installed, ctx).await?;
    match failure {
        Some(err) => Err(err),
        None => {
            tracing::debug!(platform_operator = %name, reason = %installed.reason, "reconciled");
            Ok(Action::requeue(ctx.settings.resync))
        }
    }
}

/// The cached chain below a PlatformOperator: its wrapper BundleDeployment, the children
/// the wrapper applied, and what they have installed.
struct Chain {
    wrapper: Option<Arc<BundleDeployment>>,
    children: Vec<(String, Option<Arc<BundleDeployment>>)>,
    installed: Vec<InstalledBundle>,
}

impl Chain {
    fn read(operator: &PlatformOperator, ctx: &Context) -> Self {
        let name = operator.name_any();
        let wrapper = ctx
            .caches
            .deployments
            .get(&ObjectRef::new(&names::wrapper(&name)));
        let children = wrapper
            .as_deref()
            .map(|w| ctx.caches.children(w))
            .unwrap_or_default();
        let previous = upgrade::previously_installed(operator);
        let mut chain = Self {
            wrapper,
            children,
            installed: Vec::new(),
        };
        chain.installed = upgrade::installed_bundles(&chain.borrowed_children(), &previous);
        chain
    }

    fn borrowed_children(&self) -> Vec<(String, Option<&BundleDeployment>)> {
        self.children
            .iter()
            .map(|(name, child)| (name.clone(), child.as_deref()))
            .collect()
    }
}

impl Installed {
    fn duplicate(message: String) -> Self {
        Self {
            installed: false,
            reason: reasons::DUPLICATE_PACKAGE.to_owned(),
            message,
        }
    }

    fn install_failed(message: String) -> Self {
        Self {
            installed: false,
            reason: reasons::INSTALL_FAILED.to_owned(),
            message,
        }
    }
}

/// The ActiveResolution this PlatformOperator needs, given what it has installed (see
/// [`upgrade::constraints`]), installing as `install_account` (when set).
pub fn desired_resolution(
    operator: &PlatformOperator,
    installed: &[InstalledBundle],
    install_account: Option<&rukpak_api::ServiceAccountRef>,
) -> Option<ActiveResolution> {
    let owner = OwnerReference {
        api_version: PlatformOperator::api_version(&()).into_owned(),
        kind: PlatformOperator::kind(&()).into_owned(),
        name: operator.name_any(),
        uid: operator.meta().uid.clone()?,
        controller: Some(true),
        block_owner_deletion: Some(true),
    };
    let mut resolution = ActiveResolution::new(
        &operator.name_any(),
        deppy_api::ActiveResolutionSpec {
            sources: Vec::new(),
            constraints: upgrade::constraints(operator, installed),
        },
    );
    let meta = resolution.meta_mut();
    meta.labels = Some(operator.labels().clone()).filter(|l| !l.is_empty());
    let mut annotations = BTreeMap::from([(
        deppy_api::ACTIVATOR_CLASS_ANNOTATION.to_owned(),
        ACTIVATOR_CLASS.to_owned(),
    )]);
    if let Some(account) = install_account {
        annotations.insert(
            deppy_api::SERVICE_ACCOUNT_ANNOTATION.to_owned(),
            account.to_string(),
        );
    }
    if let Some(config) = &operator.spec.config
        && let Ok(json) = serde_json::to_string(config)
    {
        annotations.insert(platform_api::CONFIG_ANNOTATION.to_owned(), json);
    }
    if let Some(upgrade_approval) = operator.spec.upgrade_approval {
        let approval = platform_api::Approval {
            upgrade_approval,
            approved_revision: operator.spec.approved_revision.clone(),
        };
        if let Ok(json) = serde_json::to_string(&approval) {
            annotations.insert(platform_api::APPROVAL_ANNOTATION.to_owned(), json);
        }
    }
    meta.annotations = Some(annotations);
    meta.owner_references = Some(vec![owner]);
    Some(resolution)
}

/// Whether `existing` already carries everything `desired` sets.
fn up_to_date(existing: &ActiveResolution, desired: &ActiveResolution) -> bool {
    let annotations_set = desired
        .annotations()
        .iter()
        .all(|(k, v)| existing.annotations().get(k) == Some(v))
        // A config or approval removed from the PlatformOperator is removed below it too.
        && [
            platform_api::CONFIG_ANNOTATION,
            platform_api::APPROVAL_ANNOTATION,
            deppy_api::SERVICE_ACCOUNT_ANNOTATION,
        ]
            .iter()
            .all(|key| {
                desired.annotations().contains_key(*key)
                    || !existing.annotations().contains_key(*key)
            });
    // Others may add owner references (e.g. a background garbage-collection hint); ours
    // must be there.
    let owned = desired
        .owner_references()
        .iter()
        .all(|owner| existing.owner_references().contains(owner));
    // Labels are compared whole, so that a label removed from the PlatformOperator is
    // removed below it too.
    existing.spec == desired.spec
        && existing.labels() == desired.labels()
        && annotations_set
        && owned
}

/// Creates or updates the ActiveResolution; returns the cached one (which may lag
/// behind a write just made: its watch event reconciles again).
async fn ensure_resolution(
    operator: &PlatformOperator,
    installed: &[InstalledBundle],
    ctx: &Context,
) -> Result<Option<Arc<ActiveResolution>>, Error> {
    let name = operator.name_any();
    let desired = desired_resolution(
        operator,
        installed,
        ctx.settings.install_service_account.as_ref(),
    )
    .ok_or_else(|| Error::NoUid(name.clone()))?;
    let existing = ctx.caches.resolutions.get(&ObjectRef::new(&name));
    if let Some(existing) = &existing {
        if !ownership::is_owned_by(existing, operator) {
            return Err(Error::ForeignResolution(name));
        }
        if up_to_date(existing, &desired) {
            return Ok(Some(existing.clone()));
        }
    }
    let applied = Api::<ActiveResolution>::all(ctx.client.clone())
        .patch(
            &name,
            &PatchParams::apply(MANAGER).force(),
            &Patch::Apply(&desired),
        )
        .await
        .map_err(|source| Error::ApplyResolution(name.clone(), source))?;
    tracing::info!(platform_operator = %name, generation = ?applied.meta().generation, "applied ActiveResolution");
    Ok(Some(Arc::new(applied)))
}

/// Deletes the PlatformOperator's own ActiveResolution, if it has one (a duplicate
/// installs nothing).
async fn remove_resolution(operator: &PlatformOperator, ctx: &Context) -> Result<(), Error> {
    let name = operator.name_any();
    let Some(existing) = ctx.caches.resolutions.get(&ObjectRef::new(&name)) else {
        return Ok(());
    };
    if !ownership::is_owned_by(&existing, operator) || existing.meta().deletion_timestamp.is_some()
    {
        return Ok(());
    }
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid: existing.meta().uid.clone(),
            resource_version: None,
        }),
        ..DeleteParams::background()
    };
    match Api::<ActiveResolution>::all(ctx.client.clone())
        .delete(&name, &params)
        .await
    {
        Ok(_) => {
            tracing::info!(platform_operator = %name, "deleted the ActiveResolution of a duplicate PlatformOperator");
            Ok(())
        }
        Err(kube::Error::Api(s)) if s.code == 404 || s.is_conflict() => Ok(()),
        Err(source) => Err(Error::DeleteResolution(name, source)),
    }
}

/// The `Installed` condition from the cached chain below the PlatformOperator.
fn observe(operator: &PlatformOperator, observed: &Observed<'_>, ctx: &Context) -> Installed {
    let installed = status::installed(observed);
    if !installed.installed
        && !installed.is_pending()
        && let Some(resolution) = observed.resolution
        && let Some(message) = ownership::conflict(&ctx.caches, operator, resolution)
    {
        return Installed::duplicate(message);
    }
    installed
}

/// Writes `conditions`, `installedBundles`, `activeBundleDeployment` and
/// `observedGeneration` when they differ from what is stored.
async fn write_status(
    operator: &PlatformOperator,
    installed: &Installed,
    conditions: &[Desired],
    bundles: &[InstalledBundle],
    ctx: &Context,
) -> Result<(), Error> {
    let name = operator.name_any();
    let generation = operator.meta().generation;
    let current = operator.status.clone().unwrap_or_default();
    let mut next = current.clone();
    next.observed_generation = generation;
    let now = kit::conditions::now();
    kit::conditions::set_all(
        &mut next.conditions,
        conditions.iter().cloned(),
        generation,
        &now,
    );
    next.installed_bundles = bundles.to_vec();
    next.active_bundle_deployment = active_bundle_deployment(operator, installed, ctx);
    if next == current {
        return Ok(());
    }
    announce(operator, &current, &next, ctx).await;
    kit::status::apply(
        &Api::<PlatformOperator>::all(ctx.client.clone()),
        &name,
        super::MANAGER,
        &next,
    )
    .await
    .map_err(|source| Error::Status(name, source))?;
    Ok(())
}

/// The wrapper BundleDeployment, once it has installed something (kept while a later
/// pivot or health problem is reported, so the administrator can follow it). A duplicate
/// has none.
fn active_bundle_deployment(
    operator: &PlatformOperator,
    installed: &Installed,
    ctx: &Context,
) -> Option<ActiveBundleDeployment> {
    if installed.reason == reasons::DUPLICATE_PACKAGE {
        return None;
    }
    let name = names::wrapper(&operator.name_any());
    let wrapper = ctx.caches.deployments.get(&ObjectRef::new(&name))?;
    let has_installed = installed.installed
        || wrapper
            .status
            .as_ref()
            .is_some_and(|s| s.active_bundle.is_some());
    has_installed.then_some(ActiveBundleDeployment { name })
}

/// An Event for each condition that is news (see [`news`]).
async fn announce(
    operator: &PlatformOperator,
    before: &PlatformOperatorStatus,
    after: &PlatformOperatorStatus,
    ctx: &Context,
) {
    kit::controller::announce(
        &ctx.recorder,
        &operator.object_ref(&()),
        &before.conditions,
        &after.conditions,
        news,
    )
    .await;
}

/// What a changed PlatformOperator condition means to the people reading its Events:
/// `Installed` changes, a blocked upgrade (Progressing's other changes follow Installed's
/// and would only repeat them), and a catalog's deprecation notice, once. Pure.
fn news(condition: &Condition) -> News {
    let warning = match condition.type_.as_str() {
        // Waiting for a resolution or an install is not a warning.
        TYPE_INSTALLED => {
            condition.status == kit::conditions::status::FALSE
                && !status::is_pending_reason(&condition.reason)
        }
        TYPE_PROGRESSING if status::is_blocked_reason(&condition.reason) => true,
        TYPE_DEPRECATED if condition.status == kit::conditions::status::TRUE => true,
        _ => return News::Quiet,
    };
    if warning { News::Warning } else { News::Normal }
}

#[cfg(test)]
mod tests {
    use super::*;
    use platform_api::{Package, PlatformOperatorSpec};

    fn operator() -> PlatformOperator {
        let mut operator = PlatformOperator::new(
            "memcached",
            PlatformOperatorSpec {
                package: Package {
                    name: "memcached-operator".into(),
                    channel: Some("stable".into()),
                    version_range: Some(">=0.1.0 <0.2.0".into()),
                    upgrade_constraint_policy: Default::default(),
                },
                config: None,
                upgrade_approval: None,
                approved_revision: None,
            },
        );
        operator.metadata.uid = Some("uid-1".into());
        operator.metadata.labels = Some(BTreeMap::from([("team".into(), "db".into())]));
        operator
    }

    /// The requests of `reconcile_operator` (caches empty: a new PlatformOperator), seen
    /// through a mocked API server (no cluster).
    mod writes {
        use super::*;
        use serde_json::json;
        use testkit::mock_api::{self, Exchange};

        const RESOLUTION: &str = "/apis/deppy.io/v1alpha1/activeresolutions/memcached?force=true&fieldManager=platform-operators";
        const STATUS: &str = "/apis/platform.openshift.io/v1alpha1/platformoperators/memcached/status?force=true&fieldManager=platform-operators";
        const EVENTS: &str = "/apis/events.k8s.io/v1/namespaces/default/events";

        fn installed(status: &str, reason: &str) -> serde_json::Value {
            json!({
                "apiVersion": "platform.openshift.io/v1alpha1",
                "kind": "PlatformOperator",
                "status": {"conditions": [{"type": "Installed", "status": status, "reason": reason}]},
            })
        }

        #[tokio::test]
        async fn a_new_platform_operator_gets_its_resolution_then_a_pending_status() {
            let class = deppy_api::ACTIVATOR_CLASS_ANNOTATION;
            let (client, server) = mock_api::serve([
                Exchange::patch(RESOLUTION)
                    .body_includes(json!({
                        "apiVersion": "deppy.io/v1alpha1",
                        "kind": "ActiveResolution",
                        "metadata": {
                            "name": "memcached",
                            "labels": {"team": "db"},
                            "annotations": {class: ACTIVATOR_CLASS},
                            "ownerReferences": [{"kind": "PlatformOperator", "name": "memcached",
                                                 "uid": "uid-1", "controller": true}],
                        },
                    }))
                    .reply_echo(),
                Exchange::post(EVENTS)
                    .body_includes(json!({
                        "type": "Normal",
                        "reason": "UnpackPending",
                        "regarding": {"kind": "PlatformOperator", "name": "memcached"},
                    }))
                    .reply_echo(),
                Exchange::patch(STATUS)
                    .body_includes(installed("False", "UnpackPending"))
                    .reply(&operator()),
            ]);
            let ctx = Context::for_tests(client);
            let action = server
                .run(reconcile_operator(&operator(), &ctx))
                .await
                .unwrap();
            assert_eq!(action, Action::requeue(ctx.settings.resync));
        }

        #[tokio::test]
        async fn a_refused_resolution_is_reported_in_the_status_and_retried() {
            let (client, server) = mock_api::serve([
                Exchange::patch(RESOLUTION).reply_status(403, "Forbidden"),
                Exchange::post(EVENTS)
                    .body_includes(json!({"type": "Warning", "reason": "InstallFailed"}))
                    .reply_echo(),
                Exchange::patch(STATUS)
                    .body_includes(installed("False", "InstallFailed"))
                    .reply(&operator()),
            ]);
            let ctx = Context::for_tests(client);
            let err = server
                .run(reconcile_operator(&operator(), &ctx))
                .await
                .unwrap_err();
            assert!(matches!(err, Error::ApplyResolution(..)), "{err:?}");
        }
    }

    #[test]
    fn the_resolution_requires_the_package_and_is_owned_by_the_platform_operator() {
        let resolution = desired_resolution(&operator(), &[], None).unwrap();
        let value = serde_json::to_value(&resolution).unwrap();
        assert_eq!(value["metadata"]["name"], "memcached");
        assert_eq!(
            value["metadata"]["annotations"][deppy_api::ACTIVATOR_CLASS_ANNOTATION],
            "PlatformOperator"
        );
        assert_eq!(value["metadata"]["labels"]["team"], "db");
        let owner = &value["metadata"]["ownerReferences"][0];
        assert_eq!(owner["kind"], "PlatformOperator");
        assert_eq!(owner["apiVersion"], "platform.openshift.io/v1alpha1");
        assert_eq!(owner["uid"], "uid-1");
        assert_eq!(owner["controller"], true);
        assert_eq!(
            value["spec"]["constraints"],
            serde_json::json!([{"required": {"name": "memcached-operator", "versionRange": ">=0.1.0 <0.2.0", "channel": "stable"}}])
        );
        assert!(ownership::is_owned_by(&resolution, &operator()));
    }

    #[test]
    fn the_config_travels_as_an_annotation_and_its_removal_makes_the_resolution_stale() {
        let mut configured = operator();
        configured.spec.config = Some(platform_api::OperatorConfig {
            deployment_config: Some(
                serde_json::json!({"env": [{"name": "LOG_LEVEL", "value": "debug"}]}),
            ),
        });
        let with = desired_resolution(&configured, &[], None).unwrap();
        assert_eq!(
            with.annotations()
                .get(platform_api::CONFIG_ANNOTATION)
                .map(String::as_str),
            Some(r#"{"deploymentConfig":{"env":[{"name":"LOG_LEVEL","value":"debug"}]}}"#)
        );
        let without = desired_resolution(&operator(), &[], None).unwrap();
        assert!(
            !without
                .annotations()
                .contains_key(platform_api::CONFIG_ANNOTATION)
        );
        assert!(
            !up_to_date(&with, &without),
            "removing the config re-applies"
        );
        assert!(!up_to_date(&without, &with), "adding the config re-applies");
        assert!(up_to_date(&with, &with));
    }

    #[test]
    fn the_install_identity_is_named_on_the_resolution_and_its_removal_re_applies() {
        let account: rukpak_api::ServiceAccountRef =
            "rukpak-system/operator-installer".parse().unwrap();
        let with = desired_resolution(&operator(), &[], Some(&account)).unwrap();
        assert_eq!(
            with.annotations()
                .get(deppy_api::SERVICE_ACCOUNT_ANNOTATION)
                .map(String::as_str),
            Some("rukpak-system/operator-installer")
        );
        let without = desired_resolution(&operator(), &[], None).unwrap();
        assert!(
            !without
                .annotations()
                .contains_key(deppy_api::SERVICE_ACCOUNT_ANNOTATION)
        );
        assert!(
            !up_to_date(&with, &without),
            "dropping the identity re-applies"
        );
        assert!(!up_to_date(&without, &with), "naming one re-applies");
    }

    #[test]
    fn the_activator_class_annotation_key_is_one_the_api_server_accepts() {
        let key = deppy_api::ACTIVATOR_CLASS_ANNOTATION;
        assert_eq!(key.matches('/').count(), 1, "{key}");
        assert!(key.ends_with("/activator-class"), "{key}");
    }

    #[test]
    fn a_platform_operator_without_uid_has_no_resolution() {
        let mut operator = operator();
        operator.metadata.uid = None;
        assert!(desired_resolution(&operator, &[], None).is_none());
    }

    #[test]
    fn spec_and_label_changes_make_the_resolution_stale() {
        let desired = desired_resolution(&operator(), &[], None).unwrap();
        let mut existing = desired.clone();
        existing
            .annotations_mut()
            .insert("someone/else".into(), "x".into());
        assert!(
            up_to_date(&existing, &desired),
            "foreign annotations are fine"
        );
        let mut upgraded = operator();
        upgraded.spec.package.version_range = Some(">=0.2.0".into());
        assert!(!up_to_date(
            &existing,
            &desired_resolution(&upgraded, &[], None).unwrap()
        ));
        let mut relabelled = operator();
        relabelled.metadata.labels = None;
        assert!(!up_to_date(
            &existing,
            &desired_resolution(&relabelled, &[], None).unwrap()
        ));
    }

    #[test]
    fn bundle_deployments_map_to_the_platform_operators_of_their_wrappers() {
        use kube::runtime::reflector;
        use kube::runtime::watcher::Event;
        let (operators, mut writer) = reflector::store::<PlatformOperator>();
        let long = format!("memcached-{}", "x".repeat(50));
        for name in ["memcached", "metrics-agent", long.as_str()] {
            let mut po = operator();
            po.metadata.name = Some(name.to_owned());
            writer.apply_watcher_event(&Event::Apply(po));
        }
        let caches = Caches {
            operators,
            resolutions: reflector::store().0,
            deployments: reflector::store().0,
        };
        let deployment = |name: &str, wrapper: Option<&str>| -> BundleDeployment {
            let mut value = serde_json::json!({
                "apiVersion": "core.rukpak.io/v1alpha1",
                "kind": "BundleDeployment",
                "metadata": {"name": name},
                "spec": {"provisionerClassName": "core-rukpak-io-registry", "template": {"spec": {"provisionerClassName": "core-rukpak-io-registry", "source": {"type": "image", "image": {"ref": "x"}}}}}
            });
            if let Some(wrapper) = wrapper {
                value["metadata"]["labels"] = serde_json::json!({
                    "core.rukpak.io/owner-kind": "BundleDeployment",
                    "core.rukpak.io/owner-name": wrapper
                });
            }
            serde_json::from_value(value).unwrap()
        };
        let names = |d: &BundleDeployment| -> Vec<String> {
            owners(&caches, d).into_iter().map(|r| r.name).collect()
        };
        // A child named like another PlatformOperator concerns both.
        assert_eq!(
            names(&deployment("metrics-agent", Some("memcached"))),
            ["metrics-agent", "memcached"]
        );
        assert_eq!(names(&deployment("memcached", None)), ["memcached"]);
        assert!(names(&deployment("unrelated", None)).is_empty());
        // A long PlatformOperator name maps from its shortened wrapper name.
        let wrapper = names::wrapper(&long);
        assert_eq!(
            names(&deployment(&wrapper, None)),
            std::slice::from_ref(&long)
        );
        assert_eq!(
            names(&deployment("memcached-operator", Some(&wrapper))),
            [long]
        );
    }

    #[test]
    fn errors_name_the_object_and_classify() {
        let err = Error::ForeignResolution("memcached".into());
        assert_eq!(
            err.to_string(),
            "failed to adopt ActiveResolution memcached: it exists and is not owned by PlatformOperator memcached"
        );
        assert_eq!(err.retry(), Retry::WaitForChange);
        assert_eq!(err.label(), "foreign_resolution");
    }
}
