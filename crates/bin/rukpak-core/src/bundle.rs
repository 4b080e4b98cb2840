//! The Bundle controller: unpacks each Bundle's source once into the content store and
//! records what it unpacked. Bundles are immutable, so a Bundle that is unpacked stays
//! unpacked: tags are not re-resolved behind the user's back (to follow a tag, a
//! BundleDeployment creates a new Bundle). Content that vanished from the store is
//! unpacked again.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kit::events::Recorder;
use kube::api::PartialObjectMeta;
use kube::runtime::controller::Action;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Resource, ResourceExt};
use prometheus::{HistogramOpts, HistogramVec, IntCounterVec, Opts, Registry};
use rukpak_api::conditions::{TYPE_UNPACKED, reasons};
use rukpak_api::{Bundle, BundlePhase, BundleStatus, ContentRef};
use tokio_util::sync::CancellationToken;

use content::store::Store as ContentStore;
use kit::conditions::{Desired, status};
use kit::controller::News;
use kit::kube_error::KubeCallError;
use kit::metrics::ReconcileMetrics;
use kit::retry::Backoff;

use crate::slots::{DEFAULT_SLOT_HOLD, UnpackSlots};
use crate::sources::{self, Prepared, SourceError};
use crate::{UPLOADED_DIGEST_ANNOTATION, error_chain};

/// How often unpacked content is checked to still be in the store.
const VERIFY_INTERVAL: Duration = Duration::from_secs(600);

/// An unpack that takes longer than this shows `Unpacking` in status; a quicker one only
/// writes its outcome.
const SHOW_UNPACKING_AFTER: Duration = Duration::from_secs(1);

/// Unpack metrics, by source type.
#[derive(Clone)]
pub struct UnpackMetrics {
    duration: HistogramVec,
    bytes: IntCounterVec,
    failures: IntCounterVec,
}

impl UnpackMetrics {
    /// Registers `rukpak_core_unpack_duration_seconds{source}`,
    /// `rukpak_core_unpack_bytes_total{source}` and
    /// `rukpak_core_unpack_failures_total{source,reason}`.
    pub fn register(registry: &Registry) -> Result<Self, prometheus::Error> {
        let duration = HistogramVec::new(
            HistogramOpts::new(
                "rukpak_core_unpack_duration_seconds",
                "Time to fetch, normalise and store a Bundle's content.",
            )
            .buckets(vec![
                0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
            ]),
            &["source"],
        )?;
        let bytes = IntCounterVec::new(
            Opts::new(
                "rukpak_core_unpack_bytes_total",
                "Bytes of normalised content stored.",
            ),
            &["source"],
        )?;
        let failures = IntCounterVec::new(
            Opts::new(
                "rukpak_core_unpack_failures_total",
                "Failed unpacks by source type and reason.",
            ),
            &["source", "reason"],
        )?;
        registry.register(Box::new(duration.clone()))?;
        registry.register(Box::new(bytes.clone()))?;
        registry.register(Box::new(failures.clone()))?;
        Ok(Self {
            duration,
            bytes,
            failures,
        })
    }

    /// Counts one attempt: the time and bytes of a successful unpack, or its failure.
    fn record(&self, attempted: &Attempted) {
        match &attempted.attempt {
            Attempt::Unpacked {
                content, source, ..
            } => {
                self.duration
                    .with_label_values(&[*source])
                    .observe(attempted.started.elapsed().as_secs_f64());
                self.bytes
                    .with_label_values(&[*source])
                    .inc_by(u64::try_from(content.size).unwrap_or(0));
            }
            Attempt::Failed { source, reason, .. } => {
                self.failures.with_label_values(&[*source, *reason]).inc();
            }
            Attempt::WaitingForUpload => {}
        }
    }
}

/// What the Bundle controller needs.
pub struct Context {
    client: Client,
    namespace: String,
    store: ContentStore,
    unpacker: content::source::Unpacker,
    recorder: Recorder,
    reconciles: ReconcileMetrics,
    unpacks: UnpackMetrics,
    backoff: Backoff,
    selector: Option<String>,
    sweep_interval: Duration,
    /// How many unpacks run at once (see [`crate::slots`]).
    slots: UnpackSlots,
}

impl Context {
    /// The context; content is stored in `namespace`, where source Secrets and ConfigMaps
    /// are read too. With `selector`, only Bundles matching that label selector are handled.
    pub fn new(
        client: Client,
        namespace: &str,
        options: content::source::UnpackOptions,
        reconciles: ReconcileMetrics,
        unpacks: UnpackMetrics,
        selector: Option<String>,
    ) -> Self {
        Self {
            selector,
            store: ContentStore::new(client.clone(), namespace),
            recorder: kit::controller::recorder(client.clone(), crate::FIELD_MANAGER),
            client,
            namespace: namespace.to_owned(),
            unpacker: content::source::Unpacker::new(options),
            reconciles,
            unpacks,
            backoff: Backoff::default(),
            sweep_interval: DEFAULT_SWEEP_INTERVAL,
            slots: UnpackSlots::new(DEFAULT_CONCURRENT_UNPACKS, DEFAULT_SLOT_HOLD),
        }
    }

    /// Unpacks at most `limit` Bundles at once (0: no limit) instead of
    /// [`DEFAULT_CONCURRENT_UNPACKS`]; an unpack counts for at most [`DEFAULT_SLOT_HOLD`].
    pub fn with_concurrent_unpacks(mut self, limit: u16) -> Self {
        self.slots = UnpackSlots::new(limit, DEFAULT_SLOT_HOLD);
        self
    }

    /// Sweeps content no Bundle references every `interval` (see
    /// [`content::store::Store::sweep`]) instead of every [`DEFAULT_SWEEP_INTERVAL`].
    pub fn with_sweep_interval(mut self, interval: Duration) -> Self {
        self.sweep_interval = interval;
        self
    }
}

/// Bundles unpacked at once by default. Each unpack holds its buffers and up to 8 MiB of
/// small files; more at once than the cores can work on only adds to the peak memory (200
/// Bundles created together were all unpacked at once before this limit). An unpack that
/// takes longer than [`DEFAULT_SLOT_HOLD`] stops counting, so sources that never answer
/// cannot hold up the others (see [`crate::slots`]).
pub const DEFAULT_CONCURRENT_UNPACKS: u16 = 4;

/// How often content no Bundle references is swept (marked, then deleted a pass later).
pub const DEFAULT_SWEEP_INTERVAL: Duration = Duration::from_secs(600);

/// The content digests every Bundle of the cluster references: its unpacked content and an
/// upload waiting to be unpacked. All Bundles, not only this instance's shard: content is
/// shared by digest, and a shard must not sweep what another one uses.
async fn referenced_content(client: Client) -> Result<std::collections::BTreeSet<String>, String> {
    let bundles = Api::<Bundle>::all(client)
        .list(&kube::api::ListParams::default())
        .await
        .map_err(|err| error_chain(&err))?;
    Ok(referenced_by(&bundles.items))
}

/// The content digests `bundles` reference. Pure.
fn referenced_by(bundles: &[Bundle]) -> std::collections::BTreeSet<String> {
    bundles
        .iter()
        .flat_map(|bundle| {
            let unpacked = bundle
                .status
                .as_ref()
                .and_then(|s| s.content.as_ref())
                .map(|c| c.digest.clone());
            let uploaded = bundle
                .annotations()
                .get(crate::UPLOADED_DIGEST_ANNOTATION)
                .cloned();
            unpacked.into_iter().chain(uploaded)
        })
        .collect()
}

/// A failed Bundle reconcile: its status could not be written (a failed unpack is an
/// outcome, shown in status).
pub type Error = KubeCallError;

/// The result of one unpack attempt.
enum Attempt {
    Unpacked {
        content: ContentRef,
        resolved: Box<rukpak_api::BundleSource>,
        source: &'static str,
    },
    WaitingForUpload,
    Failed {
        message: String,
        terminal: bool,
        source: &'static str,
        reason: &'static str,
    },
}

/// Runs the Bundle controller until `shutdown`.
pub async fn run(
    ctx: Arc<Context>,
    readiness: &kit::admin::Readiness,
    shutdown: CancellationToken,
) {
    let config = kit::watch::config(ctx.selector.as_deref());
    let controller = kit::watch::on_spec_changes(
        Api::<Bundle>::all(ctx.client.clone()),
        config,
        readiness,
        "watch:bundles",
    );
    // A Bundle waiting for a missing Secret or ConfigMap retries as soon as it appears or
    // changes, not at its next backoff. Metadata only: content-store chunks share the
    // namespace and are large.
    let secrets = referrers(controller.store(), Referenced::Secret);
    let config_maps = referrers(controller.store(), Referenced::ConfigMap);
    let controller = controller
        .watches_stream(
            watcher(
                Api::<PartialObjectMeta<Secret>>::namespaced(ctx.client.clone(), &ctx.namespace),
                watcher::Config::default(),
            )
            .backoff(kit::watch::WatchBackoff::default())
            .touched_objects(),
            secrets,
        )
        .watches_stream(
            watcher(
                Api::<PartialObjectMeta<ConfigMap>>::namespaced(ctx.client.clone(), &ctx.namespace),
                watcher::Config::default(),
            )
            .backoff(kit::watch::WatchBackoff::default())
            .touched_objects(),
            config_maps,
        )
        .graceful_shutdown_on(shutdown.clone().cancelled_owned());
    let sweep = ctx.store.sweep_every(
        BUNDLE_USER,
        ctx.sweep_interval,
        || referenced_content(ctx.client.clone()),
        shutdown.cancelled_owned(),
    );
    let controller = controller
        .run(reconcile, error_policy, ctx.clone())
        .for_each(|result| async move {
            if let Err(err) = result {
                tracing::debug!(error = %err, "bundle reconcile request failed");
            }
        });
    tokio::join!(controller, sweep);
}

/// A kind of object a Bundle's source may name in the system namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Referenced {
    Secret,
    ConfigMap,
}

/// The names of the objects of `kind` that `source` names.
fn referenced(source: &rukpak_api::BundleSource, kind: Referenced) -> Vec<&str> {
    match kind {
        Referenced::Secret => [
            source.image.as_ref().and_then(|i| i.pull_secret.as_deref()),
            source
                .git
                .as_ref()
                .and_then(|g| g.auth.as_ref())
                .and_then(|a| a.secret.as_ref())
                .map(|s| s.name.as_str()),
            source
                .http
                .as_ref()
                .and_then(|h| h.auth.as_ref())
                .and_then(|a| a.secret.as_ref())
                .map(|s| s.name.as_str()),
        ]
        .into_iter()
        .flatten()
        .collect(),
        Referenced::ConfigMap => source
            .config_maps
            .iter()
            .flatten()
            .map(|c| c.config_map.name.as_str())
            .collect(),
    }
}

/// Maps a Secret or ConfigMap to the Bundles (from `bundles`) whose source names it.
fn referrers<K: Resource>(
    bundles: Store<Bundle>,
    kind: Referenced,
) -> impl Fn(PartialObjectMeta<K>) -> Vec<ObjectRef<Bundle>> + Send + Sync + 'static {
    move |object| {
        let name = object.name_any();
        bundles
            .state()
            .iter()
            .filter(|b| referenced(&b.spec.source, kind).contains(&name.as_str()))
            .map(|b| ObjectRef::from(b.as_ref()))
            .collect()
    }
}

fn error_policy(bundle: Arc<Bundle>, error: &Error, ctx: Arc<Context>) -> Action {
    kit::controller::retry_after(&ctx.backoff, "Bundle", &bundle.name_any(), error)
}

fn source_label(bundle: &Bundle) -> &'static str {
    match bundle.spec.source.type_ {
        rukpak_api::SourceType::Image => "image",
        rukpak_api::SourceType::Git => "git",
        rukpak_api::SourceType::Http => "http",
        rukpak_api::SourceType::ConfigMaps => "configMaps",
        rukpak_api::SourceType::Upload => "upload",
    }
}

async fn reconcile(bundle: Arc<Bundle>, ctx: Arc<Context>) -> Result<Action, Error> {
    kit::controller::timed_with_label(&ctx.reconciles, "bundle", unpack(&bundle, &ctx)).await
}

/// Unpacks the Bundle's source (or checks that its content is still stored) and reports
/// the outcome in status; returns the result label for the reconcile metrics (`success`,
/// or why unpacking failed) with the next action.
async fn unpack(bundle: &Bundle, ctx: &Context) -> Result<(&'static str, Action), Error> {
    if bundle.meta().deletion_timestamp.is_some() {
        return Ok((kit::controller::SUCCESS, Action::await_change()));
    }
    let name = bundle.name_any();
    let current = bundle.status.clone().unwrap_or_default();
    let generation = bundle.meta().generation;

    // Already unpacked: only check the content is still there.
    if let Some(content) = current.content.as_ref().filter(|_| {
        current.phase == Some(BundlePhase::Unpacked) && current.observed_generation == generation
    }) {
        let still_stored = match content.digest.parse() {
            Ok(digest) => {
                matches!(ctx.store.stat(&digest).await, Ok(Some(stored)) if i64::from(stored.chunks) == i64::from(content.chunks))
            }
            Err(_) => false,
        };
        if still_stored {
            return Ok((kit::controller::SUCCESS, Action::requeue(VERIFY_INTERVAL)));
        }
        ctx.event(
            bundle,
            true,
            "ContentMissing",
            "the unpacked content is gone from the content store; unpacking again".into(),
        )
        .await;
    }

    // Say "Unpacking" on a first attempt only, and only once it has taken a moment (most
    // sources unpack in milliseconds, and each status write is a request and a watch event
    // for every reader): a retry after a failure keeps showing that failure until the
    // outcome differs, so identical failures never rewrite status.
    let announce_unpacking = !matches!(
        current.phase,
        Some(BundlePhase::Unpacking | BundlePhase::Failing)
    ) && bundle.spec.source.type_ != rukpak_api::SourceType::Upload;
    // The whole attempt runs in an unpack slot (see crate::slots): a Bundle waiting for
    // one holds nothing yet, not even its source, and its wait is neither timed as
    // unpacking nor announced as such.
    let attempted = ctx
        .slots
        .run(attempt_announced(bundle, ctx, announce_unpacking, current))
        .await?;
    ctx.unpacks.record(&attempted);
    let Attempted { attempt, live, .. } = attempted;
    let next = status_after(&live, &attempt, generation, &kit::conditions::now());
    if next != live {
        announce(ctx, bundle, &live, &next).await;
        write_status(ctx, &name, &next).await?;
    }
    Ok(match attempt {
        Attempt::Unpacked { .. } => {
            ctx.backoff.reset(&name);
            (kit::controller::SUCCESS, Action::requeue(VERIFY_INTERVAL))
        }
        Attempt::WaitingForUpload => (kit::controller::SUCCESS, Action::await_change()),
        Attempt::Failed {
            terminal: true,
            reason,
            ..
        } => (reason, Action::await_change()),
        Attempt::Failed { reason, .. } => (reason, Action::requeue(ctx.backoff.next_delay(&name))),
    })
}

/// An attempt, with when it started and the status the server holds after it (the
/// `Unpacking` status when it was written meanwhile).
struct Attempted {
    attempt: Attempt,
    started: Instant,
    live: BundleStatus,
}

/// The status after `attempt`, from `live` (what the server holds). Pure.
fn status_after(
    live: &BundleStatus,
    attempt: &Attempt,
    generation: Option<i64>,
    now: &Time,
) -> BundleStatus {
    let mut next = live.clone();
    next.observed_generation = generation;
    let (phase, status_, reason, message) = match attempt {
        Attempt::Unpacked {
            content,
            resolved,
            source,
        } => {
            next.resolved_source = Some(resolved.as_ref().clone());
            next.content = Some(content.clone());
            (
                BundlePhase::Unpacked,
                status::TRUE,
                reasons::UNPACK_SUCCESSFUL,
                format!("Successfully unpacked the {source} Bundle"),
            )
        }
        Attempt::WaitingForUpload => (
            BundlePhase::Pending,
            status::FALSE,
            reasons::UNPACK_PENDING,
            "Waiting for the bundle content to be uploaded (rukpak-core upload)".to_owned(),
        ),
        Attempt::Failed { message, .. } => (
            BundlePhase::Failing,
            status::FALSE,
            reasons::UNPACK_FAILED,
            message.clone(),
        ),
    };
    with_unpacked(&mut next, phase, status_, reason, &message, now);
    next
}

/// Sets the phase and the `Unpacked` condition of `status` (for its `observedGeneration`).
fn with_unpacked(
    status: &mut BundleStatus,
    phase: BundlePhase,
    status_: &'static str,
    reason: &str,
    message: &str,
    now: &Time,
) {
    status.phase = Some(phase);
    kit::conditions::set_all(
        &mut status.conditions,
        [Desired::new(TYPE_UNPACKED, status_, reason, message)],
        status.observed_generation,
        now,
    );
}

/// [`attempt`], writing the `Unpacking` status when `announce` and it takes longer than
/// [`SHOW_UNPACKING_AFTER`].
async fn attempt_announced(
    bundle: &Bundle,
    ctx: &Context,
    announce: bool,
    current: BundleStatus,
) -> Result<Attempted, Error> {
    let started = Instant::now();
    let running = attempt(bundle, ctx);
    tokio::pin!(running);
    let mut live = current;
    let attempt = tokio::select! {
        biased;
        done = &mut running => done,
        () = tokio::time::sleep(SHOW_UNPACKING_AFTER), if announce => {
            let mut unpacking = live.clone();
            unpacking.observed_generation = bundle.meta().generation;
            with_unpacked(
                &mut unpacking,
                BundlePhase::Unpacking,
                status::FALSE,
                reasons::UNPACKING,
                "Unpacking the bundle content",
                &kit::conditions::now(),
            );
            write_status(ctx, &bundle.name_any(), &unpacking).await?;
            live = unpacking;
            running.await
        }
    };
    Ok(Attempted {
        attempt,
        started,
        live,
    })
}

async fn attempt(bundle: &Bundle, ctx: &Context) -> Attempt {
    let source = source_label(bundle);
    let failed = |message: String, terminal: bool, reason: &'static str| Attempt::Failed {
        message,
        terminal,
        source,
        reason,
    };
    let prepared = match sources::prepare(&ctx.client, &ctx.namespace, &bundle.spec.source).await {
        Ok(prepared) => prepared,
        Err(err) => {
            let reason = if matches!(err, SourceError::Missing { .. }) {
                "missing_reference"
            } else {
                "invalid_source"
            };
            return failed(error_chain(&err), err.is_terminal(), reason);
        }
    };
    match prepared {
        Prepared::Upload => {
            let Some(digest) = bundle.annotations().get(UPLOADED_DIGEST_ANNOTATION) else {
                return Attempt::WaitingForUpload;
            };
            let parsed = match digest.parse() {
                Ok(parsed) => parsed,
                Err(err) => {
                    return failed(
                        format!("invalid {UPLOADED_DIGEST_ANNOTATION} {digest:?}: {err}"),
                        true,
                        "invalid_source",
                    );
                }
            };
            match ctx.store.stat(&parsed).await {
                Ok(Some(stored)) => Attempt::Unpacked {
                    content: ContentRef {
                        digest: stored.digest.to_string(),
                        size: i64::try_from(stored.size).unwrap_or(i64::MAX),
                        chunks: i32::try_from(stored.chunks).unwrap_or(i32::MAX),
                    },
                    resolved: Box::new(bundle.spec.source.clone()),
                    source,
                },
                Ok(None) => Attempt::WaitingForUpload,
                Err(err) => failed(error_chain(&err), false, err.label()),
            }
        }
        Prepared::Fetch(fetch) => {
            let unpacked = match ctx.unpacker.unpack(&fetch).await {
                Ok(unpacked) => unpacked,
                Err(err) => return failed(error_chain(&err), err.is_terminal(), "unpack_failed"),
            };
            match ctx.store.write(&unpacked.content, BUNDLE_USER).await {
                Ok(stored) => Attempt::Unpacked {
                    content: ContentRef {
                        digest: stored.digest.to_string(),
                        size: i64::try_from(stored.size).unwrap_or(i64::MAX),
                        chunks: i32::try_from(stored.chunks).unwrap_or(i32::MAX),
                    },
                    resolved: Box::new(sources::pinned(&bundle.spec.source, &unpacked.resolved)),
                    source,
                },
                Err(err) => failed(error_chain(&err), err.is_terminal(), err.label()),
            }
        }
    }
}

/// The kind of user Bundles are to the content store: the label their content carries,
/// and the content rukpak-core's sweep looks after.
pub const BUNDLE_USER: &str = "Bundle";

async fn write_status(ctx: &Context, name: &str, next: &BundleStatus) -> Result<(), Error> {
    kit::status::apply(
        &Api::<Bundle>::all(ctx.client.clone()),
        name,
        crate::FIELD_MANAGER,
        next,
    )
    .await
    .map_err(|source| KubeCallError::new("update the status of", format!("Bundle {name}"), source))
}

/// An Event when the `Unpacked` condition changes status or reason: a Warning when
/// unpacking failed.
async fn announce(ctx: &Context, bundle: &Bundle, before: &BundleStatus, after: &BundleStatus) {
    kit::controller::announce(
        &ctx.recorder,
        &bundle.object_ref(&()),
        &before.conditions,
        &after.conditions,
        news,
    )
    .await;
}

/// What a changed Bundle condition means to the people reading its Events. Pure.
fn news(condition: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition) -> News {
    match condition.type_.as_str() {
        TYPE_UNPACKED if condition.reason == reasons::UNPACK_FAILED => News::Warning,
        TYPE_UNPACKED => News::Normal,
        _ => News::Quiet,
    }
}

impl Context {
    async fn event(&self, bundle: &Bundle, warning: bool, reason: &str, note: String) {
        kit::events::publish(
            &self.recorder,
            &bundle.object_ref(&()),
            warning,
            reason,
            "Unpack",
            note,
        )
        .await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(second: i64) -> Time {
        Time(k8s_openapi::jiff::Timestamp::from_second(second).unwrap())
    }

    #[test]
    fn status_follows_the_attempt_and_an_identical_failure_rewrites_nothing() {
        let failed = || Attempt::Failed {
            message: "failed to pull: 404".into(),
            terminal: false,
            source: "image",
            reason: "not_found",
        };
        let first = status_after(&BundleStatus::default(), &failed(), Some(3), &at(10));
        assert_eq!(first.phase, Some(BundlePhase::Failing));
        assert_eq!(first.observed_generation, Some(3));
        let unpacked = kit::conditions::find(&first.conditions, TYPE_UNPACKED).unwrap();
        assert_eq!(
            (unpacked.status.as_str(), unpacked.reason.as_str()),
            ("False", reasons::UNPACK_FAILED)
        );
        // The retry fails the same way later: the same status, nothing to write.
        assert_eq!(status_after(&first, &failed(), Some(3), &at(70)), first);

        let content = ContentRef {
            digest: format!("sha256:{}", "0".repeat(64)),
            size: 10,
            chunks: 1,
        };
        let done = status_after(
            &first,
            &Attempt::Unpacked {
                content: content.clone(),
                resolved: Box::new(
                    serde_json::from_value(serde_json::json!({"type": "upload", "upload": {}}))
                        .unwrap(),
                ),
                source: "image",
            },
            Some(3),
            &at(80),
        );
        assert_eq!(done.phase, Some(BundlePhase::Unpacked));
        assert_eq!(done.content, Some(content));
        let unpacked = kit::conditions::find(&done.conditions, TYPE_UNPACKED).unwrap();
        assert_eq!(unpacked.message, "Successfully unpacked the image Bundle");
    }

    #[test]
    fn unpacked_and_uploaded_content_is_referenced() {
        let bundle = |value: serde_json::Value| serde_json::from_value::<Bundle>(value).unwrap();
        let spec = serde_json::json!({"provisionerClassName": "p", "source": {"type": "upload", "upload": {}}});
        let bundles = [
            bundle(serde_json::json!({"metadata": {"name": "a"}, "spec": spec,
                "status": {"content": {"digest": "sha256:a", "size": 1, "chunks": 1}}})),
            bundle(
                serde_json::json!({"metadata": {"name": "b", "annotations": {
                crate::UPLOADED_DIGEST_ANNOTATION: "sha256:b"}}, "spec": spec}),
            ),
            bundle(serde_json::json!({"metadata": {"name": "c"}, "spec": spec})),
        ];
        assert_eq!(
            referenced_by(&bundles),
            ["sha256:a".to_owned(), "sha256:b".to_owned()].into()
        );
    }

    fn source(value: serde_json::Value) -> rukpak_api::BundleSource {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn every_secret_and_configmap_a_source_names_is_found() {
        let image = source(serde_json::json!({ "type": "image",
            "image": { "ref": "r/b:1", "pullSecret": "pull" } }));
        assert_eq!(referenced(&image, Referenced::Secret), ["pull"]);
        assert!(referenced(&image, Referenced::ConfigMap).is_empty());
        let git = source(
            serde_json::json!({ "type": "git", "git": { "repository": "https://g/r",
            "ref": { "branch": "main" }, "auth": { "secret": { "name": "git" } } } }),
        );
        assert_eq!(referenced(&git, Referenced::Secret), ["git"]);
        let http = source(serde_json::json!({ "type": "http",
            "http": { "url": "https://h/b.tgz", "auth": { "secret": { "name": "http" } } } }));
        assert_eq!(referenced(&http, Referenced::Secret), ["http"]);
        let maps = source(serde_json::json!({ "type": "configMaps", "configMaps": [
            { "configMap": { "name": "a" } }, { "configMap": { "name": "b" }, "path": "x" } ] }));
        assert_eq!(referenced(&maps, Referenced::ConfigMap), ["a", "b"]);
        assert!(referenced(&maps, Referenced::Secret).is_empty());
    }
}
