//! The BundleDeployment controller of rukpak-core: keeps the Bundle of the current
//! template, the one installed, and a bounded history of earlier revisions.
//!
//! A pivot, step by step: the template changes; the Bundle `<bd>-<hash>` of the new
//! template is created with the next revision number (label `core.rukpak.io/revision`)
//! and unpacked; the provisioner applies it and sets `activeBundle` to it. Until then the
//! old Bundle (and its objects) stay, so a failed pivot changes nothing on the cluster.
//! Bundles the provisioner has tried (they carry `status.revisionOutcome`) are kept as
//! history, the newest `spec.revisionHistoryLimit` of them: their content stays in the
//! content store, so a rollback to one fetches nothing. Bundles never tried (the template
//! moved on before they were applied) are deleted.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kit::events::Recorder;
use kube::api::{DeleteParams, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::reflector::{Store, store::Writer};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Resource, ResourceExt};
use rukpak_api::labels::{OWNER_KIND, OWNER_NAME, REVISION, TEMPLATE_HASH};
use rukpak_api::{Bundle, BundleDeployment, bundle_name, template_hash};
use tokio_util::sync::CancellationToken;

use kit::kube_error::KubeCallError;
use kit::metrics::ReconcileMetrics;
use kit::retry::Backoff;

/// The most Bundles one BundleDeployment may have at once. A template that changes faster
/// than Bundles unpack would otherwise create Bundles without bound.
pub const MAX_GENERATED_BUNDLES: usize = 4;

/// Superseded revisions kept when `spec.revisionHistoryLimit` is not set.
pub const DEFAULT_REVISION_HISTORY_LIMIT: usize = 2;

/// What the controller needs.
pub struct Context {
    client: Client,
    recorder: Recorder,
    metrics: ReconcileMetrics,
    backoff: Backoff,
    selector: Option<String>,
    /// Every Bundle a BundleDeployment owns, as its watch last saw it: a reconcile reads
    /// them here instead of listing them (a reconcile runs on every status change).
    bundles: Store<Bundle>,
    /// The writer of that store, taken by [`run`], which starts its watch.
    writer: std::sync::Mutex<Option<Writer<Bundle>>>,
    /// Bundles created moments ago that the store may not show yet.
    created: RecentlyCreated,
}

/// How long a Bundle this controller created is taken to exist while its watch does not
/// show it yet. The next reconcile (which often comes before that watch event, through
/// another watch) would otherwise create it again and be refused as a conflict.
const CREATE_SETTLES_WITHIN: std::time::Duration = std::time::Duration::from_secs(10);

/// Names of Bundles created by this process and when, until the store shows them.
#[derive(Default)]
struct RecentlyCreated(std::sync::Mutex<HashMap<String, std::time::Instant>>);

impl RecentlyCreated {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, std::time::Instant>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether `name` was created less than [`CREATE_SETTLES_WITHIN`] ago.
    fn pending(&self, name: &str, now: std::time::Instant) -> bool {
        self.lock()
            .get(name)
            .is_some_and(|&at| now.saturating_duration_since(at) < CREATE_SETTLES_WITHIN)
    }

    fn record(&self, name: String, now: std::time::Instant) {
        let mut created = self.lock();
        created.retain(|_, &mut at| now.saturating_duration_since(at) < CREATE_SETTLES_WITHIN);
        created.insert(name, now);
    }

    /// The store shows `name`: nothing to remember.
    fn settled(&self, name: &str) {
        self.lock().remove(name);
    }
}

impl Context {
    /// The context. With `selector`, only BundleDeployments matching that label selector
    /// are handled.
    pub fn new(client: Client, metrics: ReconcileMetrics, selector: Option<String>) -> Self {
        let writer = Writer::default();
        Self {
            bundles: writer.as_reader(),
            writer: std::sync::Mutex::new(Some(writer)),
            created: RecentlyCreated::default(),
            selector,
            recorder: kit::controller::recorder(client.clone(), crate::FIELD_MANAGER),
            client,
            metrics,
            backoff: Backoff::default(),
        }
    }
}

/// A failed reconcile: creating or deleting one of the BundleDeployment's Bundles.
pub type Error = KubeCallError;

/// Runs the controller until `shutdown`.
pub async fn run(
    ctx: Arc<Context>,
    readiness: &kit::admin::Readiness,
    shutdown: CancellationToken,
) {
    let Some(writer) = ctx
        .writer
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take()
    else {
        tracing::error!("the BundleDeployment controller of this context runs already");
        return;
    };
    let config = kit::watch::config(ctx.selector.as_deref());
    let bundles = kit::watch::cached(
        Api::<Bundle>::all(ctx.client.clone()),
        watcher::Config::default().labels(OWNER_NAME),
        writer,
        readiness,
        "watch:generated-bundles",
    )
    .touched_objects();
    let (requests, from_bundles) = tokio::sync::mpsc::channel(1024);
    tokio::spawn(kit::watch::forward(
        bundles,
        |bundle: &Bundle| {
            bundle
                .labels()
                .get(OWNER_NAME)
                .map(|owner| kube::runtime::reflector::ObjectRef::new(owner))
        },
        requests,
        shutdown.clone(),
    ));
    // Every change, status included: the provisioner's `activeBundle` decides which old
    // Bundles may go.
    let controller = kit::watch::on_every_change(
        Api::<BundleDeployment>::all(ctx.client.clone()),
        config,
        readiness,
        "watch:bundledeployments",
    )
    .reconcile_on(tokio_stream::wrappers::ReceiverStream::new(from_bundles))
    .graceful_shutdown_on(shutdown.cancelled_owned());
    controller
        .run(reconcile, error_policy, ctx)
        .inspect(kit::watch::report_controller_failures(
            readiness,
            "watch:bundledeployments",
        ))
        .for_each(|result| async move {
            if let Err(err) = result {
                tracing::debug!(error = %err, "bundledeployment reconcile request failed");
            }
        })
        .await;
}

fn error_policy(deployment: Arc<BundleDeployment>, error: &Error, ctx: Arc<Context>) -> Action {
    kit::controller::retry_after(
        &ctx.backoff,
        "BundleDeployment",
        &deployment.name_any(),
        error,
    )
}

/// The revision number of a generated Bundle (its `core.rukpak.io/revision` label).
pub fn revision_of(bundle: &Bundle) -> Option<i64> {
    bundle.labels().get(REVISION)?.parse().ok()
}

/// The number the next revision gets: one more than any the BundleDeployment has had,
/// counting both the Bundles that exist and the revisions its status remembers (a deleted
/// Bundle's number is never reused). Pure.
pub fn next_revision(deployment: &BundleDeployment, owned: &[Bundle]) -> i64 {
    let from_bundles = owned.iter().filter_map(revision_of).max().unwrap_or(0);
    let from_status = deployment
        .status
        .as_ref()
        .and_then(|s| s.revisions.iter().map(|r| r.revision).max())
        .unwrap_or(0);
    from_bundles.max(from_status) + 1
}

/// The Bundles to delete: never the desired one or the installed one; of the rest, those
/// the provisioner never tried, and tried ones beyond the newest `history_limit`. Pure.
pub fn bundles_to_delete(
    owned: &[Bundle],
    desired: &str,
    active: Option<&str>,
    history_limit: usize,
) -> Vec<String> {
    let mut history: Vec<&Bundle> = Vec::new();
    let mut delete = Vec::new();
    for bundle in owned {
        let name = bundle.name_any();
        if name == desired || Some(name.as_str()) == active {
            continue;
        }
        if bundle.meta().deletion_timestamp.is_some() {
            continue;
        }
        let tried = bundle
            .status
            .as_ref()
            .is_some_and(|s| s.revision_outcome.is_some());
        if tried {
            history.push(bundle);
        } else {
            delete.push(name);
        }
    }
    // Newest first: by revision number, then by name for a stable order.
    history.sort_by_key(|b| (std::cmp::Reverse(revision_of(b)), b.name_any()));
    delete.extend(history.iter().skip(history_limit).map(|b| b.name_any()));
    delete.sort();
    delete
}

/// The Bundle a BundleDeployment's template asks for (without its revision number, which
/// depends on the Bundles that exist; see [`next_revision`]).
pub fn desired_bundle(deployment: &BundleDeployment) -> Option<Bundle> {
    let hash = template_hash(&deployment.spec.template);
    let name = deployment.name_any();
    let template_meta = deployment
        .spec
        .template
        .metadata
        .clone()
        .unwrap_or_default();
    let mut labels: BTreeMap<String, String> = template_meta.labels;
    labels.insert(OWNER_KIND.into(), "BundleDeployment".into());
    labels.insert(OWNER_NAME.into(), name.clone());
    labels.insert(TEMPLATE_HASH.into(), hash.clone());
    Some(Bundle {
        metadata: ObjectMeta {
            name: Some(bundle_name(&name, &hash)),
            labels: Some(labels),
            annotations: Some(template_meta.annotations).filter(|a| !a.is_empty()),
            owner_references: Some(vec![deployment.controller_owner_ref(&())?]),
            ..ObjectMeta::default()
        },
        spec: deployment.spec.template.spec.clone(),
        status: None,
    })
}

async fn reconcile(deployment: Arc<BundleDeployment>, ctx: Arc<Context>) -> Result<Action, Error> {
    kit::controller::timed(
        &ctx.metrics,
        "bundledeployment",
        generate_bundle(&deployment, &ctx),
    )
    .await
}

/// Creates the Bundle of the current template and deletes the Bundles nothing needs.
async fn generate_bundle(deployment: &BundleDeployment, ctx: &Context) -> Result<Action, Error> {
    if deployment.meta().deletion_timestamp.is_some() {
        // The Bundles go with it through their owner references.
        return Ok(Action::await_change());
    }
    let name = deployment.name_any();
    let bundles: Api<Bundle> = Api::all(ctx.client.clone());
    let Some(desired) = desired_bundle(deployment) else {
        // No uid yet: a watch event will follow.
        return Ok(Action::await_change());
    };
    let desired_name = desired.name_any();
    // Until the Bundle watch has listed once, "no Bundle" would only mean "not seen yet".
    if kit::watch::until_listed(&ctx.bundles).await.is_err() {
        return Ok(Action::requeue(std::time::Duration::from_secs(1)));
    }
    let owned: Vec<Bundle> = ctx
        .bundles
        .state_filter(|b| b.labels().get(OWNER_NAME) == Some(&name))
        .into_iter()
        .map(|b| Bundle::clone(&b))
        .collect();
    let active = deployment
        .status
        .as_ref()
        .and_then(|s| s.active_bundle.clone());

    if owned.iter().any(|b| b.name_any() == desired_name) {
        ctx.created.settled(&desired_name);
    } else if ctx
        .created
        .pending(&desired_name, std::time::Instant::now())
    {
        // Created moments ago and not in the store yet: look again shortly (without a
        // request) rather than create it twice. Should it have been deleted since, the
        // look after the settling time creates it again.
        return Ok(Action::requeue(std::time::Duration::from_secs(1)));
    } else {
        // Bundles waiting to be tried: not the installed one, never applied.
        let waiting = owned
            .iter()
            .filter(|b| Some(b.name_any()) != active)
            .filter(|b| {
                b.status
                    .as_ref()
                    .is_none_or(|s| s.revision_outcome.is_none())
            })
            .count();
        if waiting >= MAX_GENERATED_BUNDLES {
            ctx.event(deployment, "TooManyBundles", format!(
                "{waiting} Bundles are waiting to be installed; not creating {desired_name} until the provisioner catches up"
            )).await;
            return Ok(Action::requeue(std::time::Duration::from_secs(30)));
        }
        let mut desired = desired;
        desired.labels_mut().insert(
            REVISION.into(),
            next_revision(deployment, &owned).to_string(),
        );
        match bundles.create(&PostParams::default(), &desired).await {
            Ok(_) => ctx
                .created
                .record(desired_name.clone(), std::time::Instant::now()),
            // Created by a concurrent reconcile or a previous run: fine.
            Err(kube::Error::Api(status)) if status.code == 409 => {}
            Err(source) => {
                return Err(KubeCallError::new(
                    "create a Bundle for",
                    format!("BundleDeployment {name}"),
                    source,
                ));
            }
        }
    }

    let history_limit = deployment
        .spec
        .revision_history_limit
        .and_then(|limit| usize::try_from(limit).ok())
        .unwrap_or(DEFAULT_REVISION_HISTORY_LIMIT);
    for bundle_name in bundles_to_delete(&owned, &desired_name, active.as_deref(), history_limit) {
        match bundles
            .delete(&bundle_name, &DeleteParams::background())
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(source) => {
                return Err(KubeCallError::new(
                    "delete an old Bundle of",
                    format!("BundleDeployment {name}"),
                    source,
                ));
            }
        }
    }
    ctx.backoff.reset(&name);
    Ok(Action::await_change())
}

impl Context {
    async fn event(&self, deployment: &BundleDeployment, reason: &str, note: String) {
        kit::events::publish(
            &self.recorder,
            &deployment.object_ref(&()),
            true,
            reason,
            "Pivot",
            note,
        )
        .await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use rukpak_api::{BundleStatus, RevisionOutcome};

    #[test]
    fn a_bundle_just_created_counts_as_there_until_the_store_shows_it_or_time_passes() {
        let created = RecentlyCreated::default();
        let now = std::time::Instant::now();
        assert!(!created.pending("a-1", now));
        created.record("a-1".to_owned(), now);
        assert!(created.pending("a-1", now + std::time::Duration::from_secs(1)));
        assert!(!created.pending("b-1", now), "another Bundle");
        // Deleted behind this controller's back: created again once the settling time is over.
        assert!(!created.pending("a-1", now + CREATE_SETTLES_WITHIN));
        created.settled("a-1");
        assert!(!created.pending("a-1", now));
        // Old entries go as new ones come.
        created.record("c-1".to_owned(), now);
        created.record("d-1".to_owned(), now + CREATE_SETTLES_WITHIN);
        assert_eq!(created.lock().len(), 1);
    }

    fn bundle(name: &str, revision: i64, outcome: Option<RevisionOutcome>) -> Bundle {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "core.rukpak.io/v1alpha1",
            "kind": "Bundle",
            "metadata": {"name": name, "labels": {REVISION: revision.to_string()}},
            "spec": {"provisionerClassName": "core-rukpak-io-plain",
                     "source": {"type": "image", "image": {"ref": "example.com/a:1"}}},
        }))
        .map(|mut b: Bundle| {
            b.status = Some(BundleStatus {
                revision_outcome: outcome,
                ..BundleStatus::default()
            });
            b
        })
        .unwrap()
    }

    #[test]
    fn history_keeps_the_newest_tried_revisions_and_drops_untried_ones() {
        let owned = vec![
            bundle("bd-1", 1, Some(RevisionOutcome::Superseded)),
            bundle("bd-2", 2, Some(RevisionOutcome::Superseded)),
            bundle("bd-3", 3, Some(RevisionOutcome::Failed)),
            bundle("bd-4", 4, None),
            bundle("bd-5", 5, Some(RevisionOutcome::Healthy)),
            bundle("bd-6", 6, None),
        ];
        // bd-6 is wanted, bd-5 runs; bd-4 was never tried; of 3, 2, 1 the newest two stay.
        assert_eq!(
            bundles_to_delete(&owned, "bd-6", Some("bd-5"), 2),
            vec!["bd-1".to_owned(), "bd-4".to_owned()]
        );
        assert_eq!(
            bundles_to_delete(&owned, "bd-6", Some("bd-5"), 0),
            vec![
                "bd-1".to_owned(),
                "bd-2".to_owned(),
                "bd-3".to_owned(),
                "bd-4".to_owned()
            ]
        );
        // A rollback made an old revision active again: it is never deleted.
        assert!(!bundles_to_delete(&owned, "bd-6", Some("bd-1"), 0).contains(&"bd-1".to_owned()));
    }

    #[test]
    fn revision_numbers_never_repeat_even_after_bundles_are_deleted() {
        let mut deployment: BundleDeployment = serde_json::from_value(serde_json::json!({
            "apiVersion": "core.rukpak.io/v1alpha1",
            "kind": "BundleDeployment",
            "metadata": {"name": "bd"},
            "spec": {"provisionerClassName": "core-rukpak-io-plain",
                     "template": {"spec": {"provisionerClassName": "core-rukpak-io-plain",
                                           "source": {"type": "image", "image": {"ref": "example.com/a:1"}}}}},
        }))
        .unwrap();
        assert_eq!(next_revision(&deployment, &[]), 1);
        let owned = vec![bundle("bd-3", 3, None), bundle("bd-2", 2, None)];
        assert_eq!(next_revision(&deployment, &owned), 4);
        deployment.status = Some(rukpak_api::BundleDeploymentStatus {
            revisions: vec![rukpak_api::RevisionRecord {
                revision: 7,
                bundle: "bd-7".into(),
                digest: "sha256:00".into(),
                outcome: RevisionOutcome::Superseded,
                started: None,
                last_healthy: None,
                message: None,
            }],
            ..Default::default()
        });
        assert_eq!(next_revision(&deployment, &owned), 8);
    }

    /// Writes of `generate_bundle`, seen through a mocked API server (no cluster).
    mod writes {
        use super::*;
        use kube::runtime::watcher::Event;
        use serde_json::json;
        use testkit::mock_api::{self, Exchange};

        const BUNDLES: &str = "/apis/core.rukpak.io/v1alpha1/bundles";

        fn deployment() -> BundleDeployment {
            serde_json::from_value(json!({
                "apiVersion": "core.rukpak.io/v1alpha1",
                "kind": "BundleDeployment",
                "metadata": {"name": "bd", "uid": "bd-uid"},
                "spec": {"provisionerClassName": "core-rukpak-io-plain",
                         "template": {"spec": {"provisionerClassName": "core-rukpak-io-plain",
                                               "source": {"type": "image", "image": {"ref": "example.com/a:1"}}}}},
            }))
            .unwrap()
        }

        fn desired_name() -> String {
            desired_bundle(&deployment()).unwrap().name_any()
        }

        /// A Bundle of `bd` (it carries the owner label the store is filtered on).
        fn owned(name: &str, revision: i64) -> Bundle {
            let mut bundle = bundle(name, revision, None);
            bundle.labels_mut().insert(OWNER_NAME.into(), "bd".into());
            bundle
        }

        /// A context over `client` whose Bundle store has listed `bundles`.
        fn context(client: Client, bundles: Vec<Bundle>) -> Context {
            let metrics = ReconcileMetrics::register(&prometheus::Registry::new(), "test").unwrap();
            let ctx = Context::new(client, metrics, None);
            {
                let mut writer = ctx.writer.lock().unwrap();
                let writer = writer.as_mut().unwrap();
                writer.apply_watcher_event(&Event::Init);
                for bundle in bundles {
                    writer.apply_watcher_event(&Event::InitApply(bundle));
                }
                writer.apply_watcher_event(&Event::InitDone);
            }
            ctx
        }

        #[tokio::test]
        async fn the_bundle_of_the_template_is_created_with_the_first_revision() {
            let (client, server) = mock_api::serve([Exchange::post(BUNDLES)
                .body_includes(json!({
                    "metadata": {
                        "name": desired_name(),
                        "labels": {REVISION: "1", OWNER_NAME: "bd", OWNER_KIND: "BundleDeployment"},
                        "ownerReferences": [{"kind": "BundleDeployment", "name": "bd", "uid": "bd-uid", "controller": true}],
                    },
                    "spec": {"source": {"image": {"ref": "example.com/a:1"}}},
                }))
                .reply_echo()]);
            let ctx = context(client, Vec::new());
            let action = server
                .run(generate_bundle(&deployment(), &ctx))
                .await
                .unwrap();
            assert_eq!(action, Action::await_change());
            // Until its watch event, the next reconcile does not create it again.
            assert!(
                ctx.created
                    .pending(&desired_name(), std::time::Instant::now())
            );
        }

        #[tokio::test]
        async fn a_bundle_that_already_exists_is_not_an_error() {
            let (client, server) = mock_api::serve([Exchange::post(BUNDLES).already_exists()]);
            let ctx = context(client, Vec::new());
            let action = server
                .run(generate_bundle(&deployment(), &ctx))
                .await
                .unwrap();
            assert_eq!(action, Action::await_change());
            assert!(
                !ctx.created
                    .pending(&desired_name(), std::time::Instant::now())
            );
        }

        #[tokio::test]
        async fn a_refused_create_fails_the_reconcile() {
            // 404 on a create: the Bundle API is not served.
            let (client, server) = mock_api::serve([Exchange::post(BUNDLES).not_found()]);
            let ctx = context(client, Vec::new());
            let err = server
                .run(generate_bundle(&deployment(), &ctx))
                .await
                .unwrap_err();
            assert_eq!(
                err.to_string(),
                "failed to create a Bundle for BundleDeployment bd"
            );
        }

        #[tokio::test]
        async fn untried_bundles_are_deleted_in_the_background_and_one_gone_already_is_fine() {
            let current = owned(&desired_name(), 3);
            let (client, server) = mock_api::serve([
                Exchange::delete(&format!("{BUNDLES}/bd-1"))
                    .body_includes(json!({"propagationPolicy": "Background"}))
                    .reply(&owned("bd-1", 1)),
                Exchange::delete(&format!("{BUNDLES}/bd-2")).not_found(),
            ]);
            let ctx = context(client, vec![owned("bd-1", 1), owned("bd-2", 2), current]);
            let action = server
                .run(generate_bundle(&deployment(), &ctx))
                .await
                .unwrap();
            assert_eq!(action, Action::await_change());
        }

        #[tokio::test]
        async fn a_bundle_in_the_store_needs_no_request() {
            let (client, server) = mock_api::serve([]);
            let ctx = context(client, vec![owned(&desired_name(), 1)]);
            server
                .run(generate_bundle(&deployment(), &ctx))
                .await
                .unwrap();
        }
    }
}
