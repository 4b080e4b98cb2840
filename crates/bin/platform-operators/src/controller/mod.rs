//! The `run` mode: the PlatformOperator controller and the aggregated ClusterOperator
//! controller, sharing one watch per kind.
//!
//! - PlatformOperators (label selector): the primary objects.
//! - ActiveResolutions (same selector; they carry their PlatformOperator's labels): owned.
//! - BundleDeployments (same selector): the wrapper (named after the PlatformOperator) and
//!   its children (owner labels name the wrapper) map back to the PlatformOperator.
//! - The ClusterOperator and the ClusterVersion (by name) only wake the ClusterOperator
//!   controller; their CRDs may be missing.

use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt};
use kit::events::Recorder;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::watcher;
use kube::{Api, Client};
use prometheus::{IntGaugeVec, Opts, Registry};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use deppy_api::ActiveResolution;
use kit::admin::Readiness;
use kit::metrics::ReconcileMetrics;
use kit::retry::Backoff;
use platform_api::PlatformOperator;
use rukpak_api::BundleDeployment;

pub mod cluster_operator;
pub mod platform_operator;

/// Field manager of every write, and the Event reporter.
pub const MANAGER: &str = "platform-operators";

/// The prefix of every metric of this binary.
const COMPONENT: &str = "platform_operators";

/// Settings of both controllers.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Namespace of the leader lease; listed in the ClusterOperator's relatedObjects.
    pub system_namespace: String,
    /// Only PlatformOperators (and the ActiveResolutions and BundleDeployments made for
    /// them, which carry their labels) matching this label selector are handled.
    pub selector: Option<String>,
    /// The version reported as `operator` in the ClusterOperator's `versions`.
    pub release_version: String,
    /// Whether to maintain the aggregated ClusterOperator.
    pub cluster_operator: bool,
    /// How often everything is reconciled again without a change (a safety net).
    pub resync: Duration,
    /// How often to check again for the ClusterOperator API while it is not installed.
    pub api_recheck: Duration,
    /// The ServiceAccount PlatformOperators install as (named on their ActiveResolutions);
    /// `None`: the provisioner classes' default identities.
    pub install_service_account: Option<rukpak_api::ServiceAccountRef>,
}

/// Metrics of both controllers.
#[derive(Debug, Clone)]
pub struct Metrics {
    reconcile: ReconcileMetrics,
    operators: IntGaugeVec,
}

impl Metrics {
    /// Creates the metrics and registers them on `registry` (the admin server's).
    pub fn register(registry: &Registry) -> Result<Self, prometheus::Error> {
        let reconcile = ReconcileMetrics::register(registry, COMPONENT)?;
        let operators = IntGaugeVec::new(
            Opts::new(
                format!("{COMPONENT}_platform_operators"),
                "PlatformOperators by the status and reason of their Installed condition.",
            ),
            &["installed", "reason"],
        )?;
        registry.register(Box::new(operators.clone()))?;
        Ok(Self {
            reconcile,
            operators,
        })
    }
}

/// The shared caches.
#[derive(Clone)]
pub struct Caches {
    /// PlatformOperators.
    pub operators: Store<PlatformOperator>,
    /// ActiveResolutions.
    pub resolutions: Store<ActiveResolution>,
    /// BundleDeployments.
    pub deployments: Store<BundleDeployment>,
}

impl crate::ownership::View for Caches {
    fn operators(&self) -> Vec<Arc<PlatformOperator>> {
        self.operators.state()
    }

    fn resolution(&self, name: &str) -> Option<Arc<ActiveResolution>> {
        self.resolutions.get(&ObjectRef::new(name))
    }

    fn deployment(&self, name: &str) -> Option<Arc<BundleDeployment>> {
        self.deployments.get(&ObjectRef::new(name))
    }
}

impl Caches {
    /// The BundleDeployments `wrapper` applied: its inventory's BundleDeployments, each
    /// with the cached object.
    pub fn children(
        &self,
        wrapper: &BundleDeployment,
    ) -> Vec<(String, Option<Arc<BundleDeployment>>)> {
        wrapper
            .status
            .iter()
            .flat_map(|s| s.inventory.iter())
            .filter(|entry| entry.group == rukpak_api::GROUP && entry.kind == "BundleDeployment")
            .map(|entry| {
                (
                    entry.name.clone(),
                    self.deployments.get(&ObjectRef::new(&entry.name)),
                )
            })
            .collect()
    }
}

/// Everything a reconcile of either controller needs.
pub struct Context {
    client: Client,
    settings: Settings,
    caches: Caches,
    recorder: Recorder,
    metrics: Metrics,
    backoff: Backoff,
}

impl Context {
    /// Waits until every cache holds its initial list (decisions that look at other objects,
    /// such as which PlatformOperator has a package, wait for it); false when a watch ended
    /// first.
    async fn caches_synced(&self) -> bool {
        use kit::watch::until_listed;
        let Caches {
            operators,
            resolutions,
            deployments,
        } = &self.caches;
        until_listed(operators).await.is_ok()
            && until_listed(resolutions).await.is_ok()
            && until_listed(deployments).await.is_ok()
    }
}

#[cfg(test)]
impl Context {
    /// A context over `client` (a mocked API server) whose caches hold nothing.
    fn for_tests(client: Client) -> Self {
        let settings = Settings {
            system_namespace: "platform-operators-system".to_owned(),
            selector: None,
            release_version: "4.99.0".to_owned(),
            cluster_operator: true,
            resync: Duration::from_secs(600),
            api_recheck: Duration::from_secs(600),
            install_service_account: None,
        };
        Self {
            recorder: kit::controller::recorder(client.clone(), MANAGER),
            client,
            settings,
            caches: Caches {
                operators: reflector::store().0,
                resolutions: reflector::store().0,
                deployments: reflector::store().0,
            },
            metrics: Metrics::register(&Registry::new()).unwrap_or_else(|err| panic!("{err}")),
            backoff: Backoff::default(),
        }
    }
}

/// Runs both controllers until `shutdown`.
pub async fn run(
    client: Client,
    settings: Settings,
    metrics: Metrics,
    readiness: &Readiness,
    shutdown: CancellationToken,
) {
    // Capacity one: a pending notice already covers any later change.
    let (notify, notices) = mpsc::channel::<()>(1);
    let (requeue, requeues) = mpsc::unbounded_channel::<ObjectRef<PlatformOperator>>();
    let selector = settings.selector.clone();

    let (operators, writer) = reflector::store();
    let operators_stream = changes(
        kit::watch::cached(
            Api::<PlatformOperator>::all(client.clone()),
            kit::watch::config(selector.as_deref()),
            writer,
            readiness,
            "watch:platformoperators",
        ),
        notify.clone(),
    );
    let (resolutions, writer) = reflector::store();
    let resolutions_stream = changes(
        kit::watch::cached(
            Api::<ActiveResolution>::all(client.clone()),
            kit::watch::config(selector.as_deref()),
            writer,
            readiness,
            "watch:activeresolutions",
        ),
        notify.clone(),
    );
    let (deployments, writer) = reflector::store();
    let deployments_stream = changes(
        kit::watch::cached(
            Api::<BundleDeployment>::all(client.clone()),
            kit::watch::config(selector.as_deref()),
            writer,
            readiness,
            "watch:bundledeployments",
        ),
        notify.clone(),
    );
    let caches = Caches {
        operators,
        resolutions,
        deployments,
    };
    let ctx = Arc::new(Context {
        recorder: kit::controller::recorder(client.clone(), MANAGER),
        client,
        settings,
        caches,
        metrics,
        backoff: Backoff::default(),
    });

    // A PlatformOperator that lost its package to another one depends on the others:
    // any PlatformOperator event, and any BundleDeployment going away, looks at it again.
    let operators_stream = {
        let ctx = ctx.clone();
        let requeue = requeue.clone();
        operators_stream.inspect(move |event| {
            if event.is_ok() {
                platform_operator::requeue_duplicates(&ctx, &requeue);
            }
        })
    };
    let deployments_stream = {
        let ctx = ctx.clone();
        deployments_stream.inspect(move |event| {
            if let Ok(Change::Deleted(_)) = event {
                platform_operator::requeue_duplicates(&ctx, &requeue);
            }
        })
    };
    let requeues = futures::stream::unfold(requeues, |mut requeues| async move {
        requeues.recv().await.map(|request| (request, requeues))
    });
    futures::join!(
        platform_operator::run(
            ctx.clone(),
            operators_stream
                .filter_map(|e| futures::future::ready(e.map(Change::applied).transpose())),
            resolutions_stream
                .filter_map(|e| futures::future::ready(e.map(Change::applied).transpose())),
            deployments_stream
                .filter_map(|e| futures::future::ready(e.map(Change::touched).transpose())),
            requeues,
            shutdown.clone(),
        ),
        async {
            if ctx.settings.cluster_operator {
                cluster_operator::run(ctx.clone(), notify, notices, shutdown.clone()).await;
            }
        },
    );
}

/// One object event of a watch, after the cache has taken it.
#[derive(Debug)]
pub(crate) enum Change<K> {
    /// Created or updated (or listed).
    Applied(K),
    /// Deleted.
    Deleted(K),
}

impl<K> Change<K> {
    fn applied(self) -> Option<K> {
        match self {
            Self::Applied(object) => Some(object),
            Self::Deleted(_) => None,
        }
    }

    fn touched(self) -> Option<K> {
        match self {
            Self::Applied(object) | Self::Deleted(object) => Some(object),
        }
    }
}

/// The objects of a watch's events as [`Change`]s, after the cache has taken them; every
/// change also notifies `notify` (the ClusterOperator controller).
fn changes<K>(
    events: impl Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + 'static,
    notify: mpsc::Sender<()>,
) -> impl Stream<Item = Result<Change<K>, watcher::Error>> + Send + 'static
where
    K: Send + 'static,
{
    events.filter_map(move |event| {
        let change = match event {
            Ok(watcher::Event::Apply(object) | watcher::Event::InitApply(object)) => {
                Some(Ok(Change::Applied(object)))
            }
            Ok(watcher::Event::Delete(object)) => Some(Ok(Change::Deleted(object))),
            Ok(watcher::Event::Init | watcher::Event::InitDone) => None,
            Err(err) => Some(Err(err)),
        };
        if matches!(change, Some(Ok(_))) {
            // Full means a notice is already pending.
            let _ = notify.try_send(());
        }
        futures::future::ready(change)
    })
}

pub use kit::error_chain;
