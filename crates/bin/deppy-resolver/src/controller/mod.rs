//! The `run` mode: the Catalog and ActiveResolution controllers.
//!
//! The Catalog controller fetches each Catalog's file-based catalog (from an image or an
//! immutable ConfigMap), keeps a copy in the content store, parses it, and publishes the
//! index in [`ServedCatalogs`]. The ActiveResolution controller resolves each
//! ActiveResolution against those indexes with [`crate::Resolver`] and writes
//! `status.selections` and the `Resolved` condition. Whenever the set of served catalogs
//! changes, every ActiveResolution is resolved again. Bundles whose `minKubeVersion` is
//! above the cluster's version are not selected; the version is read from the API server at
//! start-up and hourly (one request each), and a change also resolves everything again.

use std::collections::BTreeMap;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use fbc::CatalogIndex;
use k8s_openapi::api::core::v1::ObjectReference;
use kit::events::Recorder;
use kube::runtime::WatchStreamExt;
use kube::runtime::reflector::{self, Store};
use kube::{Api, Client};
use prometheus::{Histogram, HistogramOpts, HistogramVec, Registry};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use kit::admin::Readiness;
use kit::metrics::ReconcileMetrics;
use kit::retry::Backoff;

use crate::KubeVersion;

mod active_resolution;
pub mod api;
mod catalog;
mod loading;

/// Settings of both controllers.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Namespace of the content store and of image pull secrets.
    pub system_namespace: String,
    /// How often a Catalog whose image is named by tag is fetched again when it does not
    /// set `pollInterval`.
    pub default_poll_interval: Duration,
    /// Limits for unpacking and reading catalog content.
    pub unpack: content::UnpackOptions,
    /// Only Catalogs and ActiveResolutions matching this label selector are handled (for
    /// sharding, or several instances on one cluster); `None` handles all.
    pub selector: Option<String>,
    /// How often content no Catalog references is swept from the content store (a pass
    /// marks it, a later pass deletes it).
    pub content_sweep_interval: Duration,
    /// The catalog query API, when it is served.
    pub api: Option<ApiSettings>,
}

/// Where the catalog query API keeps catalogs and how it is reached.
#[derive(Debug, Clone)]
pub struct ApiSettings {
    /// The address the HTTPS server listens on.
    pub address: std::net::SocketAddr,
    /// The directory its store files are created in (unnamed, so nothing is left in it).
    pub store_dir: std::path::PathBuf,
    /// The URL clients reach it at, without a trailing `/`; a Catalog's `status.urls.base`
    /// is this followed by `/catalogs/NAME`.
    pub base_url: String,
}

/// The prefix of every metric of this binary.
const COMPONENT: &str = "deppy_resolver";

/// The field manager of this binary's status writes and the reporter of its Events.
const FIELD_MANAGER: &str = "deppy-resolver";

/// Metrics of both controllers: reconcile counts and latency, and the cost of resolutions.
#[derive(Debug, Clone)]
pub struct Metrics {
    reconcile: ReconcileMetrics,
    resolution_duration: HistogramVec,
    variables: Histogram,
    clauses: Histogram,
}

impl Metrics {
    /// Creates the metrics and registers them on `registry` (the admin server's).
    pub fn register(registry: &Registry) -> Result<Self, prometheus::Error> {
        let reconcile = ReconcileMetrics::register(registry, COMPONENT)?;
        let resolution_duration = HistogramVec::new(
            HistogramOpts::new(
                format!("{COMPONENT}_resolution_duration_seconds"),
                "Time spent building and solving one resolution, by result.",
            )
            .buckets(vec![
                0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
            ]),
            &["result"],
        )?;
        // Sizes span orders of magnitude (a single package up to whole catalogs).
        let sizes = prometheus::exponential_buckets(10.0, 4.0, 10)?;
        let variables = Histogram::with_opts(
            HistogramOpts::new(
                format!("{COMPONENT}_resolution_variables"),
                "Solver variables of one resolution problem.",
            )
            .buckets(sizes.clone()),
        )?;
        let clauses = Histogram::with_opts(
            HistogramOpts::new(
                format!("{COMPONENT}_resolution_clauses"),
                "SAT clauses of one solved resolution problem.",
            )
            .buckets(sizes),
        )?;
        registry.register(Box::new(resolution_duration.clone()))?;
        registry.register(Box::new(variables.clone()))?;
        registry.register(Box::new(clauses.clone()))?;
        Ok(Self {
            reconcile,
            resolution_duration,
            variables,
            clauses,
        })
    }

    fn observe(&self, result: &str, stats: &crate::Stats) {
        self.resolution_duration
            .with_label_values(&[result])
            .observe(stats.duration.as_secs_f64());
        self.variables.observe(stats.variables as f64);
        if let Some(clauses) = stats.clauses {
            self.clauses.observe(clauses as f64);
        }
    }
}

/// A catalog being served: its parsed index and what it was built from.
#[derive(Debug, Clone)]
pub struct ServedCatalog {
    /// The parsed catalog.
    pub index: Arc<CatalogIndex>,
    /// `spec.priority`.
    pub priority: i32,
    /// `status.resolvedSource` of the content (pinned image or ConfigMap version).
    pub resolved_source: String,
    /// The spec's source, serialised, to notice when the Catalog points elsewhere.
    source_key: String,
    /// The digest of the content the index was parsed from, to share it rather than parse
    /// the same content again.
    content_digest: String,
    /// The content as the catalog query API serves it; `None` when the API is off or the
    /// store file could not be written.
    pub stored: Option<Arc<catalog_api::StoredCatalog>>,
}

/// The catalogs the resolver may use, by Catalog name; only those that are Serving.
///
/// Cheap to clone: clones share the map.
#[derive(Debug, Clone, Default)]
pub struct ServedCatalogs(Arc<RwLock<BTreeMap<String, ServedCatalog>>>);

impl ServedCatalogs {
    /// The catalog served under `name`.
    pub fn get(&self, name: &str) -> Option<ServedCatalog> {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(name)
            .cloned()
    }

    /// Every served catalog, by name.
    pub fn snapshot(&self) -> Vec<(String, ServedCatalog)> {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(name, served)| (name.clone(), served.clone()))
            .collect()
    }

    /// The index (and API store) of a served catalog parsed from content `digest`, if any.
    fn by_content(
        &self,
        digest: &str,
    ) -> Option<(Arc<CatalogIndex>, Option<Arc<catalog_api::StoredCatalog>>)> {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .find(|served| served.content_digest == digest)
            .map(|served| (served.index.clone(), served.stored.clone()))
    }

    fn insert(&self, name: &str, served: ServedCatalog) {
        self.0
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(name.to_owned(), served);
    }

    fn remove(&self, name: &str) -> bool {
        self.0
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(name)
            .is_some()
    }
}

impl catalog_api::Catalogs for ServedCatalogs {
    fn stored(&self, name: &str) -> Option<Arc<catalog_api::StoredCatalog>> {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(name)
            .and_then(|served| served.stored.clone())
    }
}

/// Everything a reconcile of either controller needs.
pub struct Context {
    client: Client,
    settings: Settings,
    store: content::store::Store,
    unpacker: content::Unpacker,
    catalogs: ServedCatalogs,
    recorder: Recorder,
    metrics: Metrics,
    backoff: Backoff,
    /// Catalogs reconciled at least once since startup, successfully or not.
    reconciled: std::sync::Mutex<std::collections::BTreeSet<String>>,
    /// Tells the ActiveResolution controller that the served catalogs changed. Capacity one:
    /// a pending notice already covers any later change.
    changed: mpsc::Sender<()>,
    /// The cluster's Kubernetes version, for bundles' `minKubeVersion`; `None` until the API
    /// server has told it (and then resolutions do not check `minKubeVersion`).
    kube_version: RwLock<Option<KubeVersion>>,
}

impl Context {
    fn notify_catalogs_changed(&self) {
        // Full means a notice is already pending; closed means the other controller stopped.
        let _ = self.changed.try_send(());
    }

    /// The cluster's Kubernetes version, when known.
    fn kube_version(&self) -> Option<KubeVersion> {
        *self
            .kube_version
            .read()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Asks the API server for its version (one GET /version) and records it; true when it
    /// was read. A change re-resolves every ActiveResolution, as a catalog change does.
    async fn refresh_kube_version(&self) -> bool {
        let info = match self.client.apiserver_version().await {
            Ok(info) => info,
            Err(err) => {
                tracing::warn!(
                    error = %error_chain(&err),
                    "failed to read the cluster's Kubernetes version; bundles' minKubeVersion is not checked until it is known"
                );
                return false;
            }
        };
        let version = match info.git_version.parse::<KubeVersion>() {
            Ok(version) => version,
            Err(err) => {
                tracing::warn!(
                    error = %error_chain(&err),
                    "the API server reports a version that cannot be read; bundles' minKubeVersion is not checked"
                );
                return false;
            }
        };
        let previous = self
            .kube_version
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .replace(version);
        if previous != Some(version) {
            tracing::info!(kubernetes = %version, "checking bundles' minKubeVersion against the cluster's version");
            if previous.is_some() {
                self.notify_catalogs_changed();
            }
        }
        true
    }

    /// Emits an Event for each condition whose status or reason changed.
    async fn announce(
        &self,
        reference: &ObjectReference,
        before: &[deppy_api::Condition],
        after: &[deppy_api::Condition],
    ) {
        kit::controller::announce(
            &self.recorder,
            reference,
            before,
            after,
            kit::controller::News::warning_when_false,
        )
        .await;
    }
}

#[cfg(test)]
impl Context {
    /// A context over `client` (a mocked API server) that serves no catalog yet.
    fn for_tests(client: Client) -> Self {
        let settings = Settings {
            system_namespace: "deppy-system".to_owned(),
            default_poll_interval: Duration::from_secs(600),
            unpack: content::UnpackOptions::default(),
            selector: None,
            content_sweep_interval: Duration::from_secs(600),
            api: None,
        };
        let (changed, _) = mpsc::channel(1);
        Self {
            store: content::store::Store::new(client.clone(), &settings.system_namespace),
            unpacker: content::Unpacker::new(settings.unpack.clone()),
            recorder: kit::controller::recorder(client.clone(), FIELD_MANAGER),
            client,
            settings,
            catalogs: ServedCatalogs::default(),
            metrics: Metrics::register(&Registry::new()).unwrap_or_else(|err| panic!("{err}")),
            backoff: Backoff::default(),
            reconciled: std::sync::Mutex::default(),
            changed,
            kube_version: RwLock::new(None),
        }
    }
}

/// Runs both controllers until `shutdown`; `catalogs` is the map they share (pass a fresh
/// one; it is exposed so that callers such as tests can look at what is served).
pub async fn run(
    client: Client,
    settings: Settings,
    metrics: Metrics,
    catalogs: ServedCatalogs,
    readiness: &Readiness,
    shutdown: CancellationToken,
) {
    let (changed, notices) = mpsc::channel(1);
    let ctx = Arc::new(Context {
        store: content::store::Store::new(client.clone(), &settings.system_namespace),
        unpacker: content::Unpacker::new(settings.unpack.clone()),
        recorder: kit::controller::recorder(client.clone(), FIELD_MANAGER),
        client,
        settings,
        catalogs,
        metrics,
        backoff: Backoff::default(),
        reconciled: std::sync::Mutex::default(),
        changed,
        kube_version: RwLock::new(None),
    });
    let notices = futures::stream::unfold(notices, |mut notices| async move {
        notices.recv().await.map(|()| ((), notices))
    });
    let (catalog_store, catalog_writer) = reflector::store();
    let catalogs = kit::watch::cached(
        Api::<deppy_api::Catalog>::all(ctx.client.clone()),
        kit::watch::config(ctx.settings.selector.as_deref()),
        catalog_writer,
        readiness,
        "watch:catalogs",
    )
    .applied_objects();
    // Created now so that /readyz waits for it from the start; polled once the controller
    // runs.
    let (resolution_store, resolution_writer) = reflector::store();
    let resolutions = kit::watch::cached(
        Api::<deppy_api::ActiveResolution>::all(ctx.client.clone()),
        kit::watch::config(ctx.settings.selector.as_deref()),
        resolution_writer,
        readiness,
        "watch:activeresolutions",
    )
    .applied_objects();
    let loaded = catalogs_loaded(&ctx, catalog_store.clone(), &shutdown);
    let sweep = ctx.store.sweep_every(
        catalog::CATALOG_USER,
        ctx.settings.content_sweep_interval,
        || catalog::referenced_content(ctx.client.clone()),
        shutdown.clone().cancelled_owned(),
    );
    let api = async {
        if let Some(settings) = ctx.settings.api.clone() {
            api::serve(
                ctx.client.clone(),
                ctx.settings.system_namespace.clone(),
                settings.address,
                ctx.catalogs.clone(),
                shutdown.clone(),
            )
            .await;
        }
    };
    futures::join!(
        sweep,
        api,
        catalog::run(ctx.clone(), catalogs, catalog_store, shutdown.clone()),
        async {
            // The version is read while the catalogs load, so that the first resolutions
            // already check minKubeVersion.
            let (loaded, known) = futures::join!(loaded, ctx.refresh_kube_version());
            if loaded {
                futures::join!(
                    active_resolution::run(
                        ctx.clone(),
                        resolutions,
                        resolution_store,
                        notices,
                        shutdown.clone(),
                    ),
                    keep_kube_version(&ctx, known, &shutdown),
                );
            }
        },
    );
}

/// How often the cluster's Kubernetes version is read again once known: it changes only when
/// the control plane is upgraded, and each read is one request.
const KUBE_VERSION_REFRESH: Duration = Duration::from_secs(60 * 60);

/// How soon a failed read of the version is retried.
const KUBE_VERSION_RETRY: Duration = Duration::from_secs(60);

/// Reads the cluster's version again every [`KUBE_VERSION_REFRESH`] (every
/// [`KUBE_VERSION_RETRY`] while it is unknown) until `shutdown`.
async fn keep_kube_version(ctx: &Context, mut known: bool, shutdown: &CancellationToken) {
    loop {
        let wait = if known {
            KUBE_VERSION_REFRESH
        } else {
            KUBE_VERSION_RETRY
        };
        tokio::select! {
            () = tokio::time::sleep(wait) => known = ctx.refresh_kube_version().await,
            () = shutdown.cancelled() => return,
        }
    }
}

/// How long resolving waits at startup for the catalogs to load.
const CATALOG_LOAD_TIMEOUT: Duration = Duration::from_secs(120);

/// Waits until every Catalog listed at startup has been reconciled once (or
/// [`CATALOG_LOAD_TIMEOUT`] passes), so that a restart does not resolve against a partly
/// loaded set and flip every ActiveResolution to SourceUnavailable and back. False on
/// shutdown.
async fn catalogs_loaded(
    ctx: &Context,
    store: Store<deppy_api::Catalog>,
    shutdown: &CancellationToken,
) -> bool {
    let wait = async {
        if kit::watch::until_listed(&store).await.is_err() {
            return false;
        }
        let names: Vec<String> = store
            .state()
            .iter()
            .filter_map(|catalog| catalog.metadata.name.clone())
            .collect();
        let started = tokio::time::Instant::now();
        loop {
            let pending = {
                let reconciled = ctx
                    .reconciled
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                names
                    .iter()
                    .filter(|name| !reconciled.contains(*name))
                    .count()
            };
            if pending == 0 {
                return true;
            }
            if started.elapsed() > CATALOG_LOAD_TIMEOUT {
                tracing::warn!(pending, "resolving before every catalog has loaded");
                return true;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    tokio::select! {
        loaded = wait => loaded,
        () = shutdown.cancelled() => false,
    }
}

pub use catalog::referenced_content;
pub use kit::error_chain;
